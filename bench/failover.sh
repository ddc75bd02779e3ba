#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Failover at NCCL's default transport timeouts (NCCL_IB_TIMEOUT 20, NCCL_IB_RETRY_CNT 7, where
# a QP's own retries take about 34 s): RUNS runs (default 15) of a bidirectional all-reduce
# (railnet-bench --net, 2 ranks in pods 0 and 1 of test/fixtures/small.spec, each rank's two
# ports fused into one virtual device by makeVDevice) in which one port goes down DOWN_MS after
# the start. Odd runs take it down for good, even runs flap it (up again FLAP_MS later). The
# port cycles over both ranks' four ports, so send and receive comms of either side meet it.
# A run passes when every operation completed and checked (#wrong 0, the "Out of bounds" line
# OK), the failover happened (railnet's "is down" WARN), and the slowest all-reduce, the one
# that met the port going down, took under LIMIT_MS (1000). It prints a row per run and the
# count; exit 0 when all passed. A benchmark (root: the pods are network namespaces), not a
# test: `make bench` does not run it (about 15 x 10 s); docs/performance.md keeps its numbers.
# Usage: bench/failover.sh [BUILD]   RUNS=15 DOWN_MS=2500 FLAP_MS=300 LIMIT_MS=1000 SIZE=1M
set -uo pipefail
B=$(cd "${1:-build}" && pwd)
S=$(cd "$(dirname "$0")/.." && pwd)
RUNS=${RUNS:-15}
DOWN_MS=${DOWN_MS:-2500}
FLAP_MS=${FLAP_MS:-300}
LIMIT_MS=${LIMIT_MS:-1000}
SIZE=${SIZE:-1M}
[ "$(id -u)" = 0 ] || { echo "bench/failover.sh: needs root (network namespaces)" >&2; exit 77; }
command -v mpirun >/dev/null || { echo "bench/failover.sh: no mpirun" >&2; exit 77; }
[ -x "$B/iproute/bin/ip" ] && ! command -v ip >/dev/null && PATH=$B/iproute/bin:$PATH
# shellcheck source=bench/railnet-bench/mpi-env.sh
. "$S/bench/railnet-bench/mpi-env.sh"
export RAILNET_IBVERBS_LIB=$B/softverbs/libibverbs.so.1
unset NCCL_NET_PLUGIN NCCL_IB_TIMEOUT NCCL_IB_RETRY_CNT RAILNET_KEEPALIVE_MS SOFTVERBS_PORT_DOWN
W=$(mktemp -d /tmp/rn-failover.XXXXXX)
trap '"$B/bin/softverbs-fabric" down "$W/fab" >/dev/null 2>&1; rm -rf "$W"' EXIT
"$B/bin/softverbs-fabric" build "$S/test/fixtures/small.spec" "$W/fab" >/dev/null || exit 1
"$B/bin/softverbs-fabric" up "$W/fab" >/dev/null || { echo "bench/failover.sh: fabric up failed" >&2; exit 1; }

allreduce() { # CYCLES LOG [ENV=VALUE...]: one run; its exit status
	local cycles=$1 log=$2
	shift 2
	env "$@" timeout 300 mpirun -np 2 "$S/bench/railnet-bench/in-pod.sh" \
		"$W/fab" 1 node0:pod0,node0:pod1 -- "$B/bin/railnet-bench" --net --plugin \
		"$B/libnccl-net-railnet.so" --coll all_reduce -b "$SIZE" -e "$SIZE" -n 100 -w 5 \
		-c 1 -N "$cycles" -T 30 >"$log" 2>&1
}

# calibrate: runs of 2 and 6 cycles of 100 all-reduces (their difference leaves out the start);
# a run lasts about 1.5 x (DOWN_MS + 3 s), so that the port goes down in its middle
calib() { # CYCLES: milliseconds of a run
	local t0
	t0=$(date +%s%N)
	allreduce "$1" "$W/cal.log" || { echo "bench/failover.sh: the calibration run failed:" >&2; tail -20 "$W/cal.log" >&2; exit 1; }
	echo $((($(date +%s%N) - t0) / 1000000))
}
ms2=$(calib 2) || exit 1
ms6=$(calib 6) || exit 1
per=$(((ms6 - ms2) / 4))
cycles=$(((DOWN_MS + 3000) * 3 / 2 / (per > 1 ? per : 1) + 1))
base=$(awk -F: '/Slowest operation/ { gsub(/[^0-9.]/, "", $2); print $2 }' "$W/cal.log")
echo "== failover at default timeouts: $RUNS runs, all_reduce $SIZE x 100 x $cycles cycles, a port down at +$DOWN_MS ms (flap: up $FLAP_MS ms later); slowest operation without a fault: ${base:-?} ms =="
printf '%-4s %-9s %-6s %12s %8s %10s %s\n' run port kind "slowest ms" "#wrong" failover verdict
ports=(mlx5_0 mlx5_2 mlx5_1 mlx5_3)
pass=0
slow=()
for ((i = 1; i <= RUNS; i++)); do
	dev=${ports[$(((i - 1) % 4))]}
	if ((i % 2)); then kind=down spec="$dev:1:$DOWN_MS"; else
		kind=flap spec="$dev:1:$DOWN_MS:$((DOWN_MS + FLAP_MS))"
	fi
	log=$W/run$i.log
	allreduce "$cycles" "$log" SOFTVERBS_PORT_DOWN="$spec"
	rc=$?
	ms=$(awk -F: '/Slowest operation/ { gsub(/[^0-9.]/, "", $2); print $2 }' "$log")
	oob=$(awk -F: '/Out of bounds values/ { split($2, a, " "); print a[1] }' "$log")
	down=$(grep -c "is down" "$log")
	verdict=ok
	if [ $rc -ne 0 ]; then verdict="FAIL (exit $rc)"
	elif [ "${oob:-x}" != 0 ]; then verdict="FAIL (wrong values)"
	elif [ "$down" -eq 0 ]; then verdict="FAIL (no failover: the run ended before the port went down?)"
	elif awk -v m="${ms:-1e9}" -v l="$LIMIT_MS" 'BEGIN { exit !(m >= l) }'; then
		verdict="FAIL (slower than $LIMIT_MS ms)"
	fi
	[ "$verdict" = ok ] && pass=$((pass + 1)) && slow+=("$ms")
	printf '%-4s %-9s %-6s %12s %8s %10s %s\n' "$i" "$dev:1" "$kind" "${ms:-?}" "${oob:-?}" \
		"$down WARN" "$verdict"
	[ "$verdict" = ok ] || { echo "---- run $i log (tail) ----"; tail -15 "$log"; }
done
med=$(printf '%s\n' "${slow[@]}" | sort -n | awk '{ a[NR] = $1 } END { if (NR) print a[int((NR + 1) / 2)] }')
echo "== $pass of $RUNS runs recovered within $LIMIT_MS ms with #wrong 0 (median slowest operation ${med:-?} ms) =="
[ "$pass" = "$RUNS" ]
