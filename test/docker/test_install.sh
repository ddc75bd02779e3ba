#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Tests of docker/install.sh (the init container's copy script) against temporary
# directories: the copy and its verification, atomic replacement, --help and usage errors,
# a missing / non-directory / unwritable target, a corrupt or incomplete source, and --check
# with a stand-in railnet-doctor for each of its exit codes. The "full target" case is
# test_install_full.sh (it needs a mount namespace).
#   usage: test_install.sh [path/to/docker/install.sh]
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
script=${1:-$here/../../docker/install.sh}
script=$(cd "$(dirname "$script")" && pwd)/$(basename "$script")
[ -x "$script" ] || { echo "FAIL: $script is not executable"; exit 1; }

work=$(mktemp -d) || exit 1
trap 'chmod -R u+w "$work" 2>/dev/null; rm -rf "$work"' EXIT
fails=0
passes=0

fail() {
	echo "FAIL: $*"
	fails=$((fails + 1))
}
pass() {
	echo "ok: $*"
	passes=$((passes + 1))
}
# expect NAME COMMAND...: passes when COMMAND succeeds.
expect() {
	local name=$1
	shift
	if "$@"; then pass "$name"; else fail "$name"; fi
}
empty_dir() {
	[ -z "$(ls -A "$1")" ]
}

