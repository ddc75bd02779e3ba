#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Plot busbw against size for one or several result files into a PNG (`make plot`).
#   plot.sh OUT.png [LABEL=]FILE [[LABEL=]FILE ...]
# FILE is a railnet-bench --csv file, or the saved stdout of railnet-bench or of an nccl-tests
# *_perf binary. The legend is LABEL, else the file name without its extension. Where a file
# holds several types or reductions, the first one in it is plotted.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
if [ $# -lt 2 ]; then
	echo "usage: $0 OUT.png [LABEL=]FILE [[LABEL=]FILE ...]" >&2
	exit 2
fi
command -v gnuplot >/dev/null || { echo "plot: gnuplot is not installed (Debian: gnuplot-nox)" >&2; exit 2; }
out=$1
shift
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
args=()
i=0
for spec in "$@"; do
	file=$spec
	label=$(basename "$file")
	label=${label%.*}
	if [[ "$spec" == *=* ]] && [ ! -e "$spec" ]; then
		label=${spec%%=*}
		file=${spec#*=}
	fi
	[ -r "$file" ] || { echo "plot: cannot read $file" >&2; exit 2; }
	i=$((i + 1))
	data=$tmp/$i.dat
	# CSV: size,count,type,redop,root,oop_time,oop_algbw,oop_busbw,..,ip_busbw (col 12)
	# table: size count type redop root time algbw busbw #wrong time algbw busbw #wrong
	awk '
		/^#/ { next }
		{ if (index($0, ",")) { n = split($0, f, ",") } else { n = split($0, f, " ") } }
		n >= 13 && f[1] ~ /^[0-9]+$/ {
			key = f[3] " " f[4]
			if (first == "") first = key
			if (key == first) print f[1], f[8], f[12]
		}' "$file" >"$data"
	if [ ! -s "$data" ]; then
		echo "plot: no result rows in $file (want railnet-bench --csv output or a saved table)" >&2
		exit 2
	fi
	args+=("$label" "$data")
done
gnuplot -c "$here/busbw.gp" "$out" "${args[@]}"
echo "plot: wrote $out"
