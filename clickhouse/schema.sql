-- stackmapd's tables in ClickHouse (18.16 and later): the events of a
-- fleet's segments, their stacks, the events the kernel lost, and which
-- segment was loaded from where. doc/fleet.md describes the columns, the
-- loader (stackmapd-load) and the queries; lib/export/clickhouse.h the rows.
--
-- Each server of the cluster `stackmapd` (remote_servers in the server's
-- configuration; one shard for a single server) gets the same tables:
--
--   events, losses, stacks, loads, host_groups,  what the shard stores
--   allocations, frees
--   events_committed, losses_committed,          views: rows of committed loads only
--   allocations_committed, frees_committed
--   allocation_ends, allocations_paired          views: allocations paired across loads
--   events_in, losses_in, allocations_in,        Distributed: where the loader inserts
--   frees_in
--   fleet_events, fleet_losses, fleet_stacks,    Distributed: what queries read
--   fleet_loads, fleet_host_groups,
--   fleet_allocations
--
-- Rows are sharded by host (stacks by their key), so that a host's events
-- and the loads that commit them are on one shard: a view checks its
-- shard's loads only. Exactly once: every row carries the id of the load
-- that inserted it, and counts only once that load's loads row exists
-- (inserted last, after everything else reached the shards); a segment
-- loaded twice counts with its latest committed load only. Rows of a load
-- that never committed (the loader died) are never counted. A row counts
-- when its whole key (host, boot_id, recording_id, segment_seq, load_id)
-- is the latest load of its segment: a load of several segments, one of
-- them loaded again later, still counts for the others, and no longer for
-- that one.
--
-- Everything is created only if it does not exist: to replace the views
-- of an older schema (which kept rows by load_id alone), drop them first
-- (DROP TABLE IF EXISTS stackmapd.events_committed, and losses_committed).
--
-- Times: ts is the trace clock (ns, as recorded); wall_ns, begin_ns,
-- end_ns, loaded_ns are CLOCK_REALTIME in ns (0: not known). `time` in the
-- views is wall_ns in seconds as a DateTime.

CREATE DATABASE IF NOT EXISTS stackmapd;

-- One row per event (and per stack entry whose event was lost:
-- event '[unknown]'). stack_key 0: no stack. entries: ring-buffer entries
-- the row stands for (1, or 2 with a stack entry), sum(entries) is what
-- `stackmapctl info` counts.
CREATE TABLE IF NOT EXISTS stackmapd.events (
	host String,
	boot_id String,
	recording_id String,
	segment_seq UInt32,
	load_id UInt64,
	kernel String,
	cpu UInt16,
	pid Int32,
	comm String,
	system String,
	event String,
	ts UInt64,
	wall_ns UInt64,
	stack_key UInt64,
	entries UInt8
) ENGINE = MergeTree
PARTITION BY toYYYYMMDD(toDateTime(intDiv(wall_ns, 1000000000)))
ORDER BY (event, host, wall_ns);

-- Each distinct stack once (after merges: read it with any() or FINAL).
-- frames: function names, innermost first; '[unresolved]' for a stack
-- that could not be resolved; key 0 is '[no stack]'.
CREATE TABLE IF NOT EXISTS stackmapd.stacks (
	stack_key UInt64,
	depth UInt16,
	frames Array(String)
) ENGINE = ReplacingMergeTree
ORDER BY stack_key;

-- Events the kernel lost, per segment and CPU: how many (lost_unknown:
-- losses of unknown count) and the span in which they were lost.
CREATE TABLE IF NOT EXISTS stackmapd.losses (
	host String,
	boot_id String,
	recording_id String,
	segment_seq UInt32,
	load_id UInt64,
	cpu UInt16,
	lost UInt64,
	lost_unknown UInt64,
	begin_ns UInt64,
	end_ns UInt64,
	begin_ts UInt64,
	end_ts UInt64
) ENGINE = MergeTree
ORDER BY (host, begin_ns);

-- One row per segment and load: the commit of the load's rows, and what
-- was loaded from where.
CREATE TABLE IF NOT EXISTS stackmapd.loads (
	load_id UInt64,
	loaded_ns UInt64,
	host String,
	boot_id String,
	recording_id String,
	segment_seq UInt32,
	kernel String,
	path String,
	bytes UInt64,
	events UInt64,
	entries UInt64,
	lost UInt64,
	begin_ns UInt64,
	end_ns UInt64
) ENGINE = MergeTree
ORDER BY (host, recording_id, segment_seq);

-- Groups of hosts, kept by the operator (a host may be in several).
CREATE TABLE IF NOT EXISTS stackmapd.host_groups (
	host_group String,
	host String
) ENGINE = ReplacingMergeTree
ORDER BY (host_group, host);

