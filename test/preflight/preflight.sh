#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# railnet-preflight under mpirun -np 4, one rank in each pod of test/fixtures/preflight4.spec
# (two nodes, two pods each, two rails; real network namespaces, bench/railnet-bench/in-pod.sh
# puts each rank in its pod). Each case checks the exit status, the verdict and that the
# problems named are exactly the planted ones, with no false alarm:
#   healthy   the fixture as it is: exit 0, FIT, every cell ok (also the --json document)
#   slow      pod3's port on rail rb links at 2.5 Gb/s: rank 3 rail 1 "slow link sending"
#   offrail   pod3's port on rail rb sits on another network (rail rc): rank 3 rail 1
#             "unreachable from every other rank", "GID not routable" (its subnet is not the rail's)
#   pathcut   the path between pod0 and pod2 on rail rb is cut (blackhole routes): that pair on
#             rail 1 "cannot reach each other", nothing else
#   mtudiff   pod3's port on rail rb (its interface) at MTU 1500, the others 9000: rank 3 rail
#             1 "MTU mismatch" (RoCE MTU 1024 against 4096); transfers still work
#   mtupath   the link of pod3's port on rail rb drops packets above 1500 bytes
#             (SOFTVERBS_LINK_MTU in rank 3): 8-byte messages cross, the pattern does not:
#             "large messages ... lost", an MTU mismatch on its path
#   portdown  pod2's port on rail rb is down (the spec's state=down): rank 2 has one rail,
#             rank 0 two: named, and no other problem
#   died      rank 2's worker (the process that drives the plugin) is killed when round 2's
#             burst starts (RN_PREFLIGHT_TEST_DIE=2): named with its round, its later
#             pairs marked died, the run finishes
#   hung      the same worker hangs instead (=2:hang): killed after the burst's bound, named
#   stalled   rank 3's worker starts receiving in round 2's first burst 200 ms late
#             (RN_PREFLIGHT_TEST_STALL=2:200), a third of the burst: that cell reads about a
#             third of the rate, below 0.75 of the round's median, so the pair bursts a
#             second time and keeps the better pass: exit 0, FIT, no problem named, and the
#             report counts the pair ("1 of 6 pair(s) burst a second time", or more)
#   lost      rank 3's worker counts rail 1 as failed after receiving in round 2's first burst
#             (RN_PREFLIGHT_TEST_LOSE=2:1, as a burst that did not end): its partner, rank 1,
#             learns it before its own receiving half and skips the rail ("the peer's end of
#             this rail failed in the bandwidth burst") instead of waiting out the 4 x
#             --burst-ms bound and naming a burst of its own that "did not end"
#   late      rank 3's worker starts receiving in round 2's first burst 1500 ms late, past the
#             half's bound (4 x --burst-ms = 1200 ms): its cells from rank 1 name a burst that
#             "did not end", and rank 1, which could not end its burst in the bound, counts
#             its rails as failed ("the burst could not be ended within 1200 ms") instead of
#             trusting them in a later pass (sends still in flight there would hold request
#             slots that pass reuses)
#   norank    rank 1 runs without RDMA (RAILNET_IBVERBS_LIB names no library): it "could not
#             take part", its pairs are reported, and the run still finishes
# Needs root (the namespaces) and mpirun, else exit 77 with the reason. PREFLIGHT_KEEP=1 keeps
# the reports and the ranks' stderr in the work folder it names.
#   usage: preflight.sh BUILD_DIR SOURCE_DIR [CASE...]
set -u
B=$1 S=$2
shift 2
cases=${*:-healthy slow offrail pathcut mtudiff mtupath portdown died hung stalled lost late norank}
PF_PREFIX=rn-preflight PF_KEEP=${PREFLIGHT_KEEP:-}
# shellcheck source=test/preflight/pf_env.sh
. "$S/test/preflight/pf_env.sh"
passes=0

