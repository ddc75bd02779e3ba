#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# railnet-doctor's busbw prediction against the field's measurements (issue 16, item 1; the
# model is docs/doctor.md's "Predicted busbw"): for each calibration point the pod is built as a
# softverbs fixture, and the band the doctor predicts must contain what the field measured and
# be no wider than +-25% around its middle. Then the model's inputs one at a time (a GPU's and a
# NIC's PCIe link, GPUDirect RDMA off), the PCIe links in the views, and the verdicts that are
# not misalignment: a hostNetwork pod with a front-end NIC, and the fixes that apply outside
# Kubernetes or where the Topology Manager cannot align. Judged from outside the pods
# (--ifaddrs): no root, no netns.
# Usage: doctor_calibration.sh BUILD_DIR SOURCE_DIR
set -u
B=$1 S=$2
FAB=$B/bin/softverbs-fabric DOC=$B/bin/railnet-doctor LIB=$B/softverbs/libibverbs.so.1
for f in "$FAB" "$DOC" "$LIB"; do
	[ -e "$f" ] || { echo "FAIL: $f is not built"; exit 1; }
done
command -v python3 >/dev/null || { echo "SKIP: python3 not found"; exit 77; }
W=$(mktemp -d --tmpdir rn-calib.XXXXXX)
trap 'rm -rf "$W"' EXIT
fail=0

build() { # NAME SPEC: build the fixture once into $W/NAME
	[ -d "$W/$1" ] && return 0
	"$FAB" build "$2" "$W/$1" >/dev/null || { echo "FAIL: build $1"; fail=1; return 1; }
}

# doc NAME NODE POD MODE [ENV...] -> $W/out, $W/err, $rc. The node has nvidia-peermem (as the
# field's nodes had) unless NOPEER=1; the pod's GPUs come from its env file; it is a Kubernetes
# pod unless KUBERNETES_SERVICE_HOST= is passed.
doc() {
	local name=$1 node=$2 pod=$3 mode=$4; shift 4
	local v=$W/$name/$node/$pod/view list
	if [ "${NOPEER:-0}" = 1 ]; then
		rm -rf "$v/module/nvidia_peermem"
	else
		mkdir -p "$v/module/nvidia_peermem" && echo 535.104.05 >"$v/module/nvidia_peermem/version"
	fi
	list=$(sed -n "s/^export SOFTVERBS_GPUS='\(.*\)'$/\1/p" "$W/$name/$node/$pod/env")
	local args=(--ifaddrs "$v/softverbs/ifaddrs" --gpus "$list")
	[ "$mode" = json ] && args+=(--json)
	env -u NVIDIA_VISIBLE_DEVICES -u CUDA_VISIBLE_DEVICES -u NCCL_SOCKET_IFNAME \
		RAILNET_SYSFS_ROOT="$v" SOFTVERBS_VIEW="$v" RAILNET_IBVERBS_LIB="$LIB" \
		KUBERNETES_SERVICE_HOST=10.96.0.1 RAILNET_TOPO_XML="$W/$name/$node/topo.xml" "$@" \
		"$DOC" "${args[@]}" >"$W/out" 2>"$W/err"
	rc=$?
}

judge() { # CONTEXT PYTHON (d: the document, a: its alignment, b: a's busbw_gbs)
	python3 - "$W/out" "$rc" <<PY || { echo "FAIL: $1"; head -c 2000 "$W/err"; fail=1; return; }
import json, sys
d = json.load(open(sys.argv[1]))
a = d["alignment"]
b = a["busbw_gbs"]
probs = " | ".join(p["what"] + " FIX " + (p["fix"] or "") for p in d["problems"])
notes = " | ".join(d.get("notes", []))
assert int(sys.argv[2]) == (0 if d["fit"] else 1), ("exit", sys.argv[2], d["verdict"])
$2
PY
	echo "ok: $1"
}

expect_text() { # CONTEXT lines that must appear (grep -F)
	local ctx=$1 l; shift
	for l in "$@"; do
		grep -qF -- "$l" "$W/out" || { echo "FAIL: '$l' missing ($ctx)"; cat "$W/out"; fail=1; }
	done
}

