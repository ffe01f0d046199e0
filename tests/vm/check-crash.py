#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Checks of a crash capture in an archive's `stackmapctl report --wall` (TZ=UTC).

  check-crash.py WALL_REPORT TRACE_REPORT BOOT1_ID MARKER_EPOCH

The report covers the whole archive: boot 1's live segments, the crash
capture of boot 1 (a group with boot 1's id but the next recording's id)
and boot 2's segments. Checks that the last marker of boot 1 is printed
once, in the capture, dated within a second of MARKER_EPOCH (the wall
clock just before it was written); that the capture holds the workload's
kmem events of the second before it, each with a resolved stack (but a
CPU's very last one, which the end may have cut from its stack); and
that no event is printed twice: in TRACE_REPORT (the same report in
trace-clock seconds, which both copies of an event share, while their
dates come from different clock pairs), on every CPU, the capture's
events come after the last one boot 1's recording wrote. Prints the figures; exit
status 1 with the reason on the first failed check.
"""
import datetime
import re
import sys

HEADER = re.compile(r'^# host \S+ boot (\S+) recording (\S+)')
EVENT = re.compile(r'^\s*(.*)-(\d+)\s+\[(\d+)\]\s+(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d+|\d+\.\d+):'
                   r'\s+(\S+):\s*(.*)$')


def epoch(date):
    if '-' not in date:
        return float(date)
    t = datetime.datetime.strptime(date, '%Y-%m-%d %H:%M:%S.%f')
    return t.replace(tzinfo=datetime.timezone.utc).timestamp()


def fields(text):
    # call_site prints as a symbol or an address depending on the segment's kallsyms
    return {k: v for k, v in re.findall(r'(\w+)=(\S+)', text) if k != 'call_site'}


def same_event(a, b):
    return a[2] == b[2] and fields(a[3]) == fields(b[3])


def fail(msg):
    print('FAIL: ' + msg)
    sys.exit(1)


def parse(path):
    groups = []            # (boot, recording) in order of first appearance
    group = None
    events = {}            # group -> list of [cpu, t, name, text, stack_ok]
    last = None            # the event whose stack the following '=>' lines are
    last_of_cpu = {}
    with open(path, errors='replace') as f:
        for line in f:
            m = HEADER.match(line)
            if m:
                group = (m.group(1), m.group(2))
                if group not in events:
                    groups.append(group)
                    events[group] = []
                continue
            if line.startswith('=> '):
                if last is not None and '<unresolved' not in line:
                    last[4] = True
                continue
            m = EVENT.match(line)
            if not m or group is None:
                continue
            name = m.group(5)
            cpu = int(m.group(3))
            if name in ('kernel_stack', 'stack_id', 'stack_ref'):
                # CPUs are merged by time: a stack belongs to its CPU's last event
                last = last_of_cpu.pop(cpu, None)
                continue
            last = None
            ev = [cpu, epoch(m.group(4)), name, m.group(6), False]
            last_of_cpu[cpu] = ev
            events[group].append(ev)
    return groups, events


def main():
    path, tpath, boot1, marker_epoch = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4])
    groups, events = parse(path)

    b1 = [g for g in groups if g[0] == boot1]
    if len(b1) < 2:
        fail('want boot 1 recorded and captured, got groups %s' % groups)
    live, capture = b1[0], b1[-1]
    if any(g[0] != boot1 for g in groups[:groups.index(capture)]):
        fail('the capture does not follow boot 1 in the archive: %s' % groups)
    cap = events[capture]
    markers = [e for g in groups for e in events[g] if 'crash-test-last-marker' in e[3]]
    if len(markers) != 1:
        fail('the last marker is printed %d times' % len(markers))
    mk = markers[0]
    if mk not in cap or boot1 not in mk[3]:
        fail('the last marker is not in the capture of boot 1')
    skew = mk[1] - marker_epoch
    print('last marker dated %+.3f s from the wall clock of boot 1' % skew)
    if not -1.0 <= skew <= 1.0:
        fail('the last marker is dated %.3f s away from when it was written' % skew)

    kmem = [e for e in cap if e[2] == 'kmem_cache_alloc']
    recent = [e for e in kmem if mk[1] - 1.0 <= e[1] <= mk[1]]
    # the end may come between an event and its stack: only a CPU's last event may lack one
    last_on_cpu = {}
    for e in kmem:
        if e[0] not in last_on_cpu or e[1] >= last_on_cpu[e[0]][1]:
            last_on_cpu[e[0]] = e
    unstacked = [e for e in kmem if not e[4] and e is not last_on_cpu[e[0]]]
    print('capture: %d events, %d kmem_cache_alloc (%d in the second before the marker), '
          '%d without a resolved stack' % (len(cap), len(kmem), len(recent), len(unstacked)))
    if len(recent) < 50:
        fail('only %d kmem events in the last second before the marker' % len(recent))
    if unstacked:
        fail('%d captured events have no resolved stack, e.g. %s' % (len(unstacked), unstacked[0]))
    # the end comes within seconds of the marker (a reset waits for python3 to start)
    if max(e[1] for e in kmem) > mk[1] + 10.0:
        fail('captured events long after the end of the boot')

    # nothing twice: per CPU, the capture begins after boot 1's recording ends
    tgroups, events = parse(tpath)
    if tgroups != groups:
        fail('the trace-clock report has other groups: %s' % tgroups)
    kmem = [e for e in events[capture] if e[2] == 'kmem_cache_alloc']
    for g in b1[:-1]:
        for cpu in {e[0] for e in events[g]}:
            rec_last = max(e[1] for e in events[g] if e[0] == cpu)
            cap_cpu = [e[1] for e in kmem if e[0] == cpu]
            if cap_cpu and min(cap_cpu) <= rec_last:
                n = sum(1 for t in cap_cpu if t <= rec_last)
                fail('CPU %d: %d captured events at or before the last recorded one (%s)'
                     % (cpu, n, rec_last))
            # the other order: the capture's copy of the last recorded event comes after it
            last_rec = [e for e in events[g] if e[0] == cpu and e[1] == rec_last]
            first_cap = sorted((e for e in kmem if e[0] == cpu), key=lambda e: e[1])[:1]
            if last_rec and first_cap and first_cap[0][1] - rec_last < 100e-6 and \
                    same_event(last_rec[0], first_cap[0]):
                fail('CPU %d: the last recorded event is captured again: %s' % (cpu, first_cap[0]))
    print('recorded before the crash: %d events in %d segment groups; capture after them '
          'on every CPU' % (sum(len(events[g]) for g in b1[:-1]), len(b1) - 1))


main()
