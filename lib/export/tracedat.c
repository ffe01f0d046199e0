/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * trace.dat v6 writer (tracedat.h). Layout facts used here, from
 * trace-cmd.dat.v6(5) and the kernel's header_page/header_event files:
 * a page is a u64 timestamp, a 64-bit commit (bytes of event data) and
 * the events; an event is a 32-bit header (type_len: low 5 bits,
 * time_delta: high 27 bits) followed by its data, 4-byte aligned:
 * type_len 1..28 gives the data length in words; 0 means the next word is
 * the length (data + that word) for larger events; 30 is a time extend
 * whose next word holds the delta bits above the 27. The first event of a
 * page is relative to the page timestamp.
 */
#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "page-walk.h"
#include "tracedat.h"

#define PAGE_HDR 16			/* timestamp + commit (64-bit kernels) */
#define TYPE_LEN_MAX_DATA 28
#define TYPE_TIME_EXTEND 30
#define DELTA_BITS 27

/* The kernel's events/header_event text (the same on every kernel since 2.6.31). */
static const char header_event[] =
	"# compressed entry header\n"
	"\ttype_len    :    5 bits\n"
	"\ttime_delta  :   27 bits\n"
	"\tarray       :   32 bits\n"
	"\n"
	"\tpadding     : type == 29\n"
	"\ttime_extend : type == 30\n"
	"\ttime_stamp : type == 31\n"
	"\tdata max type_len  == 28\n";

/* The kernel's ftrace kernel_stack format, with the id filled in. */
static const char kernel_stack_format[] =
	"name: kernel_stack\n"
	"ID: %d\n"
	"format:\n"
	FTRACE_COMMON_FIELDS_FORMAT
	"\n"
	"\tfield:int size;\toffset:8;\tsize:4;\tsigned:1;\n"
	"\tfield:unsigned long caller[8];\toffset:16;\tsize:64;\tsigned:0;\n"
	"\n"
	"print fmt: \"\\t=> %%ps\\n\\t=> %%ps\\n\\t=> %%ps\\n\" \"\\t=> %%ps\\n\\t=> %%ps\\n\\t=> "
	"%%ps\\n\" \"\\t=> %%ps\\n\\t=> %%ps\\n\", (void *)REC->caller[0], (void *)REC->caller[1], "
	"(void *)REC->caller[2], (void *)REC->caller[3], (void *)REC->caller[4], (void "
	"*)REC->caller[5], (void *)REC->caller[6], (void *)REC->caller[7]\n";

struct format {
	char *system;
	char *text;
	int id;				/* "ID:" line, -1 if none */
};

struct cpu_pages {
	struct buf data;		/* whole pages */
	size_t page;			/* offset of the page being filled */
	size_t used;			/* bytes used in it, header included; 0: no page */
	uint64_t last_ts;		/* of the last event in it */
};

struct tracedat {
	char *header_page, *kallsyms, *printk, *cmdlines;
	unsigned int page_size, nr_cpus;
	struct format *formats;
	size_t nr_formats, cap_formats;
	int stack_id;			/* kernel_stack's event id, -1 until known */
	struct cpu_pages *cpus;
};

struct tracedat *tracedat_free(struct tracedat *t)
{
	if (!t)
		return NULL;
	free(t->header_page);
	free(t->kallsyms);
	free(t->printk);
	free(t->cmdlines);
	for (size_t i = 0; i < t->nr_formats; i++) {
		free(t->formats[i].system);
		free(t->formats[i].text);
	}
	free(t->formats);
	for (unsigned int i = 0; t->cpus && i < t->nr_cpus; i++)
		buf_done(&t->cpus[i].data);
	free(t->cpus);
	free(t);
	return NULL;
}

static int dup_opt(const char *s, char **ret)
{
	*ret = strdup(s ?: "");
	return *ret ? 0 : -ENOMEM;
}

int tracedat_new(const struct tracedat_info *info, struct tracedat **ret)
{
	_cleanup_(tracedat_freep) struct tracedat *t = NULL;
	int r;

	assert(info);
	assert(ret);

	if (!info->header_page || info->nr_cpus == 0 || info->nr_cpus > 8192)
		return -EINVAL;
	t = calloc(1, sizeof(*t));
	if (!t)
		return -ENOMEM;
	t->stack_id = -1;
	t->nr_cpus = info->nr_cpus;
	t->page_size = info->page_size ?: 4096;
	if (t->page_size < 256 || t->page_size % 8)
		return -EINVAL;
	t->cpus = calloc(t->nr_cpus, sizeof(*t->cpus));
	if (!t->cpus)
		return -ENOMEM;
	r = dup_opt(info->header_page, &t->header_page);
	if (r >= 0)
		r = dup_opt(info->kallsyms, &t->kallsyms);
	if (r >= 0)
		r = dup_opt(info->printk_formats, &t->printk);
	if (r >= 0)
		r = dup_opt(info->cmdlines, &t->cmdlines);
	if (r < 0)
		return r;
	*ret = steal_ptr(t);
	return 0;
}

