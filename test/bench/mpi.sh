#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# railnet-bench under mpirun -np 2 (Open MPI, oversubscribed, root allowed): a usage error is
# printed once, not once per rank; a root outside the communicator is refused with exit 2;
# --nccl without GPUs exits 77 on every rank with one reason per host, and a build without
# --nccl says so once with exit 2. On a machine with a GPU the no-GPU case cannot be checked:
# the script then exits 77 after the other cases (a dropped case is a skip, never a pass).
# Usage: mpi.sh path/to/railnet-bench
set -u
# Sanitizer builds: MPI, the CUDA runtime and NCCL keep allocations past exit; leak checking of
# railnet-bench's own code is done by the unit tests (test_rb_*), so it is off for the binary.
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
bin=$1
command -v mpirun >/dev/null 2>&1 || { echo "no mpirun on this machine" >&2; exit 77; }
mpi=(mpirun -np 2 --oversubscribe --allow-run-as-root)
export OMPI_MCA_btl_vader_single_copy_mechanism=none OMPI_MCA_rmaps_base_oversubscribe=1
fails=0

run() { # want_rc want_text want_count args...
	local want_rc=$1 want=$2 count=$3 rc n
	shift 3
	out=$(timeout 60 "${mpi[@]}" "$bin" "$@" 2>&1)
	rc=$?
	n=$(grep -cF -- "$want" <<<"$out")
	if [ "$rc" != "$want_rc" ] || [ "$n" != "$count" ]; then
		echo "FAIL: mpirun -np 2 railnet-bench $*: rc=$rc (want $want_rc), '$want' seen $n times (want $count)"
		echo "$out" | head -20
		fails=$((fails + 1))
	else
		echo "ok: mpirun -np 2 railnet-bench $* -> $rc"
	fi
}

run 2 "railnet-bench: -b 'x' is not a size" 1 --nccl -b x
run 2 "-r 5: root must be a rank of the communicator, 0..1 (2 processes x -g 1)" 1 \
	--nccl --coll broadcast -r 5
dropped=
if "$bin" --nccl 2>&1 | grep -q 'not built'; then
	run 2 "--nccl mode was not built" 1 --nccl -b 8 -e 8
elif command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L 2>/dev/null | grep -q '^GPU'; then
	dropped="a GPU is present, so the no-GPU case (--nccl exits 77 on every rank) was not checked"
else
	run 77 "has none usable" 1 --nccl -b 8 -e 8
fi
[ "$fails" = 0 ] || exit 1
if [ -n "$dropped" ]; then
	echo "SKIP: $dropped"
	exit 77
fi
