#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""The copies and names a report of an archive with a crash capture shows.

  check-crash-copy.py REPORT BOOT1_ID

REPORT is `stackmapctl report --markers` of the whole archive (one section
per recording, "# host H boot B recording R"). Boot 1's first section is
its own recording, its second the crash capture saved at boot 2. Checks
that no stack id of boot 1's recording that prints unresolved lies, on
its CPU, at or after the capture's first entry there (the capture holds
those events with full stacks: its copies are read), and that every task
of the capture prints as <...>-PID (it has no task names of its boot).
Prints the figures; exit status 1 if a check fails, 2 on bad input.
"""
import re
import sys

HEADER = re.compile(r'^# host \S+ boot (\S+) recording (\S+)')
EVENT = re.compile(r'^\s*(.*)-(\d+)\s+\[(\d+)\]\s+(\d+)\.(\d+):\s+(\S+):')


def main():
    path, boot1 = sys.argv[1], sys.argv[2]
    sections = []          # [boot, recording, [(comm, cpu, ts, name, unresolved)]]
    cur = None
    with open(path, errors='replace') as f:
        for line in f:
            m = HEADER.match(line)
            if m:
                cur = [m.group(1), m.group(2), []]
                sections.append(cur)
                continue
            m = EVENT.match(line)
            if m and cur is not None:
                cur[2].append([m.group(1).strip(), int(m.group(3)),
                               int(m.group(4)) * 1000000 + int(m.group(5)), m.group(6), False])
            elif line.startswith('=> <unresolved stack_id') and cur and cur[2]:
                cur[2][-1][4] = True
    mine = [s for s in sections if s[0] == boot1]
    if len(mine) < 2:
        print('check-crash-copy: %d sections of boot 1, want its recording and its capture'
              % len(mine), file=sys.stderr)
        return 2
    live, cap = mine[0], mine[1]
    first = {}
    for comm, cpu, ts, name, _ in cap[2]:
        first[cpu] = min(first.get(cpu, ts), ts)
    unresolved = [e for e in live[2] if e[4]]
    late = [e for e in unresolved if e[1] in first and e[2] >= first[e[1]]]
    named = sorted({e[0] for e in cap[2] if e[0] != '<...>'})
    print('capture: %d entries from %s; recording: %d unresolved stack ids, %d of them '
          'where the capture holds the events; capture tasks with a name: %s'
          % (len(cap[2]), ', '.join('CPU %d %.6f' % (c, t / 1e6) for c, t in sorted(first.items())),
             len(unresolved), len(late), ' '.join(named[:5]) or 'none'))
    ok = bool(cap[2]) and not late and not named
    return 0 if ok else 1


if __name__ == '__main__':
    sys.exit(main())
