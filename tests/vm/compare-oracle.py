#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Compare the stacks of a stackmapd archive with an oracle recording.

The oracle is a second recording of the same events with full stacks (a
secondary tracefs instance, where the kernel never uses the stack map). Per
CPU both see the same hits in the same order (STACKMAP-ABI.md), with the
oracle's timestamps a little later, so every event of the archive is matched
to the oracle's event with the same name and fields, in order, at a nearby
timestamp. The stacks of matched events are compared by function names.

  compare-oracle.py --archive REPORT --oracle REPORT --kallsyms FILE
                    [--ids IDS --map STACK_MAP] [--label NAME]
                    [--max-unresolved FRACTION] [--max-lost FRACTION] [--min-events N]

REPORT: `stackmapctl report` output. IDS: smdump-ids output for the same
segments as --archive (the raw stack reference of every stack entry, in
report order); with STACK_MAP (one `cat stack_map` at the end of the run)
it gives the naive figure: every stack_id resolved with that one dump,
ignoring generations, which is what a resolver without generations does.

An event whose stack the kernel never wrote (tracing paused for a strict
reset between the event and its stack) is followed in the report by a bare
`=> <unresolved: ...>` line: it counts as unresolved, "lost", not as an
event without a stack.

Prints one line of figures. Exit status: 0 when no matched event has a
wrong stack, the fraction of stacks recorded but unresolved is below
--max-unresolved (default 0.001; 0: none), the fraction lost is at most
--max-lost (default 0: none) and at least --min-events events matched; 1
otherwise; 2 on usage errors or unreadable input.
"""
import argparse
import bisect
import re
import sys
from collections import defaultdict

EVENT = re.compile(r'^(.*)-(\d+)\s+\[(\d+)\]\s+(\d+)\.(\d+):\s+(\S+):\s?(.*)$')
TRAMPOLINE = 0x7FFFFFFF
# The two probes of one hit run microseconds apart (either may run first);
# allow for an interrupt in between, but not for a loop of the load that
# repeats the very same allocations a few milliseconds later.
MAX_SKEW_NS = 500_000
SYNC = 8
SKIP = 3
SKEW_SAMPLES = 31
SKEW_TOLERANCE_NS = 50_000
# The offset of one hit between the two recordings is the time the probe of
# the first instance takes before the second reserves its slot: the
# instances run in a fixed order, so the offsets have a hard edge on one
# side (a few microseconds, never crossed) and a long tail on the other (an
# interrupt or a slow emulated CPU in between). A candidate is accepted
# from the usual offset out to SPREAD_FACTOR times the spread measured on
# each side (the distance from the median to the SPREAD_QUANTILE of the
# unambiguous offsets), at least MIN_MARGIN_NS: a neighbour of the same
# fields a few tens of microseconds away on the edge's side is not the
# same hit, however close it is in time.
SPREAD_QUANTILE = 0.01
SPREAD_FACTOR = 3
MIN_MARGIN_NS = 10_000


class Symbols:
    def __init__(self, path):
        syms = []
        with open(path) as f:
            for line in f:
                p = line.split()
                if len(p) >= 3 and p[1] in 'tTwW':
                    syms.append((int(p[0], 16), p[2]))
        syms.sort()
        self.addrs = [a for a, _ in syms]
        self.names = [n for _, n in syms]

    def name(self, addr):
        if addr == TRAMPOLINE:
            return '[FTRACE TRAMPOLINE]'
        i = bisect.bisect_right(self.addrs, addr) - 1
        return self.names[i] if i >= 0 else hex(addr)


def frame_name(text, syms):
    """One '=> ...' line of a report as a function name."""
    text = text.strip()
    if text.startswith('<'):
        return None
    if text == '[FTRACE TRAMPOLINE]':
        return text
    m = re.match(r'^([0-9a-fA-F]+)$', text)
    if m:
        return syms.name(int(m.group(1), 16))
    m = re.match(r'^(\S+) \(([0-9a-fA-F]+)\)$', text)
    if m:
        return m.group(1)
    # symbolized text (text-only kernels): sym+0xoff/0xlen
    return re.sub(r'\+0x[0-9a-f]+/0x[0-9a-f]+$', '', text)


class Event:
    __slots__ = ('cpu', 'ts', 'key', 'stack', 'unresolved', 'stack_kind', 'stack_ts')

    def __init__(self, cpu, ts, key):
        self.cpu = cpu
        self.ts = ts
        self.key = key
        self.stack = None        # list of function names
        self.unresolved = None   # reason, when the stack did not resolve
        self.stack_kind = None   # 'stack_id' or 'kernel_stack'
        self.stack_ts = None


def parse_report(path, syms):
    """Per CPU, the events in order, each with the stack that followed it."""
    per_cpu = defaultdict(list)
    last = {}
    stacks = []              # (cpu, ts) of every stack entry, in report order
    cur = None
    prev = None              # the event of the line before, if that was an event line
    with open(path, errors='replace') as f:
        for line in f:
            line = line.rstrip('\n')
            if line.startswith('=> <unresolved: ') and cur is None and prev is not None and \
               prev.stack_kind is None:
                prev.stack_kind = 'lost'     # the kernel never wrote its stack
                prev.unresolved = line[3:]
                prev = None
                continue
            if line.startswith('=> '):
                prev = None
                if cur is None:
                    continue
                name = frame_name(line[3:], syms)
                if name is None:
                    cur.unresolved = line[3:]
                    cur.stack = None
                elif cur.unresolved is None:
                    cur.stack.append(name)
                continue
            prev = None
            if line.startswith('CPU:'):
                continue
            m = EVENT.match(line)
            if not m:
                cur = None
                continue
            cpu = int(m.group(3))
            ts = int(m.group(4)) * 10**9 + int(m.group(5).ljust(9, '0')[:9])
            name, info = m.group(6), m.group(7)
            if name in ('stack_id', 'kernel_stack'):
                owner = last.get(cpu)
                stacks.append((cpu, ts))
                if owner is None or owner.stack_kind is not None:
                    cur = None   # a stack without its event (start of data, lost events)
                    continue
                owner.stack_kind = name
                owner.stack = []
                owner.stack_ts = ts
                cur = owner
                continue
            ev = Event(cpu, ts, (m.group(1).strip(), m.group(2), name, info))
            per_cpu[cpu].append(ev)
            last[cpu] = ev
            cur = None
            prev = ev
    return per_cpu, stacks


def in_step(arch, i, orc, p, count):
    """Do count events of arch from i follow orc from p, allowing a few extra in orc?"""
    q = p
    for x in range(1, count):
        for s in range(1, SKIP + 2):
            if q + s < len(orc) and orc[q + s].key == arch[i + x].key:
                q += s
                break
        else:
            return False
    return True


def estimate_skew(arch, index, orc_ts):
    """The usual time offset between the two recordings of one CPU, from its
    unambiguous events: those whose key occurs once in each recording within
    MAX_SKEW_NS, and the offsets accepted as the same hit: (median, lowest,
    highest). None when there are fewer than SKEW_SAMPLES of them."""
    arch_ts = [e.ts for e in arch]
    arch_index = defaultdict(list)
    for i, e in enumerate(arch):
        arch_index[e.key].append(i)
    offsets = []
    for a in arch:
        cand = index.get(a.key, [])
        k = bisect.bisect_left(cand, bisect.bisect_left(orc_ts, a.ts - MAX_SKEW_NS))
        near = []
        while k < len(cand) and orc_ts[cand[k]] <= a.ts + MAX_SKEW_NS and len(near) < 2:
            near.append(cand[k])
            k += 1
        if len(near) != 1:
            continue
        own = arch_index[a.key]
        lo = bisect.bisect_left(own, bisect.bisect_left(arch_ts, a.ts - MAX_SKEW_NS))
        hi = bisect.bisect_right(own, bisect.bisect_right(arch_ts, a.ts + MAX_SKEW_NS) - 1)
        if hi - lo == 1:
            offsets.append(orc_ts[near[0]] - a.ts)
    if len(offsets) < SKEW_SAMPLES:
        return None
    offsets.sort()
    n = len(offsets)
    median = offsets[n // 2]
    q = min(n // 2, max(1, int(n * SPREAD_QUANTILE)))
    below = min(MAX_SKEW_NS, max(MIN_MARGIN_NS, SPREAD_FACTOR * (median - offsets[q])))
    above = min(MAX_SKEW_NS, max(MIN_MARGIN_NS, SPREAD_FACTOR * (offsets[n - 1 - q] - median)))
    return median, median - below, median + above


def match_cpu(arch, orc):
    """In-order matching of the events of one CPU in the archive and the oracle.

    Both saw the same hits in the same order, but either may lack some (lost
    events, the other recorder not running yet, a probe being registered)
    and fields repeat (a freed object is allocated again at the same
    address), so events are matched in step, skipping a few extra oracle
    events, and after a gap the streams are synchronized again where SYNC
    events in a row follow each other. A workload's loop repeats the same
    keys a period apart, so the first candidate in step may be the same
    key one period off: of the candidates, the one whose time offset is
    nearest to the usual offset between the two recordings (the median of
    the last matches) is taken, and none outside the offsets measured for
    the same hit. Those are known from the first event on, estimated from
    the events that are unambiguous: a task that repeats the same
    allocation within a fraction of a millisecond at the start (a daemon
    opening and renaming files) must not be matched to its next call, nor
    a socket's file to the open's that follows it in a loop, a few tens of
    microseconds later when the socket's own copy is in the long tail.
    """
    index = defaultdict(list)
    for i, e in enumerate(orc):
        index[e.key].append(i)
    orc_ts = [e.ts for e in orc]
    pairs = []
    est = estimate_skew(arch, index, orc_ts)
    skew0 = est[0] if est is not None else None
    # the time offsets of the last matches: sorted, and oldest first
    order = [skew0] * SKEW_SAMPLES if skew0 is not None else []
    recent = list(order)
    j = -1
    for i, a in enumerate(arch):
        cand = index.get(a.key)
        if not cand:
            continue
        settled = len(order) >= SKEW_SAMPLES
        skew = recent[len(recent) // 2] if settled else 0
        start = max(j + 1, bisect.bisect_left(orc_ts, a.ts - MAX_SKEW_NS))
        k = bisect.bisect_left(cand, start)
        best = None
        while k < len(cand) and orc[cand[k]].ts <= a.ts + MAX_SKEW_NS:
            p = cand[k]
            k += 1
            dt = orc[p].ts - a.ts
            off = abs(dt - skew)
            if best is not None and off >= best[0]:
                continue
            if est is not None and not est[1] <= dt <= est[2]:
                continue
            if est is None and settled and off > SKEW_TOLERANCE_NS:
                continue
            if p <= j + SKIP + 1 or in_step(arch, i, orc, p, min(SYNC, len(arch) - i)):
                best = (off, p)
        if best is None:
            continue
        j = best[1]
        pairs.append((a, orc[j], skew))
        dt = orc[j].ts - a.ts
        bisect.insort(recent, dt)
        order.append(dt)
        if len(order) > SKEW_SAMPLES:
            recent.pop(bisect.bisect_left(recent, order.pop(0)))
    return pairs


def parse_map(path):
    """A text stack_map dump: id -> function names."""
    m = {}
    cur = None
    with open(path) as f:
        for line in f:
            h = re.match(r'^stack_id (\d+) \[ref \d+, depth \d+\]', line)
            if h:
                cur = m.setdefault(int(h.group(1)), [])
                continue
            fr = re.match(r'^\s+\[\d+\] (.*)$', line)
            if fr and cur is not None:
                cur.append(re.sub(r'\+0x[0-9a-f]+/0x[0-9a-f]+$', '', fr.group(1)))
    return m


def parse_stacks(path, syms):
    """`stackmapctl stacks` output: kernel id -> frames of its newest generation."""
    newest = {}
    cur = None
    with open(path) as f:
        for line in f:
            h = re.match(r'^generation (\d+) id (\d+) refs \d+ depth \d+', line)
            if h:
                gen, sid = int(h.group(1)), int(h.group(2))
                cur = None
                if gen > 0 and (sid not in newest or newest[sid][0] <= gen):
                    cur = []
                    newest[sid] = (gen, cur)
                continue
            fr = re.match(r'^\s+\[\d+\] (\S+)', line)
            if fr and cur is not None:
                t = fr.group(1)
                cur.append(syms.name(int(t, 16)) if t.startswith('0x') else
                           re.sub(r'\+0x[0-9a-f]+/0x[0-9a-f]+$', '', t))
            elif not fr:
                cur = None
    return {k: v[1] for k, v in newest.items()}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--archive', required=True)
    ap.add_argument('--oracle', required=True)
    ap.add_argument('--kallsyms', required=True)
    ap.add_argument('--ids')
    ap.add_argument('--map')
    ap.add_argument('--stacks', help='stackmapctl stacks of the archive: ids missing from '
                    'the map dump take their newest known stack')
    ap.add_argument('--label', default='archive')
    ap.add_argument('--max-unresolved', type=float, default=0.001)
    ap.add_argument('--max-lost', type=float, default=0.0,
                    help='fraction of stacks the kernel may not have written (reset pause)')
    ap.add_argument('--min-events', type=int, default=1000)
    ap.add_argument('--show', type=int, default=5, help='print this many wrong stacks')
    args = ap.parse_args()

    try:
        syms = Symbols(args.kallsyms)
        arch, arch_stacks = parse_report(args.archive, syms)
        orc, _ = parse_report(args.oracle, syms)
    except OSError as e:
        print('compare-oracle: %s' % e, file=sys.stderr)
        return 2

    naive_ids = None
    if args.ids and args.map:
        raw = []
        with open(args.ids) as f:
            for line in f:
                p = line.split()
                if len(p) == 4:
                    raw.append((int(p[0]), int(p[1]) // 1000, p[2], int(p[3])))
        if len(raw) != len(arch_stacks):
            print('compare-oracle: %s has %d stack entries, the report %d' %
                  (args.ids, len(raw), len(arch_stacks)), file=sys.stderr)
            return 2
        naive_ids = {}
        for (cpu, ts), (rcpu, rts, kind, sid) in zip(arch_stacks, raw):
            if cpu != rcpu or abs(ts // 1000 - rts) > 1:	# the report rounds to us
                print('compare-oracle: stack entries out of step at cpu %d ts %d' % (cpu, ts),
                      file=sys.stderr)
                return 2
            if kind == 'id':
                naive_ids[(cpu, ts)] = sid
        one_map = parse_map(args.map)
        if args.stacks:
            for sid, st in parse_stacks(args.stacks, syms).items():
                one_map.setdefault(sid, st)

    events = sum(len(v) for v in arch.values())
    with_stack = matched = right = wrong = unresolved = no_stack = lost = 0
    ids = fallbacks = 0
    naive_right = naive_wrong = naive_missing = 0
    shown = 0
    missed = 0
    for cpu in sorted(arch):
        pairs = match_cpu(arch[cpu], orc.get(cpu, []))
        if arch[cpu]:
            # oracle events in the archive's time span that it does not have
            lo, hi = arch[cpu][0].ts, arch[cpu][-1].ts
            missed += sum(1 for o in orc.get(cpu, []) if lo <= o.ts <= hi) - len(pairs)
        for a, o, skew in pairs:
            if o.stack is None:
                continue            # the oracle has no stack for it: nothing to compare
            matched += 1
            if a.stack_kind is None:
                no_stack += 1
                continue
            with_stack += 1
            if a.stack_kind == 'lost':
                lost += 1
                unresolved += 1
                continue
            if a.stack_kind == 'stack_id':
                ids += 1
            else:
                fallbacks += 1
            if a.unresolved is not None:
                unresolved += 1
            elif a.stack == o.stack:
                right += 1
            else:
                wrong += 1
                if shown < args.show:
                    shown += 1
                    # the usual offset of the two recordings then: a pair far
                    # from it is more likely the matching's than the archive's
                    print('WRONG cpu %d %s-%s %s at %d.%06d (oracle %d.%06d, usual offset %+d us):\n'
                          '  archive: %s\n  oracle:  %s' %
                          (cpu, a.key[0], a.key[1], a.key[2], a.ts // 10**9,
                           a.ts % 10**9 // 1000, o.ts // 10**9, o.ts % 10**9 // 1000,
                           skew // 1000, ' '.join(a.stack), ' '.join(o.stack)))
            if naive_ids is not None and a.stack_kind == 'stack_id':
                sid = naive_ids.get((cpu, a.stack_ts))
                st = one_map.get(sid) if sid is not None else None
                if st is None:
                    naive_missing += 1
                elif st == o.stack:
                    naive_right += 1
                else:
                    naive_wrong += 1

    recorded = with_stack - lost
    frac = (unresolved - lost) / recorded if recorded else 1.0
    lost_frac = lost / with_stack if with_stack else 0.0
    print('%s: events %d matched %d with-stack %d (ids %d, full %d) right %d WRONG %d '
          'unresolved %d (%.4f%% of those recorded; %d more lost in a reset pause) '
          'no-stack %d; not recorded (oracle only) %d' %
          (args.label, events, matched, with_stack, ids, fallbacks, right, wrong,
           unresolved - lost, 100.0 * frac, lost, no_stack, missed))
    if naive_ids is not None:
        print('%s: naive (one map for all ids, generations ignored): right %d WRONG %d '
              'missing %d' %
              (args.label, naive_right, naive_wrong, naive_missing))
    ok = True
    if wrong:
        print('%s: FAIL: %d wrong stacks' % (args.label, wrong))
        ok = False
    if with_stack < args.min_events:
        print('%s: FAIL: only %d events with stacks matched (want >= %d)' %
              (args.label, with_stack, args.min_events))
        ok = False
    if args.max_unresolved == 0 and unresolved - lost:
        print('%s: FAIL: %d unresolved' % (args.label, unresolved - lost))
        ok = False
    elif args.max_unresolved > 0 and frac >= args.max_unresolved:
        print('%s: FAIL: unresolved %.4f%% (limit %.4f%%)' %
              (args.label, 100 * frac, 100 * args.max_unresolved))
        ok = False
    if lost_frac > args.max_lost:
        print('%s: FAIL: %d stacks lost in reset pauses (%.4f%%, limit %.4f%%)' %
              (args.label, lost, 100 * lost_frac, 100 * args.max_lost))
        ok = False
    return 0 if ok else 1


if __name__ == '__main__':
    sys.exit(main())
