#!/usr/bin/env python3
"""Compare a stackmapctl report with a trace-cmd report of the same events.

Both recorders ran at the same time on separate tracefs instances with the
same events and kernel stacks, so each CPU's hits arrive in the same order
in both, with timestamps a few microseconds apart. This aligns the two
event streams per CPU, then checks that matched events carry the same
fields and the same stack (function names; offsets and addresses are
ignored), and that what does not match is explained: the edges of the
common period, events a recorder lost (the kernel says how many), or the
daemon's own tasks, which it leaves out of its recording on purpose (they
are taken out of trace-cmd's side before comparing). Two things the kernel
itself records differently in two instances are allowed: an interrupt's hit
between the two probes of one hit (the two land in another order), and a
task's exit state in sched_switch (read by each probe).

Inputs:
  --sm FILE         stackmapctl report
  --tc-events FILE  trace-cmd report -N (events as the kernel prints them)
  --tc-stacks FILE  trace-cmd report (stacks with symbols); same events, same order
  --sm-lost LIST    per-CPU events the daemon lost, "CPU:N,CPU:N" (from info --json)
  --self-pids LIST  the daemon's own tasks (space separated)
Exit 0 when everything holds, 1 with the reasons on stderr otherwise.
"""

import argparse
import bisect
import re
import sys

HEAD = re.compile(r'-(\d+) +\[(\d+)\] +(\d+\.\d+): +(\w+): ?(.*)$')
LOST = re.compile(r'CPU:(\d+) \[(?:(\d+) )?EVENTS DROPPED\]')
FIELD = re.compile(r'(?:^|\s)(\w+)=')
STACK_EVENTS = ('kernel_stack', 'stack_ref', 'stack_id')
# ftrace's own entries (not trace events): left out of the event comparison
FTRACE = STACK_EVENTS + ('print', 'bprint')
# The same hit is stamped a few microseconds apart in the two buffers (the
# second recorder's probe runs right after the first's): after a gap, the
# streams are taken up again only at events this close. In step, the order
# says which events are the same, and the stamps may be further apart: an
# interrupt, or the host preempting this virtual CPU, between the two
# probes (seen: 1.7 ms).
TOLERANCE = 0.000500
MAX_SKEW = 0.050
CONFIRM = 4
# Runs this short of events that differ, of the same tasks and stamped this
# close, between equal ones, are the same hits decoded two ways.
SHORT_GAP = 3
TIGHT = 0.000050


class Event:
	__slots__ = ('pid', 'ts', 'name', 'text', 'fields', 'stack', 'stack_cut')

	def __init__(self, pid, ts, name, text):
		self.pid, self.ts, self.name, self.text = pid, ts, name, text
		self.fields = None
		self.stack = None	# function names, innermost first
		self.stack_cut = False	# a loss or a nested stack next to it: its stack is uncertain


def frame_name(text):
	"""'func+0x1c/0x30 (ffffffff81234567)' -> 'func'."""
	if text.endswith(')'):
		text = text.rpartition(' (')[0] or text
	return sys.intern(text.partition('+0x')[0].strip())


def parse_fields(text):
	"""'a=1 b=x y ==> c=2' -> {'a': '1', 'b': 'x y', 'c': '2'} (values to the next name)."""
	names = list(FIELD.finditer(text))
	out = {}
	for k, m in enumerate(names):
		end = names[k + 1].start() if k + 1 < len(names) else len(text)
		value = text[m.end():end].strip()
		if value.endswith(' ==>'):	# sched_switch's arrow
			value = value[:-4]
		out[m.group(1)] = value
	return out


