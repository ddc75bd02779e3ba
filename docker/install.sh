#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
#
# railnet init-container entry point: copies the plugin and its tools from this image into a
# directory shared with the training container (an emptyDir), verifies every copy against the
# image's SHA256SUMS, and makes each file appear atomically (copy to a temporary name in the
# target, verify, rename). It never modifies the training image and never needs root.
#
#   install.sh [--check] [--source DIR] [TARGET] [-- DOCTOR-ARGS...]
#
#   TARGET         directory to copy into; it must exist and be writable (default /opt/railnet)
#   --source DIR   where the artifacts and SHA256SUMS are (default $RAILNET_SOURCE_DIR, else
#                  /usr/lib/railnet, where docker/Dockerfile puts them)
#   --check        after copying, run TARGET/railnet-doctor DOCTOR-ARGS (default --json) and
#                  fail when it finds the pod unfit
#   -h, --help     this text
#
# Exit status: 0 copied (and, with --check, the doctor found the pod fit); 1 the copy failed
# (missing, unwritable or full target, missing or corrupt source file); 2 usage error;
# 3 --check: railnet-doctor found problems (its exit 1); 4 --check: railnet-doctor could not
# run or exited otherwise.
#
# POSIX sh on purpose: it also runs from a busybox image. Needs cp, mv, rm, chmod, cmp, wc,
# cut, id and sha256sum (coreutils or busybox); without sha256sum it compares bytes with cmp.

set -u

prog=railnet-install
target=/opt/railnet
source_dir=${RAILNET_SOURCE_DIR:-/usr/lib/railnet}
check=0
tmp_files=

usage() {
	sed -n '4,24s/^# \{0,1\}//p' "$0"
}

die() {
	echo "$prog: error: $*" >&2
	exit 1
}

usage_error() {
	echo "$prog: $*" >&2
	echo "$prog: try '$0 --help'" >&2
	exit 2
}

# shellcheck disable=SC2317 # reached through the EXIT trap
cleanup() {
	# Temporary copies that were not renamed into place (a failed or interrupted run).
	for f in $tmp_files; do
		rm -f -- "$f" 2>/dev/null
	done
}
trap cleanup EXIT
trap 'exit 1' HUP INT TERM

# Size in bytes, as a bare number (busybox and BSD wc pad it).
size_of() {
	echo $(($(wc -c <"$1")))
}

# sha256 of a file, or nothing when there is no sha256sum.
sha_of() {
	if command -v sha256sum >/dev/null 2>&1; then
		sha256sum -- "$1" | cut -d' ' -f1
	fi
}

# ---- arguments --------------------------------------------------------------------------
target_set=0
while [ $# -gt 0 ]; do
	case $1 in
	-h | --help)
		usage
		exit 0
		;;
	--check)
		check=1
		;;
	--source)
		[ $# -ge 2 ] || usage_error "--source needs a directory"
		source_dir=$2
		shift
		;;
	--source=*)
		source_dir=${1#--source=}
		;;
	--)
		shift
		break
		;;
	-*)
		usage_error "unknown option '$1'"
		;;
	*)
		[ $target_set = 0 ] || usage_error "one target directory only (got '$target' and '$1')"
		target=$1
		target_set=1
		;;
	esac
	shift
