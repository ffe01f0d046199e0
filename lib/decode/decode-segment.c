/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * One segment for the decoder (decode.h, decode-internal.h).
 *
 * The first pass (decoder_segment_load()) reads every record except the
 * pages for what events need before they can be printed: META, the FILE
 * records (formats, kallsyms, comms) and the stack table, which the daemon
 * writes after the pages that use it. PAGES records are only located
 * (their headers are read, their payloads are not), and with the seek
 * table of the segment's INDEX only those of the CPU and time window asked
 * for are kept, with each CPU's per-CPU GENERATION boundaries; a window
 * in real time is placed by the segment's CLOCK pairs once all are read.
 * A segment without a kallsyms subset (being written, or cut short)
 * borrows the running kernel's symbols if it is of the current boot.
 *
 * The second pass (decoder_segment_next_item()) hands out each CPU's
 * records in file order, reading and decompressing each frame once, at its
 * offset, when that CPU needs it: nothing is queued for other CPUs.
 */
#include <assert.h>
#include <endian.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>

#include <event-parse.h>

#include "budget.h"
#include "decode-internal.h"
#include "ksyms.h"
#include "segment.h"
#include "stacktab-resolve.h"
#include "util.h"

/* ---- first pass ---- */

void decoder_segment_add_error(struct decoder_segment *s, const char *fmt, ...)
{
	va_list ap;
	char *m;

	if (s->nr_errors >= DECODE_MAX_ERRORS)
		return;
	va_start(ap, fmt);
	if (vstrprintf(&m, fmt, ap) >= 0)
		s->errors[s->nr_errors++] = m;
	va_end(ap);
}

const char *decoder_segment_error(const struct decoder_segment *s, size_t i)
{
	assert(s);
	return i < s->nr_errors ? s->errors[i] : NULL;
}

const char *decoder_segment_unfinished(const struct decoder_segment *s)
{
	assert(s);
	return s->unfinished;
}

struct stacktab *decoder_segment_stacktab(const struct decoder_segment *s)
{
	assert(s);
	return s->tab;
}

struct tep_handle *decoder_segment_tep(const struct decoder_segment *s)
{
	assert(s);
	return s->tep;
}

uint64_t decoder_segment_serial(const struct decoder_segment *s)
{
	assert(s);
	return s->serial;
}

const char *decoder_segment_meta(const struct decoder_segment *s, const char *key)
{
	assert(s);
	assert(key);
	return segment_meta_get(&s->meta, key);
}

int decoder_segment_file(const struct decoder_segment *s, size_t i, const char **ret_name,
			 const char **ret_data, size_t *ret_len)
{
	assert(s);
	assert(ret_name);
	assert(ret_data);
	assert(ret_len);

	if (i >= s->nr_files)
		return -ENOENT;
	*ret_name = s->files[i].name;
	*ret_data = s->files[i].data;
	*ret_len = s->files[i].len;
	return 0;
}

const struct wallclock_pair *decoder_segment_clocks(const struct decoder_segment *s, size_t *ret_n)
{
	assert(s);
	assert(ret_n);

	*ret_n = s->nr_clocks;
	return s->clocks;
}

struct decoder_segment *decoder_segment_free(struct decoder_segment *s)
{
	if (!s)
		return NULL;
	for (size_t i = 0; i < s->nr_cpus; i++)
		free(s->cpus[i].refs);
	free(s->cpus);
	named_texts_free(&s->files, &s->nr_files);
	free(s->clocks);
	free(s->overlap);
	free(s->yield);
	segment_reader_free(s->rd);
	segment_meta_done(&s->meta);
	for (size_t i = 0; i < s->nr_errors; i++)
		free(s->errors[i]);
	free(s->unfinished);
	if (s->tep)
		tep_free(s->tep);
	ksyms_free(s->own_ks);
	stacktab_free(s->tab);
	free(s->path);
	budget_release_all(&s->charged);
	free(s);
	return NULL;
}


