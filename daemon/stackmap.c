/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The kernel stack map: snapshots, generations, resets (doc/stackmap.md).
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
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <sys/stat.h>

#include "config.h"
#include "stackmap.h"
#include "stacktab.h"
#include "util.h"

#define BIN_MAGIC 0x46534D42u
#define BIN_VERSION 1
#define BIN_HDR_SIZE 16
#define BIN_ENTRY_SIZE 16
#define BIN_MAX_SIZE (256u << 20)
#define TRAMPOLINE_MARKER UINT64_C(0x7fffffff)
/* The kernel stores at most 64 frames; accept more from a later kernel, within reason. */
#define MAX_DEPTH 1024
#define TEXT_MAX_LINE 4096
#define NR_MARKERS 64
#define MAX_GENERATION_RECORDS 65536
#define BIN_BUSY_RETRIES 3
#define RESET_BUSY_RETRIES 20
#define RESET_BUSY_WAIT_USEC (10 * USEC_PER_MSEC)
#define LAST_GOOD_BEGIN UINT64_MAX

/* One stack, immutable once created, shared by the generations that hold it. */
struct sm_stack {
	uint32_t users;
	uint16_t nr;
	uint16_t flags;			/* SEGMENT_STACK_F_TEXT */
	uint64_t *ips;			/* nr addresses (in this block), !TEXT */
	char **text;			/* nr strings (in this block), TEXT */
};

struct sm_slot {
	uint32_t id;
	uint32_t refs;			/* kernel ref_count at the last snapshot */
	struct sm_stack *stack;
};

/* Slots sorted by id. */
struct sm_slots {
	struct sm_slot *v;
	size_t n;
};

struct sm_gen {
	struct segment_generation g;
	uint64_t begin_marker_ts;	/* raw ts of the marker after the reset (0: none) */
	uint64_t start_usec;		/* CLOCK_MONOTONIC when it began */
	struct sm_slots slots;
	bool dropped;			/* content released: ids stay unresolved */
	uint64_t last_good_seq;		/* snap marker of the last consistent snapshot, 0 none */
	bool have_successes;
	uint64_t successes;		/* last sample in this generation */
	uint64_t drops_base;		/* drops when it began */
};

/* A parsed snapshot: entries sorted by id, frames in data. Reused. */
struct raw_entry {
	uint32_t id;
	uint32_t refs;
	uint32_t nr;
	size_t off;			/* ips (native u64) or NUL-separated strings in data */
	size_t len;
};

struct snap {
	struct raw_entry *v;
	size_t n, cap;
	struct buf data;
	bool text;
};

struct stat_sample {
	bool valid;
	uint64_t entries, capacity, table_size, successes, drops;
	unsigned rate;
};

enum sm_state {
	SM_IDLE,		/* before stackmap_start() */
	SM_RUNNING,
	SM_FINAL,		/* final snapshot taken, reset not yet written */
	SM_RESET,		/* reset written (or found done): begin the next generation */
	SM_EXTERNAL,		/* external reset found: begin the next generation */
};

struct marker {
	uint64_t seq;
	uint64_t ts;
};

struct stackmap {
	char *path_map, *path_bin, *path_stat, *path_opt;
	bool have_bin, have_stat;

	/* policy, copied from the config */
	unsigned reset_fill;
	uint64_t reset_drops;
	uint64_t reset_interval_usec;
	uint64_t guard;			/* trace-clock units */
	bool keep_tracing;

	int opt_prev;			/* options/stackmap as found, -1 unknown */
	bool opt_changed;
	bool opt_off_seen;

	enum sm_state state;
	struct sm_gen *gens;		/* gens[i] is generation base + i */
	size_t nr_gens, cap_gens;
	uint32_t base;

	struct sm_slots pending;	/* content of the next generation after an external reset */
	bool pending_external;

	struct snap snap;
	struct buf bin;
	struct stat_sample stat;
	size_t last_snap_ids;

	struct marker markers[NR_MARKERS];
	size_t marker_next;

	struct stackmap_stats counters;
};

static const char *const reason_names[STACKMAP_RESET_REASON_MAX] = {
	[STACKMAP_RESET_NONE] = "none",
	[STACKMAP_RESET_FILL] = "fill",
	[STACKMAP_RESET_DROPS] = "drops",
	[STACKMAP_RESET_INTERVAL] = "interval",
};

