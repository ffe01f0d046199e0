/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * stackmapctl info: what a segment holds (META, record counts, per-CPU
 * pages, events, time span, losses, stacks, notes), as text or JSON. The
 * per-CPU figures come from the index of an intact segment, otherwise
 * from walking the pages that survived with the page walker.
 */
#include <assert.h>
#include <inttypes.h>
#include <time.h>

#include "capture.h"
#include "cmd-common.h"
#include "commands.h"
#include "info.h"
#include "log.h"
#include "page-walk.h"
#include "segment-meta.h"
#include "segment.h"
#include "stacktab.h"
#include "util.h"

/* Text from a segment for a terminal: control characters become '?', lines after the first are indented. */
static void print_text(FILE *f, const char *s, size_t len, const char *indent)
{
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)s[i];

		if (c == '\n') {
			if (i + 1 < len)
				fprintf(f, "\n%s", indent);
		} else {
			fputc(c == '\t' || c >= 0x20 ? c : '?', f);
		}
	}
}

/*
 * A timestamp as trace-cmd prints it: seconds.microseconds, or the raw
 * count of a counter clock (cmd_clock_is_counter()).
 */
static const char *fmt_ts(char buf[32], uint64_t ts, bool counter)
{
	if (counter)
		(void)snprintf(buf, 32, "%" PRIu64, ts);
	else
		(void)snprintf(buf, 32, "%" PRIu64 ".%06" PRIu64, ts / 1000000000,
			       ts % 1000000000 / 1000);
	return buf;
}

struct cpu_stat {
	uint32_t cpu;
	uint64_t pages;
	uint64_t events;
	uint64_t first_ts;
	uint64_t last_ts;
	uint64_t lost;
	uint64_t lost_unknown;	/* pages whose missed events were not counted by the kernel */
	uint64_t write_lost;	/* dropped by a write outage, from STATS */
	uint64_t raw_bytes;
	uint64_t stored_bytes;
};

struct note {
	char *text;
	size_t len;
};

struct info {
	const char *path;
	struct segment_reader *r;
	int end;			/* last segment_reader_next() result */

	struct segment_meta meta;
	char *header_page;
	size_t header_page_len;

	bool scan;			/* per-CPU figures from the pages, not from the index */
	bool read_pages;		/* read and walk every page (--pages) */
	bool pages_skipped;		/* the reader passed over PAGES payloads */
	bool pages_ready;
	size_t page_size;
	unsigned int long_size;
	bool big_endian;
	uint64_t bad_pages;		/* malformed pages (and the rest of their record) */

	struct cpu_stat *cpus;
	size_t n_cpus, cap_cpus;
	uint64_t records;
	uint64_t rec_count[SEGMENT_REC_MAX];
	uint64_t rec_unknown;
	uint64_t stack_entries;
	uint64_t bad_stacks;
	uint64_t bad_index_off;		/* of a malformed INDEX record; 0: none */
	struct note *notes;
	size_t n_notes, cap_notes;
	uint64_t notes_left_out;	/* beyond SEGMENT_MAX_NOTES */
};

static void info_done(struct info *in)
{
	segment_reader_free(in->r);
	segment_meta_done(&in->meta);
	free(in->header_page);
	free(in->cpus);
	for (size_t i = 0; i < in->n_notes; i++)
		free(in->notes[i].text);
	free(in->notes);
}

static const char *meta_get(const struct info *in, const char *key)
{
	return segment_meta_get(&in->meta, key);
}

static uint64_t meta_u64(const struct info *in, const char *key, uint64_t def)
{
	uint64_t v;

	return segment_meta_u64(&in->meta, key, &v) == 0 ? v : def;
}

static struct cpu_stat *cpu_get(struct info *in, uint32_t cpu)
{
	struct cpu_stat *c;

