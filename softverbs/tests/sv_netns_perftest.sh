#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Debian's ib_write_bw, unchanged, between two pods that are real network namespaces
# (softverbs-fabric up on test/fixtures/small.spec): the server in pod0 on mlx5_0, the client
# in pod1 on mlx5_2, both on rail ra at GID index 5, perftest's own TCP exchange to the
# server's pod address 10.10.1.1. This is softverbs' cross-namespace path (TCP between the
# NICs' progress threads). Exit 77 when not root, when namespaces cannot be made, or when
# perftest is missing. usage: sv_netns_perftest.sh BUILD SOURCE
set -u
build=$1
src=$2
fab=$build/bin/softverbs-fabric
if ! command -v ib_write_bw >/dev/null 2>&1; then
	echo "SKIP: ib_write_bw not found (apt install perftest)"
	exit 77
fi
if [ "$(id -u)" != 0 ]; then
	echo "SKIP: network namespaces need root"
	exit 77
fi
dir=$(mktemp -d --tmpdir sv-netns-XXXXXX)
srv=
cleanup() {
	[ -n "$srv" ] && kill "$srv" 2>/dev/null
	"$fab" down "$dir/fab" >/dev/null 2>&1
	rm -rf "$dir"
}
trap cleanup EXIT
"$fab" build "$src/test/fixtures/small.spec" "$dir/fab" >/dev/null || exit 1
if ! "$fab" up "$dir/fab" >"$dir/up.log" 2>&1; then
	echo "SKIP: softverbs-fabric up failed (no network namespaces here?):"
	cat "$dir/up.log"
	exit 77
fi
lib=$(cd "$build/softverbs" && pwd)
port=$((20000 + $$ % 20000))
set -- -F -u 17 -x 5 -p "$port" -s 1048576 -n 200
"$fab" exec "$dir/fab" node0 pod0 -- env LD_LIBRARY_PATH="$lib" \
	timeout 60 ib_write_bw -d mlx5_0 "$@" >"$dir/server.log" 2>&1 &
srv=$!
sleep 1
"$fab" exec "$dir/fab" node0 pod1 -- env LD_LIBRARY_PATH="$lib" \
	timeout 60 ib_write_bw -d mlx5_2 "$@" 10.10.1.1 >"$dir/client.log" 2>&1
rc=$?
wait "$srv"
src_rc=$?
srv=
line=$(grep -E '^ *1048576 +200 ' "$dir/client.log")
if [ $rc != 0 ] || [ $src_rc != 0 ] || [ -z "$line" ]; then
	echo "FAIL: client rc $rc, server rc $src_rc"
	echo "--- client"; cat "$dir/client.log"
	echo "--- server"; cat "$dir/server.log"
	exit 1
fi
echo "ib_write_bw pod1 -> pod0 across network namespaces: $line"
