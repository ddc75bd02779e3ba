#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The arm64 (aarch64: GH200, GB200 nodes) build of the plugin on an amd64 Debian/Ubuntu
# machine, with Debian's cross gcc, and its checks. `make arm64` runs it.
#
#   tools/cross-arm64.sh [--check] [BUILD_DIR]      (default build-aarch64)
#
# Builds BUILD_DIR/libnccl-net-railnet.so, BUILD_DIR/softverbs/libibverbs.so.1 and
# BUILD_DIR/bin/railnet-loadcheck for aarch64 (cmake/aarch64-linux-gnu.cmake, the
# plugin-only CMake mode). The arm64 hwloc and libibverbs development files come from the
# distribution's arm64 packages, downloaded with a private apt state into BUILD_DIR/sysroot:
# no foreign architecture is added to the host and nothing is installed there.
#
# --check then proves the result, and prints "N passed, M failed":
#   - an AArch64 ELF shared object;
#   - NEEDED only glibc's libraries (test/integration/check_needed.sh);
#   - no GLIBC_x.y symbol version above the image's GLIBC_FLOOR (docker/glibc-floor.sh):
#     aarch64 glibc starts at 2.17, and dlopen & co. are pinned there (glibc_compat.h);
#   - only the ncclNetPlugin_v6..v12 symbols exported (test/integration/check_exports.sh);
#   - under qemu-user (qemu-aarch64, Debian's qemu-user), NCCL's way of loading
#     it: railnet-loadcheck dlopens the arm64 plugin, takes ncclNetPlugin_v12 (and v6), and
#     init finds its device through the arm64 softverbs library's libibverbs ABI.
# Exit status: 0 built (and checked), 1 a build step or check failed, 2 usage, 77 (with
# --check) this machine cannot build it: no cross gcc, or the arm64 packages cannot be fetched.
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
check=0
build=
for a in "$@"; do
	case $a in
	--check) check=1 ;;
	-h | --help)
		sed -n '4,24s/^# \{0,1\}//p' "$0"
		exit 0
		;;
	-*)
		echo "cross-arm64: unknown option '$a' (allowed: --check, --help)" >&2
		exit 2
		;;
	*)
		[ -z "$build" ] || {
			echo "cross-arm64: one build directory only ('$build', then '$a')" >&2
			exit 2
		}
		build=$a
		;;
	esac
done
build=${build:-$here/build-aarch64}
case $build in /*) ;; *) build=$PWD/$build ;; esac

cannot() {
	echo "SKIP: $*"
	[ $check = 1 ] && exit 77
	exit 1
}

for t in aarch64-linux-gnu-gcc cmake apt-get dpkg-deb; do
	command -v "$t" >/dev/null 2>&1 ||
		cannot "$t is not installed (Debian: gcc-aarch64-linux-gnu libc6-dev-arm64-cross cmake)"
done
[ -e /usr/aarch64-linux-gnu/lib/libc.so.6 ] ||
	cannot "the arm64 C library for the cross gcc is missing (apt-get install libc6-dev-arm64-cross)"

# ---- the sysroot: the arm64 packages, unpacked, never installed ---------------------------
sysroot=$build/sysroot
apt_dir=$build/apt
pkgs="libhwloc-dev libhwloc15 libibverbs-dev libibverbs1"
if [ ! -f "$sysroot/.complete" ]; then
	rm -rf "$sysroot" "$apt_dir"
	mkdir -p "$apt_dir/lists/partial" "$apt_dir/cache/archives/partial" "$apt_dir/debs" \
		"$sysroot" || exit 1
	aptopts=(-o APT::Architecture=arm64 -o APT::Architectures::=arm64
		-o "Dir::State::Lists=$apt_dir/lists" -o "Dir::Cache=$apt_dir/cache"
		-o Dir::State::status=/dev/null -o Debug::NoLocking=1 -o APT::Sandbox::User=root)
	echo "cross-arm64: fetching the arm64 package lists (private apt state in $apt_dir)"
	if ! apt-get "${aptopts[@]}" update -qq >"$apt_dir/update.log" 2>&1; then
		tail -n 5 "$apt_dir/update.log"
		cannot "apt-get update for arm64 failed (no route to the distribution's archive?)"
	fi
	# shellcheck disable=SC2086 # pkgs is a list
	if ! (cd "$apt_dir/debs" && apt-get "${aptopts[@]}" download $pkgs) \
		>"$apt_dir/download.log" 2>&1; then
		tail -n 5 "$apt_dir/download.log"
		cannot "apt-get download of the arm64 $pkgs failed"
	fi
	for d in "$apt_dir"/debs/*.deb; do
		dpkg-deb -x "$d" "$sysroot" || exit 1
	done
	touch "$sysroot/.complete"
fi

# ---- the build ----------------------------------------------------------------------------
echo "cross-arm64: building the plugin for aarch64 in $build"
if ! cmake -S "$here" -B "$build" -DCMAKE_TOOLCHAIN_FILE="$here/cmake/aarch64-linux-gnu.cmake" \
	-DRN_CROSS_SYSROOT="$sysroot" -DRAILNET_PLUGIN_ONLY=ON \
	-DRAILNET_WERROR="$([ "${WERROR:-0}" = 1 ] && echo ON || echo OFF)" >"$build/configure.log" 2>&1; then
	tail -n 20 "$build/configure.log"
	echo "cross-arm64: cmake configure failed ($build/configure.log)"
	exit 1
fi
if ! cmake --build "$build" -j "$(nproc 2>/dev/null || echo 2)" >"$build/build.log" 2>&1; then
	grep -E "error|warning" "$build/build.log" | head -n 20
	echo "cross-arm64: build failed ($build/build.log)"
	exit 1
fi
so=$build/libnccl-net-railnet.so
echo "cross-arm64: $so"
[ $check = 1 ] || exit 0

# ---- the checks ---------------------------------------------------------------------------
passes=0
fails=0
pass() { echo "ok: $*"; passes=$((passes + 1)); }
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

machine=$(readelf -h "$so" 2>/dev/null | sed -n 's/^ *Machine: *//p')
if [ "$machine" = AArch64 ]; then
	pass "$so is an AArch64 shared object"
