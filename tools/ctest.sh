#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Runs ctest in BUILD (`make test` calls it) with two settings that only make the suite faster:
#  - TMPDIR: a fresh folder on a RAM file system (/dev/shm) where one is writable and lets
#    files there run; the scripts and tests make their scratch folders under $TMPDIR (else
#    /tmp). A softverbs fabric is thousands of small files: on the CI machine's ext4 one build
#    took 3.7 s, on tmpfs 0.14 s. The folder is removed afterwards. RN_TEST_TMPDIR=DIR uses DIR
#    (kept), RN_TEST_TMPDIR=- keeps the caller's TMPDIR.
#  - PATH: BUILD/test-path first, with python3 linked to the interpreter `python3` runs now,
#    since a version manager's shim (pyenv's) costs about 0.4 s a call and the scripts make
#    several hundred.
# Usage: tools/ctest.sh BUILD [CTEST_ARGS...]
set -uo pipefail
build=${1:?usage: tools/ctest.sh BUILD [CTEST_ARGS...]}
shift
cd "$build" || exit 2

mkdir -p test-path
rm -f test-path/python3
py=$(python3 -c 'import sys; print(sys.executable)' 2>/dev/null) && [ -x "$py" ] &&
	ln -s "$py" test-path/python3
export PATH="$PWD/test-path:$PATH"

own=
case ${RN_TEST_TMPDIR:-} in
-) ;;
'')
	if own=$(mktemp -d /dev/shm/railnet-test.XXXXXX 2>/dev/null); then
		# a file there must run (a noexec mount would fail the tests that build scripts)
		if printf '#!/bin/sh\nexit 0\n' >"$own/x" && chmod +x "$own/x" && "$own/x" 2>/dev/null; then
			rm -f "$own/x"
		else
			rm -rf "$own"
			own=
		fi
	fi
	# as /tmp is: tests run some steps as another user (uid 65534)
	[ -n "$own" ] && chmod 1777 "$own" && export TMPDIR=$own
	;;
*) export TMPDIR=$RN_TEST_TMPDIR ;;
esac

# removed however ctest ends (an interrupted run too)
[ -z "$own" ] || trap 'rm -rf "$own"' EXIT
ctest "$@"
