#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# `softverbs-fabric exec` gives the pod a /sys laid out as the kernel would make it (issue 13,
# item 1): inside pod0 of test/fixtures/small.spec, brought up as a network namespace,
#  - class/infiniband/<dev>/device resolves to a PCI function under /sys/devices/pci…,
#    below the root port the spec names, whose subsystem is bus/pci (what NCCL checks before
#    placing a NIC in its topology);
#  - /sys/class/pci_bus/<bus>/../../<bdf> (NCCL's way from a bus id to its device) resolves
#    for the NICs and the GPU, and bus/pci/devices lists them;
#  - the CPU/NUMA nodes and the netns's own netdevs are the machine's real ones;
#  - railnet-doctor with no RAILNET_SYSFS_ROOT reports those /sys paths, and softverbs reads
#    the view at /sys (SOFTVERBS_VIEW=/sys);
#  - the host's /sys is unchanged outside, and --host-sys keeps the old behaviour.
# And `cuda=<n>` binding at build time, through SOFTVERBS_FABRIC_CUDA_BUSIDS (this machine
# has no GPU): the bound bus id replaces the spec's in the view and the env file, and each
# bad binding (index beyond the devices, a NIC's address, a bus the root cannot hold, a
# malformed list, a device missing at exec) is one clear error.
# Exit 77 when not root or when network or mount namespaces cannot be made.
# usage: fabric_exec_sys.sh BUILD SOURCE
set -u
build=$1
src=$2
fab=$build/bin/softverbs-fabric
if [ "$(id -u)" != 0 ]; then
	echo "SKIP: network and mount namespaces need root"
	exit 77
fi
if ! unshare -m true 2>/dev/null; then
	echo "SKIP: cannot make a mount namespace here (unshare -m failed)"
	exit 77
fi
dir=$(mktemp -d --tmpdir sv-execsys-XXXXXX)
# shellcheck disable=SC2317  # called by the EXIT trap
cleanup() {
	"$fab" down "$dir/fab" >/dev/null 2>&1
	rm -rf "$dir"
}
trap cleanup EXIT
fail=0
bad() {
	echo "FAIL: $*"
	fail=1
}
"$fab" build "$src/test/fixtures/small.spec" "$dir/fab" >/dev/null || exit 1
if ! "$fab" up "$dir/fab" >"$dir/up.log" 2>&1; then
	echo "SKIP: softverbs-fabric up failed (no network namespaces?):"
	tail -3 "$dir/up.log"
	exit 77
fi

# shellcheck disable=SC2016  # expanded inside the pod
"$fab" exec "$dir/fab" node0 pod0 -- sh -c '
	r() { realpath -e "$1" 2>/dev/null || echo "unresolved:$1"; }
	echo "mlx5_0=$(r /sys/class/infiniband/mlx5_0/device)"
	echo "mlx5_1=$(r /sys/class/infiniband/mlx5_1/device)"
	echo "subsys=$(r /sys/class/infiniband/mlx5_0/device/subsystem)"
	echo "bus0c=$(r /sys/class/pci_bus/0000:0c/../../0000:0c:00.1)"
	echo "bus0f=$(r /sys/class/pci_bus/0000:0f/../../0000:0f:00.0)"
	echo "bus00=$(r /sys/class/pci_bus/0000:00/../../0000:00:01.1)"
	echo "bus01=$(r /sys/class/pci_bus/0000:01/../../0000:01:00.0)"
	echo "gpuclass=$(cat /sys/bus/pci/devices/0000:0f:00.0/class)"
	echo "rootspeed=$(cat /sys/devices/pci0000:00/0000:00:01.1/max_link_speed)"
	echo "node0=$(test -d /sys/devices/system/node/node0 && echo yes)"
	echo "cpu0=$(test -e /sys/devices/system/cpu/cpu0 && echo yes)"
	echo "net1=$(test -e /sys/class/net/net1/mtu && echo yes)"
	echo "lo=$(test -e /sys/class/net/lo && echo yes)"
	echo "netns=$(cat /sys/module/ib_core/parameters/netns_mode)"
	echo "cgroup=$(find /sys/fs/cgroup/ -mindepth 1 -maxdepth 1 | sort | tr "\n" " ")"
	echo "view=$SOFTVERBS_VIEW"
	echo "sysroot=${RAILNET_SYSFS_ROOT-unset}"
