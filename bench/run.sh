#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# `make bench`: runs the benchmarks that need no extra hardware. BUILD is the build directory.
# 1. railnet init time (discovery + GID choice) on the seeds' 16-rail pod view (goal < 50 ms);
# 2. softverbs-bench: softverbs' own speed (one-copy path, then the stream path);
# 3. bench/datapath.sh: railnet's data path between two pods, split vs round-robin striping and
#    QPs per port, against softverbs' rate model (root only: the pods are network namespaces);
# 4. bench/scale.sh: railnet's cost per connection with 128 to 1,024 pairs open in one process
#    (PAIRS=…,4096 REPS=5 bench/scale.sh for the full table of docs/performance.md, "Scale");
# 5. bench/rails.sh: railnet over 2, 8 and 16 rails at once against the rate model (root only;
#    on fewer than 16 CPUs 2 and 8 rails at 1 Gb/s per port, so that the links bind).
set -eu
BUILD=${BUILD:-build}
for b in softverbs-bench railnet-doctor softverbs-fabric; do
	if [ ! -x "$BUILD/bin/$b" ]; then
		echo "bench/run.sh: $BUILD/bin/$b not built" >&2
		exit 1
	fi
done

echo "== railnet init (discovery + GID choice), seeds-b4 16-rail pod, 200 runs =="
fab=$(mktemp -d)
trap 'rm -rf "$fab"' EXIT
"$BUILD/bin/softverbs-fabric" build test/fixtures/seeds-b4.spec "$fab" >/dev/null
view=$(find "$fab" -path '*/view' -type d | grep -v /host/ | sort | head -1)
RAILNET_SYSFS_ROOT=$view SOFTVERBS_VIEW=$view \
	RAILNET_IBVERBS_LIB=$BUILD/softverbs/libibverbs.so.1 \
	"$BUILD/bin/railnet-doctor" --ifaddrs "$view/softverbs/ifaddrs" --time 200

echo
echo "== softverbs-bench: one QP, RDMA WRITE between two processes =="
"$BUILD/bin/softverbs-bench" "$@"
SOFTVERBS_VM=off "$BUILD/bin/softverbs-bench" -m 16777216 "$@"

echo
echo "== railnet data path between two pods: striping modes (docs/performance.md) =="
bash "$(dirname "$0")/datapath.sh" "$BUILD"

echo
echo "== railnet with thousands of connections in one process (docs/performance.md, Scale) =="
PAIRS=${SCALE_PAIRS:-128,256,512,1024} bash "$(dirname "$0")/scale.sh" "$BUILD"

echo
echo "== railnet over many rails at once against the rate model (docs/performance.md) =="
# its own knobs (RAILS_PORTS, RAILS_RATE, RAILS_REPS, RAILS_SIZES): RATE and the like belong to
# datapath.sh above
if [ "$(nproc)" -ge 16 ]; then
	ports="2 8 16" rate=4 reps=3 sizes="1M 64M 256M"
else # a small machine: fewer rails and a lower rate, so that the links, not the CPUs, bind
	ports="2 8" rate=1 reps=1 sizes="1M 64M"
fi
rc=0
PORTS=${RAILS_PORTS:-$ports} RATE=${RAILS_RATE:-$rate} REPS=${RAILS_REPS:-$reps} \
	SIZES=${RAILS_SIZES:-$sizes} bash "$(dirname "$0")/rails.sh" "$BUILD" || rc=$?
[ "$rc" = 0 ] || [ "$rc" = 77 ] || exit "$rc" # 77: not root, or no mpirun (it says which)
