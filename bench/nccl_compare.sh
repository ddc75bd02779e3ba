#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# railnet against NCCL's own transports on one softverbs pod (issue 14, item 1), for a machine
# with GPUs, as root, never in CI (a benchmark: numbers, never pass/fail).
#
# All-reduce (float sum, railnet-bench --nccl, nccl-tests' table), both ranks in pod0 of SPEC,
# P2P and SHM off so every byte crosses the network transport. GPUS=1 (default): the two ranks
# are two hosts (NCCL_HOSTID per rank) on the machine's GPU 0 under CUDA MPS, as SPEC binds that
# GPU. GPUS=2: one rank per GPU (GPUs 0 and 1, test/gpu/two-cuda.spec, no MPS), two hosts for
# the network modes and one host for mode shm (NCCL's SHM transport, which NCCL cannot use for
# two ranks on one GPU; refused with GPUS=1). Modes, each on its defaults: railnet
# (NCCL_NET=railnet; variants below), NCCL's IB transport on the same softverbs devices
# (NCCL_NET=IB), NCCL's Socket transport (NCCL_NET=Socket). For every size,
# every repetition runs every mode, one after the other (interleaved, so a noisy machine hurts
# them alike); a run is one mpirun at one size.
#
# A run counts only if its log shows the transport of its mode on every channel (`via NET/<x>`,
# `via SHM` for shm) and nothing else: a mode whose transport NCCL replaced (NCCL_NET=IB
# falling back to Socket, a plugin not loaded) stops the benchmark with the reason, and no
# table is printed.
#
# Prints per size and mode the median time (us) and busbw (GB/s) of the out-of-place column,
# with min-max, and the ratios railnet/IB (busbw, time) and railnet/Socket (busbw, time); then
# issue 14's goals judged on these medians (bench/nccl_compare_table.py: met, not met with the
# sizes that miss, or not measured).
# Usage: bench/nccl_compare.sh [BUILD] [OUTDIR]   (BUILD as test/gpu/stage.sh fills out/gpu)
#   SIZES="8 64K 1M 16M 64M 256M 1G"  REPS=5  MODES="railnet ib socket"
#   ITERS: iterations per run, "SIZE:N ..." overrides per size (default 50, 10 from 64M)
#   RATE=off|<Gb/s per port> (softverbs' rate model)  SPEC=test/gpu/small-cuda.spec
#   railnet variants as extra modes: railnet-none (RAILNET_MERGE=none: two devices),
#   railnet-rr (NCCL_IB_SPLIT_DATA_ON_QPS=0: round-robin, the default since 2026-12-02),
#   railnet-split (=1: each message split over the ports); any mode with +VAR=VALUE appended
#   runs with those settings too (railnet+NCCL_MIN_NCHANNELS=4); host-staged modes railnet-host,
#   railnet-host-split and ib-host (NCCL_NET_GDR_LEVEL=LOC: NCCL keeps its network buffers in
#   host memory and copies between them and the GPU itself; their channels must not show GDRDMA);
#   shm (GPUS=2 only): NCCL's SHM transport between the two GPUs' ranks as one host
#   GPUS=1|2 (above; SPEC's default follows it)
#   BUDGET_S=<seconds>: start no run after that long and print the table of the runs done, with
#   a note (a GPU machine lent by the minute; a killed script would leave its ranks running)
#   Each run prints "# run REP MODE SIZE: TIME BUSBW" on stderr as it ends.
# Exit: 0 table printed, 1 a run failed or used another transport, 77 cannot run here.
set -uo pipefail
BUILD=$(cd "${1:-out/gpu}" && pwd)
OUT=${2:-${OUT:-/tmp/railnet-compare}}
GPUS=${GPUS:-1}
case $GPUS in 1) SPEC=${SPEC:-test/gpu/small-cuda.spec} ;; 2) SPEC=${SPEC:-test/gpu/two-cuda.spec} ;;
*) echo "nccl_compare: GPUS=$GPUS: want 1 (two ranks on GPU 0 under MPS) or 2 (a rank per GPU)" >&2
	exit 2 ;;
