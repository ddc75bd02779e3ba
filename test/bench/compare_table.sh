#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# bench/nccl_compare_table.py, the table and goal verdicts of bench/nccl_compare.sh, on runs
# made up here (the benchmark itself needs a GPU): medians with min-max and run counts, the
# ratios (railnet-host/SHM too), each of issue 14's goals met / not met with the sizes that
# miss / not measured, and a malformed or missing runs file refused with the line named.
# Usage: compare_table.sh [anything] (the script needs no binary)
set -u
src=${RN_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
tab=$src/bench/nccl_compare_table.py
command -v python3 >/dev/null 2>&1 || { echo "python3 is not installed" >&2; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; echo "--- output:"; cat "$tmp/out"; exit 1; }
want() { grep -qF -- "$1" "$tmp/out" || fail "no line with: $1"; }

# mode size rep time busbw; railnet at 8 B: 50, 52, 60 us (median 52, mean 54, 50-60)
row() { printf '%s\t%s\t%s\t%s\t%s\n' "$@"; }
{
	for r in 1 2 3; do
		row railnet 8 "$r" "$(echo "50 52 60" | cut -d" " -f"$r")" 0
		row ib 8 "$r" 70 0
		row socket 8 "$r" 25 0
		row railnet 65536 "$r" 100 0.50
		row ib 65536 "$r" 130 0.40
		row socket 65536 "$r" 90 0.60
		row railnet 1048576 "$r" 500 2.10
		row ib 1048576 "$r" 520 2.00
		row socket 1048576 "$r" 600 1.70
		row railnet 67108864 "$r" 14000 4.80
		row ib 67108864 "$r" 16000 4.20
		row socket 67108864 "$r" 20000 3.00
	done
} >"$tmp/runs.tsv"
python3 "$tab" "$tmp/runs.tsv" "railnet ib socket" >"$tmp/out" 2>&1 || fail "exit $? on good runs"
want "52.0 (50.0-60.0)"
want "n=3"
grep -E '^ +8 \|' "$tmp/out" | grep -qE '\| +- \| +0\.743 \| +- \| +2\.080$' ||
	fail "8 B row: want time ratios 0.743 (IB) and 2.080 (Socket)"
grep -E '^ +65536 \|' "$tmp/out" | grep -qE '\| +1\.250 \| +0\.769 \| +0\.833 \| +1\.111$' ||
	fail "64 KiB row: want 1.250 0.769 0.833 1.111"
want "# goal busbw railnet/IB >= 1.10 from 64 KiB to 1 GiB: not met (1 MiB 1.050; sizes judged: 64 KiB, 1 MiB, 64 MiB)"
want "# goal 8 B time railnet/IB <= 0.85: met (closest 8 B 0.743"
want "# goal busbw railnet/Socket >= 3 from 64 MiB: not met (64 MiB 1.600"
want "# goal 8 B time railnet/Socket <= 1: not met (8 B 2.080"
grep -q 'rh/IBh' "$tmp/out" && fail "host-staged ratio columns without both host modes"

# every goal met; a mode missing: not measured, with the reason
{
	row railnet 8 1 40 0
	row ib 8 1 60 0
	row railnet 1073741824 1 100000 12.0
	row ib 1073741824 1 130000 9.0
} >"$tmp/met.tsv"
python3 "$tab" "$tmp/met.tsv" "railnet ib" >"$tmp/out" 2>&1 || fail "exit $? on the second runs"
want "# goal busbw railnet/IB >= 1.10 from 64 KiB to 1 GiB: met (closest 1 GiB 1.333; sizes judged: 1 GiB)"
want "# goal 8 B time railnet/IB <= 0.85: met (closest 8 B 0.667"
want "# goal busbw railnet/Socket >= 3 from 64 MiB: not measured (no socket mode)"
# IB ran, but at no size of the goal's range
row railnet 1048576 1 1 1 >"$tmp/one.tsv"
row ib 8 1 1 0 >>"$tmp/one.tsv"
python3 "$tab" "$tmp/one.tsv" "railnet ib" >"$tmp/out" 2>&1 || fail "exit $? on the third runs"
want "# goal 8 B time railnet/IB <= 0.85: not measured (no size in range ran both modes)"

# the two-GPU goal: host-staged railnet against NCCL's SHM transport at 512 MiB only
{
	for r in 1 2 3; do
		row railnet-host 536870912 "$r" 200000 "$(echo "2.60 2.70 2.90" | cut -d" " -f"$r")"
		row shm 536870912 "$r" 100000 5.00
		row railnet-host 1048576 "$r" 900 0.50
		row shm 1048576 "$r" 100 5.00
	done
} >"$tmp/shm.tsv"
python3 "$tab" "$tmp/shm.tsv" "railnet-host shm" >"$tmp/out" 2>&1 || fail "exit $? on the SHM runs"
want "bw rh/SHM | t rh/SHM"
grep -E '^ +536870912 \|' "$tmp/out" | grep -qE '\| +0\.540 \| +2\.000$' ||
	fail "512 MiB row: want railnet-host/SHM 0.540 (busbw) and 2.000 (time)"
want "# goal busbw railnet-host/SHM >= 0.5 at 512 MiB: met (closest 512 MiB 0.540; sizes judged: 512 MiB)"
sed 's/\t2\.[0-9]0$/\t2.40/' "$tmp/shm.tsv" >"$tmp/shm2.tsv"
python3 "$tab" "$tmp/shm2.tsv" "railnet-host shm" >"$tmp/out" 2>&1 || fail "exit $? on the second SHM runs"
want "# goal busbw railnet-host/SHM >= 0.5 at 512 MiB: not met (512 MiB 0.480; sizes judged: 512 MiB)"
python3 "$tab" "$tmp/runs.tsv" "railnet ib socket" >"$tmp/out" 2>&1 || fail "exit $? without SHM"
want "# goal busbw railnet-host/SHM >= 0.5 at 512 MiB: not measured (no shm mode)"
grep -q 'rh/SHM' "$tmp/out" && fail "railnet-host/SHM columns without both modes"
grep -v railnet-host "$tmp/shm.tsv" >"$tmp/shm3.tsv"
python3 "$tab" "$tmp/shm3.tsv" "railnet shm" >"$tmp/out" 2>&1 || fail "exit $? on SHM alone"
want "# goal busbw railnet-host/SHM >= 0.5 at 512 MiB: not measured (no railnet-host mode)"

# bad input: the line named, exit 1, no table
for bad in "railnet	8	1	x	0" "railnet	8	1	5" "railnet	-8	1	5	0" "railnet	8	1	nan	0" "	8	1	5	0"; do
	{ row railnet 8 1 5 0; printf '%s\n' "$bad"; } >"$tmp/bad.tsv"
	python3 "$tab" "$tmp/bad.tsv" "railnet" >"$tmp/out" 2>&1 && fail "accepted line: $bad"
	[ $? = 1 ] || fail "exit status for line: $bad"
	want "bad.tsv:2: want MODE<TAB>SIZE<TAB>REP<TAB>TIME_US<TAB>BUSBW"
	grep -q 'medians' "$tmp/out" && fail "a table printed for a malformed file"
done
python3 "$tab" "$tmp/none.tsv" "railnet" >"$tmp/out" 2>&1 && fail "accepted a missing file"
want "cannot read $tmp/none.tsv"
python3 "$tab" "$tmp/runs.tsv" >"$tmp/out" 2>&1 && fail "accepted a missing MODES argument"
want "usage: nccl_compare_table.py"
echo "compare_table: ok"
