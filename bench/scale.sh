#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# railnet's cost with thousands of connections open in one process (issue 21; docs/performance.md,
# "Scale"). Makes a loopback pod view (sv-mkview: one device of two RoCE ports whose GID is
# 127.0.0.1 on lo, below a PCIe root, so the plugin keeps both ports and makeVDevice merges
# them, as NCCL >= 2.24 does) and runs bin/railnet-scale on it over softverbs.
# Usage: bench/scale.sh [BUILD] [-- railnet-scale options]   (exit: railnet-scale's; 77 when
#   RLIMIT_NOFILE allows no checkpoint)
#   PAIRS=128,256,512,1024,2048,4096  the checkpoints (pairs open)
#   REPS=1  runs; with more, a last table gives each checkpoint's median connect time per pair
#           (min-max) and its ratio to the first checkpoint's (the goal: flat within 1.5x)
#   Each pair holds 2 file descriptors (railnet's out-of-band socket per comm; softverbs links
#   QPs of one device context in memory); the soft RLIMIT_NOFILE is raised to the hard one, and
#   checkpoints above what it allows are left out with a note.
set -euo pipefail
BUILD=${1:-build}
[ $# -gt 0 ] && shift
[ "${1:-}" = "--" ] && shift
PAIRS=${PAIRS:-128,256,512,1024,2048,4096}
for f in bin/railnet-scale bin/sv-mkview softverbs/libibverbs.so.1 libnccl-net-railnet.so; do
	[ -e "$BUILD/$f" ] || { echo "bench/scale.sh: $BUILD/$f is not built" >&2; exit 1; }
done
BUILD=$(cd "$BUILD" && pwd)
view=$(mktemp -d /tmp/railnet-scale-XXXXXX)
trap 'rm -rf "$view"' EXIT
"$BUILD/bin/sv-mkview" "$view" 1 2 100 >/dev/null
for p in 1 2; do
	d=$view/class/infiniband/svdev0/ports/$p
	echo 0000:0000:0000:0000:0000:ffff:7f00:0001 >"$d/gids/1"
	mkdir -p "$d/gid_attrs/ndevs"
	echo lo >"$d/gid_attrs/ndevs/1"
done
pci=$view/devices/pci0000:00/0000:00:01.1/0000:0c:00.0
mkdir -p "$pci"
ln -s "$pci" "$view/class/infiniband/svdev0/device"

ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
limit=$(ulimit -n)
keep=
for n in ${PAIRS//,/ }; do
	if [ "$limit" != unlimited ] && [ $((n * 3 + 64)) -gt "$limit" ]; then
		echo "# bench/scale.sh: $n pairs left out: about $((n * 3 + 64)) file descriptors," \
			"RLIMIT_NOFILE is $limit here"
		continue
	fi
	keep=${keep:+$keep,}$n
done
# 77: cannot run here (the CI guard, test/integration/tests.cmake, is then a skip that says why)
[ -n "$keep" ] || { echo "bench/scale.sh: no checkpoint fits RLIMIT_NOFILE $limit" >&2; exit 77; }
echo "# $(date -u +%Y-%m-%dT%H:%MZ) $(uname -n), $(nproc) CPUs, RLIMIT_NOFILE $limit"
REPS=${REPS:-1}
case $REPS in '' | *[!0-9]* | 0) echo "bench/scale.sh: REPS=$REPS: want a count >= 1" >&2; exit 2 ;; esac
rc=0
for r in $(seq 1 "$REPS"); do
	[ "$REPS" -gt 1 ] && echo "# run $r of $REPS"
	RAILNET_IBVERBS_LIB=$BUILD/softverbs/libibverbs.so.1 SOFTVERBS_VIEW=$view \
		RAILNET_SYSFS_ROOT=$view NCCL_SOCKET_IFNAME=lo "$BUILD/bin/railnet-scale" \
		--plugin "$BUILD/libnccl-net-railnet.so" --pairs "$keep" \
		${REPS:+--json "$view/run$r.json"} "$@" || rc=$?
done
[ "$REPS" -gt 1 ] && python3 - "$view" "$REPS" <<'PY'
import json, statistics, sys
view, reps = sys.argv[1], int(sys.argv[2])
runs = [json.load(open(f"{view}/run{r}.json"))["rows"] for r in range(1, reps + 1)]
opened = [[row for row in run if row["at"] == "open"] for run in runs]
print(f"# connect time per pair over {reps} runs: median (min-max), ratio to the first checkpoint")
first = None
for k, row in enumerate(opened[0]):
    t = sorted(run[k]["connect_ms_per_pair"] for run in opened)
    med = statistics.median(t)
    first = first or med
    print(f"{row['pairs']:6d} pairs  {med:6.2f} ms ({t[0]:.2f}-{t[-1]:.2f})  x{med / first:.2f}")
PY
exit $rc