def read_report(path, with_stacks=True):
	"""Per-CPU lists of events, per-CPU lost counts (None: unknown), number of orphan stacks.

	Each stack line (a kernel_stack or stack_ref entry and its "=>" frames)
	goes with the event before it on the same CPU. With with_stacks false, the
	frames are not read (events only say whether a stack followed)."""
	cpus, lost, orphans = {}, {}, 0
	last = {}		# cpu -> last event, while its stack may still follow
	recent = {}		# cpu -> its last two events
	stacks = {}		# one tuple per distinct stack
	cur = ev_cur = None
	with open(path, errors='replace') as f:
		for line in f:
			s = line.lstrip()
			if s.startswith('=> '):
				if cur is not None:
					cur.append(frame_name(s[3:].rstrip('\n')))
				continue
			if cur is not None:
				ev_cur.stack = stacks.setdefault(tuple(cur), tuple(cur))
				cur = None
			line = line.rstrip('\n')
			if 'EVENTS DROPPED]' in line:
				m = LOST.search(line)
				if m:
					cpu = int(m.group(1))
					n = int(m.group(2)) if m.group(2) else None
					if cpu not in lost or lost[cpu] is not None:
						lost[cpu] = None if n is None else lost.get(cpu, 0) + n
					ev = last.pop(cpu, None)
					if ev is not None:
						ev.stack_cut = True
					# the event line may follow on the same line (trace-cmd)
					line = line[m.end():]
			m = HEAD.search(line)
			if not m:
				continue
			pid, cpu, ts, name, text = m.groups()
			cpu = int(cpu)
			if name in STACK_EVENTS:
				ev = last.pop(cpu, None)
				if ev is None or ev.stack is not None:
					# An interrupt's event and stack between an event and its
					# stack: which stack is whose is not certain.
					for e in recent.get(cpu, ()):
						e.stack_cut = True
					orphans += 1
					continue
				ev.stack = ()
				if with_stacks:
					cur, ev_cur = [], ev
				continue
			ev = Event(int(pid), float(ts), name, text)
			cpus.setdefault(cpu, []).append(ev)
			last[cpu] = ev
			recent[cpu] = (recent[cpu][-1], ev) if cpu in recent else (ev,)
	if cur is not None:
		ev_cur.stack = tuple(cur)
	return cpus, lost, orphans


def attach_stacks(events, stacks_report):
	"""Take the stacks of trace-cmd's plugin report for the events of its -N report."""
	scpus, _, _ = read_report(stacks_report)
	for cpu, evs in events.items():
		sevs = scpus.get(cpu, [])
		if len(sevs) != len(evs):
			sys.exit(f'trace-cmd reports differ on CPU {cpu}: {len(evs)} vs {len(sevs)} events')
		for a, b in zip(evs, sevs):
			if (a.pid, a.ts, a.name) != (b.pid, b.ts, b.name):
				sys.exit(f'trace-cmd reports differ on CPU {cpu} at {a.ts}')
			a.stack, a.stack_cut = b.stack, b.stack_cut


def key(ev):
	"""What one hit looks like in a report: the event, its task and every field."""
	return (ev.name, ev.pid, ev.text)


class Stream:
	"""One CPU's events, with the positions of each key for looking ahead."""

	def __init__(self, events):
		self.keys = [key(e) for e in events]
		self.ts = [e.ts for e in events]
		self.pos = {}
		for n, k in enumerate(self.keys):
			self.pos.setdefault(k, []).append(n)

	def candidates(self, k, start, ts):
		"""Positions >= start of key k stamped within TOLERANCE of ts."""
		lst = self.pos.get(k)
		if not lst:
			return
		n = bisect.bisect_left(lst, start)
		while n < len(lst) and self.ts[lst[n]] <= ts + TOLERANCE:
			if self.ts[lst[n]] >= ts - TOLERANCE:
				yield lst[n]
			n += 1


