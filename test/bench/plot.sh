#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# `make plot` machinery: bench/railnet-bench/plot.sh renders a PNG from a railnet-bench CSV and
# a saved table side by side, and refuses a file without result rows. Skipped without gnuplot.
# Usage: plot.sh path/to/railnet-bench (unused; the plot needs no binary)
set -u
command -v gnuplot >/dev/null 2>&1 || { echo "gnuplot is not installed" >&2; exit 77; }
src=${RN_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
{
	echo "# railnet-bench csv 1"
	echo "# mode=nccl"
	echo "size,count,type,redop,root,oop_time_us,oop_algbw,oop_busbw,oop_nwrong,ip_time_us,ip_algbw,ip_busbw,ip_nwrong,timestamp"
	s=8
	while [ $s -le 268435456 ]; do
		echo "$s,$((s / 4)),float,sum,-1,10,1,$((s / 1000000 + 1)),0,10,1,$((s / 1100000 + 1)),0,"
		s=$((s * 4))
	done
} >"$tmp/railnet.csv"
{
	echo "#       size         count      type   redop    root     time   algbw   busbw  #wrong     time   algbw   busbw  #wrong "
	echo "        1024           256     float     sum      -1    10.00    0.10    0.10       0    10.00    0.10    0.10       0"
	echo "     1048576        262144     float     sum      -1    20.00   52.43   52.43       0    20.00   52.43   52.43       0"
} >"$tmp/nccl-tests.txt"
"$src/bench/railnet-bench/plot.sh" "$tmp/out.png" "railnet=$tmp/railnet.csv" "$tmp/nccl-tests.txt" ||
	{ echo "FAIL: plot.sh failed"; exit 1; }
magic=$(head -c 8 "$tmp/out.png" | od -An -tx1 | tr -d ' \n')
[ "$magic" = 89504e470d0a1a0a ] || { echo "FAIL: $tmp/out.png is not a PNG ($magic)"; exit 1; }
echo "# nothing" >"$tmp/empty.csv"
if "$src/bench/railnet-bench/plot.sh" "$tmp/x.png" "$tmp/empty.csv" 2>/dev/null; then
	echo "FAIL: a file without rows was plotted"
	exit 1
fi
echo "ok: PNG rendered ($(stat -c %s "$tmp/out.png") bytes)"
