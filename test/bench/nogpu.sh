#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# On a machine without a GPU, railnet-bench --nccl must exit 77 (nothing measured) and say
# why on stderr. On a machine with a GPU, or a build without --nccl, this test is skipped.
# Usage: nogpu.sh path/to/railnet-bench
set -u
# Sanitizer builds: MPI, the CUDA runtime and NCCL keep allocations past exit; leak checking of
# railnet-bench's own code is done by the unit tests (test_rb_*), so it is off for the binary.
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
bin=$1
if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L 2>/dev/null | grep -q '^GPU'; then
	echo "this machine has a GPU; the no-GPU exit is not testable here" >&2
	exit 77
fi
err=$("$bin" --nccl -b 8 -e 8 2>&1 >/dev/null)
rc=$?
if [ "$rc" = 2 ] && [[ "$err" == *"--nccl mode was not built"* ]]; then
	echo "railnet-bench was built without CUDA/NCCL: $err" >&2
	exit 77
fi
echo "rc=$rc: $err"
[ "$rc" = 77 ] || { echo "FAIL: want exit 77 without a GPU"; exit 1; }
[[ "$err" == *"--nccl needs a GPU, and host "*" has none usable (cudaGetDeviceCount"* ]] ||
	{ echo "FAIL: the reason is missing"; exit 1; }
echo "ok"
