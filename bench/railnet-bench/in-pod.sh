#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# mpirun launcher shim: run one rank of railnet-bench --net "inside" a softverbs pod.
#   mpirun -np 4 ... in-pod.sh FABRIC_OUT RANKS_PER_POD node0:pod0,node1:pod1 -- railnet-bench --net ...
# Rank r (OMPI_COMM_WORLD_RANK) takes pod number r / RANKS_PER_POD of the list, sources that
# pod's environment (its softverbs view, sysfs root, topology) and passes --netns with the pod's
# network namespace: railnet-bench joins it after MPI_Init, so Open MPI keeps the launcher's
# namespace (PMIx talks TCP on loopback, which a pod's namespace does not share with mpirun)
# while the plugin's sockets, getifaddrs and softverbs live in the pod's.
set -euo pipefail
if [ $# -lt 5 ] || [ "$4" != -- ]; then
	echo "usage: in-pod.sh FABRIC_OUT RANKS_PER_POD NODE:POD[,NODE:POD...] -- CMD..." >&2
	exit 2
fi
out=$1 per=$2 pods=$3
shift 4
r=${OMPI_COMM_WORLD_RANK:-${PMIX_RANK:-}}
[ -n "$r" ] || { echo "in-pod.sh: not started by mpirun (no OMPI_COMM_WORLD_RANK)" >&2; exit 2; }
IFS=, read -r -a list <<<"$pods"
i=$((r / per))
[ "$i" -lt "${#list[@]}" ] || { echo "in-pod.sh: rank $r has no pod ($pods, $per per pod)" >&2; exit 2; }
node=${list[$i]%%:*} pod=${list[$i]#*:}
envf=$out/$node/$pod/env
[ -f "$envf" ] || { echo "in-pod.sh: no pod $pod on node $node in $out" >&2; exit 2; }
set -a
# shellcheck disable=SC1090
. "$envf"
set +a
[ -n "${SOFTVERBS_NETNS:-}" ] || { echo "in-pod.sh: $node/$pod is not up (softverbs-fabric up $out)" >&2; exit 2; }
exec "$@" --netns "$SOFTVERBS_NETNS"
