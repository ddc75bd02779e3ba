#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# On a machine with >= 2 GPUs, as root (never in CI): NCCL's own IB transport all-reduces over
# softverbs. NCCL reads /sys/class/infiniband itself, so the run happens in a private mount
# namespace whose /sys/class is a tmpfs holding links to the real classes plus the pod view's
# infiniband class. Usage: test/gpu/nccl_ib_softverbs.sh BUILD [OUTDIR] [SPEC]
#   BUILD holds bin/softverbs-fabric, bin/nccl_allreduce and softverbs/libibverbs.so.1.
set -euo pipefail
BUILD=$(cd "${1:-build}" && pwd)
OUT=${2:-${OUT:-/tmp/railnet-gpu}}
SPEC=${3:-test/fixtures/small.spec}
mkdir -p "$OUT"
fab=$OUT/fabric
rm -rf "$fab"
"$BUILD/bin/softverbs-fabric" build "$SPEC" "$fab" >/dev/null
envf=$(find "$fab" -path "*/${POD:-pod0}/env" | head -1)
view=$(sed -n "s/^export SOFTVERBS_VIEW='\(.*\)'$/\1/p" "$envf")
echo "pod view: $view"

export SOFTVERBS_VIEW=$view
export LD_LIBRARY_PATH=$BUILD/softverbs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export NCCL_NET=IB NCCL_NET_PLUGIN=none NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1
export NCCL_NVLS_ENABLE=0 NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET
rc=0
export NCCL_IB_TIMEOUT=${NCCL_IB_TIMEOUT:-14}
# shellcheck disable=SC2016
unshare -m bash -c '
	set -e
	mkdir -p /tmp/sv-origclass
	mount --bind /sys/class /tmp/sv-origclass
	mount -t tmpfs sv-class /sys/class
	for c in /tmp/sv-origclass/*; do ln -s "$c" "/sys/class/$(basename "$c")"; done
	rm -f /sys/class/infiniband
	ln -s "$SOFTVERBS_VIEW/class/infiniband" /sys/class/infiniband
	ls -l /sys/class/infiniband/
	timeout 240 "$0" "$1"
' "$BUILD/bin/nccl_allreduce" "${MAX_BYTES:-16777216}" >"$OUT/nccl_ib_softverbs.log" 2>&1 || rc=$?
grep -E 'NET/IB|Using network|via NET|nccl_allreduce|bytes|rror|WARN|mlx5' "$OUT/nccl_ib_softverbs.log" |
	sed -E 's/^[^ ]+ //' | sort -u | head -40 || true
exit "$rc"
