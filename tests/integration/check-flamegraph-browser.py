#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""
A flame graph SVG that `stackmapctl flamegraph` wrote, opened in headless
Chromium through chromedriver (WebDriver), used as a person would: the page
loads without script errors and fills the window (also after a resize);
hovering a frame shows its name and count; clicking a frame zooms it to the
full width and "Reset Zoom" undoes it; "Search" highlights the matching
frames and shows the share they match, the same share this script computes
from the SVG itself. In a differential graph every frame is red, blue or
grey as its change says. A screenshot is saved.

Usage: check-flamegraph-browser.py SVG SCREENSHOT.png [--diff] [--search REGEX]
Exit status 0 if every check passed, 1 otherwise (each failure printed).
"""
import argparse
import re
import sys
import xml.dom.minidom

from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.by import By

from headless import check, chromium, failures, wait_for


def svg_frames(path):
    """(label, title, x, w, depth) of every frame, from the file itself."""
    doc = xml.dom.minidom.parse(path)
    out = []
    for g in doc.getElementsByTagName("g"):
        if not g.hasAttribute("data-x"):
            continue
        title = g.getElementsByTagName("title")[0].firstChild.data
        i = title.rfind(" (")
        out.append((title[:i] if i >= 0 else title, title, float(g.getAttribute("data-x")),
                    float(g.getAttribute("data-w")), int(g.getAttribute("data-d"))))
    return out


def matched_share(frames, regex):
    """The share of the width that frames matching regex cover, nested ones once."""
    rx = re.compile(regex)
    hits = sorted(((x, w) for label, _, x, w, d in frames if d > 0 and rx.search(label)),
                  key=lambda h: (h[0], -h[1]))
    total, end = 0.0, -1.0
    for x, w in hits:
        if x + w <= end:
            continue
        total += w if x >= end else x + w - end
        end = x + w
    return total


def frame_element(driver, title_prefix):
    for g in driver.find_elements(By.CSS_SELECTOR, "#frames > g"):
        t = g.find_element(By.TAG_NAME, "title").get_attribute("textContent")
        if t.startswith(title_prefix):
            return g
    return None


def rect_width(g):
    return float(g.find_element(By.TAG_NAME, "rect").get_attribute("width"))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("svg")
    ap.add_argument("screenshot")
    ap.add_argument("--diff", action="store_true")
    ap.add_argument("--search", default=None)
    a = ap.parse_args()

    frames = svg_frames(a.svg)
    check(len(frames) > 3, "the SVG has %d frames" % len(frames))
    with chromium("1600,1000") as driver:
        run(driver, a, frames)
    if failures:
        print("%d check(s) failed" % len(failures), file=sys.stderr)
        return 1
    print("all browser checks passed")
    return 0


def run(driver, a, frames):
    driver.get("file://" + a.svg)
    wait_for(lambda: driver.execute_script("return typeof W === 'number' && W > 0"),
             "the graph's script to start")

    # no script errors
    errors = [e for e in driver.get_log("browser") if e.get("level") == "SEVERE"]
    check(not errors, "script errors: %s" % errors)

    # the graph fills the window, and follows it
    def fills():
        inner = driver.execute_script("return window.innerWidth")
        w = float(driver.execute_script(
            "return document.documentElement.getAttribute('width')"))
        root = frame_element(driver, "all (")
        return inner, w, rect_width(root) if root else 0
    inner, w, root_w = fills()
    check(abs(w - inner) < 1, "the SVG is %s wide in a window of %s" % (w, inner))
    check(abs(root_w - (inner - 20)) < 1, "the root frame is %s wide, not %s" % (root_w, inner - 20))
    driver.set_window_size(1100, 900)
    wait_for(lambda: abs(fills()[1] - fills()[0]) < 1, "the graph to follow a resize")
    inner, w, root_w = fills()
    check(abs(root_w - (inner - 20)) < 1,
          "after a resize the root frame is %s wide, not %s" % (root_w, inner - 20))
    driver.set_window_size(1600, 1000)
    wait_for(lambda: abs(fills()[1] - fills()[0]) < 1, "the graph to follow a resize back")

    # the title names the events
    title = driver.find_element(By.ID, "title").get_attribute("textContent")
    events = [label for label, _, _, _, d in frames if d == 1]
    check(any(e in title for e in events), "the title '%s' names none of %s" % (title, events))

    # hover: the details line shows the frame's name and count
    target = max((f for f in frames if f[4] == 2), key=lambda f: f[3])
    g = frame_element(driver, target[1])
    check(g is not None, "no frame '%s' in the page" % target[1])
    ActionChains(driver).move_to_element(g.find_element(By.TAG_NAME, "rect")).perform()
    details = wait_for(lambda: driver.find_element(By.ID, "details").get_attribute(
        "textContent").strip(), "details on hover")
    check(details == target[1], "hover shows '%s', not '%s'" % (details, target[1]))
    check(re.search(r"\(\d+ \w+, [0-9.]+%", details or "") is not None,
          "hover shows no count: '%s'" % details)

    # click: a narrow frame deep in the graph zooms to the full width
    deep = [f for f in frames if f[4] >= 3 and 0.02 < f[3] < 0.9]
    if check(deep, "no frame narrow enough to zoom"):
        z = max(deep, key=lambda f: f[3])
        g = frame_element(driver, z[1])
        ActionChains(driver).move_to_element(g.find_element(By.TAG_NAME, "rect")).click().perform()
        inner = driver.execute_script("return window.innerWidth")
        wait_for(lambda: abs(rect_width(frame_element(driver, z[1])) - (inner - 20)) < 1,
                 "'%s' to fill the width after a click" % z[0])
        unzoom = driver.find_element(By.ID, "unzoom")
        check("hide" not in (unzoom.get_attribute("class") or ""), "no Reset Zoom after a zoom")
        driver.save_screenshot(a.screenshot.replace(".png", "-zoomed.png"))
        unzoom.click()
        wait_for(lambda: abs(rect_width(frame_element(driver, z[1])) - z[3] * (inner - 20)) < 1,
                 "Reset Zoom to restore '%s'" % z[0])

    # search: matches painted, their share shown and right
    regex = a.search or target[0]
    driver.find_element(By.ID, "search").click()
    alert = wait_for(lambda: driver.switch_to.alert, "the search prompt")
    if alert:
        alert.send_keys(regex)
        alert.accept()
    matched = wait_for(lambda: driver.find_element(By.ID, "matched").get_attribute(
        "textContent").strip(), "the matched share")
    want = 100 * matched_share(frames, regex)
    m = re.match(r"Matched: ([0-9.]+)%", matched or "")
    check(m is not None and abs(float(m.group(1)) - want) < 0.01,
          "search '%s' shows '%s', the SVG says %.2f%%" % (regex, matched, want))
    painted = driver.execute_script(
        "return Array.prototype.filter.call(document.querySelectorAll('#frames > g rect'),"
        " function (r) { return r.getAttribute('fill') === 'rgb(230,0,230)'; }).length")
    n_match = sum(1 for label, _, _, _, d in frames if d > 0 and re.search(regex, label))
    check(painted == n_match, "%d frames painted, %d match '%s'" % (painted, n_match, regex))
    driver.save_screenshot(a.screenshot.replace(".png", "-search.png"))
    driver.find_element(By.ID, "search").click()  # Reset Search
    wait_for(lambda: driver.find_element(By.ID, "matched").get_attribute(
        "textContent").strip() == "", "Reset Search")

    # differential: the colour follows the sign of the change in the title
    if a.diff:
        colours = driver.execute_script(
            "return Array.prototype.map.call(document.querySelectorAll('#frames > g'),"
            " function (g) { return [g.querySelector('title').textContent,"
            " g.querySelector('rect').getAttribute('fill')]; })")
        red = blue = 0
        for title, fill in colours:
            m = re.search(r"before \d+, ([+-][0-9.]+)% of the total\)$", title)
            if not check(m, "no change in the title '%s'" % title):
                continue
            r, g_, b = (int(v) for v in re.findall(r"\d+", fill))
            change = float(m.group(1))
            is_red = r == 255 and g_ == b and g_ <= 225
            is_blue = b == 255 and r == g_ and r <= 225
            is_grey = r == g_ == b == 225
            if change > 0 and is_red:
                red += 1
            elif change < 0 and is_blue:
                blue += 1
            elif not (abs(change) < 0.005 and (is_red or is_blue or is_grey)):
                check(False, "'%s' is %s" % (title, fill))
        check(red > 0 and blue > 0, "the diff has %d red and %d blue frames" % (red, blue))

    errors = [e for e in driver.get_log("browser") if e.get("level") == "SEVERE"]
    check(not errors, "script errors while in use: %s" % errors)
    driver.save_screenshot(a.screenshot)


if __name__ == "__main__":
    sys.exit(main())
