#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Installs the Debian/Ubuntu packages railnet's build, tests and `make run` need, and only
# those that are missing. Run by `make run`, `make test` and .ci/run. As non-root it only
# lists what is missing. RAILNET_NO_INSTALL=1 skips the check entirely.
set -euo pipefail

[ "${RAILNET_NO_INSTALL:-0}" = 1 ] && exit 0

pkgs=(
	build-essential cmake pkg-config clang clang-format binutils
	libibverbs-dev libcmocka-dev libhwloc-dev
	libopenmpi-dev openmpi-bin
	perftest iproute2 shellcheck yamllint gnuplot-nox
	python3-yaml python3-jsonschema debootstrap
	buildah gcc-aarch64-linux-gnu libc6-dev-arm64-cross qemu-user
)

if ! command -v dpkg-query >/dev/null 2>&1; then
	echo "install-deps: not a Debian/Ubuntu system; make sure these are installed: ${pkgs[*]}" >&2
	exit 0
fi

missing=()
for p in "${pkgs[@]}"; do
	st=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
	[ "$st" = "install ok installed" ] || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

if [ "$(id -u)" != 0 ]; then
	echo "install-deps: missing packages: ${missing[*]}" >&2
	echo "install-deps: run as root, or: sudo apt-get install ${missing[*]}" >&2
	exit 1
fi
echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
