#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Runs Debian's perftest tool ($2: ib_write_bw | ib_read_lat | ...), unchanged, as server and
# client processes over softverbs (LD_LIBRARY_PATH=$1/softverbs) on a two-device pod view (or
# two pods of a fabric, see SV_FABRIC), and checks that the client reports its bandwidth or
# latency line. Exit 77 only when perftest is missing.
set -u
build=$1
tool=$2
shift 2
if ! command -v "$tool" >/dev/null 2>&1; then
	echo "SKIP: $tool not found (apt install perftest)"
	exit 77
fi
dir=$(mktemp -d --tmpdir sv-perftest-XXXXXX)
srv=
cleanup() {
	[ -n "$srv" ] && kill "$srv" 2>/dev/null
	rm -rf "$dir"
}
trap cleanup EXIT
# SV_FABRIC="SPEC SERVER_VIEW SERVER_DEV CLIENT_VIEW CLIENT_DEV GID_INDEX": pod views built by
# softverbs-fabric from SPEC (views relative to its output); default: sv-mkview's two devices.
if [ -n "${SV_FABRIC:-}" ]; then
	# shellcheck disable=SC2086 # word splitting intended
	set -- $SV_FABRIC -- "$@"
	spec=$1 sview=$dir/fab/$2 sdev=$3 cview=$dir/fab/$4 cdev=$5 gid=$6
	shift 7
	"$build/bin/softverbs-fabric" build "$spec" "$dir/fab" || exit 1
else
	"$build/bin/sv-mkview" "$dir/view" 2 1 100 || exit 1
	sview=$dir/view sdev=svdev0 cview=$dir/view cdev=svdev1 gid=1
fi
export LD_LIBRARY_PATH="$build/softverbs"
# A TCP port for perftest's out-of-band exchange: below the kernel's ephemeral range (32768 and
# up by default, where other tests' connections take their local ports) and not one that
# /proc/net/tcp lists in any state. When the server still could not listen (another process
# took the port in between), server and client run again on the next port, at most 5 times.
port_used() {
	grep -q "^ *[0-9]*: [0-9A-F]*:$(printf '%04X' "$1") " /proc/net/tcp /proc/net/tcp6 2>/dev/null
}
next_port() {
	port=$((20000 + (port - 20000 + 1) % 12000))
}
port=$((20000 + $$ % 12000))
opts="$*"
: >"$dir/client.log"
for try in 1 2 3 4 5; do
	while port_used "$port"; do
		next_port
	done
	# -u 17: transport timeout 0.5 s (x 8 retries); CI machines can be very busy
	# shellcheck disable=SC2086 # word splitting intended
	set -- -F -u 17 -x "$gid" -p "$port" $opts
	SOFTVERBS_VIEW=$sview timeout 60 "$tool" -d "$sdev" "$@" >"$dir/server.log" 2>&1 &
	srv=$!
	# wait until the port listens (/proc/net/tcp, state 0A) or the server exits, at most 10 s
	hexport=$(printf '%04X' "$port")
	for _ in $(seq 1 100); do
		grep -q ":$hexport [0-9A-F:]* 0A" /proc/net/tcp /proc/net/tcp6 2>/dev/null && break
		kill -0 "$srv" 2>/dev/null || break
		sleep 0.1
	done
	rc=1
	for _ in 1 2 3 4 5; do
		kill -0 "$srv" 2>/dev/null || break
		SOFTVERBS_VIEW=$cview timeout 60 "$tool" -d "$cdev" "$@" 127.0.0.1 \
			>"$dir/client.log" 2>&1
		rc=$?
		grep -q "Couldn't connect\|Unable to init the socket\|Failed to connect" \
			"$dir/client.log" || break
		sleep 0.3
	done
	wait "$srv"
	src=$?
	srv=
	grep -q "Couldn't listen" "$dir/server.log" || break
	echo "try $try: the server could not listen on port $port; again on another port"
	next_port
done
echo "---- $tool server ($sdev, $sview) ----"
cat "$dir/server.log"
echo "---- $tool client ($cdev, $cview) ----"
cat "$dir/client.log"
if [ "$rc" -ne 0 ] || [ "$src" -ne 0 ]; then
	echo "FAIL: client exit $rc, server exit $src"
	exit 1
fi
# the result line: "#bytes #iterations ..." header followed by numbers
if ! awk '/#bytes/ { hdr = 1; next } hdr && $1 ~ /^[0-9]+$/ && NF >= 4 { ok = 1 } END { exit !ok }' \
	"$dir/client.log"; then
	echo "FAIL: no result line in the client output"
	exit 1
fi
echo "PASS: $(awk '/#bytes/ { hdr = 1; next } hdr && $1 ~ /^[0-9]+$/ { print; exit }' "$dir/client.log")"
