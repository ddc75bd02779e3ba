#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Builds docker/Dockerfile into an image and checks the image as a cluster would use it:
#   - the OCI labels (version, revision = this commit, source) and the image's size;
#   - no apt lists or package cache left in the final image (apt-get clean);
#   - the entry point, as the image's own user (65532), copies the plugin, the tools and the
#     nccl-tests names into a mounted directory, and the copied plugin keeps the glibc floor
#     and the NEEDED list;
#   - the copy into a read-only target fails with exit 1, a message naming the target, and
#     nothing half-copied left there;
#   - railnet-doctor runs in the image: --version, and on this node (no RDMA device, no GPU)
#     exit 1 with "no RDMA device" in one JSON document, the doctor Job's bad-input case;
#     `railnet-install --check` turns that verdict into its exit 3 with the copy complete.
#
# Engines, first that works: `docker` reaching a daemon; else buildah (Debian's package),
# without a daemon: vfs storage in a private folder and chroot isolation (root). With buildah
# the base of both stages is a Debian 12 root file system made by debootstrap (debian_root.sh,
# cached in RN_CHROOT_CACHE, default /var/tmp/railnet-chroots; the first run downloads it,
# opt-in with RN_DOCKER_CHROOT=1 as for docker_glibc_chroot) and committed as a local image,
# since no registry but Debian's archive is reachable from our build machines: the builder is
# then a plain Debian image (railnet-bench without --nccl), as docker/README.md describes.
# RN_IMAGE_BASE names another local or pullable base for both stages instead;
# RN_DOCKER_BUILD_ARGS adds build options (docker: e.g. "--build-arg CUDA_IMAGE=...").
# Exit 77 with the reason when no engine can build here.
#   usage: test_image_build.sh [REPO]
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=${1:-$(cd "$here/../.." && pwd)}
docker=${DOCKER:-docker}
tag=localhost/railnet-ci:$$
passes=0
fails=0

pass() { echo "ok: $*"; passes=$((passes + 1)); }
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

work=$(mktemp -d /var/tmp/rn-image-XXXXXX) || exit 1

# ---- the engine ---------------------------------------------------------------------------
engine=
why=
if command -v "$docker" >/dev/null 2>&1; then
	if err=$("$docker" info 2>&1 >/dev/null); then
		engine=docker
	else
		why="'$docker info' cannot reach a daemon: $(printf '%s' "$err" | tr '\n' ' ' | cut -c1-200)"
	fi
else
	why="'$docker' is not installed"
fi
if [ -z "$engine" ]; then
	if ! command -v buildah >/dev/null 2>&1; then
		why="$why; buildah is not installed (apt-get install buildah)"
	elif [ "$(id -u)" != 0 ]; then
		why="$why; buildah's chroot isolation needs root here (uid $(id -u))"
	else
		engine=buildah
	fi
fi
if [ -z "$engine" ]; then
	rm -rf "$work"
	echo "SKIP: no container build here: $why"
	exit 77
fi

bh() { buildah --root "$work/storage" --runroot "$work/run" --storage-driver vfs "$@"; }
ctr=
cleanup() {
	if [ "$engine" = docker ]; then
		"$docker" rmi -f "$tag" >/dev/null 2>&1
	else
		[ -n "$ctr" ] && bh rm "$ctr" >/dev/null 2>&1
		bh rmi -a -f >/dev/null 2>&1
	fi
	rm -rf "$work"
}
trap cleanup EXIT

# run_image [-v HOST:CTR[:ro]] -- CMD...: runs CMD in a container of the image, as its user.
run_image() {
	local vol=()
	if [ "$1" = -v ]; then
		vol=(-v "$2")
		shift 2
	fi
	shift # --
	if [ "$engine" = docker ]; then
		"$docker" run --rm "${vol[@]}" --entrypoint "$1" "$tag" "${@:2}"
	else
		bh run --isolation chroot "${vol[@]}" "$ctr" -- "$@"
	fi
}