-- One row per allocation (kmalloc, kmem_cache_alloc, mm_page_alloc, ...),
-- in the segment of the allocation, as `stackmapctl memory` pairs it with
-- its end within the load (lib/export/memory.c): ended 'free' (free_ns,
-- free_ts: its free), 'lost' (the same pointer or pfn allocated again at
-- free_ns with no free seen between: what memory counts as a lost free)
-- or 'live' (no end in this load: free_ns NULL). allocator: 'slab' (ptr is
-- the pointer) or 'page' (ptr is the pfn). kind: the slab cache,
-- kmalloc-SIZE or pages-orderN. stack_key: as in events. Read
-- fleet_allocations, which ends the 'live' ones that later loads end.
CREATE TABLE IF NOT EXISTS stackmapd.allocations (
	host String,
	boot_id String,
	recording_id String,
	segment_seq UInt32,
	load_id UInt64,
	allocator String,
	kind String,
	event String,
	ptr UInt64,
	bytes UInt64,
	alloc_ns UInt64,
	alloc_ts UInt64,
	ended String,
	free_ns Nullable(UInt64),
	free_ts Nullable(UInt64),
	stack_key UInt64
) ENGINE = MergeTree
PARTITION BY toYYYYMMDD(toDateTime(intDiv(alloc_ns, 1000000000)))
ORDER BY (host, boot_id, allocator, ptr, alloc_ns);

-- The frees whose allocation is not in their segment (in an earlier one,
-- or not recorded), in the segment of the free: what allocation_ends
-- pairs across segments and loads.
CREATE TABLE IF NOT EXISTS stackmapd.frees (
	host String,
	boot_id String,
	recording_id String,
	segment_seq UInt32,
	load_id UInt64,
	allocator String,
	ptr UInt64,
	free_ns UInt64,
	free_ts UInt64
) ENGINE = MergeTree
PARTITION BY toYYYYMMDD(toDateTime(intDiv(free_ns, 1000000000)))
ORDER BY (host, boot_id, allocator, ptr, free_ns);

CREATE VIEW IF NOT EXISTS stackmapd.events_committed AS
SELECT host, boot_id, recording_id, segment_seq, load_id, kernel, cpu, pid, comm, system,
	event, ts, wall_ns, stack_key, entries, toDateTime(intDiv(wall_ns, 1000000000)) AS time
FROM stackmapd.events
WHERE (host, boot_id, recording_id, segment_seq, load_id) IN
	(SELECT host, boot_id, recording_id, segment_seq, argMax(load_id, loaded_ns)
	 FROM stackmapd.loads GROUP BY host, boot_id, recording_id, segment_seq);

CREATE VIEW IF NOT EXISTS stackmapd.losses_committed AS
SELECT host, boot_id, recording_id, segment_seq, load_id, cpu, lost, lost_unknown,
	begin_ns, end_ns, begin_ts, end_ts, toDateTime(intDiv(begin_ns, 1000000000)) AS time
FROM stackmapd.losses
WHERE (host, boot_id, recording_id, segment_seq, load_id) IN
	(SELECT host, boot_id, recording_id, segment_seq, argMax(load_id, loaded_ns)
	 FROM stackmapd.loads GROUP BY host, boot_id, recording_id, segment_seq);

CREATE VIEW IF NOT EXISTS stackmapd.allocations_committed AS
SELECT host, boot_id, recording_id, segment_seq, load_id, allocator, kind, event, ptr, bytes,
	alloc_ns, alloc_ts, ended, free_ns, free_ts, stack_key
FROM stackmapd.allocations
WHERE (host, boot_id, recording_id, segment_seq, load_id) IN
	(SELECT host, boot_id, recording_id, segment_seq, argMax(load_id, loaded_ns)
	 FROM stackmapd.loads GROUP BY host, boot_id, recording_id, segment_seq);

CREATE VIEW IF NOT EXISTS stackmapd.frees_committed AS
SELECT host, boot_id, recording_id, segment_seq, load_id, allocator, ptr, free_ns, free_ts
FROM stackmapd.frees
WHERE (host, boot_id, recording_id, segment_seq, load_id) IN
	(SELECT host, boot_id, recording_id, segment_seq, argMax(load_id, loaded_ns)
	 FROM stackmapd.loads GROUP BY host, boot_id, recording_id, segment_seq);

-- The end of each committed allocation its load left 'live', from the
-- rows of every load: what comes next for its pointer (or pfn) in its
-- host's boot, by the trace clock (ts: the order the events had; the
-- wall-clock times of two segments come from their own CLOCK pairs and
-- may disagree by microseconds). A free: ended 'free'; an allocation:
-- 'lost' (its free was not seen); nothing: no row (live). This is the
-- rule memory.c pairs by (the latest allocation of a pointer takes its
-- next free), over the allocations, their in-load frees and the frees
-- rows of the pointers concerned. (Each event is joined with the next
-- one as two arrays side by side: a pointer allocated again and again
-- costs memory in proportion to its events, not to their square.)
CREATE VIEW IF NOT EXISTS stackmapd.allocation_ends AS
SELECT host, boot_id, allocator, ptr, e.3 AS alloc_ns, next.3 AS end_ns,
	if(next.2 = 1, 'lost', 'free') AS end_kind