' >"$dir/in.txt" 2>&1 || bad "exec failed: $(cat "$dir/in.txt")"
want() {
	grep -qx "$1" "$dir/in.txt" || bad "inside the pod: want '$1', got '$(grep "^${1%%=*}=" "$dir/in.txt")'"
}
want "mlx5_0=/sys/devices/pci0000:00/0000:00:01.1/0000:01:00.0/0000:02:00.0/0000:0c:00.0"
want "mlx5_1=/sys/devices/pci0000:00/0000:00:01.1/0000:01:00.0/0000:02:00.0/0000:0c:00.1"
want "subsys=/sys/bus/pci"
want "bus0c=/sys/devices/pci0000:00/0000:00:01.1/0000:01:00.0/0000:02:00.0/0000:0c:00.1"
want "bus0f=/sys/devices/pci0000:00/0000:00:01.1/0000:01:00.0/0000:02:00.0/0000:0f:00.0"
want "bus00=/sys/devices/pci0000:00/0000:00:01.1"
want "bus01=/sys/devices/pci0000:00/0000:00:01.1/0000:01:00.0"
want "gpuclass=0x030200"
want "rootspeed=16.0 GT/s PCIe"
want "node0=yes"
want "cpu0=yes"
want "net1=yes"
want "lo=yes"
want "netns=Y"
want "view=/sys"
# what is mounted below the host's /sys (cgroup) is there too
want "cgroup=$(find /sys/fs/cgroup/ -mindepth 1 -maxdepth 1 | sort | tr "\n" " ")"
want "sysroot=unset"
# pod1 is given the other root's NIC; it sees the whole PCI tree, as a pod does
"$fab" exec "$dir/fab" node0 pod1 -- realpath /sys/class/infiniband/mlx5_2/device >"$dir/p1.txt" 2>&1
grep -qx "/sys/devices/pci0000:80/0000:80:01.1/0000:81:00.0/0000:82:00.0/0000:88:00.0" "$dir/p1.txt" ||
	bad "pod1: mlx5_2's device is $(cat "$dir/p1.txt")"
# the host's /sys is untouched
[ -e /sys/softverbs ] && bad "the host's /sys has a softverbs directory"
grep -q softverbs-sys /proc/self/mountinfo && bad "the pod's /sys leaked into the caller's mounts"
# --host-sys: the old way, the view by its path
# shellcheck disable=SC2016  # expanded inside the pod
"$fab" exec --host-sys "$dir/fab" node0 pod0 -- sh -c 'echo "$SOFTVERBS_VIEW"' >"$dir/hs.txt" 2>&1
grep -qx "$dir/fab/node0/pod0/view" "$dir/hs.txt" ||
	grep -qx "$(realpath "$dir/fab")/node0/pod0/view" "$dir/hs.txt" ||
	bad "--host-sys: SOFTVERBS_VIEW=$(cat "$dir/hs.txt")"

# railnet itself, with no test variable for sysfs: the doctor's ports and their PCI paths
if [ -x "$build/bin/railnet-doctor" ] && [ -e "$build/softverbs/libibverbs.so.1" ]; then
	"$fab" exec "$dir/fab" node0 pod0 -- env RAILNET_IBVERBS_LIB="$build/softverbs/libibverbs.so.1" \
		"$build/bin/railnet-doctor" >"$dir/doctor.txt" 2>&1
	grep -q "Ports (2 usable of 2 device(s) listed)" "$dir/doctor.txt" ||
		bad "doctor in the pod: $(grep -A3 '^Ports' "$dir/doctor.txt")"
	grep -q "pci   /sys/devices/pci0000:00/0000:00:01.1/0000:01:00.0/0000:02:00.0/0000:0c:00.0" "$dir/doctor.txt" ||
		bad "doctor: mlx5_0's PCI path is not under /sys/devices"
	grep -q "sysfs root       /sys$" "$dir/doctor.txt" || bad "doctor: sysfs root is not /sys"
fi

# cuda=<n>: binding at build time (the bus ids stand in for a CUDA driver's)
cat >"$dir/cuda.spec" <<'EOF'
rail ra subnet=10.10.0.0/16
node node0
	numa 0 cpus=0-1
	root r0 port=0000:00:01.1 numa=0
	gpu gpu0 pci=0000:0f:00.0 root=r0 cuda=1
	nic mlx5_0 pci=0000:0c:00.0 root=r0 guid=b8ce:f603:00b0:0100
		port 1 link=Ethernet rate=50 netdev=rdma0 rail=ra addr=10.10.0.1
	pod pod0 gpus=gpu0 nics=mlx5_0
		iface net1 type=ipvlan parent=rdma0 addr=10.10.1.1
