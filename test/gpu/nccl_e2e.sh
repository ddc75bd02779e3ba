#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# NCCL end to end through railnet (issue 5, item 9), for a machine with GPUs, as root, never
# in CI. With one GPU the two ranks are two hosts (NCCL_HOSTID) sharing it under CUDA MPS. Brings up test/fixtures/small.spec with softverbs-fabric (real network
# namespaces; each pod has one dual-port NIC, 2 PFs) and, inside pod0, runs railnet-bench
# --nccl with one GPU per rank (mpirun -np 2; NP=1 runs both GPUs in one process, where NCCL
# 2.28.3 keeps the physical ports of its second communicator instead of the merged virtual
# device) for all-reduce, all-gather, reduce-scatter and send/recv from 4 B to 1 GiB, every
# byte through the plugin (NCCL_NET=railnet,
# NCCL_P2P_DISABLE=1, NCCL_SHM_DISABLE=1). Passes when every run exits 0 with #wrong 0 and
# "Out of bounds values : 0 OK", and NCCL_DEBUG=INFO shows every channel going through
# railnet's virtual device and none through another transport.
# Usage: test/gpu/nccl_e2e.sh [BUILD] [OUTDIR]
#   BUILD holds libnccl-net-railnet.so, bin/{railnet-bench,softverbs-fabric},
#   softverbs/libibverbs.so.1 (test/gpu/stage.sh fills out/gpu with them).
#   COLLS="all_reduce all_gather reduce_scatter sendrecv"  MINBYTES=4  MAXBYTES=1G  STEP=4  ITERS=5
#   SPEC=test/gpu/small-cuda.spec (GPUDirect on every channel: via NET/railnet/<vNIC>/GDRDMA)
#   SPEC=test/gpu/misaligned-cuda.spec EXPECT=misaligned (GPUDirect on the GPU's NIC only)
#   SPEC=test/gpu/aligned-cuda.spec EXPECT=aligned (both NICs, GPUDirect); RATE=<Gb/s per
#   port> turns softverbs' rate model on (default off)
#   SPEC=test/gpu/flat-cuda.spec EXPECT=nogdr (PHB: no GPUDirect), and with
#   NCCL_TOPO_FILE=test/gpu/flat-cuda.nccl.xml (the file's switch: GPUDirect everywhere)
# Exit: 0 pass, 1 fail, 77 cannot run here.
set -uo pipefail
BUILD=$(cd "${1:-out/gpu}" && pwd)
OUT=${2:-${OUT:-/tmp/railnet-e2e}}
SPEC=${SPEC:-test/gpu/small-cuda.spec}
COLLS=${COLLS:-all_reduce all_gather reduce_scatter sendrecv}
MAXBYTES=${MAXBYTES:-1G}
NP=${NP:-2}
# MERGE unset: railnet's defaults (NCCL >= 2.24 fuses the two ports with makeVDevice; the pod's
# /sys from `softverbs-fabric exec` lets it place them). MERGE=ports: railnet offers the two
# ports as one device itself (the path of NCCL < 2.24).
MERGE=${MERGE:-}
STEP=${STEP:-4}
ITERS=${ITERS:-5}
mkdir -p "$OUT"
fab=$OUT/fabric
skip() { echo "nccl_e2e: $*; skipped" >&2; exit 77; }
command -v nvidia-smi >/dev/null || skip "no nvidia-smi"
ngpu=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
[ "$ngpu" -ge 1 ] || skip "no GPU"
# One GPU: the two ranks are two "hosts" sharing it (NCCL_HOSTID per rank, as NCCL and
# railnet-bench count hosts), under CUDA MPS so that they do not time-slice the GPU.
mps=
if [ "$ngpu" -lt 2 ]; then
	[ "$NP" -gt 1 ] || skip "one GPU: NP must be 2 (two hosts on one GPU)"
	command -v nvidia-cuda-mps-control >/dev/null || skip "one GPU and no nvidia-cuda-mps-control"
	if nvidia-cuda-mps-control -d 2>/dev/null; then mps=started; fi