static uint64_t sat_sub(uint64_t a, uint64_t b)
{
	return a > b ? a - b : 0;
}

static uint64_t sat_add(uint64_t a, uint64_t b)
{
	return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

/* ---- stacks and slots ---- */

static void stack_put(struct stackmap *sm, struct sm_stack *s)
{
	if (s && --s->users == 0) {
		free(s);
		sm->counters.stored_stacks--;
	}
}

static void slots_clear(struct stackmap *sm, struct sm_slots *s)
{
	for (size_t i = 0; i < s->n; i++)
		stack_put(sm, s->v[i].stack);
	free(s->v);
	s->v = NULL;
	s->n = 0;
}

static const struct sm_slot *slots_find(const struct sm_slots *s, uint32_t id)
{
	size_t lo = 0, hi = s->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (s->v[mid].id < id)
			lo = mid + 1;
		else if (s->v[mid].id > id)
			hi = mid;
		else
			return &s->v[mid];
	}
	return NULL;
}

/*
 * Same stack? Text and address forms of one stack cannot be compared here
 * (symbolizing needs the segment's kallsyms), so across forms only the
 * depth is compared: the map is read as text only when the binary export
 * is busy or missing.
 */
static bool stack_equal_raw(const struct sm_stack *s, const struct snap *sn,
			    const struct raw_entry *e)
{
	const uint8_t *d = sn->data.data + e->off;

	if (s->nr != e->nr)
		return false;
	if (!!(s->flags & SEGMENT_STACK_F_TEXT) != sn->text)
		return true;
	if (!sn->text)
		return memcmp(s->ips, d, (size_t)e->nr * sizeof(uint64_t)) == 0;
	for (uint32_t i = 0; i < e->nr; i++) {
		size_t l = strlen((const char *)d);

		if (strcmp(s->text[i], (const char *)d) != 0)
			return false;
		d += l + 1;
	}
	return true;
}

/* Only for sharing between generations: same form, same frames. */
static bool stack_same_form_equal(const struct sm_stack *s, const struct snap *sn,
				  const struct raw_entry *e)
{
	return !!(s->flags & SEGMENT_STACK_F_TEXT) == sn->text && stack_equal_raw(s, sn, e);
}

static struct sm_stack *stack_new(struct stackmap *sm, const struct snap *sn,
				  const struct raw_entry *e)
{
	const uint8_t *d = sn->data.data + e->off;
	struct sm_stack *s;
	size_t size = sizeof(*s);

	if (sn->text)
		size += (size_t)e->nr * sizeof(char *) + e->len;
	else
		size += (size_t)e->nr * sizeof(uint64_t);
	s = malloc(size);
	if (!s)
		return NULL;
	s->users = 1;
	s->nr = (uint16_t)e->nr;
	s->flags = sn->text ? SEGMENT_STACK_F_TEXT : 0;
	s->ips = NULL;
	s->text = NULL;
	if (sn->text) {
		char *p;

		s->text = (char **)(s + 1);
		p = (char *)(s->text + e->nr);
		memcpy(p, d, e->len);
		for (uint32_t i = 0; i < e->nr; i++) {
			s->text[i] = p;
			p += strlen(p) + 1;
		}
	} else {
		s->ips = (uint64_t *)(s + 1);
		memcpy(s->ips, d, (size_t)e->nr * sizeof(uint64_t));
	}
	sm->counters.stored_stacks++;
	return s;
}

/*
 * Merge a snapshot into slots (assumed consistent with it): known ids get
 * the new reference count, new ids a stack, shared with share (another
 * generation) when it holds the same stack under the same id.
 */
