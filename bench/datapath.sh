#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# railnet's data path between two pods of test/fixtures/small.spec (each: one dual-port NIC,
# its two ports fused into one virtual device), over softverbs, as root (the pods are network
# namespaces). For each striping mode (NCCL_IB_SPLIT_DATA_ON_QPS 0/1) and QPs per port
# (NCCL_IB_QPS_PER_CONNECTION 1/2): unidirectional bandwidth with the softverbs rate model at
# RATE Gb/s per port (the modeled aggregate is 2 x RATE) and without it, and the one-way
# latency of small messages, all measured by `railnet-bench --net --p2p` in one run, so the
# modes are compared side by side. Numbers, never pass/fail: docs/performance.md keeps them.
# Usage: bench/datapath.sh [BUILD]   RATE=25 SIZES_BW="1M 64M 256M" ITERS=20
set -uo pipefail
B=$(cd "${1:-build}" && pwd)
S=$(cd "$(dirname "$0")/.." && pwd)
RATE=${RATE:-25}
ITERS=${ITERS:-20}
[ "$(id -u)" = 0 ] || { echo "bench/datapath.sh: needs root (network namespaces); skipped"; exit 0; }
command -v mpirun >/dev/null || { echo "bench/datapath.sh: no mpirun; skipped"; exit 0; }
[ -x "$B/iproute/bin/ip" ] && ! command -v ip >/dev/null && PATH=$B/iproute/bin:$PATH
# shellcheck source=bench/railnet-bench/mpi-env.sh
. "$S/bench/railnet-bench/mpi-env.sh"
export RAILNET_IBVERBS_LIB=$B/softverbs/libibverbs.so.1
unset NCCL_NET_PLUGIN
fab=$(mktemp -d /tmp/rn-datapath.XXXXXX)
trap '"$B/bin/softverbs-fabric" down "$fab" >/dev/null 2>&1; rm -rf "$fab"' EXIT
"$B/bin/softverbs-fabric" build "$S/test/fixtures/small.spec" "$fab" >/dev/null || exit 1
"$B/bin/softverbs-fabric" up "$fab" >/dev/null 2>&1 || { echo "bench/datapath.sh: fabric up failed; skipped"; exit 0; }

p2p() { # MODE ARGS...: the rows of one railnet-bench --net --p2p run
	timeout 600 mpirun -np 2 "$S/bench/railnet-bench/in-pod.sh" "$fab" 1 \
		node0:pod0,node0:pod1 -- "$B/bin/railnet-bench" --net --plugin \
		"$B/libnccl-net-railnet.so" -T 120 --p2p "$@" 2>&1 | awk '$1 ~ /^[0-9]+$/ && NF >= 8'
}

model=$(awk -v r="$RATE" 'BEGIN { printf "%.3f", 2 * r / 8 }')
echo "== unidirectional bandwidth, 8 messages in flight, rate model $RATE Gb/s per port (aggregate $model GB/s) and off"
printf '%-8s %-5s %-10s %12s %10s %9s %12s\n' split qps/p size "GB/s model" "% model" "GB/s off" "lat 8B (us)"
for split in 0 1; do
	for qps in 1 2; do
		export NCCL_IB_SPLIT_DATA_ON_QPS=$split NCCL_IB_QPS_PER_CONNECTION=$qps
		declare -A m=() o=()
		export SOFTVERBS_RATE=$RATE
		while read -r _ _ _ size _ _ bw _; do m[$size]=$bw; done < <(p2p bw -b 1M -e 256M -f 16 \
			-n "$ITERS" -w 3)
		export SOFTVERBS_RATE=off
		while read -r _ _ _ size _ _ bw _; do o[$size]=$bw; done < <(p2p bw -b 1M -e 256M -f 16 \
			-n "$ITERS" -w 3)
		lat=$(p2p lat -b 8 -e 8 -n 2000 -w 100 | awk '{ print $6 }')
		for size in $(printf '%s\n' "${!m[@]}" | sort -n); do
			pct=$(awk -v b="${m[$size]}" -v mo="$model" 'BEGIN { printf "%.1f", 100 * b / mo }')
			printf '%-8s %-5s %-10s %12s %10s %9s %12s\n' "$split" "$qps" "$size" "${m[$size]}" \
				"$pct" "${o[$size]:-?}" "${lat:-?}"
		done
		unset m o
	done
done