EOF
SOFTVERBS_FABRIC_CUDA_BUSIDS=0000:18:00.0,0000:3b:00.0 "$fab" build "$dir/cuda.spec" "$dir/c1" \
	>"$dir/c1.log" 2>&1 || bad "cuda build: $(cat "$dir/c1.log")"
grep -qx "export SOFTVERBS_GPUS='0000:3b:00.0'" "$dir/c1/node0/pod0/env" ||
	bad "cuda build: env $(grep GPUS "$dir/c1/node0/pod0/env")"
grep -qx "gpu0 0000:3b:00.0 numa=0 root=r0 cuda=1" "$dir/c1/node0/pod0/view/softverbs/gpus" ||
	bad "cuda build: gpus file $(tail -1 "$dir/c1/node0/pod0/view/softverbs/gpus")"
[ -d "$dir/c1/node0/pod0/view/devices/pci0000:00/0000:00:01.1/0000:3b:00.0" ] ||
	bad "cuda build: the GPU is not at its bound bus id in the view"
grep -q '0000:3b:00.0' "$dir/c1/node0/topo.xml" || bad "cuda build: topo.xml lacks the bound GPU"
# bound to a bus id this machine does not have: exec refuses, naming it
SOFTVERBS_FABRIC_CUDA_BUSIDS=0000:18:00.0,0000:3b:00.0 "$fab" exec "$dir/c1" node0 pod0 -- true \
	>"$dir/c1x.log" 2>&1 && bad "exec with a missing bound GPU succeeded"
grep -q "gpu0 is bound to CUDA device 1, bus id 0000:3b:00.0, but this machine's sysfs has no PCI device 0000:3b:00.0" \
	"$dir/c1x.log" || bad "exec, missing GPU: $(cat "$dir/c1x.log")"
berr() { # SPEC-SED BUSIDS EXPECTED
	sed "$1" "$dir/cuda.spec" >"$dir/b.spec"
	rm -rf "$dir/b"
	if SOFTVERBS_FABRIC_CUDA_BUSIDS=$2 "$fab" build "$dir/b.spec" "$dir/b" >"$dir/b.log" 2>&1; then
		bad "build with cuda binding '$1' / '$2' succeeded"
	elif [ "$(wc -l <"$dir/b.log")" != 1 ] || ! grep -qF "$3" "$dir/b.log"; then
		bad "cuda binding '$1' / '$2': want one line with '$3', got: $(cat "$dir/b.log")"
	fi
}
berr 's/cuda=1/cuda=5/' 0000:18:00.0 "gpu gpu0: cuda=5, but this machine has 1 CUDA device (cuda=0-0)"
berr 's/cuda=1/cuda=0/' 0000:0c:00.0 "CUDA device 0 has bus id 0000:0c:00.0, which nic mlx5_0 uses"
berr 's/cuda=1/cuda=0/' 0000:00:01.1 "CUDA device 0 has bus id 0000:00:01.1, which root r0 uses"
berr 's/cuda=1/cuda=0/' xyz "SOFTVERBS_FABRIC_CUDA_BUSIDS: 'xyz' is not a PCI bus id"
berr 's/cuda=1/cuda=0/' "" "gpu gpu0: cuda=0, but this machine has no CUDA device"
berr 's/cuda=1/cuda=x/' 0000:18:00.0 "cuda=x: expected a CUDA device index 0-63"
berr 's/cuda=1/cuda=0/' 0000:00:06.0 "CUDA device 0 has bus id 0000:00:06.0, on the bus of root r0's port"
# two GPUs of one real bus (a VM's flat bus 0) bound below two root ports: the bus's link
# keeps the first port, and NCCL's way from each bus id still leads to each GPU's own place
cat >"$dir/two.spec" <<'EOF'
rail ra subnet=10.10.0.0/16
node node0
	numa 0 cpus=0-1
	root r0 port=0001:00:01.1 numa=0
	root r1 port=0002:00:01.1 numa=0
	gpu gpu0 pci=0001:0f:00.0 root=r0 cuda=0
	gpu gpu1 pci=0002:0f:00.0 root=r1 cuda=1
	nic mlx5_0 pci=0001:0c:00.0 root=r0 guid=b8ce:f603:00b0:0100
		port 1 link=Ethernet rate=50 netdev=rdma0 rail=ra addr=10.10.0.1
	pod pod0 gpus=gpu0,gpu1 nics=mlx5_0
		iface net1 type=ipvlan parent=rdma0 addr=10.10.1.1
