#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# NEEDED-list check: the plugin is a drop-in, so at load time it may need only glibc
# (libc, libm, libdl, libpthread, the dynamic loader). libibverbs, libmlx5 and libcuda are
# dlopened at init; hwloc is linked statically. A sanitizer build (RN_SANITIZER set) may
# also need its runtime (libasan, libubsan, libtsan) and what that runtime drags in.
# usage: check_needed.sh path/to/libnccl-net-railnet.so   (exit 77: readelf missing)
set -euo pipefail
so=${1:?usage: check_needed.sh LIB}

command -v readelf >/dev/null 2>&1 || {
	echo "SKIP: readelf not found (install binutils)"
	exit 77
}
[ -f "$so" ] || { echo "FAIL: $so does not exist"; exit 1; }

allowed='^(libc\.so\.6|libm\.so\.6|libdl\.so\.2|libpthread\.so\.0|ld-linux-x86-64\.so\.2|ld-linux-aarch64\.so\.1)$'
if [ -n "${RN_SANITIZER:-}" ]; then
	allowed="${allowed%)\$}|lib(asan|ubsan|tsan|lsan)\\.so\\.[0-9]+|libgcc_s\\.so\\.1|libstdc\\+\\+\\.so\\.6|librt\\.so\\.1)\$"
fi

needed=$(readelf -d "$so" | sed -n 's/.*(NEEDED).*\[\(.*\)\].*/\1/p')
bad=$(echo "$needed" | grep -Ev "$allowed" || true)
if [ -n "$bad" ]; then
	echo "FAIL: $so needs libraries that are not glibc: $(echo "$bad" | tr '\n' ' ')"
	echo "      (open them with dlopen at init instead; NEEDED: $(echo "$needed" | tr '\n' ' '))"
	exit 1
fi
echo "ok: NEEDED = $(echo "$needed" | tr '\n' ' ')"
