/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Segments -> time-ordered events.
 *
 * A segment is read twice. The first pass (decoder_segment_load()) reads
 * every record for what events need before they can be printed: META, the
 * FILE records (formats, kallsyms, comms) and the stack table, which the
 * daemon may write after the pages that use it. It also counts each CPU's
 * PAGES records and per-CPU GENERATION boundaries.
 *
 * The second pass streams pages. Records of different CPUs interleave in
 * a segment in the order the CPUs' pages were read, so one sequential reader
 * feeds every CPU: records of CPUs other than the one that needs data are
 * queued for them. The queues are bounded (decoder_set_lookahead_limit());
 * when a CPU's next record is further away than that, the CPU gets a reader
 * of its own that skips the other CPUs' records.
 *
 * One cursor per CPU walks that CPU's pages with kbuffer and carries the
 * CPU's stream from one segment into the next; a heap merges the cursors by
 * timestamp. At most two consecutive segments are open: a cursor that
 * reaches the end of the newer one waits until every cursor has left the
 * older one, which is then closed.
 */
#include <endian.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>

#include <event-parse.h>
#include <kbuffer.h>

#include "decode.h"
#include "ksyms.h"
#include "segment.h"
#include "stacktab.h"
#include "util.h"

#define DEFAULT_LOOKAHEAD ((size_t)256 << 20)
#define MAX_ERRORS 16

/*
 * Zeroed room after each page buffer. libtraceevent reads fields at the
 * offsets a format names without checking them against the record size; a
 * __data_loc field can point up to 128 KiB past the start of a record.
 */
#define PAGE_SLACK (((size_t)128 << 10) + 64)

static void *mfree(void *p)
{
	free(p);
	return NULL;
}

struct meta_kv {
	char *key;
	char *value;
};

/* One item of a CPU's stream in a segment: a PAGES payload, or a strict boundary. */
struct item {
	struct item *next;
	uint64_t offset;	/* of its record */
	bool boundary;
	uint32_t generation;	/* boundary: the generation that starts */
	size_t len;
	uint8_t data[];
};

struct cpu_stream {
	uint32_t total;		/* items the first pass found */
	uint32_t read;		/* items read from the file so far (queued or handed out) */
	struct item *head, *tail;
	struct segment_reader *own;	/* private reader, after the lookahead limit was hit */
	uint32_t own_skip;	/* items the private reader must skip (read before it existed) */
};

struct decoder_segment {
	char *path;
	char *errors[MAX_ERRORS];
	size_t nr_errors;
	struct tep_handle *tep;
	struct ksyms *ks;
	struct stacktab *tab;
	struct meta_kv *meta;
	size_t nr_meta;
	unsigned int long_size;
	bool big_endian;
	size_t page_size;
	int stack_type[DECODED_STACK_MAX];	/* event type id of each stack kind, -1: none */
	struct tep_format_field *caller_field, *size_field, *id_field, *ref_field;
	uint64_t data_end;	/* records at or after this offset are not used */

	/* second pass */
	struct cpu_stream *cpus;	/* indexed by CPU */
	size_t nr_cpus;
	struct segment_reader *shared;
	bool shared_done;
	size_t queued;		/* payload bytes in all queues */
	unsigned int users;	/* cursors inside */
};

/* ---- first pass ---- */

_printf_(2, 3)
static void add_error(struct decoder_segment *s, const char *fmt, ...)
{
	va_list ap;
	char *m;

	if (s->nr_errors >= MAX_ERRORS)
		return;
	va_start(ap, fmt);
	if (vasprintf(&m, fmt, ap) >= 0)
		s->errors[s->nr_errors++] = m;
	va_end(ap);
}

const char *decoder_segment_error(const struct decoder_segment *s, size_t i)
{
	return i < s->nr_errors ? s->errors[i] : NULL;
}

struct stacktab *decoder_segment_stacktab(const struct decoder_segment *s)
{
	return s->tab;
}

struct tep_handle *decoder_segment_tep(const struct decoder_segment *s)
{
	return s->tep;
}

const char *decoder_segment_meta(const struct decoder_segment *s, const char *key)
{
	for (size_t i = 0; i < s->nr_meta; i++)
		if (streq(s->meta[i].key, key))
			return s->meta[i].value;
	return NULL;
}

static void item_free_list(struct item *it)
{
	while (it) {
		struct item *n = it->next;

		free(it);
		it = n;
	}
}

struct decoder_segment *decoder_segment_free(struct decoder_segment *s)
{
	if (!s)
		return NULL;
	for (size_t i = 0; i < s->nr_cpus; i++) {
		item_free_list(s->cpus[i].head);
		segment_reader_free(s->cpus[i].own);
	}
	free(s->cpus);
	segment_reader_free(s->shared);
	for (size_t i = 0; i < s->nr_meta; i++) {
		free(s->meta[i].key);
		free(s->meta[i].value);
	}
	free(s->meta);
	for (size_t i = 0; i < s->nr_errors; i++)
		free(s->errors[i]);
	if (s->tep)
		tep_free(s->tep);
	ksyms_free(s->ks);
	stacktab_free(s->tab);
	free(s->path);
	free(s);
	return NULL;
}