static bool meta_u64(const struct decoder_segment *s, const char *key, uint64_t *ret)
{
	return segment_meta_u64(&s->meta, key, ret) == 0;
}

/* The traced machine's layout from META; what a reader assumes (with a note) when missing. */
static void setup_layout(struct decoder_segment *s)
{
	struct page_format f;
	unsigned int guessed = segment_meta_page_format(&s->meta, &f);

	s->long_size = f.long_size;
	s->big_endian = f.big_endian;
	s->page_size = f.page_size;
	if (guessed & SEGMENT_META_GUESSED_LONG_SIZE)
		decoder_segment_add_error(s, "'%s': META has no valid long_size, assuming %u",
					  s->path, s->long_size);
	if (guessed & SEGMENT_META_GUESSED_BYTE_ORDER)
		decoder_segment_add_error(s, "'%s': META has no valid byte_order, assuming the host's",
					  s->path);
	if (guessed & SEGMENT_META_GUESSED_PAGE_SIZE)
		decoder_segment_add_error(s, "'%s': META has no valid page_size, pages are not "
					  "checked against one", s->path);

	tep_set_long_size(s->tep, (int)s->long_size);
	if (s->page_size)
		tep_set_page_size(s->tep, (int)s->page_size);
	tep_set_file_bigendian(s->tep, s->big_endian ? TEP_BIG_ENDIAN : TEP_LITTLE_ENDIAN);
	tep_set_local_bigendian(s->tep, __BYTE_ORDER == __BIG_ENDIAN ? TEP_BIG_ENDIAN
								 : TEP_LITTLE_ENDIAN);
}

/*
 * "pid comm" lines. A segment may carry the list more than once (the
 * daemon writes the lines that changed when it finishes the segment): the
 * latest wins, as pids are reused.
 */
static void parse_cmdlines(struct tep_handle *tep, const char *p, size_t len)
{
	const char *end = p + len;

	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t l = nl ? (size_t)(nl - p) : (size_t)(end - p);
		char line[64], *comm;
		long pid;

		if (l > 0 && l < sizeof(line)) {
			memcpy(line, p, l);
			line[l] = 0;
			pid = strtol(line, &comm, 10);
			if (comm != line && *comm == ' ' && comm[1])
				(void)tep_override_comm(tep, comm + 1, (int)pid);
		}
		p += l + 1;
	}
}

/*
 * libtraceevent asks this for the function containing an address (%ps and
 * friends): the segment's symbols, which know where each one ends, so an
 * address the kallsyms subset cannot place prints as a number.
 */
static char *resolve_function(void *priv, unsigned long long *addrp, char **modp)
{
	const struct decoder_segment *s = priv;
	const char *name, *mod = NULL;
	uint64_t off;

	name = ksyms_lookup(s->ks, *addrp, &off, NULL, &mod);
	if (!name)
		return NULL;
	*addrp -= off;
	*modp = (char *)mod;
	return (char *)name;
}