int tracedat_set_text(struct tracedat *t, enum tracedat_text which, const char *text)
{
	char **slot[TRACEDAT_TEXT_MAX] = { &t->kallsyms, &t->printk, &t->cmdlines };
	char *copy = NULL;

	if ((unsigned int)which >= TRACEDAT_TEXT_MAX)
		return -EINVAL;
	if (dup_opt(text, &copy) < 0)
		return -ENOMEM;
	free(*slot[which]);
	*slot[which] = copy;
	return 0;
}

static int format_id(const char *text)
{
	const char *p = strstr(text, "\nID: ");

	if (!p && startswith(text, "ID: "))
		p = text - 1;
	return p ? atoi(p + 5) : -1;
}

int tracedat_add_format(struct tracedat *t, const char *system, const char *text)
{
	struct format *f;

	assert(system);
	assert(text);

	if (GREEDY_REALLOC(t->formats, t->cap_formats, t->nr_formats + 1) < 0)
		return -ENOMEM;
	f = &t->formats[t->nr_formats];
	f->system = strdup(system);
	f->text = strdup(text);
	if (!f->system || !f->text) {
		free(f->system);
		free(f->text);
		return -ENOMEM;
	}
	f->id = format_id(text);
	t->nr_formats++;
	if (streq(system, "ftrace") && startswith(text, "name: kernel_stack\n"))
		t->stack_id = f->id;
	return 0;
}

/* The kernel_stack event id, adding the kernel's format (id 4, or a free one) if none was given. */
static int stack_event_id(struct tracedat *t)
{
	_cleanup_free_ char *text = NULL;
	int id = 4, max = 0, r;

	if (t->stack_id >= 0)
		return t->stack_id;
	for (size_t i = 0; i < t->nr_formats; i++) {
		max = MAX(max, t->formats[i].id);
		if (t->formats[i].id == 4)
			id = -1;
	}
	if (id < 0)
		id = max + 1;
	r = strprintf(&text, kernel_stack_format, id);
	if (r < 0)
		return r;
	r = tracedat_add_format(t, "ftrace", text);
	return r < 0 ? r : t->stack_id;
}

static void finish_page(struct tracedat *t, struct cpu_pages *c)
{
	if (c->used)
		put_le64(c->data.data + c->page + 8, c->used - PAGE_HDR);
	c->used = 0;
}

static int start_page(struct tracedat *t, struct cpu_pages *c, uint64_t ts)
{
	int r = buf_reserve(&c->data, t->page_size);

	if (r < 0)
		return r;
	c->page = c->data.len;
	memset(c->data.data + c->page, 0, t->page_size);
	c->data.len += t->page_size;
	put_le64(c->data.data + c->page, ts);
	c->used = PAGE_HDR;
	c->last_ts = ts;
	return 0;
}

static void put_word(struct cpu_pages *c, uint32_t v)
{
	put_le32(c->data.data + c->page + c->used, v);
	c->used += 4;
}

int tracedat_add_event(struct tracedat *t, unsigned int cpu, uint64_t ts, const void *data,
		       size_t len)
{
	size_t aligned = ((len ?: 1) + 3) & ~(size_t)3;
	size_t need = 4 + aligned + (aligned > TYPE_LEN_MAX_DATA * 4 ? 4 : 0);
	struct cpu_pages *c;
	uint64_t delta;
	int r;

	assert(t);
	assert(data);

	if (cpu >= t->nr_cpus || need > t->page_size - PAGE_HDR)
		return -EINVAL;
	c = &t->cpus[cpu];
	if (c->used && ts < c->last_ts)
		return -EINVAL;
	delta = c->used ? ts - c->last_ts : 0;
	if (c->used && c->used + need + (delta >> DELTA_BITS ? 8 : 0) > t->page_size)
		finish_page(t, c);
	if (!c->used) {
		r = start_page(t, c, ts);
		if (r < 0)
			return r;
		delta = 0;
	}
	if (delta >> DELTA_BITS) {
		put_word(c, TYPE_TIME_EXTEND | (uint32_t)(delta << 5));
		put_word(c, (uint32_t)(delta >> DELTA_BITS));
		delta = 0;
	}
	if (aligned <= TYPE_LEN_MAX_DATA * 4)
		put_word(c, (uint32_t)(aligned / 4) | (uint32_t)(delta << 5));
	else {
		put_word(c, (uint32_t)(delta << 5));
		put_word(c, (uint32_t)(aligned + 4));
	}
	memcpy(c->data.data + c->page + c->used, data, len);
	c->used += aligned;
	c->last_ts = ts;
	return 0;
}

