#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Checks the pictures of railnet-preflight --heatmap (test/preflight/heatmap.sh).

usage: heatmap_check.py HEALTHY.png SLOW.png NRAILS SLOW_RAIL MARGIN

Decodes both PNGs with the standard library only (zlib + struct: 8-bit RGB or RGBA, not
interlaced, the 5 filter types) and checks that:
  - both are of the size render_heatmap asks for: ceil(sqrt(NRAILS)) matrices a row, each
    360 x 340 pixels;
  - the slow picture has a slow cell the healthy one does not: the palette runs red (0) ->
    yellow (half the panel's top GB/s) -> green (fast), so a cell at half speed or less is
    "warm" (R > 180, B < 90: red, orange, yellow, yellow-green: under about 2/3 of the
    colour box's top; forest green is R 34, a healthy cell about R 80). The slow picture
    must have MARGIN or more warm pixels beyond the healthy one's in SLOW_RAIL's panel, and
    about none more in any other panel (the colour boxes are warm in both pictures);
  - in SLOW_RAIL's panel those warm pixels make one band of lines in the matrix's bottom row
    (the last rank's, rank 3 sending), and the healthy picture has no such band anywhere.
Also prints the strongly red pixel counts (R > 180, G < 90, B < 90) of each panel. Exit 0
when all hold, 1 otherwise.
"""
import struct
import sys
import zlib

PANEL_W, PANEL_H = 360, 340


def decode(path):
    """(width, height, rows of (r, g, b)) of an 8-bit RGB/RGBA non-interlaced PNG"""
    with open(path, "rb") as f:
        data = f.read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError(f"{path}: not a PNG")
    pos, idat, hdr = 8, b"", None
    while pos + 8 <= len(data):
        n, typ = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        pos += 12 + n
        if typ == b"IHDR":
            hdr = struct.unpack(">IIBBBBB", body)
        elif typ == b"IDAT":
            idat += body
        elif typ == b"IEND":
            break
    if hdr is None:
        raise ValueError(f"{path}: no IHDR")
    w, h, depth, ctype, _, _, interlace = hdr
    if depth != 8 or ctype not in (2, 6) or interlace:
        raise ValueError(f"{path}: bit depth {depth}, colour type {ctype}, interlace "
                         f"{interlace}: want 8-bit RGB or RGBA, not interlaced")
    bpp = 3 if ctype == 2 else 4
    raw, stride = zlib.decompress(idat), w * bpp
    if len(raw) < h * (1 + stride):
        raise ValueError(f"{path}: {len(raw)} bytes of pixel data, want {h * (1 + stride)}")
    prev, out, i = bytearray(stride), [], 0
    for _ in range(h):
        f, line = raw[i], bytearray(raw[i + 1:i + 1 + stride])
        i += 1 + stride
        if f == 1:  # Sub
            for x in range(bpp, stride):
                line[x] = (line[x] + line[x - bpp]) & 255
        elif f == 2:  # Up
            for x in range(stride):
                line[x] = (line[x] + prev[x]) & 255
        elif f == 3:  # Average
            for x in range(stride):
                a = line[x - bpp] if x >= bpp else 0
                line[x] = (line[x] + (a + prev[x]) // 2) & 255
        elif f == 4:  # Paeth
            for x in range(stride):
                a = line[x - bpp] if x >= bpp else 0
                b = prev[x]
                c = prev[x - bpp] if x >= bpp else 0
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[x] = (line[x] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        elif f != 0:
            raise ValueError(f"{path}: filter type {f}")
        out.append([tuple(line[x:x + 3]) for x in range(0, stride, bpp)])
        prev = line
    return w, h, out


def warm(r, g, b):
    return r > 180 and b < 90


def red(r, g, b):
    return r > 180 and g < 90 and b < 90


def coloured(r, g, b):
    return max(r, g, b) - min(r, g, b) > 60


def panels(px, cols, rows):
    """per panel: counts of warm and red pixels, and per line of the panel the numbers of
    warm and of coloured pixels"""
    res = []
    for p in range(cols * rows):
        x0, y0 = (p % cols) * PANEL_W, (p // cols) * PANEL_H
        nwarm = nred = 0
        lwarm, lcol = [], []
        for line in px[y0:y0 + PANEL_H]:
            w = c = 0
            for r, g, b in line[x0:x0 + PANEL_W]:
                if warm(r, g, b):
                    w += 1
                    nred += red(r, g, b)
                c += coloured(r, g, b)
            nwarm += w
            lwarm.append(w)
            lcol.append(c)
        res.append({"warm": nwarm, "red": nred, "lwarm": lwarm, "lcol": lcol})
    return res


def band(p):
    """(matrix top, matrix bottom, warm lines) of a panel: the matrix's lines have a row of
    coloured cells (60 or more coloured pixels: the colour box alone is narrower), warm
    lines 60 or more warm pixels (a warm cell is wider than the colour box)"""
    m = [y for y, c in enumerate(p["lcol"]) if c >= 60]
    wl = [y for y, c in enumerate(p["lwarm"]) if c >= 60]
    return (m[0], m[-1], wl) if m else (None, None, wl)


def main():
    if len(sys.argv) != 6:
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    healthy, slow = sys.argv[1], sys.argv[2]
    nrails, srail, margin = (int(a) for a in sys.argv[3:6])
    cols = 1
    while cols * cols < nrails:
        cols += 1
    rows = (nrails + cols - 1) // cols
    want = (PANEL_W * cols, PANEL_H * rows)
    ok, got = True, {}
    for name, path in (("healthy", healthy), ("slow", slow)):
        try:
            w, h, px = decode(path)
        except (OSError, ValueError, struct.error, zlib.error) as e:
            print(f"FAIL: {name} picture: {e}")
            ok = False
            continue
        if (w, h) != want:
            print(f"FAIL: {name} picture is {w}x{h}; render_heatmap asks {want[0]}x{want[1]} "
                  f"for {nrails} rail(s)")
            ok = False
            continue
        got[name] = panels(px, cols, rows)
        print(f"{name}: {w}x{h}; per rail's panel: warm pixels "
              f"{[p['warm'] for p in got[name]]}, strongly red {[p['red'] for p in got[name]]}")
    if not ok:
        return 1
    hp, sp = got["healthy"], got["slow"]
    more = [s["warm"] - h["warm"] for s, h in zip(sp, hp)]
    for r in range(nrails):
        top, bot, wl = band(hp[r])
        if top is None:
            print(f"FAIL: healthy picture: no matrix found in rail {r}'s panel")
            ok = False
        elif wl:
            print(f"FAIL: healthy picture: rail {r}'s panel has a warm (slow) band, lines "
                  f"{wl[0]}-{wl[-1]}")
            ok = False
        if r != srail and abs(more[r]) >= margin // 4:
            print(f"FAIL: slow picture: rail {r}'s panel has {more[r]} warm pixels more than "
                  f"the healthy one; only rail {srail}'s is slow")
            ok = False
    if more[srail] < margin:
        print(f"FAIL: slow picture: rail {srail}'s panel has {more[srail]} warm (slow) pixels "
              f"more than the healthy one, want {margin} or more")
        ok = False
    top, bot, wl = band(sp[srail])
    if top is None or not wl:
        print(f"FAIL: slow picture: no matrix or no warm band in rail {srail}'s panel")
        ok = False
    else:
        # the bottom row of the matrix: the last quarter of its lines (4 ranks)
        if wl[0] < top + 0.7 * (bot - top) or wl[-1] > bot or wl[-1] - wl[0] + 1 != len(wl):
            print(f"FAIL: slow picture: rail {srail}'s warm lines {wl[0]}-{wl[-1]} "
                  f"({len(wl)}) are not one band in the matrix's bottom row (lines {top}-{bot})")
            ok = False
        else:
            print(f"slow: rail {srail}'s warm band is lines {wl[0]}-{wl[-1]} of its panel, the "
                  f"matrix's {top}-{bot}: the last rank's row")
    if ok:
        print(f"ok: pictures {want[0]}x{want[1]}; slow has {more[srail]} warm (slow) pixels "
              f"more than healthy in rail {srail}'s panel, {sum(more) - more[srail]} elsewhere")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
