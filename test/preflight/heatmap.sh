#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# railnet-preflight --heatmap under mpirun -np 4, one rank in each pod of
# test/fixtures/preflight4.spec (as preflight.sh): the picture rank 0 draws with gnuplot is
# checked by decoding the PNG (python3, standard library only):
#   healthy   the fixture as it is: exit 0, a PNG of the size render_heatmap asks for
#             (360 x 340 per rail's matrix, ceil(sqrt(rails)) matrices a row)
#   slow      pod3's port on rail rb links at 2.5 Gb/s: exit 1, a PNG of that size in which
#             rank 3's row of rail 1's matrix is "warm" (R > 180, B < 90): the palette runs
#             red (0) -> yellow (half the top of the colour box) -> green, so the half-speed
#             cells are yellow, not red (heatmap_check.py: thousands of warm pixels more than
#             the healthy picture there, none elsewhere; one band in the matrix's bottom row)
#   unwritable  --heatmap /proc/nonexistent/x.png on the healthy fabric: the run still ends
#             (no hang, no crash) with exit 0 and its report, only the report on standard
#             output, and "gnuplot could not draw" on stderr
# Needs root (the namespaces), mpirun, python3 and gnuplot (with its pngcairo terminal), else
# exit 77 with the reason. HEATMAP_KEEP=1 keeps the pictures, reports and the ranks' stderr in
# the work folder it names.
#   usage: heatmap.sh BUILD_DIR SOURCE_DIR
set -u
B=$1 S=$2
PF_PREFIX=rn-heatmap PF_KEEP=${HEATMAP_KEEP:-}
# warm pixels the slow picture must have over the healthy one in rail 1's panel: a cell of
# its 4 x 4 matrix is about 55 x 50 pixels; the 3 half-speed cells of rank 3's row add ~7,800
MARGIN=${HEATMAP_MARGIN:-2000}
command -v gnuplot >/dev/null 2>&1 || { echo "SKIP: gnuplot not found (apt-get install gnuplot-nox)"; exit 77; }
gnuplot -e 'set terminal pngcairo' >/dev/null 2>&1 ||
	{ echo "SKIP: this gnuplot has no pngcairo terminal (Debian: gnuplot-nox has it)"; exit 77; }
# shellcheck source=test/preflight/pf_env.sh
. "$S/test/preflight/pf_env.sh"

# run CASE PNG EXPECTED-RC PATTERN...: mpirun -np 4 with --heatmap PNG; the exit status and
# each pattern in the report must match. Sets RC.
run() {
	local name=$1 png=$2 want=$3 log t0 p ok=1
	shift 3
	log=$W/$name.log
	t0=$SECONDS
	timeout 300 mpirun -np 4 "$SHIM" "$FX" 1 "$PODS" -- \
		"$BIN" --plugin "$PLUGIN" --timeout 5 --burst-mb 64 --burst-ms 300 --heatmap "$png" \
		>"$log" 2>"$log.err" <<<"" &
	wait $!
	RC=$?
	[ "$RC" = "$want" ] || ok=0
	for p in "$@"; do
		grep -qF -- "$p" "$log" || { ok=0; echo "    missing: $p"; }
	done
	if [ $ok = 1 ]; then
		echo "ok: $name ($((SECONDS - t0)) s): exit $RC"
		grep -a -E '^  problem |^Verdict' "$log" | sed 's/^/    /'
	else
		echo "FAIL: $name: exit $RC (want $want)"
		sed 's/^/    /' "$log" | tail -40
		tail -20 "$log.err" | sed 's/^/    err: /'
		fails=$((fails + 1))
	fi
}

# All cases, once. The pictures rest on measured speeds, which a busy 2-core machine can spoil
# (one pair at half the rail's median draws a warm cell in the healthy picture): the whole set
# gets HEATMAP_TRIES (3) tries and fails when none passes; each failed try is shown.
one_try() {
	fabric healthy ''
	run healthy "$W/healthy.png" 0 "Verdict: FIT" "4 ranks, 2 rail(s), 3 round(s)"
	nrails=$(grep -o '[0-9]* rail(s)' "$W/healthy.log" | head -1 | cut -d' ' -f1)

	# gnuplot cannot open the output: the report and the exit status are the run's, one line says so
	bad=/proc/nonexistent/x.png
	run unwritable "$bad" 0 "Verdict: FIT"
	if grep -qF "railnet-preflight: gnuplot could not draw $bad" "$W/unwritable.log.err"; then
		echo "ok: unwritable: \"gnuplot could not draw $bad\" on stderr"
	else
		echo "FAIL: unwritable: no \"gnuplot could not draw $bad\" on stderr"
		tail -20 "$W/unwritable.log.err" | sed 's/^/    err: /'
		fails=$((fails + 1))
	fi
	# gnuplot, its output not changed, would draw to its standard output: rank 0's, the report's
	if LC_ALL=C grep -q $'\x89PNG' "$W/unwritable.log" ||
		[ "$(tail -1 "$W/unwritable.log")" != "Verdict: FIT" ]; then
		echo "FAIL: unwritable: standard output is not only the report (gnuplot's PNG in it?):"
		off=$(LC_ALL=C grep -a -b -o $'\x89PNG' "$W/unwritable.log" | head -1 | cut -d: -f1)
		if [ -n "$off" ]; then
			echo "    a PNG starts at byte $off of $(wc -c <"$W/unwritable.log"), after the line" \
				"\"$(head -c "$off" "$W/unwritable.log" | tail -1)\""
		else
			tail -3 "$W/unwritable.log" | cat -v | sed 's/^/    /'
		fi
		fails=$((fails + 1))
	fi

	# node1's mlx5_3 is pod3's port on rail rb
	fabric slow '/^node node1/,$ s/rate="5 Gb\/sec (1X DDR)" netdev=rdma3/rate="2.5 Gb\/sec (1X SDR)" netdev=rdma3/'
	run slow "$W/slow.png" 1 "rank 3 (" "rail 1 (mlx5_3): slow link sending"

	# the pictures: their size, and the slow cell in rail 1's matrix, rank 3's row
	python3 "$S/test/preflight/heatmap_check.py" "$W/healthy.png" "$W/slow.png" "${nrails:-0}" 1 \
		"$MARGIN" || fails=$((fails + 1))
}

for try in $(seq 1 "${HEATMAP_TRIES:-3}"); do
	fails=0
	one_try
	[ "$fails" = 0 ] && break
	echo "# (try $try of ${HEATMAP_TRIES:-3} failed)"
done
echo "$fails failed"
[ $fails = 0 ]