# ---- the calibration points: fixture node pod, field low and high (GB/s), what it was
points=(
	"seeds-b4 n1 train-0 189.15 190.75 (a) 8 x A100 Gen4, 16 x 100 GbE RoCE, aligned"
	"h100-ndr h1 h100-0 324.21 327.76 (b) 8 x H100 Gen5, 8 x 400G NDR InfiniBand"
	"seeds-b4-misaligned n1 job1-0 26.95 26.95 (c) 4-GPU/8-PF pod, 3 PFs near 2 GPUs, 2 GPUs with none"
	"seeds-b4-half n1 half-0 56.03 58.84 (c) 4-GPU/8-PF pod, one near PF per GPU"
	"seeds-b4-aligned n1 job1-0 96.29 96.64 (c) the same pods aligned by Topology Manager"
	"seeds-b4-far n1 far-0 4.27 5.77 (d) no GPU shares a root with any PF"
)
printf '%-58s %-15s %-15s %s\n' "calibration point" "field GB/s" "predicted GB/s" "+-%"
for p in "${points[@]}"; do
	read -r fx node pod lo hi what <<<"$p"
	build "$fx" "$S/test/fixtures/$fx.spec" || continue
	doc "$fx" "$node" "$pod" json
	judge "calibration $what" "
lo, hi = $lo, $hi
assert b['low'] <= lo and hi <= b['high'], ('band misses the field', b, lo, hi)
half = (b['high'] - b['low']) / (b['high'] + b['low'])
assert half <= 0.25, ('band wider than +-25%', b, half)
print('%-58s %-15s %-15s %.0f' % ('''$what'''[:58], '%.2f-%.2f' % (lo, hi),
      '%.1f-%.1f' % (b['low'], b['high']), half * 100))"
	doc "$fx" "$node" "$pod" text
	expect_text "calibration $what/text" "    basis            "
done

# ---- regimes and their sentences
doc seeds-b4-misaligned n1 job1-0 json
judge "regime: paced by a GPU without GPUDirect" "
assert b['regime'] == 'paced-by-host-memory', b
assert 'GPU 2 (host GPU 4, 0000:8d:00.0) has no GPUDirect rail' in b['basis'], b['basis']
g = a['gpus']
assert g[2]['busbw_gbs']['high'] < g[0]['busbw_gbs']['low'], g   # the GPU that paces"
doc seeds-b4-far n1 far-0 json
judge "regime: staged across the CPU" "
assert b['regime'] == 'staged-across-cpu' and 'no GPU has a rail within PXB' in b['basis'], b"
NOPEER=1 doc seeds-b4-aligned n1 job1-0 json
judge "GPUDirect RDMA off: host memory, said so, the same words everywhere" "
assert not a['gdr']['available'] and a['gpudirect'] == [] and len(a['host_memory']) == 8, a
assert all(g['gpudirect'] == [] and len(g['within_level']) == 4 for g in a['gpus']), a['gpus']
assert b['regime'] == 'paced-by-host-memory' and 'GPUDirect RDMA is unavailable' in b['basis'], b
assert b['high'] < 0.3 * b['aligned'], b
assert a['verdict'] == 'aligned' and 'every rail moves GPU data through host memory' in probs, probs"
NOPEER=1 doc seeds-b4-aligned n1 job1-0 text
expect_text gdr-off/text "GPUDirect rails    none (0 of 8): GPUDirect RDMA unavailable" \
	"    GPUDirect        none: GPUDirect RDMA unavailable (rdma0, rdma1, rdma2, rdma3 within PXB)" \
	"alignment          aligned (by topology; GPUDirect RDMA is unavailable: see the problems)"

