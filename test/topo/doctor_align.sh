#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# railnet-doctor's alignment section on the seeds' fixtures (issue 6, item 5), text and --json,
# judged from outside the pods (--ifaddrs, no root or netns needed): the 16-rail pod all
# aligned (8 virtual devices of port pairs, none across roots), the misaligned jobs (job 1:
# only rdma4,5,6 with GPUDirect; job 2: only rdma0,2,3), the aligned allocation (all 8), the
# 4-GPU/16-PF pod Topology Manager `restricted` rejects; then no GDR, GPUs unknown, GPUs from
# NVIDIA_VISIBLE_DEVICES, GPUs from the CUDA driver (fake libcuda.so.1 builds of
# test/topo/fake_cuda.c) when the topology is this machine's, verdicts no-gpu and no-rail, an
# unplaceable GPU and a missing topology. Every JSON document: "schema": 2 and the version.
# Last, --gpus validation (issue 16, item 4): one GPU written three ways is one GPU; a repeat
# (however written), a malformed or an empty entry is a usage error (exit 2) naming it, in text
# (stderr only) and in --json (one usage-error document on stdout, nothing on stderr).
# Usage: doctor_align.sh BUILD_DIR SOURCE_DIR
set -u
B=$1 S=$2
FAB=$B/bin/softverbs-fabric DOC=$B/bin/railnet-doctor LIB=$B/softverbs/libibverbs.so.1
for f in "$FAB" "$DOC" "$LIB"; do
	[ -e "$f" ] || { echo "FAIL: $f is not built"; exit 1; }
done
command -v python3 >/dev/null || { echo "SKIP: python3 not found"; exit 77; }
ver=$(sed -n 's/^project(railnet VERSION \([0-9.]*\).*/\1/p' "$S/CMakeLists.txt")
W=$(mktemp -d --tmpdir rn-align.XXXXXX)
trap 'rm -rf "$W"' EXIT
fail=0

for fx in seeds-b4 seeds-b4-misaligned seeds-b4-aligned seeds-b4-4gpu16pf leaky; do
	"$FAB" build "$S/test/fixtures/$fx.spec" "$W/$fx" >/dev/null || { echo "FAIL: build $fx"; exit 1; }
done

peermem() { # fixture node pod: the node has nvidia-peermem loaded (as the seeds' nodes had)
	local v=$W/$1/$2/$3/view
	mkdir -p "$v/module/nvidia_peermem" && echo 535.104.05 >"$v/module/nvidia_peermem/version"
}

# doc FIXTURE NODE POD MODE [--gpus|--no-gpus] [ENV...] -> $W/out, $W/err, $rc
doc() {
	local fx=$1 node=$2 pod=$3 mode=$4 gpus=$5; shift 5
	local v=$W/$fx/$node/$pod/view args=(--ifaddrs "$W/$fx/$node/$pod/view/softverbs/ifaddrs")
	local list
	list=$(sed -n "s/^export SOFTVERBS_GPUS='\(.*\)'$/\1/p" "$W/$fx/$node/$pod/env")
	[ "$gpus" = --gpus ] && args+=(--gpus "$list")
	[ "$mode" = json ] && args+=(--json)
	env -u NVIDIA_VISIBLE_DEVICES -u CUDA_VISIBLE_DEVICES RAILNET_SYSFS_ROOT="$v" \
		SOFTVERBS_VIEW="$v" RAILNET_IBVERBS_LIB="$LIB" KUBERNETES_SERVICE_HOST=10.96.0.1 \
		RAILNET_TOPO_XML="$W/$fx/$node/topo.xml" "$@" "$DOC" "${args[@]}" \
		>"$W/out" 2>"$W/err"
	rc=$?
}

expect_text() { # exit-code then lines that must appear (grep -F)
	local want=$1; shift
	[ "$rc" = "$want" ] || { echo "FAIL: exit $rc, expected $want ($ctx)"; cat "$W/err"; fail=1; }
	for l in "$@"; do
		grep -qF -- "$l" "$W/out" || { echo "FAIL: '$l' missing ($ctx)"; cat "$W/out"; fail=1; }
	done
}

