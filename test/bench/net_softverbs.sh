#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# railnet-bench --net over railnet itself on a softverbs fabric (test/fixtures/run-2pod.spec:
# two pods in their own network namespaces, two dual-port NICs each, fused into virtual
# devices as NCCL would): mpirun -np 2 (both ranks in pod0) and -np 4 --oversubscribe (two per
# pod, the ring crossing pods) of the ring all-reduce, small sizes, #wrong = 0 asserted; then a
# short --p2p bw across the pods and the v8 API. Needs root for the namespaces (else exit 77).
# Usage: net_softverbs.sh path/to/railnet-bench BUILD_DIR SOURCE_DIR
set -u
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
bin=$1 build=$2 src=$3
fab=$build/bin/softverbs-fabric
sv=$build/softverbs/libibverbs.so.1
plugin=$build/libnccl-net-railnet.so
shim=$src/bench/railnet-bench/in-pod.sh
command -v mpirun >/dev/null 2>&1 || { echo "no mpirun on this machine" >&2; exit 77; }
[ "$(id -u)" = 0 ] || { echo "needs root: the pods are network namespaces" >&2; exit 77; }
for f in "$fab" "$sv" "$plugin"; do
	[ -e "$f" ] || { echo "FAIL: $f is not built"; exit 1; }
done
# shellcheck source=bench/railnet-bench/mpi-env.sh
. "$src/bench/railnet-bench/mpi-env.sh"
export RAILNET_IBVERBS_LIB=$sv
unset NCCL_NET_PLUGIN
out=$(mktemp -d --tmpdir rb-net-sv-XXXXXX)
cleanup() {
	"$fab" down "$out/fab" >/dev/null 2>&1
	rm -rf "$out"
}
trap cleanup EXIT
"$fab" build "$src/test/fixtures/run-2pod.spec" "$out/fab" >/dev/null || { echo "FAIL: build"; exit 1; }
"$fab" up "$out/fab" >/dev/null 2>&1 || { echo "cannot create network namespaces here" >&2; exit 77; }
fails=0

run() { # np ranks-per-pod pods args...
	local np=$1 per=$2 pods=$3 res rc bad
	shift 3
	res=$(timeout 300 mpirun -np "$np" --oversubscribe "$shim" "$out/fab" "$per" "$pods" -- \
		"$bin" --net --plugin "$plugin" -T 120 "$@" 2>&1)
	rc=$?
	last=$res
	bad=$(awk '/^ +[0-9]/ { if (NF >= 13) { if (($9 != 0 && $9 != "N/A") || ($13 != 0 && $13 != "N/A")) n++ } else if ($8 != 0) n++ } END { print n + 0 }' <<<"$res")
	if [ "$rc" != 0 ] || [ "$bad" != 0 ] || ! grep -qE '(Out of bounds values|Wrong bytes) +: 0 OK' <<<"$res"; then
		echo "FAIL: mpirun -np $np ($pods) railnet-bench --net $*: rc=$rc, $bad rows with #wrong != 0"
		echo "$res" | tail -25
		fails=$((fails + 1))
	else
		echo "ok: -np $np ($pods) --net $*"
		echo "$res" | grep -E '^#  Rank|^ +[0-9]|Avg bus'
	fi
}

run 2 2 n0:pod0 -b 8 -e 1M -f 8 -n 5 -w 2
run 4 2 n0:pod0,n1:pod1 -b 8 -e 1M -f 8 -n 5 -w 2
run 4 2 n0:pod0,n1:pod1 -b 4K -e 256K -f 64 -n 3 -w 1 --coll reduce_scatter -d int8 -o max
run 2 1 n0:pod0,n1:pod1 --p2p bw -b 64K -e 1M -f 16 -n 20
# bench/rails.sh's layout: pairs across the pods (ranks alternate), pair k on virtual device k,
# all at once, and their aggregate
run 4 1 n0:pod0,n1:pod1,n0:pod0,n1:pod1 --p2p bw --net-dev pair -b 64K -e 1M -f 16 -n 20
devs=$(awk '$1 ~ /^[0-9]+$/ && NF >= 8 && $4 == 1048576 { print $1 "/" $3 }' <<<"$last" | sort | tr '\n' ' ')
naggr=$(grep -cE '^# aggregate of 2 pairs at [0-9]+ B: [0-9.]+ GB/s' <<<"$last")
if [ "$(wc -w <<<"$devs")" != 2 ] || [ "${devs%%/*}" = "$(awk '{ print $2 }' <<<"$devs" | cut -d/ -f1)" ] ||
	[ "$naggr" != 2 ]; then
	echo "FAIL: --net-dev pair: want pairs 0-1 and 2-3 on two devices and 2 aggregate lines; got" \
		"'$devs', $naggr aggregate lines"
	fails=$((fails + 1))
else
	echo "ok: --net-dev pair: $devs; $(grep -m1 '^# aggregate' <<<"$last")"
fi
# as NCCL 2.20-2.23 loads it: ncclNetPlugin_v8, no makeVDevice (railnet fuses the ports itself)
run 2 1 n0:pod0,n1:pod1 --net-api 8 -b 8 -e 64K -f 64 -n 3
[ "$fails" = 0 ] && echo "all --net over softverbs checks passed"
[ "$fails" = 0 ]