# A fake image: three artifacts and their SHA256SUMS, as the Dockerfile writes them.
make_source() {
	local dir=$1
	mkdir -p "$dir"
	head -c 70000 /dev/urandom >"$dir/libnccl-net-railnet.so"
	# shellcheck disable=SC2016 # the stand-in doctor expands it, not this shell
	printf '#!/bin/sh\nexit "${FAKE_DOCTOR_RC:-0}"\n' >"$dir/railnet-doctor"
	head -c 5000 /dev/urandom >"$dir/railnet-bench"
	chmod 0755 "$dir"/*
	(cd "$dir" && sha256sum libnccl-net-railnet.so railnet-doctor railnet-bench >SHA256SUMS)
}

# run NAME EXPECTED-RC [GREP-PATTERN-IN-OUTPUT] -- ARGS...: runs the script, checks its exit
# status and (optionally) that its output matches a pattern.
run() {
	local name=$1 want=$2 pat=$3 rc
	shift 4
	out=$("$script" "$@" 2>&1)
	rc=$?
	if [ "$rc" != "$want" ]; then
		fail "$name: exit $rc, want $want; output:"
		printf '%s\n' "$out" | sed 's/^/    /'
		return 1
	fi
	if [ -n "$pat" ] && ! grep -Eq -- "$pat" <<<"$out"; then
		fail "$name: output does not match /$pat/:"
		printf '%s\n' "$out" | sed 's/^/    /'
		return 1
	fi
	pass "$name"
}

same_files() {
	local src=$1 dst=$2 f
	for f in libnccl-net-railnet.so railnet-doctor railnet-bench; do
		cmp -s "$src/$f" "$dst/$f" || return 1
		[ -x "$dst/$f" ] || return 1
	done
}

perf_links() {
	local p
	for p in all_reduce_perf all_gather_perf reduce_scatter_perf sendrecv_perf alltoall_perf \
		broadcast_perf reduce_perf; do
		[ "$(readlink "$1/$p")" = railnet-bench ] || return 1
	done
}

no_temps() {
	[ -z "$(find "$1" -maxdepth 1 -name '.*' ! -name . 2>/dev/null)" ]
}

src=$work/src
make_source "$src"
export RAILNET_SOURCE_DIR=$src

# --help and usage errors.
run "--help exits 0 and shows the usage" 0 'install.sh \[--check\]' -- --help
run "unknown option is a usage error" 2 "unknown option '--bogus'" -- --bogus
run "two targets is a usage error" 2 'one target directory only' -- "$work/a" "$work/b"
run "doctor arguments without --check" 2 'need --check' -- "$work/a" -- --json
run "--source without a value" 2 'needs a directory' -- --source

# The copy.
dst=$work/dst
mkdir "$dst"
if run "copy into an empty directory" 0 'libnccl-net-railnet.so \(70000 bytes\) ok' -- "$dst"; then
	expect "copies are identical and executable" same_files "$src" "$dst"
	expect "no temporary files left" no_temps "$dst"
	expect "nccl-tests names link to railnet-bench" perf_links "$dst"
fi
# Again over the old copy, from a new image: every file replaced.
src2=$work/src2
make_source "$src2"
if run "copy over an older version" 0 '' -- --source "$src2" "$dst"; then
	expect "old files replaced" same_files "$src2" "$dst"
fi
# --source=DIR form, default target through the environment is not used: explicit target.
dst2=$work/dst2
mkdir "$dst2"
run "--source=DIR form" 0 '' -- "--source=$src" "$dst2"

# Bad targets.
run "missing target" 1 "target directory $work/nope does not exist" -- "$work/nope"
: >"$work/afile"
run "target is a file" 1 'is not a directory' -- "$work/afile"
ro=$work/ro
mkdir "$ro"
chmod 0555 "$ro"
if [ "$(id -u)" = 0 ]; then
	# root writes through mode bits; run the script as nobody instead.
	if command -v setpriv >/dev/null 2>&1; then
		# A copy of the script where uid 65534 can run it (the checkout may be under a
		# directory it cannot enter).
		chmod 0755 "$work" "$src"
		chmod 0644 "$src/SHA256SUMS"
		cp "$script" "$work/install.sh"
		chmod 0755 "$work/install.sh"
		out=$(setpriv --reuid=65534 --regid=65534 --clear-groups \
			env RAILNET_SOURCE_DIR="$src" "$work/install.sh" "$ro" 2>&1)
		rc=$?
		if [ $rc = 1 ] && grep -q 'is not writable by uid 65534' <<<"$out"; then
			pass "unwritable target (as uid 65534)"
		else
			fail "unwritable target: exit $rc, output: $out"
		fi
	else
		echo "note: unwritable-target case not run: root and no setpriv (util-linux)"
	fi
else
	run "unwritable target" 1 'is not writable' -- "$ro"
fi
expect "nothing left in the unwritable target" empty_dir "$ro"

# Bad sources: the old copy must stay in place.
dst3=$work/dst3
mkdir "$dst3"
"$script" "$dst3" >/dev/null 2>&1 || fail "setup copy into $dst3"
bad=$work/bad
make_source "$bad"
head -c 100 /dev/urandom >>"$bad/railnet-bench" # corrupt after SHA256SUMS was written
run "corrupt source file" 1 'railnet-bench is corrupt: sha256' -- --source "$bad" "$dst3"
expect "a failed copy leaves the previous files" same_files "$src" "$dst3"
expect "a failed copy leaves no temporary files" no_temps "$dst3"
make_source "$bad"
rm "$bad/railnet-doctor"
run "source file listed but missing" 1 'railnet-doctor is listed in .* but missing' -- \
	--source "$bad" "$dst3"
run "source without SHA256SUMS" 1 'SHA256SUMS is missing' -- --source "$work" "$dst3"
run "missing source directory" 1 'source directory .* does not exist' -- \
	--source "$work/none" "$dst3"
make_source "$bad"
echo "0000  ../escape" >>"$bad/SHA256SUMS"
run "path in SHA256SUMS refused" 1 "bad file name '../escape'" -- --source "$bad" "$dst3"

# --check: the doctor's verdict becomes the exit status.
dst4=$work/dst4
mkdir "$dst4"
FAKE_DOCTOR_RC=0 run "--check, doctor says fit" 0 '' -- --check "$dst4"
FAKE_DOCTOR_RC=1 run "--check, doctor finds problems" 3 'found problems' -- --check "$dst4"
FAKE_DOCTOR_RC=2 run "--check, doctor usage error" 4 'could not judge this pod \(exit 2\)' -- \
	--check "$dst4" -- --no-such-flag
nodoc=$work/nodoc
mkdir -p "$nodoc"
cp "$src/libnccl-net-railnet.so" "$nodoc/"
(cd "$nodoc" && sha256sum libnccl-net-railnet.so >SHA256SUMS)
dst5=$work/dst5
mkdir "$dst5"
run "--check without a doctor in the image" 4 'railnet-doctor is not there' -- \
	--check --source "$nodoc" "$dst5"

echo "$passes passed, $fails failed"
[ $fails = 0 ]