static int slots_merge(struct stackmap *sm, struct sm_slots *s, const struct snap *sn,
		       const struct sm_slots *share)
{
	struct sm_slot *v;
	size_t i = 0, j = 0, k = 0, added = 0;

	while (j < sn->n) {
		if (i < s->n && s->v[i].id < sn->v[j].id) {
			i++;
		} else if (i < s->n && s->v[i].id == sn->v[j].id) {
			s->v[i].refs = sn->v[j].refs;
			i++;
			j++;
		} else {
			added++;
			j++;
		}
	}
	if (!added)
		return 0;

	v = malloc((s->n + added) * sizeof(*v));
	if (!v)
		return -ENOMEM;
	i = j = 0;
	while (i < s->n || j < sn->n) {
		const struct raw_entry *e;
		const struct sm_slot *o;
		struct sm_stack *st;

		if (j >= sn->n || (i < s->n && s->v[i].id < sn->v[j].id)) {
			v[k++] = s->v[i++];
			continue;
		}
		if (i < s->n && s->v[i].id == sn->v[j].id) {
			v[k++] = s->v[i++];
			j++;
			continue;
		}
		e = &sn->v[j++];
		o = share ? slots_find(share, e->id) : NULL;
		if (o && stack_same_form_equal(o->stack, sn, e)) {
			st = o->stack;
			st->users++;
		} else {
			st = stack_new(sm, sn, e);
			if (!st) {
				/* Keep what is merged so far consistent: drop the new stacks. */
				for (size_t x = 0; x < k; x++)
					if (!slots_find(s, v[x].id))
						stack_put(sm, v[x].stack);
				free(v);
				return -ENOMEM;
			}
		}
		v[k++] = (struct sm_slot){ .id = e->id, .refs = e->refs, .stack = st };
	}
	free(s->v);
	s->v = v;
	s->n = k;
	return 0;
}

/* Does the snapshot agree with what the generation holds? */
static bool slots_consistent(const struct sm_slots *s, const struct snap *sn)
{
	size_t i = 0, j = 0;

	while (i < s->n) {
		while (j < sn->n && sn->v[j].id < s->v[i].id)
			j++;
		if (j >= sn->n || sn->v[j].id != s->v[i].id)
			return false;		/* vanished */
		if (!stack_equal_raw(s->v[i].stack, sn, &sn->v[j]))
			return false;		/* changed */
		i++;
		j++;
	}
	return true;
}

/* ---- reading the kernel ---- */

static uint32_t get32(const uint8_t *p, bool swap)
{
	uint32_t v;

	memcpy(&v, p, sizeof(v));
	return swap ? __builtin_bswap32(v) : v;
}

static uint64_t get64(const uint8_t *p, bool swap)
{
	uint64_t v;

	memcpy(&v, p, sizeof(v));
	return swap ? __builtin_bswap64(v) : v;
}

static int snap_add(struct snap *sn, uint32_t id, uint32_t refs, uint32_t nr, size_t off)
{
	if (sn->n == sn->cap) {
		size_t cap = sn->cap ? sn->cap * 2 : 1024;
		struct raw_entry *v = realloc(sn->v, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		sn->v = v;
		sn->cap = cap;
	}
	sn->v[sn->n++] = (struct raw_entry){
		.id = id, .refs = refs, .nr = nr, .off = off, .len = sn->data.len - off
	};
	return 0;
}

static void snap_reset(struct snap *sn, bool text)
{
	sn->n = 0;
	buf_reset(&sn->data);
	sn->text = text;
}

static int raw_cmp(const void *a, const void *b)
{
	const struct raw_entry *x = a, *y = b;

	return x->id < y->id ? -1 : x->id > y->id;
}

/* Sort by id if the kernel did not list slots in order; duplicate ids are malformed. */
static int snap_sort(struct snap *sn, bool sorted)
{
	if (!sorted)
		qsort(sn->v, sn->n, sizeof(*sn->v), raw_cmp);
	for (size_t i = 1; i < sn->n; i++)
		if (sn->v[i].id == sn->v[i - 1].id)
			return -EBADMSG;
	return 0;
}

/*
 * Parse a stack_map_bin image: a 16-byte header (magic in the writer's byte
 * order, version 1, count), then per stack 16 bytes (id, nr, ref_count,
 * reserved) and nr u64 addresses. Every length is checked against the data.
 */
static int snap_parse_bin(struct snap *sn, const uint8_t *p, size_t len, uint32_t id_limit)
{
	uint32_t count, prev = 0;
	bool swap, sorted = true;
	size_t off = BIN_HDR_SIZE;
	int r;

	snap_reset(sn, false);
	if (len < BIN_HDR_SIZE)
		return -EBADMSG;
	if (get32(p, false) == BIN_MAGIC)
		swap = false;
	else if (get32(p, true) == BIN_MAGIC)
		swap = true;
	else
		return -EBADMSG;
	if (get32(p + 4, swap) != BIN_VERSION)
		return -EPROTONOSUPPORT;
	count = get32(p + 8, swap);
	if (count > STACKMAP_MAX_IDS)
		return -EBADMSG;

	for (uint32_t n = 0; n < count; n++) {
		uint32_t id, nr, refs;
		size_t at;

		if (len - off < BIN_ENTRY_SIZE)
			return -EBADMSG;
		id = get32(p + off, swap);
		nr = get32(p + off + 4, swap);
		refs = get32(p + off + 8, swap);
		off += BIN_ENTRY_SIZE;
		if (id >= id_limit || nr == 0 || nr > MAX_DEPTH ||
		    (len - off) / sizeof(uint64_t) < nr)
			return -EBADMSG;
		if (n > 0 && id <= prev)
			sorted = false;
		prev = id;
		at = sn->data.len;
		r = buf_reserve(&sn->data, (size_t)nr * sizeof(uint64_t));
		if (r < 0)
			return r;
		for (uint32_t i = 0; i < nr; i++) {
			uint64_t ip = get64(p + off, swap);

			memcpy(sn->data.data + sn->data.len, &ip, sizeof(ip));
			sn->data.len += sizeof(ip);
			off += sizeof(ip);
		}
		r = snap_add(sn, id, refs, nr, at);
		if (r < 0)
			return r;
	}
	if (off != len)
		return -EBADMSG;
	return snap_sort(sn, sorted);
}

static int parse_u32(const char *s, const char **ret_end, uint32_t *ret)
{
	char *end;
	unsigned long v;

	if (*s < '0' || *s > '9')
		return -EBADMSG;
	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || v > UINT32_MAX)
		return -EBADMSG;
	*ret_end = end;
	*ret = (uint32_t)v;
	return 0;
}

