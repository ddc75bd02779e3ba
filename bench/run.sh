#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# `make bench`: runs the benchmarks that need no extra hardware. BUILD is the build directory.
# softverbs-bench: softverbs' own speed (one-copy path, then the stream path).
set -eu
BUILD=${BUILD:-build}
if [ -x "$BUILD/bin/softverbs-bench" ]; then
	"$BUILD/bin/softverbs-bench" "$@"
	SOFTVERBS_VM=off "$BUILD/bin/softverbs-bench" -m 16777216 "$@"
else
	echo "bench/run.sh: $BUILD/bin/softverbs-bench not built" >&2
	exit 1
fi