def align(d, t):
	"""Pairs (i, j) of d[i] and t[j] that are the same hit: (equal, differing, reordered).

	Both streams are one sequence of hits with gaps (what either side lost).
	While in step, equal neighbours pair up; a short run of events that
	differ but are the same tasks' events at the same moments, followed by
	equal ones, is the same hits decoded differently. After a gap, the next
	pair is the one stamped closest together in time, and only if the
	CONFIRM events after it pair up as well: a loop repeats an event with
	the same fields every few microseconds, not always from the same stack,
	and only the time tells which repetition is the same hit.
	"""
	D, T = Stream(d), Stream(t)
	nd, nt = len(d), len(t)

	def same(i, j):
		return D.keys[i] == T.keys[j] and abs(D.ts[i] - T.ts[j]) <= MAX_SKEW

	def confirmed(i, j):
		for r in range(CONFIRM):
			if i + r >= nd or j + r >= nt:
				return True
			if not same(i + r, j + r):
				return False
		return True

	def replaced(i, j):
		"""How many events from (i, j) on are the same hits with other fields (0: none)."""
		for r in range(SHORT_GAP):
			a, b = d[i + r], t[j + r]
			if a.name != b.name or a.pid != b.pid or abs(a.ts - b.ts) > TIGHT:
				return 0
			if i + r + 1 < nd and j + r + 1 < nt and same(i + r + 1, j + r + 1) and \
					confirmed(i + r + 1, j + r + 1):
				return r + 1
			if i + r + 1 >= nd or j + r + 1 >= nt:
				return 0
		return 0

	def best(mine, k, start, ts, pair):
		"""The confirmed candidate stamped closest to ts, or None."""
		found = [(abs(mine.ts[n] - ts), n) for n in mine.candidates(k, start, ts)
			 if confirmed(*pair(n))]
		return min(found)[1] if found else None

	pairs, differ, reordered = [], [], []
	i = j = 0
	in_sync = False
	while i < nd and j < nt:
		if in_sync and same(i, j):
			pairs.append((i, j))
			i += 1
			j += 1
			continue
		if in_sync:
			r = replaced(i, j)
			if r:
				if sorted(D.keys[i:i + r]) == sorted(T.keys[j:j + r]):
					# the same hits in another order: an interrupt's hit came
					# between the two probes of an earlier one
					left = list(range(j, j + r))
					for x in range(i, i + r):
						y = next(y for y in left if T.keys[y] == D.keys[x])
						left.remove(y)
						reordered.append((x, y))
				else:
					differ.extend((i + k, j + k) for k in range(r))
				i += r
				j += r
				continue
		in_sync = False
		# Where each head's counterpart is: the same hit is stamped within
		# microseconds in both, a repetition of it later.
		a = best(D, T.keys[j], i, T.ts[j], lambda n: (n, j))	# d[i..a-1] missing from t
		b = best(T, D.keys[i], j, D.ts[i], lambda n: (i, n))	# t[j..b-1] missing from d
		if a is None and b is None:
			# no counterpart near: the earlier one is missing from the other side
			if D.ts[i] <= T.ts[j]:
				i += 1
			else:
				j += 1
			continue
		if a is not None and b is not None:
			# keep the pair whose two stamps are closer
			if abs(D.ts[a] - T.ts[j]) <= abs(D.ts[i] - T.ts[b]):
				b = None
			else:
				a = None
		if a is not None:
			i = a
		else:
			j = b
		pairs.append((i, j))
		i += 1
		j += 1
		in_sync = True
	return pairs, differ, reordered


def exit_race(a, b):
	"""Whether two decodings of one sched_switch differ only in how far the task had exited.

	Each instance's probe reads the leaving task's exit state itself: when
	its parent reaps it on another CPU in between, one says Z (zombie) and
	the other X (dead). The recordings differ; the decodings are right."""
	if a.name != 'sched_switch' or a.fields.keys() != b.fields.keys():
		return False
	diff = [k for k in a.fields if a.fields[k] != b.fields[k]]
	return diff == ['prev_state'] and {a.fields['prev_state'], b.fields['prev_state']} <= {'X', 'Z'}


def excluded(ev, pids):
	"""Whether a recorder that excludes the tasks pids (set_event_notrace_pid) drops ev.

	The kernel drops an event that such a task hits, except sched_switch,
	which it drops only when both the task leaving and the task coming are
	excluded."""
	if ev.name == 'sched_switch':
		f = ev.fields if ev.fields is not None else parse_fields(ev.text)
		return f.get('prev_pid', '').isdigit() and f.get('next_pid', '').isdigit() and \
			int(f['prev_pid']) in pids and int(f['next_pid']) in pids
	return ev.pid in pids


