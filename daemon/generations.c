/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A stack id means one stack only within one lifetime of the kernel's map
 * (a generation). Each reset is bracketed by trace markers whose timestamps
 * bound the window in which an event's generation cannot be told from its
 * timestamp; lib/segment/stacktab-resolve.c resolves ids in that window
 * only when both generations agree. In strict mode tracing is paused and every reader
 * drained around the reset, and a per-CPU boundary record in each stream
 * makes the split exact.
 *
 * Every step that needs the readers' data waits on a flush barrier that
 * the recorder provides (struct generations_ops): markers are only known
 * once the pages that hold them have been read. Calls go one way: the
 * recorder calls this module; this module reaches the recorder only
 * through those callbacks.
 */
#include <assert.h>
#include <inttypes.h>
#include <sched.h>

#include "archive.h"
#include "config.h"
#include "generations.h"
#include "log.h"
#include "stackmap.h"
#include "tracing.h"
#include "util.h"

#define MARKER_RETRIES 40
#define MARKER_END_RETRIES 8	/* once the begin marker is read: the end one was lost */
#define MARKER_RETRY_USEC (25 * USEC_PER_MSEC)

enum step {
	STEP_IDLE,
	STEP_LOSSLESS,		/* reset written, waiting for the markers */
	STEP_STRICT_DRAIN,	/* tracing off, waiting for every reader to drain */
	STEP_STRICT_BOUNDARY,	/* map reset, waiting for the per-CPU boundaries */
	STEP_STRICT_MARKER,	/* tracing on again, waiting for the marker */
	STEP_EXTERNAL,		/* someone else reset the map: waiting for the marker */
};

struct generations {
	struct generations_params p;	/* borrowed pointers, see generations_new() */
	struct stackmap *sm;
	enum step step;
	enum segment_gen_kind kind;
	uint32_t gen_before;
	char key[STACKMAP_MARKER_KEY_LEN + 1];	/* this run's marker secret */
	uint64_t foreign_markers;	/* "stackmapd: " lines without our key */
	uint64_t realtime_refused;	/* resets run at normal priority: not allowed */
	struct log_ratelimit realtime_rl;
	int saved_policy;		/* while raised: what to go back to */
	struct sched_param saved_param;
	bool raised;
	struct log_ratelimit foreign_rl;
	char end_marker[64], begin_marker[64];
	uint64_t end_ts, begin_ts;
	uint32_t end_cpu, begin_cpu;	/* where the earliest copy of each marker was read */
	unsigned retries;
	uint64_t snap_seq;
	uint64_t reset_started_usec;
	generations_done_fn done;
	void *userdata;
	sd_event_source *retry_timer;
	bool stopping;		/* the recorder stops: no more rotations */
};

int generations_new(const struct generations_params *p, struct generations **ret)
{
	struct generations *g;
	struct segment_generation first;
	int r;

	assert(p);
	assert(ret);

	g = calloc(1, sizeof(*g));
	if (!g)
		return -ENOMEM;
	g->p = *p;
	g->foreign_rl = (struct log_ratelimit)LOG_RATELIMIT_INIT;
	g->realtime_rl = (struct log_ratelimit)LOG_RATELIMIT_INIT;
	r = stackmap_marker_key_new(g->key);
	if (r < 0) {
		free(g);
		return r;
	}
	r = stackmap_new(tracing_dir(p->tracing), p->cfg, &g->sm);
	if (r < 0)
		goto fail;
	/* on disk before it changes: a run that crashes leaves it for the next to put back */
	{
		_cleanup_free_ char *path = NULL;

		r = strprintf(&path, "%s/options/stackmap", tracing_dir(p->tracing));
		if (r >= 0 && access(path, F_OK) == 0)
			r = tracing_remember(p->tracing, path);
		if (r < 0)
			goto fail;
	}
	r = stackmap_enable(g->sm);
	if (r < 0)
		goto fail;
	r = stackmap_start(g->sm, &first);
	if (r < 0) {
		(void)stackmap_restore(g->sm);
		goto fail;
	}
	*ret = g;
	return 0;
fail:
	stackmap_free(g->sm);
	free(g);
	return r;
}

bool generations_busy(const struct generations *g)
{
	assert(g);
	return g->step != STEP_IDLE;
}

