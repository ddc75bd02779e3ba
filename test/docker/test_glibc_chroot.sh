#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The drop-in's load test against glibc builds other than the build host's: for each Debian
# release in RN_CHROOT_RELEASES (default: bullseye = glibc 2.31, trixie = glibc 2.41), a
# minbase root filesystem made by debootstrap, the plugin copied in, and the release's own
# perl (perl-base, in every Debian) dlopens it with RTLD_NOW (PERL_DL_NONLAZY=1) and looks
# up ncclNetPlugin_v6..v12. No Docker engine is needed: a container image is a root file
# system, and chroot runs the plugin against that file system's glibc exactly as a container
# would (same dynamic loader, same libc, the host kernel in both cases).
#
# Expectation per release, from docker/glibc-floor.sh: the plugin loads where the release's
# glibc is at or above the highest GLIBC_x.y the .so needs, and fails with the loader's
# "version `GLIBC_x.y' not found" below it. So the test checks both that the floor computed
# from symbol versions is what a real older loader enforces, and that a glibc newer than the
# build host's loads the plugin. Debian's archive is the only one reachable from our build
# machines, so bullseye is exactly the supported floor (glibc 2.31); docker_glibc_floor checks the
# floor itself on every run.
#
# Opt-in, because it needs root (chroot) and the first run downloads about 100 MB per
# release from the Debian mirror (about 1.5 min each): RN_DOCKER_CHROOT=1. Root file systems
# are made by debian_root.sh and cached in RN_CHROOT_CACHE (default /var/tmp/railnet-chroots);
# when every one is cached the test runs without the opt-in (no network needed). Exit 77 with
# the reason otherwise.
#   usage: test_glibc_chroot.sh path/to/libnccl-net-railnet.so
set -uo pipefail

so=${1:?usage: test_glibc_chroot.sh LIB}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
floor_sh=$here/../../docker/glibc-floor.sh
releases=${RN_CHROOT_RELEASES:-bullseye trixie}

[ -f "$so" ] || { echo "FAIL: $so does not exist"; exit 1; }
if readelf -d "$so" 2>/dev/null | grep -qE 'NEEDED.*lib(a|ub|t)san'; then
	echo "SKIP: $so is a sanitizer build (it needs the sanitizer runtime, which no container has)"
	exit 77
fi
if [ "$(id -u)" != 0 ]; then
	echo "SKIP: chroot needs root (uid $(id -u))"
	exit 77
fi
declare -A roots
for rel in $releases; do
	roots[$rel]=$(bash "$here/debian_root.sh" "$rel" usr/bin/perl) || exit $?
done

need=$(sh "$floor_sh" "$so") || { echo "FAIL: glibc-floor.sh could not read $so"; exit 1; }
host=$(ldd --version 2>/dev/null | sed -n '1s/.* \([0-9][0-9.]*\)$/\1/p')
echo "the plugin needs glibc >= $need (built with glibc $host)"

ver_ge() { # a >= b for x.y[.z]
	[ "$(printf '%s\n%s\n' "$1" "$2" | sort -t. -k1,1n -k2,2n -k3,3n | tail -n1)" = "$1" ]
}

fails=0
passes=0
newer_loaded=0
for rel in $releases; do
	root=${roots[$rel]}
	gv=$(chroot "$root" ldd --version 2>/dev/null | sed -n '1s/.* \([0-9][0-9.]*\)$/\1/p')
	[ -n "$gv" ] || { echo "FAIL: $rel: cannot read its glibc version"; fails=$((fails + 1)); continue; }
	dir=$(mktemp -d "$root/tmp/railnet.XXXXXX") || exit 1
	cp "$so" "$dir/libnccl-net-railnet.so"
	# shellcheck disable=SC2016 # perl code: $h, $v are perl's
	out=$(chroot "$root" env -i PATH=/usr/bin:/bin PERL_DL_NONLAZY=1 perl -e '
		require DynaLoader;
		my $h = DynaLoader::dl_load_file($ARGV[0], 0)
			or do { print "dlopen failed: ", DynaLoader::dl_error(), "\n"; exit 3 };
		for my $v (6 .. 12) {
			DynaLoader::dl_find_symbol($h, "ncclNetPlugin_v$v")
				or do { print "no ncclNetPlugin_v$v\n"; exit 4 };
		}
		print "dlopen(RTLD_NOW) ok, ncclNetPlugin_v6..v12 found\n";
	' "${dir#"$root"}/libnccl-net-railnet.so" 2>&1 | tr -d '\000')
	rc=$?
	rm -rf "$dir"
	if ver_ge "$gv" "$need"; then
		if [ $rc = 0 ]; then
			echo "ok: Debian $rel (glibc $gv >= $need): $out"
			passes=$((passes + 1))
			[ "$gv" != "$host" ] && newer_loaded=1
		else
			echo "FAIL: Debian $rel (glibc $gv >= $need) should load the plugin: $out"
			fails=$((fails + 1))
		fi
	else
		if [ $rc = 3 ] && grep -q "version \`GLIBC_$need' not found" <<<"$out"; then
			echo "ok: Debian $rel (glibc $gv < $need) refuses it as predicted: $out"
			passes=$((passes + 1))
		else
			echo "FAIL: Debian $rel (glibc $gv < $need) should fail with GLIBC_$need not found: rc $rc: $out"
			fails=$((fails + 1))
		fi
	fi
done
if [ $newer_loaded = 0 ] && [ $fails = 0 ]; then
	echo "FAIL: no release with a glibc other than the build host's ($host) loaded the plugin"
	fails=$((fails + 1))
fi
echo "$passes passed, $fails failed"
[ $fails = 0 ]
