#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# RAILNET_GDR_POLICY with real GPU memory (issue 13, item 3), as root on a GPU machine, never
# in CI: in pod0 of test/gpu/misaligned-cuda.spec (the machine's GPU 0 below r0's switch with
# mlx5_0; mlx5_2 on root r1; GPUDirect emulated by softverbs), bin/railnet-gdr-policy
# registers cuMemAlloc'd memory as NCCL_PTR_CUDA on a connection of each device through the
# plugin's v11 table, once per policy. Passes when:
#   strict: mlx5_0 registers (0), mlx5_2 is refused (non-zero) with a WARN naming it;
#   warn:   both register, with a WARN for mlx5_2;
#   off:    both register, no WARN.
# and mlx5_0 offers CUDA memory (ptrSupport with NCCL_PTR_CUDA), mlx5_2 host memory only.
# Usage: test/gpu/gdr_policy.sh [BUILD] [OUTDIR]   (BUILD as for nccl_e2e.sh, with
#   bin/railnet-gdr-policy). Exit: 0 pass, 1 fail, 77 cannot run here.
set -uo pipefail
BUILD=$(cd "${1:-out/gpu}" && pwd)
OUT=${2:-${OUT:-/tmp/railnet-gdr-policy}}
SPEC=${SPEC:-test/gpu/misaligned-cuda.spec}
mkdir -p "$OUT"
fab=$OUT/fabric
skip() { echo "gdr_policy: $*; skipped" >&2; exit 77; }
command -v nvidia-smi >/dev/null || skip "no nvidia-smi"
[ -x "$BUILD/iproute/bin/ip" ] && ! command -v ip >/dev/null && PATH=$BUILD/iproute/bin:$PATH
command -v ip >/dev/null || skip "needs iproute2 (ip)"
for f in libnccl-net-railnet.so bin/railnet-gdr-policy bin/softverbs-fabric softverbs/libibverbs.so.1; do
	[ -e "$BUILD/$f" ] || skip "$BUILD/$f is missing"
done
"$BUILD/bin/softverbs-fabric" down "$fab" >/dev/null 2>&1
rm -rf "$fab"
"$BUILD/bin/softverbs-fabric" build "$SPEC" "$fab" >/dev/null || exit 1
"$BUILD/bin/softverbs-fabric" up "$fab" >"$OUT/up.log" 2>&1 || skip "fabric up failed"
trap '"$BUILD/bin/softverbs-fabric" down "$fab" >/dev/null 2>&1' EXIT
fail=0
for policy in strict warn off; do
	"$BUILD/bin/softverbs-fabric" exec "$fab" node0 pod0 -- env \
		RAILNET_IBVERBS_LIB="$BUILD/softverbs/libibverbs.so.1" RAILNET_GDR_POLICY=$policy \
		"$BUILD/bin/railnet-gdr-policy" "$BUILD/libnccl-net-railnet.so" \
		>"$OUT/$policy.out" 2>"$OUT/$policy.err"
	rc=$?
	near=$(awk '$3 == "mlx5_0" {print $5 " " $7}' "$OUT/$policy.out")
	far=$(awk '$3 == "mlx5_2" {print $5 " " $7}' "$OUT/$policy.out")
	warns=$(grep -c 'WARN.*mlx5_2\|mlx5_2.*GPU' "$OUT/$policy.err")
	echo "== $policy: exit $rc; mlx5_0 ptrSupport/regMr: $near; mlx5_2: $far; WARN lines about mlx5_2: $warns"
	grep -m2 'mlx5_2' "$OUT/$policy.err" | sed 's/^/   /'
	ok=1
	[ "$rc" = 0 ] || ok=0
	case "$near" in 7\ 0 | 3\ 0) ;; *) ok=0 ;; esac
	case "$far" in 1\ *) ;; *) ok=0 ;; esac
	case "$policy" in
	strict) [ "${far#1 }" != 0 ] && [ "$warns" -ge 1 ] || ok=0 ;;
	warn) [ "${far#1 }" = 0 ] && [ "$warns" -ge 1 ] || ok=0 ;;
	off) [ "${far#1 }" = 0 ] && [ "$warns" = 0 ] || ok=0 ;;
	esac
	[ "$ok" = 1 ] || { fail=1; echo "   FAIL"; cat "$OUT/$policy.out" "$OUT/$policy.err" | head -20; }
done
exit $fail
