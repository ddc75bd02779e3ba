#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Failover at NCCL's default transport timeouts (NCCL_IB_TIMEOUT 20, NCCL_IB_RETRY_CNT 7: a QP's
# own retries take about 34 s) with traffic both ways: a two-rank all-reduce (railnet-bench
# --net, pods 0 and 1 of test/fixtures/small.spec, each rank's two ports fused by makeVDevice)
# in which one port of rank 0's NIC, in a second run one of rank 1's, goes down 1.5 s in. Each
# run must end with exit 0 and #wrong 0; its slowest all-reduce must take under GUARD_MS
# (10 s: a behaviour guard, well below the 34 s that only a QP's retries would take); and
# RAILNET_STATS must show the failover where it belongs: on the port that went down, failovers
# >= 1 in that rank's send comm and its receive comm, and failovers >= 1 on the peer's port of
# the same rail in both of the peer's comms (the notice). How each comm learned of it is
# printed (port_err_failovers: the port's IBV_EVENT_PORT_ERR read from the progress path) but
# not required: softverbs moves a downed port's QPs to error at once, so a comm may act first
# on the completion that flushed; the bound is what rules out the retries. Root, network
# namespaces, mpirun.
# Usage: failover_bidir.sh BUILD SOURCE
set -uo pipefail
B=$(cd "${1:?usage: failover_bidir.sh BUILD SOURCE}" && pwd)
S=$(cd "${2:?usage: failover_bidir.sh BUILD SOURCE}" && pwd)
GUARD_MS=${GUARD_MS:-10000}
[ "$(id -u)" = 0 ] || { echo "SKIP: needs root (the pods are network namespaces)"; exit 77; }
command -v mpirun >/dev/null || { echo "SKIP: no mpirun"; exit 77; }
command -v python3 >/dev/null || { echo "SKIP: no python3 to read the stats JSON"; exit 77; }
for f in bin/railnet-bench bin/softverbs-fabric libnccl-net-railnet.so softverbs/libibverbs.so.1; do
	[ -e "$B/$f" ] || { echo "FAIL: $B/$f is not built"; exit 1; }
done
[ -x "$B/iproute/bin/ip" ] && ! command -v ip >/dev/null && PATH=$B/iproute/bin:$PATH
# shellcheck source=bench/railnet-bench/mpi-env.sh
. "$S/bench/railnet-bench/mpi-env.sh"
export RAILNET_IBVERBS_LIB=$B/softverbs/libibverbs.so.1
# sanitizer builds: MPI keeps allocations past exit (railnet's own leaks: the unit tests)
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
unset NCCL_NET_PLUGIN NCCL_IB_TIMEOUT NCCL_IB_RETRY_CNT RAILNET_KEEPALIVE_MS SOFTVERBS_PORT_DOWN
W=$(mktemp -d --tmpdir rn-failover-bidir.XXXXXX)
trap '"$B/bin/softverbs-fabric" down "$W/fab" >/dev/null 2>&1; rm -rf "$W"' EXIT
"$B/bin/softverbs-fabric" build "$S/test/fixtures/small.spec" "$W/fab" >/dev/null || exit 1
"$B/bin/softverbs-fabric" up "$W/fab" >/dev/null || { echo "SKIP: softverbs-fabric up failed"; exit 77; }

fail=0
# rank, the port that goes down, the peer's port on the same rail (small.spec: rails ra, rb)
for run in "0 mlx5_0 mlx5_2" "1 mlx5_3 mlx5_1"; do
	read -r rank dev peer <<<"$run"
	log=$W/run$rank.log
	# shellcheck disable=SC2016 # expanded by each rank's bash: its own stats file
	SOFTVERBS_PORT_DOWN=$dev:1:1500 timeout 300 mpirun -np 2 bash -c \
		'RAILNET_STATS=$0/stats.$OMPI_COMM_WORLD_RANK.json exec "$@"' "$W" \
		"$S/bench/railnet-bench/in-pod.sh" "$W/fab" 1 node0:pod0,node0:pod1 -- \
		"$B/bin/railnet-bench" --net --plugin "$B/libnccl-net-railnet.so" --coll all_reduce \
		-b 1M -e 1M -n 100 -w 5 -c 1 -N 20 -T 60 >"$log" 2>&1
	rc=$?
	slow=$(awk -F: '/Slowest operation/ { gsub(/[^0-9.]/, "", $2); print $2 }' "$log")
	if [ $rc -ne 0 ] || ! grep -q "Out of bounds values : 0 OK" "$log"; then
		echo "FAIL: $dev of rank $rank down: exit $rc or wrong values"; tail -20 "$log"; fail=1
		continue
	fi
	if ! awk -v m="${slow:-1e9}" -v g="$GUARD_MS" 'BEGIN { exit !(m < g) }'; then
		echo "FAIL: $dev of rank $rank down: the slowest all-reduce took ${slow:-?} ms (guard $GUARD_MS)"
		fail=1
		continue
	fi
	if python3 - "$W/stats.$rank.json" "$W/stats.$((1 - rank)).json" "$dev" "$peer" <<'PY'; then
import json, sys
mine, theirs, dev, peer = sys.argv[1:5]
def comms(path):
    return json.load(open(path))["connections"]
def port(c, name):
    return next((p for p in c["ports"] if p["device"] == name), None)
ok = True
by_event = 0
for role in ("send", "recv"):
    c = [x for x in comms(mine) if x["role"] == role]
    p = port(c[0], dev) if c else None
    if not p or p["failovers"] < 1:
        print(f"FAIL: the {role} comm of the rank whose {dev} went down did not fail over: {p}")
        ok = False
    else:
        by_event += p["port_err_failovers"]
    c = [x for x in comms(theirs) if x["role"] == role]
    q = port(c[0], peer) if c else None
    if not q or q["failovers"] < 1:
        print(f"FAIL: the peer's {role} comm: no failover on {peer} (the notice): {q}")
        ok = False
print(f"  failovers of the rank whose {dev} went down counted on IBV_EVENT_PORT_ERR: {by_event}")
sys.exit(0 if ok else 1)
PY
		echo "ok: $dev of rank $rank down at +1.5 s: #wrong 0, slowest all-reduce $slow ms, both comms failed over, the peer's through the notice"
	else
		fail=1
	fi
done
exit $fail