static int load_text_file(struct decoder_segment *s, const struct segment_record *rec,
			  const char *name, const char *content, size_t len)
{
	_cleanup_free_ char *text = NULL;
	const char *why = NULL;
	int r;

	/* Each is checked first: libtraceevent's parsers trust their input. */
	if (streq(name, "kallsyms")) {
		if (s->own_ks)
			return 0;
		r = ksyms_parse(content, len, &s->own_ks);
		if (r == -ENOMEM)
			return r;
		if (r < 0) {
			s->own_ks = NULL;
			why = "malformed kallsyms line";
		}
		s->ks = s->own_ks;
		goto out;
	}
	text = strndup(content, len);
	if (!text)
		return -ENOMEM;
	if (strlen(text) != len)
		why = "NUL inside the text";
	else if (streq(name, "printk_formats")) {
		if (decode_check_printk_formats(text, len) < 0) {
			why = "malformed printk_formats line";
		} else {
			(void)decode_drop_short_printk(text, len);
			(void)tep_parse_printk_formats(s->tep, text);
		}
	} else if (streq(name, "header_page") || streq(name, "events/header_page")) {
		if (decode_check_header_page(text, len) < 0)
			why = "malformed header_page";
		else
			(void)tep_parse_header_page(s->tep, text, len, (int)s->long_size);
	} else {
		const char *sys = name + strlen("events/"), *slash = strchr(sys, '/');
		char sysname[128];

		if (!slash || slash == sys || (size_t)(slash - sys) >= sizeof(sysname) ||
		    !strstr(slash, "/format"))
			return 0;
		memcpy(sysname, sys, (size_t)(slash - sys));
		sysname[slash - sys] = 0;
		/* An event libtraceevent cannot parse prints as unknown; the rest still decode. */
		if (s->nr_formats >= DECODE_MAX_FORMATS)
			why = "more event formats than a reader parses (4096)";
		else if (decode_check_format(text, len, &why) == 0) {
			s->nr_formats++;
			(void)tep_parse_event(s->tep, text, len, sysname);
		}
	}
out:
	if (why)
		decoder_segment_add_error(s, "'%s': FILE record '%s' at offset %" PRIu64
					  " not used: %s", s->path, name, rec->offset, why);
	return 0;
}


static int load_file(struct decoder_segment *s, const struct segment_record *rec)
{
	const char *name = (const char *)rec->data;
	const uint8_t *nul = memchr(rec->data, 0, MIN(rec->len, (size_t)256));
	const char *content;
	size_t len;

	if (!nul) {
		decoder_segment_add_error(s, "'%s': malformed FILE record at offset %" PRIu64, s->path, rec->offset);
		return 0;
	}
	content = (const char *)nul + 1;
	len = rec->len - (size_t)(nul + 1 - rec->data);
	/*
	 * FILE records in total: the copy kept for exporters, and as much
	 * again for what the parsers build from a text (event formats,
	 * symbols, comms), however often a file repeats a name.
	 */
	if (budget_charge(&s->charged, 2 * (len + (size_t)(nul - rec->data) + 1 + sizeof(*s->files)),
			  "FILE records") < 0)
		return -ENOMEM;
	/* a copy for exporters (decoder_segment_file()) */
	if (named_texts_append(&s->files, &s->nr_files, name, content, len) < 0)
		return -ENOMEM;

	/* "events/header_page" is the tracefs path; accept it as well as the documented name. */
	if (streq(name, "header_page") || streq(name, "events/header_page") ||
	    startswith(name, "events/") || streq(name, "kallsyms") || streq(name, "printk_formats"))
		return load_text_file(s, rec, name, content, len);
	if (streq(name, "saved_cmdlines"))
		parse_cmdlines(s->tep, content, len);
	/* saved_tgids, header_event, config: nothing to print events with. */
	return 0;
}

/* A reader of s's file that refuses records larger than a decoder may hold. */
static int open_reader(const struct decoder_segment *s, struct segment_reader **ret)
{
	int r = segment_reader_open(s->path, ret);

	if (r >= 0)
		segment_reader_set_max_raw(*ret, (uint32_t)DECODE_MAX_RECORD_RAW);
	return r;
}

static int cpu_streams(struct decoder_segment *s, uint32_t cpu, struct cpu_stream **ret)
{
	if (cpu >= DECODE_MAX_CPUS)
		return -EINVAL;
	if (cpu >= s->nr_cpus) {
		if (BUDGET_GREEDY_REALLOC0(&s->charged, s->cpus, s->cap_cpus, (size_t)cpu + 1,
					   "CPU streams") < 0)
			return -ENOMEM;
		s->nr_cpus = cpu + 1;
	}
	*ret = &s->cpus[cpu];
	return 0;
}