expect_json() { # exit-code python-assertions (d: the document, a: its alignment)
	local want=$1 py=$2
	[ "$rc" = "$want" ] || { echo "FAIL: exit $rc, expected $want ($ctx)"; cat "$W/err"; fail=1; }
	if ! python3 - "$W/out" <<PY
import json, sys
d = json.load(open(sys.argv[1]))
a = d["alignment"]
probs = " | ".join(p["what"] + " FIX " + (p["fix"] or "") for p in d["problems"])
assert d["fit"] == (not d["problems"]), d["verdict"]
assert d["schema"] == 2 and d["version"] == "$ver", (d["schema"], d["version"])
$py
PY
	then echo "FAIL: $ctx"; fail=1; else echo "ok: $ctx"; fi
}

rdma() { local out="" i; for i in "$@"; do out+="${out:+, }rdma$i"; done; echo "$out"; }
pyl() { local out="" i; for i in "$@"; do out+="${out:+,}\"rdma$i\""; done; echo "[$out]"; }

# ---- the 16-rail pod: all aligned, 8 virtual devices of port pairs, none across roots
peermem seeds-b4 n1 train-0
ctx=seeds-b4/train-0/text; doc seeds-b4 n1 train-0 text --gpus
expect_text 0 "GPUDirect rails    $(rdma $(seq 0 15)) (16 of 16)" \
	"host-memory rails  none (0 of 16)" "alignment          aligned" \
	"predicted busbw    156.0-194.0 GB/s (aligned: 194.0 GB/s)" \
	"GPU 2 (host GPU 2, 0000:51:00.0): root 0000:40:01.1, numa 1, PCIe Gen4 x16 (31.5 GB/s)" \
	"    GPUDirect        $(rdma 4 5 6 7)" \
	"Devices offered to NCCL < 2.24 (8)" "Verdict: FIT"
ctx=seeds-b4/train-0/json; doc seeds-b4 n1 train-0 json --gpus
expect_json 0 "
assert a['verdict'] == 'aligned' and a['gpudirect'] == $(pyl $(seq 0 15)) and a['host_memory'] == []
assert a['gdr']['available'] and a['gdr']['peermem'] == 'nvidia_peermem 535.104.05'
assert [g['bus_id'] for g in a['gpus']][2:4] == ['0000:51:00.0', '0000:54:00.0']
assert a['gpus'][2]['gpudirect'] == $(pyl 4 5 6 7) and a['gpus'][2]['not_given'] == []
assert a['gpus'][2]['pcie'] == {'gen': 4, 'width': 16, 'gbs': 31.5} and a['gpus'][2]['host_index'] == 2
root = {r['device']: r['root'] for r in a['rails']}
older = d['offered']['nccl_older']
assert len(older) == 8 and all('+' in n['name'] for n in older), older
for n in older:
    m = n['name'].split('+')
    assert len(m) == 2 and root[m[0]] == root[m[1]], n   # port pairs never cross roots
b = a['busbw_gbs']
assert (b['low'], b['high'], b['aligned'], b['regime']) == (156.0, 194.0, 194.0, 'gpudirect'), b
assert a['fix'] is None and d['verdict'] == 'fit'"

# ---- the misaligned allocation: job 1 only rdma4,5,6, job 2 only rdma0,2,3 (both nodes)
for p in "n1 job1-0" "n2 job1-1" "n1 job2-0" "n2 job2-1"; do
	# shellcheck disable=SC2086
	peermem seeds-b4-misaligned $p
done
for p in "n1 job1-0" "n2 job1-1"; do
	ctx="misaligned/${p#* }/text"
	# shellcheck disable=SC2086
	doc seeds-b4-misaligned $p text --gpus
	expect_text 1 "GPUDirect rails    $(rdma 4 5 6) (3 of 8)" \
		"host-memory rails  $(rdma 1 12 13 14 15) (5 of 8)" "alignment          misaligned" \
		"GPU 2 (host GPU 4, 0000:8d:00.0): root 0000:80:01.1, numa 2" "    GPUDirect        none" \
		"    not given        $(rdma 8 9 10 11)" \
		"--topology-manager-policy=restricted --topology-manager-scope=pod" \
		"request the PFs on the GPUs' roots ($(rdma 7 8 9 10 11)) instead of $(rdma 1 12 13 14 15)" \
		"problem GPU 2 (host GPU 4, 0000:8d:00.0), GPU 3 (host GPU 5, 0000:92:00.0) have no GPUDirect rail (no NIC of this pod within PXB), and 5 of 8 rails ($(rdma 1 12 13 14 15)) are within PXB of no GPU" \
		"predicted busbw 22.5-31.2 GB/s instead of 97.0" "Verdict: PROBLEMS"
	ctx="misaligned/${p#* }/json"
	# shellcheck disable=SC2086
	doc seeds-b4-misaligned $p json --gpus
	expect_json 1 "
