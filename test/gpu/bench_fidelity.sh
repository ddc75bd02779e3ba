#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Harness fidelity (issue 7, item 7), for a machine with >= 2 GPUs, never run in CI: runs
# railnet-bench --nccl --coll all_reduce and nccl-tests' all_reduce_perf (built from its public
# repository outside this repo, against the same NCCL) with the same flags, alternating, and
# compares the best out-of-place numbers: busbw within 2% at every size >= 64 MiB and time
# within 10% at 8 B. Prints both tables, a comparison and a verdict.
#   ALL_REDUCE_PERF=/path/to/all_reduce_perf  (required)
#   BUILD=build  NGPUS=<all visible>  REPS=3  FLAGS="-b 8 -e 256M -f 2 -n 50 -w 10 -c 1"
#   NP=1: one process drives NGPUS GPUs (-g NGPUS); NP>1: mpirun -np NP, one GPU per rank
#   (needs an MPI build of nccl-tests: make MPI=1). MPIRUN overrides the launcher command.
# Exit: 0 agree, 1 disagree, 77 cannot run here (no GPU, no all_reduce_perf, no binary).
set -uo pipefail
BUILD=${BUILD:-build}
REPS=${REPS:-3}
FLAGS=${FLAGS:--b 8 -e 256M -f 2 -n 50 -w 10 -c 1}
NP=${NP:-1}
OUT=${OUT:-$(mktemp -d --tmpdir railnet-fidelity.XXXXXX)}
mkdir -p "$OUT"
bench=$BUILD/bin/railnet-bench
perf=${ALL_REDUCE_PERF:-}

skip() { echo "bench_fidelity: $*; skipped" >&2; exit 77; }
[ -x "$bench" ] || skip "$bench is not built"
if [ -z "$perf" ] || [ ! -x "$perf" ]; then skip "set ALL_REDUCE_PERF to nccl-tests' all_reduce_perf"; fi
command -v nvidia-smi >/dev/null || skip "no nvidia-smi"
ngpu_all=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
NGPUS=${NGPUS:-$ngpu_all}
[ "$NGPUS" -ge 2 ] || skip "needs 2 GPUs, this machine has $ngpu_all"

if [ "$NP" -gt 1 ]; then
	MPIRUN=${MPIRUN:-mpirun --allow-run-as-root --oversubscribe -np $NP}
	launch() { $MPIRUN "$@" -g 1; }
else
	launch() { "$@" -g "$NGPUS"; }
fi

# shellcheck disable=SC2086
for r in $(seq 1 "$REPS"); do
	launch "$perf" $FLAGS >"$OUT/perf.$r.txt" 2>&1 || { cat "$OUT/perf.$r.txt"; exit 1; }
	launch "$bench" --nccl --coll all_reduce $FLAGS >"$OUT/bench.$r.txt" 2>&1 ||
		{ cat "$OUT/bench.$r.txt"; exit 1; }
done
echo "== all_reduce_perf (run 1) =="; cat "$OUT/perf.1.txt"
echo "== railnet-bench --nccl (run 1) =="; cat "$OUT/bench.1.txt"

# Best (lowest) out-of-place time per size over the runs: "size time busbw wrong".
best() {
	cat "$@" | awk '!/^#/ && NF >= 13 && $1 ~ /^[0-9]+$/ {
		if (!($1 in t) || $6 < t[$1]) { t[$1] = $6; b[$1] = $8 }
		if ($9 != 0 || $13 != 0) bad[$1] = 1
	} END { for (s in t) print s, t[s], b[s], (s in bad) ? 1 : 0 }' | sort -n
}
best "$OUT"/perf.*.txt >"$OUT/perf.best"
best "$OUT"/bench.*.txt >"$OUT/bench.best"

echo "== comparison (out-of-place, best of $REPS) =="
join "$OUT/perf.best" "$OUT/bench.best" | awk -v big=$((64 << 20)) '
BEGIN {
	fail = 0; nbig = 0; nsmall = 0
	printf "%12s %10s %10s %8s %9s %9s %8s  %s\n", "size", "t_perf", "t_bench", "dt%",
	       "bw_perf", "bw_bench", "dbw%", "check"
}
{
	dt = ($2 > 0) ? 100 * ($5 - $2) / $2 : 0
	db = ($3 > 0) ? 100 * ($6 - $3) / $3 : 0
	c = ""
	if ($1 >= big) { nbig++; c = (db <= 2 && db >= -2) ? "busbw ok" : "BUSBW OFF"; if (c != "busbw ok") fail = 1 }
	if ($1 == 8) { nsmall++; c = (dt <= 10 && dt >= -10) ? "time ok" : "TIME OFF"; if (c != "time ok") fail = 1 }
	if ($4 || $7) { c = c " WRONG"; fail = 1 }
	printf "%12d %10.2f %10.2f %+8.1f %9.2f %9.2f %+8.1f  %s\n", $1, $2, $5, dt, $3, $6, db, c
}
END {
	if (!nbig || !nsmall) { print "verdict: INCOMPLETE (need sizes 8 B and >= 64 MiB in both runs)"; exit 1 }
	print (fail ? "verdict: DISAGREE" : "verdict: AGREE (busbw within 2% at >= 64 MiB, time within 10% at 8 B)")
	exit fail
}'
rc=$?
echo "outputs kept in $OUT"
exit $rc
