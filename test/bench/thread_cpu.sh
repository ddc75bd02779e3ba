#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# bench/thread_cpu.sh, CPU time per thread of the processes of one name: a busy process shows
# one busy thread and its process total, an idle one shows nothing busy, a process started in
# the window counts, a name no process has or whose processes all end in the window exits 1
# and bad arguments (a name over 15 characters among them) exit 2, each with its message.
# Usage: thread_cpu.sh [anything] (the script needs no binary)
set -u
src=${RN_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
tool=$src/bench/thread_cpu.sh
for c in pgrep getconf awk yes sleep; do
	command -v "$c" >/dev/null 2>&1 || { echo "$c is not installed" >&2; exit 77; }
done
tmp=$(mktemp -d)
pids=()
trap 'kill "${pids[@]}" 2>/dev/null; rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; echo "--- output:"; cat "$tmp/out"; exit 1; }

# names of our own, so that no other process on the machine matches
busy=rnbusy$$
idle=rnidle$$
busy=${busy:0:15}
idle=${idle:0:15}
cp "$(command -v yes)" "$tmp/$busy"
cp "$(command -v sleep)" "$tmp/$idle"
"$tmp/$busy" >/dev/null &
pids+=($!)
"$tmp/$idle" 60 &
pids+=($!)
sleep 0.3
bash "$tool" "$busy" 1 >"$tmp/out" 2>&1 || fail "exit $? on a busy process"
grep -qE "^# $busy: CPU per thread over [0-9]+\.[0-9][0-9] s" "$tmp/out" || fail "no header line"
# the one thread: yes writes as fast as it can (at least 5% of a CPU even on a loaded machine)
awk -v n="$busy" -v p="${pids[0]}" '$1 == p && $2 == n && $3 >= 5 { ok = 1 } END { exit !ok }' "$tmp/out" ||
	fail "no busy thread $busy of pid ${pids[0]}"
grep -qE "^ +${pids[0]} +\(process total\) +[0-9.]+$" "$tmp/out" || fail "no process total"
bash "$tool" "$idle" 0.5 >"$tmp/out" 2>&1 || fail "exit $? on an idle process"
awk -v n="$idle" '$2 == n { exit 1 }' "$tmp/out" || fail "an idle thread listed as busy"
grep -qE "^ +${pids[1]} +\(process total\) +0\.0$" "$tmp/out" || fail "idle process total not 0.0"

# a process that starts inside the window counts all of its time: an idle and a busy process
# of one name (copies of sleep and yes in two folders), the busy one started 0.4 s in
late=rnlate$$
late=${late:0:15}
mkdir "$tmp/a" "$tmp/b"
cp "$(command -v sleep)" "$tmp/a/$late"
cp "$(command -v yes)" "$tmp/b/$late"
"$tmp/a/$late" 30 &
pids+=($!)
{ sleep 0.4; exec "$tmp/b/$late" >/dev/null; } &
pids+=($!)
bash "$tool" "$late" 1.5 >"$tmp/out" 2>&1 || fail "exit $? with a process started in the window"
awk -v n="$late" -v p="${pids[-1]}" '$1 == p && $2 == n && $3 >= 2 { ok = 1 } END { exit !ok }' "$tmp/out" ||
	fail "the process started in the window is not counted"
# every process of the name ends inside the window: exit 1, said
gone=rngone$$
gone=${gone:0:15}
cp "$(command -v sleep)" "$tmp/$gone"
"$tmp/$gone" 0.4 &
sleep 0.1
bash "$tool" "$gone" 1 >"$tmp/out" 2>&1
[ $? = 1 ] || fail "want exit 1 when every process ends in the window"
grep -q "every process named $gone ended during the window" "$tmp/out" || fail "no message for processes that ended"

bash "$tool" "rnnone$$" 0.1 >"$tmp/out" 2>&1
[ $? = 1 ] || fail "want exit 1 for a name no process has"
grep -q "no process named rnnone$$" "$tmp/out" || fail "no message for a missing process"
for bad in 0 -1 x 1e3; do
	bash "$tool" "$busy" "$bad" >"$tmp/out" 2>&1
	[ $? = 2 ] || fail "want exit 2 for SECONDS=$bad"
	grep -q "SECONDS=$bad: want a positive number" "$tmp/out" || fail "no message for SECONDS=$bad"
done
bash "$tool" abcdefghijklmnop 1 >"$tmp/out" 2>&1
[ $? = 2 ] || fail "want exit 2 for a name of 16 characters"
grep -q "has 16 characters; a process name has at most 15" "$tmp/out" || fail "no message for a long name"
bash "$tool" >"$tmp/out" 2>&1
[ $? = 2 ] || fail "want exit 2 without a name"
grep -q "usage: thread_cpu.sh NAME" "$tmp/out" || fail "no usage line"
echo "thread_cpu: ok"