fi
# a machine without iproute2 may get one carried in BUILD/iproute/bin (see test/gpu/stage.sh)
[ -x "$BUILD/iproute/bin/ip" ] && ! command -v ip >/dev/null && PATH=$BUILD/iproute/bin:$PATH
command -v ip >/dev/null || skip "needs iproute2 (ip) for the pods' network namespaces"
for f in libnccl-net-railnet.so bin/railnet-bench bin/softverbs-fabric softverbs/libibverbs.so.1; do
	[ -e "$BUILD/$f" ] || skip "$BUILD/$f is missing"
done

"$BUILD/bin/softverbs-fabric" down "$fab" >/dev/null 2>&1
rm -rf "$fab"
"$BUILD/bin/softverbs-fabric" build "$SPEC" "$fab" >/dev/null || exit 1
"$BUILD/bin/softverbs-fabric" up "$fab" >"$OUT/up.log" 2>&1 || skip "fabric up failed: $(tail -1 "$OUT/up.log")"
# shellcheck disable=SC2317  # called by the EXIT trap
cleanup() {
	"$BUILD/bin/softverbs-fabric" down "$fab" >/dev/null 2>&1
	[ -n "$mps" ] && echo quit | nvidia-cuda-mps-control
}
trap cleanup EXIT

if [ "$NP" -gt 1 ]; then
	launch=(mpirun --allow-run-as-root --bind-to none -np "$NP" -x LD_LIBRARY_PATH -x RAILNET_IBVERBS_LIB
		-x SOFTVERBS_RATE -x NCCL_NET_PLUGIN -x NCCL_NET -x NCCL_P2P_DISABLE -x NCCL_SHM_DISABLE
		-x NCCL_NVLS_ENABLE -x NCCL_DEBUG -x NCCL_DEBUG_SUBSYS -x RAILNET_STATS
		${NCCL_TOPO_FILE:+-x NCCL_TOPO_FILE})
	# shellcheck disable=SC2016  # expanded by each rank's shell
	[ "$ngpu" -lt 2 ] && launch+=(sh -c 'NCCL_HOSTID=e2e-host$OMPI_COMM_WORLD_RANK exec "$@"' sh)
	G=1
else
	launch=(env)
	G=2
