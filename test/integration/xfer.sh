#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Data-path scenarios between two pods of test/fixtures/small.spec (pod0: mlx5_0 + mlx5_1,
# pod1: mlx5_2 + mlx5_3, real network namespaces, softverbs as the NIC): for each scenario a
# receiver (xfer_peer recv, in pod1) and a sender (xfer_peer send, in pod0) run side by side;
# both must exit 0, and some scenarios check the RAILNET_STATS JSON afterwards.
# Needs root for `softverbs-fabric up`; exits 77 with the reason where that is impossible.
# Usage: xfer.sh BUILD_DIR SOURCE_DIR basic|faults|cycles
set -u
B=$1 S=$2 GROUP=$3
FAB=$B/bin/softverbs-fabric PEER=$B/test/xfer_peer LIB=$B/softverbs/libibverbs.so.1
W=$(mktemp -d --tmpdir rn-xfer.XXXXXX)
FX=$W/fabric
# shellcheck disable=SC2317  # called by the EXIT trap
cleanup() { "$FAB" down "$FX" >/dev/null 2>&1; rm -rf "$W"; }
trap cleanup EXIT
command -v python3 >/dev/null || { echo "SKIP: python3 not found"; exit 77; }
[ -x "$PEER" ] || { echo "SKIP: $PEER not built"; exit 77; }
"$FAB" build "$S/test/fixtures/small.spec" "$FX" >/dev/null || { echo "FAIL: fabric build"; exit 1; }
if ! "$FAB" up "$FX" >"$W/up.log" 2>&1; then
	echo "SKIP: softverbs-fabric up failed (root and netns needed): $(tail -1 "$W/up.log")"
	exit 77
fi
fail=0
BASE=(RAILNET_IBVERBS_LIB="$LIB" SOFTVERBS_RATE=off)
# Fault scenarios: short transport timeouts so that they end in seconds (4.096 us x 2^14 x 4).
FAST="NCCL_IB_TIMEOUT=14 NCCL_IB_RETRY_CNT=3"
# Port-down scenarios: PORT_ERR moves the traffic, so short timeouts are not needed there;
# 0.27 s of retries made the surviving QP itself time out on a loaded 2-core machine.
SHORT="NCCL_IB_TIMEOUT=16 NCCL_IB_RETRY_CNT=3"

# pair NAME "RECV-ENV" "SEND-ENV" ARGS...: run one scenario; RECV-ENV/SEND-ENV are
# space-separated VAR=value lists for each side.
pair() {
	local name=$1 renv=$2 senv=$3 scen=$4; shift 4
	local d=$W/$name rp sp rrc src
	mkdir -p "$d"
	# shellcheck disable=SC2086  # the env lists are meant to split
	"$FAB" exec "$FX" node0 pod1 -- env "${BASE[@]}" $renv "$PEER" recv "$scen" "$d" "$@" \
		>"$d/recv.out" 2>"$d/recv.err" &
	rp=$!
	# shellcheck disable=SC2086
	"$FAB" exec "$FX" node0 pod0 -- env "${BASE[@]}" $senv "$PEER" send "$scen" "$d" "$@" \
		>"$d/send.out" 2>"$d/send.err" &
	sp=$!
	wait "$rp"; rrc=$?
	wait "$sp"; src=$?
	if [ "$rrc" = 0 ] && [ "$src" = 0 ]; then
		cat "$d/recv.out" "$d/send.out"
		# the WARNs a scenario provoked (failovers, port events), for the log
		grep -h WARN "$d/recv.err" "$d/send.err" | cut -c1-200 | head -4
		return 0
	fi
	echo "FAIL: $name (receiver exit $rrc, sender exit $src)"
	for f in recv.out recv.err send.out send.err; do
		echo "--- $f"; tail -20 "$d/$f"
	done
	fail=1
	return 1
}

# xfer_peer takes SCENARIO DIR [options]: put DIR after the scenario
run() { # NAME RECV-ENV SEND-ENV SCENARIO [options]
	local name=$1 renv=$2 senv=$3 scen=$4; shift 4
	pair "$name" "$renv" "$senv" "$scen" "$@"
}

# stats_check FILE PYTHON: assertions over the sender's RAILNET_STATS JSON
stats_check() {
	python3 - "$1" <<PY || { echo "FAIL: stats $1"; fail=1; }
import json, sys
d = json.load(open(sys.argv[1]))
ports = {(p["device"], p["port"]): p for p in d["ports"]}
$2
PY
}

case $GROUP in
basic)
	for mode in 0 1; do
		run "sizes-split$mode" "NCCL_IB_SPLIT_DATA_ON_QPS=$mode" \
			"NCCL_IB_SPLIT_DATA_ON_QPS=$mode RAILNET_STATS=$W/sizes$mode.json" sizes --vdev &&
		stats_check "$W/sizes$mode.json" '
