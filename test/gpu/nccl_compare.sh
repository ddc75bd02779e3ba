#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# railnet against NCCL's built-in transports on the same softverbs pod (issue 5, item 10), for
# a machine with >= 2 GPUs, as root, never in CI: all-reduce with one GPU per rank
# (mpirun -np 2, both ranks in pod0 of test/fixtures/small.spec, P2P/SHM off), once through
# railnet (NCCL_NET=railnet), once through NCCL's IB transport on the same softverbs devices
# (a private mount namespace shows the pod view as /sys/class/infiniband), once through NCCL's
# Socket transport; runs alternate REPS times and the best busbw per size is compared.
# Prints the three tables' best rows and the ratios railnet/IB and railnet/Socket.
# Usage: test/gpu/nccl_compare.sh [BUILD] [OUTDIR]   (BUILD as for nccl_e2e.sh)
#   SIZES="8 1M 64M 1G"  REPS=2  ITERS=20  RATE=off|<Gb/s per port>
set -uo pipefail
BUILD=$(cd "${1:-out/gpu}" && pwd)
OUT=${2:-${OUT:-/tmp/railnet-compare}}
SPEC=${SPEC:-test/fixtures/small.spec}
REPS=${REPS:-2}
ITERS=${ITERS:-20}
RATE=${RATE:-off}
mkdir -p "$OUT"
fab=$OUT/fabric
skip() { echo "nccl_compare: $*; skipped" >&2; exit 77; }
command -v nvidia-smi >/dev/null || skip "no nvidia-smi"
[ -x "$BUILD/iproute/bin/ip" ] && ! command -v ip >/dev/null && PATH=$BUILD/iproute/bin:$PATH
command -v ip >/dev/null || skip "needs iproute2 (ip)"
"$BUILD/bin/softverbs-fabric" down "$fab" >/dev/null 2>&1
rm -rf "$fab"
"$BUILD/bin/softverbs-fabric" build "$SPEC" "$fab" >/dev/null || exit 1
"$BUILD/bin/softverbs-fabric" up "$fab" >"$OUT/up.log" 2>&1 || skip "fabric up failed"
trap '"$BUILD/bin/softverbs-fabric" down "$fab" >/dev/null 2>&1' EXIT

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
			OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 "$@" \
			bash -c "$WRAP" _ mpirun --allow-run-as-root --bind-to none -np 2 \
			"$BUILD/bin/railnet-bench" --nccl -g 1 -b "$s" -e "$s" -n "$ITERS" -w 5 -c 0 \
			>>"$OUT/$name.$r.txt" 2>&1
	done
}
# NCCL's IB reads /sys/class/infiniband itself: show it the pod view, in a private mount ns
# shellcheck disable=SC2016  # expanded by the bash -c that runs it
IBWRAP='mkdir -p /tmp/sv-origclass && mount --bind /sys/class /tmp/sv-origclass &&
mount -t tmpfs sv-class /sys/class && for c in /tmp/sv-origclass/*; do
ln -s "$c" "/sys/class/$(basename "$c")"; done && rm -f /sys/class/infiniband &&
ln -s "$SOFTVERBS_VIEW/class/infiniband" /sys/class/infiniband && exec "$@"'
for r in $(seq 1 "$REPS"); do
	WRAP='exec "$@"' run railnet "$r" NCCL_NET_PLUGIN=railnet NCCL_NET=railnet RAILNET_MERGE=ports \
		RAILNET_IBVERBS_LIB="$BUILD/softverbs/libibverbs.so.1"
	# NCCL_IB_MERGE_NICS=0: NCCL 2.28 cannot place a merged vNIC whose children are not under
	# /sys (the pod view), so IB runs its two ports as two devices, both used by the channels
	WRAP="$IBWRAP" run ib "$r" NCCL_NET_PLUGIN=none NCCL_NET=IB NCCL_IB_TIMEOUT=14 \
		NCCL_IB_MERGE_NICS=0 unshare -m
	WRAP='exec "$@"' run socket "$r" NCCL_NET_PLUGIN=none NCCL_NET=Socket NCCL_SOCKET_IFNAME=net1
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
grep -hE 'WARN|Using network|via NET' "$OUT"/*.txt | sed -E 's/^[^ ]+ //' | sort | uniq -c | sort -rn | head -12
