/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The kernel stack map against tracefs (doc/stackmap.md): finding its
 * nodes, options/stackmap, reading a snapshot (stack_map_bin, else the
 * text export; stack_map_stat), merging it into the current generation or
 * detecting a reset made elsewhere, the reset steps, and the counters.
 * Parsing the exports is lib/kernel/stackmap-export.c; storing stacks and
 * generations stackmap-store.c; a segment's tables stackmap-tables.c.
 *
 * Kernel facts relied on (ftrace stackmap series v6, STACKMAP-ABI.md):
 * - an id is a hash-table slot; within one map lifetime an id, once
 *   assigned, keeps its stack, so the map only grows until a reset;
 * - both exports list entries in slot order and show only published
 *   entries; an id is published before the event naming it is committed,
 *   so a snapshot taken after a page was read holds every id in the page;
 * - a reset clears entries and counters (successes and drops go to 0) and
 *   nothing else; it does not stop tracing;
 * - stack_map_stat and stack_map_bin are optional (later versions of the
 *   series may drop them); stack_map_bin has one opener at a time (EBUSY)
 *   and is best effort under concurrent inserts.
 */
#include <assert.h>
#include <fcntl.h>
#include <inttypes.h>
#include <sys/random.h>
#include <sys/stat.h>

#include "config.h"
#include "stackmap-internal.h"
#include "util.h"

#define BIN_BUSY_RETRIES 3
#define RESET_BUSY_RETRIES 20
#define RESET_BUSY_WAIT_USEC (10 * USEC_PER_MSEC)

static const char *const reason_names[STACKMAP_RESET_REASON_MAX] = {
	[STACKMAP_RESET_NONE] = "none",
	[STACKMAP_RESET_FILL] = "fill",
	[STACKMAP_RESET_DROPS] = "drops",
	[STACKMAP_RESET_INTERVAL] = "interval",
};