assert d["connections_total"] == 1, d
a, b = ports[("mlx5_0", 1)], ports[("mlx5_1", 1)]
assert a["tx_bytes"] > 0 and b["tx_bytes"] > 0, (a, b)
assert a["errors"] == 0 and b["errors"] == 0
print("ok: both ports carried data:", a["tx_bytes"], b["tx_bytes"])'
	done
	run multi "" "" multi --vdev --count 200
	run multi-inline "NCCL_IB_USE_INLINE=1" "NCCL_IB_USE_INLINE=1" multi --vdev --count 100
	run inflight "" "" inflight --vdev --count 4
	run inflight-1port "" "" inflight --count 2
	run stream-4qps "NCCL_IB_QPS_PER_CONNECTION=2" \
		"NCCL_IB_QPS_PER_CONNECTION=2 RAILNET_STATS=$W/qps.json" stream --vdev --count 200 &&
	stats_check "$W/qps.json" '
c = d["connections"][0]
assert c["qps"] == 4 and len(c["ports"]) == 2, c
print("ok: 4 QPs over 2 ports")'
	run churn "" "" churn --vdev --count 10000
	run eager "" "" eager --vdev --count 100
	run eager-flush "RAILNET_FLUSH=always" "" eager --vdev --count 100
	run dmabuf "SOFTVERBS_DMABUF=memfd" "SOFTVERBS_DMABUF=memfd" dmabuf --vdev --count 50
	run badhandle "" "" badhandle
	;;
faults)
	# one port of the sender's virtual device goes down for good after 300 ms
	run portdown "$SHORT" \
		"$SHORT SOFTVERBS_PORT_DOWN=mlx5_0:1:300 RAILNET_STATS=$W/pd.json" stream --vdev \
		--count 3000 &&
	stats_check "$W/pd.json" '
a, b = ports[("mlx5_0", 1)], ports[("mlx5_1", 1)]
assert a["failovers"] >= 1, a
assert b["tx_bytes"] > a["tx_bytes"], (a, b)
print("ok: failover", a, b)'
	# the receiver's port goes down: the sender hears of it through the failover notice
	run portdown-recv "$SHORT SOFTVERBS_PORT_DOWN=mlx5_3:1:300" "$SHORT" stream --vdev \
		--count 3000
	# the same at default transport timeouts, on either side: the port's IBV_EVENT_PORT_ERR is
	# read from every comm's progress (not after the QPs' ~34 s of retries), so the stream
	# finishes well within the 30 s guard and the failover is counted on the port that went
	# down (a behaviour guard, not a performance claim)
	for side in send recv; do
		if [ $side = send ]; then
			renv="" senv="SOFTVERBS_PORT_DOWN=mlx5_0:1:300 RAILNET_STATS=$W/pdd.json"
		else
			renv="SOFTVERBS_PORT_DOWN=mlx5_3:1:300 RAILNET_STATS=$W/pdd.json" senv=""
		fi
		t0=$SECONDS
		run "portdown-default-$side" "$renv" "$senv" stream --vdev --count 1000 &&
		stats_check "$W/pdd.json" '
down = ports[("mlx5_0", 1)] if "mlx5_0" in [k[0] for k in ports] else ports[("mlx5_3", 1)]
assert down["failovers"] >= 1, down
print("ok: failover counted", down)' &&
		if [ $((SECONDS - t0)) -ge 30 ]; then
			echo "FAIL: portdown-default-$side took $((SECONDS - t0)) s (guard 30 s)"; fail=1
		elif ! grep -q "IBV_EVENT_PORT_ERR" "$W/portdown-default-$side/$side.err"; then
			echo "FAIL: portdown-default-$side: the failover did not come from PORT_ERR"; fail=1
		else
			echo "ok: portdown-default-$side in $((SECONDS - t0)) s through IBV_EVENT_PORT_ERR"
		fi
	done
	# every QP breaks: an error completion fails the sender with a WARN naming QP and GIDs
	run qperr "$FAST RAILNET_KEEPALIVE_MS=200" "$FAST SOFTVERBS_QP_ERR_AFTER=40" stream \
		--count 500 \
		--expect-fail
	# the sender process dies; the receiver's pending receive fails instead of hanging
	run dead "$FAST RAILNET_KEEPALIVE_MS=200" "$FAST" dead
	# the same at default timeouts and keepalive: the peer's out-of-band socket closes with
	# its process, so the receive fails within a second instead of the ~34 s a QP's retries
	# take (10 s: a hang guard, not a performance claim)
	run dead-default "" "" dead --max-fail-s 10
	;;
cycles)
	# RN_XFER_CYCLES: .ci/run keeps the full 10,000 for the gcc suite and runs fewer under
	# clang and the sanitizers, where each cycle costs several times more
	run cycles "" "" cycles --count "${RN_XFER_CYCLES:-10000}"
	;;
*)
	echo "usage: xfer.sh BUILD_DIR SOURCE_DIR basic|faults|cycles"; exit 2 ;;
esac
exit $fail
