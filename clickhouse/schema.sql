-- stackmapd's tables in ClickHouse (18.16 and later): the events of a
-- fleet's segments, their stacks, the events the kernel lost, and which
-- segment was loaded from where. doc/fleet.md describes the columns, the
-- loader (stackmapd-load) and the queries; lib/export/clickhouse.h the rows.
--
-- Each server of the cluster `stackmapd` (remote_servers in the server's
-- configuration; one shard for a single server) gets the same tables:
--
--   events, losses, stacks, loads, host_groups   what the shard stores
--   events_committed, losses_committed           views: rows of committed loads only
--   events_in, losses_in                         Distributed: where the loader inserts
--   fleet_events, fleet_losses, fleet_stacks,    Distributed: what queries read
--   fleet_loads, fleet_host_groups
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

CREATE TABLE IF NOT EXISTS stackmapd.events_in AS stackmapd.events
ENGINE = Distributed(stackmapd, stackmapd, events, sipHash64(host));
CREATE TABLE IF NOT EXISTS stackmapd.losses_in AS stackmapd.losses
ENGINE = Distributed(stackmapd, stackmapd, losses, sipHash64(host));
CREATE TABLE IF NOT EXISTS stackmapd.fleet_events AS stackmapd.events_committed
ENGINE = Distributed(stackmapd, stackmapd, events_committed, sipHash64(host));
CREATE TABLE IF NOT EXISTS stackmapd.fleet_losses AS stackmapd.losses_committed
ENGINE = Distributed(stackmapd, stackmapd, losses_committed, sipHash64(host));
CREATE TABLE IF NOT EXISTS stackmapd.fleet_stacks AS stackmapd.stacks
ENGINE = Distributed(stackmapd, stackmapd, stacks, stack_key);
CREATE TABLE IF NOT EXISTS stackmapd.fleet_loads AS stackmapd.loads
ENGINE = Distributed(stackmapd, stackmapd, loads, sipHash64(host));
CREATE TABLE IF NOT EXISTS stackmapd.fleet_host_groups AS stackmapd.host_groups
ENGINE = Distributed(stackmapd, stackmapd, host_groups, sipHash64(host));
