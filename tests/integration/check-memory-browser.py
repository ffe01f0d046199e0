#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""
The curve that `stackmapctl memory --svg` wrote, opened in headless Chromium
through chromedriver (WebDriver) as a person opens it: the page loads
without errors, the curve is drawn (a visible box of nonzero size), and the
peak's mark, where the browser draws it, sits on the curve's highest drawn
point; its label says the peak's bytes that `memory --json` gives. A
screenshot is saved.

Usage: check-memory-browser.py SVG JSON SCREENSHOT.png
Exit status 0 if every check passed, 1 otherwise (each failure printed).
"""
import json
import sys

from headless import check, chromium, failures, wait_for


# Where the browser draws them, in page pixels: the curve's highest point
# (the smallest y; the first of equals) and the centre of the peak's mark.
GEOMETRY = """
const line = document.getElementById('curve'), mark = document.getElementById('peak');
if (!line || !mark)
    return null;
const m = line.getScreenCTM(), pts = line.points;
let best = null;
for (let i = 0; i < pts.numberOfItems; i++) {
    const p = pts.getItem(i), x = m.a * p.x + m.c * p.y + m.e, y = m.b * p.x + m.d * p.y + m.f;
    if (best === null || y < best[1] - 1e-6)
        best = [x, y];
}
const r = mark.getBoundingClientRect(), box = line.getBoundingClientRect();
const labels = Array.from(document.querySelectorAll('text')).map(t => t.textContent);
return {top: best, mark: [r.left + r.width / 2, r.top + r.height / 2],
        box: [box.width, box.height], labels: labels};
"""


def human(n):
    """The figure as the SVG's label prints bytes (memory-print.c's units)."""
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if n < 1024 or unit == "TiB":
            return ("%d %s" % (n, unit)) if unit == "B" else ("%.1f %s" % (n, unit))
        n /= 1024.0


def main():
    if len(sys.argv) != 4:
        print(__doc__, file=sys.stderr)
        return 2
    svg, doc, shot = sys.argv[1], json.load(open(sys.argv[2])), sys.argv[3]
    with chromium("1400,900") as driver:
        driver.get("file://" + svg)
        g = wait_for(lambda: driver.execute_script(GEOMETRY), "the curve and its peak mark")
        errors = [e for e in driver.get_log("browser") if e.get("level") == "SEVERE"]
        check(not errors, "page errors: %s" % errors)
        if g:
            check(g["box"][0] > 100 and g["box"][1] > 20,
                  "the curve is drawn %.0f x %.0f pixels" % tuple(g["box"]))
            dx, dy = g["mark"][0] - g["top"][0], g["mark"][1] - g["top"][1]
            check(abs(dx) <= 1.0 and abs(dy) <= 1.0,
                  "the peak's mark is drawn at (%.1f, %.1f), the curve's highest point at "
                  "(%.1f, %.1f)" % (g["mark"][0], g["mark"][1], g["top"][0], g["top"][1]))
            want = human(doc["peak"]["bytes"])
            check(any(t.startswith("peak ") and want in t for t in g["labels"]),
                  "no label says the peak's %s: %s" % (want, [t for t in g["labels"]
                                                           if t.startswith("peak")]))
        driver.save_screenshot(shot)
    if failures:
        print("%d check(s) failed" % len(failures), file=sys.stderr)
        return 1
    print("the curve and its peak are drawn as the data says")
    return 0


if __name__ == "__main__":
    sys.exit(main())
