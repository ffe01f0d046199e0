#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Check `stackmapctl memory --json` against a workload that held N pipes.

check-memory.py JSON SVG WORKLOAD N

WORKLOAD is what `smload -H N` printed: the CLOCK_REALTIME nanoseconds of
"opening", "opened", "closing" and "closed". The peak must lie between
"opened" and "closing" (the pipes held), give or take 50 ms; its first stack must be the pipes'
(alloc_pipe_info calling the allocator) with N objects live at the peak (those an
interrupt separated from their stack count under "[no stack]"); at the end no
object of that stack may be live (every pipe was closed). In the SVG, the
point marked "peak" must be the highest point of the curve and carry the
peak's bytes.
"""
import json
import re
import sys
import xml.etree.ElementTree as ET


def fail(msg):
    print("check-memory: " + msg, file=sys.stderr)
    sys.exit(1)


def pipes(stack):
    """Whether stack allocates for a pipe itself (not, deeper, for a new slab's metadata)."""
    return stack["frames"][1:2] == ["alloc_pipe_info"]


def main():
    doc = json.load(open(sys.argv[1]))
    svg = ET.parse(sys.argv[2]).getroot()
    steps = {}
    for line in open(sys.argv[3]):
        m = re.match(r"smload: (\w+) (\d+) (\d+)$", line.strip())
        if m:
            steps[m.group(1)] = int(m.group(3))
    n = int(sys.argv[4])
    if set(steps) != {"opening", "opened", "closing", "closed"}:
        fail("the workload did not say its steps: %s" % steps)
    if not doc["wall_clock"]:
        fail("no wall-clock times in the recording")

    peak = doc["peak"]
    t = peak["time_ns"]
    # the last pipe is made just before "opened" is read from the clock, and
    # trace clock to wall clock (CLOCK pairs) is good to a few milliseconds
    slack = 50 * 1000 * 1000
    if not (steps["opening"] <= t and steps["opened"] - slack <= t <= steps["closing"] + slack):
        fail("peak at %d, not while the pipes were held (%d .. %d): %.3f s after they were open"
             % (t, steps["opened"], steps["closing"], (t - steps["opened"]) / 1e9))
    top = peak["stacks"][0]
    if not pipes(top):
        fail("the peak's first stack is not the pipes': %s" % top["frames"])
    # An interrupt that allocates or frees between an event and its stack
    # (the stacktrace trigger runs after the event is written) leaves that
    # event without its stack: it counts under "[no stack]", never guessed.
    nostack = sum(s["objects"] for s in peak["stacks"]
                  if s["frames"] == ["[no stack]"] and s["event"] == top["event"])
    if top["objects"] + nostack < n or top["objects"] < n * 0.99:
        fail("the pipes' stack holds %d objects at the peak (%d %s without a stack), not %d"
             % (top["objects"], nostack, top["event"], n))
    # Freed by the end: certainly, unless events were lost (their frees may
    # be among them: memory then says how many bytes are uncertain)
    for s in doc["end"]["stacks"]:
        if pipes(s) and not doc["end"].get("uncertain_bytes"):
            fail("%d objects of the pipes' stack are still live at the end" % s["objects"])
    print("# peak %d bytes at +%.3f s after the pipes were open; %d objects of %s"
          % (peak["bytes"], (t - steps["opened"]) / 1e9, top["objects"], " <- ".join(top["frames"][:3])))

    ns = {"s": "http://www.w3.org/2000/svg"}
    mark = svg.find(".//s:circle[@id='peak']", ns)
    line = svg.find(".//s:polyline[@id='curve']", ns)
    if mark is None or line is None:
        fail("the SVG has no curve or no peak mark")
    points = [tuple(map(float, p.split(","))) for p in line.get("points").split()]
    top_point = min(points, key=lambda p: p[1])
    cx, cy = float(mark.get("cx")), float(mark.get("cy"))
    if abs(cy - top_point[1]) > 0.01 or abs(cx - top_point[0]) > 0.01:
        fail("the SVG marks (%.2f, %.2f), its curve's highest point is (%.2f, %.2f)"
             % (cx, cy, top_point[0], top_point[1]))
    if int(mark.get("data-bytes")) != peak["bytes"]:
        fail("the SVG's peak is %s bytes, the data's %d" % (mark.get("data-bytes"), peak["bytes"]))
    print("# the SVG marks its highest point, %d bytes" % peak["bytes"])


main()
