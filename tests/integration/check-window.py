#!/usr/bin/env python3
"""Check a filtered `stackmapctl report` against the full report of the same
segments: it must hold exactly the full report's events that pass the
filters, in the same order, each with its stack (a stack follows its event
on the same CPU and goes with it).

Usage: check-window.py [--wall] [--since T] [--until T] [--cpu N] [--pid P]
                       [--comm C] [--event NAME] [--split T] FULL FILTERED
--wall: the reports print dates (report --wall) and T are ISO 8601 times
with a zone; otherwise T are trace-clock seconds. Events within a
millisecond (wall) or two microseconds (trace clock) of a bound may be on
either side: rounding of the printed time. --split T: the filtered report
must have events both before and after T (a date as printed), for a
window that spans a rotation.
"""

import argparse
import datetime
import re
import sys

HEAD = re.compile(r'^\s*(.+?)-(\d+)\s+\[(\d+)\]\s+(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d+|\d+\.\d+):\s+(\w+):')


def parse_time(s, wall):
    if wall:
        s = s.replace('Z', '+00:00')
        if 'T' not in s and '+' not in s:
            s += '+00:00'
        return datetime.datetime.fromisoformat(s.replace(' ', 'T')).timestamp()
    return float(s)


def blocks(path, wall):
    """[(time, cpu, pid, comm, name, text)] of a report, stacks attached."""
    out = []
    with open(path, errors='replace') as f:
        for line in f:
            m = HEAD.match(line)
            if m:
                comm, pid, cpu, t, name = m.groups()
                out.append([parse_time(t, wall), int(cpu), int(pid), comm, name, line])
            elif line.startswith('=>') and out:
                out[-1][5] += line
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--wall', action='store_true')
    for o in ('since', 'until', 'cpu', 'pid', 'comm', 'event', 'split'):
        ap.add_argument('--' + o)
    ap.add_argument('full')
    ap.add_argument('filtered')
    a = ap.parse_args()
    slack = 1e-3 if a.wall else 2e-6
    lo = parse_time(a.since, a.wall) if a.since else None
    hi = parse_time(a.until, a.wall) if a.until else None

    def edge(t):
        return (lo is not None and abs(t - lo) <= slack) or (hi is not None and abs(t - hi) <= slack)

    want, last = [], {}
    for b in blocks(a.full, a.wall):
        t, cpu, pid, comm, name, text = b
        if name in ('kernel_stack', 'stack_id'):
            # a stack goes with its event, at or near the window's edges too
            if last.get(cpu):
                b[0] = last[cpu]
                want.append(b)
            continue
        ok = ((a.cpu is None or cpu == int(a.cpu)) and (a.pid is None or pid == int(a.pid))
              and (a.comm is None or comm.strip() == a.comm)
              and (a.event is None or name == a.event.split(':')[-1])
              and (lo is None or t >= lo - slack) and (hi is None or t <= hi + slack))
        last[cpu] = t if ok else None
        if ok:
            want.append(b)
    got, owner = blocks(a.filtered, a.wall), {}
    for b in got:
        if b[4] in ('kernel_stack', 'stack_id'):
            b[0] = owner.get(b[1], b[0])
        else:
            owner[b[1]] = b[0]
    want = [b for b in want if not edge(b[0])]
    got_inner = [b for b in got if not edge(b[0])]
    if [b[5] for b in want] != [b[5] for b in got_inner]:
        wl, gl = [b[5] for b in want], [b[5] for b in got_inner]
        i = next((i for i, (x, y) in enumerate(zip(wl, gl)) if x != y), min(len(wl), len(gl)))
        print(f'expected {len(wl)} events, got {len(gl)}; first difference at {i}:\n'
              f'  expected: {wl[i] if i < len(wl) else None}  got:      '
              f'{gl[i] if i < len(gl) else None}', file=sys.stderr)
        return 1
    if any((lo is not None and b[0] < lo - slack) or (hi is not None and b[0] > hi + slack)
           for b in got):
        print('an event lies outside the window', file=sys.stderr)
        return 1
    if not want:
        print('the window holds no event', file=sys.stderr)
        return 1
    if a.split:
        s = parse_time(a.split, a.wall)
        if not any(b[0] < s for b in got) or not any(b[0] >= s for b in got):
            print('the window does not reach both sides of ' + a.split, file=sys.stderr)
            return 1
    print(f'{len(want)} events as expected')
    return 0


if __name__ == '__main__':
    sys.exit(main())
