#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Soak: DURATION seconds (default 1800) of jobs, one after the other, each a 2-rank
# railnet-bench --net run between pods 0 and 1 of test/fixtures/small.spec at NCCL's default
# transport timeouts, JOB_S seconds long (default 60). The jobs rotate over the collectives
# railnet-bench --net runs (all_reduce, all_gather, reduce_scatter, sendrecv), sizes 8 B to
# 8 MiB, every operation checked; and over the faults, each at a random time 3-6 s into the job:
#   none   - nothing happens;
#   down   - one port of one rank goes down for good (the ports rotate over both ranks);
#   flap   - one port goes down and comes back 200-1000 ms later;
#   kill   - a rank is killed (SIGKILL), as a peer restart: the job must end within KILL_S
#            seconds (no hang), and the next job starts on the same fabric.
# While a job runs, each rank's open fds and RSS are sampled every second; a job passes when it
# exits 0 with #wrong 0 (kill jobs: ends in time), the failover WARN appears in down/flap jobs,
# and from its 10th second on its fds never grow and its RSS grows by at most RSS_SLACK_KB
# (default 4096). After every job but a kill job the leftovers are counted (files and sockets in
# the fabric's directory, softverbs' /dev/shm entries, railnet-bench processes): no more than
# before the soak (a killed rank's rendezvous entries are removed when the next job opens its
# devices). A benchmark (root: network namespaces), not a test; docs/performance.md
# keeps the figures. Usage: bench/soak.sh [BUILD]   DURATION=1800 JOB_S=60 SEED=1
set -uo pipefail
B=$(cd "${1:-build}" && pwd)
S=$(cd "$(dirname "$0")/.." && pwd)
DURATION=${DURATION:-1800}
JOB_S=${JOB_S:-60}
KILL_S=${KILL_S:-10}
RSS_SLACK_KB=${RSS_SLACK_KB:-4096}
SEED=${SEED:-1}
RANDOM=$SEED
[ "$(id -u)" = 0 ] || { echo "bench/soak.sh: needs root (network namespaces)" >&2; exit 77; }
command -v mpirun >/dev/null || { echo "bench/soak.sh: no mpirun" >&2; exit 77; }
[ -x "$B/iproute/bin/ip" ] && ! command -v ip >/dev/null && PATH=$B/iproute/bin:$PATH
# shellcheck source=bench/railnet-bench/mpi-env.sh
. "$S/bench/railnet-bench/mpi-env.sh"
export RAILNET_IBVERBS_LIB=$B/softverbs/libibverbs.so.1
unset NCCL_NET_PLUGIN NCCL_IB_TIMEOUT NCCL_IB_RETRY_CNT RAILNET_KEEPALIVE_MS SOFTVERBS_PORT_DOWN
W=$(mktemp -d /tmp/rn-soak.XXXXXX)
trap '"$B/bin/softverbs-fabric" down "$W/fab" >/dev/null 2>&1; rm -rf "$W"' EXIT
"$B/bin/softverbs-fabric" build "$S/test/fixtures/small.spec" "$W/fab" >/dev/null || exit 1
"$B/bin/softverbs-fabric" up "$W/fab" >/dev/null || { echo "bench/soak.sh: fabric up failed" >&2; exit 1; }

colls=(all_reduce all_gather reduce_scatter sendrecv) # what --net runs
faults=(none down flap kill)
ports=(mlx5_0 mlx5_2 mlx5_1 mlx5_3)

run_job() { # COLL CYCLES LOG [ENV=VALUE...]
	local coll=$1 cycles=$2 log=$3
	shift 3
	env "$@" mpirun -np 2 "$S/bench/railnet-bench/in-pod.sh" "$W/fab" 1 \
		node0:pod0,node0:pod1 -- "$B/bin/railnet-bench" --net --plugin \
		"$B/libnccl-net-railnet.so" --coll "$coll" -b 8 -e 8M -f 8 -n 20 -w 2 -c 1 \
		-N "$cycles" -T 60 >"$log" 2>&1
}
# calibration: how long one cycle (8 B .. 8 MiB, 8 sizes, 20 iterations each) takes, from runs
# of 1 and 3 cycles (their difference leaves out the start)
calib() { # CYCLES: milliseconds of a run
	local t0
	t0=$(date +%s%N)
	run_job all_reduce "$1" "$W/cal.log" || { echo "bench/soak.sh: calibration failed" >&2; tail -20 "$W/cal.log" >&2; exit 1; }
	echo $((($(date +%s%N) - t0) / 1000000))
}
ms1=$(calib 1) || exit 1
ms3=$(calib 3) || exit 1
cyc_ms=$(((ms3 - ms1) / 2))
cycles=$((JOB_S * 1000 / (cyc_ms > 1 ? cyc_ms : 1) + 1))

leftovers() { # files and sockets under the fabric, softverbs' shared memory, stray processes
	local n
	n=$(find "$W/fab" /dev/shm/sv* 2>/dev/null | wc -l)
	echo $((n + $(pgrep -c -f "bin/railnet-bench" || true)))
}

sample() { # PIDFILE: append "t fds rss_kb" per rank process, every second, while they live
	local out=$1 t=0
	while :; do
		local pids
		pids=$(pgrep -f "bin/railnet-bench --net" | tr '\n' ' ')
		[ -n "$pids" ] || { [ $t -gt 5 ] && return; }
		for p in $pids; do
			local fds rss
			fds=$(find /proc/"$p"/fd -mindepth 1 -maxdepth 1 2>/dev/null | wc -l)
			rss=$(awk '/^VmRSS/ { print $2 }' /proc/"$p"/status 2>/dev/null)
			[ -n "$rss" ] && echo "$t $p $fds $rss" >>"$out"
		done
		sleep 1
		t=$((t + 1))
	done
}

