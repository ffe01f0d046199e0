#!/usr/bin/env python3
"""Compare `stackmapctl report` on segments with `trace-cmd report` on their
trace.dat export: the same events in the same order, with the same task,
CPU, timestamp, name and fields, and every stack with the same frames.

trace-cmd's plugins print some events (sched_switch...) their own way, and
-N (no plugins) prints kernel_stack entries raw, so events are taken from
`trace-cmd report -N` and stacks from `trace-cmd report`.

A task that one segment's saved_cmdlines does not name prints as <...> in
`stackmapctl report` of that segment; the export takes task names from all
the segments it covers, so such an event may carry its name there.

Usage: compare-export.py SM_REPORT TC_REPORT_N TC_REPORT
Exit 0 when they agree, 1 with the first differences on stderr.
"""

import re
import sys

HEAD = re.compile(r'^\s*(.+?)-(\d+)\s+\[(\d+)\]\s+(\d+\.\d+):\s+(\w+):\s*(.*)$')
FRAME = re.compile(r'^\s*=>\s*(\S+)')


def events(path):
    """[(comm, pid, cpu, ts, name, text, frames)] of a report."""
    out = []
    with open(path, errors='replace') as f:
        for line in f:
            line = line.rstrip('\n')
            m = HEAD.match(line)
            if m:
                comm, pid, cpu, ts, name, text = m.groups()
                frames = []
                # -N prints a kernel_stack's first frame on its own line
                for part in text.split('\t')[1:] if name == 'kernel_stack' else []:
                    fm = FRAME.match(part)
                    if fm:
                        frames.append(fm.group(1))
                if name == 'kernel_stack':
                    text = ''
                out.append([comm, pid, int(cpu), ts, name, text.rstrip(), frames])
                continue
            fm = FRAME.match(line)
            if fm and out:
                out[-1][6].append(fm.group(1))
    return out


def main():
    sm, tc_n, tc = (events(p) for p in sys.argv[1:4])
    if len(tc_n) != len(tc):
        print(f'trace-cmd reports differ in length: {len(tc_n)} vs {len(tc)}', file=sys.stderr)
        return 1
    merged = []
    for a, b in zip(tc_n, tc):
        merged.append(a[:6] + [b[6]] if a[4] == 'kernel_stack' else a)
    bad = 0
    if len(sm) != len(merged):
        print(f'stackmapctl printed {len(sm)} events, trace-cmd {len(merged)}', file=sys.stderr)
        bad += 1
    named = 0
    for i, (x, y) in enumerate(zip(sm, merged)):
        if x[0] == '<...>' and y[0] != '<...>':
            named += 1
            x = [y[0]] + x[1:]
        if x != y:
            bad += 1
            if bad <= 5:
                print(f'event {i} differs:\n  stackmapctl: {x}\n  trace-cmd:   {y}',
                      file=sys.stderr)
    stacks = sum(1 for e in sm if e[6])
    print(f'{len(sm)} events, {stacks} stacks compared, {bad} differences, '
          f'{named} tasks named from other segments')
    if stacks == 0:
        print('no stacks to compare', file=sys.stderr)
        return 1
    return 1 if bad else 0


if __name__ == '__main__':
    sys.exit(main())
