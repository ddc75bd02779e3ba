#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# railnet-doctor's human output, field by field, on the seed cluster's pods judged from outside
# with --ifaddrs (no root or netns needed), plus its usage errors and exit codes: the
# Environment section, the rail line, every "left out" kind (softverbs fault knobs, a spec port
# with state=down, and the fake libibverbs of test/unit for what softverbs cannot report),
# --time, and a libibverbs that cannot be loaded. Then --json in every outcome (issue 16, item
# 3): stdout is one JSON document (read with python3's json module) and nothing else, and
# railnet's WARN/INFO lines go into its "log", never on stdout or stderr: fit, problems, no
# device, bad environment values, no libibverbs, usage errors.
# Usage: doctor_text.sh BUILD_DIR SOURCE_DIR
set -u
B=$1 S=$2
FAB=$B/bin/softverbs-fabric DOC=$B/bin/railnet-doctor LIB=$B/softverbs/libibverbs.so.1
W=$(mktemp -d --tmpdir rn-doctor.XXXXXX)
trap 'rm -rf "$W"' EXIT
fail=0
# doc FIXTURE NODE POD [ENV...] [-- ARG...]: the doctor on the view, output in $W/out and
# $W/err, exit in $rc
doc() {
	local v=$W/$1/$2/$3/view vars=(); shift 3
	while [ $# -gt 0 ] && [ "$1" != -- ]; do vars+=("$1"); shift; done
	[ $# -gt 0 ] && shift
	env RAILNET_SYSFS_ROOT="$v" SOFTVERBS_VIEW="$v" RAILNET_IBVERBS_LIB="$LIB" ${vars[@]+"${vars[@]}"} \
		"$DOC" --ifaddrs "$v/softverbs/ifaddrs" "$@" >"$W/out" 2>"$W/err"
	rc=$?
}
expect() { # exit-code then lines that must appear (grep -F)
	local want=$1; shift
	[ "$rc" = "$want" ] || { echo "FAIL: exit $rc, expected $want ($ctx)"; fail=1; }
	for l in "$@"; do
		grep -qF -- "$l" "$W/out" || { echo "FAIL: '$l' missing ($ctx)"; cat "$W/out"; fail=1; }
	done
}
expect_line() { # whole lines that must appear in $W/out (grep -xF)
	for l in "$@"; do
		grep -qxF -- "$l" "$W/out" || { echo "FAIL: line '$l' missing ($ctx)"; cat "$W/out"; fail=1; }
	done
}
expect_err() { # text that must appear on stderr
	for l in "$@"; do
		grep -qF -- "$l" "$W/err" || { echo "FAIL: '$l' not on stderr ($ctx)"; cat "$W/err"; fail=1; }
	done
}
# expect_json EXIT PY: stdout is exactly one JSON document (json.load reads all of it), with
# "schema" 2 and the version; PY asserts on it (d); railnet's and the doctor's own lines are not
# on stderr (what softverbs itself prints there may be)
expect_json() {
	local want=$1 py=$2
	[ "$rc" = "$want" ] || { echo "FAIL: exit $rc, expected $want ($ctx)"; cat "$W/err"; fail=1; }
	if ! python3 - "$W/out" <<PY
import json, sys
d = json.load(open(sys.argv[1]))
assert isinstance(d, dict) and d["schema"] == 2 and d["version"] == "$ver", d
assert d["fit"] == (d["verdict"] == "fit"), d["verdict"]
assert isinstance(d["log"], list) and isinstance(d["problems"], list), d
if d["verdict"] in ("cannot-run", "usage-error"):
    assert d["reason"] and d["stage"] and d["problems"][0]["what"] == d["reason"], d
$py
PY
	then echo "FAIL: $ctx: stdout is not the document expected"; cat "$W/out"; fail=1; fi
	! grep -qE '\[railnet\]|^railnet-doctor:|^usage:' "$W/err" ||
		{ echo "FAIL: railnet's or the doctor's lines on stderr with --json ($ctx)"; cat "$W/err"; fail=1; }
}
expect_not() { # text that must not appear in $W/out
	for l in "$@"; do
		! grep -qF -- "$l" "$W/out" || { echo "FAIL: '$l' present ($ctx)"; cat "$W/out"; fail=1; }
	done
}
for fx in seeds-b4 seeds-b4-aligned linklocal-only; do
	"$FAB" build "$S/test/fixtures/$fx.spec" "$W/$fx" >/dev/null || exit 1
done
: >"$W/empty"
ver=$(sed -n 's/^project(railnet VERSION \([0-9.]*\).*/\1/p' "$S/CMakeLists.txt")
ctx=seeds-b4/train-0; doc seeds-b4 n1 train-0
[ "$(head -1 "$W/out")" = "railnet-doctor $ver" ] || { echo "FAIL: first line is not 'railnet-doctor $ver'"; fail=1; }
expect 0 "Ports (16 usable of 16 device(s) listed)" \
	"mlx5_0 port 1 (rdma0): Ethernet (RoCE), ACTIVE, 100000 Mbps, MTU 4096, pkey 0xffff, numa 0, root 0000:00:01.1" \
	"gid   5 0000:0000:0000:0000:0000:ffff:0ae0:ff01 RoCE v2 10.224.255.1 on net1" \
	"gid   5 0000:0000:0000:0000:0000:ffff:0aef:ff01 RoCE v2 10.239.255.1 on net16" \
	"why   lowest index with a RoCE v2 IPv4 GID of 10.224.255.1, configured on net1" \
	"Left out (0)" "Devices offered to NCCL >= 2.24 (before makeVDevice) (16)" \
	"Devices offered to NCCL < 2.24 (8)" "0 mlx5_0+mlx5_1: 200000 Mbps, 2 port(s)" \
	"ib_core netns    shared" "Verdict: FIT"
[ "$(grep -c '^    gid   5 ' "$W/out")" = 16 ] || { echo "FAIL: not 16 GIDs at 5"; fail=1; }
ctx=seeds-b4/train-1; doc seeds-b4 n2 train-1
expect 0 "gid   5 0000:0000:0000:0000:0000:ffff:0ae0:ff02 RoCE v2 10.224.255.2 on net1" "Verdict: FIT"
ctx=seeds-b4-aligned/job2-0; doc seeds-b4-aligned n1 job2-0
expect 0 "Ports (8 usable of 8 device(s) listed)" "Devices offered to NCCL < 2.24 (4)" \
	"0 mlx5_8+mlx5_9: 200000 Mbps, 2 port(s)" "Verdict: FIT"
ctx=seeds-b4/wrong-index; doc seeds-b4 n1 train-0 NCCL_IB_GID_INDEX=3
expect 1 "[bad-gid-index]: NCCL_IB_GID_INDEX=3: GID 3 of mlx5_0 port 1 is zero" \
	"fix   unset NCCL_IB_GID_INDEX" "Verdict: PROBLEMS"
ctx=seeds-b4/hca; doc seeds-b4 n1 train-0 NCCL_IB_HCA==mlx5_0,mlx5_1
expect 0 "Ports (2 usable of 16 device(s) listed)" "mlx5_2 port 1 (rdma2) [filtered]: NCCL_IB_HCA==mlx5_0,mlx5_1 leaves it out" "Verdict: FIT"
ctx=linklocal-only/pod-ll; doc linklocal-only n1 pod-ll
expect 1 "mlx5_0 port 1 (rdma0) [no-usable-gid]: no usable RoCE v2 IPv4 GID among 16 entries: 14 zero" \
	"problem no usable RDMA port: NCCL would not use railnet" "Verdict: PROBLEMS"
ctx="bad-env"; doc seeds-b4 n1 train-0 NCCL_IB_HCA=mlx5_0:0x
expect 3
# NCCL_IB_HCA entries are prefixes: a note names what else they select or exclude (not a
# problem); '=' makes them exact; a value that leaves out every port is one problem naming it
ctx=hca-prefix; doc seeds-b4 n1 train-0 NCCL_IB_HCA=mlx5_1
expect 0 "Verdict: FIT" "  note    NCCL_IB_HCA entry 'mlx5_1' is a name prefix, as in NCCL: it also selects mlx5_10, mlx5_11, mlx5_12, mlx5_13, mlx5_14, mlx5_15 (6 device(s)); write '=mlx5_1' for that device alone"
ctx=hca-prefix-exclude; doc seeds-b4 n1 train-0 NCCL_IB_HCA=^mlx5_1
expect 0 "it also excludes mlx5_10, mlx5_11" "write '^=mlx5_1' for that device alone"
ctx=hca-exact; doc seeds-b4 n1 train-0 NCCL_IB_HCA==mlx5_1
expect 0 "Verdict: FIT"; expect_not "name prefix"
# the bootstrap interface (NCCL_SOCKET_IFNAME, else the default route's): with --ifaddrs only a
# set NCCL_SOCKET_IFNAME is judged, against the file; without, this network namespace's
ctx=boot-ifaddrs; doc seeds-b4 n1 train-0 NCCL_SOCKET_IFNAME=net2
expect 0 "  bootstrap        net2 10.225.255.1 (NCCL_SOCKET_IFNAME)" "Verdict: FIT"
ctx=boot-ifaddrs-unset; doc seeds-b4 n1 train-0
expect 0 "  bootstrap        not checked: --ifaddrs lists the rail interfaces"
ctx=boot-ifaddrs-bad; doc seeds-b4 n1 train-0 NCCL_SOCKET_IFNAME=bogus0
expect 1 "  bootstrap        none: out-of-band interface: NCCL_SOCKET_IFNAME=bogus0 matches no up interface" \
	"railnet's connections (and NCCL's bootstrap) would fail" "fix   set NCCL_SOCKET_IFNAME to an interface of this pod"
for s in lo bogus0; do
	ctx=boot-live/$s; v=$W/seeds-b4/n1/train-0/view
	env RAILNET_SYSFS_ROOT="$v" SOFTVERBS_VIEW="$v" RAILNET_IBVERBS_LIB="$LIB" NCCL_SOCKET_IFNAME=$s \
		"$DOC" >"$W/out" 2>"$W/err"
	rc=$?
	if [ $s = lo ]; then
		expect 1 "  bootstrap        lo 127.0.0.1 (NCCL_SOCKET_IFNAME)"
		expect_not "out-of-band interface"
	else
		expect 1 "  problem out-of-band interface: NCCL_SOCKET_IFNAME=bogus0 matches no up interface"
	fi
done
# one cause, one line: a wrong NCCL_IB_GID_INDEX on 16 rails is one WARN from the plugin and
# one problem from the doctor, each naming the other 15 ports (details per port: Left out)
ctx=gid-index-16; doc seeds-b4 n1 train-0 NCCL_IB_GID_INDEX=3
expect 1 "  problem mlx5_0 port 1 (rdma0): NCCL_IB_GID_INDEX=3: GID 3 of mlx5_0 port 1 is zero" \
	"likewise 15 more (each under Left out): mlx5_1 port 1 (rdma1), mlx5_10 port 1 (rdma10)"
[ "$(grep -c '^  problem ' "$W/out")" = 2 ] || { echo "FAIL: $ctx: not 2 problems"; cat "$W/out"; fail=1; }
[ "$(grep -c 'NCCL WARN' "$W/err")" = 1 ] || { echo "FAIL: $ctx: not 1 WARN"; cat "$W/err"; fail=1; }
grep -q "not used: NCCL_IB_GID_INDEX=3: .*; likewise 15 more: mlx5_1 port 1" "$W/err" ||
	{ echo "FAIL: $ctx: the WARN does not name the others"; cat "$W/err"; fail=1; }
[ "$(grep -c '\[bad-gid-index\]' "$W/out")" = 16 ] || { echo "FAIL: $ctx: Left out lacks ports"; fail=1; }
ctx=hca-none; doc seeds-b4 n1 train-0 NCCL_IB_HCA=mlx5_99
expect 1 "  problem NCCL_IB_HCA=mlx5_99 leaves out every port of this pod (16): NCCL would not use railnet"
expect_not "problem no usable RDMA port"

# ---- Environment: the verbs library, the sysfs root, the memlock limit, the effective
# capabilities (CapEff and the names railnet cares about) and every NCCL_*/RAILNET_* variable
# set, in environment order; decoys that only look alike are not listed
ctx=environment; v=$W/seeds-b4/n1/train-0/view
kb=1024
hard=$(ulimit -H -l)
[ "$hard" != unlimited ] && [ "$hard" -lt "$kb" ] && kb=$hard
vars=(RAILNET_SYSFS_ROOT="$v" SOFTVERBS_VIEW="$v" RAILNET_IBVERBS_LIB="$LIB" NCCL_IB_TIMEOUT=22
	RAILNET_MERGE=ports NCCLX_DECOY=1 MY_RAILNET_DECOY=1 RAILNETX=1)
(ulimit -S -l "$kb" && env "${vars[@]}" "$DOC" --ifaddrs "$v/softverbs/ifaddrs" >"$W/out" 2>"$W/err")
rc=$?
want_vars="  variables       "
while IFS= read -r e; do want_vars+=" $e"; done < <(env "${vars[@]}" env | grep -E '^(NCCL|RAILNET)_')
capeff=$(sed -n 's/^CapEff:[[:space:]]*//p' /proc/self/status) # a sibling: the same credentials
want_caps="  capabilities     CapEff=$capeff"
for c in 12:CAP_NET_ADMIN 13:CAP_NET_RAW 14:CAP_IPC_LOCK 21:CAP_SYS_ADMIN 38:CAP_PERFMON; do
	(((0x$capeff >> ${c%%:*}) & 1)) && want_caps+=" ${c#*:}"
done
expect 0 "Environment"
expect_line "  verbs library    $LIB" "  sysfs root       $v" "  ib_core netns    shared" \
	"  memlock          $((kb * 1024)) bytes" "$want_caps" "$want_vars"
for l in " NCCL_IB_TIMEOUT=22" " RAILNET_MERGE=ports" " RAILNET_SYSFS_ROOT=$v"; do
	grep -F -- "$want_vars" "$W/out" | grep -qF -- "$l" || { echo "FAIL: '$l' not among the variables"; fail=1; }
done
expect_not "DECOY" "RAILNETX" "SOFTVERBS_VIEW="
# a limit below 64 MiB is a problem only without CAP_IPC_LOCK
if (((0x$capeff >> 14) & 1)); then
	expect_not "memlock limit is"
else
	expect "problem memlock limit is $((kb * 1024)) bytes: RDMA memory registration would fail"
fi
ctx=environment-unlimited
if (ulimit -l unlimited) 2>/dev/null; then
	(ulimit -l unlimited && doc seeds-b4 n1 train-0; exit "$rc"); rc=$?
	expect 0 "Verdict: FIT"; expect_line "  memlock          unlimited"
else
	echo "note: memlock cannot be raised to unlimited here (hard limit $hard KiB): 'memlock unlimited' not checked"
fi

# ---- the rail line: the id and subnet of the port's GID; NCCL_IB_HCA's rail and plane; or
# undefined, with why (netmask unknown: --ifaddrs without prefixes; one subnet for all ports)
ctx=rail/subnet; doc seeds-b4 n1 train-0
expect 0 "    rail  2784 (10.224.0.0/16: the subnet of the port's GID)" \
	"    rail  2799 (10.239.0.0/16: the subnet of the port's GID)"
[ "$(grep -c "^    rail  " "$W/out")" = 16 ] || { echo "FAIL: not 16 rail lines"; fail=1; }
expect_not "    plane "
ctx=rail/hca; doc seeds-b4 n1 train-0 NCCL_IB_HCA==mlx5_0:1:4:2,mlx5_1:1
expect 0 "Ports (2 usable of 16 device(s) listed)" "    rail  4 (NCCL_IB_HCA: given by NCCL_IB_HCA)" \
	"    plane 2 (given by NCCL_IB_HCA)" "    rail  2785 (10.225.0.0/16: the subnet of the port's GID)"
[ "$(grep -c "^    plane " "$W/out")" = 1 ] || { echo "FAIL: a plane without NCCL_IB_HCA's"; fail=1; }
ifa=$W/seeds-b4/n1/train-0/view/softverbs/ifaddrs
ctx=rail/no-netmask; sed 's#/[0-9]*$##' "$ifa" >"$W/ifa-noprefix"
doc seeds-b4 n1 train-0 -- --ifaddrs "$W/ifa-noprefix"
expect 0 "    rail  undefined (the netmask of the GID's address is unknown)"
[ "$(grep -c "^    rail  undefined" "$W/out")" = 16 ] || { echo "FAIL: not 16 undefined rails"; fail=1; }
ctx=rail/one-subnet; sed 's#/16$#/8#' "$ifa" >"$W/ifa-slash8"
doc seeds-b4 n1 train-0 -- --ifaddrs "$W/ifa-slash8"
expect 0 "    rail  undefined (every port of this pod is in the same subnet, so the subnet does not tell rails apart (set NCCL_IB_HCA=dev:port:rail))"
[ "$(grep -c "^    rail  undefined" "$W/out")" = 16 ] || { echo "FAIL: not 16 undefined rails"; fail=1; }

# ---- left out: cannot-open, query-failed (device and port), port-down, link-layer,
# no-usable-port; each a problem, with why (and fix where there is one)
ctx=left-out/cannot-open; doc seeds-b4 n1 train-0 SOFTVERBS_FAIL=ibv_open_device:1:EACCES
expect 1 "Ports (15 usable of 16 device(s) listed)" "Left out (1)" \
	"  mlx5_0 [cannot-open]: cannot open (Permission denied)" \
	"    fix   the pod must be given the device (RDMA device plugin resource) so that its /dev/infiniband/uverbs* node is accessible" \
	"  problem mlx5_0: cannot open (Permission denied)" "Verdict: PROBLEMS"
ctx=left-out/query-device; doc seeds-b4 n1 train-0 SOFTVERBS_FAIL=ibv_query_device:1:EIO
expect 1 "Ports (15 usable of 16 device(s) listed)" \
	"  mlx5_0 [query-failed]: query_device failed (Input/output error)" \
	"  problem mlx5_0: query_device failed (Input/output error)"
ctx=left-out/query-port; doc seeds-b4 n1 train-0 SOFTVERBS_FAIL=ibv_query_port:1:EIO
expect 1 "Ports (15 usable of 16 device(s) listed)" \
	"  mlx5_0 port 1 (rdma0) [query-failed]: query_port failed (Input/output error)" \
	"  problem mlx5_0 port 1 (rdma0): query_port failed (Input/output error)"
# a port whose link is down (the spec's state=down: the view's ports/1/state reads "1: DOWN")
cat >"$W/down.spec" <<'SPEC'
rail r0 subnet=10.224.0.0/16
rail r1 subnet=10.225.0.0/16
node n1
	numa 0 cpus=0-7 memory_gb=64
	root r0 port=0000:00:01.1 numa=0
	nic mlx5_0 pci=0000:0c:00.0 root=r0 guid=b8ce:f603:00a1:2b00
		port 1 link=Ethernet rate=100 netdev=rdma0 rail=r0 addr=10.224.0.1
	nic mlx5_1 pci=0000:0c:00.1 root=r0 guid=b8ce:f603:00a1:2b01
		port 1 link=Ethernet rate=100 netdev=rdma1 rail=r1 addr=10.225.0.1 state=down
	pod pod-a nics=mlx5_0,mlx5_1
		iface net1 type=ipvlan parent=rdma0 addr=10.224.255.1
		iface net2 type=ipvlan parent=rdma1 addr=10.225.255.1
SPEC
"$FAB" build "$W/down.spec" "$W/down" >/dev/null || { echo "FAIL: build down.spec"; exit 1; }
ctx=left-out/port-down; doc down n1 pod-a
expect 1 "Ports (1 usable of 2 device(s) listed)" "  mlx5_0 port 1 (rdma0): Ethernet (RoCE), ACTIVE" \
	"  mlx5_1 port 1 (rdma1) [port-down]: port state 1 is not ACTIVE" \
	"    fix   check the link (cable, switch port, \`ibv_devinfo\`)" \
	"  problem mlx5_1 port 1 (rdma1): port state 1 is not ACTIVE"
# what softverbs cannot report (it skips such devices): the fake libibverbs of test/unit
# (test/unit/fake_verbs_lib.c), whose one device fake0 has FAKE_VERBS_PORTS ports of
# FAKE_VERBS_LINK_LAYER (0: IBV_LINK_LAYER_UNSPECIFIED)
fake=$B/test/fake/libfake_verbs_opt.so
ctx=left-out/link-layer
env RAILNET_IBVERBS_LIB="$fake" FAKE_VERBS_LINK_LAYER=0 "$DOC" --ifaddrs "$W/empty" >"$W/out" 2>"$W/err"
rc=$?
expect 1 "Ports (0 usable of 1 device(s) listed)" "Left out (2)" \
	"  fake0 port 1 [link-layer]: link layer 0 is neither InfiniBand nor Ethernet" \
	"  fake0 port 2 [link-layer]: link layer 0 is neither InfiniBand nor Ethernet" \
	"  problem fake0 port 1: link layer 0 is neither InfiniBand nor Ethernet" \
	"  problem no usable RDMA port: NCCL would not use railnet"
ctx=left-out/no-usable-port
env RAILNET_IBVERBS_LIB="$fake" FAKE_VERBS_PORTS=0 "$DOC" --ifaddrs "$W/empty" >"$W/out" 2>"$W/err"
rc=$?
expect 1 "Ports (0 usable of 1 device(s) listed)" "Left out (1)" \
	"  fake0 [no-usable-port]: the device has no port" "  problem fake0: the device has no port"

# ---- --time N: discovery with GID choice N times, min <= median <= max, exit 0 even where the
# pod has problems (it judges nothing)
ctx="time"; doc seeds-b4 n1 train-0 -- --time 3
expect 0 "init: libibverbs load " "; discovery + GID choice of 16 port(s): min "
t=$(sed -n 's/.*: min \([0-9.]*\) ms, median \([0-9.]*\) ms, max \([0-9.]*\) ms over 3 runs$/\1 \2 \3/p' "$W/out")
awk 'NF == 3 && $1 <= $2 && $2 <= $3 { ok = 1 } END { exit !ok }' <<<"$t" ||
	{ echo "FAIL: no min <= median <= max over 3 runs ($ctx)"; cat "$W/out"; fail=1; }
[ "$(wc -l <"$W/out")" = 1 ] || { echo "FAIL: --time printed more than its line"; cat "$W/out"; fail=1; }
ctx=time-problems; doc linklocal-only n1 pod-ll -- --time 2
expect 0 "discovery + GID choice of 0 port(s): min " " over 2 runs"

# ---- libibverbs cannot be loaded: exit 3 (could not run) and one line naming the library, text and --time
# alike (--json: below); nothing on stdout claims the pod is fit
for mode in text --time; do
	ctx=no-libibverbs/$mode
	args=(--ifaddrs "$W/seeds-b4/n1/train-0/view/softverbs/ifaddrs")
	[ "$mode" = --json ] && args+=(--json)
	[ "$mode" = --time ] && args+=(--time 2)
	env RAILNET_IBVERBS_LIB=/nonexistent/libibverbs.so.1 "$DOC" "${args[@]}" >"$W/out" 2>"$W/err"
	rc=$?
	expect 3
	expect_err "/nonexistent/libibverbs.so.1" "railnet-doctor: cannot load libibverbs"
	expect_not '"fit":true' "Verdict: FIT" "discovery + GID choice"
done

# ---- --json in every outcome: one document on stdout, nothing else; railnet's log lines in it
command -v python3 >/dev/null || { echo "FAIL: python3 not found (the --json checks need it)"; exit 1; }
ctx=json/fit; doc seeds-b4 n1 train-0 -- --json
expect_json 0 "
assert d['verdict'] == 'fit' and len(d['ports']) == 16 and d['log'] == [] and d['log_dropped'] == 0
assert [p['netdev'] for p in d['ports']][:2] == ['rdma0', 'rdma1'], [p['netdev'] for p in d['ports']]"
ctx=json/hca-note; doc seeds-b4 n1 train-0 NCCL_IB_HCA=mlx5_1 -- --json
expect_json 0 "
assert d['verdict'] == 'fit' and len(d['notes']) == 1 and 'name prefix' in d['notes'][0], d['notes']"
ctx=json/problems; doc linklocal-only n1 pod-ll -- --json
expect_json 1 "
assert d['verdict'] == 'problems' and d['ports'] == []
assert any('no usable RDMA port' in p['what'] for p in d['problems']), d['problems']"
# WARN and INFO lines while the doctor runs (NCCL_DEBUG=INFO, an unknown RAILNET_ variable):
# in the document's log, not on stdout around it, not on stderr
ctx=json/log; doc seeds-b4 n1 train-0 NCCL_DEBUG=INFO RAILNET_MERGEE=ports -- --json
expect_json 0 "
lv = [(l['level'], l['message']) for l in d['log']]
assert any(l == 'WARN' and m.startswith('NET/railnet : RAILNET_MERGEE: unknown variable') for l, m in lv), lv
assert any(l == 'INFO' for l, m in lv), lv
assert all(m.startswith('NET/railnet : ') for l, m in lv), lv"
[ -s "$W/err" ] && { echo "FAIL: stderr not empty ($ctx)"; cat "$W/err"; fail=1; }
ctx=text/log; doc seeds-b4 n1 train-0 RAILNET_MERGEE=ports
expect 0 "Verdict: FIT"; expect_err "[railnet] NCCL WARN NET/railnet : RAILNET_MERGEE: unknown variable"
# no RDMA device at all (a view without class/infiniband): a document with the problem
ctx=json/no-device; mkdir -p "$W/bare"
env RAILNET_SYSFS_ROOT="$W/bare" SOFTVERBS_VIEW="$W/bare" RAILNET_IBVERBS_LIB="$LIB" \
	"$DOC" --json --ifaddrs "$W/empty" >"$W/out" 2>"$W/err"
rc=$?
expect_json 1 "
assert d['verdict'] == 'problems' and d['devices_listed'] == 0 and d['ports'] == []
assert d['problems'][0]['what'] == 'no RDMA device is visible to this process', d['problems']"
# a bad environment value: railnet's init would fail, so the doctor cannot judge the pod
for bad in NCCL_IB_TIMEOUT=abc RAILNET_MERGE=bogus NCCL_IB_HCA=mlx5_0:0x; do
	ctx=json/bad-env/$bad; doc seeds-b4 n1 train-0 "$bad" -- --json
	expect_json 3 "
assert d['verdict'] == 'cannot-run' and d['stage'] == 'environment' and not d['fit'], d
assert d['reason'].startswith('the environment holds a bad value') and '$bad' in d['reason'], d['reason']
assert d['fix'] and 'docs/env.md' in d['fix'] and d['alignment'] is None
assert d['environment']['variables']['${bad%%=*}'] == '${bad#*=}', d['environment']
assert [l['level'] for l in d['log']] == ['WARN'] and '$bad' in d['log'][0]['message'], d['log']"
	ctx=text/bad-env/$bad; doc seeds-b4 n1 train-0 "$bad"
	expect 3; expect_not "Verdict"
	expect_err "WARN NET/railnet : $bad" "railnet-doctor: the environment holds a bad value"
done
ctx=json/no-libibverbs; doc seeds-b4 n1 train-0 RAILNET_IBVERBS_LIB=/nonexistent/libibverbs.so.1 -- --json
expect_json 3 "
assert d['verdict'] == 'cannot-run' and d['stage'] == 'libibverbs' and not d['fit'], d
assert d['reason'].startswith('cannot load libibverbs') and '/nonexistent/libibverbs.so.1' in d['reason'], d['reason']
assert 'RAILNET_IBVERBS_LIB' in d['fix']"
[ -s "$W/err" ] && { echo "FAIL: stderr not empty ($ctx)"; cat "$W/err"; fail=1; }
# usage errors with --json (anywhere, or abbreviated): a document too, exit 2, stderr empty
for args in "--bogus --json" "--json extra" "--time 0 --json" "--time 2 --json" "--jso --gpus xyz" \
	"--json --ifaddrs /nonexistent" "--json --gpus 0000:51:00.0,51:00.0"; do
	ctx="json/usage/$args"
	# shellcheck disable=SC2086 # the words of $args are the arguments
	"$DOC" $args >"$W/out" 2>"$W/err"
	rc=$?
	expect_json 2 "
assert d['verdict'] == 'usage-error' and d['stage'] == 'usage' and not d['fit'], d
assert d['alignment'] is None and d['fix'], d"
	[ -s "$W/err" ] && { echo "FAIL: stderr not empty ($ctx)"; cat "$W/err"; fail=1; }
done
ctx=usage; "$DOC" --bogus >/dev/null 2>&1; rc=$?; expect 2
ctx=version; "$DOC" --version >"$W/out"; rc=$?; expect 0 "railnet-doctor $ver (git " ", built "
ctx=usage-arg; "$DOC" extra >/dev/null 2>&1; rc=$?; expect 2
ctx=usage-time; "$DOC" --time 0 >/dev/null 2>&1; rc=$?; expect 2
ctx=help; "$DOC" --help >"$W/out"; rc=$?; expect 0 "usage: railnet-doctor" "--json" \
	"min, median and max time, then exit 0"
ctx=ifaddrs-missing; "$DOC" --ifaddrs /nonexistent >/dev/null 2>&1; rc=$?; expect 2
# an empty address list is a pod with no rail address, not "use the doctor's own namespace"
ctx=ifaddrs-empty; v=$W/seeds-b4/n1/train-0/view
env RAILNET_SYSFS_ROOT="$v" SOFTVERBS_VIEW="$v" RAILNET_IBVERBS_LIB="$LIB" \
	"$DOC" --ifaddrs "$W/empty" >"$W/out" 2>"$W/err"
rc=$?
expect 1 "Ports (0 usable of 16 device(s) listed)"
[ $fail = 0 ] && echo "ok: doctor text output and exit codes"
exit $fail