static uint64_t sat_add(uint64_t a, uint64_t b)
{
	return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

static void sleep_usec(uint64_t usec)
{
	struct timespec ts = {
		.tv_sec = (time_t)(usec / USEC_PER_SEC),
		.tv_nsec = (long)(usec % USEC_PER_SEC * NSEC_PER_USEC),
	};

	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

static int safe_close_fd(int fd)
{
	if (fd >= 0)
		(void)close(fd);
	return -1;
}

/*
 * Open stack_map_bin: the kernel takes its snapshot then. Only one opener
 * at a time: retry EBUSY briefly.
 */
static int open_bin(struct stackmap *sm)
{
	for (int i = 0;; i++) {
		int fd = open(sm->path_bin, O_RDONLY | O_CLOEXEC);

		if (fd >= 0)
			return fd;
		if (errno != EBUSY || i == BIN_BUSY_RETRIES)
			return -errno;
		/* The other opener holds a snapshot for as long as it reads: give it a moment. */
		sleep_usec(USEC_PER_MSEC << i);
	}
}

/* Read the snapshot of an open stack_map_bin into sm->bin. */
static int read_bin_fd(struct stackmap *sm, int fd)
{
	buf_reset(&sm->bin);
	for (;;) {
		ssize_t n;
		int r;

		r = buf_reserve(&sm->bin, 65536);
		if (r < 0)
			return r;
		n = read(fd, sm->bin.data + sm->bin.len, sm->bin.cap - sm->bin.len);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (n == 0)
			return 0;
		sm->bin.len += (size_t)n;
		if (sm->bin.len > STACKMAP_BIN_MAX_SIZE)
			return -EFBIG;
	}
}

/* Read stack_map_bin into sm->bin. */
static int read_bin(struct stackmap *sm)
{
	_cleanup_close_ int fd = open_bin(sm);

	if (fd < 0)
		return fd;
	return read_bin_fd(sm, fd);
}

static uint32_t id_limit(const struct stackmap *sm)
{
	if (sm->stat.valid && sm->stat.table_size && sm->stat.table_size <= STACKMAP_MAX_IDS)
		return (uint32_t)sm->stat.table_size;
	return STACKMAP_MAX_IDS;
}

static int read_text(struct stackmap *sm)
{
	_cleanup_fclose_ FILE *f = NULL;

	f = fopen(sm->path_map, "re");
	if (!f)
		return -errno;
	return stackmap_export_parse_text(&sm->snap, f, id_limit(sm));
}

static void read_stat(struct stackmap *sm)
{
	_cleanup_free_ char *text = NULL;
	struct stackmap_stat s;

	if (!sm->have_stat)
		return;
	if (read_file(sm->path_stat, &text, NULL) < 0 || stackmap_stat_parse(text, &s) < 0) {
		sm->stat.valid = false;
		return;
	}
	sm->stat = s;
	sm->counters.entries = s.entries;
	sm->counters.capacity = s.capacity;
	sm->counters.table_size = s.table_size;
	sm->counters.successes = s.successes;
	sm->counters.drops = s.drops;
	sm->counters.success_rate = s.rate;
}

/* options/stackmap: 1, 0, or -errno. */
static int read_option(const struct stackmap *sm)
{
	_cleanup_free_ char *text = NULL;
	int r;

	r = read_file(sm->path_opt, &text, NULL);
	if (r < 0)
		return r;
	if (text[0] == '0' || text[0] == '1')
		return text[0] - '0';
	return -EBADMSG;
}

/*
 * Read the map into sm->snap, then the counters. The binary export is
 * preferred (raw addresses, cheaper); when it is busy after a few tries, or
 * missing, the text export is read. A binary export this parser does not
 * understand (a later version of the interface) is given up for good.
 */
static int take_snapshot_ex(struct stackmap *sm, bool counters)
{
	int r = -ENOENT;

	if (sm->have_bin) {
		r = read_bin(sm);
		if (r >= 0) {
			r = stackmap_export_parse_bin(&sm->snap, sm->bin.data, sm->bin.len, id_limit(sm));
			if (r == -EBADMSG || r == -EPROTONOSUPPORT) {
				sm->have_bin = false;
				sm->counters.have_bin = false;
			}
		} else if (r == -ENOENT) {
			sm->have_bin = false;
			sm->counters.have_bin = false;
		}
		if (r == -ENOMEM)
			goto fail;
	}
	if (r < 0) {
		r = read_text(sm);
		if (r < 0)
			goto fail;
		sm->counters.text_snapshots++;
	}
	if (counters)
		read_stat(sm);
	sm->last_snap_ids = sm->snap.n;
	if (!sm->stat.valid)
		sm->counters.entries = sm->snap.n;
	sm->counters.snapshots++;
	return 0;
fail:
	sm->counters.snapshot_errors++;
	return r;
}

static int take_snapshot(struct stackmap *sm)
{
	return take_snapshot_ex(sm, true);
}

/* Is the snapshot in sm->snap consistent with the current generation? */
static bool snapshot_consistent(struct stackmap *sm)
{
	struct sm_gen *cur = sm_gen_cur(sm);

	if (sm->stat.valid) {
		/* Counters only grow (saturating) within a map lifetime; a reset zeroes them. */
		if (cur->have_successes && sm->stat.successes < cur->successes)
			return false;
		if (sm->stat.entries < cur->slots.n)
			return false;
	}
	return sm_slots_consistent(&cur->slots, &sm->snap);
}

static void note_counters(struct stackmap *sm, struct sm_gen *g)
{
	if (sm->stat.valid) {
		g->have_successes = true;
		g->successes = sm->stat.successes;
	}
}

/*
 * options/stackmap: reported once when it goes 0; going back to 1 counts as
 * a reset, because a kernel may clear the map when it is switched on.
 */
static int check_option(struct stackmap *sm, int *flags)
{
	int v = read_option(sm);

	if (v >= 0)
		sm->counters.enabled = v == 1;
	if (v == 0 && !sm->opt_off_seen) {
		sm->opt_off_seen = true;
		*flags |= STACKMAP_SNAP_DISABLED;
	} else if (v == 1 && sm->opt_off_seen) {
		sm->opt_off_seen = false;
		return 1;
	}
	return 0;
}

/* Keep the snapshot aside as the next generation's first content. */
static int keep_pending(struct stackmap *sm)
{
	int r;

	sm_slots_clear(sm, &sm->pending);
	sm->pending_stale = false;
	r = sm_slots_merge(sm, &sm->pending, &sm->snap, &sm_gen_cur(sm)->slots);
	if (r < 0)
		return r;
	sm->pending_external = true;
	return 0;
}

bool sm_reset_unbegun(const struct stackmap *sm)
{
	return sm->nr_gens && (sm->pending_external || sm->state == SM_RESET);
}

int stackmap_refresh_pending(struct stackmap *sm)
{
	int r;

	assert(sm);

	if (!sm_reset_unbegun(sm) || sm->pending_stale)
		return 0;
	r = take_snapshot_ex(sm, false);
	if (r >= 0 && !sm_slots_consistent(&sm->pending, &sm->snap))
		r = -ESTALE;	/* reset once more since it was kept */
	if (r >= 0)
		r = sm_slots_merge(sm, &sm->pending, &sm->snap, &sm_gen_cur(sm)->slots);
	if (r < 0)
		sm->pending_stale = true;
	return r;
}

/*
 * Snapshot and compare. An inconsistent binary snapshot is taken again
 * once before it counts: the binary export is best effort under
 * concurrent inserts.
 */
static int snapshot_and_merge(struct stackmap *sm, uint64_t seq, bool counters)
{
	struct sm_gen *cur = sm_gen_cur(sm);
	int flags = 0, r;
	bool ok;

	r = take_snapshot_ex(sm, counters);
	if (r < 0)
		return r;
	ok = snapshot_consistent(sm);
	if (!ok && !sm->snap.text) {
		r = take_snapshot_ex(sm, counters);
		if (r < 0)
			return r;
		ok = snapshot_consistent(sm);
	}
	if (counters && check_option(sm, &flags) > 0)
		ok = false;
	if (!ok) {
		r = keep_pending(sm);
		if (r < 0)
			return r;
		return flags | STACKMAP_SNAP_EXTERNAL;
	}
	r = sm_slots_merge(sm, &cur->slots, &sm->snap,
			sm->nr_gens > 1 ? &sm->gens[sm->nr_gens - 2].slots : NULL);
	if (r < 0)
		return r;
	note_counters(sm, cur);
	if (seq)
		cur->last_good_seq = seq;
	return flags;
}

static uint64_t guard_from_config(const struct config *c)
{
	uint64_t mult = NSEC_PER_USEC;

	if (!c)
		return 0;
	/* Clocks in ns except the TSC (cycles: assume at most 10 GHz). */
	if (c->clock && streq(c->clock, "x86-tsc"))
		mult = 10 * NSEC_PER_USEC;
	if (c->reset_guard_usec > UINT64_MAX / mult)
		return UINT64_MAX;
	return c->reset_guard_usec * mult;
}

void stackmap_set_config(struct stackmap *sm, const struct config *c)
{
	assert(sm);
	if (!c)
		return;
	sm->reset_fill = c->reset_fill_percent;
	sm->reset_drops = c->reset_drops;
	sm->reset_interval_usec = c->reset_interval_usec;
	sm->guard = guard_from_config(c);
	sm->keep_tracing = c->keep_tracing;
}

int stackmap_new(const char *tracing_dir, const struct config *c, struct stackmap **ret)
{
	struct stackmap *sm;
	int r;

	assert(tracing_dir);
	assert(ret);

	sm = calloc(1, sizeof(*sm));
	if (!sm)
		return -ENOMEM;
	sm->opt_prev = -1;
	sm->base = 1;
	sm->last_look_fd = -1;
	if (strprintf(&sm->path_map, "%s/stack_map", tracing_dir) < 0 ||
	    strprintf(&sm->path_bin, "%s/stack_map_bin", tracing_dir) < 0 ||
	    strprintf(&sm->path_stat, "%s/stack_map_stat", tracing_dir) < 0 ||
	    strprintf(&sm->path_opt, "%s/options/stackmap", tracing_dir) < 0) {
		r = -ENOMEM;
		goto fail;
	}
	if (access(sm->path_map, F_OK) < 0) {
		r = errno == ENOENT ? -EOPNOTSUPP : -errno;
		goto fail;
	}
	sm->have_bin = access(sm->path_bin, F_OK) == 0;
	sm->have_stat = access(sm->path_stat, F_OK) == 0;
	sm->counters.have_bin = sm->have_bin;
	sm->counters.have_stat = sm->have_stat;
	stackmap_set_config(sm, c);
	*ret = sm;
	return 0;
fail:
	stackmap_free(sm);
	return r;
}

struct stackmap *stackmap_free(struct stackmap *sm)
{
	if (!sm)
		return NULL;
	for (size_t i = 0; i < sm->nr_gens; i++)
		sm_slots_clear(sm, &sm->gens[i].slots);
	sm_slots_clear(sm, &sm->pending);
	sm->last_look_fd = safe_close_fd(sm->last_look_fd);
	free(sm->gens);
	stackmap_export_done(&sm->snap);
	buf_done(&sm->bin);
	free(sm->path_map);
	free(sm->path_bin);
	free(sm->path_stat);
	free(sm->path_opt);
	free(sm);
	return NULL;
}

int stackmap_enable(struct stackmap *sm)
{
	int v, r;

	assert(sm);

	v = read_option(sm);
	if (v == -ENOENT)
		return -EOPNOTSUPP;
	if (v < 0)
		return v;
	if (sm->opt_prev < 0)
		sm->opt_prev = v;
	if (v == 1)
		return 0;
	r = write_file(sm->path_opt, "1");
	if (r == -EINVAL)
		return -EOPNOTSUPP;	/* the kernel's map failed to initialize */
	if (r < 0)
		return r;
	sm->opt_changed = true;
	return 0;
}

int stackmap_restore(struct stackmap *sm)
{
	int r;

	assert(sm);

	if (!sm->opt_changed || sm->keep_tracing || sm->opt_prev < 0)
		return 0;
	r = write_file(sm->path_opt, sm->opt_prev ? "1" : "0");
	if (r < 0)
		return r;
	sm->opt_changed = false;
	return 0;
}

static void gen_export(const struct sm_gen *g, struct segment_generation *ret)
{
	if (ret)
		*ret = g->g;
}

int stackmap_start(struct stackmap *sm, struct segment_generation *ret_gen)
{
	struct sm_gen *g;
	int flags = 0, r;

	assert(sm);

	if (sm->state != SM_IDLE)
		return -EPERM;
	r = take_snapshot(sm);
	if (r < 0)
		return r;
	r = sm_gen_append(sm, &g);
	if (r < 0)
		return r;
	g->g = (struct segment_generation){
		.generation = 1,
		.prev_generation = 0,
		.kind = SEGMENT_GEN_ADOPTED,
		.begin_cpu = SEGMENT_NO_CPU,
		.end_cpu = SEGMENT_NO_CPU,
	};
	g->start_usec = now_usec(CLOCK_MONOTONIC);
	r = sm_slots_merge(sm, &g->slots, &sm->snap, NULL);
	if (r < 0) {
		sm->nr_gens--;
		return r;
	}
	note_counters(sm, g);
	g->drops_base = sm->stat.valid ? sm->stat.drops : 0;
	(void)check_option(sm, &flags);
	sm->counters.generation = 1;
	sm->state = SM_RUNNING;
	gen_export(g, ret_gen);
	return 0;
}

int stackmap_marker_key_new(char key[static STACKMAP_MARKER_KEY_LEN + 1])
{
	uint8_t raw[STACKMAP_MARKER_KEY_LEN / 2];
	size_t got = 0;

	assert(key);

	while (got < sizeof(raw)) {
		ssize_t n = getrandom(raw + got, sizeof(raw) - got, 0);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		got += (size_t)n;
	}
	for (size_t i = 0; i < sizeof(raw); i++)
		(void)snprintf(key + 2 * i, 3, "%02x", raw[i]);
	return 0;
}

int stackmap_marker_unkey(const char *text, size_t len, const char *key, size_t *ret_len)
{
	size_t klen = strlen(key);
	unsigned diff = 0;

	assert(text || len == 0);
	assert(key);

	while (len > 0 && (text[len - 1] == '\n' || text[len - 1] == '\0'))
		len--;
	if (!klen || len < klen + 1 || text[len - klen - 1] != ' ')
		return 0;
	/* in constant time: a forger learns nothing from how fast a guess is refused */
	for (size_t i = 0; i < klen; i++)
		diff |= (unsigned char)(text[len - klen + i] ^ key[i]);
	if (diff)
		return 0;
	*ret_len = len - klen - 1;
	return 1;
}

int stackmap_marker_seen(struct stackmap *sm, const char *text, size_t len, uint64_t ts)
{
	const size_t plen = strlen(STACKMAP_SNAP_MARKER_PREFIX);
	uint64_t seq = 0;
	size_t i;

	assert(sm);
	assert(text || len == 0);

	if (len < plen + 1 || memcmp(text, STACKMAP_SNAP_MARKER_PREFIX, plen) != 0)
		return 0;
	for (i = plen; i < len && text[i] >= '0' && text[i] <= '9'; i++) {
		if (seq > (UINT64_MAX - 9) / 10)
			return 0;
		seq = seq * 10 + (uint64_t)(text[i] - '0');
	}
	if (i == plen || !seq)
		return 0;
	while (i < len && (text[i] == '\n' || text[i] == '\0'))
		i++;
	if (i != len)
		return 0;
	sm->markers[sm->marker_next] = (struct marker){ .seq = seq, .ts = ts };
	sm->marker_next = (sm->marker_next + 1) % NR_MARKERS;
	return 1;
}

int stackmap_snapshot(struct stackmap *sm, uint64_t seq)
{
	int r;

	assert(sm);

	if (sm->state == SM_IDLE)
		return -EPERM;
	if (sm->state != SM_RUNNING)
		return -EBUSY;
	r = snapshot_and_merge(sm, seq, true);
	if (r > 0 && (r & STACKMAP_SNAP_EXTERNAL))
		sm->state = SM_EXTERNAL;
	return r;
}

enum stackmap_reset_reason stackmap_reset_due(struct stackmap *sm, uint64_t now_usec)
{
	struct sm_gen *cur = sm_gen_cur(sm);

	assert(sm);

	if (sm->state != SM_RUNNING || !cur)
		return STACKMAP_RESET_NONE;
	if (sm->stat.valid && sm->reset_fill && sm->stat.capacity &&
	    sm->stat.entries * 100 >= (uint64_t)sm->reset_fill * sm->stat.capacity)
		return STACKMAP_RESET_FILL;
	if (sm->stat.valid && sm->reset_drops && sm->stat.drops >= cur->drops_base &&
	    sm->stat.drops - cur->drops_base >= sm->reset_drops)
		return STACKMAP_RESET_DROPS;
	if (sm->reset_interval_usec && now_usec >= cur->start_usec &&
	    now_usec - cur->start_usec >= sm->reset_interval_usec)
		return STACKMAP_RESET_INTERVAL;
	return STACKMAP_RESET_NONE;
}

const char *stackmap_reset_reason_to_string(enum stackmap_reset_reason reason)
{
	if ((unsigned)reason >= STACKMAP_RESET_REASON_MAX)
		return "unknown";
	return reason_names[reason];
}

int stackmap_snapshot_final(struct stackmap *sm)
{
	int r;

	assert(sm);

	if (sm->state == SM_FINAL && sm->pending_external)
		return STACKMAP_SNAP_EXTERNAL;
	if (sm->state != SM_RUNNING && sm->state != SM_FINAL)
		return sm->state == SM_IDLE ? -EPERM : -EBUSY;
	r = snapshot_and_merge(sm, 0, true);
	if (r < 0)
		return r;
	sm->state = SM_FINAL;
	return r;
}

bool stackmap_rereads_before_reset(const struct stackmap *sm)
{
	assert(sm);
	return sm->have_bin;
}

int stackmap_write_reset(struct stackmap *sm)
{
	uint64_t t0, t1;

	assert(sm);

	if (sm->state != SM_FINAL)
		return -EPERM;
	/*
	 * One more look at the map right before it is cleared: ids assigned
	 * since the final snapshot (events between the recorder's marker and
	 * the kernel's claim of the map) are then known in this generation
	 * and resolve inside the reset window. Only the binary export is
	 * read, to keep that gap short (reading the text export takes long
	 * enough to widen the window more than it helps); a failure leaves
	 * the final snapshot in force.
	 */
	if (!sm->pending_external && sm->have_bin && sm->last_look_fd < 0)
		(void)snapshot_and_merge(sm, 0, false);
	if (sm->pending_external) {
		/* Somebody else already reset the map since the last good snapshot. */
		sm->last_look_fd = safe_close_fd(sm->last_look_fd);
		sm->state = SM_RESET;
		return 1;
	}
	t0 = now_usec(CLOCK_MONOTONIC);
	for (int i = 0;; i++) {
		_cleanup_close_ int fd = -1;
		int r = 0;

		fd = open(sm->path_map, O_WRONLY | O_CLOEXEC);
		if (fd < 0)
			r = -errno;
		else
			r = sm->write_reset ? sm->write_reset(fd) : write_all(fd, "0", 1);
		if (r == 0)
			break;
		if (r != -EBUSY || i == RESET_BUSY_RETRIES) {
			/* The map was not reset: the generation goes on. */
			if (r == -EBUSY)
				sm->counters.reset_busy = sat_add(sm->counters.reset_busy, 1);
			/* later snapshots read the map that goes on */
			sm->last_look_fd = safe_close_fd(sm->last_look_fd);
			sm->state = SM_RUNNING;
			return r;
		}
		/* Another reset is running (it takes an RCU grace period): wait for it. */
		sleep_usec(RESET_BUSY_WAIT_USEC);
	}
	t1 = now_usec(CLOCK_MONOTONIC);
	sm->counters.last_reset_usec = t1 - t0;
	sm->state = SM_RESET;
	return 0;
}

int stackmap_open_last_look(struct stackmap *sm)
{
	int fd;

	assert(sm);

	if (sm->state != SM_FINAL || sm->pending_external || !sm->have_bin)
		return 0;
	sm->last_look_fd = safe_close_fd(sm->last_look_fd);
	fd = open_bin(sm);
	if (fd < 0)
		return fd;
	sm->last_look_fd = fd;
	return 1;
}

int stackmap_merge_last_look(struct stackmap *sm)
{
	_cleanup_close_ int fd = -1;
	struct sm_gen *cur;
	int r;

	assert(sm);

	fd = sm->last_look_fd;
	sm->last_look_fd = -1;
	cur = sm_gen_cur(sm);
	if (fd < 0 || sm->state != SM_RESET || !cur)
		return 0;
	r = read_bin_fd(sm, fd);
	if (r >= 0)
		r = stackmap_export_parse_bin(&sm->snap, sm->bin.data, sm->bin.len, id_limit(sm));
	if (r < 0) {
		/* the final snapshot stays in force: ids of the last gap stay unresolved */
		sm->counters.snapshot_errors++;
		return r;
	}
	sm->last_snap_ids = sm->snap.n;
	if (!sm->stat.valid)
		sm->counters.entries = sm->snap.n;
	sm->counters.snapshots++;
	if (!snapshot_consistent(sm)) {
		/*
		 * Reset by someone else after the final snapshot, before ours:
		 * events near it may hold ids of a map never read. The next
		 * generation's window then opens at the last snapshot that
		 * matched, as for any reset found late; its content is the map
		 * our reset left, read from now on.
		 */
		sm_slots_clear(sm, &sm->pending);
		sm->pending_stale = false;
		sm->pending_external = true;
		return STACKMAP_SNAP_EXTERNAL;
	}
	r = sm_slots_merge(sm, &cur->slots, &sm->snap,
			   sm->nr_gens > 1 ? &sm->gens[sm->nr_gens - 2].slots : NULL);
	return r < 0 ? r : 0;
}

int stackmap_begin_generation(struct stackmap *sm, enum segment_gen_kind kind,
			      const struct stackmap_window *w, struct segment_generation *ret_gen)
{
	struct sm_gen *cur, *g;
	uint64_t begin_ts, end_ts, begin_raw, guard;
	bool external;
	int flags = 0, r;

	assert(sm);
	assert(w);

	cur = sm_gen_cur(sm);
	begin_ts = w->begin_ts;
	end_ts = w->end_ts;
	if (kind != SEGMENT_GEN_RESET_LOSSLESS && kind != SEGMENT_GEN_RESET_STRICT &&
	    kind != SEGMENT_GEN_RESET_EXTERNAL)
		return -EINVAL;
	if (!end_ts || begin_ts > end_ts)
		return -EINVAL;
	if (!(sm->state == SM_RESET || sm->state == SM_EXTERNAL ||
	      (sm->state == SM_RUNNING && kind == SEGMENT_GEN_RESET_EXTERNAL)))
		return -EPERM;

	external = sm->pending_external || kind == SEGMENT_GEN_RESET_EXTERNAL;
	begin_raw = begin_ts;
	if (external) {
		uint64_t auto_begin = sm_external_begin_raw(sm, cur);

		if (!begin_raw || auto_begin < begin_raw)
			begin_raw = auto_begin;
		kind = SEGMENT_GEN_RESET_EXTERNAL;
	}
	/*
	 * The earliest the reset can have happened, as far as it is known, may
	 * still lie after the marker written once it was found (CPUs whose
	 * clocks disagree): a reset follows the one before it, so the window
	 * then opens where the current generation's did. Never inverted.
	 */
	if (begin_raw > end_ts)
		begin_raw = cur->g.window_begin <= end_ts ? cur->g.window_begin : 0;

	r = sm_gen_append(sm, &g);
	if (r < 0)
		return r;
	cur = &sm->gens[sm->nr_gens - 2];
	/*
	 * Strict: tracing was off from before the reset until after it, and
	 * the readers were drained in between, so no event near the markers
	 * can carry an id of the other map: the markers bound it exactly.
	 */
	guard = kind == SEGMENT_GEN_RESET_STRICT ? 0 : sm->guard;
	g->g = (struct segment_generation){
		.generation = cur->g.generation + 1,
		.prev_generation = cur->g.generation,
		.kind = kind,
		.window_begin = sm_sat_sub(begin_raw, guard),
		.window_end = sat_add(end_ts, guard),
		.begin_cpu = SEGMENT_NO_CPU,
		.end_cpu = SEGMENT_NO_CPU,
	};
	/*
	 * Our own lossless reset, both markers read back: on its own CPU each
	 * marker orders events exactly, so readers apply the guard to the
	 * other CPUs only. Not when a bound was moved or saturated (the
	 * marker's time is then not the bound less the guard).
	 */
	if (kind == SEGMENT_GEN_RESET_LOSSLESS && begin_raw == begin_ts && guard &&
	    begin_ts >= guard && end_ts < SEGMENT_WINDOW_UNKNOWN - guard &&
	    w->begin_cpu != SEGMENT_NO_CPU && w->end_cpu != SEGMENT_NO_CPU) {
		g->g.begin_cpu = w->begin_cpu;
		g->g.end_cpu = w->end_cpu;
		g->g.guard = guard;
	}
	/* a marker never read back is no time: the next reset cannot be dated from it */
	g->begin_marker_ts = end_ts < SEGMENT_WINDOW_UNKNOWN ? end_ts : 0;
	g->start_usec = now_usec(CLOCK_MONOTONIC);
	g->slots = sm->pending;
	sm->pending = (struct sm_slots){ 0 };
	sm->pending_external = false;
	sm->pending_stale = false;
	sm->opt_off_seen = false;

	/*
	 * The new map's first snapshot. Without it the generation still
	 * exists (the reset happened); the next snapshot fills it in. If it
	 * disagrees with the content kept from an external reset, the map
	 * changed again: leave it to the next snapshot to notice.
	 */
	if (take_snapshot(sm) >= 0 && sm_slots_consistent(&g->slots, &sm->snap)) {
		if (sm_slots_merge(sm, &g->slots, &sm->snap, &cur->slots) >= 0) {
			note_counters(sm, g);
			g->last_good_seq = LAST_GOOD_BEGIN;
		}
		(void)check_option(sm, &flags);
	}
	g->drops_base = sm->stat.valid ? sm->stat.drops : 0;

	if (external)
		sm->counters.resets_external++;
	else
		sm->counters.resets_own++;
	sm->counters.generation = g->g.generation;
	sm->state = SM_RUNNING;
	gen_export(g, ret_gen);
	sm_enforce_kept(sm);
	return 0;
}

uint32_t stackmap_generation(const struct stackmap *sm)
{
	assert(sm);
	return sm->nr_gens ? sm->gens[sm->nr_gens - 1].g.generation : 0;
}

void stackmap_get_stats(const struct stackmap *sm, struct stackmap_stats *ret)
{
	assert(sm);
	assert(ret);
	*ret = sm->counters;
}

int stackmap_stats_format(const struct stackmap *sm, struct buf *b)
{
	const struct stackmap_stats *c;

	assert(sm);
	assert(b);

	c = &sm->counters;
	return buf_printf(b,
			  "stackmap_entries=%" PRIu64 "\n"
			  "stackmap_capacity=%" PRIu64 "\n"
			  "stackmap_successes=%" PRIu64 "\n"
			  "stackmap_drops=%" PRIu64 "\n"
			  "generation=%" PRIu32 "\n"
			  "stackmap_resets=%" PRIu64 "\n"
			  "stackmap_external_resets=%" PRIu64 "\n"
			  "stackmap_last_reset_usec=%" PRIu64 "\n"
			  "stackmap_reset_busy=%" PRIu64 "\n",
			  c->entries, c->capacity, c->successes, c->drops, c->generation,
			  c->resets_own, c->resets_external, c->last_reset_usec, c->reset_busy);
}