static void finish(struct generations *g, int r)
{
	generations_done_fn done = g->done;

	g->step = STEP_IDLE;
	g->done = NULL;
	g->end_ts = g->begin_ts = 0;
	g->end_cpu = g->begin_cpu = SEGMENT_NO_CPU;
	g->end_marker[0] = g->begin_marker[0] = '\0';
	if (done)
		done(g->userdata, r, NULL);
}

/*
 * Every stack id recorded between the markers around a lossless reset may
 * stay unresolved, so the window should last as long as the reset itself
 * (an RCU grace period, mostly spent asleep in the kernel) and no longer.
 * A busy machine preempts the daemon between those few system calls for
 * 5-50 ms (measured under a kmem load on 2 CPUs), and the window widens by
 * as much: 0.02-0.2 % of the stacks stayed unresolved, none at the lowest
 * real-time priority. The child processes (hooks) do not inherit it.
 * Refused (no CAP_SYS_NICE, RestrictRealtime=): said once, counted, and
 * the reset goes on at the normal priority.
 */
static void raise_priority(struct generations *g)
{
	struct sched_param rt = { .sched_priority = 1 };
	int policy;

	if (!g->p.cfg->reset_realtime || g->raised)
		return;
	policy = sched_getscheduler(0);
	/* already real-time (as configured by the administrator): leave it */
	if (policy < 0 || (policy & ~SCHED_RESET_ON_FORK) == SCHED_FIFO ||
	    (policy & ~SCHED_RESET_ON_FORK) == SCHED_RR)
		return;
	if (sched_getparam(0, &g->saved_param) < 0)
		return;
	if (sched_setscheduler(0, SCHED_FIFO | SCHED_RESET_ON_FORK, &rt) < 0) {
		g->realtime_refused++;
		log_ratelimit_warn_errno(&g->realtime_rl, -errno,
					 "cannot run the stack-map reset at real-time priority (%" PRIu64
					 " resets so far); its window may be wider, continuing",
					 g->realtime_refused);
		return;
	}
	g->saved_policy = policy;
	g->raised = true;
}

static void restore_priority(struct generations *g)
{
	if (!g->raised)
		return;
	if (sched_setscheduler(0, g->saved_policy, &g->saved_param) < 0)
		log_errno(LOG_WARNING, -errno, "cannot go back to the normal priority after the reset");
	g->raised = false;
}

/* Write text with our key appended. */
static int write_keyed(struct generations *g, const char *text)
{
	char line[128];

	(void)snprintf(line, sizeof(line), "%s %s", text, g->key);
	return tracing_write_marker(g->p.tracing, line);
}

/*
 * Write "stackmapd: gen N end|begin KEY" and remember it (without the key)
 * in dst to recognize it when read back.
 */
static int write_marker(struct generations *g, char *dst, size_t len, uint32_t gen, const char *what)
{
	(void)snprintf(dst, len, "stackmapd: gen %u %s", gen, what);
	return write_keyed(g, dst);
}

/*
 * Write the marker after the reset. Any one written after the reset bounds
 * its window, so it is written again while none was read back: a full
 * buffer drops a marker (the write fails, or its page is lost) as it drops
 * events, and without one the new generation's window stays open.
 */
static void write_begin_marker(struct generations *g)
{
	int r = write_marker(g, g->begin_marker, sizeof(g->begin_marker), g->gen_before + 1, "begin");

	if (r < 0)
		log_debug("cannot write the marker after the reset (%s), writing it again shortly",
			  strerror(-r));
}