	for (size_t i = 0; i < in->n_cpus; i++)
		if (in->cpus[i].cpu == cpu)
			return &in->cpus[i];
	if (GREEDY_REALLOC(in->cpus, in->cap_cpus, in->n_cpus + 1) < 0)
		return NULL;
	c = &in->cpus[in->n_cpus++];
	*c = (struct cpu_stat){ .cpu = cpu };
	return c;
}

/*
 * The page format from META and the header_page FILE (when it came before
 * the first PAGES record, as the daemon writes it): header_page knows the
 * size of the commit word better than META's long_size.
 */
static void pages_setup(struct info *in)
{
	struct page_format f;
	unsigned int size;

	(void)segment_meta_page_format(&in->meta, &f);
	in->pages_ready = true;
	in->long_size = f.long_size;
	if (in->header_page && page_walk_header_commit_size(in->header_page, &size) == 0)
		in->long_size = size;
	in->big_endian = f.big_endian;
	in->page_size = f.page_size;
}

/*
 * Count the pages of one PAGES record, their events and lost events. A page
 * the walker rejects is counted as malformed; when its header is bad, the
 * rest of the record cannot be found and is not counted.
 */
static void scan_pages(struct info *in, struct cpu_stat *c, const uint8_t *data, size_t len)
{
	struct page_format f = { in->long_size, in->big_endian, in->page_size };
	struct page_walk w;
	size_t off = 0;
	int k;

	for (;;) {
		struct page_entry e;

		c->pages += page_walk_skip_empty(&f, data, len, &off);
		k = page_walk_payload_next(&w, &f, data, len, &off);
		if (k <= 0)
			break;
		c->pages++;
		while ((k = page_walk_next(&w, &e)) > 0) {
			if (e.kind != PAGE_ENTRY_DATA)
				continue;
			if (!c->events)
				c->first_ts = e.ts;
			c->last_ts = e.ts;
			c->events++;
		}
		if (k < 0) {
			in->bad_pages++;
			continue;
		}
		/* As kbuffer counts them: the stored count only with MISSED_EVENTS. */
		if (!(w.commit_word & PAGE_MISSED_EVENTS))
			continue;
		if (w.commit_word & PAGE_MISSED_STORED)
			c->lost += w.missed;
		else
			c->lost_unknown++;
	}
	if (k < 0)
		in->bad_pages++;
}

static int count_stack(const struct stack_entry *e, void *userdata)
{
	(*(uint64_t *)userdata)++;
	return 0;
}

/*
 * A NOTE, as much of it as a writer writes (SEGMENT_MAX_NOTE): a hostile
 * file's 8 MiB note was 50 MB of JSON escapes. Beyond SEGMENT_MAX_NOTES
 * notes, only their number is kept.
 */
static int keep_note(struct info *in, const void *data, size_t len)
{
	size_t keep = MIN(len, (size_t)SEGMENT_MAX_NOTE), cap = keep + 64;
	struct note *n;

	if (in->n_notes == SEGMENT_MAX_NOTES) {
		in->notes_left_out++;
		return 0;
	}
	if (GREEDY_REALLOC(in->notes, in->cap_notes, in->n_notes + 1) < 0)
		return -ENOMEM;
	n = &in->notes[in->n_notes];
	n->text = malloc(cap);
	if (!n->text)
		return -ENOMEM;
	memcpy(n->text, data, keep);
	n->len = keep;
	if (len > keep)
		n->len += (size_t)snprintf(n->text + keep, cap - keep, " [%zu more bytes not shown]",
					   len - keep);
	n->text[n->len] = '\0';
	in->n_notes++;
	return 0;
}

/*
 * The events a write outage of the device dropped, from a CPU's STATS
 * record that says so (doc/segment-format.md, "Write loss"). The index of
 * an intact segment counts them in its lost events already; a recovered
 * segment's figures come from its pages, which never held these events.
 */
