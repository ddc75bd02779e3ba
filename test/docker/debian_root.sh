#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The Debian minbase root file systems of the docker tests (docker_glibc_chroot,
# docker_image_build), one per release, cached in RN_CHROOT_CACHE (default
# /var/tmp/railnet-chroots). Prints the path of RELEASE's root on stdout when CHECK_PATH
# (relative to the root, default usr/bin/apt-get) is executable there. Otherwise, opt-in with
# RN_DOCKER_CHROOT=1 (it needs root, and downloads about 100 MB in about 1.5 min from
# RN_DEBIAN_MIRROR), it runs debootstrap --variant=minbase into RELEASE.partial and renames
# that to RELEASE, so a root in the cache is always complete. Two tests may ask at once: the
# making holds a lock (flock on RELEASE.lock in the cache), and the second one uses the root
# the first one made. Exit 77 with "SKIP: reason" when it cannot (not opted in, no
# debootstrap, debootstrap failed: then the last lines of RELEASE.log); exit 1 when the cache
# cannot be written. Everything but the path goes to stderr.
#   usage: debian_root.sh RELEASE [CHECK_PATH]
set -uo pipefail

rel=${1:?usage: debian_root.sh RELEASE [CHECK_PATH]}
check=${2:-usr/bin/apt-get}
cache=${RN_CHROOT_CACHE:-/var/tmp/railnet-chroots}
mirror=${RN_DEBIAN_MIRROR:-http://deb.debian.org/debian}
root=$cache/$rel

if [ -x "$root/$check" ]; then
	echo "$root"
	exit 0
fi
if [ "${RN_DOCKER_CHROOT:-0}" != 1 ]; then
	echo "SKIP: opt-in: set RN_DOCKER_CHROOT=1 to debootstrap Debian $rel into $root" \
		"(about 100 MB and 1.5 min from $mirror)" >&2
	exit 77
fi
command -v debootstrap >/dev/null 2>&1 || {
	echo "SKIP: RN_DOCKER_CHROOT=1 but debootstrap is not installed (apt-get install debootstrap)" >&2
	exit 77
}
mkdir -p "$cache" || exit 1
exec 9>"$root.lock" || exit 1
if ! flock -n 9; then
	echo "waiting for another debootstrap of $rel into $root" >&2
	flock 9 || exit 1
fi
# whoever held the lock may have made it meanwhile
if [ ! -x "$root/$check" ]; then
	echo "debootstrap --variant=minbase $rel $root $mirror" >&2
	rm -rf "$root.partial"
	if ! debootstrap --variant=minbase "$rel" "$root.partial" "$mirror" \
		>"$cache/$rel.log" 2>&1; then
		echo "SKIP: debootstrap of $rel failed (no route to $mirror?); last lines of $cache/$rel.log:" >&2
		tail -n 5 "$cache/$rel.log" >&2
		rm -rf "$root.partial"
		exit 77
	fi
	mv "$root.partial" "$root" || exit 1
fi
echo "$root"
