#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# railnet against NCCL's built-in transports on the same softverbs pod (issue 5, item 10; issue
# 13), as root, never in CI: all-reduce with one GPU per rank (mpirun -np 2, both ranks in pod0
# of test/gpu/small-cuda.spec, P2P/SHM off; with one GPU the two ranks are two hosts sharing
# it, NCCL_HOSTID per rank, under CUDA MPS). Each transport runs on its defaults: railnet
# (NCCL_NET=railnet), NCCL's IB transport on the same softverbs devices, NCCL's Socket
# transport. `softverbs-fabric exec` gives the pod a /sys where NCCL places the NICs, so both
# verbs transports fuse the two ports of the NIC into one virtual device (NCCL's makeVDevice).
# Runs alternate REPS times and the best busbw per size is compared.
# Prints the three tables' best rows and the ratios railnet/IB and railnet/Socket.
# Usage: test/gpu/nccl_compare.sh [BUILD] [OUTDIR]   (BUILD as for nccl_e2e.sh)
#   SIZES="8 1M 64M 1G"  REPS=2  ITERS=20  RATE=off|<Gb/s per port>
set -uo pipefail
BUILD=$(cd "${1:-out/gpu}" && pwd)
OUT=${2:-${OUT:-/tmp/railnet-compare}}
SPEC=${SPEC:-test/gpu/small-cuda.spec}
REPS=${REPS:-2}
ITERS=${ITERS:-20}
RATE=${RATE:-off}
mkdir -p "$OUT"
fab=$OUT/fabric
skip() { echo "nccl_compare: $*; skipped" >&2; exit 77; }
command -v nvidia-smi >/dev/null || skip "no nvidia-smi"
[ -x "$BUILD/iproute/bin/ip" ] && ! command -v ip >/dev/null && PATH=$BUILD/iproute/bin:$PATH
command -v ip >/dev/null || skip "needs iproute2 (ip)"
ngpu=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
[ "$ngpu" -ge 1 ] || skip "no GPU"
mps=
hostid=()
if [ "$ngpu" -lt 2 ]; then
	command -v nvidia-cuda-mps-control >/dev/null || skip "one GPU and no nvidia-cuda-mps-control"
	if nvidia-cuda-mps-control -d 2>/dev/null; then mps=started; fi
	# shellcheck disable=SC2016  # expanded by each rank's shell
	hostid=(sh -c 'NCCL_HOSTID=cmp-host$OMPI_COMM_WORLD_RANK exec "$@"' sh)
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

# one run: NAME, then env assignments; the bench runs in pod0 with both ranks
run() {
	local name=$1 r=$2; shift 2
	local sizes=()
	for s in ${SIZES:-8 1M 64M 1G}; do sizes+=("$s"); done
	: >"$OUT/$name.$r.txt"
	for s in "${sizes[@]}"; do
		"$BUILD/bin/softverbs-fabric" exec "$fab" node0 pod0 -- env \
			LD_LIBRARY_PATH="$BUILD:$BUILD/softverbs" SOFTVERBS_RATE="$RATE" \
			NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1 NCCL_NVLS_ENABLE=0 \
			OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 NCCL_DEBUG=INFO \
			NCCL_DEBUG_SUBSYS=INIT,NET,GRAPH "$@" \
			mpirun --allow-run-as-root --bind-to none -np 2 "${hostid[@]}" \
			"$BUILD/bin/railnet-bench" --nccl -g 1 -b "$s" -e "$s" -n "$ITERS" -w 5 -c 0 \
			>>"$OUT/$name.$r.txt" 2>&1
	done
}
for r in $(seq 1 "$REPS"); do
	run railnet "$r" NCCL_NET_PLUGIN=railnet NCCL_NET=railnet \
		RAILNET_IBVERBS_LIB="$BUILD/softverbs/libibverbs.so.1"
	run ib "$r" NCCL_NET_PLUGIN=none NCCL_NET=IB
	run socket "$r" NCCL_NET_PLUGIN=none NCCL_NET=Socket NCCL_SOCKET_IFNAME=net1
done
python3 - "$OUT" "$REPS" <<'PY'
import sys, re, glob
out, reps = sys.argv[1], int(sys.argv[2])
best = {}
for name in ("railnet", "ib", "socket"):
    for f in glob.glob(f"{out}/{name}.*.txt"):
        for line in open(f):
            m = re.match(r"\s*(\d+)\s+\d+\s+\S+\s+\S+\s+-?\d+\s+(\S+)\s+(\S+)\s+(\S+)\s+\S+\s+(\S+)\s+(\S+)\s+(\S+)", line)
            if not m:
                continue
            size = int(m.group(1))
            t = min(float(m.group(2)), float(m.group(5)))
            bw = max(float(m.group(4)), float(m.group(7)))
            k = (name, size)
            if k not in best or bw > best[k][1] or (bw == best[k][1] and t < best[k][0]):
                best[k] = (t, bw)
sizes = sorted({s for (_, s) in best})
print(f"{'size':>12} {'railnet us':>11} {'GB/s':>7} {'IB us':>9} {'GB/s':>7} {'Socket us':>10} {'GB/s':>7} {'bw r/IB':>8} {'t r/IB':>7} {'bw r/Sock':>9}")
for s in sizes:
    r, i, so = best.get(("railnet", s)), best.get(("ib", s)), best.get(("socket", s))
    def f(x): return f"{x[0]:>9.2f} {x[1]:>7.2f}" if x else f"{'-':>9} {'-':>7}"
    rb = f"{r[1]/i[1]:.3f}" if r and i and i[1] else "-"
    rt = f"{r[0]/i[0]:.3f}" if r and i else "-"
    rs = f"{r[1]/so[1]:.3f}" if r and so and so[1] else "-"
    print(f"{s:>12} {f(r)} {f(i)} {f(so)} {rb:>8} {rt:>7} {rs:>9}")
PY
grep -hE 'WARN|Using network|Made vNic|Made virtual device|via NET' "$OUT"/*.txt | sed -E 's/^[^ ]+ //' | sort | uniq -c | sort -rn | head -12