# run CASE RANK-ENV EXPECTED-RC PROBLEMS PATTERN...: mpirun -np 4, RANK-ENV ("RANK VAR=v")
# set for that rank only; the exit status, the number of problem lines and each pattern in
# the report must match. The verdicts rest on measured speeds, which a busy 2-core machine
# can spoil (a pair at half the rail's median is "slow"): a case gets PF_TRIES (3) tries and
# fails when none matches; each failed try is shown.
run() {
	local try
	for try in $(seq 1 "${PF_TRIES:-3}"); do
		run_once "$@" && return 0
		echo "    (try $try of ${PF_TRIES:-3} failed)"
	done
	fails=$((fails + 1))
}
run_once() {
	local name=$1 renv=$2 want=$3 nprob=$4 log rc t0 got p ok=1
	shift 4
	log=$W/$name.log
	t0=$SECONDS
	# shellcheck disable=SC2016  # expanded by each rank's shell
	timeout 300 mpirun -np 4 "$SHIM" "$FX" 1 "$PODS" -- \
		sh -c 'r=${renv%% *}; [ -n "$renv" ] && [ "$OMPI_COMM_WORLD_RANK" = "$r" ] &&
			export "${renv#* }"; exec "$@"' sh \
		"$BIN" --plugin "$PLUGIN" --timeout 5 --burst-mb 64 --burst-ms 300 "${EXTRA[@]}" \
		>"$log" 2>"$log.err" <<<"" &
	wait $!
	rc=$?
	got=$(grep -c '^  problem ' "$log")
	[ "$rc" = "$want" ] || ok=0
	[ "$got" = "$nprob" ] || ok=0
	for p in "$@"; do
		grep -qF -- "$p" "$log" || { ok=0; echo "    missing: $p"; }
	done
	if [ $ok = 1 ]; then
		echo "ok: $name ($((SECONDS - t0)) s): exit $rc, $got problem(s)"
		grep -E '^  problem |^Verdict' "$log" | sed 's/^/    /'
		passes=$((passes + 1))
	else
		echo "FAIL: $name: exit $rc (want $want), $got problem line(s) (want $nprob)"
		sed 's/^/    /' "$log" | tail -40
		tail -20 "$log.err" | sed 's/^/    err: /'
		return 1
	fi
}
export renv=
# run_json CASE RANK-ENV PATTERN...: run with --json and RANK-ENV, a run that is not fit (exit 1;
# the JSON report has no "problem" lines to count)
run_json() {
	local name=$1
	renv=$2
	shift 2
	EXTRA=(--json)
	run "$name" "$renv" 1 0 '"fit":false' "$@"
	EXTRA=()
	renv=
}

EXTRA=()
for c in $cases; do
	case $c in
	healthy)
		fabric healthy ''
		run healthy "" 0 0 "Verdict: FIT" "4 ranks, 2 rail(s), 3 round(s)" \
			" of 6 pair(s) burst a second time"
		EXTRA=(--json)
		run healthy-json "" 0 0 '"fit":true'
		EXTRA=()
		python3 -c 'import json,sys; d=json.load(open(sys.argv[1]));