else
	fail "$so: machine '$machine', expected AArch64"
fi
if bash "$here/test/integration/check_needed.sh" "$so"; then
	pass "NEEDED only glibc's libraries"
else
	fail "NEEDED lists more than glibc"
fi
floor=$(sed -n 's/^ARG GLIBC_FLOOR=//p' "$here/docker/Dockerfile")
if need=$(sh "$here/docker/glibc-floor.sh" "$so") && sh "$here/docker/glibc-floor.sh" "$so" "$floor" >/dev/null; then
	pass "glibc floor: needs glibc >= $need, within the image's GLIBC_FLOOR $floor"
else
	sh "$here/docker/glibc-floor.sh" "$so" "$floor"
	fail "glibc floor: above $floor"
fi
if bash "$here/test/integration/check_exports.sh" "$so" >"$build/exports.log" 2>&1; then
	pass "exports: $(tail -n 1 "$build/exports.log")"
else
	cat "$build/exports.log"
	fail "exports"
fi

qemu=$(command -v qemu-aarch64 || command -v qemu-aarch64-static || true)
if [ -z "$qemu" ]; then
	echo "SKIP: no qemu-aarch64 (apt-get install qemu-user): the arm64 load test did not run"
	echo "$passes passed, $fails failed"
	[ $fails = 0 ] || exit 1
	exit 77
fi
# One softverbs device with two ports whose GID 1 is RoCE v2 ::ffff:127.0.0.1 on lo: a port
# railnet keeps in any network namespace (the view test/support/rn_test_sv.c makes).
view=$(mktemp -d --tmpdir rn-arm64-view-XXXXXX) || exit 1
trap 'rm -rf "$view"' EXIT
mk=$(find "$here" -maxdepth 3 -path '*/bin/sv-mkview' -perm -u+x 2>/dev/null | head -n 1)
if [ -n "${RN_SV_MKVIEW:-}" ]; then mk=$RN_SV_MKVIEW; fi
if [ -z "$mk" ]; then
	fail "no native sv-mkview to make the softverbs view (build railnet first, or RN_SV_MKVIEW)"
else
	"$mk" "$view" 1 2 100 >/dev/null || fail "sv-mkview $view"
	for p in 1 2; do
		d=$view/class/infiniband/svdev0/ports/$p
		echo 0000:0000:0000:0000:0000:ffff:7f00:0001 >"$d/gids/1"
		mkdir -p "$d/gid_attrs/ndevs" && echo lo >"$d/gid_attrs/ndevs/1"
	done
	for v in 12 6; do
		if RAILNET_SYSFS_ROOT=$view SOFTVERBS_VIEW=$view \
			RAILNET_IBVERBS_LIB=$build/softverbs/libibverbs.so.1 LD_LIBRARY_PATH=$build \
			timeout 120 "$qemu" -L /usr/aarch64-linux-gnu "$build/bin/railnet-loadcheck" \
			-V "$v" --expect-api "$v" --min-devices 1 >"$build/loadcheck-v$v.log" 2>&1; then
			pass "qemu-aarch64: railnet-loadcheck -V $v: $(grep -m1 '^result' "$build/loadcheck-v$v.log")"
		else
			cat "$build/loadcheck-v$v.log"
			fail "qemu-aarch64: railnet-loadcheck -V $v"
		fi
	done
fi
echo "$passes passed, $fails failed"
[ $fails = 0 ]