FROM (
	SELECT host, boot_id, allocator, ptr, arraySort(groupArray((ts, is_alloc, t))) AS evs,
		arrayPushBack(arraySlice(evs, 2), (toUInt64(0), toUInt8(2), toUInt64(0))) AS nexts
	FROM (
		SELECT host, boot_id, allocator, ptr, alloc_ts AS ts, toUInt8(1) AS is_alloc,
			alloc_ns AS t
		FROM stackmapd.allocations_committed
		WHERE (host, boot_id, allocator, ptr) IN (SELECT host, boot_id, allocator, ptr
			FROM stackmapd.allocations_committed WHERE ended = 'live')
		UNION ALL
		SELECT host, boot_id, allocator, ptr, assumeNotNull(free_ts) AS ts,
			toUInt8(0) AS is_alloc, assumeNotNull(free_ns) AS t
		FROM stackmapd.allocations_committed
		WHERE ended = 'free' AND (host, boot_id, allocator, ptr) IN
			(SELECT host, boot_id, allocator, ptr
			 FROM stackmapd.allocations_committed WHERE ended = 'live')
		UNION ALL
		SELECT host, boot_id, allocator, ptr, free_ts AS ts, toUInt8(0) AS is_alloc,
			free_ns AS t
		FROM stackmapd.frees_committed
		WHERE (host, boot_id, allocator, ptr) IN (SELECT host, boot_id, allocator, ptr
			FROM stackmapd.allocations_committed WHERE ended = 'live')
	)
	GROUP BY host, boot_id, allocator, ptr
)
ARRAY JOIN evs AS e, nexts AS next
WHERE e.2 = 1 AND next.2 != 2;

-- The committed allocations with their ends across loads: ended 'free',
-- 'lost' (free_ns: when the pointer was allocated again) or 'live'
-- (free_ns NULL: live at the end of what was loaded, or at its boot's end).
CREATE VIEW IF NOT EXISTS stackmapd.allocations_paired AS
SELECT host, boot_id, recording_id, segment_seq, load_id, allocator, kind, event, ptr, bytes,
	alloc_ns, alloc_ts,
	if(load_ended != 'live' OR end_kind = '', load_ended, end_kind) AS ended,
	if(load_ended != 'live', load_free_ns, if(end_kind = '', NULL, end_ns)) AS free_ns,
	stack_key, toDateTime(intDiv(alloc_ns, 1000000000)) AS time
FROM (
	SELECT host, boot_id, recording_id, segment_seq, load_id, allocator, kind, event, ptr,
		bytes, alloc_ns, alloc_ts, ended AS load_ended, free_ns AS load_free_ns, stack_key
	FROM stackmapd.allocations_committed
)
ANY LEFT JOIN (
	SELECT host, boot_id, allocator, ptr, alloc_ns, end_ns, end_kind
	FROM stackmapd.allocation_ends
) USING (host, boot_id, allocator, ptr, alloc_ns);

CREATE TABLE IF NOT EXISTS stackmapd.events_in AS stackmapd.events
ENGINE = Distributed(stackmapd, stackmapd, events, sipHash64(host));
CREATE TABLE IF NOT EXISTS stackmapd.losses_in AS stackmapd.losses
ENGINE = Distributed(stackmapd, stackmapd, losses, sipHash64(host));
CREATE TABLE IF NOT EXISTS stackmapd.allocations_in AS stackmapd.allocations
ENGINE = Distributed(stackmapd, stackmapd, allocations, sipHash64(host));
CREATE TABLE IF NOT EXISTS stackmapd.frees_in AS stackmapd.frees
ENGINE = Distributed(stackmapd, stackmapd, frees, sipHash64(host));
CREATE TABLE IF NOT EXISTS stackmapd.fleet_events AS stackmapd.events_committed
ENGINE = Distributed(stackmapd, stackmapd, events_committed, sipHash64(host));
CREATE TABLE IF NOT EXISTS stackmapd.fleet_losses AS stackmapd.losses_committed
ENGINE = Distributed(stackmapd, stackmapd, losses_committed, sipHash64(host));
CREATE TABLE IF NOT EXISTS stackmapd.fleet_stacks AS stackmapd.stacks
ENGINE = Distributed(stackmapd, stackmapd, stacks, stack_key);
CREATE TABLE IF NOT EXISTS stackmapd.fleet_allocations AS stackmapd.allocations_paired
ENGINE = Distributed(stackmapd, stackmapd, allocations_paired, sipHash64(host));
CREATE TABLE IF NOT EXISTS stackmapd.fleet_loads AS stackmapd.loads
ENGINE = Distributed(stackmapd, stackmapd, loads, sipHash64(host));
CREATE TABLE IF NOT EXISTS stackmapd.fleet_host_groups AS stackmapd.host_groups
ENGINE = Distributed(stackmapd, stackmapd, host_groups, sipHash64(host));
