#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# railnet's aggregate over many rails against softverbs' rate model (issue 14, item 2: "with a
# rate model of 2, 8 and 16 ports, >= 95% of the modeled aggregate at >= 64 MiB"). A benchmark:
# numbers, never pass/fail; root (network namespaces) and mpirun; no GPU.
#
# Two nodes, one pod each, every pod given NICS dual-port NICs (2 x NICS ports, each port on a
# rail of its own: the seeds' node, 16 x 100 GbE on 8 NICs, at NICS=8). For each port count P of
# PORTS, P/2 pairs of ranks run at once, pair k between the pods on the two ports of NIC k fused
# into one virtual device by makeVDevice (as NCCL does for the GPU next to that NIC), each
# streaming `railnet-bench --net --p2p bw` (even rank sends, 8 in flight) with the rate model
# at RATE Gb/s per port: the modeled aggregate is P x RATE / 8 GB/s. The aggregate measured is
# every pair's bytes over the slowest pair's time (the pairs start at one barrier). REPS runs
# per port count, interleaved; medians with min-max.
# Usage: bench/rails.sh [BUILD]   PORTS="2 8 16" RATE=4 SIZES="1M 64M 256M" ITERS=10 REPS=3
set -uo pipefail
B=$(cd "${1:-build}" && pwd)
S=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
PORTS=${PORTS:-2 8 16}
RATE=${RATE:-4}
SIZES=${SIZES:-1M 64M 256M}
ITERS=${ITERS:-10}
REPS=${REPS:-3}
usage() { echo "bench/rails.sh: $*" >&2; exit 2; }
maxp=0
for p in $PORTS; do
	case $p in *[!0-9]* | '') usage "PORTS='$PORTS': even port counts from 2 to 32" ;; esac
	{ [ "$p" -ge 2 ] && [ "$p" -le 32 ] && [ $((p % 2)) = 0 ]; } ||
		usage "PORTS='$PORTS': even port counts from 2 to 32"
	[ "$p" -gt "$maxp" ] && maxp=$p
done
[ "$maxp" -gt 0 ] || usage "PORTS is empty"
case $RATE in *[!0-9]* | '' | 0) usage "RATE=$RATE: Gb/s per port, a positive integer" ;; esac
case $ITERS in *[!0-9]* | '' | 0) usage "ITERS=$ITERS: a count >= 1" ;; esac
case $REPS in *[!0-9]* | '' | 0) usage "REPS=$REPS: a count >= 1" ;; esac
sizes=()
for s in $SIZES; do
	case $s in [0-9]*[KMG] | [0-9]*) sizes+=("$s") ;; *) usage "SIZES: '$s' is not a size" ;; esac
done
[ "${#sizes[@]}" -gt 0 ] || usage "SIZES is empty"
[ "$(id -u)" = 0 ] || { echo "bench/rails.sh: needs root (network namespaces)" >&2; exit 77; }
command -v mpirun >/dev/null || { echo "bench/rails.sh: needs mpirun" >&2; exit 77; }
[ -x "$B/iproute/bin/ip" ] && ! command -v ip >/dev/null && PATH=$B/iproute/bin:$PATH
# shellcheck source=bench/railnet-bench/mpi-env.sh
. "$S/bench/railnet-bench/mpi-env.sh"
export RAILNET_IBVERBS_LIB=$B/softverbs/libibverbs.so.1 SOFTVERBS_RATE=$RATE
unset NCCL_NET_PLUGIN
FAB=$B/bin/softverbs-fabric
W=$(mktemp -d /tmp/rn-rails.XXXXXX)
trap '"$FAB" down "$W/fab" >/dev/null 2>&1; [ -n "${KEEP:-}" ] || rm -rf "$W"' EXIT