static int count_write_loss(struct info *in, const struct segment_record *rec)
{
	struct segment_meta m = {};
	struct cpu_stat *c;
	uint64_t n = 0;
	int k;

	if (rec->cpu == SEGMENT_NO_CPU)
		return 0;
	k = segment_meta_parse(&m, rec->data, rec->len);
	if (k >= 0)
		(void)segment_meta_u64(&m, "write_dropped_events", &n);
	segment_meta_done(&m);
	if (k < 0)
		return k;
	if (!n)
		return 0;
	c = cpu_get(in, rec->cpu);
	if (!c)
		return -ENOMEM;
	c->write_lost += n;
	return 0;
}

static int info_record(struct info *in, const struct segment_record *rec)
{
	struct cpu_stat *c;
	int k;

	in->records++;
	if (segment_rec_type_name(rec->type))
		in->rec_count[rec->type]++;
	else
		in->rec_unknown++;

	switch (rec->type) {
	case SEGMENT_REC_META:
		return segment_meta_parse(&in->meta, rec->data, rec->len);
	case SEGMENT_REC_FILE: {
		const uint8_t *content;
		const char *name;
		size_t n;

		if (segment_file_split(rec, &name, &content, &n) == 0 && streq(name, "header_page")) {
			free(in->header_page);
			in->header_page = malloc(n + 1);
			if (!in->header_page)
				return -ENOMEM;
			memcpy(in->header_page, content, n);
			in->header_page[n] = '\0';
			in->header_page_len = n;
		}
		return 0;
	}
	case SEGMENT_REC_PAGES:
		c = cpu_get(in, rec->cpu);
		if (!c)
			return -ENOMEM;
		c->stored_bytes += rec->stored_len;
		c->raw_bytes += rec->len;
		if (!rec->data)
			return 0;	/* skipped: the index has the figures */
		if (!in->pages_ready)
			pages_setup(in);
		scan_pages(in, c, rec->data, rec->len);
		return 0;
	case SEGMENT_REC_INDEX: {
		struct segment_index x = {};

		/* CRC-valid yet malformed: the reader only decodes the one the footer names. */
		k = segment_index_decode(rec->data, rec->len, &x);
		segment_index_done(&x);
		if (k == -EBADMSG && !in->bad_index_off)
			in->bad_index_off = rec->offset;
		else if (k < 0 && k != -EBADMSG)
			return k;
		return 0;
	}
	case SEGMENT_REC_STACKS:
		k = stacktab_decode(rec->data, rec->len, count_stack, &in->stack_entries);
		if (k == -EBADMSG)
			in->bad_stacks++;
		else if (k < 0)
			return k;
		return 0;
	case SEGMENT_REC_NOTE:
		return keep_note(in, rec->data, rec->len);
	case SEGMENT_REC_STATS:
		return count_write_loss(in, rec);
	default:
		return 0;
	}
}

static int cmp_cpu(const void *a, const void *b)
{
	const struct cpu_stat *x = a, *y = b;

	return x->cpu < y->cpu ? -1 : x->cpu > y->cpu;
}

/*
 * Whether the index of an intact segment gives the per-CPU figures, so
 * that no page needs to be read: what makes info instant on any size.
 */
static bool skip_pages(const struct info *in)
{
	const struct segment_index *idx = segment_reader_index(in->r);

	return !in->read_pages && idx && !(idx->flags & SEGMENT_INDEX_F_TRUNCATED) &&
	       idx->nr_cpus > 0;
}