/* "stack_id N [ref R, depth D]" */
static int parse_text_header(const char *line, uint32_t *id, uint32_t *refs, uint32_t *depth)
{
	const char *p = line;

	if (!startswith(p, "stack_id "))
		return -EBADMSG;
	if (parse_u32(p + 9, &p, id) < 0 || !startswith(p, " [ref "))
		return -EBADMSG;
	if (parse_u32(p + 6, &p, refs) < 0 || !startswith(p, ", depth "))
		return -EBADMSG;
	if (parse_u32(p + 8, &p, depth) < 0 || !streq(p, "]"))
		return -EBADMSG;
	return 0;
}

/* "  [i] frame": returns the frame text. */
static const char *parse_text_frame(const char *line, uint32_t want)
{
	const char *p;
	uint32_t i;

	if (!startswith(line, "  ["))
		return NULL;
	if (parse_u32(line + 3, &p, &i) < 0 || i != want || !startswith(p, "] ") || !p[2])
		return NULL;
	return p + 2;
}

/*
 * Parse the text export, streaming (at the largest map size it is hundreds
 * of MB): "stack_id N [ref R, depth D]", D lines "  [i] frame", a blank
 * line. Frames are kept as the kernel printed them (%pS or
 * "[FTRACE TRAMPOLINE]").
 */
static int snap_parse_text(struct snap *sn, FILE *f, uint32_t id_limit)
{
	_cleanup_free_ char *line = NULL;
	size_t cap = 0;
	uint32_t id = 0, refs = 0, depth = 0, got = 0, prev = 0;
	size_t at = 0;
	bool in_entry = false, sorted = true;
	ssize_t n;
	int r;

	snap_reset(sn, true);
	while ((n = getline(&line, &cap, f)) >= 0) {
		if (n > 0 && line[n - 1] == '\n')
			line[--n] = '\0';
		if ((size_t)n > TEXT_MAX_LINE)
			return -EBADMSG;
		if (!in_entry) {
			if (n == 0)
				continue;
			r = parse_text_header(line, &id, &refs, &depth);
			if (r < 0 || id >= id_limit || depth == 0 || depth > MAX_DEPTH)
				return -EBADMSG;
			if (sn->n >= STACKMAP_MAX_IDS)
				return -EBADMSG;
			if (sn->n > 0 && id <= prev)
				sorted = false;
			prev = id;
			in_entry = true;
			got = 0;
			at = sn->data.len;
			continue;
		}
		if (got == depth) {
			if (n != 0)
				return -EBADMSG;
			r = snap_add(sn, id, refs, depth, at);
			if (r < 0)
				return r;
			in_entry = false;
			continue;
		}
		{
			const char *frame = parse_text_frame(line, got);

			if (!frame)
				return -EBADMSG;
			r = buf_append(&sn->data, frame, strlen(frame) + 1);
			if (r < 0)
				return r;
			got++;
		}
	}
	if (ferror(f))
		return -EIO;
	if (in_entry) {
		/* The last entry may lack its blank line; a short one is truncated. */
		if (got != depth)
			return -EBADMSG;
		r = snap_add(sn, id, refs, depth, at);
		if (r < 0)
			return r;
	}
	return snap_sort(sn, sorted);
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

/* Read stack_map_bin into sm->bin. Only one opener at a time: retry EBUSY briefly. */
static int read_bin(struct stackmap *sm)
{
	_cleanup_close_ int fd = -1;

	for (int i = 0;; i++) {
		fd = open(sm->path_bin, O_RDONLY | O_CLOEXEC);
		if (fd >= 0)
			break;
		if (errno != EBUSY || i == BIN_BUSY_RETRIES)
			return -errno;
		/* The other opener holds a snapshot for as long as it reads: give it a moment. */
		sleep_usec(USEC_PER_MSEC << i);
	}

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
		if (sm->bin.len > BIN_MAX_SIZE)
			return -EFBIG;
	}
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
	return snap_parse_text(&sm->snap, f, id_limit(sm));
}