static int add_ref(struct decoder_segment *s, struct cpu_stream *cs, const struct item_ref *ref)
{
	/* total counts in 32 bits */
	if (cs->total == UINT32_MAX ||
	    BUDGET_GREEDY_REALLOC(&s->charged, cs->refs, cs->cap, (size_t)cs->total + 1,
				  "the frame table") < 0)
		return -ENOMEM;
	cs->refs[cs->total++] = *ref;
	return 0;
}

static bool wall_window(const struct decoder_filter *f)
{
	return f->wall_since != 0 || f->wall_until != UINT64_MAX;
}

/* Where a stack entry of an event at or before until can be stamped at the latest. */
static uint64_t stack_lag_end(uint64_t until)
{
	return until > UINT64_MAX - DECODE_STACK_LAG_NS ? UINT64_MAX : until + DECODE_STACK_LAG_NS;
}

/* Whether a frame of this span (seek table convention) may hold events of [since, until]. */
static bool span_meets(uint64_t first_ts, uint64_t last_ts, uint64_t since, uint64_t until)
{
	if (!first_ts && last_ts != UINT64_MAX)
		return false;	/* no event */
	return last_ts >= since && first_ts <= until;
}

/*
 * Give ref its frame's span from the seek table, which seek walks along;
 * 0, UINT64_MAX: unknown (not in the table, or no table).
 */
static void frame_span(const struct segment_index *idx, size_t *seek, struct item_ref *ref)
{

	ref->first_ts = 0;
	ref->last_ts = UINT64_MAX;
	if (!idx || !(idx->flags & SEGMENT_INDEX_F_SEEK))
		return;
	while (*seek < idx->nr_frames && idx->frames[*seek].offset < ref->offset)
		(*seek)++;
	if (*seek >= idx->nr_frames || idx->frames[*seek].offset != ref->offset)
		return;
	ref->first_ts = idx->frames[*seek].first_ts;
	ref->last_ts = idx->frames[*seek].last_ts;
}

/*
 * Drop the frames that lie wholly outside f's window: its trace-clock
 * window, and its real-time window placed in s's trace clock by s's CLOCK
 * pairs (the first is written when the segment opens, so only segments of
 * older daemons have none). A frame partly inside stays; its events are
 * checked one by one. So does the frame after a CPU's last frame in the
 * window: it may start with the stack of the window's last event, which
 * the kernel stamped after that event. A CPU's first frame in the segment
 * follows a frame of an earlier one: it stays if it starts within
 * DECODE_STACK_LAG_NS of the window's end. Without a window every frame is
 * read, those without events too (lost-event flags).
 */
static void place_window(struct decoder_segment *s, const struct decoder_filter *f)
{
	uint64_t lo = f->since, hi = f->until, wlo = 1, whi = 0, lag_hi;

	if (wall_window(f) && s->nr_clocks) {
		s->wall_placed = true;
		s->wall_since = f->wall_since;
		s->wall_until = f->wall_until;
		(void)wallclock_trace_span(s->clocks, s->nr_clocks, f->wall_since, f->wall_until,
					   &wlo, &whi);
		lo = MAX(lo, wlo);
		hi = MIN(hi, whi);
	}
	if (lo == 0 && hi == UINT64_MAX)
		return;
	lag_hi = stack_lag_end(hi);
	for (size_t c = 0; c < s->nr_cpus; c++) {
		struct cpu_stream *cs = &s->cpus[c];
		bool first = true, after_kept = false;
		uint32_t k = 0;

		for (uint32_t i = 0; i < cs->total; i++) {
			const struct item_ref *r = &cs->refs[i];
			bool meets = span_meets(r->first_ts, r->last_ts, lo, hi);

			/* the CPU's first frame: the last one before it is in an earlier segment */
			if (r->boundary || meets ||
			    ((after_kept || (first && r->first_ts <= lag_hi)) && r->first_ts > hi))
				cs->refs[k++] = *r;
			if (!r->boundary) {
				after_kept = meets;
				first = false;
			}
		}
		cs->total = k;
	}
}