# ---- the base (buildah) --------------------------------------------------------------------
base_args=()
if [ "$engine" = buildah ]; then
	base=${RN_IMAGE_BASE:-}
	if [ -z "$base" ]; then
		root=$(bash "$here/debian_root.sh" bookworm usr/bin/apt-get) || exit $?
		t0=$(date +%s)
		tar -C "$root" --exclude=./var/cache/apt/archives/'*.deb' -cf "$work/base.tar" . || exit 1
		c=$(bh from scratch) || exit 1
		if ! { bh add "$c" "$work/base.tar" / >/dev/null &&
			bh config --env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
				"$c" &&
			bh commit -q --rm "$c" localhost/railnet-debian:bookworm >/dev/null; }; then
			echo "FAIL: the debootstrap base could not be committed as an image"
			exit 1
		fi
		rm -f "$work/base.tar"
		base=localhost/railnet-debian:bookworm
		echo "base image $base from $root in $(($(date +%s) - t0)) s:" \
			"$(bh images --noheading --format '{{.Size}}' "$base")"
	fi
	base_args=(--build-arg "CUDA_IMAGE=$base" --build-arg "RUNTIME_IMAGE=$base")
fi

# ---- the build -----------------------------------------------------------------------------
revision=$(git -C "$repo" rev-parse HEAD 2>/dev/null || echo unknown)
version=$(sed -n 's/^project(railnet VERSION \([0-9.]*\).*/\1/p' "$repo/CMakeLists.txt")
label_args=(--build-arg "RAILNET_REVISION=$revision" --build-arg "RAILNET_VERSION=$version"
	--build-arg "RAILNET_SOURCE=file://$repo")
t0=$(date +%s)
# shellcheck disable=SC2086 # RN_DOCKER_BUILD_ARGS is a list of options
if [ "$engine" = docker ]; then
	"$docker" build -f "$repo/docker/Dockerfile" -t "$tag" "${label_args[@]}" \
		${RN_DOCKER_BUILD_ARGS:-} "$repo" >"$work/build.log" 2>&1
else
	bh build --isolation chroot --pull=never -f "$repo/docker/Dockerfile" \
		--ignorefile "$repo/docker/Dockerfile.dockerignore" -t "$tag" "${base_args[@]}" \
		"${label_args[@]}" ${RN_DOCKER_BUILD_ARGS:-} "$repo" >"$work/build.log" 2>&1
fi
rc=$?
secs=$(($(date +%s) - t0))
if [ $rc != 0 ]; then
	tail -n 40 "$work/build.log"
	echo "FAIL: $engine build of docker/Dockerfile (exit $rc, $secs s)"
	exit 1
fi
# one "key=value" line per label (a Go template, not shell)
# shellcheck disable=SC2016
label_fmt='{{range $k, $v := .Config.Labels}}{{$k}}={{$v}}
{{end}}'
[ "$engine" = buildah ] && label_fmt=${label_fmt/.Config/.OCIv1.Config}
if [ "$engine" = docker ]; then
	size=$("$docker" image inspect -f '{{.Size}}' "$tag")
	labels=$("$docker" image inspect -f "$label_fmt" "$tag")
else
	size=$(bh images --noheading --format '{{.Size}}' "$tag")
	labels=$(bh inspect -f "$label_fmt" "$tag")
	ctr=$(bh from "$tag") || exit 1
fi
pass "$engine built docker/Dockerfile in $secs s: image size $size"

for kv in "org.opencontainers.image.revision=$revision" \
	"org.opencontainers.image.version=$version" \
	"org.opencontainers.image.source=file://$repo"; do
	if printf '%s\n' "$labels" | grep -qxF "$kv"; then
		pass "label $kv"
	else
		fail "label ${kv%%=*}: expected ${kv#*=}, the image has: $(echo "$labels" | tr '\n' ' ')"
	fi
done

