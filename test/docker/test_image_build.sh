#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Builds docker/Dockerfile and runs the image's entry point into a temporary directory, where
# a container engine can: the `docker` client must reach a daemon (`docker info`). The build
# pulls the CUDA base image (several GB) and compiles railnet, so it runs only then; on a
# machine without a daemon (our build machines: a docker client, no engine) it exits 77 and
# says so. RN_DOCKER_BUILD_ARGS adds --build-arg options, e.g.
# "--build-arg CUDA_IMAGE=ubuntu:22.04" for a build without CUDA.
#   usage: test_image_build.sh [REPO]
set -uo pipefail

repo=${1:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
docker=${DOCKER:-docker}

if ! command -v "$docker" >/dev/null 2>&1; then
	echo "SKIP: no container build here: '$docker' is not installed"
	exit 77
fi
if ! err=$("$docker" info 2>&1 >/dev/null); then
	echo "SKIP: no container build here: '$docker info' cannot reach a daemon:" \
		"$(printf '%s' "$err" | tr '\n' ' ' | cut -c1-300)"
	exit 77
fi

tag=railnet-ci:$$
work=$(mktemp -d) || exit 1
trap '"$docker" rmi -f "$tag" >/dev/null 2>&1; rm -rf "$work"' EXIT
# shellcheck disable=SC2086 # RN_DOCKER_BUILD_ARGS is a list of options
if ! "$docker" build -f "$repo/docker/Dockerfile" -t "$tag" ${RN_DOCKER_BUILD_ARGS:-} "$repo"; then
	echo "FAIL: docker build"
	exit 1
fi
chmod 0777 "$work"
if ! "$docker" run --rm -v "$work:/opt/railnet" "$tag"; then
	echo "FAIL: the image's entry point did not copy into a mounted directory"
	exit 1
fi
for f in libnccl-net-railnet.so railnet-doctor railnet-bench; do
	[ -x "$work/$f" ] || { echo "FAIL: $f was not copied"; exit 1; }
done
floor=$(sed -n 's/^ARG GLIBC_FLOOR=//p' "$repo/docker/Dockerfile")
sh "$repo/docker/glibc-floor.sh" "$work/libnccl-net-railnet.so" "$floor" || exit 1
echo "1 passed, 0 failed"