static int parse_stat(const char *text, struct stat_sample *ret)
{
	struct stat_sample s = { .valid = true };
	const char *line = text;
	bool have_entries = false;

	while (*line) {
		const char *eol = strchrnul(line, '\n');
		const char *colon = memchr(line, ':', (size_t)(eol - line));

		if (colon) {
			const char *v = colon + 1;
			size_t klen = (size_t)(colon - line);
			unsigned long long a = 0, b = 0;

			while (*v == ' ' || *v == '\t')
				v++;
			if (klen == 7 && !strncmp(line, "entries", 7)) {
				if (sscanf(v, "%llu / %llu", &a, &b) == 2) {
					s.entries = a;
					s.capacity = b;
					have_entries = true;
				}
			} else if (klen == 10 && !strncmp(line, "table_size", 10)) {
				if (sscanf(v, "%llu", &a) == 1)
					s.table_size = a;
			} else if (klen == 9 && !strncmp(line, "successes", 9)) {
				if (sscanf(v, "%llu", &a) == 1)
					s.successes = a;
			} else if (klen == 5 && !strncmp(line, "drops", 5)) {
				if (sscanf(v, "%llu", &a) == 1)
					s.drops = a;
			} else if (klen == 12 && !strncmp(line, "success_rate", 12)) {
				if (sscanf(v, "%llu", &a) == 1 && a <= 100)
					s.rate = (unsigned)a;
			}
		}
		line = *eol ? eol + 1 : eol;
	}
	if (!have_entries)
		return -EBADMSG;
	*ret = s;
	return 0;
}