/* Read the whole segment. Returns 0 (in->end tells how reading ended) or -errno. */
static int info_load(struct info *in)
{
	const struct segment_index *idx = segment_reader_index(in->r);
	struct segment_record rec;
	int k;

	in->pages_skipped = skip_pages(in);
	segment_reader_skip_pages(in->r, in->pages_skipped);
	while ((k = segment_reader_next(in->r, &rec)) > 0) {
		k = info_record(in, &rec);
		if (k < 0)
			return k;
	}
	in->end = k;
	if (k < 0 && k != -EBADMSG)
		return k;
	/*
	 * The daemon's index is exact for an intact segment. A recovered one
	 * has lost its figures, and for a damaged one only the pages before
	 * the damage count: then the figures come from the pages read.
	 */
	in->scan = !idx || (idx->flags & SEGMENT_INDEX_F_TRUNCATED) || idx->nr_cpus == 0 || k < 0;
	if (in->scan) {
		for (size_t i = 0; i < in->n_cpus; i++)
			in->cpus[i].lost += in->cpus[i].write_lost;
	} else {
		for (uint32_t i = 0; i < idx->nr_cpus; i++) {
			const struct segment_cpu_index *x = &idx->cpus[i];
			struct cpu_stat *c = cpu_get(in, x->cpu);

			if (!c)
				return -ENOMEM;
			c->pages = x->pages;
			c->events = x->events;
			c->first_ts = x->first_ts;
			c->last_ts = x->last_ts;
			c->lost = x->lost_events;
			c->raw_bytes = x->bytes;
		}
	}
	if (in->n_cpus)
		qsort(in->cpus, in->n_cpus, sizeof(*in->cpus), cmp_cpu);
	return 0;
}

static const char *info_state(const struct info *in)
{
	if (in->end < 0 || in->bad_index_off)
		return "damaged";
	return segment_reader_complete(in->r) ? "complete" : "unfinished";
}

static void info_totals(const struct info *in, struct cpu_stat *t)
{
	*t = (struct cpu_stat){ 0 };
	for (size_t i = 0; i < in->n_cpus; i++) {
		const struct cpu_stat *c = &in->cpus[i];

		t->pages += c->pages;
		t->lost += c->lost;
		t->lost_unknown += c->lost_unknown;
		t->raw_bytes += c->raw_bytes;
		t->stored_bytes += c->stored_bytes;
		if (!c->events)
			continue;
		if (!t->events || c->first_ts < t->first_ts)
			t->first_ts = c->first_ts;
		if (!t->events || c->last_ts > t->last_ts)
			t->last_ts = c->last_ts;
		t->events += c->events;
	}
}

static const char *const meta_shown[][2] = {
	{ "producer", "producer" },
	{ "hostname", "hostname" },
	{ "kernel_release", "kernel" },
	{ "boot_id", "boot id" },
	{ "clock", "clock" },
	{ "page_size", "page size" },
	{ "nr_cpus", "CPUs" },
	{ "instance", "instance" },
	{ "stack_mode", "stack mode" },
	{ "segment_seq", "segment seq" },
};

/* The per-CPU table (t: the totals) and the notes. */
static void info_print_cpus(const struct info *in, const struct cpu_stat *t)
{
	bool counter = cmd_clock_is_counter(meta_get(in, "clock"));
	char a[32], b[32];

	printf("\n%5s %9s %11s %18s %18s %8s %13s %13s %6s\n", "CPU", "PAGES", "EVENTS", "FIRST",
	       "LAST", "LOST", "RAW BYTES", "STORED", "RATIO");
	for (size_t i = 0; i <= in->n_cpus; i++) {
		const struct cpu_stat *c = i < in->n_cpus ? &in->cpus[i] : t;
		char cpu[16];

		if (c != t && !c->pages && !c->events && !c->lost && !c->stored_bytes)
			continue;
		if (c == t)
			snprintf(cpu, sizeof(cpu), "all");
		else if (c->cpu == SEGMENT_NO_CPU)
			snprintf(cpu, sizeof(cpu), "-");
		else
			snprintf(cpu, sizeof(cpu), "%" PRIu32, c->cpu);
		printf("%5s %9" PRIu64 " %11" PRIu64 " %18s %18s %7" PRIu64 "%s %13" PRIu64
		       " %13" PRIu64, cpu, c->pages, c->events,
		       c->events ? fmt_ts(a, c->first_ts, counter) : "-",
		       c->events ? fmt_ts(b, c->last_ts, counter) : "-", c->lost, c->lost_unknown ? "+" : " ",
		       c->raw_bytes, c->stored_bytes);
		if (c->stored_bytes)
			printf(" %6.1f\n", (double)c->raw_bytes / (double)c->stored_bytes);
		else
			printf(" %6s\n", "-");
	}
	for (size_t i = 0; i < in->n_notes; i++) {
		printf("%snote:         ", i ? "" : "\n");
		print_text(stdout, in->notes[i].text, in->notes[i].len, "              ");
		printf("\n");
	}
	if (in->notes_left_out)
		printf("note:         %" PRIu64 " more notes not shown\n", in->notes_left_out);
}

