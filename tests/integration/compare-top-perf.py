#!/usr/bin/env python3
"""Compare the call graph of `stackmapctl top` with `perf report --stdio
--no-children --sort sym` on recordings of the same workload and event:
the function that hit the event most often is the same, and the leading
call sites under it (its direct callers of at least MIN_PERCENT) come in
the same order with shares within TOLERANCE points. Two calls sites whose
shares are within TOLERANCE of each other may come in either order.

Usage: compare-top-perf.py TOP_TXT PERF_TXT [MIN_PERCENT [TOLERANCE]]
Exit 0 when they agree, 1 with the differences on stderr.
"""

import re
import sys

ENTRY_TOP = re.compile(r'^\s+([\d.]+)%\s+\d+\s+(\S+)$')
ENTRY_PERF = re.compile(r'^\s+([\d.]+)%\s+\[k\]\s+(\S+)$')
# a first-level branch: the entry's own column of '|' (or ' --' for the last)
BRANCH = re.compile(r'^ {12,13}(?:\||\s)--([\d.]+)%--(\S+)$')


def first_entry(path, entry_re):
    """(percent, name, {caller: percent}) of the first entry of a report."""
    entry, callers = None, {}
    with open(path, errors='replace') as f:
        for line in f:
            line = line.rstrip('\n')
            m = entry_re.match(line)
            if m:
                if entry:
                    break
                entry = (float(m.group(1)), m.group(2))
                continue
            m = BRANCH.match(line)
            if entry and m:
                callers[m.group(2)] = callers.get(m.group(2), 0.0) + float(m.group(1))
    if not entry:
        sys.exit(f'{path}: no entry')
    return entry[0], entry[1], callers


def main():
    top, perf = sys.argv[1], sys.argv[2]
    min_pct = float(sys.argv[3]) if len(sys.argv) > 3 else 3.0
    tol = float(sys.argv[4]) if len(sys.argv) > 4 else 3.0
    tp, tname, tcall = first_entry(top, ENTRY_TOP)
    pp, pname, pcall = first_entry(perf, ENTRY_PERF)
    bad = []
    if tname != pname:
        bad.append(f'first function: top {tname} {tp}%, perf {pname} {pp}%')
    if abs(tp - pp) > tol:
        bad.append(f'{tname}: top {tp}%, perf {pp}%')
    lead_t = [c for c, p in sorted(tcall.items(), key=lambda x: -x[1]) if p >= min_pct]
    lead_p = [c for c, p in sorted(pcall.items(), key=lambda x: -x[1]) if p >= min_pct]
    if not lead_p:
        bad.append('perf shows no call site')
    for c in sorted(set(lead_t) | set(lead_p)):
        a, b = tcall.get(c, 0.0), pcall.get(c, 0.0)
        if abs(a - b) > tol:
            bad.append(f'call site {c}: top {a:.2f}%, perf {b:.2f}%')
    # order: a pair in one order in top and the other in perf must be within tol
    for i, x in enumerate(lead_t):
        for y in lead_t[i + 1:]:
            if x in pcall and y in pcall and pcall[x] < pcall[y] and \
               pcall[y] - pcall[x] > tol:
                bad.append(f'order: top has {x} before {y}, perf the reverse')
    print(f'# {tname}: top {tp}%, perf {pp}%')
    for c in lead_t:
        print(f'#   {c}: top {tcall[c]:.2f}%, perf {pcall.get(c, 0.0):.2f}%')
    for b in bad:
        print(b, file=sys.stderr)
    return 1 if bad else 0


if __name__ == '__main__':
    sys.exit(main())
