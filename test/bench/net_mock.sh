#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# railnet-bench --net's plugin driver over libnccl-net-rbmock.so (test/bench/mock_net.c, TCP on
# loopback), under mpirun -np 2 and -np 4 --oversubscribe: every ring collective and --p2p test
# ends with #wrong = 0 while the plugin answers "busy" (NULL request) every few calls, and each
# plugin failure (dlopen, missing symbol version, init, no devices, connect, test) exits
# non-zero with one reason line.
# Usage: net_mock.sh path/to/railnet-bench BUILD_DIR SOURCE_DIR
set -u
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
bin=$1 build=$2
plugin=$build/test-plugins/libnccl-net-rbmock.so
command -v mpirun >/dev/null 2>&1 || { echo "no mpirun on this machine" >&2; exit 77; }
[ -f "$plugin" ] || { echo "FAIL: $plugin not built"; exit 1; }
# shellcheck source=bench/railnet-bench/mpi-env.sh
. "$3/bench/railnet-bench/mpi-env.sh"
unset NCCL_NET_PLUGIN
fails=0

ok_run() { # np args...: rc 0, every #wrong 0, "Out of bounds values : 0 OK"
	local np=$1 out rc bad
	shift
	out=$(timeout 300 mpirun -np "$np" --oversubscribe "$bin" --net \
		--plugin "$plugin" "$@" 2>&1)
	rc=$?
	# rows: the #wrong columns are the 9th and 13th fields (p2p: the 8th)
	bad=$(awk '/^ +[0-9]/ { if (NF >= 13) { if (($9 != 0 && $9 != "N/A") || ($13 != 0 && $13 != "N/A")) n++ } else if ($8 != 0) n++ } END { print n + 0 }' <<<"$out")
	if [ "$rc" != 0 ] || [ "$bad" != 0 ] || ! grep -qE '(Out of bounds values|Wrong bytes) +: 0 OK' <<<"$out"; then
		echo "FAIL: mpirun -np $np railnet-bench --net $*: rc=$rc, $bad rows with #wrong != 0"
		echo "$out" | tail -15
		fails=$((fails + 1))
	else
		echo "ok: -np $np --net $* ($(grep -cE '^ +[0-9]' <<<"$out") rows, #wrong 0)"
	fi
}

err_run() { # want_text args...: rc 3 and the reason on stderr
	local want=$1 out rc
	shift
	out=$(timeout 120 mpirun -np 2 --oversubscribe "$bin" --net -b 8 -e 8 "$@" 2>&1)
	rc=$?
	if [ "$rc" = 0 ] || ! grep -qF -- "$want" <<<"$out"; then
		echo "FAIL: railnet-bench --net $*: rc=$rc, want nonzero and '$want'"
		echo "$out" | head -10
		fails=$((fails + 1))
	else
		echo "ok: --net $* -> rc $rc: $want"
	fi
}

export RBMOCK_BUSY=3
sizes=(-b 8 -e 1M -f 8 -n 3 -w 1 --chunk 64K --slots 2)
ok_run 2 "${sizes[@]}"
ok_run 2 "${sizes[@]}" -d all -o all -e 64K
for coll in all_reduce reduce_scatter all_gather sendrecv; do
	ok_run 4 "${sizes[@]}" --coll "$coll"
done
ok_run 3 "${sizes[@]}" -d half -o max
ok_run 4 --p2p bw -b 8 -e 256K -f 32 -n 10
ok_run 2 --p2p bibw -b 8 -e 256K -f 32 -n 10
ok_run 2 --p2p lat -b 8 -e 4K -f 8 -n 10
unset RBMOCK_BUSY

# --min-time: -n 2 at 8 B takes far less than 300 ms, so each row is timed again with more
# iterations (the JSON row says how many), the same on every rank; without it, exactly -n
W=$(mktemp -d --tmpdir rb-mintime.XXXXXX)
ok_run 2 -b 8 -e 1K -f 8 -n 2 -w 1 --min-time 300 -J "$W/min.json"
ok_run 2 -b 8 -e 1K -f 8 -n 2 -w 1 -J "$W/plain.json"
if ! python3 - "$W/min.json" "$W/plain.json" <<'PY'; then
import json, sys
m = json.load(open(sys.argv[1]))["results"]
p = json.load(open(sys.argv[2]))["results"]
assert len(m) == 3 and len(p) == 3, (m, p)
for r in m:
    for h in ("out_of_place", "in_place"):
        # about 300 ms of iterations (the time is the ranks' mean, the mark the slowest's)
        assert r[h]["iterations"] > 2 and r[h]["iterations"] * r[h]["time"] >= 300e3 * 0.7, r
for r in p:
    assert r["out_of_place"]["iterations"] == 2 and r["in_place"]["iterations"] == 2, r
PY
	echo "FAIL: --min-time rows"; fails=$((fails + 1))
else
	echo "ok: --min-time 300 times small rows with more iterations than -n 2"
fi
rm -rf "$W"

err_run "cannot load the net plugin: dlopen(/nonexistent/libx.so)" --plugin /nonexistent/libx.so
err_run "dlopen(libnccl-net-nosuch.so)" --plugin nosuch
err_run "has no ncclNetPlugin_v11 (--net-api 11)" --plugin "$plugin" --net-api 11
RBMOCK_FAIL_INIT=1 err_run "init failed: ncclSystemError" --plugin "$plugin"
RBMOCK_NODEV=1 err_run "no network devices on this host (devices() = 0)" --plugin "$plugin"
RBMOCK_FAIL_CONNECT=1 err_run "connect to rank 1 on device 0 (mock0) failed: ncclRemoteError" \
	--plugin "$plugin"
RBMOCK_FAIL_TEST=5 err_run "failed: ncclRemoteError" --plugin "$plugin" -e 64K -f 8
[ "$fails" = 0 ] && echo "all --net driver checks passed"
[ "$fails" = 0 ]