static void info_print(const struct info *in)
{
	bool counter = cmd_clock_is_counter(meta_get(in, "clock"));
	const struct segment_index *idx = segment_reader_index(in->r);
	const char *opened = meta_get(in, "opened_usec");
	struct cpu_stat t;
	char a[32], b[32], capture[512];
	bool first = true;

	info_totals(in, &t);
	printf("segment:      %s\n", in->path);
	if (capture_describe(&in->meta, t.events ? t.last_ts - t.first_ts : 0, capture,
			     sizeof(capture)) > 0)
		printf("capture:      %s\n", capture);
	printf("state:        %s", info_state(in));
	if (idx && (idx->flags & SEGMENT_INDEX_F_TRUNCATED))
		printf(", recovered after an unclean stop (truncated)");
	if (idx && (idx->flags & SEGMENT_INDEX_F_FINAL))
		printf(", last of its recording");
	if (in->end < 0)
		printf("\ndamage:       offset %" PRIu64 ": %s; the figures below cover the %" PRIu64
		       " intact records before it", segment_reader_error_offset(in->r),
		       segment_reader_error(in->r), in->records);
	if (in->bad_index_off)
		printf("\ndamage:       offset %" PRIu64 ": malformed INDEX record", in->bad_index_off);
	printf("\nfile size:    %" PRIu64 " bytes, %" PRIu64 " records\n",
	       segment_reader_file_size(in->r), in->records);
	for (size_t i = 0; i < ARRAY_SIZE(meta_shown); i++) {
		const char *v = meta_get(in, meta_shown[i][0]);

		if (!v)
			continue;
		printf("%s:%*s", meta_shown[i][1], (int)(13 - strlen(meta_shown[i][1])), "");
		if (streq(meta_shown[i][0], "instance") && !*v)
			printf("(top level)");
		else
			print_text(stdout, v, strlen(v), "");
		printf("\n");
	}
	if (opened && meta_u64(in, "opened_usec", 0)) {
		time_t sec = (time_t)(meta_u64(in, "opened_usec", 0) / USEC_PER_SEC);
		struct tm tm;
		char buf[64];

		if (gmtime_r(&sec, &tm) && strftime(buf, sizeof(buf), "%Y-%m-%d %H:%M:%S UTC", &tm))
			printf("opened:       %s\n", buf);
	}
	if (t.events)
		printf("time span:    %s .. %s (%s %s)\n", fmt_ts(a, t.first_ts, counter),
		       fmt_ts(b, t.last_ts, counter),
		       fmt_ts((char[32]){ 0 }, t.last_ts - t.first_ts, counter),
		       counter ? "counts" : "s");
	else
		printf("time span:    (no events)\n");
	printf("events:       %" PRIu64 ", lost %" PRIu64 "%s\n", t.events, t.lost,
	       t.lost_unknown ? "+ (some pages lost an unknown number)" : "");
	if (idx && (idx->flags & SEGMENT_INDEX_F_TABLES_MISSING))
		printf("unresolved:   unknown: stack tables or symbols are missing (the end of the "
		       "segment could not be written; its NOTE says what is missing)\n");
	else if (idx && !(idx->flags & SEGMENT_INDEX_F_TRUNCATED))
		printf("unresolved:   %" PRIu64 " (events whose stack cannot be resolved or was lost)\n",
		       idx->unresolved);
	printf("stacks:       %" PRIu64 " entries in %" PRIu64 " STACKS records%s\n",
	       in->stack_entries, in->rec_count[SEGMENT_REC_STACKS],
	       in->bad_stacks ? " (some malformed)" : "");
	printf("generations:  %" PRIu64 " GENERATION records\n",
	       in->rec_count[SEGMENT_REC_GENERATION]);
	printf("records:     ");
	for (unsigned int type = SEGMENT_REC_META; type < SEGMENT_REC_MAX; type++) {
		printf("%s %s %" PRIu64, first ? "" : ",", segment_rec_type_name(type),
		       in->rec_count[type]);
		first = false;
	}
	if (in->rec_unknown)
		printf(", unknown %" PRIu64, in->rec_unknown);
	printf("\n");
	if (in->bad_pages)
		printf("warning:      %" PRIu64 " malformed pages were not counted\n", in->bad_pages);
	if (in->pages_skipped)
		printf("pages:        not read (the index has the figures; --pages reads them)\n");
	info_print_cpus(in, &t);
}

