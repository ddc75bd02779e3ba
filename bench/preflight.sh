#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# railnet-preflight at scale on softverbs (issue 19): PODS pods (one per node) with RAILS
# single-port NICs each, one rail network per NIC position (a seeds-like node: 16 x 100 GbE),
# one rank per pod; prints the preflight's report and how long it took. A benchmark: numbers,
# never pass/fail; root (network namespaces) and mpirun.
#   usage: bench/preflight.sh [BUILD] [PODS] [RAILS]     (default build 16 16)
#   PREFLIGHT_ARGS: options for railnet-preflight (default --burst-mb 4 --burst-ms 100)
#   RATE: softverbs' rate model for every port, Gb/s, or off (default off)
#   ERR_LOG: a file to keep the ranks' stderr in; REPORT: a file to keep the report in
#   NEIGH: pinned (default: permanent ARP entries between the pods, see below) or dynamic
set -u
B=$(cd "${1:-build}" && pwd)
PODS=${2:-16}
RAILS=${3:-16}
S=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
case $PODS$RAILS in *[!0-9]*) echo "preflight.sh: PODS and RAILS are counts" >&2; exit 2 ;; esac
if [ "$PODS" -lt 2 ] || [ "$PODS" -gt 64 ] || [ "$RAILS" -lt 1 ] || [ "$RAILS" -gt 32 ]; then
	echo "preflight.sh: want 2-64 pods and 1-32 rails" >&2
	exit 2
fi
[ "$(id -u)" = 0 ] || { echo "preflight.sh: needs root (network namespaces)" >&2; exit 77; }
command -v mpirun >/dev/null || { echo "preflight.sh: needs mpirun" >&2; exit 77; }
FAB=$B/bin/softverbs-fabric
W=$(mktemp -d /tmp/rn-pf-bench.XXXXXX)
trap '"$FAB" down "$W/fab" >/dev/null 2>&1; rm -rf "$W"' EXIT

{
	echo "# bench/preflight.sh: $PODS nodes x 1 pod x $RAILS rails"
	for r in $(seq 0 $((RAILS - 1))); do
		echo "rail r$r subnet=10.$((100 + r)).0.0/16 latency_us=2"
	done
	for n in $(seq 0 $((PODS - 1))); do
		echo "node node$n"
		echo "	numa 0 cpus=0-3 memory_gb=64"
		echo "	root r0 port=0000:00:01.1 numa=0 switch=0000:01:00.0"
		nics=
		for r in $(seq 0 $((RAILS - 1))); do
			printf '\tnic mlx5_%d pci=0000:%02x:00.0 root=r0 guid=b8ce:f603:%04x:%04x\n' \
				"$r" $((16 + r)) "$n" "$r"
			printf '\t\tport 1 link=Ethernet rate=100 netdev=rdma%d rail=r%d addr=10.%d.0.%d\n' \
				"$r" "$r" $((100 + r)) $((n + 1))
			nics=${nics:+$nics,}mlx5_$r
		done
		echo "	pod pod$n nics=$nics"
		for r in $(seq 0 $((RAILS - 1))); do
			printf '\t\tiface net%d type=ipvlan parent=rdma%d addr=10.%d.1.%d\n' $((r + 1)) "$r" \
				$((100 + r)) $((n + 1))
		done
	done
} >"$W/mesh.spec"
"$FAB" build "$W/mesh.spec" "$W/fab" >/dev/null || exit 1
t0=$SECONDS
"$FAB" up "$W/fab" >"$W/up.log" 2>&1 || { tail -3 "$W/up.log"; exit 1; }
echo "# fabric up: $((SECONDS - t0)) s ($PODS pods x $RAILS rails)"
# Pinned neighbours: every pod gets a permanent ARP entry for every other pod's address on
# each of its rails. With 16 x 16 rails, 256 interfaces resolving each other at once on the
# rail bridges lost ARP exchanges on a 2-CPU machine: about 100 SYN retransmissions per pod,
# each holding a softverbs QP connection (and so railnet's connect) for 1 to 3 s, and the run
# took 150-385 s; with the entries pinned, none. The preflight's own traffic is unchanged.
# NEIGH=dynamic leaves ARP to the kernel.
if [ "${NEIGH:-pinned}" = pinned ]; then
	t0=$SECONDS
	nss=$(ip netns list | awk '{print $1}' | grep -- "-pod" | while read -r n; do
		[ -f "$W/fab/netns.state" ] && grep -qx "netns $n" "$W/fab/netns.state" && echo "$n"
	done)
	: >"$W/addrs"
	for ns in $nss; do
		ip -n "$ns" -o link show | awk '/link\/ether/ {sub(/@.*/, "", $2); sub(/:$/, "", $2);
			for (i = 1; i <= NF; i++) if ($i == "link/ether") print $2, $(i + 1)}' >"$W/macs"
		ip -n "$ns" -o -4 addr show | awk '$2 != "lo" {split($4, a, "/"); print $2, a[1], a[2]}' |
			while read -r dev addr len; do
				echo "$ns $dev $addr $len $(awk -v d="$dev" '$1 == d {print $2}' "$W/macs")"
			done >>"$W/addrs"
	done
	for ns in $nss; do
		awk -v ns="$ns" '
			function net(a, len,   o, i, v, m) { split(a, o, "."); v = 0
				for (i = 1; i <= 4; i++) v = v * 256 + o[i]
				m = 2 ^ (32 - len); return int(v / m) }
			{ n[NR] = $1; d[NR] = $2; a[NR] = $3; l[NR] = $4; m[NR] = $5 }
			END { for (i = 1; i <= NR; i++) if (n[i] == ns)
				for (j = 1; j <= NR; j++) if (n[j] != ns && net(a[j], l[i]) == net(a[i], l[i]))
					print "neigh replace", a[j], "lladdr", m[j], "dev", d[i], "nud permanent" }' \
			"$W/addrs" >"$W/neigh-$ns"
		ip -n "$ns" -batch "$W/neigh-$ns" || exit 1
	done
	echo "# neighbours pinned: $(cat "$W"/neigh-* | wc -l) entries, $((SECONDS - t0)) s"
fi
pods=
for n in $(seq 0 $((PODS - 1))); do pods=${pods:+$pods,}node$n:pod$n; done
# shellcheck source=bench/railnet-bench/mpi-env.sh
. "$S/bench/railnet-bench/mpi-env.sh"
export RAILNET_IBVERBS_LIB=$B/softverbs/libibverbs.so.1
export SOFTVERBS_RATE=${RATE:-off}
t0=$(date +%s.%N)
# shellcheck disable=SC2086  # PREFLIGHT_ARGS is a list of options
timeout 900 mpirun -np "$PODS" "$S/bench/railnet-bench/in-pod.sh" "$W/fab" 1 \
	"$pods" -- "$B/bin/railnet-preflight" --plugin "$B/libnccl-net-railnet.so" \
	${PREFLIGHT_ARGS:---burst-mb 4 --burst-ms 100} >"$W/report.txt" 2>"$W/err.txt"
rc=$?
t1=$(date +%s.%N)
sed -n '1p;/^Verdict/,$p' "$W/report.txt"
grep -c '^  problem' "$W/report.txt" | sed 's/^/# problems: /'
echo "# railnet-preflight: exit $rc, $(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }') s" \
	"wall (mpirun included), $(nproc) CPUs"
[ $rc -le 1 ] || tail -5 "$W/err.txt"
[ -z "${ERR_LOG:-}" ] || cp "$W/err.txt" "$ERR_LOG"
[ -z "${REPORT:-}" ] || cp "$W/report.txt" "$REPORT"
