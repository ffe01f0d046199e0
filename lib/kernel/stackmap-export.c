/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Parsers of the kernel stack map's exports (ftrace stackmap series v6,
 * STACKMAP-ABI.md): the binary image of stack_map_bin, the text of
 * stack_map, and stack_map_stat. Pure functions of the bytes they are
 * given, with every length and count checked before it is used, so that
 * they can be run on any input (tests, fuzzing) without tracefs.
 */
#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "byteorder.h"
#include "stackmap-export.h"
#include "util.h"

#define BIN_MAGIC 0x46534D42u
#define BIN_VERSION 1
#define BIN_HDR_SIZE 16
#define BIN_ENTRY_SIZE 16
/* The kernel stores at most 64 frames; accept more from a later kernel, within reason. */
#define MAX_DEPTH 1024
#define TEXT_MAX_LINE 4096

/* A field of the image, in the writer's byte order (big: big-endian), which its magic tells. */
static uint32_t get32(const uint8_t *p, bool big)
{
	return big ? get_be32(p) : get_le32(p);
}

static uint64_t get64(const uint8_t *p, bool big)
{
	return big ? get_be64(p) : get_le64(p);
}

static int snap_add(struct stackmap_export *sn, uint32_t id, uint32_t refs, uint32_t nr, size_t off)
{
	if (GREEDY_REALLOC(sn->v, sn->cap, sn->n + 1) < 0)
		return -ENOMEM;
	sn->v[sn->n++] = (struct stackmap_export_entry){
		.id = id, .refs = refs, .nr = nr, .off = off, .len = sn->data.len - off
	};
	return 0;
}

static void snap_reset(struct stackmap_export *sn, bool text)
{
	sn->n = 0;
	buf_reset(&sn->data);
	sn->text = text;
}

static int raw_cmp(const void *a, const void *b)
{
	const struct stackmap_export_entry *x = a, *y = b;

	return x->id < y->id ? -1 : x->id > y->id;
}

/* Sort by id if the kernel did not list slots in order; duplicate ids are malformed. */
static int snap_sort(struct stackmap_export *sn, bool sorted)
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
int stackmap_export_parse_bin(struct stackmap_export *sn, const uint8_t *p, size_t len, uint32_t id_limit)
{
	uint32_t count, prev = 0;
	bool big, sorted = true;
	size_t off = BIN_HDR_SIZE;
	int r;

	assert(sn);
	assert(p || len == 0);

	snap_reset(sn, false);
	if (len < BIN_HDR_SIZE)
		return -EBADMSG;
	if (get_le32(p) == BIN_MAGIC)
		big = false;
	else if (get_be32(p) == BIN_MAGIC)
		big = true;
	else
		return -EBADMSG;
	if (get32(p + 4, big) != BIN_VERSION)
		return -EPROTONOSUPPORT;
	count = get32(p + 8, big);
	if (count > STACKMAP_MAX_IDS)
		return -EBADMSG;

	for (uint32_t n = 0; n < count; n++) {
		uint32_t id, nr, refs;
		size_t at;

		if (len - off < BIN_ENTRY_SIZE)
			return -EBADMSG;
		id = get32(p + off, big);
		nr = get32(p + off + 4, big);
		refs = get32(p + off + 8, big);
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
			uint64_t ip = get64(p + off, big);

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
int stackmap_export_parse_text(struct stackmap_export *sn, FILE *f, uint32_t id_limit)
{
	_cleanup_free_ char *line = NULL;
	size_t cap = 0;
	uint32_t id = 0, refs = 0, depth = 0, got = 0, prev = 0;
	size_t at = 0;
	bool in_entry = false, sorted = true;
	ssize_t n;
	int r;

	assert(sn);
	assert(f);

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

int stackmap_stat_parse(const char *text, struct stackmap_stat *ret)
{
	struct stackmap_stat s = { .valid = true };
	const char *line = text;
	bool have_entries = false;

	assert(text);
	assert(ret);

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

void stackmap_export_done(struct stackmap_export *sn)
{
	free(sn->v);
	sn->v = NULL;
	sn->n = sn->cap = 0;
	buf_done(&sn->data);
}
