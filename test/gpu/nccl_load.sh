#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# On a machine with >= 2 GPUs (never in CI): show that a real NCCL loads railnet at its newest
# API version, and what NCCL does with the devices railnet reports. Runs test/gpu's
# nccl_allreduce with every byte forced through the network plugin (P2P and SHM off) and keeps
# the NCCL_DEBUG=INFO log. Usage: test/gpu/nccl_load.sh [BUILD] [OUTDIR]
#   RAILNET_IBVERBS_LIB / SOFTVERBS_VIEW / NCCL_NET may be set by the caller (softverbs runs).
set -uo pipefail
BUILD=${1:-build}
OUT=${2:-${OUT:-/tmp/railnet-gpu}}
mkdir -p "$OUT"
here=$(cd "$(dirname "$0")" && pwd)
bin=$BUILD/bin/nccl_allreduce
if [ ! -x "$bin" ]; then
	bin=$OUT/nccl_allreduce
	cuda=${CUDA_HOME:-/usr/local/cuda}
	gcc -O2 -I"$cuda/include" "$here/nccl_allreduce.c" -L"$cuda/lib64" -lcudart -lnccl \
		-o "$bin" || { echo "cannot build nccl_allreduce" >&2; exit 77; }
fi
command -v nvidia-smi >/dev/null && nvidia-smi -L

export LD_LIBRARY_PATH=$BUILD${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export NCCL_NET_PLUGIN=${NCCL_NET_PLUGIN:-railnet}
export NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=${NCCL_DEBUG_SUBSYS:-INIT,NET,ENV}
export NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1 NCCL_NVLS_ENABLE=0
log=$OUT/nccl_load.log
"$bin" "${MAX_BYTES:-1048576}" >"$log" 2>&1
rc=$?
echo "== exit $rc; NCCL and railnet lines about the network plugin =="
grep -E 'NET/Plugin|railnet|NET/IB|NET/Socket|Using network|Failed to|nccl_allreduce' "$log" |
	sed -E 's/^[^ ]+ //' | sort -u | head -60
exit $rc
