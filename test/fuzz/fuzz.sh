#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# Real libFuzzer sessions over a clang build's fuzz targets (tests.cmake builds them as
# BUILD/test/<target>_libfuzzer); ctest only replays the corpus and runs a short fixed-seed
# smoke run. Target fuzz_<dir> keeps its corpus in test/fuzz/corpus/<dir>/ and the inputs that
# once failed it in test/fuzz/regress/<dir>/ (ctest replays both).
#
#   test/fuzz/fuzz.sh grow BUILD [TARGET...]
#       `make fuzz`: each target fuzzes FUZZ_TIME seconds (default 600) from its corpus and
#       regression inputs, then the inputs it found are merged into test/fuzz/corpus/<dir>/
#       with -merge=1 (only those that add coverage, so the corpus stays minimal); a failing
#       input is saved in test/fuzz/regress/<dir>/.
#   test/fuzz/fuzz.sh ci BUILD [TARGET...]
#       .ci/run: each target fuzzes RN_FUZZ_CI_TIME seconds (default 8) on a scratch copy of
#       its corpus, under one seed, RN_FUZZ_SEED or else the clock, printed first; the
#       committed corpus is not touched. A failing input stays in BUILD/fuzz-ci/<dir>/ and is
#       named, with the commands to replay it, keep it and rerun the session.
#
# TARGET: fuzz_wire, fuzz_env...; default every BUILD/test/*_libfuzzer. Prints one line per
# target (corpus files and bytes, libFuzzer's cov and ft); the full logs are under
# BUILD/fuzz-grow/ or BUILD/fuzz-ci/. Exits 1 when a target failed, 2 on bad usage.
set -u -o pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
FUZZ_DIR=$ROOT/test/fuzz
# as in the ctest entries (tests.cmake): the same inputs are valid in both
MAX_LEN=4096
# an input that runs this long is a hang (fuzz_handshake's and fuzz_peer's take under 2 s)
UNIT_TIMEOUT=60

usage() {
	sed -n '4,22s/^# \{0,1\}//p' "$0" >&2
	exit 2
}

# files and bytes of the regular files in a directory: "N files, B bytes"
dir_size() {
	find "$1" -maxdepth 1 -type f -printf '%s\n' |
		awk '{ n++; b += $1 } END { printf "%d files, %d bytes\n", n, b }'
}

# libFuzzer's "cov: N ft: M" from the last status line of a log
cov_of() {
	grep -Eo 'cov: [0-9]+ ft: [0-9]+' "$1" | tail -n 1
}

# coverage of a corpus directory: run each input once, no mutation; the log in WORK/NAME.log
corpus_cov() {
	local bin=$1 dir=$2 work=$3 name=$4

	(cd "$work" && "$bin" -runs=0 -max_len=$MAX_LEN "$dir") >"$work/$name.log" 2>&1
	cov_of "$work/$name.log"
}

# the inputs libFuzzer wrote for a failure (crash, leak, timeout, out of memory)
artifacts_in() {
	local f

	for f in "$1"/crash-* "$1"/leak-* "$1"/timeout-* "$1"/oom-*; do
		[[ -f $f ]] && echo "$f"
	done
}

# the gist of a failure's log: the report's first line, the frames in railnet's sources, the
# summary
failure_gist() {
	grep -E "^==[0-9]+== ?ERROR|^ +#[0-9]+ .* $ROOT/|^SUMMARY" "$1" | head -n 16
}

# grow TARGET BIN DIR: FUZZ_TIME seconds of fuzzing, then merge into the committed corpus
grow_one() {
	local target=$1 bin=$2 dir=$3
	local corpus=$FUZZ_DIR/corpus/$dir regress=$FUZZ_DIR/regress/$dir
	local work=$OUT/$dir before after merged runs rc a dirs

	rm -rf "$work"
	mkdir -p "$work/new" "$work/artifacts"
	before="$(dir_size "$corpus"), $(corpus_cov "$bin" "$corpus" "$work" before)"
	dirs=("$work/new" "$corpus")
	[[ -d $regress ]] && dirs+=("$regress")
	# new inputs go to the first directory; the committed ones are only read
	(cd "$work" && "$bin" -max_total_time="$FUZZ_TIME" -max_len=$MAX_LEN \
		-timeout=$UNIT_TIMEOUT -artifact_prefix="$work/artifacts/" -print_final_stats=1 \
		"${dirs[@]}") >"$work/fuzz.log" 2>&1
	rc=$?
	(cd "$work" && "$bin" -merge=1 -max_len=$MAX_LEN -timeout=$UNIT_TIMEOUT "$corpus" \
		"$work/new") >"$work/merge.log" 2>&1 ||
		echo "$target: merge failed, see $work/merge.log" >&2
	merged=$(grep -Eo '[0-9]+ new files' "$work/merge.log" | tail -n 1)
	after="$(dir_size "$corpus"), $(corpus_cov "$bin" "$corpus" "$work" after)"
	runs=$(grep -Eo 'Done [0-9]+ runs in [0-9]+ second' "$work/fuzz.log" | tail -n 1 |
		sed 's/ second$/ s/')
	printf '%-22s before: %s\n%-22s after:  %s (%s; %s)\n' "$target" "$before" "" "$after" \
		"${merged:-0 new files}" "${runs:-stopped by the failure below}"
	if ((rc == 0)); then
		return 0
	fi
	echo "$target: FAILED (libFuzzer exit $rc); log: $work/fuzz.log"
	failure_gist "$work/fuzz.log"
	mkdir -p "$regress"
	for a in $(artifacts_in "$work/artifacts"); do
		cp "$a" "$regress/"
		echo "  failing input kept as ${regress#"$ROOT"/}/$(basename "$a"); replay it:" \
			"${bin#"$ROOT"/} ${regress#"$ROOT"/}/$(basename "$a")"
	done
	return 1
}

