# SPDX-License-Identifier: Apache-2.0
# The common part of preflight.sh and heatmap.sh, sourced with B (build dir), S (source dir),
# PF_PREFIX (the work folder's name) and PF_KEEP (keep it when non-empty) set: the paths, the
# checks that exit 77 with the reason, the MPI environment, the work folder W and its cleanup,
# and `fabric NAME SED-SCRIPT` (the fixture edited by the sed script, built and brought up;
# FX is the fabric now up). A sourcing script counts its failures in `fails`.
# shellcheck shell=bash
BIN=$B/bin/railnet-preflight FAB=$B/bin/softverbs-fabric LIB=$B/softverbs/libibverbs.so.1
PLUGIN=$B/libnccl-net-railnet.so SHIM=$S/bench/railnet-bench/in-pod.sh
SPEC=$S/test/fixtures/preflight4.spec
# shellcheck disable=SC2034  # used by the scripts that source this one
PODS=node0:pod0,node0:pod1,node1:pod2,node1:pod3
command -v mpirun >/dev/null 2>&1 || { echo "SKIP: no mpirun on this machine"; exit 77; }
command -v python3 >/dev/null 2>&1 || { echo "SKIP: python3 not found"; exit 77; }
[ "$(id -u)" = 0 ] || { echo "SKIP: needs root: the pods are network namespaces"; exit 77; }
for f in "$BIN" "$FAB" "$LIB" "$PLUGIN" "$SHIM" "$SPEC"; do
	[ -e "$f" ] || { echo "FAIL: $f is not there (not built?)"; exit 1; }
done
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
# shellcheck source=bench/railnet-bench/mpi-env.sh
. "$S/bench/railnet-bench/mpi-env.sh"
export RAILNET_IBVERBS_LIB=$LIB
unset NCCL_NET_PLUGIN RAILNET_STATS RAILNET_MERGE SOFTVERBS_RATE
W=$(mktemp -d --tmpdir "$PF_PREFIX.XXXXXX")
FX=
fails=0
# shellcheck disable=SC2317  # called by the EXIT trap
pf_cleanup() {
	[ -z "$FX" ] || "$FAB" down "$FX" >/dev/null 2>&1
	if [ -n "$PF_KEEP" ]; then echo "kept: $W"; else rm -rf "$W"; fi
}
trap pf_cleanup EXIT

fabric() {
	[ -z "$FX" ] || "$FAB" down "$FX" >/dev/null 2>&1
	FX=$W/$1
	sed "$2" "$SPEC" >"$W/$1.spec"
	"$FAB" build "$W/$1.spec" "$FX" >/dev/null || { echo "FAIL: build $1.spec"; exit 1; }
	if ! "$FAB" up "$FX" >"$W/up-$1.log" 2>&1; then
		echo "SKIP: softverbs-fabric up failed (root and netns needed): $(tail -1 "$W/up-$1.log")"
		[ "$fails" = 0 ] || exit 1 # an earlier case failed: that is the result
		exit 77
	fi
}