int tracedat_add_stack(struct tracedat *t, unsigned int cpu, uint64_t ts, int pid,
		       const uint64_t *ips, size_t nr)
{
	_cleanup_free_ uint8_t *rec = NULL;
	size_t len = 16 + nr * 8;
	int id = stack_event_id(t);

	if (id < 0)
		return id;
	rec = calloc(1, len);
	if (!rec)
		return -ENOMEM;
	/* common_type, flags, preempt count, pid; size (entries); caller[] from offset 16 */
	put_le16(rec, (uint16_t)id);
	put_le32(rec + 4, (uint32_t)pid);
	put_le32(rec + 8, (uint32_t)nr);
	for (size_t i = 0; i < nr; i++)
		put_le64(rec + 16 + i * 8, ips[i]);
	return tracedat_add_event(t, cpu, ts, rec, len);
}

static int put_blob(struct buf *b, const char *s, int size_bytes)
{
	size_t len = strlen(s);
	int r = size_bytes == 8 ? buf_append_u64(b, len) : buf_append_u32(b, (uint32_t)len);

	return r < 0 ? r : buf_append(b, s, len);
}

/* The systems other than ftrace, each once, in the order first added. */
static int put_systems(struct tracedat *t, struct buf *b)
{
	uint32_t nr_sys = 0;
	int r = 0;

	for (size_t i = 0; i < t->nr_formats; i++) {
		bool seen = streq(t->formats[i].system, "ftrace");

		for (size_t j = 0; !seen && j < i; j++)
			seen = streq(t->formats[j].system, t->formats[i].system);
		nr_sys += !seen;
	}
	r = buf_append_u32(b, nr_sys);
	for (size_t i = 0; r >= 0 && i < t->nr_formats; i++) {
		const char *sys = t->formats[i].system;
		bool seen = streq(sys, "ftrace");
		uint32_t n = 0;

		for (size_t j = 0; !seen && j < i; j++)
			seen = streq(t->formats[j].system, sys);
		if (seen)
			continue;
		for (size_t j = i; j < t->nr_formats; j++)
			n += streq(t->formats[j].system, sys);
		r = buf_append(b, sys, strlen(sys) + 1);
		if (r >= 0)
			r = buf_append_u32(b, n);
		for (size_t j = i; r >= 0 && j < t->nr_formats; j++)
			if (streq(t->formats[j].system, sys))
				r = put_blob(b, t->formats[j].text, 8);
	}
	return r;
}

static int put_header(struct tracedat *t, struct buf *b)
{
	uint32_t nr_ftrace = 0;
	int r;

	for (size_t i = 0; i < t->nr_formats; i++)
		nr_ftrace += streq(t->formats[i].system, "ftrace");
	/* magic, "tracing", version "6" with its NUL */
	r = buf_append(b, "\x17\x08\x44tracing6", 12);
	if (r >= 0)
		r = buf_append(b, "\0\x08", 2);		/* little endian, 8-byte longs */
	if (r >= 0)
		r = buf_append_u32(b, t->page_size);
	if (r >= 0)
		r = buf_append(b, "header_page", 12);
	if (r >= 0)
		r = put_blob(b, t->header_page, 8);
	if (r >= 0)
		r = buf_append(b, "header_event", 13);
	if (r >= 0)
		r = put_blob(b, header_event, 8);
	if (r >= 0)
		r = buf_append_u32(b, nr_ftrace);
	for (size_t i = 0; r >= 0 && i < t->nr_formats; i++)
		if (streq(t->formats[i].system, "ftrace"))
			r = put_blob(b, t->formats[i].text, 8);
	if (r >= 0)
		r = put_systems(t, b);
	if (r >= 0)
		r = put_blob(b, t->kallsyms, 4);
	if (r >= 0)
		r = put_blob(b, t->printk, 4);
	if (r >= 0)
		r = put_blob(b, t->cmdlines, 8);
	if (r >= 0)
		r = buf_append_u32(b, t->nr_cpus);
	if (r >= 0)
		r = buf_append(b, "flyrecord", 10);
	return r;
}

int tracedat_write(struct tracedat *t, int fd)
{
	_cleanup_(buf_done) struct buf b = {};
	uint64_t off;
	size_t pad;
	int r;

	assert(t);

	r = put_header(t, &b);
	if (r < 0)
		return r;
	for (unsigned int i = 0; i < t->nr_cpus; i++)
		finish_page(t, &t->cpus[i]);
	/* CPU data starts page aligned, after the table of (offset, size) per CPU */
	off = b.len + 16 * (uint64_t)t->nr_cpus;
	off = (off + t->page_size - 1) / t->page_size * t->page_size;
	for (unsigned int i = 0; r >= 0 && i < t->nr_cpus; i++) {
		r = buf_append_u64(&b, off);
		if (r >= 0)
			r = buf_append_u64(&b, t->cpus[i].data.len);
		off += t->cpus[i].data.len;
	}
	pad = (t->page_size - b.len % t->page_size) % t->page_size;
	if (r >= 0)
		r = buf_reserve(&b, pad);
	if (r < 0)
		return r;
	memset(b.data + b.len, 0, pad);
	b.len += pad;
	r = write_all(fd, b.data, b.len);
	for (unsigned int i = 0; r >= 0 && i < t->nr_cpus; i++)
		r = write_all(fd, t->cpus[i].data.data, t->cpus[i].data.len);
	return r;
}