/* The new generation has its window: record it and start its segment. */
static void begin_generation(struct generations *g)
{
	struct segment_generation ng;
	uint8_t payload[SEGMENT_GENERATION_SIZE];
	int r;

	if (!g->end_ts || !g->begin_ts) {
		/* the markers were not seen: nothing bounds the window, so nothing after it resolves by time */
		log_warn("reset markers of generation %u were not read back, its ids resolve only "
			 "where both generations agree, continuing", g->gen_before + 1);
		g->kind = SEGMENT_GEN_RESET_EXTERNAL;
		if (!g->begin_ts)
			g->begin_ts = UINT64_MAX - 1;
	}
	/*
	 * The window spans both markers, also when CPUs' clocks put them the
	 * other way round; then neither marker bounds it on its own CPU.
	 */
	{
		bool ordered = g->end_ts <= g->begin_ts;
		struct stackmap_window w = {
			.begin_ts = g->kind == SEGMENT_GEN_RESET_EXTERNAL ? 0 : MIN(g->end_ts, g->begin_ts),
			.end_ts = MAX(g->end_ts, g->begin_ts),
			.begin_cpu = ordered ? g->end_cpu : SEGMENT_NO_CPU,
			.end_cpu = ordered ? g->begin_cpu : SEGMENT_NO_CPU,
		};

		r = stackmap_begin_generation(g->sm, g->kind, &w, &ng);
	}
	if (r < 0) {
		log_errno(LOG_ERR, r, "cannot begin stack-map generation %u", g->gen_before + 1);
		finish(g, r);
		return;
	}
	segment_generation_encode(&ng, payload);
	(void)archive_append_record(g->p.archive, SEGMENT_REC_GENERATION, SEGMENT_NO_CPU, payload,
				    sizeof(payload));
	{
		char f_gen[32];
		const char *fields[] = { f_gen, NULL };

		(void)snprintf(f_gen, sizeof(f_gen), "GENERATION=%u", ng.generation);
		log_struct(LOG_INFO, fields,
			   "stack map generation %u begins (%s reset, %.1f ms)", ng.generation,
			   ng.kind == SEGMENT_GEN_RESET_STRICT ? "strict" :
			   ng.kind == SEGMENT_GEN_RESET_LOSSLESS ? "lossless" : "external",
			   (double)(now_usec(CLOCK_MONOTONIC) - g->reset_started_usec) / 1000.0);
	}
	if (ng.generation > 2)
		(void)stackmap_release_before(g->sm, ng.generation - 1);
	finish(g, 0);
	/*
	 * A new generation starts a new segment; the flight recorder has one
	 * only while saving. Last: the end of the segment takes a snapshot,
	 * which may find the next reset and start it.
	 */
	if (!g->p.flight && !g->stopping)
		g->p.ops->rotate(g->p.userdata, "new stack-map generation");
}

static void after_flush(struct generations *g);

/* Flush every reader, then cont(g); on failure go on at once with begin_generation(). */
static void flush_then(struct generations *g, const struct segment_generation *boundary,
		       void (*cont)(struct generations *g))
{
	/* reading the flight recorder's buffer would empty it: go on without the markers */
	if (g->p.flight || g->p.ops->flush(g->p.userdata, boundary, cont, g) < 0)
		begin_generation(g);
}

static int on_retry_timer(sd_event_source *s, uint64_t usec, void *userdata)
{
	flush_then(userdata, NULL, after_flush);
	return 0;
}

static void after_flush(struct generations *g)
{
	bool waiting = !g->begin_ts || (!g->end_ts && g->retries < MARKER_END_RETRIES);
	int r;

	/*
	 * A read of trace_pipe_raw can come back empty while a page that was
	 * just written is not yet handed out: give the markers a little time
	 * and flush again, rather than give up on the window. The end marker
	 * precedes the begin marker: once that one is read, the end one gets
	 * a few more rounds only.
	 */
	if (waiting && g->retries++ < MARKER_RETRIES) {
		if (!g->begin_ts && g->retries > 1)
			write_begin_marker(g);
		if (!g->retry_timer)
			r = sd_event_add_time_relative(g->p.event, &g->retry_timer, CLOCK_MONOTONIC,
						       MARKER_RETRY_USEC, 0, on_retry_timer, g);
		else
			r = sd_event_source_set_time_relative(g->retry_timer, MARKER_RETRY_USEC);
		if (r >= 0)
			r = sd_event_source_set_enabled(g->retry_timer, SD_EVENT_ONESHOT);
		if (r >= 0)
			return;
	}
	begin_generation(g);
}

static void strict_tracing_on(struct generations *g)
{
	int r;

	r = tracing_set_on(g->p.tracing, true);
	if (r < 0)
		log_errno(LOG_ERR, r, "cannot restart tracing after the reset");
	write_begin_marker(g);
	g->step = STEP_STRICT_MARKER;
	flush_then(g, NULL, after_flush);
}

