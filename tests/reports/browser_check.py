#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Open a bkm report in headless Chromium and check what a reader would see.

1. The DOM Chromium built (--dump-dom) holds every section (data-bkm-section), no <script>
   element, and the hostile sweep label as text (escaped in the serialised DOM).
2. No console message: the page has no script, so any message Chromium logs for it (a blocked
   resource, a Content-Security-Policy violation, a parse error) is an error. The detector is
   checked first on a page that does log one, so a silent Chromium cannot pass the test.
3. A screenshot that is not blank: the PNG is decoded with zlib (stdlib only) and its non-white
   pixels counted.
Exit 0 ok, 1 a check failed, 77 when Chromium cannot run here at all."""
import os
import re
import struct
import subprocess
import sys
import zlib

SECTIONS = ["host", "summary", "heatmap", "blocktime", "scaling", "boxplots", "noise", "layers", "counters",
            "binding", "failed", "history"]
LABEL_TEXT = "&lt;script&gt;alert(1)&lt;/script&gt;"


def chromium(exe, tmp, *args, timeout=90):
    cmd = [exe, "--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run",
           "--disable-extensions", "--disable-background-networking", "--disable-sync",
           "--user-data-dir=" + os.path.join(tmp, "profile"), "--enable-logging=stderr", "--v=0",
           "--virtual-time-budget=2000"] + list(args)
    p = subprocess.run(cmd, capture_output=True, timeout=timeout)
    return p.returncode, p.stdout.decode("utf-8", "replace"), p.stderr.decode("utf-8", "replace")


def console_lines(stderr):
    return [l for l in stderr.splitlines() if "CONSOLE(" in l or ":CONSOLE" in l]


def paeth(a, b, c):
    p = a + b - c
    pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
    if pa <= pb and pa <= pc:
        return a
    return b if pb <= pc else c


def png_nonwhite(path):
    """(width, height, non-white pixels) of an 8-bit RGB/RGBA PNG."""
    data = open(path, "rb").read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError("not a PNG")
    pos, idat, w = 8, b"", None
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        if kind == b"IHDR":
            w, h, depth, ctype = struct.unpack(">IIBB", body[:10])
            if depth != 8 or ctype not in (2, 6):
                raise ValueError("unexpected PNG format depth %d type %d" % (depth, ctype))
            bpp = 3 if ctype == 2 else 4
        elif kind == b"IDAT":
            idat += body
        pos += 12 + n
    raw = zlib.decompress(idat)
    stride = w * bpp
    prev = bytearray(stride)
    nonwhite = 0
    for y in range(h):
        f = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        if f == 1:
            for i in range(bpp, stride):
                line[i] = (line[i] + line[i - bpp]) & 0xFF
        elif f == 2:
            line = bytearray((a + b) & 0xFF for a, b in zip(line, prev))
        elif f == 3:
            for i in range(stride):
                left = line[i - bpp] if i >= bpp else 0
                line[i] = (line[i] + ((left + prev[i]) >> 1)) & 0xFF
        elif f == 4:
            for i in range(stride):
                left = line[i - bpp] if i >= bpp else 0
                ul = prev[i - bpp] if i >= bpp else 0
                line[i] = (line[i] + paeth(left, prev[i], ul)) & 0xFF
        if line.count(0xFF) != stride:  # fast path: an all-white row (alpha 255 too)
            for x in range(w):
                px = line[x * bpp:x * bpp + 3]
                if px != b"\xff\xff\xff":
                    nonwhite += 1
        prev = line
    return w, h, nonwhite


def main():
    exe, report, tmp = sys.argv[1], sys.argv[2], sys.argv[3]
    url = "file://" + os.path.abspath(report)
    # 2. the detector first: a page that logs an error must show up in Chromium's log
    probe = os.path.join(tmp, "probe.html")
    with open(probe, "w") as f:
        f.write("<!DOCTYPE html><html><body><script>console.error('bkm-probe-error')</script>"
                "<p>probe</p></body></html>")
    rc, out, err = chromium(exe, tmp, "--dump-dom", "file://" + probe)
    if rc != 0 or "probe" not in out:
        print("SKIP: chromium cannot render a page here (exit %d): %s" % (rc, err.strip()[-400:]))
        return 77
    if not any("bkm-probe-error" in l for l in console_lines(err)):
        print("FAIL: chromium's log does not show a console error of a page that logs one: the console "
              "check would be blind. Log:\n" + err[-2000:])
        return 1
    # 1. + 2. the report
    rc, dom, err = chromium(exe, tmp, "--dump-dom", url)
    if rc != 0 or "</html>" not in dom:
        print("FAIL: chromium --dump-dom of the report: exit %d\n%s" % (rc, err[-2000:]))
        return 1
    bad = []
    for s in SECTIONS:
        if 'data-bkm-section="%s"' % s not in dom:
            bad.append("section %s missing from the rendered DOM" % s)
    if re.search(r"<script", dom, re.I):
        bad.append("the rendered DOM holds a <script> element")
    if LABEL_TEXT not in dom:
        bad.append("the label is not shown as text (%s not in the DOM)" % LABEL_TEXT)
    msgs = console_lines(err)
    if msgs:
        bad.append("console messages: " + " | ".join(msgs[:5]))
    # 3. a screenshot that is not blank
    shot = os.path.join(tmp, "shot.png")
    rc, out, err = chromium(exe, tmp, "--screenshot=" + shot, "--window-size=900,1400", "--hide-scrollbars", url)
    if rc != 0 or not os.path.exists(shot):
        bad.append("no screenshot (exit %d): %s" % (rc, err[-500:]))
    else:
        w, h, nonwhite = png_nonwhite(shot)
        share = nonwhite / float(w * h)
        print("screenshot %dx%d: %d non-white pixels (%.1f%%)" % (w, h, nonwhite, 100 * share))
        if share < 0.02:
            bad.append("the screenshot is blank (%.2f%% non-white)" % (100 * share))
    if bad:
        print("FAIL:\n  " + "\n  ".join(bad))
        return 1
    print("ok: %d sections rendered, no console message, the label shown as text" % len(SECTIONS))
    return 0


if __name__ == "__main__":
    sys.exit(main())