esac
SIZES=${SIZES:-8 64K 1M 16M 64M 256M 1G}
REPS=${REPS:-5}
MODES=${MODES:-railnet ib socket}
RATE=${RATE:-off}
mkdir -p "$OUT"
rm -f "$OUT"/run.*.txt "$OUT"/runs.tsv
fab=$OUT/fabric
skip() { echo "nccl_compare: $*; skipped" >&2; exit 77; }
die() { echo "nccl_compare: $*" >&2; exit 1; }
for m in $MODES; do
	case ${m%%+*} in railnet | railnet-none | railnet-rr | railnet-split | railnet-host | railnet-host-split | ib | ib-host | socket) ;;
	shm) [ "$GPUS" = 2 ] || {
		echo "nccl_compare: mode '$m': NCCL's SHM transport joins two ranks of one host, and NCCL refuses two ranks of one host on one GPU; run it with GPUS=2 (a GPU per rank)" >&2
		exit 2
	} ;;
	*) echo "nccl_compare: mode '$m': want railnet, railnet-none, railnet-rr, railnet-split, railnet-host, railnet-host-split, ib, ib-host, socket or shm (GPUS=2), each with optional +VAR=VALUE settings" >&2
		exit 2 ;;
	esac
	extra=${m#"${m%%+*}"}
	for kv in ${extra//+/ }; do
		[[ $kv =~ ^[A-Z_][A-Z0-9_]*=[A-Za-z0-9_.:,/-]*$ ]] || {
			echo "nccl_compare: mode '$m': '$kv' is not VAR=VALUE (upper-case name; value of letters, digits and _.:,/-)" >&2
			exit 2
		}
	done
done
case $REPS in '' | *[!0-9]* | 0) echo "nccl_compare: REPS=$REPS: want a count >= 1" >&2; exit 2 ;; esac
command -v nvidia-smi >/dev/null || skip "no nvidia-smi"
[ -x "$BUILD/iproute/bin/ip" ] && ! command -v ip >/dev/null && PATH=$BUILD/iproute/bin:$PATH
command -v ip >/dev/null || skip "needs iproute2 (ip)"
command -v mpirun >/dev/null || skip "needs mpirun"
ngpu=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
[ "$ngpu" -ge 1 ] || skip "no GPU"
mps=
if [ "$GPUS" = 1 ]; then
	# both ranks are hosts of their own (NCCL_HOSTID) sharing GPU 0 under MPS
	# shellcheck disable=SC2016  # expanded by each rank's shell
	hostid=(sh -c 'NCCL_HOSTID=cmp-host$OMPI_COMM_WORLD_RANK CUDA_VISIBLE_DEVICES=0 exec "$@"' sh)
	command -v nvidia-cuda-mps-control >/dev/null || skip "no nvidia-cuda-mps-control (CUDA MPS)"
	if nvidia-cuda-mps-control -d 2>/dev/null; then mps=started; fi
	gpus="GPU 0 of $ngpu, 2 ranks as 2 hosts under MPS"
else
	[ "$ngpu" -ge 2 ] || skip "GPUS=2 needs two GPUs; this machine has $ngpu"
	# rank N on GPU N: as two hosts each rank is its host's first, so NCCL_TESTS_DEVICE says
	# which GPU (railnet-bench reads it as nccl-tests does); mode shm runs them as one host,
	# where the local rank picks the GPU
	# shellcheck disable=SC2016  # expanded by each rank's shell
	hostid=(sh -c 'NCCL_HOSTID=cmp-host$OMPI_COMM_WORLD_RANK NCCL_TESTS_DEVICE=$OMPI_COMM_WORLD_RANK exec "$@"' sh)
	gpus="GPUs 0 and 1 of $ngpu, a rank per GPU, 2 hosts (one host for shm)"
fi
"$BUILD/bin/softverbs-fabric" down "$fab" >/dev/null 2>&1
rm -rf "$fab"
"$BUILD/bin/softverbs-fabric" build "$SPEC" "$fab" >/dev/null || exit 1
"$BUILD/bin/softverbs-fabric" up "$fab" >"$OUT/up.log" 2>&1 || skip "fabric up failed"
# shellcheck disable=SC2317  # called by the EXIT trap
cleanup() {
	"$BUILD/bin/softverbs-fabric" down "$fab" >/dev/null 2>&1
	[ -n "$mps" ] && echo quit | nvidia-cuda-mps-control
}
trap cleanup EXIT

iters_for() {
	local s=$1 kv
	for kv in ${ITERS:-}; do
		[ "${kv%%:*}" = "$s" ] && { echo "${kv#*:}"; return; }
	done
	case $s in *G | 64M | 128M | 256M | 512M) echo 10 ;; *) echo 50 ;; esac
}

# mode -> environment (a mode's +VAR=VALUE settings last) and the channel tag its log must show
mode_env() {
	local extra=${1#"${1%%+*}"}
	echo "$(mode_base_env "${1%%+*}") ${extra//+/ }"
}
mode_base_env() {
	case $1 in
	railnet) echo "NCCL_NET_PLUGIN=railnet NCCL_NET=railnet" ;;
	railnet-none) echo "NCCL_NET_PLUGIN=railnet NCCL_NET=railnet RAILNET_MERGE=none" ;;
	railnet-rr) echo "NCCL_NET_PLUGIN=railnet NCCL_NET=railnet NCCL_IB_SPLIT_DATA_ON_QPS=0" ;;
	railnet-split) echo "NCCL_NET_PLUGIN=railnet NCCL_NET=railnet NCCL_IB_SPLIT_DATA_ON_QPS=1" ;;
	railnet-host) echo "NCCL_NET_PLUGIN=railnet NCCL_NET=railnet NCCL_NET_GDR_LEVEL=LOC" ;;
	railnet-host-split) echo "NCCL_NET_PLUGIN=railnet NCCL_NET=railnet NCCL_NET_GDR_LEVEL=LOC NCCL_IB_SPLIT_DATA_ON_QPS=1" ;;
	ib) echo "NCCL_NET_PLUGIN=none NCCL_NET=IB" ;;
	ib-host) echo "NCCL_NET_PLUGIN=none NCCL_NET=IB NCCL_NET_GDR_LEVEL=LOC" ;;
	socket) echo "NCCL_NET_PLUGIN=none NCCL_NET=Socket NCCL_SOCKET_IFNAME=net1" ;;
	shm) echo "NCCL_NET_PLUGIN=none NCCL_SHM_DISABLE=0" ;;
	esac
}
mode_tag() {
	case $1 in railnet*) echo NET/railnet ;; ib*) echo NET/IB ;; socket*) echo NET/Socket ;; shm*) echo SHM ;; esac
}