static void strict_drained(struct generations *g)
{
	struct segment_generation boundary = {
		.generation = g->gen_before + 1,
		.prev_generation = g->gen_before,
		.kind = SEGMENT_GEN_RESET_STRICT,
		.begin_cpu = SEGMENT_NO_CPU,
		.end_cpu = SEGMENT_NO_CPU,
	};
	int r;

	(void)stackmap_snapshot_final(g->sm);
	r = stackmap_write_reset(g->sm);
	if (r < 0) {
		log_errno(LOG_WARNING, r, "cannot reset the stack map, continuing in generation %u",
			  g->gen_before);
		(void)tracing_set_on(g->p.tracing, true);
		finish(g, r);
		return;
	}
	if (r == 1)
		g->kind = SEGMENT_GEN_RESET_EXTERNAL;
	g->step = STEP_STRICT_BOUNDARY;
	if (g->p.ops->flush(g->p.userdata, r == 1 ? NULL : &boundary, strict_tracing_on, g) < 0) {
		(void)tracing_set_on(g->p.tracing, true);
		finish(g, -ENOMEM);
	}
}

static int start_reset(struct generations *g, const char *why)
{
	bool strict = g->p.cfg->reset_mode == CONFIG_RESET_STRICT, reread;
	int r;

	g->gen_before = stackmap_generation(g->sm);
	g->retries = 0;
	g->end_ts = g->begin_ts = 0;
	g->end_cpu = g->begin_cpu = SEGMENT_NO_CPU;
	g->reset_started_usec = now_usec(CLOCK_MONOTONIC);
	log_debug("resetting the stack map (%s, %s)", why, strict ? "strict" : "lossless");

	if (strict) {
		r = write_marker(g, g->end_marker, sizeof(g->end_marker), g->gen_before, "end");
		if (r < 0)
			return r;
		g->kind = SEGMENT_GEN_RESET_STRICT;
		r = tracing_set_on(g->p.tracing, false);
		if (r < 0)
			return r;
		g->step = STEP_STRICT_DRAIN;
		if (g->p.ops->flush(g->p.userdata, NULL, strict_drained, g) < 0) {
			(void)tracing_set_on(g->p.tracing, true);
			g->step = STEP_IDLE;
			return -ENOMEM;
		}
		return 0;
	}

	/*
	 * Every id of an event before the end marker must be in the old
	 * generation as far as it is known: a look at the map after the
	 * marker, or taken at the very moment it is written, holds them (an
	 * id assigned in between is absent from the generation: unresolved,
	 * never wrong). When the map is read once more right before the
	 * reset, that look is the one, and the final snapshot (the longer
	 * read, with the counters) comes before the marker. The binary
	 * export's snapshot is taken when it is opened: it is opened before
	 * the marker and read after the marker that follows the reset, so
	 * the window spans the two markers and the reset only, not the read
	 * (on the CPUs that did not write the markers, most of what stayed
	 * unresolved lay in that read).
	 */
	g->kind = SEGMENT_GEN_RESET_LOSSLESS;
	reread = stackmap_rereads_before_reset(g->sm);
	if (!reread) {
		/*
		 * The final snapshot comes after the marker here and reads the
		 * whole text map: real-time priority over that read would hold
		 * the CPU from every other task for as long. It is raised for
		 * the reset and the begin marker only.
		 */
		r = write_marker(g, g->end_marker, sizeof(g->end_marker), g->gen_before, "end");
		if (r < 0)
			return r;
	}
	(void)stackmap_snapshot_final(g->sm);
	/* without it (a full buffer) the window opens at the last snapshot that matched */
	raise_priority(g);
	if (reread) {
		int o = stackmap_open_last_look(g->sm);

		if (o < 0)
			log_errno(LOG_DEBUG, o, "cannot open the map for a last look, reading it before the "
					"reset instead");
		if (write_marker(g, g->end_marker, sizeof(g->end_marker), g->gen_before, "end") < 0)
			log_debug("cannot write the marker before the reset, continuing");
	}
	r = stackmap_write_reset(g->sm);
	if (r < 0) {
		restore_priority(g);
		return r;
	}
	if (r == 1)
		g->kind = SEGMENT_GEN_RESET_EXTERNAL;
	write_begin_marker(g);
	restore_priority(g);
	if (r == 0) {
		int m = stackmap_merge_last_look(g->sm);

		if (m == STACKMAP_SNAP_EXTERNAL) {
			log_warn("the stack map was reset by someone else just before our reset; ids "
				 "near that moment stay unresolved unless both generations agree, "
				 "continuing");
			g->kind = SEGMENT_GEN_RESET_EXTERNAL;
		} else if (m < 0) {
			log_errno(LOG_WARNING, m, "cannot read the last look at the map, its new ids stay "
					"unresolved, continuing");
		}
	}
	g->step = STEP_LOSSLESS;
	flush_then(g, NULL, after_flush);
	return 0;
}