static void read_stat(struct stackmap *sm)
{
	_cleanup_free_ char *text = NULL;
	struct stat_sample s;

	if (!sm->have_stat)
		return;
	if (read_file(sm->path_stat, &text, NULL) < 0 || parse_stat(text, &s) < 0) {
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
			r = snap_parse_bin(&sm->snap, sm->bin.data, sm->bin.len, id_limit(sm));
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

/* ---- generations ---- */

static const struct sm_gen *gen_cur_const(const struct stackmap *sm)
{
	return sm->nr_gens ? &sm->gens[sm->nr_gens - 1] : NULL;
}

static struct sm_gen *gen_cur(struct stackmap *sm)
{
	return sm->nr_gens ? &sm->gens[sm->nr_gens - 1] : NULL;
}

/* Is the snapshot in sm->snap consistent with the current generation? */
static bool snapshot_consistent(struct stackmap *sm)
{
	struct sm_gen *cur = gen_cur(sm);

	if (sm->stat.valid) {
		/* Counters only grow (saturating) within a map lifetime; a reset zeroes them. */
		if (cur->have_successes && sm->stat.successes < cur->successes)
			return false;
		if (sm->stat.entries < cur->slots.n)
			return false;
	}
	return slots_consistent(&cur->slots, &sm->snap);
}

static int gen_append(struct stackmap *sm, struct sm_gen **ret)
{
	if (sm->nr_gens == MAX_GENERATION_RECORDS) {
		/* Forget the oldest quarter of the generation records. */
		size_t drop = MAX_GENERATION_RECORDS / 4;

		for (size_t i = 0; i < drop; i++)
			slots_clear(sm, &sm->gens[i].slots);
		memmove(sm->gens, sm->gens + drop, (sm->nr_gens - drop) * sizeof(*sm->gens));
		sm->nr_gens -= drop;
		sm->base += (uint32_t)drop;
	}
	if (sm->nr_gens == sm->cap_gens) {
		size_t cap = sm->cap_gens ? sm->cap_gens * 2 : 16;
		struct sm_gen *v = realloc(sm->gens, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		sm->gens = v;
		sm->cap_gens = cap;
	}
	*ret = &sm->gens[sm->nr_gens++];
	**ret = (struct sm_gen){ 0 };
	return 0;
}

static void enforce_kept(struct stackmap *sm)
{
	size_t kept = 0;

	for (size_t i = sm->nr_gens; i-- > 0;) {
		struct sm_gen *g = &sm->gens[i];

		if (g->dropped)
			continue;
		if (++kept > STACKMAP_MAX_KEPT_GENERATIONS) {
			slots_clear(sm, &g->slots);
			g->dropped = true;
		}
	}
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

	slots_clear(sm, &sm->pending);
	r = slots_merge(sm, &sm->pending, &sm->snap, &gen_cur(sm)->slots);
	if (r < 0)
		return r;
	sm->pending_external = true;
	return 0;
}

/*
 * Snapshot and compare. An inconsistent binary snapshot is taken again
 * once before it counts: the binary export is best effort under
 * concurrent inserts.
 */
static int snapshot_and_merge(struct stackmap *sm, uint64_t seq, bool counters)
{
	struct sm_gen *cur = gen_cur(sm);
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
	r = slots_merge(sm, &cur->slots, &sm->snap,
			sm->nr_gens > 1 ? &sm->gens[sm->nr_gens - 2].slots : NULL);
	if (r < 0)
		return r;
	note_counters(sm, cur);
	if (seq)
		cur->last_good_seq = seq;
	return flags;
}

static bool marker_ts(const struct stackmap *sm, uint64_t seq, uint64_t *ret)
{
	bool found = false;
	uint64_t best_seq = 0, ts = 0;

	/* The marker itself, else the latest earlier one: earlier is the safe side. */
	for (size_t i = 0; i < NR_MARKERS; i++) {
		const struct marker *m = &sm->markers[i];

		if (!m->seq || m->seq > seq || (found && m->seq <= best_seq))
			continue;
		found = true;
		best_seq = m->seq;
		ts = m->ts;
	}
	if (found)
		*ret = ts;
	return found;
}

/*
 * Earliest time an unnoticed reset can have happened: the marker written
 * before the last snapshot that still matched the generation (the reset
 * came after that snapshot was read), else the generation's own start.
 */
static uint64_t external_begin_raw(const struct stackmap *sm, const struct sm_gen *cur)
{
	uint64_t ts;

	if (cur->last_good_seq == LAST_GOOD_BEGIN && cur->begin_marker_ts)
		return cur->begin_marker_ts;
	if (cur->last_good_seq && cur->last_good_seq != LAST_GOOD_BEGIN &&
	    marker_ts(sm, cur->last_good_seq, &ts))
		return ts;
	return cur->g.window_begin;
}

/* ---- public API ---- */

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

	sm = calloc(1, sizeof(*sm));
	if (!sm)
		return -ENOMEM;
	sm->opt_prev = -1;
	sm->base = 1;
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
		slots_clear(sm, &sm->gens[i].slots);
	slots_clear(sm, &sm->pending);
	free(sm->gens);
	free(sm->snap.v);
	buf_done(&sm->snap.data);
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

	if (sm->state != SM_IDLE)
		return -EPERM;
	r = take_snapshot(sm);
	if (r < 0)
		return r;
	r = gen_append(sm, &g);
	if (r < 0)
		return r;
	g->g = (struct segment_generation){
		.generation = 1,
		.prev_generation = 0,
		.kind = SEGMENT_GEN_ADOPTED,
	};
	g->start_usec = now_usec(CLOCK_MONOTONIC);
	r = slots_merge(sm, &g->slots, &sm->snap, NULL);
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

int stackmap_marker_seen(struct stackmap *sm, const char *text, size_t len, uint64_t ts)
{
	const size_t plen = strlen(STACKMAP_SNAP_MARKER_PREFIX);
	uint64_t seq = 0;
	size_t i;

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
	struct sm_gen *cur = gen_cur(sm);

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

int stackmap_write_reset(struct stackmap *sm)
{
	uint64_t t0, t1;

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
	if (!sm->pending_external && sm->have_bin)
		(void)snapshot_and_merge(sm, 0, false);
	if (sm->pending_external) {
		/* Somebody else already reset the map since the last good snapshot. */
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
			r = write_all(fd, "0", 1);
		if (r == 0)
			break;
		if (r != -EBUSY || i == RESET_BUSY_RETRIES) {
			/* The map was not reset: the generation goes on. */
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

int stackmap_begin_generation(struct stackmap *sm, enum segment_gen_kind kind, uint64_t begin_ts,
			      uint64_t end_ts, struct segment_generation *ret_gen)
{
	struct sm_gen *cur = gen_cur(sm), *g;
	uint64_t begin_raw, guard;
	bool external;
	int flags = 0, r;

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
		uint64_t auto_begin = external_begin_raw(sm, cur);

		if (!begin_raw || auto_begin < begin_raw)
			begin_raw = auto_begin;
		kind = SEGMENT_GEN_RESET_EXTERNAL;
	}

	r = gen_append(sm, &g);
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
		.window_begin = sat_sub(begin_raw, guard),
		.window_end = sat_add(end_ts, guard),
	};
	g->begin_marker_ts = end_ts;
	g->start_usec = now_usec(CLOCK_MONOTONIC);
	g->slots = sm->pending;
	sm->pending = (struct sm_slots){ 0 };
	sm->pending_external = false;
	sm->opt_off_seen = false;

	/*
	 * The new map's first snapshot. Without it the generation still
	 * exists (the reset happened); the next snapshot fills it in. If it
	 * disagrees with the content kept from an external reset, the map
	 * changed again: leave it to the next snapshot to notice.
	 */
	if (take_snapshot(sm) >= 0 && slots_consistent(&g->slots, &sm->snap)) {
		if (slots_merge(sm, &g->slots, &sm->snap, &cur->slots) >= 0) {
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
	enforce_kept(sm);
	return 0;
}

uint32_t stackmap_generation(const struct stackmap *sm)
{
	return sm->nr_gens ? sm->gens[sm->nr_gens - 1].g.generation : 0;
}

/* Lifetime of generation index i: its window begin to the next window's end. */
static void gen_lifetime(const struct stackmap *sm, size_t i, uint64_t *begin, uint64_t *end)
{
	*begin = sm->gens[i].g.window_begin;
	*end = i + 1 < sm->nr_gens ? sm->gens[i + 1].g.window_end : UINT64_MAX;
}

static int append_entry(struct buf *stacks, const struct stack_entry *e)
{
	return stacktab_encode(stacks, e);
}

static int append_addrs(struct buf *addrs, const struct sm_stack *s)
{
	if (!addrs || (s->flags & SEGMENT_STACK_F_TEXT))
		return 0;
	for (uint16_t i = 0; i < s->nr; i++) {
		uint64_t a = s->ips[i];
		int r;

		if (a == TRAMPOLINE_MARKER)
			continue;
		r = buf_append(addrs, &a, sizeof(a));
		if (r < 0)
			return r;
	}
	return 0;
}

static int u64_cmp(const void *a, const void *b)
{
	uint64_t x, y;

	memcpy(&x, a, sizeof(x));
	memcpy(&y, b, sizeof(y));
	return x < y ? -1 : x > y;
}

static void addrs_sort_unique(struct buf *addrs)
{
	size_t n = addrs->len / sizeof(uint64_t), k = 0;
	uint8_t *p = addrs->data;

	if (n < 2)
		return;
	qsort(p, n, sizeof(uint64_t), u64_cmp);
	for (size_t i = 1; i < n; i++)
		if (memcmp(p + i * 8, p + k * 8, 8) != 0)
			memmove(p + ++k * 8, p + i * 8, 8);
	addrs->len = (k + 1) * sizeof(uint64_t);
}

static int gen_tables(const struct sm_gen *g, const uint64_t *bitmap, size_t nbits,
		      struct buf *stacks, struct buf *addrs)
{
	size_t words = (nbits + 63) / 64, si = 0;

	if (g->dropped)
		return 0;
	for (size_t w = 0; w < words; w++) {
		uint64_t bits = bitmap[w];

		if (w == words - 1 && nbits % 64)
			bits &= (UINT64_C(1) << (nbits % 64)) - 1;
		while (bits) {
			uint32_t id = (uint32_t)(w * 64 + (size_t)__builtin_ctzll(bits));
			struct stack_entry e = { .generation = g->g.generation, .id = id };
			int r;

			bits &= bits - 1;
			while (si < g->slots.n && g->slots.v[si].id < id)
				si++;
			if (si < g->slots.n && g->slots.v[si].id == id) {
				const struct sm_slot *s = &g->slots.v[si];

				e.refs = s->refs;
				e.nr = s->stack->nr;
				e.flags = s->stack->flags;
				e.ips = s->stack->ips;
				e.text = (const char *const *)s->stack->text;
				r = append_addrs(addrs, s->stack);
				if (r < 0)
					return r;
			} else {
				e.flags = SEGMENT_STACK_F_ABSENT;
			}
			r = append_entry(stacks, &e);
			if (r < 0)
				return r;
		}
	}
	return 0;
}

int stackmap_segment_tables(struct stackmap *sm, const uint64_t *id_bitmap, size_t nbits,
			    uint32_t first_gen, uint32_t last_gen, uint64_t min_ts, uint64_t max_ts,
			    struct buf *stacks, struct buf *generations, struct buf *addrs)
{
	int n = 0, r;

	for (size_t i = 0; i < sm->nr_gens; i++) {
		const struct sm_gen *g = &sm->gens[i];
		uint8_t rec[SEGMENT_GENERATION_SIZE];
		uint64_t lb, le;
		bool pick;

		gen_lifetime(sm, i, &lb, &le);
		pick = g->g.generation >= first_gen && g->g.generation <= last_gen;
		if (!pick && min_ts <= max_ts)
			pick = lb <= max_ts && le >= min_ts;
		if (!pick)
			continue;
		r = gen_tables(g, id_bitmap, nbits, stacks, addrs);
		if (r < 0)
			return r;
		segment_generation_encode(&g->g, rec);
		r = buf_append(generations, rec, sizeof(rec));
		if (r < 0)
			return r;
		n++;
	}
	if (sm->pending_external && sm->nr_gens) {
		/*
		 * A reset somebody else made was found but its generation has
		 * not begun: events of this segment after the last matching
		 * snapshot may carry ids of the new map. Declare it with an
		 * open window so those ids resolve only where both maps agree
		 * or the new one (read after these events) lacks them.
		 */
		const struct sm_gen *cur = gen_cur_const(sm);
		struct sm_gen prov = {
			.g = {
				.generation = cur->g.generation + 1,
				.prev_generation = cur->g.generation,
				.kind = SEGMENT_GEN_RESET_EXTERNAL,
				.window_begin = sat_sub(external_begin_raw(sm, cur), sm->guard),
				.window_end = UINT64_MAX,
			},
			.slots = sm->pending,
		};
		uint8_t rec[SEGMENT_GENERATION_SIZE];

		r = gen_tables(&prov, id_bitmap, nbits, stacks, addrs);
		if (r < 0)
			return r;
		segment_generation_encode(&prov.g, rec);
		r = buf_append(generations, rec, sizeof(rec));
		if (r < 0)
			return r;
		n++;
	}
	if (addrs)
		addrs_sort_unique(addrs);
	return n;
}

int stackmap_release_before(struct stackmap *sm, uint32_t gen)
{
	int n = 0;

	for (size_t i = 0; i < sm->nr_gens; i++) {
		struct sm_gen *g = &sm->gens[i];

		if (g->g.generation >= gen)
			break;
		if (g->dropped)
			continue;
		slots_clear(sm, &g->slots);
		g->dropped = true;
		n++;
	}
	return n;
}

void stackmap_get_stats(const struct stackmap *sm, struct stackmap_stats *ret)
{
	*ret = sm->counters;
}

int stackmap_stats_format(const struct stackmap *sm, struct buf *b)
{
	const struct stackmap_stats *c = &sm->counters;

	return buf_printf(b,
			  "stackmap_entries=%" PRIu64 "\n"
			  "stackmap_capacity=%" PRIu64 "\n"
			  "stackmap_successes=%" PRIu64 "\n"
			  "stackmap_drops=%" PRIu64 "\n"
			  "generation=%" PRIu32 "\n"
			  "stackmap_resets=%" PRIu64 "\n"
			  "stackmap_external_resets=%" PRIu64 "\n"
			  "stackmap_last_reset_usec=%" PRIu64 "\n",
			  c->entries, c->capacity, c->successes, c->drops, c->generation,
			  c->resets_own, c->resets_external, c->last_reset_usec);
}