bool decoder_segment_wants_ts(const struct decoder_segment *s, const struct decoder_filter *f,
			      uint64_t ts)
{
	uint64_t rt;

	if (ts < f->since || ts > f->until)
		return false;
	if (!s->wall_placed)
		return true;
	rt = wallclock_to_realtime(s->clocks, s->nr_clocks, ts);
	return rt >= s->wall_since && rt <= s->wall_until;
}

bool decoder_segment_wall_placed(const struct decoder_segment *s)
{
	assert(s);
	return s->wall_placed;
}

/* True if the INDEX of a finished segment proves that it has no event f asks for. */
static bool segment_unwanted(const struct segment_index *idx, const struct decoder_filter *f)
{
	if (!idx || !idx->nr_cpus || (idx->flags & SEGMENT_INDEX_F_TRUNCATED))
		return false;
	if (f->cpu < 0 && f->since == 0 && f->until == UINT64_MAX)
		return false;
	for (uint32_t i = 0; i < idx->nr_cpus; i++) {
		const struct segment_cpu_index *c = &idx->cpus[i];

		if (f->cpu >= 0 && c->cpu != (uint32_t)f->cpu)
			continue;
		/* it may start with the stack of the window's last event */
		if (c->events && c->last_ts >= f->since && c->first_ts <= stack_lag_end(f->until))
			return false;
	}
	return true;
}

static int load_record(struct decoder_segment *s, const struct segment_record *rec,
		       const struct decoder_filter *f, const struct segment_index *idx,
		       size_t *seek)
{
	struct item_ref ref = { .offset = rec->offset };
	struct segment_generation g;
	struct cpu_stream *cs;
	int r;

	switch (rec->type) {
	case SEGMENT_REC_FILE:
		return load_file(s, rec);
	case SEGMENT_REC_STACKS:
		r = stacktab_add_stacks(s->tab, rec->data, rec->len);
		if (r == -EBADMSG)
			decoder_segment_add_error(s, "'%s': malformed STACKS record at offset %" PRIu64, s->path,
				  rec->offset);
		else if (r == -EFBIG)
			decoder_segment_add_error(s, "'%s': the stack table exceeds the reader's limits at "
						  "offset %" PRIu64 ", the stacks after it are not kept",
						  s->path, rec->offset);
		return r == -ENOMEM ? r : 0;
	case SEGMENT_REC_GENERATION:
		if (segment_generation_decode(rec->data, rec->len, &g) < 0) {
			decoder_segment_add_error(s, "'%s': malformed GENERATION record at offset %" PRIu64, s->path,
				  rec->offset);
			return 0;
		}
		r = stacktab_add_generation(s->tab, rec->cpu, &g);
		if (r == -ENOMEM)
			return r;
		if (r < 0 || rec->cpu == SEGMENT_NO_CPU)
			return 0;
		ref.boundary = true;
		ref.generation = g.generation;
		break;
	case SEGMENT_REC_CLOCK:
		/* collected here, sorted once in finish_tables(): linear in the records */
		if (budget_charge(&s->charged, 2 * rec->len, "CLOCK records") < 0)
			return -ENOMEM;
		r = wallclock_pairs_decode(rec->data, rec->len, &s->clocks, &s->nr_clocks,
					   &s->cap_clocks);
		if (r == -EBADMSG)
			decoder_segment_add_error(s, "'%s': malformed CLOCK record at offset %" PRIu64,
						  s->path, rec->offset);
		return r == -ENOMEM ? r : 0;
	case SEGMENT_REC_PAGES:
		frame_span(idx, seek, &ref);
		break;
	default:
		return 0;
	}

	r = cpu_streams(s, rec->cpu, &cs);
	if (r == -EINVAL) {
		decoder_segment_add_error(s, "'%s': record at offset %" PRIu64 " names CPU %" PRIu32 ", ignored",
			  s->path, rec->offset, rec->cpu);
		return 0;
	}
	if (r < 0)
		return r;
	if (f->cpu >= 0 && rec->cpu != (uint32_t)f->cpu)
		return 0;
	return add_ref(s, cs, &ref);
}