static void decoder_segment_freep(struct decoder_segment **s)
{
	decoder_segment_free(*s);
}

static void segment_reader_freep(struct segment_reader **r)
{
	segment_reader_free(*r);
}

static bool host_big_endian(void)
{
	return __BYTE_ORDER == __BIG_ENDIAN;
}

static int parse_meta(struct decoder_segment *s, const uint8_t *data, size_t len)
{
	const char *p = (const char *)data, *end = p + len;

	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p)), *eq;
		size_t l = nl ? (size_t)(nl - p) : (size_t)(end - p);
		struct meta_kv *n;

		eq = memchr(p, '=', l);
		if (eq) {
			n = realloc(s->meta, sizeof(*n) * (s->nr_meta + 1));
			if (!n)
				return -ENOMEM;
			s->meta = n;
			n[s->nr_meta].key = strndup(p, (size_t)(eq - p));
			n[s->nr_meta].value = strndup(eq + 1, l - (size_t)(eq - p) - 1);
			if (!n[s->nr_meta].key || !n[s->nr_meta].value) {
				free(n[s->nr_meta].key);
				free(n[s->nr_meta].value);
				return -ENOMEM;
			}
			s->nr_meta++;
		}
		p += l + 1;
	}
	return 0;
}

static bool meta_u64(const struct decoder_segment *s, const char *key, uint64_t *ret)
{
	const char *v = decoder_segment_meta(s, key);
	unsigned long long x;
	char *e;

	if (!v || !*v)
		return false;
	errno = 0;
	x = strtoull(v, &e, 10);
	if (errno || *e)
		return false;
	*ret = x;
	return true;
}

/* The traced machine's layout from META; host values (with a note) when missing. */
static void setup_layout(struct decoder_segment *s)
{
	const char *bo = decoder_segment_meta(s, "byte_order");
	uint64_t v;

	s->long_size = sizeof(long);
	if (meta_u64(s, "long_size", &v) && (v == 4 || v == 8))
		s->long_size = (unsigned int)v;
	else
		add_error(s, "'%s': META has no valid long_size, assuming %u", s->path, s->long_size);

	s->big_endian = host_big_endian();
	if (bo && (streq(bo, "little") || streq(bo, "big")))
		s->big_endian = streq(bo, "big");
	else
		add_error(s, "'%s': META has no valid byte_order, assuming the host's", s->path);

	s->page_size = 4096;
	if (meta_u64(s, "page_size", &v) && v >= 64 && v <= ((uint64_t)64 << 20))
		s->page_size = (size_t)v;
	else
		add_error(s, "'%s': META has no valid page_size, assuming 4096", s->path);

	tep_set_long_size(s->tep, (int)s->long_size);
	tep_set_page_size(s->tep, (int)s->page_size);
	tep_set_file_bigendian(s->tep, s->big_endian ? TEP_BIG_ENDIAN : TEP_LITTLE_ENDIAN);
	tep_set_local_bigendian(s->tep, host_big_endian() ? TEP_BIG_ENDIAN : TEP_LITTLE_ENDIAN);
}

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
				(void)tep_register_comm(tep, comm + 1, (int)pid);
		}
		p += l + 1;
	}
}

static int load_file(struct decoder_segment *s, const struct segment_record *rec)
{
	const char *name = (const char *)rec->data;
	const uint8_t *nul = memchr(rec->data, 0, rec->len);
	const char *content;
	size_t len;
	char *text;

	if (!nul) {
		add_error(s, "'%s': malformed FILE record at offset %" PRIu64, s->path, rec->offset);
		return 0;
	}
	content = (const char *)nul + 1;
	len = rec->len - (size_t)(nul + 1 - rec->data);

	/* "events/header_page" is the tracefs path; accept it as well as the documented name. */
	if (streq(name, "header_page") || streq(name, "events/header_page")) {
		(void)tep_parse_header_page(s->tep, (char *)content, len, (int)s->long_size);
	} else if (startswith(name, "events/")) {
		const char *sys = name + strlen("events/"), *slash = strchr(sys, '/');
		char sysname[128];

		if (!slash || (size_t)(slash - sys) >= sizeof(sysname) || !strstr(slash, "/format"))
			return 0;
		memcpy(sysname, sys, (size_t)(slash - sys));
		sysname[slash - sys] = 0;
		/* An event libtraceevent cannot parse prints as unknown; the rest still decode. */
		(void)tep_parse_event(s->tep, content, len, sysname);
	} else if (streq(name, "kallsyms") || streq(name, "printk_formats")) {
		text = strndup(content, len);
		if (!text)
			return -ENOMEM;
		if (streq(name, "printk_formats")) {
			(void)tep_parse_printk_formats(s->tep, text);
		} else {
			(void)tep_parse_kallsyms(s->tep, text);
			if (!s->ks && ksyms_parse(content, len, &s->ks) < 0)
				s->ks = NULL;
		}
		free(text);
	} else if (streq(name, "saved_cmdlines")) {
		parse_cmdlines(s->tep, content, len);
	}
	/* saved_tgids, header_event, config: nothing to print events with. */
	return 0;
}