done
if [ $# -gt 0 ] && [ $check = 0 ]; then
	usage_error "arguments after '--' are for railnet-doctor and need --check"
fi
[ -n "$target" ] || usage_error "the target directory is empty"
[ -n "$source_dir" ] || usage_error "the source directory is empty"

# ---- the source: SHA256SUMS names every artifact and its digest -------------------------
sums=$source_dir/SHA256SUMS
[ -d "$source_dir" ] || die "source directory $source_dir does not exist (set --source or RAILNET_SOURCE_DIR)"
[ -r "$sums" ] || die "$sums is missing or unreadable: the image is incomplete"

# ---- the target ---------------------------------------------------------------------------
if [ ! -e "$target" ]; then
	die "target directory $target does not exist; mount a volume there (an emptyDir shared with the training container)"
fi
[ -d "$target" ] || die "target $target is not a directory"
# Test by writing: as root, -w says yes even on a read-only mount.
probe=$target/.railnet-probe.$$
if ! (: >"$probe") 2>/dev/null; then
	die "target directory $target is not writable by uid $(id -u) (read-only mount, or mode/owner of the volume; an emptyDir is writable)"
fi
rm -f -- "$probe"

# ---- copy, verify, rename -----------------------------------------------------------------
names=
count=0
while read -r want name; do
	case $want in '' | '#'*) continue ;; esac
	name=${name#\*} # sha256sum's binary-mode marker
	case $name in
	'' | */* | .*) die "$sums: bad file name '$name' (plain names only)" ;;
	esac
	src=$source_dir/$name
	[ -f "$src" ] || die "$src is listed in $sums but missing from the image"
	got=$(sha_of "$src")
	if [ -n "$got" ] && [ "$got" != "$want" ]; then
		die "$src is corrupt: sha256 $got, SHA256SUMS says $want"
	fi

	tmp=$target/.$name.tmp.$$
	tmp_files="$tmp_files $tmp"
	if ! err=$(cp -- "$src" "$tmp" 2>&1); then
		rm -f -- "$tmp"
		case $err in
		*'space'* | *'quota'*) die "target $target is full: cannot copy $name ($(size_of "$src") bytes): $err" ;;
		*) die "cannot copy $name into $target: $err" ;;
		esac
	fi
	# cp can succeed short of space on some filesystems only at close; check what landed.
	if [ "$(size_of "$tmp")" != "$(size_of "$src")" ]; then
		die "target $target is full or failing: $name copied short ($(size_of "$tmp") of $(size_of "$src") bytes)"
	fi
	if [ -n "$got" ]; then
		[ "$(sha_of "$tmp")" = "$want" ] || die "copy of $name in $target does not match its sha256 (storage error?)"
	else
		cmp -s -- "$src" "$tmp" || die "copy of $name in $target differs from $src (storage error?)"
	fi
	chmod 0755 -- "$tmp" || die "cannot chmod $tmp"
	names="$names $name"
	count=$((count + 1))
done <"$sums"
[ $count -gt 0 ] || die "$sums lists no files"

# Every file is staged and verified; now rename them into place. A rename in one directory is
# atomic, so NCCL never dlopens a half-written .so, and a failure above left the old ones.
for name in $names; do
	mv -f -- "$target/.$name.tmp.$$" "$target/$name" || die "cannot rename $name into place in $target"
done
tmp_files=
for name in $names; do
	cmp -s -- "$source_dir/$name" "$target/$name" || die "$target/$name differs from the image after the rename"
	echo "$prog: $target/$name ($(size_of "$target/$name") bytes) ok"
done
# nccl-tests' names for railnet-bench (each implies --nccl and its collective), as links
case " $names " in
*" railnet-bench "*)
	for p in all_reduce_perf all_gather_perf reduce_scatter_perf sendrecv_perf alltoall_perf \
		broadcast_perf reduce_perf; do
		ln -sfn railnet-bench "$target/$p" || die "cannot link $target/$p to railnet-bench"
	done
	echo "$prog: $target/all_reduce_perf and 6 more nccl-tests names -> railnet-bench" ;;
esac

[ $check = 1 ] || exit 0

# ---- --check: the doctor's verdict --------------------------------------------------------
doctor=$target/railnet-doctor
[ -x "$doctor" ] || {
	echo "$prog: error: --check: $doctor is not there (the image has no railnet-doctor)" >&2
	exit 4
}
[ $# -gt 0 ] || set -- --json
"$doctor" "$@"
rc=$?
case $rc in
0) exit 0 ;;
1)
	echo "$prog: railnet-doctor found problems in this pod (exit 1): see its report above" >&2
	exit 3
	;;
*)
	echo "$prog: railnet-doctor could not judge this pod (exit $rc)" >&2
	exit 4
	;;
esac
