#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# docker/install.sh into a full target: a 64 KiB tmpfs mounted in a private mount namespace
# (unshare -m, root only), holding a 100 KiB plugin. The script must exit 1 saying the target
# is full, leave no temporary file behind, and leave the previous (smaller) copy in place.
# Exit 77 with the reason where a tmpfs cannot be mounted (not root, no unshare, no mount
# namespaces in this container).
#   usage: test_install_full.sh [path/to/docker/install.sh]
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
script=${1:-$here/../../docker/install.sh}
script=$(cd "$(dirname "$script")" && pwd)/$(basename "$script")

if [ "${RN_IN_NS:-0}" != 1 ]; then
	if [ "$(id -u)" != 0 ]; then
		echo "SKIP: mounting a small tmpfs needs root (uid $(id -u))"
		exit 77
	fi
	command -v unshare >/dev/null 2>&1 || { echo "SKIP: no unshare (util-linux)"; exit 77; }
	if ! err=$(unshare -m true 2>&1); then
		echo "SKIP: cannot create a mount namespace here: $err"
		exit 77
	fi
	RN_IN_NS=1 exec unshare -m --propagation private bash "${BASH_SOURCE[0]}" "$script"
fi

work=$(mktemp -d) || exit 1
trap 'umount "$work/full" 2>/dev/null; rm -rf "$work"' EXIT
mkdir -p "$work/full" "$work/small" "$work/big"
if ! err=$(mount -t tmpfs -o size=64k,mode=0755 railnet-full "$work/full" 2>&1); then
	echo "SKIP: cannot mount a tmpfs in the mount namespace: $err"
	exit 77
fi

mk() { # dir bytes
	head -c "$2" /dev/urandom >"$1/libnccl-net-railnet.so"
	printf '#!/bin/sh\nexit 0\n' >"$1/railnet-doctor"
	chmod 0755 "$1"/*
	(cd "$1" && sha256sum libnccl-net-railnet.so railnet-doctor >SHA256SUMS)
}
mk "$work/small" 8000
mk "$work/big" 100000

fails=0
"$script" --source "$work/small" "$work/full" >/dev/null 2>&1 || {
	echo "FAIL: the small copy into the 64 KiB tmpfs failed"
	exit 1
}
out=$("$script" --source "$work/big" "$work/full" 2>&1)
rc=$?
if [ $rc = 1 ] && grep -q "target $work/full is full" <<<"$out"; then
	echo "ok: full target: exit 1, '$(grep -o 'target .* is full[^:]*' <<<"$out" | head -1)'"
else
	echo "FAIL: full target: exit $rc, output: $out"
	fails=$((fails + 1))
fi
leftover=$(find "$work/full" -maxdepth 1 -name '.*' ! -name . | tr '\n' ' ')
if [ -n "$leftover" ]; then
	echo "FAIL: temporary files left in the full target: $leftover"
	fails=$((fails + 1))
else
	echo "ok: no temporary files left in the full target"
fi
if cmp -s "$work/small/libnccl-net-railnet.so" "$work/full/libnccl-net-railnet.so"; then
	echo "ok: the previous plugin is still in place and intact"
else
	echo "FAIL: the previous plugin was changed by the failed copy"
	fails=$((fails + 1))
fi
echo "$((3 - fails)) passed, $fails failed"
[ $fails = 0 ]