cells=d["cells"]; assert len(cells)==4*3*2 and all(c["status"]=="ok" and c["gbps"]>0 for c in cells), cells' \
			"$W/healthy-json.log" || { echo "FAIL: healthy --json is not 24 ok cells"; fails=$((fails + 1)); }
		;;
	slow)
		# node1's mlx5_3 is pod3's port on rail rb
		fabric slow '/^node node1/,$ s/rate="5 Gb\/sec (1X DDR)" netdev=rdma3/rate="2.5 Gb\/sec (1X SDR)" netdev=rdma3/'
		run slow "" 1 1 "rank 3 (" "rail 1 (mlx5_3): slow link sending"
		;;
	offrail)
		fabric offrail '/^node node1/,$ s/netdev=rdma3 rail=rb addr=10.21.0.4/netdev=rdma3 rail=rc addr=10.22.0.4/; s/parent=rdma3 addr=10.21.1.4/parent=rdma3 addr=10.22.1.4/'
		run offrail "" 1 1 "rail 1 (mlx5_3): unreachable from every other rank" \
			"GID not routable: its GID 10.22.1.4 is on 10.22.0.0/16 while the rail's other ranks are on 10.21.0.0/16"
		;;
	pathcut)
		# the path between pod0 and pod2 on rail rb is cut (a blackhole route each way, as a
		# switch that lost one route): only that pair, only that rail
		fabric pathcut ''
		ns0=$(grep -o '^netns [^ ]*-pod0$' "$FX/netns.state" | cut -d' ' -f2)
		ns2=$(grep -o '^netns [^ ]*-pod2$' "$FX/netns.state" | cut -d' ' -f2)
		if ! ip -n "$ns0" route add blackhole 10.21.1.3/32 ||
			! ip -n "$ns2" route add blackhole 10.21.1.1/32; then
			echo "FAIL: pathcut: cannot add the blackhole routes"
			exit 1
		fi
		run pathcut "" 1 1 "rail 1 (mlx5_1): rank 0 (" ") and rank 2 (" ") cannot reach each other"
		;;
	mtudiff)
		# pod3's port on rail rb (and so its interface) at MTU 1500: RoCE's MTU 1024 there
		fabric mtudiff '/^node node1/,$ s/netdev=rdma3 rail=rb/mtu=1500 netdev=rdma3 rail=rb/'
		run mtudiff "" 1 1 "rank 3 (" "rail 1 (mlx5_3): MTU mismatch: its port's MTU is 1024, the rail's other ports have 4096"
		;;
	mtupath)
		# the link of pod3's port on rail rb passes 1500-byte packets, RoCE's path MTU is 4096
		fabric mtupath ''
		renv="3 SOFTVERBS_LINK_MTU=mlx5_3:1:1500"
		run mtupath "$renv" 1 1 "rank 3 (" \
			"rail 1 (mlx5_3): large messages with every other rank are lost while 8-byte ones cross: an MTU mismatch on its path" \
			"RoCE's path MTU is 4096, so its packets are 4156 bytes"
		renv=
		;;
	portdown)
		# node1's mlx5_1 is pod2's port on rail rb
		fabric portdown '/^node node1/,$ s/netdev=rdma1 rail=rb/state=down netdev=rdma1 rail=rb/'
		run portdown "" 1 1 "rank 2 (" "has 1 rail(s), rank 0 (" "a port down"
		;;
	died | hung)
		# rank 2's worker is killed (or hangs) when round 2's burst starts: its supervisor
		# stays in the collectives, the run ends in its bound and names the rank and round
		fabric "$c" ''
		if [ "$c" = died ]; then
			renv="2 RN_PREFLIGHT_TEST_DIE=2"
			run died "$renv" 1 1 "rank 2 (" \
				"its preflight worker was killed by signal 9 during the bandwidth burst in round 2"
		else
			renv="2 RN_PREFLIGHT_TEST_DIE=2:hang"
			run hung "$renv" 1 1 "rank 2 (" \
				"its preflight worker hung in the bandwidth burst for 6 s and was killed in round 2"
		fi
		renv=
		grep -q ' died' "$W/$c.log" || { echo "FAIL: $c: no cell marked died"; fails=$((fails + 1)); }
		;;
	stalled)
		fabric stalled ''
		renv="3 RN_PREFLIGHT_TEST_STALL=2:200"
		run stalled "$renv" 0 0 "Verdict: FIT" " of 6 pair(s) burst a second time"
		renv=
		grep -qE '^  bandwidth: [1-6] of 6 pair' "$W/stalled.log" ||
			{ echo "FAIL: stalled: no second burst pass counted"; fails=$((fails + 1)); }
		;;
	lost)
		fabric lost ''
		run_json lost "3 RN_PREFLIGHT_TEST_LOSE=2:1" 'RN_PREFLIGHT_TEST_LOSE' \
			"the peer's end of this rail failed in the bandwidth burst"
		if grep -q 'did not end' "$W/lost.log"; then
			echo "FAIL: lost: a burst waited out its bound on a rail the partner had lost"
			fails=$((fails + 1))
		fi
		;;
	late)
		fabric late ''
		run_json late "3 RN_PREFLIGHT_TEST_STALL=2:1500" 'the burst did not end within 1200 ms' \
			"the burst could not be ended within 1200 ms: the receiver took 0"
		;;
	norank)
		fabric norank ''
		renv="1 RAILNET_IBVERBS_LIB=/nonexistent/libibverbs.so.1"
		run norank "$renv" 1 1 "rank 1 (" "could not take part"
		renv=
		;;
	*)
		echo "preflight.sh: unknown case '$c' (healthy slow offrail pathcut mtudiff mtupath portdown died hung stalled lost late norank)" >&2
		exit 2
		;;
	esac
done
echo "$passes passed, $fails failed"
[ $fails = 0 ]