/* Event type of a stack entry: META names it; formats by name if META does not. */
static void find_stack_event(struct decoder_segment *s, enum decoded_stack kind, const char *key,
			     const char *sys, const char *name)
{
	struct tep_event *e = NULL;
	uint64_t id;

	if (meta_u64(s, key, &id) && id > 0 && id < 65536)
		e = tep_find_event(s->tep, (int)id);
	if (!e)
		e = tep_find_event_by_name(s->tep, sys, name);
	s->stack_type[kind] = e ? e->id : -1;
	if (!e)
		return;
	switch (kind) {
	case DECODED_KERNEL_STACK:
		s->caller_field = tep_find_any_field(e, "caller");
		s->size_field = tep_find_field(e, "size");
		break;
	case DECODED_STACK_ID:
		s->id_field = tep_find_field(e, "stack_id");
		break;
	case DECODED_STACK_REF:
		s->ref_field = tep_find_field(e, "stack_ref");
		break;
	default:
		break;
	}
}

static const char *open_error_text(int r)
{
	switch (r) {
	case -EBADMSG:
		return "not a segment (bad prologue)";
	case -EPROTONOSUPPORT:
		return "unsupported segment format version";
	default:
		return strerror(-r);
	}
}

int decoder_segment_load(const char *path, struct decoder_segment **ret, char **ret_error)
{
	return decoder_segment_load_filtered(path, NULL, ret, ret_error);
}

/* Set *ret_error (if asked) to "'path': what". */
static void set_error(char **ret_error, const char *path, const char *what)
{
	if (ret_error && asprintf(ret_error, "'%s': %s", path, what) < 0)
		*ret_error = NULL;
}

/*
 * The records of the segment but its pages (META first, then the tables
 * the pages need); *clean_end: the data ended at a record boundary, or at
 * the record the daemon is writing. A damaged record ends the reading with
 * an error noted in s. Returns 0, -EBADMSG (no META first: *ret_error
 * says so) or -ENOMEM.
 */
static int read_records(struct decoder_segment *s, struct segment_reader *rd,
			const struct decoder_filter *f, const struct segment_index *idx,
			bool *clean_end, char **ret_error)
{
	bool seen_meta = false;
	size_t seek = 0;
	int r;

	for (;;) {
		struct segment_record rec;

		r = segment_reader_next(rd, &rec);
		if (r == 0) {
			s->data_end = segment_reader_good_offset(rd);
			*clean_end = true;
			break;
		}
		if (r == -ENOMEM)
			return r;
		if (r < 0) {
			s->data_end = segment_reader_error_offset(rd);
			if (r == -EBADMSG && segment_reader_cut_short(rd) && segment_name_is_part(s->path)) {
				/* the record the daemon is writing right now */
				s->data_end = segment_reader_good_offset(rd);
				*clean_end = true;
				break;
			}
			if (r == -EBADMSG)
				decoder_segment_add_error(s, "'%s': damaged at offset %" PRIu64 ": %s; the data after it is lost",
					  s->path, s->data_end, segment_reader_error(rd));
			else
				decoder_segment_add_error(s, "'%s': read error at offset %" PRIu64 ": %s", s->path,
					  s->data_end, strerror(-r));
			break;
		}
		if (!seen_meta) {
			if (rec.type != SEGMENT_REC_META) {
				set_error(ret_error, s->path, "first record is not META");
				return -EBADMSG;
			}
			r = segment_meta_parse(&s->meta, rec.data, rec.len);
			if (r < 0)
				return r;
			setup_layout(s);
			seen_meta = true;
			continue;
		}
		r = load_record(s, &rec, f, idx, &seek);
		if (r < 0)
			return r;
	}
	if (!seen_meta) {
		set_error(ret_error, s->path, "no META record");
		return -EBADMSG;
	}
	return 0;
}