# ---- PCIe links: a GPU link that limits, then a NIC link shared by its functions
sed 's/\(gpu .*\)pcie=gen5x16/\1pcie=gen4x16/' "$S/test/fixtures/h100-ndr.spec" >"$W/h100-gen4.spec"
build h100-gen4 "$W/h100-gen4.spec"
doc h100-gen4 h1 h100-0 json
judge "a Gen4 x16 GPU link caps an NDR rail" "
assert a['gpus'][0]['pcie'] == {'gen': 4, 'width': 16, 'gbs': 31.5}, a['gpus'][0]['pcie']
assert abs(b['low'] - 201.6) < 0.2 and abs(b['high'] - 226.9) < 0.2, b   # 8 x 31.5 x 0.80-0.90
assert 'PCIe Gen4 x16 (31.5 GB/s) is the limit' in b['basis'], b['basis']"
sed 's/\(nic .*\)pcie=gen5x16/\1pcie=gen4x8/' "$S/test/fixtures/h100-ndr.spec" >"$W/h100-nicx8.spec"
build h100-nicx8 "$W/h100-nicx8.spec"
doc h100-nicx8 h1 h100-0 json
judge "a Gen4 x8 NIC link caps its rail" "
r = a['rails'][0]
assert r['pcie'] == {'gen': 4, 'width': 8, 'gbs': 15.8} and r['path'] == 'PIX', r
assert abs(b['low'] - 100.8) < 0.2 and abs(b['high'] - 113.4) < 0.2, b   # 8 x 15.75 x 0.80-0.90"
# the views carry the links as sysfs and hwloc show them
v=$W/h100-nicx8/h1/h100-0/view
if [ "$(cat "$v/bus/pci/devices/0000:1a:00.0/current_link_speed")" != "32.0 GT/s PCIe" ] ||
	[ "$(cat "$v/bus/pci/devices/0000:1e:00.0/current_link_width")" != 8 ] ||
	! grep -q 'pci_busid="0000:1a:00.0" .*pci_link_speed="63.015385"' "$W/h100-nicx8/h1/topo.xml"; then
	echo "FAIL: PCIe links in the view or topo.xml"; fail=1
fi
printf 'node n\n\tnuma 0 cpus=0\n\troot r port=0000:00:01.1 numa=0\n\tgpu g pci=0000:01:00.0 root=r pcie=gen7x16\n' >"$W/bad.spec"
"$FAB" check "$W/bad.spec" >"$W/out" 2>&1 && { echo "FAIL: pcie=gen7x16 accepted"; fail=1; }
grep -qF "pcie=gen7x16: expected gen<1-6>x<lanes>" "$W/out" || { echo "FAIL: pcie error"; cat "$W/out"; fail=1; }

# ---- a hostNetwork pod with 4 of 8 GPUs on a node with a front-end NIC: fit, not unalignable
build hostnet-frontend "$S/test/fixtures/hostnet-frontend.spec"
doc hostnet-frontend n1 train-0 json NCCL_SOCKET_IFNAME=eno1
judge "hostNetwork + front-end NIC: aligned, the rest named for what it is" "
assert a['hostnetwork'] and a['verdict'] == 'aligned' and d['fit'], (a['verdict'], probs)
assert a['front_end'] == ['eno1'], a['front_end']
assert a['other_gpus'] == ['rdma%d' % i for i in range(8, 16)], a['other_gpus']
assert a['gpudirect'] == ['rdma%d' % i for i in range(8)] and a['host_memory'] == [], a
roles = {r['device']: r['role'] for r in a['rails']}
assert roles['mlx5_16'] == 'front-end' and roles['mlx5_9'] == 'other-gpus' and roles['mlx5_0'] == 'rail'
assert (b['low'], b['high']) == (78.0, 97.0), b
assert not a['topology_manager_applies'] and 'restricted' not in probs + notes, notes
assert 'front-end NIC, not a rail (NCCL_IB_HCA=^=mlx5_16' in notes, notes
assert 'NCCL_IB_HCA=^=mlx5_8,mlx5_9,mlx5_10,mlx5_11,mlx5_12,mlx5_13,mlx5_14,mlx5_15' in notes, notes"
doc hostnet-frontend n1 train-0 text NCCL_SOCKET_IFNAME=eno1
expect_text hostnet/text "  front-end          mlx5_16 port 1 (eno1): the bootstrap interface" \
	"  other GPUs' rails  rdma8, rdma9" "alignment          aligned" "Verdict: FIT"

