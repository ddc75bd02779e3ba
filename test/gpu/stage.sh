#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Copy what the GPU scripts need from a build into one folder to carry to a GPU machine
# (the device tool carries ignored paths by name): the plugin, softverbs, softverbs-fabric,
# railnet-bench, railnet-loadcheck, railnet-doctor, railnet-gdr-policy, railnet-scale,
# sv-mkview and sv-gpu-write-lat (bench/scale.sh needs no GPU; a GPU machine may allow more
# file descriptors).
# Usage: test/gpu/stage.sh [BUILD] [DEST]
set -euo pipefail
B=${1:-build}
D=${2:-out/gpu}
mkdir -p "$D/bin" "$D/softverbs"
cp -f "$B/libnccl-net-railnet.so" "$D/"
cp -f "$B/softverbs/libibverbs.so.1" "$D/softverbs/"
ln -sf libibverbs.so.1 "$D/softverbs/libibverbs.so"
for t in softverbs-fabric railnet-bench railnet-loadcheck railnet-doctor railnet-gdr-policy railnet-scale railnet-preflight sv-mkview sv-gpu-write-lat; do
	[ -x "$B/bin/$t" ] && cp -f "$B/bin/$t" "$D/bin/"
done
# iproute2 for machines without it (softverbs-fabric runs `ip`): the binary and its
# libraries, behind a wrapper that points only ip at them.
if [ -n "${WITH_IP:-}" ]; then
	mkdir -p "$D/iproute/bin" "$D/iproute/lib"
	cp -f "$(command -v ip)" "$D/iproute/ip.bin"
	ldd "$(command -v ip)" | awk '$3 ~ /^\// {print $3}' | grep -vE 'libc\.so|libm\.so|ld-linux' |
		xargs -r -I{} cp -fL {} "$D/iproute/lib/"
	# shellcheck disable=SC2016  # the wrapper expands them itself
	printf '#!/bin/sh\nd=$(dirname "$(readlink -f "$0")")/..\nLD_LIBRARY_PATH="$d/lib" exec "$d/ip.bin" "$@"\n' \
		>"$D/iproute/bin/ip"
	chmod +x "$D/iproute/bin/ip"
fi
ls -la "$D" "$D/bin"