static void start_external(struct generations *g)
{
	g->gen_before = stackmap_generation(g->sm);
	g->kind = SEGMENT_GEN_RESET_EXTERNAL;
	g->retries = 0;
	g->end_ts = 1;		/* the module knows the window's start: the last matching snapshot */
	g->end_cpu = g->begin_cpu = SEGMENT_NO_CPU;
	g->begin_ts = 0;
	g->reset_started_usec = now_usec(CLOCK_MONOTONIC);
	log_warn("the stack map was reset by someone else; ids near that moment stay unresolved "
		 "unless both generations agree, continuing");
	write_begin_marker(g);
	g->step = STEP_EXTERNAL;
	flush_then(g, NULL, after_flush);
}

void generations_marker(struct generations *g, const struct page_marker *m)
{
	size_t len;
	char text[sizeof(m->text)];

	assert(g);
	assert(m);

	/* only our own lines may end or begin a generation or date a snapshot */
	if (!stackmap_marker_unkey(m->text, strnlen(m->text, sizeof(m->text)), g->key, &len)) {
		g->foreign_markers++;
		log_ratelimit_warn_errno(&g->foreign_rl, -EPERM,
					 "ignored a trace marker that looks like ours but lacks this run's "
					 "key (%" PRIu64 " so far), continuing", g->foreign_markers);
		return;
	}
	memcpy(text, m->text, len);
	text[len] = '\0';
	/*
	 * The marker after the reset is written again while none is read back,
	 * and the CPUs' buffers are read in no particular order: a later copy
	 * can come back before or after the first one. Any copy bounds the
	 * window; the earliest bounds it best.
	 */
	if (g->end_marker[0] && streq(text, g->end_marker)) {
		if (!g->end_ts || m->ts < g->end_ts) {
			g->end_ts = m->ts;
			g->end_cpu = m->cpu;
		}
	} else if (g->begin_marker[0] && streq(text, g->begin_marker)) {
		if (!g->begin_ts || m->ts < g->begin_ts) {
			g->begin_ts = m->ts;
			g->begin_cpu = m->cpu;
		}
	} else
		(void)stackmap_marker_seen(g->sm, text, len, m->ts);
}

void generations_tick(struct generations *g)
{
	enum stackmap_reset_reason why;
	char marker[64];
	int r;

	assert(g);

	if (g->step != STEP_IDLE || g->p.flight)
		return;
	g->snap_seq++;
	(void)snprintf(marker, sizeof(marker), STACKMAP_SNAP_MARKER_PREFIX "%" PRIu64, g->snap_seq);
	r = write_keyed(g, marker);
	r = stackmap_snapshot(g->sm, r < 0 ? 0 : g->snap_seq);
	if (r > 0 && (r & (STACKMAP_SNAP_EXTERNAL | STACKMAP_SNAP_DISABLED))) {
		start_external(g);
		return;
	}
	why = stackmap_reset_due(g->sm, now_usec(CLOCK_MONOTONIC));
	if (why != STACKMAP_RESET_NONE) {
		r = start_reset(g, stackmap_reset_reason_to_string(why));
		if (r < 0)
			log_errno(LOG_WARNING, r, "cannot reset the stack map, continuing");
	}
}

int generations_reset(struct generations *g, generations_done_fn done, void *userdata)
{
	int r;

	assert(g);

	if (g->p.flight)
		return -EOPNOTSUPP;
	if (g->step != STEP_IDLE)
		return -EBUSY;
	r = start_reset(g, "request");
	if (r < 0) {
		g->step = STEP_IDLE;
		return r;
	}
	g->done = done;
	g->userdata = userdata;
	return 0;
}

void generations_stop(struct generations *g, bool tracing_stays_on)
{
	assert(g);
	g->stopping = true;
	if (g->retry_timer)
		(void)sd_event_source_set_enabled(g->retry_timer, SD_EVENT_OFF);
	switch (g->step) {
	case STEP_IDLE:
		return;
	case STEP_STRICT_DRAIN:
		/* the map is not reset yet: there is no generation to begin */
		if (tracing_stays_on)
			(void)tracing_set_on(g->p.tracing, true);
		finish(g, -ECANCELED);
		return;
	case STEP_STRICT_BOUNDARY:
		if (tracing_stays_on)
			(void)tracing_set_on(g->p.tracing, true);
		break;
	default:
		break;
	}
	/*
	 * The map was reset: its generation begins now, with the markers the
	 * final flush read (or, without them, a window open to the end), so
	 * that the last segment says so.
	 */
	begin_generation(g);
}