# apt-get clean in both RUN steps of the final stage: no lists, no .deb, no pkgcache.
left=$(run_image -- sh -c 'ls /var/lib/apt/lists /var/cache/apt/archives /var/cache/apt 2>/dev/null |
	grep -E "_Packages|\.deb$|pkgcache|srcpkgcache"; echo looked' 2>/dev/null)
if [ "$left" = looked ]; then
	pass "no apt lists or package cache in the final image"
else
	fail "apt leftovers in the final image, or it did not run: $(echo "$left" | tr '\n' ' ')"
fi

# ---- the entry point into a mounted directory ------------------------------------------------
entry=/usr/local/bin/railnet-install
out=$work/opt
mkdir -p "$out" && chmod 0777 "$out"
if run_image -v "$out:/opt/railnet" -- "$entry" >"$work/install.log" 2>&1; then
	pass "the entry point copied into the mounted /opt/railnet as the image's user"
else
	cat "$work/install.log"
	fail "the entry point did not copy into a mounted /opt/railnet"
fi
for f in libnccl-net-railnet.so railnet-doctor railnet-bench railnet-preflight all_reduce_perf \
	sendrecv_perf; do
	[ -x "$out/$f" ] || fail "$f was not copied"
done
floor=$(sed -n 's/^ARG GLIBC_FLOOR=//p' "$repo/docker/Dockerfile")
if sh "$repo/docker/glibc-floor.sh" "$out/libnccl-net-railnet.so" "$floor" &&
	bash "$repo/test/integration/check_needed.sh" "$out/libnccl-net-railnet.so"; then
	pass "the copied plugin keeps glibc >= $floor and needs only glibc"
else
	fail "the copied plugin breaks the glibc floor $floor or its NEEDED list"
fi

# A read-only target: exit 1, the target named, nothing left in it.
ro=$work/ro
mkdir -p "$ro" && chmod 0777 "$ro"
run_image -v "$ro:/opt/railnet:ro" -- "$entry" >"$work/ro.log" 2>&1
rc=$?
if [ $rc = 1 ] && grep -q "/opt/railnet" "$work/ro.log" &&
	[ -z "$(find "$ro" -mindepth 1 -print -quit)" ]; then
	pass "read-only target: exit 1, '$(grep -m1 error "$work/ro.log")', nothing copied"
else
	cat "$work/ro.log"
	fail "read-only target: exit $rc (expected 1), or files left: $(find "$ro" -mindepth 1 -printf '%f ')"
fi

# ---- railnet-doctor in the image, on a node without RDMA devices or GPUs --------------------
if run_image -- /usr/lib/railnet/railnet-doctor --version | grep -q "^railnet-doctor $version "; then
	pass "railnet-doctor --version runs in the image"
else
	fail "railnet-doctor --version does not run in the image"
fi
run_image -- /usr/lib/railnet/railnet-doctor --json >"$work/doctor.json" 2>"$work/doctor.err"
rc=$?
if [ $rc = 1 ] && python3 -c 'import json,sys; d=json.load(open(sys.argv[1]));
sys.exit(0 if (not d["fit"] and any("no RDMA device" in p["what"] for p in d["problems"])) else 1)' \
	"$work/doctor.json"; then
	pass "the doctor Job's command on a node without RDMA: exit 1, one JSON document naming it"
else
	head -c 2000 "$work/doctor.json"
	cat "$work/doctor.err"
	fail "the doctor in the image on a node without RDMA: exit $rc, or no 'no RDMA device' problem"
fi
chk=$work/chk
mkdir -p "$chk" && chmod 0777 "$chk"
run_image -v "$chk:/opt/railnet" -- "$entry" --check >"$work/check.log" 2>&1
rc=$?
if [ $rc = 3 ] && [ -x "$chk/libnccl-net-railnet.so" ] && [ -x "$chk/railnet-doctor" ]; then
	pass "railnet-install --check without RDMA: exit 3 (the doctor found problems), copy complete"
else
	tail -n 20 "$work/check.log"
	fail "railnet-install --check without RDMA: exit $rc (expected 3) or an incomplete copy"
fi

echo "$passes passed, $fails failed"
[ $fails = 0 ]