static void json_cpu_stat(struct json_writer *w, const struct cpu_stat *c)
{
	if (c->events) {
		json_add_uint(w, "first_ts", c->first_ts);
		json_add_uint(w, "last_ts", c->last_ts);
	} else {
		json_add_null(w, "first_ts");
		json_add_null(w, "last_ts");
	}
}

static void info_json_counts(struct json_writer *w, const struct info *in)
{
	json_object_open(w, "record_counts");
	for (unsigned int type = SEGMENT_REC_META; type < SEGMENT_REC_MAX; type++)
		json_add_uint(w, segment_rec_type_name(type), in->rec_count[type]);
	json_add_uint(w, "unknown", in->rec_unknown);
	json_object_close(w);
	json_array_open(w, "cpus");
	for (size_t i = 0; i < in->n_cpus; i++) {
		const struct cpu_stat *c = &in->cpus[i];

		json_object_open(w, NULL);
		json_add_uint(w, "cpu", c->cpu);
		json_add_uint(w, "pages", c->pages);
		json_add_uint(w, "events", c->events);
		json_cpu_stat(w, c);
		json_add_uint(w, "lost_events", c->lost);
		json_add_uint(w, "lost_unknown_pages", c->lost_unknown);
		json_add_uint(w, "raw_bytes", c->raw_bytes);
		json_add_uint(w, "stored_bytes", c->stored_bytes);
		json_object_close(w);
	}
	json_array_close(w);
	json_array_open(w, "notes");
	for (size_t i = 0; i < in->n_notes; i++)
		json_add_stringn(w, NULL, in->notes[i].text, in->notes[i].len);
	json_array_close(w);
	if (in->notes_left_out)
		json_add_uint(w, "notes_not_shown", in->notes_left_out);
}

