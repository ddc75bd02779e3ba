#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# railnet-doctor's human output, field by field, on the seed cluster's pods judged from outside
# with --ifaddrs (no root or netns needed), plus its usage errors and exit codes.
# Usage: doctor_text.sh BUILD_DIR SOURCE_DIR
set -u
B=$1 S=$2
FAB=$B/bin/softverbs-fabric DOC=$B/bin/railnet-doctor LIB=$B/softverbs/libibverbs.so.1
W=$(mktemp -d /tmp/rn-doctor.XXXXXX)
trap 'rm -rf "$W"' EXIT
fail=0
doc() { # fixture node pod -> runs the doctor on the view, output in $W/out, exit in $rc
	local v=$W/$1/$2/$3/view; shift 3
	env RAILNET_SYSFS_ROOT="$v" SOFTVERBS_VIEW="$v" RAILNET_IBVERBS_LIB="$LIB" "$@" \
		"$DOC" --ifaddrs "$v/softverbs/ifaddrs" >"$W/out" 2>"$W/err"
	rc=$?
}
expect() { # exit-code then lines that must appear (grep -F)
	local want=$1; shift
	[ "$rc" = "$want" ] || { echo "FAIL: exit $rc, expected $want ($ctx)"; fail=1; }
	for l in "$@"; do
		grep -qF -- "$l" "$W/out" || { echo "FAIL: '$l' missing ($ctx)"; cat "$W/out"; fail=1; }
	done
}
for fx in seeds-b4 seeds-b4-aligned linklocal-only; do
	"$FAB" build "$S/test/fixtures/$fx.spec" "$W/$fx" >/dev/null || exit 1
done
ctx=seeds-b4/train-0; doc seeds-b4 n1 train-0
expect 0 "Ports (16 usable of 16 device(s) listed)" \
	"mlx5_0 port 1: Ethernet (RoCE), ACTIVE, 100000 Mbps, MTU 4096, pkey 0xffff, numa 0, root 0000:00:01.1" \
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
expect 0 "Ports (2 usable of 16 device(s) listed)" "mlx5_2 port 1 [filtered]: NCCL_IB_HCA==mlx5_0,mlx5_1 leaves it out" "Verdict: FIT"
ctx=linklocal-only/pod-ll; doc linklocal-only n1 pod-ll
expect 1 "mlx5_0 port 1 [no-usable-gid]: no usable RoCE v2 IPv4 GID among 16 entries: 14 zero" \
	"problem no usable RDMA port: NCCL would not use railnet" "Verdict: PROBLEMS"
ctx=bad-env; doc seeds-b4 n1 train-0 NCCL_IB_HCA=mlx5_0:0x
expect 1
ctx=usage; "$DOC" --bogus >/dev/null 2>&1; rc=$?; expect 2
ctx=usage-arg; "$DOC" extra >/dev/null 2>&1; rc=$?; expect 2
ctx=usage-time; "$DOC" --time 0 >/dev/null 2>&1; rc=$?; expect 2
ctx=help; "$DOC" --help >"$W/out"; rc=$?; expect 0 "usage: railnet-doctor" "--json"
ctx=ifaddrs-missing; "$DOC" --ifaddrs /nonexistent >/dev/null 2>&1; rc=$?; expect 2
# an empty address list is a pod with no rail address, not "use the doctor's own namespace"
ctx=ifaddrs-empty; v=$W/seeds-b4/n1/train-0/view; : >"$W/empty"
env RAILNET_SYSFS_ROOT="$v" SOFTVERBS_VIEW="$v" RAILNET_IBVERBS_LIB="$LIB" \
	"$DOC" --ifaddrs "$W/empty" >"$W/out" 2>"$W/err"
rc=$?
expect 1 "Ports (0 usable of 16 device(s) listed)"
[ $fail = 0 ] && echo "ok: doctor text output and exit codes"
exit $fail