EOF
SOFTVERBS_FABRIC_CUDA_BUSIDS=0000:00:06.0,0000:00:07.0 "$fab" build "$dir/two.spec" "$dir/c3" \
	>"$dir/c3.log" 2>&1 || bad "two GPUs on one bus: build: $(cat "$dir/c3.log")"
v3=$dir/c3/node0/pod0/view
for g in "0000:00:06.0 pci0001:00/0001:00:01.1" "0000:00:07.0 pci0002:00/0002:00:01.1"; do
	got=$(realpath -e "$v3/class/pci_bus/0000:00/../../${g% *}" 2>&1)
	[ "$got" = "$(realpath "$v3")/devices/${g#* }/${g% *}" ] ||
		bad "two GPUs on one bus: ${g% *} resolves to '$got', want devices/${g#* }/${g% *}"
done

# bound to a real PCI function of this machine: its real directory is the pod's GPU, below
# the spec's root port, even when its bus is a root bus (a VM's flat tree, as the H200 VMs'
# 0000:00:06.0; the root port is then in another domain); NCCL's way from the bus id, and
# from the root port's, lead there
real=$(find /sys/bus/pci/devices/ -mindepth 1 -maxdepth 1 -printf '%f\n' 2>/dev/null | sort | head -1)
if [ -n "$real" ] && [ -r "/sys/bus/pci/devices/$real/vendor" ]; then
	rm -rf "$dir/c2"
	sed 's/0000:00:01.1/0001:00:01.1/; s/pci=0000:0f:00.0/pci=0001:0f:00.0/; s/pci=0000:0c:00.0/pci=0001:0c:00.0/' \
		"$dir/cuda.spec" >"$dir/c2.spec"
	SOFTVERBS_FABRIC_CUDA_BUSIDS=0000:18:00.0,$real "$fab" build "$dir/c2.spec" "$dir/c2" \
		>"$dir/c2.log" 2>&1 || bad "cuda build bound to $real failed: $(cat "$dir/c2.log")"
	# shellcheck disable=SC2016  # expanded inside the pod
	"$fab" exec "$dir/c2" node0 pod0 -- sh -c '
		g=$SOFTVERBS_GPUS
		echo "path=$(realpath -e "/sys/class/pci_bus/${g%:*}/../../$g")"
		echo "vendor=$(cat "/sys/bus/pci/devices/$g/vendor")"
		echo "nic=$(realpath -e /sys/class/infiniband/mlx5_0/device)"
		echo "port=$(realpath -e /sys/class/pci_bus/0001:00/../../0001:00:01.1)"' >"$dir/c2.txt" 2>&1
	if ! grep -qx "path=/sys/devices/pci0001:00/0001:00:01.1/$real" "$dir/c2.txt" ||
		! grep -qx "vendor=$(cat "/sys/bus/pci/devices/$real/vendor")" "$dir/c2.txt" ||
		! grep -qx "nic=/sys/devices/pci0001:00/0001:00:01.1/0001:0c:00.0" "$dir/c2.txt" ||
		! grep -qx "port=/sys/devices/pci0001:00/0001:00:01.1" "$dir/c2.txt"; then
		bad "GPU bound to $real: $(cat "$dir/c2.txt")"
	fi
else
	echo "note: no PCI function on this machine to bind; the bind itself is not checked"
fi
# without the variable and without a driver: the driver is named
if ! ldconfig -p 2>/dev/null | grep -q 'libcuda\.so\.1'; then
	rm -rf "$dir/b"
	(unset SOFTVERBS_FABRIC_CUDA_BUSIDS; "$fab" build "$dir/cuda.spec" "$dir/b") >"$dir/b.log" 2>&1 &&
		bad "a cuda= build without a driver succeeded"
	grep -q "the CUDA driver (libcuda.so.1) cannot be loaded" "$dir/b.log" ||
		bad "no driver: $(cat "$dir/b.log")"
fi
[ "$fail" = 0 ] && echo "PASS: the pod's /sys, and cuda= binding"
exit $fail