echo "== soak: ${DURATION} s of ${JOB_S}-s jobs (2 ranks, small.spec pods, default timeouts), $cycles cycles of 8 B..8 MiB x 8 sizes each =="
printf '%-4s %-15s %-13s %7s %7s %8s %12s %14s %s\n' job coll fault seconds "#wrong" "timed ops" \
	"fds 10s/end" "RSS MiB 10s/end" verdict
start=$SECONDS
job=0 pass=0 ops_all=0 left0=$(leftovers)
while [ $((SECONDS - start)) -lt "$DURATION" ]; do
	job=$((job + 1))
	coll=${colls[$(((job - 1) % ${#colls[@]}))]}
	fault=${faults[$(((job - 1) % ${#faults[@]}))]}
	dev=${ports[$(((job - 1) / ${#faults[@]} % ${#ports[@]}))]}
	at=$((3000 + RANDOM % 3000))
	envs=()
	case $fault in
	down) envs=(SOFTVERBS_PORT_DOWN="$dev:1:$at") fault="down $dev" ;;
	flap) envs=(SOFTVERBS_PORT_DOWN="$dev:1:$at:$((at + 200 + RANDOM % 800))") fault="flap $dev" ;;
	esac
	log=$W/job$job.log samples=$W/job$job.samples
	: >"$samples"
	sample "$samples" &
	sampler=$!
	j0=$SECONDS
	if [ "$fault" = kill ]; then
		run_job "$coll" "$cycles" "$log" &
		jp=$!
		sleep $((at / 1000))
		victim=$(pgrep -f "bin/railnet-bench --net" | sort -n | tail -1)
		[ -n "$victim" ] && kill -9 "$victim"
		k0=$SECONDS
		while kill -0 "$jp" 2>/dev/null && [ $((SECONDS - k0)) -le "$KILL_S" ]; do sleep 0.2; done
		if [ -z "$victim" ]; then
			verdict="FAIL (no rank was running at +$((at / 1000)) s)"
			wait "$jp"
		elif kill -0 "$jp" 2>/dev/null; then
			verdict="FAIL (still running $KILL_S s after the kill)"
			pkill -9 -f "bin/railnet-bench --net"
			wait "$jp"
		else
			wait "$jp"
			verdict="ok (ended $((SECONDS - k0)) s after the kill)"
		fi
		rc=0
	else
		run_job "$coll" "$cycles" "$log" "${envs[@]}"
		rc=$?
		verdict=ok
	fi
	secs=$((SECONDS - j0))
	wait "$sampler" 2>/dev/null
	oob=$(awk -F: '/Out of bounds values/ { split($2, a, " "); print a[1] }' "$log")
	# timed operations: 20 per row and placement (out of place, in place)
	ops=$(awk '$1 ~ /^[0-9]+$/ && NF >= 12 { n++ } END { print n * 40 + 0 }' "$log")
	# per rank process: fds and RSS at its 10th second and at its last sample, and growth
	read -r f10 fend r10 rend grow <<<"$(awk -v slack="$RSS_SLACK_KB" '
		!($2 in t0) { t0[$2] = $1 }
		$1 - t0[$2] >= 10 {
			if (!($2 in f0)) { f0[$2] = $3; r0[$2] = $4; fmax[$2] = $3; rmax[$2] = $4 }
			if ($3 > fmax[$2]) fmax[$2] = $3
			if ($4 > rmax[$2]) rmax[$2] = $4
			f1[$2] = $3; r1[$2] = $4
		}
		END {
			bad = 0; first = ""
			for (p in f0) {
				if (fmax[p] > f0[p] || rmax[p] - r0[p] > slack) bad = 1
				if (first == "" || p + 0 < first + 0) first = p
			}
			if (first == "") { print "- - - - 0"; exit }
			printf "%d %d %d %d %d\n", f0[first], f1[first], r0[first] / 1024, r1[first] / 1024, bad
		}' "$samples")"
	if [ "${fault}" != kill ]; then
		if [ $rc -ne 0 ]; then verdict="FAIL (exit $rc)"
		elif [ "${oob:-x}" != 0 ]; then verdict="FAIL (wrong values)"
		elif [ "$fault" != none ] && ! grep -q "is down" "$log"; then verdict="FAIL (no failover)"
		elif [ "$grow" = 1 ]; then verdict="FAIL (fds or RSS grew)"
		fi
	fi
	# a killed rank's entries stay until the next job's first device open removes them
	left=$(leftovers)
	[ "$fault" != kill ] && [ "$left" -gt "$left0" ] &&
		verdict="FAIL ($left leftovers after the job, $left0 before the soak)"
	case $verdict in ok*) pass=$((pass + 1)) ;; *) tail -15 "$log" ;; esac
	ops_all=$((ops_all + ${ops:-0}))
	printf '%-4s %-15s %-13s %7s %7s %8s %12s %14s %s\n' "$job" "$coll" "$fault" "$secs" \
		"${oob:--}" "${ops:-0}" "$f10/$fend" "$r10/$rend" "$verdict"
done
echo "== $pass of $job jobs passed in $((SECONDS - start)) s; $ops_all timed operations, each size checked =="
[ "$pass" = "$job" ]
