#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Export-list check: the plugin's dynamic symbol table defines exactly the seven NCCL net
# tables, ncclNetPlugin_v6 … _v12, and nothing else (hidden visibility + src/railnet.map).
# usage: check_exports.sh path/to/libnccl-net-railnet.so   (exit 77: nm missing)
set -euo pipefail
so=${1:?usage: check_exports.sh LIB}

command -v nm >/dev/null 2>&1 || { echo "SKIP: nm not found (install binutils)"; exit 77; }
[ -f "$so" ] || { echo "FAIL: $so does not exist"; exit 1; }

want=$(printf 'ncclNetPlugin_v%s\n' 6 7 8 9 10 11 12 | LC_ALL=C sort)
# nm -D --defined-only: "ADDRESS TYPE NAME[@VERSION]"; keep the name.
got=$(nm -D --defined-only "$so" | awk 'NF >= 3 { sub(/@.*/, "", $3); print $3 }' |
	LC_ALL=C sort -u)

if [ "$got" != "$want" ]; then
	echo "FAIL: $so exports the wrong set of symbols"
	diff <(echo "$want") <(echo "$got") | sed -n 's/^</missing: /p; s/^>/extra:   /p'
	exit 1
fi
# They must be data objects (NCCL dlsyms a struct, not a function).
bad=$(nm -D --defined-only "$so" | awk '$2 !~ /^[DdRrBb]$/ { print $3 " (" $2 ")" }')
if [ -n "$bad" ]; then
	echo "FAIL: not data objects: $bad"
	exit 1
fi
echo "ok: $so exports exactly: $(echo "$got" | tr '\n' ' ')"
