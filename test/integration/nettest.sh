#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# railnet-nettest under mpirun -np 2, each rank in a softverbs pod (real network namespaces,
# bench/railnet-bench/in-pod.sh puts it there): every scenario through ncclNetPlugin_v12 and
# then _v11 with both ranks in pod0 of test/fixtures/small.spec; a vNIC of 8 ports through v12
# and of 4 two-port devices through v11 (RAILNET_MERGE=ports) in test/fixtures/eight-port.spec;
# a 2-port vNIC across test/fixtures/rail-swap.spec's crossed cabling. The sender's
# RAILNET_STATS must show every port of the vNIC carrying bytes. Needs root (the namespaces)
# and mpirun, else exit 77 with the reason. Usage: nettest.sh BUILD_DIR SOURCE_DIR
set -u
B=$1 S=$2
BIN=$B/test/railnet-nettest FAB=$B/bin/softverbs-fabric LIB=$B/softverbs/libibverbs.so.1
PLUGIN=$B/libnccl-net-railnet.so SHIM=$S/bench/railnet-bench/in-pod.sh
command -v mpirun >/dev/null 2>&1 || { echo "SKIP: no mpirun on this machine"; exit 77; }
command -v python3 >/dev/null 2>&1 || { echo "SKIP: python3 not found"; exit 77; }
[ "$(id -u)" = 0 ] || { echo "SKIP: needs root: the pods are network namespaces"; exit 77; }
for f in "$BIN" "$FAB" "$LIB" "$PLUGIN" "$SHIM"; do
	[ -e "$f" ] || { echo "FAIL: $f is not there (not built?)"; exit 1; }
done
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
# shellcheck source=bench/railnet-bench/mpi-env.sh
. "$S/bench/railnet-bench/mpi-env.sh"
export RAILNET_IBVERBS_LIB=$LIB
unset NCCL_NET_PLUGIN RAILNET_STATS RAILNET_MERGE
W=$(mktemp -d --tmpdir rn-nettest.XXXXXX)
FX=
# shellcheck disable=SC2317  # called by the EXIT trap
cleanup() {
	[ -z "$FX" ] || "$FAB" down "$FX" >/dev/null 2>&1
	rm -rf "$W"
}
trap cleanup EXIT
fail=0

# fabric NAME: build test/fixtures/NAME.spec and bring its pods up (the previous one down)
fabric() {
	[ -z "$FX" ] || "$FAB" down "$FX" >/dev/null 2>&1
	FX=$W/$1
	"$FAB" build "$S/test/fixtures/$1.spec" "$FX" >/dev/null || { echo "FAIL: build $1.spec"; exit 1; }
	if ! "$FAB" up "$FX" >"$W/up-$1.log" 2>&1; then
		echo "SKIP: softverbs-fabric up $1 failed (root and netns needed): $(tail -1 "$W/up-$1.log")"
		exit 77
	fi
}

# run NAME PER-POD PODS "VAR=v ..." STATS-FILE|"" NETTEST-ARGS...: mpirun -np 2; the env list
# goes to both ranks, RAILNET_STATS=STATS-FILE to rank 0 (the sender) only
run() {
	local name=$1 per=$2 pods=$3 envs=$4 stats=$5 log rc t0
	shift 5
	log=$W/$name.log
	t0=$SECONDS
	# shellcheck disable=SC2086  # the env list is meant to split
	timeout 300 mpirun -np 1 "$SHIM" "$FX" "$per" "$pods" -- \
		env $envs ${stats:+"RAILNET_STATS=$stats"} "$BIN" --plugin "$PLUGIN" "$@" \
		: -np 1 "$SHIM" "$FX" "$per" "$pods" -- \
		env $envs "$BIN" --plugin "$PLUGIN" "$@" >"$log" 2>&1
	rc=$?
	if [ "$rc" = 0 ] && grep -qE '^[0-9]+ passed, 0 failed$' "$log" && ! grep -q '^FAIL' "$log"; then
		echo "ok: $name ($((SECONDS - t0)) s): $*"
		grep -E '^(ok|dev|vdev|[0-9]+ passed)' "$log" | sed 's/^/    /'
		return 0
	fi
	echo "FAIL: $name: mpirun exit $rc$([ "$rc" = 124 ] && echo ' (timeout 300 s)'): $*"
	grep -vE '^(dev|vdev) ' "$log" | tail -40 | sed 's/^/    /'
	fail=1
	return 1
}

# stats_ports FILE DEVICE...: each DEVICE's port 1 carried bytes in the sender's JSON
stats_ports() {
	local f=$1
	shift
	python3 - "$f" "$@" <<'PY' || { echo "FAIL: stats $f"; fail=1; }
import json, sys
d = json.load(open(sys.argv[1]))
ports = {(p["device"], p["port"]): p for p in d["ports"]}
bad = [dev for dev in sys.argv[2:] if ports.get((dev, 1), {}).get("tx_bytes", 0) <= 0]
assert not bad, "no bytes sent on port 1 of %s: %s" % (bad, d["ports"])
print("    ok: stats: " + ", ".join("%s:1 %d B" % (dev, ports[(dev, 1)]["tx_bytes"])
                                     for dev in sys.argv[2:]))
PY
}

fabric small
run all-v12 2 node0:pod0 "" "" --api 12 --scenario all
run all-v11 2 node0:pod0 "" "" --api 11 --scenario all

fabric eight-port
run vnic8-v12 2 n0:pod0 "" "$W/vnic8.json" --api 12 --scenario vnic --vnic 8 &&
	stats_ports "$W/vnic8.json" mlx5_0 mlx5_1 mlx5_2 mlx5_3 mlx5_4 mlx5_5 mlx5_6 mlx5_7
run vnic4x2-v11 2 n0:pod0 "RAILNET_MERGE=ports" "$W/vnic4.json" --api 11 --scenario vnic \
	--vnic 4 &&
	stats_ports "$W/vnic4.json" mlx5_0 mlx5_1 mlx5_2 mlx5_3 mlx5_4 mlx5_5 mlx5_6 mlx5_7

fabric rail-swap
# a crossed-rail pairing would fail its QPs: short transport timeouts end that in seconds
run rail-swap-v12 1 nA:pod0,nB:pod0 "NCCL_IB_TIMEOUT=14 NCCL_IB_RETRY_CNT=3" "$W/swap.json" \
	--api 12 --scenario vnic --vnic 2 &&
	stats_ports "$W/swap.json" mlx5_0 mlx5_1

[ "$fail" = 0 ] && echo "nettest: every run passed"
exit "$fail"
