#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
#
# The oldest glibc an ELF object can be loaded with: the highest GLIBC_x.y symbol version it
# references (objdump -T). The drop-in promise is that libnccl-net-railnet.so loads in any
# training image whose glibc is at least the floor stated in docker/Dockerfile (ARG
# GLIBC_FLOOR); the image build and ctest both run this script to hold that promise.
#
#   glibc-floor.sh FILE            prints the highest GLIBC_x.y version FILE needs
#   glibc-floor.sh FILE FLOOR      also fails (exit 1) when that is above FLOOR (e.g. 2.34),
#                                  naming the symbols that raise it
#
# Exit: 0 ok, 1 above the floor or unreadable file, 2 usage, 77 objdump missing.
set -eu

usage() {
	sed -n '8,14s/^# \{0,1\}//p' "$0"
}

case ${1:-} in
-h | --help)
	usage
	exit 0
	;;
'')
	usage >&2
	exit 2
	;;
esac
[ $# -le 2 ] || {
	usage >&2
	exit 2
}
file=$1
floor=${2:-}
if [ -n "$floor" ]; then
	case $floor in
	[0-9]*.[0-9]*) ;;
	*)
		echo "glibc-floor: FLOOR '$floor' is not a version like 2.34" >&2
		exit 2
		;;
	esac
fi
command -v objdump >/dev/null 2>&1 || {
	echo "glibc-floor: objdump not found (install binutils)" >&2
	exit 77
}
[ -r "$file" ] || {
	echo "glibc-floor: $file does not exist or is unreadable" >&2
	exit 1
}

# "0000000000000000      DF *UND*  0000000000000000 (GLIBC_2.34) dlopen" -> "2.34 dlopen"
syms=$(objdump -T "$file" | sed -n 's/.*[( ]GLIBC_\([0-9][0-9.]*\)[) ].* \([^ ]*\)$/\1 \2/p')
[ -n "$syms" ] || {
	echo "glibc-floor: $file references no GLIBC_ symbol versions" >&2
	exit 1
}
max=$(echo "$syms" | cut -d' ' -f1 | sort -u -t. -k1,1n -k2,2n -k3,3n | tail -n1)

if [ -z "$floor" ]; then
	echo "$max"
	exit 0
fi
# Is max <= floor? sort -V style on x.y[.z] with sort's numeric keys.
top=$(printf '%s\n%s\n' "$max" "$floor" | sort -t. -k1,1n -k2,2n -k3,3n | tail -n1)
if [ "$top" = "$floor" ]; then
	echo "glibc-floor: $file needs glibc >= $max (floor $floor): ok"
	exit 0
fi
above=$(echo "$syms" | awk -v f="$floor" '
	function newer(a, b,   x, y, i) {
		split(a, x, "."); split(b, y, ".")
		for (i = 1; i <= 3; i++) {
			if ((x[i] + 0) > (y[i] + 0)) return 1
			if ((x[i] + 0) < (y[i] + 0)) return 0
		}
		return 0
	}
	newer($1, f) { printf "%s%s@GLIBC_%s", sep, $2, $1; sep = ", " }')
echo "glibc-floor: $file needs glibc $max, above the floor $floor, because of: $above" >&2
echo "glibc-floor: it would not load in a training image with glibc $floor; build on an older base (ARG CUDA_IMAGE) or raise GLIBC_FLOOR and say so in docs/kubernetes.md" >&2
exit 1