void generations_segment_begin(struct generations *g, struct archive_segment *seg)
{
	assert(g);
	assert(seg);
	seg->first_gen = stackmap_generation(g->sm);
}

int generations_segment_end(struct generations *g, struct archive_segment *seg)
{
	struct buf stacks = { 0 }, gens = { 0 }, addrs = { 0 };
	uint64_t min_ts = UINT64_MAX, max_ts = 0;
	int r;

	assert(g);
	assert(seg);

	/* every id read into this segment was inserted before this snapshot */
	if (g->step == STEP_IDLE) {
		r = stackmap_snapshot(g->sm, 0);
		if (r > 0 && (r & (STACKMAP_SNAP_EXTERNAL | STACKMAP_SNAP_DISABLED)))
			start_external(g);
	}
	/* a reset whose generation has not begun: what its map lacks must be read after these events */
	r = stackmap_refresh_pending(g->sm);
	if (r < 0)
		log_errno(LOG_WARNING, r, "cannot read the stack map after a reset; ids of the "
			  "segment near it stay unresolved, continuing");
	seg->last_gen = stackmap_generation(g->sm);
	for (unsigned i = 0; i < seg->nr_cpus; i++) {
		if (seg->cpus[i].first_ts)
			min_ts = MIN(min_ts, seg->cpus[i].first_ts);
		max_ts = MAX(max_ts, seg->cpus[i].last_ts);
	}
	if (min_ts == UINT64_MAX)
		min_ts = 0;
	r = stackmap_segment_tables(g->sm, seg->any_ids ? seg->id_bitmap : NULL,
				    seg->any_ids ? ARCHIVE_ID_BITS : 0, seg->first_gen, seg->last_gen,
				    min_ts, max_ts, &stacks, &gens, &addrs);
	if (r >= 0 && stacks.len)
		r = segment_writer_append(seg->writer, SEGMENT_REC_STACKS, SEGMENT_NO_CPU, stacks.data,
					  stacks.len, g->p.cfg->compression_level, NULL);
	for (size_t off = 0; r >= 0 && off + SEGMENT_GENERATION_SIZE <= gens.len;
	     off += SEGMENT_GENERATION_SIZE)
		r = segment_writer_append(seg->writer, SEGMENT_REC_GENERATION, SEGMENT_NO_CPU,
					  gens.data + off, SEGMENT_GENERATION_SIZE, 0, NULL);
	if (r >= 0 && addrs.len)
		r = buf_append(&seg->addrs, addrs.data, addrs.len);
	buf_done(&stacks);
	buf_done(&gens);
	buf_done(&addrs);
	return r < 0 ? r : 0;
}

void generations_set_config(struct generations *g, const struct config *c)
{
	assert(g);
	assert(c);
	g->p.cfg = c;
	stackmap_set_config(g->sm, c);
}

void generations_get_stats(const struct generations *g, struct stackmap_stats *ret)
{
	assert(g);
	assert(ret);
	stackmap_get_stats(g->sm, ret);
	ret->foreign_markers = g->foreign_markers;
	ret->realtime_refused = g->realtime_refused;
}

int generations_stats(struct generations *g, struct buf *b)
{
	assert(g);
	assert(b);
	return stackmap_stats_format(g->sm, b);
}

int generations_leave(struct generations *g)
{
	_cleanup_free_ char *path = NULL;
	int r;

	/* remembered by generations_new(): a clean stop puts it back */
	r = strprintf(&path, "%s/options/stackmap", tracing_dir(g->p.tracing));
	if (r < 0)
		return r;
	r = write_file(path, "0");
	if (r < 0)
		return r;
	/* says DISABLED once: the segment's own snapshot at its end then finds no change */
	r = stackmap_snapshot(g->sm, 0);
	return r < 0 ? r : 0;
}

void generations_restore(struct generations *g)
{
	if (g)
		(void)stackmap_restore(g->sm);
}

struct generations *generations_free(struct generations *g)
{
	if (!g)
		return NULL;
	pthread_mutex_destroy(&g->foreign_rl.lock);
	sd_event_source_disable_unref(g->retry_timer);
	stackmap_free(g->sm);
	free(g);
	return NULL;
}