/* How a segment whose data ended cleanly ends: being written, cut short, or recovered. */
static void note_end(struct decoder_segment *s, struct segment_reader *rd,
		     const struct segment_index *idx)
{
	if (!segment_reader_complete(rd) && segment_name_is_part(s->path)) {
		/* the segment being written (or left by a crash, recovered at the next start) */
		if (asprintf(&s->unfinished, "'%s': unfinished (being written, or left by a "
			     "crash): read up to offset %" PRIu64, s->path, s->data_end) < 0)
			s->unfinished = NULL;
	} else if (!segment_reader_complete(rd)) {
		decoder_segment_add_error(s, "'%s': incomplete (no trailer): the data ends at offset %" PRIu64,
			  s->path, s->data_end);
	} else if (idx && (idx->flags & SEGMENT_INDEX_F_TRUNCATED)) {
		decoder_segment_add_error(s, "'%s': recovered after a crash: its data ends early", s->path);
	}
}

/* After the tables: symbols, the wall-clock window and the stack event types. */
static void finish_tables(struct decoder_segment *s, const struct decoder_filter *f)
{
	/*
	 * The subset comes when the daemon finishes the segment: until then
	 * (or after a crash), the running kernel's symbols, if it is the same boot.
	 */
	if (!s->ks)
		s->ks = ksyms_live_for_boot(segment_meta_get(&s->meta, "boot_id"));
	s->nr_clocks = wallclock_pairs_sort(s->clocks, s->nr_clocks);
	place_window(s, f);
	decode_read_overlap(s);
	find_stack_event(s, DECODED_KERNEL_STACK, "kernel_stack_event_id", "ftrace", "kernel_stack");
	find_stack_event(s, DECODED_STACK_ID, "stack_id_event_id", "ftrace", "stack_id");
	find_stack_event(s, DECODED_STACK_REF, "stack_ref_event_id", "stackmapd", "stack_ref");
	s->stack_type[DECODED_STACK_MISSING] = -1;
	/* without a config that loads, no event is known to want a stack */
	(void)stack_expect_types_load(&s->wants_stack, s->files, s->nr_files);
}

/* The last serial given to a segment (decoder_segment_serial()). */
static uint64_t segment_serials;

int decoder_segment_load_filtered(const char *path, const struct decoder_filter *filter,
				  struct decoder_segment **ret, char **ret_error)
{
	_cleanup_(decoder_segment_freep) struct decoder_segment *s = NULL;
	_cleanup_(segment_reader_freep) struct segment_reader *rd = NULL;
	const struct decoder_filter *f = filter ? filter : &DECODER_FILTER_ALL;
	const struct segment_index *idx;
	bool clean_end = false;
	int r;

	assert(path);
	assert(ret);

	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->serial = __atomic_add_fetch(&segment_serials, 1, __ATOMIC_RELAXED);
	s->path = strdup(path);
	s->tab = stacktab_new();
	s->tep = tep_alloc();
	if (!s->path || !s->tab || !s->tep)
		return -ENOMEM;
	if (tep_set_function_resolver(s->tep, resolve_function, s) < 0)
		return -ENOMEM;

	r = open_reader(s, &rd);
	if (r < 0) {
		set_error(ret_error, path, open_error_text(r));
		return r;
	}
	/* pages are read in the second pass, and only those asked for */
	segment_reader_skip_pages(rd, true);
	idx = segment_reader_index(rd);
	if (segment_unwanted(idx, f)) {
		/* nothing to read in it: not even its tables */
		*ret = steal_ptr(s);
		return 0;
	}

	r = read_records(s, rd, f, idx, &clean_end, ret_error);
	if (r < 0)
		return r;
	if (clean_end)
		note_end(s, rd, idx);
	finish_tables(s, f);

	s->rd = steal_ptr(rd);
	*ret = steal_ptr(s);
	return 0;
}