# ci TARGET BIN DIR: RN_FUZZ_CI_TIME seconds under SEED on a scratch copy of the corpus
ci_one() {
	local target=$1 bin=$2 dir=$3
	local work=$OUT/$dir rc a src t0 secs seeds found=0

	rm -rf "$work"
	mkdir -p "$work/corpus"
	for src in "$FUZZ_DIR/corpus/$dir" "$FUZZ_DIR/regress/$dir"; do
		[[ -d $src ]] && cp -p "$src"/* "$work/corpus/" 2>/dev/null
	done
	seeds=$(dir_size "$work/corpus")
	t0=$(date +%s)
	(cd "$work" && "$bin" -seed="$SEED" -max_total_time="$CI_TIME" -max_len=$MAX_LEN \
		-timeout=$UNIT_TIMEOUT -artifact_prefix="$work/" -print_final_stats=1 \
		"$work/corpus") >"$work/fuzz.log" 2>&1
	rc=$?
	secs=$(($(date +%s) - t0))
	if ((rc == 0)); then
		printf '%-22s ok: %s in %ss, %s, corpus %s -> %s\n' "$target" \
			"$(grep -Eo 'Done [0-9]+ runs' "$work/fuzz.log" | tail -n 1 |
				sed 's/^Done //')" "$secs" "$(cov_of "$work/fuzz.log")" \
			"${seeds%%,*}" "$(dir_size "$work/corpus")"
		return 0
	fi
	printf '%-22s FAILED (libFuzzer exit %s after %ss, seed %s); log: %s\n' "$target" "$rc" \
		"$secs" "$SEED" "${work#"$ROOT"/}/fuzz.log"
	failure_gist "$work/fuzz.log"
	for a in $(artifacts_in "$work"); do
		found=1
		a=${a#"$ROOT"/}
		echo "  reproducer: $a"
		echo "  replay it:  $BUILD_REL/test/${target}_libfuzzer $a"
		echo "  keep it:    mkdir -p test/fuzz/regress/$dir &&" \
			"cp $a test/fuzz/regress/$dir/"
	done
	((found)) || echo "  no input was saved (libFuzzer itself failed?); see the log"
	echo "  rerun this session: RN_FUZZ_SEED=$SEED RN_FUZZ_CI_TIME=$CI_TIME" \
		"test/fuzz/fuzz.sh ci $BUILD_REL $target"
	return 1
}

(($# >= 2)) || usage
MODE=$1
BUILD=$(cd "$2" 2>/dev/null && pwd) || {
	echo "fuzz.sh: $2: no such build directory" >&2
	exit 2
}
BUILD_REL=${BUILD#"$ROOT"/}
shift 2

case $MODE in
grow)
	FUZZ_TIME=${FUZZ_TIME:-600}
	OUT=$BUILD/fuzz-grow
	;;
ci)
	CI_TIME=${RN_FUZZ_CI_TIME:-8}
	SEED=${RN_FUZZ_SEED:-$(($(date +%s) % 4294967295 + 1))}
	if ! [[ $SEED =~ ^[0-9]+$ ]] || ((SEED < 1 || SEED > 4294967295)); then
		echo "fuzz.sh: RN_FUZZ_SEED=$SEED: want a number 1..4294967295" >&2
		exit 2
	fi
	OUT=$BUILD/fuzz-ci
	echo "fuzz: seed $SEED (RN_FUZZ_SEED=$SEED runs this session again)," \
		"${CI_TIME}s per target"
	;;
*)
	usage
	;;
esac

# the same environment as the ctest entries (cmake/RnTest.cmake: RN_TEST_ENV)
export RN_BUILD_DIR=$BUILD RN_SOURCE_DIR=$ROOT
export RN_PLUGIN_SO=$BUILD/libnccl-net-railnet.so

targets=("$@")
if ((${#targets[@]} == 0)); then
	for bin in "$BUILD"/test/*_libfuzzer; do
		[[ -x $bin ]] && targets+=("$(basename "$bin" _libfuzzer)")
	done
fi
if ((${#targets[@]} == 0)); then
	echo "fuzz.sh: no *_libfuzzer binary in $BUILD/test (a clang build: make CC=clang)" >&2
	exit 2
fi

mkdir -p "$OUT"
failed=()
for target in "${targets[@]}"; do
	bin=$BUILD/test/${target}_libfuzzer
	dir=${target#fuzz_}
	if [[ ! -x $bin || ! -d $FUZZ_DIR/corpus/$dir ]]; then
		echo "fuzz.sh: $target: no $bin or no test/fuzz/corpus/$dir" >&2
		exit 2
	fi
	"${MODE}_one" "$target" "$bin" "$dir" || failed+=("$target")
done
if ((${#failed[@]})); then
	echo "fuzz: FAILED: ${failed[*]}${SEED:+ (seed $SEED)}"
	exit 1
fi
echo "fuzz: ${#targets[@]} targets, no failure"
