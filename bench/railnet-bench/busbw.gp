# SPDX-License-Identifier: Apache-2.0
# Bus bandwidth against message size for one or several railnet-bench / nccl-tests results,
# as a PNG. Called by plot.sh, which turns each result (CSV, or a saved table) into a plain
# "size oop_busbw ip_busbw" file first:
#   gnuplot -c busbw.gp OUT.png TITLE1 DATA1 [TITLE2 DATA2 ...]
# Solid lines: out-of-place; dashed, same colour: in-place.
if (ARGC < 3 || ARGC % 2 == 0) {
	print "usage: gnuplot -c busbw.gp OUT.png TITLE DATA [TITLE DATA ...]"
	exit status 2
}
set terminal pngcairo size 1200,700 font ",11" noenhanced
set output ARG1
set title "Bus bandwidth vs message size"
set xlabel "message size (bytes)"
set ylabel "busbw (GB/s)"
set logscale x 2
set grid xtics ytics
set key top left
set yrange [0:*]
set offsets graph 0.02, graph 0.02, 0, 0

sizelabel(i) = i < 10 ? sprintf("%d", 2**i) : i < 20 ? sprintf("%dK", 2**(i - 10)) : \
	i < 30 ? sprintf("%dM", 2**(i - 20)) : sprintf("%dG", 2**(i - 30))
set xtics ()
do for [i = 0:40:2] {
	set xtics add (sizelabel(i) 2**i)
}

n = (ARGC - 1) / 2
plot for [k = 1:n] value("ARG" . (2 * k + 1)) using 1:2 with linespoints lw 2 pt 7 ps 0.8 \
	lc k title value("ARG" . (2 * k)), \
     for [k = 1:n] value("ARG" . (2 * k + 1)) using 1:3 with lines lw 1 dt 2 lc k notitle
