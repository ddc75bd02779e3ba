#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# `make run`: the main job. Until the data path and the --net benchmark land, it shows what
# railnet makes of a machine, the way NCCL would load it:
#   1. railnet-loadcheck against this machine's own libibverbs (a real NIC, or none);
#   2. where there is no RDMA NIC: a softverbs fabric of two pods, each with one dual-port
#      NIC on two rails (test/fixtures/small.spec), brought up as real network namespaces
#      (root) — then in each pod railnet-doctor (the rail map and verdict) and the loader
#      check; without root the doctor judges each pod view from outside (--ifaddrs).
set -euo pipefail
BUILD=${BUILD:-build}
cd "$(dirname "$0")/.."

for b in railnet-loadcheck railnet-doctor; do
	[ -x "$BUILD/bin/$b" ] || { echo "run: $BUILD/bin/$b is not built" >&2; exit 1; }
done
loadcheck=$(pwd)/$BUILD/bin/railnet-loadcheck
doctor=$(pwd)/$BUILD/bin/railnet-doctor
plugin_dir=$(pwd)/$BUILD

echo "== railnet on this machine's libibverbs =="
LD_LIBRARY_PATH=$plugin_dir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} "$loadcheck" || true

fabric=$(pwd)/$BUILD/bin/softverbs-fabric
sv=$(pwd)/$BUILD/softverbs/libibverbs.so.1
spec=test/fixtures/small.spec
if [ ! -x "$fabric" ] || [ ! -f "$sv" ]; then
	echo "run: softverbs is not built; nothing more to show" >&2
	exit 0
fi
if ls /sys/class/infiniband/* >/dev/null 2>&1; then
	echo "run: this machine has RDMA devices; the softverbs demonstration is skipped"
	exit 0
fi

out=$(pwd)/$BUILD/run-fabric
"$fabric" down "$out" >/dev/null 2>&1 || true
rm -rf "$out"
"$fabric" build "$spec" "$out" >/dev/null
netns=0
if [ "$(id -u)" = 0 ] && "$fabric" up "$out" >/dev/null 2>&1; then
	netns=1
	trap '"$fabric" down "$out" >/dev/null 2>&1 || true' EXIT
fi

rc=0
for envf in "$out"/*/*/env; do
	pod=$(basename "$(dirname "$envf")")
	node=$(basename "$(dirname "$(dirname "$envf")")")
	[ "$pod" = host ] && continue
	view=$(dirname "$envf")/view
	echo
	echo "== softverbs pod $pod on $node: railnet-doctor =="
	if [ $netns = 1 ]; then
		"$fabric" exec "$out" "$node" "$pod" -- env RAILNET_IBVERBS_LIB="$sv" "$doctor" || rc=1
		echo
		echo "== softverbs pod $pod on $node: loaded as NCCL loads it =="
		"$fabric" exec "$out" "$node" "$pod" -- env RAILNET_IBVERBS_LIB="$sv" \
			LD_LIBRARY_PATH="$plugin_dir" NCCL_DEBUG=WARN "$loadcheck" || rc=1
	else
		echo "(not root, or no network namespaces: judging the pod view from outside)"
		RAILNET_SYSFS_ROOT=$view SOFTVERBS_VIEW=$view RAILNET_IBVERBS_LIB=$sv \
			"$doctor" --ifaddrs "$view/softverbs/ifaddrs" || rc=1
	fi
done
exit $rc