# every rail some GPU's GPUDirect rail, one GPU with none: that GPU stages through host
# memory over the same rails (the band is not 0)
sed -e 's/pod job1-0 gpus=gpu0,gpu1,gpu2,gpu3 /pod job1-0 gpus=gpu0,gpu1,gpu2,gpu4 /' \
	-e 's/pod job2-0 gpus=gpu4,gpu5,gpu6,gpu7 /pod job2-0 gpus=gpu3,gpu5,gpu6,gpu7 /' \
	"$S/test/fixtures/seeds-b4-aligned.spec" >"$W/lonely.spec"
build lonely "$W/lonely.spec"
doc lonely n1 job1-0 json
judge "one GPU without a GPUDirect rail while every rail is one: staged, not 0" "
assert a['host_memory'] == [] and a['gpus'][3]['gpudirect'] == [], a
assert b['regime'] == 'paced-by-host-memory' and 0 < b['low'] < b['high'], b
assert a['gpus'][3]['busbw_gbs']['low'] > 0, a['gpus'][3]
assert b['basis'].startswith('GPU 3 (host GPU 4, 0000:8d:00.0) has no GPUDirect rail'), b
assert a['verdict'] == 'misaligned' and 'GPU 3 (host GPU 4, 0000:8d:00.0) has no GPUDirect' in probs, probs"

# hostNetwork on a node whose NICs are all far from the pod's GPUs: every rail is the pod's,
# staged across the CPU, and that is the problem (not "no rail", not FIT)
awk '/nic mlx5_[0-7] / { skip = 2 } skip > 0 { skip--; next } { print }' \
	"$S/test/fixtures/hostnet-frontend.spec" >"$W/hostfar.spec"
build hostfar "$W/hostfar.spec"
doc hostfar n1 train-0 json NCCL_SOCKET_IFNAME=eno1
judge "hostNetwork, no NIC near any of its GPUs: misaligned, staged" "
assert a['hostnetwork'] and a['other_gpus'] == [] and a['front_end'] == ['eno1'], a
assert len(a['host_memory']) == 8 and b['regime'] == 'staged-across-cpu', b
assert a['verdict'] == 'misaligned' and not d['fit'], a['verdict']
assert 'no RDMA NIC of this node is within PXB of GPU 0 (host GPU 0' in probs, probs
assert 'Topology Manager' not in probs, probs"

# ---- the fix that applies: outside Kubernetes, and where NUMA nodes span roots
doc seeds-b4-misaligned n1 job1-0 json KUBERNETES_SERVICE_HOST=
judge "misaligned outside Kubernetes: no kubelet advice" "
assert a['verdict'] == 'misaligned' and not a['topology_manager_applies'], a['verdict']
assert 'Topology Manager' not in probs and 'CUDA_VISIBLE_DEVICES' in probs, probs
assert a['request'] == ['rdma7', 'rdma8', 'rdma9', 'rdma10', 'rdma11'], a['request']"
# every root on NUMA node 0: the Topology Manager would call any choice aligned
sed 's/\(root .*\)numa=[0-9]/\1numa=0/' "$S/test/fixtures/seeds-b4-misaligned.spec" >"$W/onenuma.spec"
build onenuma "$W/onenuma.spec"
doc onenuma n1 job1-0 json
judge "misaligned where NUMA does not imply the root: DRA or per-root resources" "
assert a['verdict'] == 'misaligned' and not a['topology_manager_applies'], a['verdict']
assert 'the Topology Manager cannot fix this (it aligns by NUMA node, and NUMA node 0 holds' in probs, probs
assert 'pciAddresses' in probs and 'pcieRoot' in probs and 'restricted' not in probs, probs
assert len(d['problems']) == 1, probs"
# 16 PFs for 4 GPUs with a Topology Manager that could align: it rejects; without Kubernetes
# that is no verdict of its own
build seeds-b4-4gpu16pf "$S/test/fixtures/seeds-b4-4gpu16pf.spec"
doc seeds-b4-4gpu16pf n1 wide-0 json KUBERNETES_SERVICE_HOST=
judge "16 PFs outside Kubernetes: misaligned, not unalignable" "
assert a['verdict'] == 'misaligned' and 'rejects' not in probs, (a['verdict'], probs)"

exit $fail