# one run: mode, size, rep
run() {
	local mode=$1 s=$2 r=$3 log="$OUT/run.${1//\//_}.$2.$3.txt" tag bad kv xs=() wrap=("${hostid[@]}")
	[ "${mode%%+*}" = shm ] && wrap=() # one host: NCCL's SHM transport between the ranks
	for kv in $(mode_env "$mode"); do xs+=(-x "${kv%%=*}"); done
	# shellcheck disable=SC2046  # mode_env is a list of assignments
	"$BUILD/bin/softverbs-fabric" exec "$fab" node0 pod0 -- env \
		LD_LIBRARY_PATH="$BUILD:$BUILD/softverbs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
		RAILNET_IBVERBS_LIB="$BUILD/softverbs/libibverbs.so.1" SOFTVERBS_RATE="$RATE" \
		NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1 NCCL_NVLS_ENABLE=0 \
		OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 NCCL_DEBUG=INFO \
		NCCL_DEBUG_SUBSYS=INIT,NET $(mode_env "$mode") \
		timeout 600 mpirun --allow-run-as-root --bind-to none -np 2 \
		-x LD_LIBRARY_PATH -x RAILNET_IBVERBS_LIB -x SOFTVERBS_RATE -x NCCL_P2P_DISABLE \
		-x NCCL_SHM_DISABLE -x NCCL_NVLS_ENABLE -x NCCL_DEBUG -x NCCL_DEBUG_SUBSYS \
		-x SOFTVERBS_GDR_STAGE "${xs[@]}" "${wrap[@]}" \
		"$BUILD/bin/railnet-bench" --nccl -g 1 -b "$s" -e "$s" -n "$(iters_for "$s")" -w 3 \
		-c 1 >"$log" 2>&1 || die "$mode at $s (run $r) failed: $(grep -m1 -E 'WARN|rror' "$log")"
	tag=$(mode_tag "$mode")
	grep -qE "via $tag(/|$| )" "$log" || die "$mode at $s (run $r): no channel via $tag; NCCL used: $(grep -oE 'via [A-Za-z]+(/[A-Za-z]+)?' "$log" | sort -u | tr '\n' ' ')"
	bad=$(grep -E 'Channel .* via ' "$log" | grep -cvE "via $tag(/|$| )")
	case ${mode%%+*} in *-host | *-host-*)
		! grep -qE 'Channel .* via .*GDRDMA' "$log" ||
			die "$mode at $s (run $r): a channel used GPUDirect RDMA; NCCL_NET_GDR_LEVEL=LOC did not apply" ;;
	esac
	[ "$bad" = 0 ] || die "$mode at $s (run $r): $bad channel(s) not via $tag: $(grep -E 'Channel .* via ' "$log" | grep -vE "via $tag" | head -1)"
	awk -v m="$mode" -v r="$r" '/^ *[0-9]+ +[0-9]+ /{ if ($9 != "0") { print "WRONG"; exit } print m "\t" $1 "\t" r "\t" $6 "\t" $8 }' "$log" >>"$OUT/runs.tsv"
	grep -q WRONG "$OUT/runs.tsv" && die "$mode at $s (run $r): #wrong is not 0"
	echo "# run $r $mode $s: $(tail -1 "$OUT/runs.tsv" | cut -f4,5 | tr '\t' ' ') (us, GB/s)" >&2
}

echo "# nccl_compare: $(date -u +%Y-%m-%dT%H:%MZ), $(uname -n), $gpus, spec $SPEC, rate $RATE," \
	"sizes $SIZES, $REPS repetitions of modes: $MODES"
t0=$(date +%s)
stopped=
for s in $SIZES; do
	for r in $(seq 1 "$REPS"); do
		for m in $MODES; do
			if [ "${BUDGET_S:-0}" -gt 0 ] && [ $(($(date +%s) - t0)) -ge "$BUDGET_S" ]; then
				stopped="$m at $s, repetition $r"
				break 3
			fi
			run "$m" "$s" "$r"
		done
	done
done
[ -n "$stopped" ] && echo "# BUDGET_S=$BUDGET_S s spent: stopped before $stopped; the table holds the runs done"
[ -s "$OUT/runs.tsv" ] || die "no run completed"
grep -hm1 'NCCL version' "$OUT"/run.*.txt | sed -E 's/^.*NCCL INFO //' | sort -u | sed 's/^/# /'
python3 "$(dirname "$0")/nccl_compare_table.py" "$OUT/runs.tsv" "$MODES"