fi
fail=0
for coll in $COLLS; do
	log=$OUT/$coll.log
	"$BUILD/bin/softverbs-fabric" exec "$fab" node0 pod0 -- env \
		LD_LIBRARY_PATH="$BUILD${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
		RAILNET_IBVERBS_LIB="$BUILD/softverbs/libibverbs.so.1" SOFTVERBS_RATE="${RATE:-off}" \
		${MERGE:+RAILNET_MERGE="$MERGE"} ${NCCL_TOPO_FILE:+NCCL_TOPO_FILE="$NCCL_TOPO_FILE"} \
		NCCL_NET_PLUGIN=railnet NCCL_NET=railnet NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1 \
		NCCL_NVLS_ENABLE=0 NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET,GRAPH \
		RAILNET_STATS="$OUT/$coll.stats.json" OMPI_ALLOW_RUN_AS_ROOT=1 \
		OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
		timeout 900 "${launch[@]}" "$BUILD/bin/railnet-bench" --nccl --coll "$coll" \
		-g "$G" -b "${MINBYTES:-4}" -e "$MAXBYTES" -f "$STEP" -n "$ITERS" -w 2 -c 1 >"$log" 2>&1
	rc=$?
	# #wrong of both placements (N/A where a placement has no check, e.g. in-place sendrecv)
	wrong=$(awk '/^ *[0-9]+ +[0-9]+ /{ if (($9 != "0" && $9 != "N/A") || ($NF != "0" && $NF != "N/A")) bad++ } END { print bad + 0 }' "$log")
	chans=$(grep -cE 'via NET/railnet/[0-9]+' "$log")
	# the channels must use a device of both ports (railnet's merged one, or NCCL's vNIC);
	# EXPECT=misaligned (test/gpu/misaligned-cuda.spec): two single-port NICs; railnet offers
	# GPU memory on device 0 (below the GPU's switch) only, and NCCL runs its channels there
	# with GPUDirect (as the seeds' jobs used only the PFs on their GPUs' roots); device 1
	# (another root) is host memory only, never GDRDMA
	# EXPECT=aligned (test/gpu/aligned-cuda.spec): both single-port NICs below the GPU's
	# switch, channels on both, all with GPUDirect
	if [ "${EXPECT:-}" = aligned ]; then
		phys=$(grep -cE 'via NET/railnet/[2-9]' "$log")
		[ "$(grep -cE 'via NET/railnet/0/GDRDMA' "$log")" -gt 0 ] || phys=$((phys + 1))
		[ "$(grep -cE 'via NET/railnet/1/GDRDMA' "$log")" -gt 0 ] || phys=$((phys + 1))
	elif [ "${EXPECT:-}" = misaligned ]; then
		phys=$(grep -cE 'via NET/railnet/([2-9]|1/GDRDMA)' "$log")
		[ "$(grep -cE 'via NET/railnet/0/GDRDMA' "$log")" -gt 0 ] || phys=$((phys + 1))
		grep -q 'railnet : mlx5_2: host: ' "$log" || phys=$((phys + 1))
	elif [ "$MERGE" = ports ]; then
		phys=$(grep -cE 'via NET/railnet/[1-9]' "$log")
	else
		phys=$(grep -cE 'via NET/railnet/[01]([^0-9]|$)' "$log")
	fi
	other=$(grep -cE 'via (NET/(IB|Socket)|P2P|SHM)' "$log")
	other=$((other + phys))
	oob=$(grep -c 'Out of bounds values : 0 OK' "$log")
	# GPUDirect: every channel on GPU memory when the spec's node emulates it (gdr=)
	# EXPECT=nogdr: no channel may use GPUDirect (test/gpu/flat-cuda.spec without its
	# NCCL_TOPO_FILE: NCCL and railnet both see PHB)
	if [ "${EXPECT:-}" = nogdr ]; then
		other=$((other + $(grep -cE 'via NET/railnet/[0-9]+/GDRDMA' "$log")))
	elif grep -qE '^node .*gdr=(peermem|dmabuf|both)' "$SPEC" && [ "${EXPECT:-}" != misaligned ] &&
		[ "${EXPECT:-}" != aligned ]; then
		nogdr=$((chans - $(grep -cE 'via NET/railnet/[0-9]+/GDRDMA' "$log")))
		other=$((other + nogdr))
	fi
	# the pod's /sys must let NCCL place the NICs and the GPU
	# (a provider's NCCL_TOPO_FILE names virtual bridges, ffff:ff:xx.x, that have no sysfs
	# path: NCCL says so at INFO, and that is expected)
	nopath=$(grep -E 'Could not find (real path|NET with id|any local path)' "$log" | grep -cv 'ffff:ff')
	other=$((other + nopath))
	echo "== $coll: exit $rc, rows with #wrong != 0: $wrong, channels via railnet: $chans, via others: $other"
	grep -E '^ *[0-9]+ +[0-9]+ |Avg bus bandwidth|Out of bounds' "$log" | tail -40
	if [ "$rc" != 0 ] || [ "$wrong" != 0 ] || [ "$chans" = 0 ] || [ "$other" != 0 ] || [ "$oob" = 0 ]; then
		fail=1
		grep -E 'WARN|rror' "$log" | head -20
	fi
done
grep -hE 'NET/Plugin|Using network|Made virtual device|railnet : (virtual|stats|GDR|GPUDirect)|via NET/railnet|Could not find' "$OUT"/*.log | sed -E 's/^[^ ]+ //' | sort | uniq -c | sort -rn | head -20
exit $fail