nics=$((maxp / 2))
{
	echo "# bench/rails.sh: 2 nodes x 1 pod x $nics dual-port NICs, one rail per port"
	for r in $(seq 0 $((maxp - 1))); do
		echo "rail r$r subnet=10.$((100 + r)).0.0/16 latency_us=2"
	done
	for n in 0 1; do
		echo "node node$n"
		echo "	numa 0 cpus=0-3 memory_gb=64"
		echo "	root r0 port=0000:00:01.1 numa=0 switch=0000:01:00.0"
		list=
		for k in $(seq 0 $((nics - 1))); do
			for f in 0 1; do
				d=$((2 * k + f))
				printf '\tnic mlx5_%d pci=0000:%02x:00.%d root=r0 guid=b8ce:f603:%04x:%04x\n' \
					"$d" $((16 + k)) "$f" "$n" "$d"
				printf '\t\tport 1 link=Ethernet rate=100 netdev=rdma%d rail=r%d addr=10.%d.0.%d\n' \
					"$d" "$d" $((100 + d)) $((n + 1))
				list=${list:+$list,}mlx5_$d
			done
		done
		echo "	pod pod$n nics=$list"
		for d in $(seq 0 $((maxp - 1))); do
			printf '\t\tiface net%d type=ipvlan parent=rdma%d addr=10.%d.1.%d\n' $((d + 1)) "$d" \
				$((100 + d)) $((n + 1))
		done
	done
} >"$W/rails.spec"
"$FAB" build "$W/rails.spec" "$W/fab" >/dev/null || exit 1
"$FAB" up "$W/fab" >"$W/up.log" 2>&1 || { tail -3 "$W/up.log" >&2; exit 1; }

# one run: P ports, rep r; appends "P r size aggregate" lines to $W/runs
run() {
	local p=$1 r=$2 np=$1 pods='' i log="$W/run.$1.$2.txt"
	for i in $(seq 1 "$np"); do pods=${pods:+$pods,}node$(((i - 1) % 2)):pod$(((i - 1) % 2)); done
	timeout 900 mpirun -np "$np" --oversubscribe --bind-to none "$S/bench/railnet-bench/in-pod.sh" \
		"$W/fab" 1 "$pods" -- "$B/bin/railnet-bench" --net --plugin "$B/libnccl-net-railnet.so" \
		-T 300 --p2p bw --net-dev pair -b "${sizes[0]}" -e "${sizes[-1]}" -f 4 -n "$ITERS" -w 2 \
		>"$log" 2>&1 || { echo "bench/rails.sh: $p ports (run $r) failed:" >&2; tail -5 "$log" >&2; exit 1; }
	grep -q 'Wrong bytes *: 0 OK' "$log" || { echo "bench/rails.sh: $p ports (run $r): bytes wrong" >&2; exit 1; }
	if [ "$p" = 2 ]; then # one pair: its own row is the aggregate
		awk -v p="$p" -v r="$r" '$1 ~ /^[0-9]+$/ && NF >= 8 { print p, r, $4, $7 }' "$log"
	else
		awk -v p="$p" -v r="$r" '/^# aggregate of/ { print p, r, $7, $9 }' "$log"
	fi >>"$W/runs"
	echo "# run $r, $p ports: $(awk -v p="$p" -v r="$r" '$1 == p && $2 == r { printf "%s B %s GB/s; ", $3, $4 }' "$W/runs")" >&2
}

echo "# bench/rails.sh: $(date -u +%Y-%m-%dT%H:%MZ), $(uname -n), $(nproc) CPUs, rate model $RATE Gb/s" \
	"per port, ports: $PORTS, sizes: ${sizes[*]} (x4 steps), $ITERS messages, $REPS repetitions"
for r in $(seq 1 "$REPS"); do
	for p in $PORTS; do run "$p" "$r"; done
done
awk -v rate="$RATE" 'function med(a, n,   i, j, t) {
		for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
		return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
	}
	{ k = $1 " " $3; n[k]++; v[k, n[k]] = $4; if (!(k in seen)) { seen[k] = 1; keys[++nk] = k } }
	END {
		printf "%5s  %12s  %10s  %22s  %8s\n", "ports", "size(B)", "model GB/s", "aggregate GB/s (min-max)", "% model"
		for (i = 1; i <= nk; i++) {
			split(keys[i], f, " ")
			m = n[keys[i]]; lo = 1e18; hi = 0
			for (j = 1; j <= m; j++) { a[j] = v[keys[i], j]; lo = a[j] < lo ? a[j] : lo; hi = a[j] > hi ? a[j] : hi }
			model = f[1] * rate / 8; md = med(a, m)
			printf "%5d  %12d  %10.3f  %8.3f (%.3f-%.3f)  %8.1f\n", f[1], f[2], model, md, lo, hi, 100 * md / model
		}
	}' "$W/runs"