def main():
	ap = argparse.ArgumentParser()
	ap.add_argument('--sm', required=True)
	ap.add_argument('--tc-events', required=True)
	ap.add_argument('--tc-stacks', required=True)
	ap.add_argument('--sm-lost', default='')
	ap.add_argument('--self-pids', default='')
	ap.add_argument('--min-match', type=float, default=0.90)
	ap.add_argument('--min-events', type=int, default=1000)
	args = ap.parse_args()

	sm, _, sm_orphans = read_report(args.sm)
	tc, tc_lost, tc_orphans = read_report(args.tc_events, with_stacks=False)
	attach_stacks(tc, args.tc_stacks)
	sm_lost = {}
	for item in args.sm_lost.split(','):
		if item:
			c, n = item.split(':')
			sm_lost[int(c)] = int(n)
	self_pids = {int(p) for p in args.self_pids.split()}
	problems = []

	def types(cpus):
		out = {}
		for evs in cpus.values():
			for ev in evs:
				if ev.name in FTRACE:
					continue
				if ev.fields is None:
					ev.fields = parse_fields(ev.text)
				out.setdefault(ev.name, set()).update(ev.fields)
		return out

	sm_types, tc_types = types(sm), types(tc)
	print(f'event types: stackmapd {sorted(sm_types)}, trace-cmd {sorted(tc_types)}')
	if set(sm_types) != set(tc_types):
		problems.append(f'event types differ: {sorted(sm_types)} vs {sorted(tc_types)}')
	for name in sorted(set(sm_types) & set(tc_types)):
		if sm_types[name] != tc_types[name]:
			problems.append(f'{name}: fields differ: stackmapd {sorted(sm_types[name])}, '
					f'trace-cmd {sorted(tc_types[name])}')
		else:
			print(f'  {name}: {len(sm_types[name])} fields: {" ".join(sorted(sm_types[name]))}')

	tot = dict(sm=0, tc=0, matched=0, fields=0, stacks=0, compared=0, depth=0, only_sm=0,
		   only_tc=0, self=0, unexplained=0, window=0, exit_race=0,
		   reordered=0)
	max_skew = 0.0
	examples, samples = [], []
	for cpu in sorted(set(sm) | set(tc)):
		d = [e for e in sm.get(cpu, []) if e.name not in FTRACE]
		t = [e for e in tc.get(cpu, []) if e.name not in FTRACE]
		# what stackmapd leaves out on purpose: the events of its own tasks
		own = [e for e in t if excluded(e, self_pids)]
		if own:
			t = [e for e in t if not excluded(e, self_pids)]
		tot['sm'] += len(d)
		tot['tc'] += len(t)
		pairs, differ, reordered = align(d, t)
		if not pairs:
			problems.append(f'CPU {cpu}: no event in common ({len(d)} vs {len(t)})')
			continue
		# the common part: from the first to the last hit both recorded
		(i0, j0), (i1, j1) = pairs[0], pairs[-1]
		matched_d = {i for i, _ in pairs + differ + reordered}
		matched_t = {j for _, j in pairs + differ + reordered}
		only_sm = [d[i] for i in range(i0, i1 + 1) if i not in matched_d]
		only_tc = [t[j] for j in range(j0, j1 + 1) if j not in matched_t]
		tc_budget = tc_lost.get(cpu, 0)
		sm_budget = sm_lost.get(cpu, 0)
		# What one side lacks must be what that side lost, as the kernel counted
		# it (trace-cmd: the losses its report shows; stackmapd: the kernel's
		# counters, which say how many, not where). The counts include the
		# lost stacks, so this bound is loose; the match ratio is the tight one.
		un_sm = 0 if tc_budget is None else max(0, len(only_sm) - tc_budget)
		un_tc = max(0, len(only_tc) - sm_budget)
		for i, j in differ:
			a, b = d[i], t[j]
			if exit_race(a, b):
				tot['exit_race'] += 1
				continue
			tot['fields'] += 1
			if len(examples) < 5:
				examples.append(f'fields differ at {a.ts:.6f} CPU {cpu}:\n  stackmapd {a.text}\n'
						f'  trace-cmd {b.text}')
		for e in only_sm[:2] + only_tc[:2]:
			if len(samples) < 8:
				side = 'stackmapd' if e in only_sm else 'trace-cmd'
				samples.append(f'only {side}: CPU {cpu} {e.ts:.6f} {e.name} pid {e.pid} {e.text}')
		# A stack may be missing only where one side lost events right after the
		# event (its stack entry found the buffer full), at the end, or where
		# an interrupt's hit came in between.
		checks = [(i, j, k + 1 == len(pairs) or pairs[k + 1] != (i + 1, j + 1))
			  for k, (i, j) in enumerate(pairs)] + [(i, j, True) for i, j in reordered]
		for i, j, gap in checks:
			a, b = d[i], t[j]
			max_skew = max(max_skew, abs(a.ts - b.ts))
			if a.stack is None and b.stack is None:
				# neither recording has one (the kernel took none for this
				# hit in either instance): the two decode alike
				continue
			if a.stack is None or b.stack is None:
				if not (a.stack_cut or b.stack_cut or gap):
					tot['stacks'] += 1
					if len(examples) < 5:
						examples.append(f'stack missing at {a.ts:.6f} CPU {cpu}: stackmapd '
								f'{a.stack is not None}, trace-cmd {b.stack is not None}')
				continue
			tot['compared'] += 1
			tot['depth'] += len(a.stack)
			if a.stack != b.stack:
				tot['stacks'] += 1
				if len(examples) < 5:
					examples.append(f'stacks differ at {a.ts:.6f} CPU {cpu}:\n  stackmapd {a.stack}\n'
							f'  trace-cmd {b.stack}')
		window = i1 - i0 + 1
		tot['window'] += window
		tot['matched'] += len(pairs) + len(reordered)
		tot['reordered'] += len(reordered)
		tot['only_sm'] += len(only_sm)
		tot['only_tc'] += len(only_tc)
		tot['self'] += len(own)
		tot['unexplained'] += un_sm + un_tc
		print(f'CPU {cpu}: stackmapd {len(d)}, trace-cmd {len(t)} events; common part '
		      f'{d[i0].ts:.6f}..{d[i1].ts:.6f}: {window} stackmapd events, {len(pairs) + len(reordered)} matched, '
		      f'only stackmapd {len(only_sm)} (trace-cmd lost '
		      f'{"?" if tc_budget is None else tc_budget}), only trace-cmd {len(only_tc)} '
		      f'(stackmapd lost {sm_budget}); {len(own)} events of the daemon\'s own tasks left out')

	avg = tot['depth'] / tot['compared'] if tot['compared'] else 0
	print(f'total: stackmapd {tot["sm"]}, trace-cmd {tot["tc"]} events; {tot["matched"]} matched '
	      f'({tot["reordered"]} in another order; {tot["window"]} stackmapd events in the common '
	      f'part), {tot["fields"]} with different '
	      f'fields ({tot["exit_race"]} more only in an exiting task\'s state), '
	      f'{tot["stacks"]} with different stacks, {tot["compared"]} stacks compared '
	      f'(mean depth {avg:.1f}); only stackmapd {tot["only_sm"]}, only trace-cmd '
	      f'{tot["only_tc"]}, {tot["unexplained"]} more than the losses explain; '
	      f'{tot["self"]} events of the daemon\'s own tasks left out; stacks without an event '
	      f'{sm_orphans}/{tc_orphans}; largest time skew {max_skew * 1e6:.0f} us')
	if tot['fields']:
		problems.append(f'{tot["fields"]} matched events with different fields')
	if tot['stacks']:
		problems.append(f'{tot["stacks"]} matched events with different stacks')
	if tot['matched'] < args.min_events:
		problems.append(f'only {tot["matched"]} events in common (want {args.min_events})')
	# What both could have recorded: the common part, less what either lost.
	comparable = tot['matched'] + tot['fields'] + tot['unexplained']
	if comparable and tot['matched'] / comparable < args.min_match:
		problems.append(f'only {tot["matched"]} of {comparable} events match')
	if tot['matched'] and tot['compared'] < args.min_match * tot['matched']:
		problems.append(f'only {tot["compared"]} of {tot["matched"]} matched events have both stacks')
	for e in examples + (samples if problems else []):
		print(e, file=sys.stderr)
	for p in problems:
		print(f'mismatch: {p}', file=sys.stderr)
	return 1 if problems else 0


if __name__ == '__main__':
	sys.exit(main())