static int info_print_json(const struct info *in)
{
	const struct segment_index *idx = segment_reader_index(in->r);
	struct json_writer w;
	struct cpu_stat t;

	info_totals(in, &t);
	json_writer_init(&w, SIZE_MAX);
	json_object_open(&w, NULL);
	json_add_string(&w, "path", in->path);
	json_add_string(&w, "state", info_state(in));
	json_add_bool(&w, "complete", idx);
	json_add_bool(&w, "truncated", idx && (idx->flags & SEGMENT_INDEX_F_TRUNCATED));
	json_add_bool(&w, "final", idx && (idx->flags & SEGMENT_INDEX_F_FINAL));
	json_add_bool(&w, "tables_missing", idx && (idx->flags & SEGMENT_INDEX_F_TABLES_MISSING));
	json_add_uint(&w, "file_size", segment_reader_file_size(in->r));
	json_add_uint(&w, "records", in->records);
	if (in->end < 0) {
		json_add_uint(&w, "error_offset", segment_reader_error_offset(in->r));
		json_add_string(&w, "error", segment_reader_error(in->r));
	} else if (in->bad_index_off) {
		json_add_uint(&w, "error_offset", in->bad_index_off);
		json_add_string(&w, "error", "malformed INDEX record");
	}
	json_object_open(&w, "meta");
	for (size_t i = 0; i < in->meta.n; i++)
		json_add_string(&w, in->meta.kv[i].key, in->meta.kv[i].value);
	json_object_close(&w);
	json_add_string(&w, "cpu_source", in->scan ? "pages" : "index");
	json_cpu_stat(&w, &t);
	if (cmd_clock_is_counter(meta_get(in, "clock"))) {
		json_add_null(&w, "duration_ns");
		json_add_uint(&w, "duration_counts", t.events ? t.last_ts - t.first_ts : 0);
	} else
		json_add_uint(&w, "duration_ns", t.events ? t.last_ts - t.first_ts : 0);
	json_add_uint(&w, "events", t.events);
	json_add_uint(&w, "lost_events", t.lost);
	json_add_uint(&w, "lost_unknown_pages", t.lost_unknown);
	if (idx && !(idx->flags & (SEGMENT_INDEX_F_TRUNCATED | SEGMENT_INDEX_F_TABLES_MISSING)))
		json_add_uint(&w, "unresolved", idx->unresolved);
	else
		json_add_null(&w, "unresolved");
	json_add_uint(&w, "stack_entries", in->stack_entries);
	json_add_uint(&w, "malformed_stacks_records", in->bad_stacks);
	if (in->bad_index_off)
		json_add_uint(&w, "malformed_index_offset", in->bad_index_off);
	json_add_uint(&w, "generation_records", in->rec_count[SEGMENT_REC_GENERATION]);
	if (in->pages_skipped)
		json_add_null(&w, "malformed_pages");
	else
		json_add_uint(&w, "malformed_pages", in->bad_pages);
	info_json_counts(&w, in);
	json_object_close(&w);
	return cmd_json_print(&w);
}

int info_segment(const char *path, bool json, bool read_pages)
{
	struct info in = { .path = path, .read_pages = read_pages };
	int k, ret = 0;

	assert(path);

	k = segment_reader_open(path, &in.r);
	if (k < 0) {
		if (cmd_segment_open_error(k))
			log_err("'%s': %s", path, cmd_segment_open_error(k));
		else
			log_errno(LOG_ERR, k, "cannot open '%s'", path);
		if (json) {
			struct json_writer w;

			json_writer_init(&w, SIZE_MAX);
			json_object_open(&w, NULL);
			json_add_string(&w, "path", path);
			json_add_string(&w, "state", cmd_segment_open_error(k) ? "damaged" : "unreadable");
			json_add_string(&w, "error", cmd_segment_open_error(k) ? cmd_segment_open_error(k) : strerror(-k));
			json_object_close(&w);
			(void)cmd_json_print(&w);
		}
		return 1;
	}
	k = info_load(&in);
	if (k >= 0 && in.scan && in.pages_skipped) {
		/* damaged after all: the figures come from the pages before the damage */
		info_done(&in);
		in = (struct info){ .path = path, .read_pages = true };
		k = segment_reader_open(path, &in.r);
		if (k >= 0)
			k = info_load(&in);
	}
	if (k < 0) {
		log_errno(LOG_ERR, k, "cannot read '%s'", path);
		ret = 1;
	} else {
		if (json)
			k = info_print_json(&in);
		else
			info_print(&in);
		if (k < 0)
			ret = 1;
		if (in.end < 0 || in.bad_index_off)
			ret = 1;
	}
	info_done(&in);
	return ret;
}
