#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Figures of a `stackmapctl report`, for the VM tests.

  check-report.py REPORT [--kallsyms FILE] [--first-frame FUNC]
                  [--subset-of FULL_REPORT]

Prints: events, stack entries by kind (stack_id, kernel_stack), resolved,
unresolved, earliest and latest timestamp. With --kallsyms and
--first-frame, counts resolved stacks whose innermost frame is not FUNC
(a regular expression; a plausibility check on resolution). With --subset-of, every event of
REPORT must be in FULL_REPORT with the very same stack (a segment decoded
alone must read as it does among all segments). Exit status 0; 1 if a
--subset-of check fails; 2 on unreadable input.
"""
import argparse
import bisect
import re
import sys

EVENT = re.compile(r'^(.*)-(\d+)\s+\[(\d+)\]\s+(\d+)\.(\d+):\s+(\S+):\s?(.*)$')


def symbols(path):
    syms = []
    with open(path) as f:
        for line in f:
            p = line.split()
            if len(p) >= 3 and p[1] in 'tTwW':
                syms.append((int(p[0], 16), p[2]))
    syms.sort()
    return [a for a, _ in syms], [n for _, n in syms]


def frame_name(text, syms):
    text = text.strip()
    m = re.match(r'^([0-9a-fA-F]+)$', text)
    if m and syms:
        i = bisect.bisect_right(syms[0], int(m.group(1), 16)) - 1
        return syms[1][i] if i >= 0 else text
    m = re.match(r'^(\S+) \([0-9a-fA-F]+\)$', text)
    if m:
        return m.group(1)
    return re.sub(r'\+0x[0-9a-f]+/0x[0-9a-f]+$', '', text)


def parse(path):
    """[(key, kind, frames or None, unresolved reason)] for every stack entry."""
    out = []
    cur = None
    events = 0
    first = last_ts = None
    with open(path, errors='replace') as f:
        for line in f:
            line = line.rstrip('\n')
            if line.startswith('=> '):
                if cur is not None:
                    if line.startswith('=> <'):
                        cur[3] = line[3:]
                    else:
                        cur[2].append(line[3:])
                continue
            m = EVENT.match(line)
            if not m:
                cur = None
                continue
            cpu = int(m.group(3))
            ts = int(m.group(4)) * 10**6 + int(m.group(5))
            first = ts if first is None else min(first, ts)
            last_ts = ts if last_ts is None else max(last_ts, ts)
            name = m.group(6)
            if name in ('stack_id', 'kernel_stack'):
                cur = [(cpu, ts, name), name, [], None]
                out.append(cur)
                continue
            events += 1
            cur = None
    return out, events, first, last_ts


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('report')
    ap.add_argument('--kallsyms')
    ap.add_argument('--first-frame')
    ap.add_argument('--subset-of')
    args = ap.parse_args()
    try:
        stacks, events, first, last = parse(args.report)
        syms = symbols(args.kallsyms) if args.kallsyms else None
    except OSError as e:
        print('check-report: %s' % e, file=sys.stderr)
        return 2
    by_kind = {'stack_id': 0, 'kernel_stack': 0}
    resolved = unresolved = odd = 0
    for key, kind, frames, reason in stacks:
        by_kind[kind] += 1
        if reason is not None:
            unresolved += 1
            continue
        resolved += 1
        if args.first_frame and frames and not re.fullmatch(args.first_frame,
                                                             frame_name(frames[0], syms)):
            odd += 1
    print('events %d stack_id %d kernel_stack %d resolved %d unresolved %d first %.6f last %.6f'
          % (events, by_kind['stack_id'], by_kind['kernel_stack'], resolved, unresolved,
             (first or 0) / 1e6, (last or 0) / 1e6))
    if args.first_frame:
        print('stacks not starting at %s: %d' % (args.first_frame, odd))
    status = 0
    if args.subset_of:
        full, _, _, _ = parse(args.subset_of)
        index = {e[0]: e for e in full}
        missing = differ = 0
        for key, kind, frames, reason in stacks:
            other = index.get(key)
            if other is None:
                missing += 1
            elif (frames, reason) != (other[2], other[3]):
                differ += 1
        print('against the whole archive: %d stacks missing, %d different' % (missing, differ))
        if missing or differ:
            status = 1
    return status


if __name__ == '__main__':
    sys.exit(main())