static int cpu_streams(struct decoder_segment *s, uint32_t cpu, struct cpu_stream **ret)
{
	if (cpu >= STACKTAB_MAX_CPUS)
		return -EINVAL;
	if (cpu >= s->nr_cpus) {
		struct cpu_stream *n = realloc(s->cpus, sizeof(*n) * (cpu + 1));

		if (!n)
			return -ENOMEM;
		memset(n + s->nr_cpus, 0, sizeof(*n) * (cpu + 1 - s->nr_cpus));
		s->cpus = n;
		s->nr_cpus = cpu + 1;
	}
	*ret = &s->cpus[cpu];
	return 0;
}

static int load_record(struct decoder_segment *s, const struct segment_record *rec)
{
	struct segment_generation g;
	struct cpu_stream *cs;
	int r;

	switch (rec->type) {
	case SEGMENT_REC_FILE:
		return load_file(s, rec);
	case SEGMENT_REC_STACKS:
		r = stacktab_add_stacks(s->tab, rec->data, rec->len);
		if (r == -EBADMSG)
			add_error(s, "'%s': malformed STACKS record at offset %" PRIu64, s->path,
				  rec->offset);
		return r == -ENOMEM ? r : 0;
	case SEGMENT_REC_GENERATION:
		if (segment_generation_decode(rec->data, rec->len, &g) < 0) {
			add_error(s, "'%s': malformed GENERATION record at offset %" PRIu64, s->path,
				  rec->offset);
			return 0;
		}
		r = stacktab_add_generation(s->tab, rec->cpu, &g);
		if (r == -ENOMEM)
			return r;
		if (r < 0 || rec->cpu == SEGMENT_NO_CPU)
			return 0;
		break;
	case SEGMENT_REC_PAGES:
		break;
	default:
		return 0;
	}

	r = cpu_streams(s, rec->cpu, &cs);
	if (r == -EINVAL) {
		add_error(s, "'%s': record at offset %" PRIu64 " names CPU %" PRIu32 ", ignored",
			  s->path, rec->offset, rec->cpu);
		return 0;
	}
	if (r < 0)
		return r;
	cs->total++;
	return 0;
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
	_cleanup_(decoder_segment_freep) struct decoder_segment *s = NULL;
	_cleanup_(segment_reader_freep) struct segment_reader *rd = NULL;
	bool seen_meta = false, clean_end = false;
	int r;

	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->path = strdup(path);
	s->tab = stacktab_new();
	s->tep = tep_alloc();
	if (!s->path || !s->tab || !s->tep)
		return -ENOMEM;

	r = segment_reader_open(path, &rd);
	if (r < 0) {
		if (ret_error && asprintf(ret_error, "'%s': %s", path, open_error_text(r)) < 0)
			*ret_error = NULL;
		return r;
	}

	for (;;) {
		struct segment_record rec;

		r = segment_reader_next(rd, &rec);
		if (r == 0) {
			s->data_end = segment_reader_good_offset(rd);
			clean_end = true;
			break;
		}
		if (r == -ENOMEM)
			return r;
		if (r < 0) {
			s->data_end = segment_reader_error_offset(rd);
			if (r == -EBADMSG)
				add_error(s, "'%s': damaged at offset %" PRIu64 ": %s; the data after it is lost",
					  path, s->data_end, segment_reader_error(rd));
			else
				add_error(s, "'%s': read error at offset %" PRIu64 ": %s", path,
					  s->data_end, strerror(-r));
			break;
		}
		if (!seen_meta) {
			if (rec.type != SEGMENT_REC_META) {
				if (ret_error && asprintf(ret_error, "'%s': first record is not META",
							  path) < 0)
					*ret_error = NULL;
				return -EBADMSG;
			}
			r = parse_meta(s, rec.data, rec.len);
			if (r < 0)
				return r;
			setup_layout(s);
			seen_meta = true;
			continue;
		}
		r = load_record(s, &rec);
		if (r < 0)
			return r;
	}
	if (!seen_meta) {
		if (ret_error && asprintf(ret_error, "'%s': no META record", path) < 0)
			*ret_error = NULL;
		return -EBADMSG;
	}

	if (clean_end) {
		const struct segment_index *idx = segment_reader_index(rd);

		if (!segment_reader_complete(rd))
			add_error(s, "'%s': incomplete (no trailer): the data ends at offset %" PRIu64,
				  path, s->data_end);
		else if (idx && (idx->flags & SEGMENT_INDEX_F_TRUNCATED))
			add_error(s, "'%s': recovered after a crash: its data ends early", path);
	}

	find_stack_event(s, DECODED_KERNEL_STACK, "kernel_stack_event_id", "ftrace", "kernel_stack");
	find_stack_event(s, DECODED_STACK_ID, "stack_id_event_id", "ftrace", "stack_id");
	find_stack_event(s, DECODED_STACK_REF, "stack_ref_event_id", "stackmapd", "stack_ref");

	*ret = steal_ptr(s);
	return 0;
}