assert a['gpudirect'] == $(pyl 4 5 6), a['gpudirect']
assert a['host_memory'] == $(pyl 1 12 13 14 15)
assert a['verdict'] == 'misaligned' and a['request'] == $(pyl 7 8 9 10 11), a['request']
assert a['gpus'][0]['gpudirect'] == $(pyl 4 5 6) and a['gpus'][0]['not_given'] == ['rdma7']
assert a['gpus'][2]['gpudirect'] == [] and a['gpus'][2]['root'] == '0000:80:01.1'
assert [g['host_index'] for g in a['gpus']] == [2, 3, 4, 5] and a['topology_manager_applies']
assert 'restricted' in a['fix'] and 'scope \`pod\`' in a['fix']
assert a['busbw_gbs']['low'] <= 26.95 <= a['busbw_gbs']['high'], a['busbw_gbs']   # the seeds' job alone
assert a['busbw_gbs']['regime'] == 'paced-by-host-memory', a['busbw_gbs']
assert a['busbw_gbs']['aligned'] >= 96.3 and len(d['problems']) == 1, probs   # one cause, one fix"
done
for p in "n1 job2-0" "n2 job2-1"; do
	ctx="misaligned/${p#* }/json"
	# shellcheck disable=SC2086
	doc seeds-b4-misaligned $p json --gpus
	expect_json 1 "
assert a['gpudirect'] == $(pyl 0 2 3), a['gpudirect']
assert a['host_memory'] == $(pyl 7 8 9 10 11)
assert a['verdict'] == 'misaligned' and a['request'] == $(pyl 1 12 13 14 15), a['request']
assert [g['gpudirect'] for g in a['gpus']] == [$(pyl 0 2 3), $(pyl 0 2 3), [], []]"
	ctx="misaligned/${p#* }/text"
	# shellcheck disable=SC2086
	doc seeds-b4-misaligned $p text --gpus
	expect_text 1 "GPUDirect rails    $(rdma 0 2 3) (3 of 8)" "alignment          misaligned"
done

