#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# CPU time per thread of the running processes named NAME, over SECONDS: what each thread
# (NCCL's proxy and service threads, softverbs' NIC threads sv:<device>, the application's)
# spent, in % of one CPU, from /proc/<pid>/task/<tid>/stat (utime + stime) read at the start and
# the end of the window. A thread that starts in the window counts all its time; one that ends
# in it is left out (its time cannot be read any more), so a process's total may be short. One
# line per thread, busiest first: PID, thread name, %CPU; then the total per process. Linux
# only; no root needed for one's own processes.
# Usage: bench/thread_cpu.sh NAME [SECONDS]   (default 3; NAME: the process name, which the
# kernel keeps to 15 characters)
# Exit: 0; 1 no process named NAME, or they all ended in the window; 2 usage.
set -uo pipefail
name=${1:-}
secs=${2:-3}
[ -n "$name" ] || { echo "usage: thread_cpu.sh NAME [SECONDS]" >&2; exit 2; }
[ ${#name} -le 15 ] || {
	echo "thread_cpu: NAME '$name' has ${#name} characters; a process name has at most 15 (the kernel cuts it there)" >&2
	exit 2
}
if ! [[ $secs =~ ^[0-9]+(\.[0-9]+)?$ ]] || ! awk -v s="$secs" 'BEGIN { exit !(s > 0) }'; then
	echo "thread_cpu: SECONDS=$secs: want a positive number" >&2
	exit 2
fi
tck=$(getconf CLK_TCK)
snap() { # pid<TAB>tid<TAB>ticks<TAB>name, for every thread of every process named $name
	local p t st comm
	for p in $(pgrep -x "$name"); do
		for t in /proc/"$p"/task/*; do
			st=$(cat "$t/stat" 2>/dev/null) || continue
			comm=$(cat "$t/comm" 2>/dev/null) || continue
			st=${st##*) }
			# shellcheck disable=SC2086  # split the fields after the name
			set -- $st
			printf '%s\t%s\t%s\t%s\n' "$p" "${t##*/}" $((${12} + ${13})) "$comm"
		done
	done
}
a=$(snap)
[ -n "$a" ] || { echo "thread_cpu: no process named $name" >&2; exit 1; }
t0=$(date +%s.%N)
sleep "$secs"
b=$(snap)
t1=$(date +%s.%N)
[ -n "$b" ] || { echo "thread_cpu: every process named $name ended during the window" >&2; exit 1; }
awk -F'\t' -v tck="$tck" -v secs="$(awk -v a="$t0" -v b="$t1" 'BEGIN { print b - a }')" -v name="$name" '
	NR == FNR { start[$1 "\t" $2] = $3; next }
	{
		k = $1 "\t" $2
		d = $3 - (k in start ? start[k] : 0) # started in the window: all of its time
		pct = 100 * d / tck / secs
		line[++n] = sprintf("%8d  %-18s %6.1f", $1, $4, pct)
		key[n] = pct
		per[$1] += pct
	}
	END {
		printf "# %s: CPU per thread over %.2f s, %% of one CPU\n", name, secs
		for (i = 1; i <= n; i++) { # busiest first
			m = i
			for (j = i + 1; j <= n; j++) if (key[j] > key[m]) m = j
			t = line[i]; line[i] = line[m]; line[m] = t
			t = key[i]; key[i] = key[m]; key[m] = t
			if (key[i] >= 0.05) print line[i]
		}
		for (p in per) printf "%8d  %-18s %6.1f\n", p, "(process total)", per[p]
	}' <(printf '%s\n' "$a") <(printf '%s\n' "$b")