int decoder_segment_symbolize(const struct decoder_segment *s, uint64_t addr, bool with_offset,
			      char *buf, size_t len)
{
	const char *name = NULL;
	int n;

	assert(s);
	assert(buf || len == 0);

	if (addr == DECODE_FTRACE_TRAMPOLINE)
		n = snprintf(buf, len, "[FTRACE TRAMPOLINE]");
	else if (with_offset && s->ks && ksyms_usable(s->ks))
		return ksyms_format(s->ks, addr, buf, len);
	else {
		if (s->ks && ksyms_usable(s->ks))
			name = ksyms_lookup(s->ks, addr, NULL, NULL, NULL);
		if (!name)
			name = tep_find_function(s->tep, addr);
		if (name && with_offset)
			n = snprintf(buf, len, "%s+0x%" PRIx64, name,
				     addr - (uint64_t)tep_find_function_address(s->tep, addr));
		else if (name)
			n = snprintf(buf, len, "%s", name);
		else
			n = snprintf(buf, len, "0x%" PRIx64, addr);
	}
	if (n < 0)
		return -EINVAL;
	return (size_t)n < len ? n : -ENOBUFS;
}

/* ---- second pass: one CPU's items of a segment ---- */

uint64_t decoder_segment_frames_read(const struct decoder_segment *s)
{
	return s && s->rd ? segment_reader_pages_read(s->rd) : 0;
}

/*
 * A frame that does not check out ends the segment's data there, as if the
 * sequential read had stopped at it: later items of every CPU are dropped.
 */
static void frame_damaged(struct decoder_segment *s, uint64_t offset, int r)
{
	if (offset < s->data_end)
		s->data_end = offset;
	if (r == -EBADMSG)
		decoder_segment_add_error(s, "'%s': damaged at offset %" PRIu64 ": %s; the data after it is lost",
					  s->path, segment_reader_error_offset(s->rd),
					  segment_reader_error(s->rd));
	else
		decoder_segment_add_error(s, "'%s': read error at offset %" PRIu64 ": %s", s->path,
					  offset, strerror(-r));
}

int decoder_segment_next_item(struct decoder_segment *s, unsigned int cpu, size_t room,
			      struct item **ret)
{
	struct segment_record rec = { 0 };	/* set on success; compilers that inline it cannot tell */
	const struct item_ref *ref;
	struct cpu_stream *cs;
	struct item *it;
	int r;

	if (!s || cpu >= s->nr_cpus || !s->rd)
		return 0;
	cs = &s->cpus[cpu];
next:
	if (cs->read >= cs->total)
		return 0;
	ref = &cs->refs[cs->read];
	if (ref->offset >= s->data_end) {
		cs->read = cs->total;
		return 0;
	}
	if (ref->boundary) {
		it = calloc(1, sizeof(*it));
		if (!it)
			return -ENOMEM;
		*it = (struct item){ .offset = ref->offset, .boundary = true,
				     .generation = ref->generation };
		cs->read++;
		*ret = it;
		return 1;
	}
	r = segment_reader_read_at(s->rd, ref->offset, &rec);
	if (r == -ENOMEM)
		return r;
	if (r == 0 && (rec.type != SEGMENT_REC_PAGES || rec.cpu != cpu))
		r = -EIO;	/* the file changed under us */
	if (r < 0) {
		frame_damaged(s, ref->offset, r);
		cs->read = cs->total;
		return 0;
	}
	if (rec.len > room) {
		decoder_segment_add_error(s, "'%s': CPU %u: the record at offset %" PRIu64 " is skipped: "
					  "the pages held for merging CPUs reach their limit of %zu MiB",
					  s->path, cpu, rec.offset, (size_t)(DECODE_MAX_HELD / 2) >> 20);
		cs->read++;
		goto next;
	}
	it = malloc(sizeof(*it) + rec.len);
	if (!it)
		return -ENOMEM;
	*it = (struct item){ .offset = rec.offset, .len = rec.len };
	memcpy(it->data, rec.data, rec.len);
	cs->read++;
	*ret = it;
	return 1;
}