int decoder_segment_symbolize(const struct decoder_segment *s, uint64_t addr, bool with_offset,
			      char *buf, size_t len)
{
	const char *name = NULL;
	int n;

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

static bool is_stream_record(const struct decoder_segment *s, const struct segment_record *rec)
{
	struct segment_generation g;

	if (rec->offset >= s->data_end || rec->cpu >= s->nr_cpus)
		return false;
	if (rec->type == SEGMENT_REC_PAGES)
		return true;
	/* Exactly what the first pass counted: per-CPU boundaries that decode. */
	return rec->type == SEGMENT_REC_GENERATION && rec->cpu != SEGMENT_NO_CPU &&
	       segment_generation_decode(rec->data, rec->len, &g) == 0;
}

static struct item *item_new(const struct segment_record *rec)
{
	struct segment_generation g;
	bool boundary = rec->type == SEGMENT_REC_GENERATION;
	struct item *it = malloc(sizeof(*it) + (boundary ? 0 : rec->len));

	if (!it)
		return NULL;
	*it = (struct item){ .offset = rec->offset, .boundary = boundary };
	if (boundary) {
		(void)segment_generation_decode(rec->data, rec->len, &g);
		it->generation = g.generation;
	} else {
		memcpy(it->data, rec->data, rec->len);
		it->len = rec->len;
	}
	return it;
}

/* The CPU's private reader: its own records only, after the ones read before it existed. */
static int own_next(struct decoder_segment *s, unsigned int cpu, struct item **ret)
{
	struct cpu_stream *cs = &s->cpus[cpu];
	struct segment_record rec;
	int r;

	for (;;) {
		r = segment_reader_next(cs->own, &rec);
		if (r == -ENOMEM)
			return r;
		if (r <= 0 || rec.offset >= s->data_end) {
			cs->read = cs->total;
			cs->own = segment_reader_free(cs->own);
			return 0;
		}
		if (rec.cpu != cpu || !is_stream_record(s, &rec))
			continue;
		if (cs->own_skip) {
			cs->own_skip--;
			continue;
		}
		*ret = item_new(&rec);
		if (!*ret)
			return -ENOMEM;
		cs->read++;
		return 1;
	}
}

/* Next item of cpu in segment s: 1 (*ret owned by the caller), 0 none left, -ENOMEM. */
static int stream_next(struct decoder_segment *s, unsigned int cpu, size_t lookahead,
		       struct item **ret)
{
	struct segment_record rec;
	struct cpu_stream *cs;
	int r;

	if (!s || cpu >= s->nr_cpus)
		return 0;
	cs = &s->cpus[cpu];
	if (cs->head) {
		struct item *it = cs->head;

		cs->head = it->next;
		if (!cs->head)
			cs->tail = NULL;
		s->queued -= it->len;
		*ret = it;
		return 1;
	}
	if (cs->read >= cs->total)
		return 0;
	if (cs->own)
		return own_next(s, cpu, ret);
	if (s->shared_done)
		return 0;
	if (!s->shared) {
		r = segment_reader_open(s->path, &s->shared);
		if (r < 0) {
			add_error(s, "'%s': cannot open again: %s", s->path, strerror(-r));
			s->shared_done = true;
			return r == -ENOMEM ? r : 0;
		}
	}

	for (;;) {
		struct cpu_stream *other;
		struct item *it;

		r = segment_reader_next(s->shared, &rec);
		if (r == -ENOMEM)
			return r;
		if (r <= 0 || rec.offset >= s->data_end) {
			s->shared_done = true;
			s->shared = segment_reader_free(s->shared);
			return 0;
		}
		if (!is_stream_record(s, &rec))
			continue;
		other = &s->cpus[rec.cpu];
		if (other->own)
			continue;
		it = item_new(&rec);
		if (!it)
			return -ENOMEM;
		other->read++;
		if (rec.cpu == cpu) {
			*ret = it;
			return 1;
		}
		if (other->tail)
			other->tail->next = it;
		else
			other->head = it;
		other->tail = it;
		s->queued += it->len;
		if (s->queued > lookahead) {
			/* Stop queueing for others: this CPU reads its records on its own. */
			r = segment_reader_open(s->path, &cs->own);
			if (r < 0) {
				add_error(s, "'%s': cannot open again: %s", s->path, strerror(-r));
				cs->read = cs->total;
				return r == -ENOMEM ? r : 0;
			}
			cs->own_skip = cs->read;
			return own_next(s, cpu, ret);
		}
	}
}

/* ---- cursors and the merge ---- */

enum cursor_state {
	CURSOR_IN,	/* reading its segment */
	CURSOR_PARKED,	/* at the end of the newer open segment, waiting for the older to close */
	CURSOR_DONE,
};

struct cursor {
	unsigned int cpu;
	size_t seg;
	enum cursor_state state;
	struct item *item;	/* the PAGES payload being read */
	size_t pos;		/* next page in it */
	uint8_t *page;		/* page_size + PAGE_SLACK bytes, zero after page_dirty */
	size_t page_cap, page_dirty, page_len;
	bool page_loaded;
	struct kbuffer *kbuf;

	bool has_head;		/* the next event of this CPU: */
	void *data;
	int size;
	unsigned long long ts;
	long long lost;		/* events lost before it */

	uint64_t lost_total;
	struct tep_event *owner;
	uint64_t *ips;
	size_t ips_cap;
};

struct seg_slot {
	const char *path;
	struct decoder_segment *s;	/* NULL until opened, after closing, or if unreadable */
	int open_error;
	char *open_message;
	unsigned int users;		/* cursors inside */
	bool opened;
};

struct msg {
	int code;
	char *text;
};

struct decoder {
	struct seg_slot *segs;
	size_t nr_segs;
	size_t cur;			/* oldest segment not closed */
	struct cursor **cursors;	/* by CPU, NULL if none */
	size_t nr_cursors;
	struct cursor **heap;		/* cursors with a head, min-heap on (ts, cpu) */
	size_t heap_len;
	struct cursor **pending;	/* cursors that need their next event read */
	size_t nr_pending;
	struct cursor *last;		/* whose event decoder_next() returned last */
	struct msg *msgs;		/* problems to report, oldest first */
	size_t nr_msgs, first_msg;
	char *error;
	struct tep_record record;
	struct stacktab_stats stats;	/* of closed segments */
	size_t lookahead;
};

int decoder_open(const char *const *paths, size_t n, struct decoder **ret)
{
	struct decoder *d;

	if (n == 0)
		return -EINVAL;
	d = calloc(1, sizeof(*d));
	if (!d)
		return -ENOMEM;
	d->segs = calloc(n, sizeof(*d->segs));
	if (!d->segs) {
		free(d);
		return -ENOMEM;
	}
	for (size_t i = 0; i < n; i++)
		d->segs[i].path = paths[i];
	d->nr_segs = n;
	d->lookahead = DEFAULT_LOOKAHEAD;
	*ret = d;
	return 0;
}

void decoder_set_lookahead_limit(struct decoder *d, size_t bytes)
{
	d->lookahead = bytes;
}

const char *decoder_error(const struct decoder *d)
{
	return d->error;
}

uint64_t decoder_lost_events(const struct decoder *d, unsigned int cpu)
{
	return cpu < d->nr_cursors && d->cursors[cpu] ? d->cursors[cpu]->lost_total : 0;
}

static void add_stats(struct stacktab_stats *to, const struct stacktab *t)
{
	struct stacktab_stats st;

	stacktab_get_stats(t, &st);
	for (int k = 0; k < STACKTAB_KIND_MAX; k++) {
		to->resolved[k] += st.resolved[k];
		to->unresolved[k] += st.unresolved[k];
	}
}

void decoder_get_stats(const struct decoder *d, struct stacktab_stats *ret)
{
	*ret = d->stats;
	for (size_t i = d->cur; i < d->nr_segs; i++)
		if (d->segs[i].s)
			add_stats(ret, d->segs[i].s->tab);
}

static int push_msg(struct decoder *d, int code, char *text)
{
	struct msg *n;

	if (!text)
		return -ENOMEM;
	n = realloc(d->msgs, sizeof(*n) * (d->nr_msgs + 1));
	if (!n) {
		free(text);
		return -ENOMEM;
	}
	d->msgs = n;
	n[d->nr_msgs++] = (struct msg){ code, text };
	return 0;
}

static bool cursor_before(const struct cursor *a, const struct cursor *b)
{
	return a->ts < b->ts || (a->ts == b->ts && a->cpu < b->cpu);
}

static void heap_down(struct decoder *d, size_t i)
{
	for (;;) {
		size_t l = 2 * i + 1, m = i;
		struct cursor *t;

		if (l < d->heap_len && cursor_before(d->heap[l], d->heap[m]))
			m = l;
		if (l + 1 < d->heap_len && cursor_before(d->heap[l + 1], d->heap[m]))
			m = l + 1;
		if (m == i)
			return;
		t = d->heap[i];
		d->heap[i] = d->heap[m];
		d->heap[m] = t;
		i = m;
	}
}

static void heap_push(struct decoder *d, struct cursor *c)
{
	size_t i = d->heap_len++;

	d->heap[i] = c;
	while (i > 0 && cursor_before(d->heap[i], d->heap[(i - 1) / 2])) {
		struct cursor *t = d->heap[i];

		d->heap[i] = d->heap[(i - 1) / 2];
		d->heap[(i - 1) / 2] = t;
		i = (i - 1) / 2;
	}
}

static void heap_pop(struct decoder *d)
{
	d->heap[0] = d->heap[--d->heap_len];
	heap_down(d, 0);
}

static struct cursor *cursor_free(struct cursor *c)
{
	if (!c)
		return NULL;
	free(c->item);
	free(c->page);
	if (c->kbuf)
		kbuffer_free(c->kbuf);
	free(c->ips);
	free(c);
	return NULL;
}

/* Prepare c to read pages of s (long size and byte order may differ between segments). */
static int cursor_setup(struct cursor *c, const struct decoder_segment *s)
{
	size_t need = s->page_size + PAGE_SLACK;

	if (c->kbuf)
		kbuffer_free(c->kbuf);
	c->kbuf = kbuffer_alloc(s->long_size == 8 ? KBUFFER_LSIZE_8 : KBUFFER_LSIZE_4,
				s->big_endian ? KBUFFER_ENDIAN_BIG : KBUFFER_ENDIAN_LITTLE);
	if (!c->kbuf)
		return -ENOMEM;
	if (tep_is_old_format(s->tep))
		kbuffer_set_old_format(c->kbuf);
	if (c->page_cap < need) {
		free(c->page);
		c->page = calloc(1, need);
		if (!c->page)
			return -ENOMEM;
		c->page_cap = need;
		c->page_dirty = 0;
	}
	c->page_loaded = false;
	c->owner = NULL;
	return 0;
}

static int add_pending(struct decoder *d, struct cursor *c)
{
	struct cursor **n = realloc(d->pending, sizeof(*n) * (d->nr_pending + 1));

	if (!n)
		return -ENOMEM;
	d->pending = n;
	d->pending[d->nr_pending++] = c;
	return 0;
}

/* Read segment k's tables; give every CPU it has data for and that has no cursor yet one. */
static int slot_open(struct decoder *d, size_t k)
{
	struct seg_slot *slot = &d->segs[k];
	struct decoder_segment *s;
	int r;

	if (slot->opened)
		return 0;
	slot->opened = true;
	r = decoder_segment_load(slot->path, &slot->s, &slot->open_message);
	if (r == -ENOMEM)
		return r;
	if (r < 0) {
		slot->open_error = r;
		return 0;
	}
	s = slot->s;
	for (unsigned int cpu = 0; cpu < s->nr_cpus; cpu++) {
		struct cursor *c;

		if (!s->cpus[cpu].total || (cpu < d->nr_cursors && d->cursors[cpu]))
			continue;
		if (cpu >= d->nr_cursors) {
			struct cursor **n = realloc(d->cursors, sizeof(*n) * (cpu + 1));

			if (!n)
				return -ENOMEM;
			memset(n + d->nr_cursors, 0, sizeof(*n) * (cpu + 1 - d->nr_cursors));
			d->cursors = n;
			n = realloc(d->heap, sizeof(*n) * (cpu + 1));
			if (!n)
				return -ENOMEM;
			d->heap = n;
			d->nr_cursors = cpu + 1;
		}
		c = calloc(1, sizeof(*c));
		if (!c)
			return -ENOMEM;
		d->cursors[cpu] = c;
		c->cpu = cpu;
		c->seg = k;
		c->state = CURSOR_IN;
		slot->users++;
		r = cursor_setup(c, s);
		if (r < 0)
			return r;
		r = add_pending(d, c);
		if (r < 0)
			return r;
	}
	return 0;
}

static int slot_close(struct decoder *d, size_t k)
{
	struct seg_slot *slot = &d->segs[k];
	int r = 0;

	if (slot->open_error) {
		if (!slot->open_message && asprintf(&slot->open_message, "'%s': %s", slot->path,
						    strerror(-slot->open_error)) < 0)
			slot->open_message = NULL;
		r = push_msg(d, slot->open_error, steal_ptr(slot->open_message));
	}
	if (slot->s) {
		for (size_t i = 0; r >= 0 && i < slot->s->nr_errors; i++)
			r = push_msg(d, -EBADMSG, steal_ptr(slot->s->errors[i]));
		add_stats(&d->stats, slot->s->tab);
		slot->s = decoder_segment_free(slot->s);
	}
	return r;
}

static int cursor_enter(struct decoder *d, struct cursor *c, size_t k)
{
	int r;

	r = slot_open(d, k);
	if (r < 0)
		return r;
	c->seg = k;
	c->state = CURSOR_IN;
	d->segs[k].users++;
	if (d->segs[k].s) {
		r = cursor_setup(c, d->segs[k].s);
		if (r < 0)
			return r;
	}
	return 1;
}

/* c has read all of its segment: go on into the next one, or wait, or stop. */
static int cursor_leave(struct decoder *d, struct cursor *c)
{
	d->segs[c->seg].users--;
	c->owner = NULL;
	if (c->seg + 1 >= d->nr_segs) {
		c->state = CURSOR_DONE;
		return 0;
	}
	if (c->seg > d->cur) {
		c->state = CURSOR_PARKED;
		return 0;
	}
	return cursor_enter(d, c, c->seg + 1);
}

/* Copy the next page of the current payload into the page buffer and load it. */
static int cursor_load_page(struct cursor *c, const struct decoder_segment *s)
{
	const uint8_t *p;
	int len, missed;

	if (!c->item || c->pos >= c->item->len)
		return 0;
	p = c->item->data + c->pos;
	len = segment_page_len(p, c->item->len - c->pos, s->long_size, s->big_endian,
			       s->page_size);
	if (len < 0)
		return -EBADMSG;
	memcpy(c->page, p, (size_t)len);
	if (c->page_dirty > (size_t)len)
		memset(c->page + len, 0, c->page_dirty - (size_t)len);
	c->page_dirty = c->page_len = (size_t)len;
	c->pos += (size_t)len;
	if (kbuffer_load_subbuffer(c->kbuf, c->page) < 0)
		return -EBADMSG;
	c->page_loaded = true;
	missed = kbuffer_missed_events(c->kbuf);
	if (missed) {
		c->lost = (missed < 0 || c->lost < 0) ? -1 : c->lost + missed;
		if (missed > 0)
			c->lost_total += (uint64_t)missed;
	}
	return 1;
}

/* Find c's next event: afterwards c has a head, or is parked or done. 0 or -ENOMEM. */
static int cursor_next(struct decoder *d, struct cursor *c)
{
	unsigned long long ts = 0;
	void *data = NULL;
	int r;

	c->has_head = false;
	if (c->page_loaded)
		data = kbuffer_next_event(c->kbuf, &ts);
	for (;;) {
		struct decoder_segment *s = d->segs[c->seg].s;
		struct item *it;

		if (data) {
			size_t off = (size_t)((uint8_t *)data - c->page);
			int size = kbuffer_event_size(c->kbuf);

			if (size >= 0 && off + (size_t)size <= c->page_len) {
				c->data = data;
				c->size = size;
				c->ts = ts;
				c->has_head = true;
				return 0;
			}
			r = -EBADMSG;
		} else
			r = cursor_load_page(c, s);
		if (r > 0) {
			data = kbuffer_read_event(c->kbuf, &ts);
			continue;
		}
		data = NULL;
		c->page_loaded = false;
		if (r < 0) {
			add_error(s, "'%s': CPU %u: malformed page in the record at offset %" PRIu64
				  ", the rest of that record is skipped", s->path, c->cpu,
				  c->item->offset);
			c->pos = c->item->len;
			c->owner = NULL;
			continue;
		}

		c->item = mfree(c->item);
		r = stream_next(s, c->cpu, d->lookahead, &it);
		if (r < 0)
			return r;
		if (r > 0 && it->boundary) {
			r = stacktab_cpu_boundary(s->tab, c->cpu, it->generation);
			free(it);
			if (r == -ENOMEM)
				return r;
			continue;
		}
		if (r > 0) {
			c->item = it;
			c->pos = 0;
			continue;
		}
		r = cursor_leave(d, c);
		if (r <= 0)
			return r;
	}
}

/* Close the oldest segment once no cursor is inside; let waiting cursors go on. */
static int advance_window(struct decoder *d)
{
	int r;

	while (d->cur < d->nr_segs) {
		r = slot_open(d, d->cur);
		if (r < 0)
			return r;
		if (d->segs[d->cur].users > 0)
			return 0;
		r = slot_close(d, d->cur);
		if (r < 0)
			return r;
		d->cur++;
		for (size_t i = 0; i < d->nr_cursors; i++) {
			struct cursor *c = d->cursors[i];

			if (!c || c->state != CURSOR_PARKED)
				continue;
			r = cursor_enter(d, c, c->seg + 1);
			if (r < 0)
				return r;
			r = add_pending(d, c);
			if (r < 0)
				return r;
		}
	}
	return 0;
}

static int read_callers(const struct decoder_segment *s, struct cursor *c,
			struct decoded_event *ev)
{
	const uint8_t *base = c->data;
	size_t avail = 0, n;
	unsigned long long v;
	uint64_t term = s->long_size == 8 ? UINT64_MAX : UINT32_MAX;

	if (!s->caller_field) {
		ev->unresolved_reason = "no format for kernel_stack";
		return 0;
	}
	if ((size_t)c->size > (size_t)s->caller_field->offset)
		avail = ((size_t)c->size - (size_t)s->caller_field->offset) / s->long_size;
	if (s->size_field && tep_read_number_field(s->size_field, c->data, &v) == 0 && v > 0 &&
	    v < avail)
		avail = (size_t)v;
	avail = MIN(avail, (size_t)UINT16_MAX);
	if (avail > c->ips_cap) {
		uint64_t *ips = realloc(c->ips, sizeof(*ips) * avail);

		if (!ips)
			return -ENOMEM;
		c->ips = ips;
		c->ips_cap = avail;
	}
	for (n = 0; n < avail; n++) {
		v = tep_read_number(s->tep, base + s->caller_field->offset + n * s->long_size,
				    (int)s->long_size);
		if (v == 0 || v == term)
			break;
		c->ips[n] = v;
	}
	ev->resolved = true;
	ev->nr = (uint16_t)n;
	ev->ips = c->ips;
	return 0;
}

static void resolve_ref(struct decoder_segment *s, const struct cursor *c,
			struct decoded_event *ev)
{
	struct tep_format_field *field = ev->kind == DECODED_STACK_ID ? s->id_field : s->ref_field;
	const struct stack_entry *e;
	unsigned long long v;
	const char *why;

	if (!field || tep_read_number_field(field, c->data, &v) < 0) {
		ev->unresolved_reason = "no format for the stack entry";
		return;
	}
	ev->stack_id = (uint32_t)v;
	if (stacktab_resolve(s->tab, c->cpu, c->ts,
			     ev->kind == DECODED_STACK_ID ? STACKTAB_KERNEL_ID : STACKTAB_DAEMON_REF,
			     ev->stack_id, &e, &why) > 0) {
		ev->resolved = true;
		ev->nr = e->nr;
		ev->text = e->flags & SEGMENT_STACK_F_TEXT;
		ev->ips = e->ips;
		ev->frames = e->text;
	} else
		ev->unresolved_reason = why;
}

static int fill_event(struct decoder *d, struct cursor *c, struct decoded_event *ev)
{
	struct decoder_segment *s = d->segs[c->seg].s;
	int type;

	d->record = (struct tep_record){
		.ts = c->ts, .cpu = (int)c->cpu, .data = c->data, .size = c->size,
		.record_size = c->size, .missed_events = c->lost, .locked = 1,
	};
	*ev = (struct decoded_event){
		.cpu = c->cpu, .ts = c->ts, .segment = s->path, .seg = s, .tep = s->tep,
		.record = &d->record, .lost_before = c->lost,
	};
	if (c->lost)
		c->owner = NULL;
	c->lost = 0;

	type = tep_data_type(s->tep, &d->record);
	ev->event = tep_find_event(s->tep, type);
	for (int k = DECODED_KERNEL_STACK; k < DECODED_STACK_MAX; k++)
		if (type == s->stack_type[k])
			ev->kind = (enum decoded_stack)k;
	if (ev->kind == DECODED_NOT_STACK) {
		c->owner = ev->event;
		return 0;
	}
	ev->is_stack = true;
	ev->owner = c->owner;
	if (ev->kind == DECODED_KERNEL_STACK)
		return read_callers(s, c, ev);
	resolve_ref(s, c, ev);
	return 0;
}

int decoder_next(struct decoder *d, struct decoded_event *ev)
{
	int r;

	d->error = mfree(d->error);
	if (d->last) {
		struct cursor *c = d->last;

		/* The previous event's data lived in c's page: only now may c move on. */
		d->last = NULL;
		r = cursor_next(d, c);
		if (r < 0)
			return r;
		if (c->has_head)
			heap_down(d, 0);
		else
			heap_pop(d);
	}
	for (;;) {
		if (d->first_msg < d->nr_msgs) {
			struct msg *m = &d->msgs[d->first_msg++];

			d->error = steal_ptr(m->text);
			return m->code;
		}
		if (d->nr_pending) {
			struct cursor *c = d->pending[--d->nr_pending];

			r = cursor_next(d, c);
			if (r < 0)
				return r;
			if (c->has_head)
				heap_push(d, c);
			continue;
		}
		r = advance_window(d);
		if (r < 0)
			return r;
		if (d->first_msg < d->nr_msgs || d->nr_pending)
			continue;
		if (!d->heap_len)
			return 0;
		break;
	}
	r = fill_event(d, d->heap[0], ev);
	if (r < 0)
		return r;
	d->last = d->heap[0];
	return 1;
}

struct decoder *decoder_free(struct decoder *d)
{
	if (!d)
		return NULL;
	for (size_t i = 0; i < d->nr_cursors; i++)
		cursor_free(d->cursors[i]);
	free(d->cursors);
	for (size_t i = 0; i < d->nr_segs; i++) {
		decoder_segment_free(d->segs[i].s);
		free(d->segs[i].open_message);
	}
	free(d->segs);
	for (size_t i = d->first_msg; i < d->nr_msgs; i++)
		free(d->msgs[i].text);
	free(d->msgs);
	free(d->heap);
	free(d->pending);
	free(d->error);
	free(d);
	return NULL;
}