# ---- the aligned allocation: all 8 PFs with GPUDirect
for p in "n1 job1-0:0 1 2 3 4 5 6 7" "n1 job2-0:8 9 10 11 12 13 14 15"; do
	pod=${p%%:*} want=${p#*:}
	# shellcheck disable=SC2086
	peermem seeds-b4-aligned $pod
	ctx="aligned/${pod#* }"
	# shellcheck disable=SC2086
	doc seeds-b4-aligned $pod json --gpus
	# shellcheck disable=SC2086
	expect_json 0 "
assert a['verdict'] == 'aligned' and a['gpudirect'] == $(pyl $want) and a['host_memory'] == []
b = a['busbw_gbs']
assert (b['low'], b['high'], b['aligned']) == (78.0, 97.0, 97.0), b
assert all(len(g['gpudirect']) == 4 for g in a['gpus'])"
	# shellcheck disable=SC2086
	doc seeds-b4-aligned $pod text --gpus
	# shellcheck disable=SC2086
	expect_text 0 "GPUDirect rails    $(rdma $want) (8 of 8)" "alignment          aligned" "Verdict: FIT"
done

# ---- 4 GPUs with all 16 PFs: Topology Manager restricted rejects it
peermem seeds-b4-4gpu16pf n1 wide-0
ctx=4gpu16pf/json; doc seeds-b4-4gpu16pf n1 wide-0 json --gpus
expect_json 1 "
assert a['verdict'] == 'unalignable', a['verdict']
assert a['gpudirect'] == $(pyl 0 1 2 3 4 5 6 7) and a['host_memory'] == $(pyl 8 9 10 11 12 13 14 15)
assert a['request'] == $(pyl 0 1 2 3 4 5 6 7)
assert 'restricted' in a['fix'] and 'rejects this pod' in a['fix'], a['fix']
assert '8 of 16 rails ($(rdma 8 9 10 11 12 13 14 15)) are within PXB of no GPU of this pod' in probs, probs
assert len(d['problems']) == 1, probs"
ctx=4gpu16pf/text; doc seeds-b4-4gpu16pf n1 wide-0 text --gpus
expect_text 1 "alignment          unalignable" \
	"Topology Manager policy \`restricted\` (scope \`pod\`) rejects this pod: its 16 PFs span more PCIe roots than its GPUs, whose roots hold only 8 ($(rdma 0 1 2 3 4 5 6 7))"

# ---- no GDR on the node: a problem even when aligned, and the prediction drops
ctx=aligned/no-gdr; doc seeds-b4-aligned n2 job1-1 json --gpus
expect_json 1 "
assert not a['gdr']['available'] and a['gdr']['peermem'] is None and a['gdr']['dmabuf'] is False
assert a['verdict'] == 'aligned' and 'every rail moves GPU data through host memory' in probs, probs
assert 'nvidia-peermem' in d['problems'][0]['fix']
assert a['busbw_gbs']['high'] < 50, a['busbw_gbs']"

# ---- GPUs unknown (no --gpus, no *_VISIBLE_DEVICES): reported, never a problem
ctx=unknown-gpus; doc seeds-b4-aligned n1 job2-0 json --no-gpus
expect_json 0 "
assert a['verdict'] == 'unknown' and not a['gpus_known'] and len(a['gpus']) == 8
assert a['gpu_source'] == 'every GPU of the topology'"
# ---- the container runtime's NVIDIA_VISIBLE_DEVICES (host indices) names the pod's GPUs
ctx=nvidia-visible; doc seeds-b4-misaligned n1 job1-0 json --no-gpus NVIDIA_VISIBLE_DEVICES=2,3,4,5
expect_json 1 "
assert a['gpus_known'] and a['gpudirect'] == $(pyl 4 5 6) and a['verdict'] == 'misaligned'"
# ---- no --gpus, and the topology is this machine's (RAILNET_TOPO_XML unset; hwloc reads the
# node's topo.xml through HWLOC_XMLFILE as it would read this machine): the GPUs are what the
# CUDA driver enumerates (a fake libcuda.so.1 found through LD_LIBRARY_PATH; its GPUs are
# FAKE_CUDA_BUSIDS, its calls recorded in FAKE_CUDA_MARK), in the driver's order, and
# NVIDIA_VISIBLE_DEVICES no longer counts
for v in good old; do
	mkdir -p "$W/cuda-$v" && ln -sf "$B/test/fake-cuda/libfake_cuda_$v.so" "$W/cuda-$v/libcuda.so.1"
done
hostdoc() { # DRIVER FIXTURE NODE POD [ENV...]: --json, no --gpus, no RAILNET_TOPO_XML
	local cuda=$W/cuda-$1 v=$W/$2/$3/$4/view topo=$W/$2/$3/topo.xml; shift 4
	rm -f "$W/cuda-mark"
	env -u RAILNET_TOPO_XML -u NVIDIA_VISIBLE_DEVICES -u CUDA_VISIBLE_DEVICES \
		RAILNET_SYSFS_ROOT="$v" SOFTVERBS_VIEW="$v" RAILNET_IBVERBS_LIB="$LIB" \
		HWLOC_XMLFILE="$topo" LD_LIBRARY_PATH="$cuda${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
		FAKE_CUDA_MARK="$W/cuda-mark" "$@" "$DOC" --json --ifaddrs "$v/softverbs/ifaddrs" \
		>"$W/out" 2>"$W/err"
	rc=$?
}
marks() { [ -e "$W/cuda-mark" ] && tr '\n' ' ' <"$W/cuda-mark"; }
gpus=0000:92:00.0,0000:8d:00.0,0000:54:00.0,0000:51:00.0 # the reverse of bus-id order
ctx="cuda-driver"; hostdoc good seeds-b4-misaligned n1 job1-0 FAKE_CUDA_BUSIDS=$gpus \
	NVIDIA_VISIBLE_DEVICES=0,1
expect_json 1 "
assert a['topology'] == 'this machine' and a['topology_has_io'], a['topology']
assert a['gpu_source'] == 'the CUDA driver' and a['gpus_known'], a['gpu_source']
assert [(g['cuda_index'], g['bus_id']) for g in a['gpus']] == list(enumerate('$gpus'.split(','))), a['gpus']
assert a['gpus'][2]['gpudirect'] == $(pyl 4 5 6) and a['gpus'][0]['gpudirect'] == []
assert a['gpudirect'] == $(pyl 4 5 6) and a['verdict'] == 'misaligned', a['verdict']"
[ "$(marks)" = "open cuInit " ] || { echo "FAIL: the CUDA driver was not asked ($ctx): $(marks)"; fail=1; }
# a topology file (not this machine): the driver is never opened; *_VISIBLE_DEVICES decide
ctx="cuda-driver/topology-file"; rm -f "$W/cuda-mark"
doc seeds-b4-misaligned n1 job1-0 json --no-gpus NVIDIA_VISIBLE_DEVICES=2,3,4,5 \
	LD_LIBRARY_PATH="$W/cuda-good${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" FAKE_CUDA_BUSIDS=$gpus \
	FAKE_CUDA_MARK="$W/cuda-mark"
expect_json 1 "
assert a['gpu_source'].startswith('NVIDIA_VISIBLE_DEVICES=2,3,4,5'), a['gpu_source']
assert [g['bus_id'] for g in a['gpus']] == ['0000:51:00.0', '0000:54:00.0', '0000:8d:00.0', '0000:92:00.0']"
[ ! -e "$W/cuda-mark" ] || { echo "FAIL: the CUDA driver was opened ($ctx): $(marks)"; fail=1; }
# a driver older than CUDA 11.0 counts as none: NVIDIA_VISIBLE_DEVICES decides
ctx="cuda-driver/too-old"; hostdoc old seeds-b4-misaligned n1 job1-0 FAKE_CUDA_BUSIDS=$gpus \
	NVIDIA_VISIBLE_DEVICES=2,3,4,5
expect_json 1 "
assert a['gpu_source'].startswith('NVIDIA_VISIBLE_DEVICES=2,3,4,5 '), a['gpu_source']
assert [g['bus_id'] for g in a['gpus']] == sorted('$gpus'.split(',')), a['gpus']
assert a['gpudirect'] == $(pyl 4 5 6) and a['verdict'] == 'misaligned', a['verdict']"
[ "$(marks)" = "open " ] || { echo "FAIL: the old driver was initialised ($ctx): $(marks)"; fail=1; }

# ---- verdict no-gpu: not a problem, even without GDR (exit 0, nothing about alignment)
ctx=no-gpu/driver; hostdoc good seeds-b4-aligned n2 job1-1 FAKE_CUDA_BUSIDS=
expect_json 0 "
assert a['verdict'] == 'no-gpu' and a['gpus_known'] and a['gpus'] == [], a['verdict']
assert not a['gdr']['available'] and d['problems'] == [] and a['fix'] is None"
ctx=no-gpu/nvidia-none; doc seeds-b4-aligned n2 job1-1 text --no-gpus NVIDIA_VISIBLE_DEVICES=none
expect_text 0 "alignment          no-gpu" "Verdict: FIT"
ctx=no-gpu/topology; doc leaky n1 pod-a json --no-gpus NVIDIA_VISIBLE_DEVICES=all
expect_json 0 "
assert a['topology_has_io'] and a['gpus_known'] and a['verdict'] == 'no-gpu', a['verdict']
assert len(d['ports']) == 1 and a['rails'][0]['device'] == 'mlx5_0' and not a['rails'][0]['gpudirect']"

# ---- verdict no-rail: GPUs known, no usable port (an empty address list): the port problem
# is reported, nothing about alignment or GDR (this node has no peer-memory module)
: >"$W/empty"
v=$W/seeds-b4-aligned/n2/job1-1/view
list=$(sed -n "s/^export SOFTVERBS_GPUS='\(.*\)'$/\1/p" "$W/seeds-b4-aligned/n2/job1-1/env")
for mode in json text; do
	ctx=no-rail/$mode
	args=(--ifaddrs "$W/empty" --gpus "$list")
	[ "$mode" = json ] && args+=(--json)
	env -u NVIDIA_VISIBLE_DEVICES -u CUDA_VISIBLE_DEVICES RAILNET_SYSFS_ROOT="$v" \
		SOFTVERBS_VIEW="$v" RAILNET_IBVERBS_LIB="$LIB" \
		RAILNET_TOPO_XML="$W/seeds-b4-aligned/n2/topo.xml" "$DOC" "${args[@]}" >"$W/out" 2>"$W/err"
	rc=$?
	if [ "$mode" = json ]; then
		expect_json 1 "
assert a['verdict'] == 'no-rail' and a['gpus_known'] and len(a['gpus']) == 4, a['verdict']
assert d['ports'] == [] and a['rails'] == [] and len(d['dropped']) == 8 and not a['gdr']['available']
# one problem per cause: the 8 ports' identical reason is one problem naming the other 7
assert 'no usable RDMA port' in probs and len(d['problems']) == 2, probs
assert 'likewise 7 more (each under Left out): mlx5_1 port 1 (rdma1), mlx5_2 port 1 (rdma2)' in probs, probs
assert not any(w in probs for w in ('PCIe root', 'GPUDirect', 'busbw')), probs"
	else
		expect_text 1 "alignment          no-rail" \
			"problem no usable RDMA port: NCCL would not use railnet"
		! grep '^  problem' "$W/out" | grep -qE 'PCIe root|GPUDirect|busbw' ||
			{ echo "FAIL: an alignment problem for no-rail"; cat "$W/out"; fail=1; }
	fi
done

# ---- a GPU the topology cannot place: a WARN, the rest still judged
ctx=unplaced-gpu
v=$W/seeds-b4-misaligned/n1/job1-0/view
env RAILNET_SYSFS_ROOT="$v" SOFTVERBS_VIEW="$v" RAILNET_IBVERBS_LIB="$LIB" \
	RAILNET_TOPO_XML="$W/seeds-b4-misaligned/n1/topo.xml" "$DOC" --ifaddrs "$v/softverbs/ifaddrs" \
	--gpus 0000:51:00.0,0000:99:00.0 >"$W/out" 2>"$W/err"
rc=$?
expect_text 1 "GPUDirect rails    $(rdma 4 5 6) (3 of 8)" "GPU 0 (host GPU 2, 0000:51:00.0): root 0000:40:01.1"
grep -qF "GPU 0000:99:00.0 (--gpus): the topology" "$W/err" || { echo "FAIL: no WARN for the unplaceable GPU"; cat "$W/err"; fail=1; }
# ---- no topology: one WARN, nothing judged, nothing crashes; with --json the WARN is in the
# document's log and not on stderr (kubectl logs would mix it into the document)
ctx=no-topology; doc seeds-b4-aligned n1 job1-0 json --gpus RAILNET_TOPO_XML=/nonexistent/topo.xml
expect_json 0 "
assert not a['topology_has_io'] and a['verdict'] == 'unknown' and a['gpudirect'] == []
w = [l['message'] for l in d['log'] if l['level'] == 'WARN']
assert sum('RAILNET_TOPO_XML=/nonexistent/topo.xml: cannot read it' in m for m in w) == 1, d['log']"
! grep -qF "[railnet]" "$W/err" || { echo "FAIL: railnet's WARN on stderr with --json"; cat "$W/err"; fail=1; }
ctx=no-topology/text; doc seeds-b4-aligned n1 job1-0 text --gpus RAILNET_TOPO_XML=/nonexistent/topo.xml
expect_text 0 "alignment          unknown"
grep -qF "RAILNET_TOPO_XML=/nonexistent/topo.xml: cannot read it" "$W/err" || { echo "FAIL: no WARN for the missing XML"; cat "$W/err"; fail=1; }

# ---- --gpus validation: the spellings of one GPU (0000:8d:00.0, 8D:00.0, 00000000:8D:00.0)
# name the same GPU, so the job judges as with the canonical list
peermem seeds-b4-misaligned n1 job1-0
v=$W/seeds-b4-misaligned/n1/job1-0/view
gdoc() { # MODE LIST: the misaligned job1-0 with --gpus LIST
	local args=(--ifaddrs "$v/softverbs/ifaddrs" --gpus "$2")
	[ "$1" = json ] && args+=(--json)
	env -u NVIDIA_VISIBLE_DEVICES -u CUDA_VISIBLE_DEVICES RAILNET_SYSFS_ROOT="$v" \
		SOFTVERBS_VIEW="$v" RAILNET_IBVERBS_LIB="$LIB" \
		RAILNET_TOPO_XML="$W/seeds-b4-misaligned/n1/topo.xml" "$DOC" "${args[@]}" \
		>"$W/out" 2>"$W/err"
	rc=$?
}
ctx=gpus/spellings; gdoc json 51:00.0,0000:54:00.0,8D:00.0,00000000:92:00.0
expect_json 1 "
assert a['gpu_source'] == '--gpus' and a['verdict'] == 'misaligned', a['verdict']
assert [g['bus_id'] for g in a['gpus']] == ['0000:51:00.0', '0000:54:00.0', '0000:8d:00.0', '0000:92:00.0'], a['gpus']
assert a['gpudirect'] == $(pyl 4 5 6), a['gpudirect']"
# refused: LIST, then the text the reason must hold
gbad() {
	local list=$1; shift
	for mode in text json; do
		ctx="gpus/$mode/'$list'"; gdoc $mode "$list"
		[ "$rc" = 2 ] || { echo "FAIL: exit $rc, expected 2 ($ctx)"; fail=1; }
		if [ $mode = text ]; then
			[ -s "$W/out" ] && { echo "FAIL: stdout not empty ($ctx)"; cat "$W/out"; fail=1; }
			grep -q "WARN" "$W/err" && { echo "FAIL: a WARN, not a usage error ($ctx)"; fail=1; }
			grep -qF -- "railnet-doctor: --gpus" "$W/err" ||
				{ echo "FAIL: no --gpus usage error on stderr ($ctx)"; cat "$W/err"; fail=1; }
			for l in "$@"; do
				grep -qF -- "$l" "$W/err" ||
					{ echo "FAIL: '$l' not on stderr ($ctx)"; cat "$W/err"; fail=1; }
			done
			continue
		fi
		[ -s "$W/err" ] && { echo "FAIL: stderr not empty ($ctx)"; cat "$W/err"; fail=1; }
		python3 - "$W/out" "$@" <<PY || { echo "FAIL: $ctx"; cat "$W/out"; fail=1; }
import json, sys
d = json.load(open(sys.argv[1]))
assert d["schema"] == 2 and d["version"] == "$ver" and d["verdict"] == "usage-error", d
assert not d["fit"] and d["stage"] == "usage" and d["reason"].startswith("--gpus"), d
for want in sys.argv[2:]:
    assert want in d["reason"], (want, d["reason"])
PY
	done
}
form="write each GPU as a PCI bus id [DDDD:]BB:DD.F in hex"
gbad 0000:8d:00.0,0000:51:00.0,8D:00.0 "entry 3 '8D:00.0' is GPU 0000:8d:00.0 again (entry 1)"
gbad 8d:00.0,0000:8D:00.0 "entry 2 '0000:8D:00.0' is GPU 0000:8d:00.0 again (entry 1)"
gbad 0000:51:00.0,00000000:51:00.0 "entry 2 '00000000:51:00.0' is GPU 0000:51:00.0 again (entry 1)"
gbad 0000:51:00.0,0000:51:00.0 "entry 2 '0000:51:00.0' is GPU 0000:51:00.0 again (entry 1)"
gbad xyz "entry 1 'xyz' is not a PCI bus id" "$form"
gbad 0000:51:00.0,gpu1 "entry 2 'gpu1' is not a PCI bus id" "$form"
gbad "0000:51:00.0, 0000:54:00.0" "entry 2 ' 0000:54:00.0' is not a PCI bus id" "no spaces"
gbad 0000:51:20.0 "entry 1 '0000:51:20.0' is not a PCI bus id" "device 00-1f, function 0-7"
gbad 0000:51:00.0,,0000:54:00.0 "entry 2 is empty (two commas in a row)" "$form"
gbad 0000:51:00.0, "entry 2 is empty (a comma at the end)"
gbad ,0000:51:00.0 "entry 1 is empty (a comma at the start)"
gbad "" "the list is empty" "$form"

exit $fail
