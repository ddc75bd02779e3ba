#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Copy what the GPU scripts need from a build into one folder to carry to a GPU machine
# (the device tool carries ignored paths by name): the plugin, softverbs, softverbs-fabric,
# railnet-bench, railnet-loadcheck and railnet-doctor. Usage: test/gpu/stage.sh [BUILD] [DEST]
set -euo pipefail
B=${1:-build}
D=${2:-out/gpu}
mkdir -p "$D/bin" "$D/softverbs"
cp -f "$B/libnccl-net-railnet.so" "$D/"
cp -f "$B/softverbs/libibverbs.so.1" "$D/softverbs/"
ln -sf libibverbs.so.1 "$D/softverbs/libibverbs.so"
for t in softverbs-fabric railnet-bench railnet-loadcheck railnet-doctor; do
	[ -x "$B/bin/$t" ] && cp -f "$B/bin/$t" "$D/bin/"
done
ls -la "$D" "$D/bin"
