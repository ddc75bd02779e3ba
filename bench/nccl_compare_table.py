#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The table of bench/nccl_compare.sh, and issue 14's goals judged on it.

Usage: nccl_compare_table.py RUNS.TSV "MODES"

RUNS.TSV holds one line per size of each run: mode, size in bytes, repetition, time in us,
busbw in GB/s, tab-separated (what nccl_compare.sh collects). Prints per size and mode the
median time and busbw with min-max and the number of runs, the ratios railnet/IB and
railnet/Socket (and railnet-host/ib-host, railnet-host/shm when both ran), then one line per goal that this
run's medians can judge: met, not met (with the sizes that miss), or not measured (and why).
Exit 0; 1 with a message naming the line when RUNS.TSV is malformed.
"""
import math
import statistics
import sys

KIB, MIB, GIB = 1 << 10, 1 << 20, 1 << 30


def size_name(s):
    for unit, name in ((GIB, "GiB"), (MIB, "MiB"), (KIB, "KiB")):
        if s >= unit and s % unit == 0:
            return f"{s // unit} {name}"
    return f"{s} B"


def load(path):
    runs = {}
    try:
        f = open(path)
    except OSError as e:
        sys.exit(f"nccl_compare_table: cannot read {path}: {e.strerror}")
    with f:
        for n, line in enumerate(f, 1):
            cols = line.rstrip("\n").split("\t")
            try:
                if len(cols) != 5:
                    raise ValueError(f"{len(cols)} columns")
                m, size, t, bw = cols[0], int(cols[1]), float(cols[3]), float(cols[4])
                int(cols[2])
                if not m or size < 0 or not (math.isfinite(t) and math.isfinite(bw)) or t < 0 or bw < 0:
                    raise ValueError("empty mode, or a number negative or not finite")
            except ValueError as e:
                sys.exit(f"nccl_compare_table: {path}:{n}: want MODE<TAB>SIZE<TAB>REP<TAB>"
                         f"TIME_US<TAB>BUSBW (finite non-negative numbers), got {line.strip()!r} ({e})")
            runs.setdefault((m, size), []).append((t, bw))
    return runs


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: nccl_compare_table.py RUNS.TSV \"MODES\"")
    runs = load(sys.argv[1])
    modes = sys.argv[2].split()
    sizes = sorted({s for (_, s) in runs})

    def med(m, s, k):
        v = sorted(x[k] for x in runs.get((m, s), []))
        return (statistics.median(v), v[0], v[-1], len(v)) if v else None

    def ratio(a, b, s, k):
        x, y = med(a, s, k), med(b, s, k)
        return x[0] / y[0] if x and y and y[0] else None

    def fmt(r, w):
        return f"{r:.3f}".rjust(w) if r is not None else "-".rjust(w)

    print("# medians of the out-of-place column; min-max in parentheses; time in us, "
          "busbw in GB/s")
    head = f"{'size':>11}"
    for m in modes:
        head += f" | {m + ' us':>26} {m + ' GB/s':>26}"
    host = "railnet-host" in modes and "ib-host" in modes
    shm = "railnet-host" in modes and "shm" in modes
    print(head + " | bw r/IB | t r/IB | bw r/Sock | t r/Sock"
          + (" | bw rh/IBh | t rh/IBh" if host else "")
          + (" | bw rh/SHM | t rh/SHM" if shm else ""))
    for s in sizes:
        line = f"{s:>11}"
        for m in modes:
            t, b = med(m, s, 0), med(m, s, 1)
            if t:
                line += (f" | {t[0]:>10.1f} ({t[1]:.1f}-{t[2]:.1f})".ljust(29)
                         + f" {b[0]:>7.3f} ({b[1]:.2f}-{b[2]:.2f}) n={t[3]}".ljust(27))
            else:
                line += " | -".ljust(56)
        line += (f" | {fmt(ratio('railnet', 'ib', s, 1), 7)} | {fmt(ratio('railnet', 'ib', s, 0), 6)}"
                 f" | {fmt(ratio('railnet', 'socket', s, 1), 9)}"
                 f" | {fmt(ratio('railnet', 'socket', s, 0), 8)}")
        if host:
            line += (f" | {fmt(ratio('railnet-host', 'ib-host', s, 1), 9)}"
                     f" | {fmt(ratio('railnet-host', 'ib-host', s, 0), 8)}")
        if shm:
            line += (f" | {fmt(ratio('railnet-host', 'shm', s, 1), 9)}"
                     f" | {fmt(ratio('railnet-host', 'shm', s, 0), 8)}")
        print(line)

    def judge(name, other, k, lo, hi, want, better, mine="railnet"):
        """Goal over the sizes in [lo, hi] where both modes ran: every ratio passes `want`."""
        got = [(s, ratio(mine, other, s, k)) for s in sizes if lo <= s <= hi]
        got = [(s, r) for s, r in got if r is not None]
        if not got:
            why = (f"no {other} mode" if other not in modes
                   else f"no {mine} mode" if mine not in modes
                   else "no size in range ran both modes")
            return f"# goal {name}: not measured ({why})"
        miss = [f"{size_name(s)} {r:.3f}" for s, r in got if not better(r, want)]
        where = ", ".join(size_name(s) for s, _ in got)
        if miss:
            return f"# goal {name}: not met ({'; '.join(miss)}; sizes judged: {where})"
        worst = min(got, key=lambda x: x[1]) if k == 1 else max(got, key=lambda x: x[1])
        return (f"# goal {name}: met (closest {size_name(worst[0])} {worst[1]:.3f}; "
                f"sizes judged: {where})")

    def ge(r, w):
        return r >= w

    def le(r, w):
        return r <= w

    print("# issue 14's goals on this run's medians:")
    print(judge("busbw railnet/IB >= 1.10 from 64 KiB to 1 GiB", "ib", 1, 64 * KIB, GIB, 1.10, ge))
    print(judge("8 B time railnet/IB <= 0.85", "ib", 0, 8, 8, 0.85, le))
    print(judge("busbw railnet/Socket >= 3 from 64 MiB", "socket", 1, 64 * MIB, 1 << 62, 3.0, ge))
    print(judge("8 B time railnet/Socket <= 1", "socket", 0, 8, 8, 1.0, le))
    print(judge("busbw railnet-host/SHM >= 0.5 at 512 MiB", "shm", 1, 512 * MIB, 512 * MIB, 0.5,
                ge, mine="railnet-host"))


if __name__ == "__main__":
    main()
