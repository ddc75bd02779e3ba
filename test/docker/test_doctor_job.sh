#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# docker/k8s/doctor-job.py from the command line: a Job for every MPIJob here (checked in
# depth by check_manifests.py), and each kind of bad input refused with exit 2 and a message
# naming what was wrong, nothing on stdout.
#   usage: test_doctor_job.sh [REPO]
set -uo pipefail

repo=${1:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
gen=$repo/docker/k8s/doctor-job.py
python3 -c 'import yaml' 2>/dev/null || {
	echo "SKIP: PyYAML is not installed (apt-get install python3-yaml)"
	exit 77
}
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
passes=0
fails=0

# expect NAME RC PATTERN -- ARGS...: exit status RC, PATTERN in stderr (or stdout for rc 0).
expect() {
	local name=$1 want=$2 pat=$3
	shift 4
	python3 "$gen" "$@" >"$tmp/out" 2>"$tmp/err"
	local rc=$?
	local where=$tmp/err
	[ "$want" = 0 ] && where=$tmp/out
	if [ $rc = "$want" ] && grep -q -- "$pat" "$where" && { [ "$want" = 0 ] || [ ! -s "$tmp/out" ]; }; then
		echo "ok: $name (exit $rc)"
		passes=$((passes + 1))
	else
		echo "FAIL: $name: exit $rc (want $want), pattern '$pat'"
		sed 's/^/  stdout: /' "$tmp/out" | head -n 5
		sed 's/^/  stderr: /' "$tmp/err" | head -n 5
		fails=$((fails + 1))
	fi
}

for f in "$repo"/docker/k8s/mpijob-*.yaml; do
	expect "$(basename "$f")" 0 "name: railnet-doctor-gpu-node-01" -- "$f" gpu-node-01
done
expect "--name and --image" 0 "image: example.org/rn:1" -- "$repo/docker/k8s/mpijob-ipvlan.yaml" \
	n1 --name dj --image example.org/rn:1
expect "no arguments" 2 "required: mpijob, node" --
expect "bad node name" 2 "is not a Kubernetes node name" -- "$repo/docker/k8s/mpijob-ipvlan.yaml" "Node 1"
expect "missing file" 2 "No such file or directory" -- "$tmp/none.yaml" n1
printf 'kind: [unclosed\n' >"$tmp/bad.yaml"
expect "not YAML" 2 "is not YAML" -- "$tmp/bad.yaml" n1
expect "no MPIJob" 2 "it holds 0 MPIJob documents" -- "$repo/docker/k8s/rails-ipvlan.yaml" n1
printf 'kind: MPIJob\nspec: {}\n' >"$tmp/noworker.yaml"
expect "no worker" 2 "has no spec.mpiReplicaSpecs.Worker.template" -- "$tmp/noworker.yaml" n1
sed 's/name: railnet-install/name: copy-plugin/' "$repo/docker/k8s/mpijob-ipvlan.yaml" >"$tmp/noimg.yaml"
expect "no railnet image" 2 "no railnet-install init container" -- "$tmp/noimg.yaml" n1
sed 's/nvidia.com\/gpu: 8/nvidia.com\/gpu: eight/' "$repo/docker/k8s/mpijob-ipvlan.yaml" >"$tmp/badlim.yaml"
expect "non-numeric limit" 2 "is not a whole number" -- "$tmp/badlim.yaml" n1
echo "$passes passed, $fails failed"
[ $fails = 0 ]
