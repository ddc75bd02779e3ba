#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# railnet-bench's command line, as a user meets it: -h, and every class of bad input answered
# with exit 2, a one-line "railnet-bench: ..." reason naming the flag, then the usage, for
# --nccl's and --net's flags. Needs no GPU and no MPI launcher (parsing happens before MPI_Init).
# Usage: cli.sh path/to/railnet-bench
set -u
# Sanitizer builds: MPI, the CUDA runtime and NCCL keep allocations past exit; leak checking of
# railnet-bench's own code is done by the unit tests (test_rb_*), so it is off for the binary.
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
bin=$1
fails=0

check() { # want_rc want_text args...
	local want_rc=$1 want=$2 rc first second
	shift 2
	"$bin" "$@" >/tmp/rb_cli.$$.out 2>/tmp/rb_cli.$$.err
	rc=$?
	first=$(head -n1 /tmp/rb_cli.$$.err)
	second=$(sed -n 2p /tmp/rb_cli.$$.err)
	if [ "$rc" != "$want_rc" ] || [[ "$first" != *"$want"* ]]; then
		echo "FAIL: railnet-bench $*: rc=$rc (want $want_rc), first line '$first' (want '$want')"
		fails=$((fails + 1))
	elif [ "$want_rc" = 2 ] && [[ "$first" == "railnet-bench: "*"usage"* || "$first" != "railnet-bench: "* ]]; then
		echo "FAIL: railnet-bench $*: first line is not one 'railnet-bench: reason' line"
		fails=$((fails + 1))
	else
		echo "ok: railnet-bench $* -> $rc: $first"
	fi
	if [ "$want_rc" = 2 ] && [ "${usage_expected:-1}" = 1 ] && [[ "$second" != usage:* ]]; then
		echo "FAIL: railnet-bench $*: no usage after the error (second line '$second')"
		fails=$((fails + 1))
	fi
}

if ! "$bin" -h >/tmp/rb_cli.$$.out 2>&1 ||
	! grep -q '^usage: railnet-bench --nccl|--net' /tmp/rb_cli.$$.out; then
	echo "FAIL: -h"
	fails=$((fails + 1))
fi

check 2 "choose a mode"
check 2 "-b '12Q' is not a size" --nccl -b 12Q
check 2 "-e '1.5.2' is not a size" --nccl -e 1.5.2
check 2 "-b 1048576 is larger than -e 1024" --nccl -b 1M -e 1K
check 2 "-n 'ten': not an integer" --nccl -n ten
check 2 "-n 0: out of range" --nccl -n 0
check 2 "-g 0: out of range" --nccl -g 0
check 2 "-a 7: out of range" --nccl -a 7
check 2 "--coll allgatherx: unknown collective" --nccl --coll allgatherx
check 2 "-o sum2: unknown reduction" --nccl -o sum2
check 2 "-d fp4: unknown datatype" --nccl -d fp4
check 2 "-q: unknown flag" --nccl -q 3
check 2 "--frobnicate: unknown flag" --nccl --frobnicate
check 2 "-e: needs a value" --nccl -e
check 2 "'extra': unexpected argument" --nccl extra
check 2 "-t 4: threads per process are not supported" --nccl -t 4
check 2 "-G 1: CUDA graph capture is not supported" --nccl -G 1
check 2 "all_gather does not reduce" --nccl --coll all_gather -o max
check 2 "all_reduce has no root" --nccl -r 2
check 2 "--slots: applies to --net only" --nccl --slots 4
check 2 "--slots 1: out of range, allowed 2..32" --net --slots 1
check 2 "--chunk 100: out of range, allowed 4K..1G" --net --chunk 100
check 2 "--chunk 5000: must be a multiple of 128 bytes" --net --chunk 5000
check 2 "--chunk 'x' is not a size" --net --chunk x
check 2 "--net-api 5: out of range, allowed 6..12" --net --net-api 5
check 2 "--net-dev 'x': not an integer; or auto, pair" --net --net-dev x
check 2 "--net-dev -3: out of range, allowed 0..4095; or auto, pair" --net --net-dev -3
check 2 "--net-dev pair places the pairs of --p2p" --net --net-dev pair
check 2 "--merge 2: out of range, allowed 0..1" --net --merge 2
check 2 "--p2p foo: unknown test; known: bw, bibw, lat" --net --p2p foo
check 2 "--p2p bw replaces the collective" --net --p2p bw --coll sendrecv
check 2 "--p2p prints its own table" --net --p2p lat --json /tmp/x.json
check 2 "--plugin: empty name" --net --plugin ''
check 2 "--netns: empty name" --net --netns ''
check 2 "--coll broadcast: --net runs all_reduce, reduce_scatter" --net --coll broadcast
check 2 "-g 2: --net runs one communicator rank per process" --net -g 2
check 2 "-R: GPU flags apply to --nccl only" --net -R 1
usage_expected=0 NCCL_TESTS_SPLIT=AND check 2 "communicator splitting is not supported" --nccl
if ! "$bin" --nccl -h >/dev/null 2>&1; then
	echo "FAIL: --nccl -h"; fails=$((fails + 1))
fi
rm -f /tmp/rb_cli.$$.out /tmp/rb_cli.$$.err
[ "$fails" = 0 ] && echo "all CLI checks passed" || echo "$fails CLI checks failed"
[ "$fails" = 0 ]
