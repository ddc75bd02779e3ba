#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# `make run` itself (tools/run.sh) without an RDMA NIC, with small sizes: the loader check, the
# doctor in each softverbs pod, the all-reduce table with #wrong 0 on every row, the sizing
# line (ranks, modeled rate and latency for this machine's CPUs) and the footer that says what
# bounds the large and the small sizes; then bad RUN_* values are refused with exit 2 and a reason before anything
# runs. Needs root (network namespaces) and mpirun, else SKIP.
# Usage: make_run.sh BUILD_DIR SOURCE_DIR
set -u
B=$1 S=$2
[ "$(id -u)" = 0 ] || { echo "SKIP: make run's benchmark needs root (network namespaces)"; exit 77; }
command -v mpirun >/dev/null || { echo "SKIP: no mpirun"; exit 77; }
# Under ASan: LeakSanitizer would report Open MPI's allocations and those of the softverbs
# library the plugin dlcloses (from modules it cannot name); railnet's own leaks are checked by
# the unit, plugin and bench tests.
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
fail=0
out=$(mktemp)
trap 'rm -f "$out"' EXIT

# every knob but the sizes at its default: the sizing under test is the machine's
unset RUN_NP RUN_RATE RUN_LATENCY_US RUN_MINBYTES RUN_JSON RUN_MIN_TIME_MS SOFTVERBS_RATE \
	SOFTVERBS_LATENCY_US SOFTVERBS_NIC_DEFER_US
BUILD=$B RUN_MAXBYTES=64K RUN_ITERS=2 bash "$S/tools/run.sh" >"$out" 2>&1
rc=$?
ncpu=$(getconf _NPROCESSORS_ONLN)
if [ "$ncpu" -ge 8 ]; then np=4; else np=2; fi
rate=4
want=(
	"== railnet on this machine's libibverbs =="
	"== softverbs pod pod0 on n0: railnet-doctor =="
	"== softverbs pod pod1 on n1: railnet-doctor =="
	"== mpirun -np $np "
	"$ncpu CPUs: $np ranks, ports modeled at $rate Gb/s (SOFTVERBS_RATE; the spec says 10) and 200 us one way (SOFTVERBS_LATENCY_US; the spec says 2)"
	"# Out of bounds values : 0 OK"
	"# Bound  : peak busbw "
	"of the modeled line rate $(awk -v r=$rate 'BEGIN { printf "%.2f", 2 * r / 8 }') GB/s per rank"
)
[ "$rc" = 0 ] || { echo "FAIL: make run exited $rc"; fail=1; }
for l in "${want[@]}"; do
	grep -qF -- "$l" "$out" || { echo "FAIL: make run printed no '$l'"; fail=1; }
done
rows=$(awk '/^ +[0-9]/ && NF >= 13 && $3 == "float" { n++; if ($9 != 0 || $13 != 0) bad++ } END { print n + 0, bad + 0 }' "$out")
[ "$rows" = "14 0" ] || { echo "FAIL: table rows and rows with #wrong != 0: $rows (want 14 0)"; fail=1; }
# 64 KiB, the largest size here, is below the line rate: the large-size line names the modeled
# link or the CPU (either is accepted: a slow CI machine may be CPU-bound), and the 8 B line
# splits its time (the last send's completion, a round trip of 2 x 200 us) and names the bound
grep -qE '^#          (the modeled link bounds the largest size: [0-9]+ us, against [0-9]+ us for its bytes at the line rate plus the modeled round trip|the CPU \(.*\) bounds the large sizes, not the modeled line rate)$' "$out" ||
	{ echo "FAIL: the footer does not say what bounds the large sizes"; fail=1; }
grep -qE "^#          8 B: [0-9]+ us, 400 us of it the modeled latency \(its last send completes a round trip of 2 x 200 us after it leaves\); (the modeled latency|the CPU \(.*\)) bounds the small sizes\$" "$out" ||
	{ echo "FAIL: the footer does not say what bounds the small sizes"; fail=1; }
if [ "$fail" = 0 ]; then
	echo "ok: make run (RUN_MAXBYTES=64K): doctor in both pods, 14 rows #wrong 0, sizing and bound lines"
else
	tail -30 "$out"
fi

# bad knobs: exit 2, the reason, before the loader check
bad() { # VAR=VALUE reason
	BUILD=$B env "$1" bash "$S/tools/run.sh" >"$out" 2>&1
	rc=$?
	if [ "$rc" != 2 ] || ! grep -qF -- "$2" "$out" || grep -q "== railnet" "$out"; then
		echo "FAIL: $1: exit $rc, want 2 and '$2' first"; cat "$out"; fail=1
	else
		echo "ok: $1 refused: $2"
	fi
}
bad RUN_NP=x "run: RUN_NP=x: a positive number of ranks"
bad RUN_RATE=fast "run: RUN_RATE=fast: Gb/s per port (a positive integer) or spec"
bad RUN_LATENCY_US=slow "run: RUN_LATENCY_US=slow: microseconds, 0-100000, or spec"
bad RUN_LATENCY_US=100001 "run: RUN_LATENCY_US=100001: microseconds, 0-100000, or spec"
bad RUN_MIN_TIME_MS=-1 "run: RUN_MIN_TIME_MS=-1: milliseconds, 0-600000"
bad RUN_MIN_TIME_MS=600001 "run: RUN_MIN_TIME_MS=600001: milliseconds, 0-600000"
exit $fail
