#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# `make run`: the main job. Until the bench harness lands it loads the built plugin the way
# NCCL does (railnet-loadcheck), first against this machine's own libibverbs, then, where the
# softverbs fabric is built, inside each pod of a small softverbs fabric.
set -euo pipefail
BUILD=${BUILD:-build}
cd "$(dirname "$0")/.."

loadcheck=$BUILD/bin/railnet-loadcheck
[ -x "$loadcheck" ] || { echo "run: $loadcheck is not built" >&2; exit 1; }

echo "== railnet on this machine's libibverbs =="
LD_LIBRARY_PATH=$BUILD${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} NCCL_DEBUG=${NCCL_DEBUG:-INFO} \
	"$loadcheck"

fabric=$BUILD/bin/softverbs-fabric
sv=$BUILD/softverbs/libibverbs.so.1
spec=test/fixtures/small.spec
if [ -x "$fabric" ] && [ -f "$sv" ] && [ -f "$spec" ]; then
	out=$BUILD/run-fabric
	rm -rf "$out"
	"$fabric" build "$spec" "$out"
	for env in "$out"/*/*/env; do
		pod=$(basename "$(dirname "$env")")
		echo
		echo "== railnet in softverbs pod $pod =="
		(
			set -a
			# shellcheck disable=SC1090
			. "$env"
			set +a
			LD_LIBRARY_PATH=$BUILD RAILNET_IBVERBS_LIB=$sv NCCL_DEBUG=${NCCL_DEBUG:-INFO} \
				"$loadcheck"
		)
	done
fi
