/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Kernel symbol tables (ksyms.h): parsing /proc/kallsyms text into a table
 * sorted by address, and the lookups and formatting that stackmapctl and
 * the daemon use to symbolize stacks.
 */
#include <assert.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <unistd.h>

#include "buf.h"
#include "ksyms.h"
#include "util.h"

#define NO_MODULE UINT32_MAX
#define END_MARK UINT32_MAX		/* name of an entry that only ends the symbol below it */

/*
 * 16 bytes per symbol so that a full kallsyms (~200k symbols) stays a few
 * MB and a lookup touches about 17 cache lines. Names live in one pool;
 * the symbol type is stored in the byte just before the name.
 */
struct ksym {
	uint64_t addr;
	uint32_t name;			/* offset in pool */
	uint32_t module;		/* offset in pool, or NO_MODULE */
};

struct ksyms {
	struct ksym *syms;		/* sorted by address, one per address */
	size_t n;
	size_t n_text;			/* of them text symbols, the rest end marks */
	char *pool;
	bool usable;
};

struct ksyms *ksyms_free(struct ksyms *ks)
{
	if (!ks)
		return NULL;
	free(ks->syms);
	free(ks->pool);
	free(ks);
	return NULL;
}


static bool is_text_type(char c)
{
	return c == 't' || c == 'T' || c == 'w' || c == 'W';
}

static bool is_blank(char c)
{
	return c == ' ' || c == '\t' || c == '\r';
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

struct parser {
	struct buf syms;
	struct buf pool;
	uint32_t last_module;		/* pool offset of the previous line's module */
	size_t last_module_len;
};

/*
 * Store s[0..len) and a NUL in the pool, after the byte lead unless it is
 * NO_LEAD; *ret_off is where s starts. One reservation for all of it.
 */
#define NO_LEAD (-1)
static int pool_add(struct parser *ps, int lead, const char *s, size_t len, uint32_t *ret_off)
{
	size_t off = ps->pool.len + (lead != NO_LEAD);
	int r;

	if (off + len + 1 >= UINT32_MAX)
		return -E2BIG;
	r = buf_reserve(&ps->pool, off - ps->pool.len + len + 1);
	if (r < 0)
		return r;
	if (lead != NO_LEAD)
		ps->pool.data[ps->pool.len] = (uint8_t)lead;
	memcpy(ps->pool.data + off, s, len);
	ps->pool.data[off + len] = 0;
	ps->pool.len = off + len + 1;
	*ret_off = (uint32_t)off;
	return 0;
}

/* One line "ADDR TYPE NAME[\t[MODULE]]" in [p, end). */
static int parse_line(struct parser *ps, const char *p, const char *end)
{
	const char *name, *mod = NULL;
	size_t name_len, mod_len = 0;
	struct ksym sym = { .module = NO_MODULE };
	unsigned digits = 0;
	char type;
	int r;

	while (p < end && is_blank(*p))
		p++;
	if (p == end)
		return 0;			/* blank line */

	for (; p < end && hexval(*p) >= 0; p++, digits++)
		sym.addr = sym.addr << 4 | (uint64_t)hexval(*p);
	if (digits == 0 || digits > 16 || p == end || !is_blank(*p))
		return -EINVAL;
	while (p < end && is_blank(*p))
		p++;
	if (p == end || is_blank(*p))
		return -EINVAL;
	type = *p++;
	if (p == end || !is_blank(*p))
		return -EINVAL;
	while (p < end && is_blank(*p))
		p++;
	name = p;
	while (p < end && !is_blank(*p))
		p++;
	name_len = (size_t)(p - name);
	if (name_len == 0)
		return -EINVAL;
	while (p < end && is_blank(*p))
		p++;
	if (p < end) {
		const char *close;

		if (*p != '[')
			return -EINVAL;
		close = memchr(p, ']', (size_t)(end - p));
		if (!close || close == p + 1)
			return -EINVAL;
		mod = p + 1;
		mod_len = (size_t)(close - mod);
	}

	/* "ADDR ? .end" (ksyms_subset()) ends the text symbol below it; other types are skipped. */
	if (!is_text_type(type)) {
		if (name_len != 4 || memcmp(name, ".end", 4) != 0)
			return 0;
		sym.name = END_MARK;
		return buf_append(&ps->syms, &sym, sizeof(sym));
	}

	if (mod) {
		if (ps->last_module != NO_MODULE && ps->last_module_len == mod_len &&
		    memcmp(ps->pool.data + ps->last_module, mod, mod_len) == 0) {
			sym.module = ps->last_module;
		} else {
			r = pool_add(ps, NO_LEAD, mod, mod_len, &sym.module);
			if (r < 0)
				return r;
			ps->last_module = sym.module;
			ps->last_module_len = mod_len;
		}
	}

	/* The type goes in front of the name: pool[name - 1]. */
	r = pool_add(ps, type, name, name_len, &sym.name);
	if (r < 0)
		return r;
	return buf_append(&ps->syms, &sym, sizeof(sym));
}

/* By address; among aliases, file order (pool offsets grow with it). */
static int ksym_cmp(const void *a, const void *b)
{
	const struct ksym *x = a, *y = b;

	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	return x->name < y->name ? -1 : x->name > y->name;
}

/* Give back what a reservation did not use: not needed, so a failure keeps it. */
static void shrink(void **p, size_t len)
{
	void *q = len ? realloc(*p, len) : NULL;

	if (q)
		*p = q;
}

/* The table from the lines parsed into ps (taken over, also on failure). */
static int parser_finish(struct parser *ps, struct ksyms **ret)
{
	_cleanup_(ksyms_freep) struct ksyms *ks = NULL;
	size_t i, n;

	ks = calloc(1, sizeof(*ks));
	if (!ks) {
		buf_done(&ps->syms);
		buf_done(&ps->pool);
		return -ENOMEM;
	}
	ks->syms = (struct ksym *)ps->syms.data;
	n = ps->syms.len / sizeof(struct ksym);
	ks->pool = (char *)ps->pool.data;

	/* /proc/kallsyms is in address order but for modules and the like: sort only if needed */
	for (i = 1; i < n; i++)
		if (ksym_cmp(&ks->syms[i - 1], &ks->syms[i]) > 0)
			break;
	if (i < n)
		qsort(ks->syms, n, sizeof(struct ksym), ksym_cmp);

	/* Keep the first of each group of aliases, as the kernel's kallsyms_lookup() does. */
	for (i = 0; i < n; i++) {
		if (ks->n > 0 && ks->syms[ks->n - 1].addr == ks->syms[i].addr)
			continue;
		ks->syms[ks->n++] = ks->syms[i];
		if (ks->syms[i].name == END_MARK)
			continue;
		ks->n_text++;
		if (ks->syms[i].addr != 0)
			ks->usable = true;
	}
	shrink((void **)&ks->syms, ks->n * sizeof(struct ksym));
	shrink((void **)&ks->pool, ps->pool.len);

	*ret = steal_ptr(ks);
	return 0;
}

/*
 * Parse the lines in [*p, end): each that ends with a newline and, with
 * last, a final one without it. *p moves past what was parsed. Returns 0
 * or the error of the first malformed line.
 */
static int parse_lines(struct parser *ps, const char **p, const char *end, bool last)
{
	while (*p < end) {
		const char *eol = memchr(*p, '\n', (size_t)(end - *p));
		int r;

		if (!eol && !last)
			break;
		r = parse_line(ps, *p, eol ? eol : end);
		if (r < 0)
			return r;
		*p = eol ? eol + 1 : end;
	}
	return 0;
}

int ksyms_parse(const char *text, size_t len, struct ksyms **ret)
{
	struct parser ps = { .last_module = NO_MODULE };
	const char *p = text;
	int r;

	assert(text || len == 0);
	assert(ret);

	r = parse_lines(&ps, &p, text + len, true);
	if (r < 0) {
		buf_done(&ps.syms);
		buf_done(&ps.pool);
		return r;
	}
	return parser_finish(&ps, ret);
}

/*
 * A kernel's kallsyms text is several MB and its table half of that: the
 * lines are parsed where read() put them, and the table is reserved for a
 * large kernel up front, so that its growth copies nothing (pages that are
 * not written are not taken); parser_finish() gives the rest back.
 */
#define LOAD_CHUNK (64 * 1024)
#define LOAD_SYMS (128 * 1024)
#define LOAD_POOL (4 * 1024 * 1024)

int ksyms_load(const char *path, struct ksyms **ret)
{
	struct parser ps = { .last_module = NO_MODULE };
	_cleanup_free_ char *chunk = NULL;
	_cleanup_close_ int fd = -EBADF;
	size_t have = 0;
	int r;

	assert(path);
	assert(ret);

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	chunk = malloc(LOAD_CHUNK);
	if (!chunk)
		return -ENOMEM;
	r = buf_reserve(&ps.syms, LOAD_SYMS * sizeof(struct ksym));
	if (r >= 0)
		r = buf_reserve(&ps.pool, LOAD_POOL);
	while (r >= 0) {
		const char *p = chunk;
		ssize_t n = read(fd, chunk + have, LOAD_CHUNK - have);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			r = -errno;
			break;
		}
		if (n == 0) {
			/* a last line without its newline */
			r = parse_lines(&ps, &p, chunk + have, true);
			break;
		}
		have += (size_t)n;
		r = parse_lines(&ps, &p, chunk + have, false);
		have -= (size_t)(p - chunk);
		if (have == LOAD_CHUNK)
			r = -EINVAL;		/* a line longer than any symbol's */
		else
			memmove(chunk, p, have);
	}
	if (r < 0) {
		buf_done(&ps.syms);
		buf_done(&ps.pool);
		return r;
	}
	return parser_finish(&ps, ret);
}

size_t ksyms_count(const struct ksyms *ks)
{
	return ks ? ks->n_text : 0;
}

bool ksyms_usable(const struct ksyms *ks)
{
	return ks && ks->usable;
}

/* Index of the symbol containing addr, or -1. */
static ssize_t find(const struct ksyms *ks, uint64_t addr)
{
	size_t lo = 0, hi;

	if (!ks || !ks->usable || ks->n < 2)
		return -1;
	hi = ks->n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (ks->syms[mid].addr <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	/* lo is the first symbol above addr; the last symbol has no known end. */
	if (lo == 0 || lo == ks->n || ks->syms[lo - 1].name == END_MARK)
		return -1;
	return (ssize_t)lo - 1;
}

const char *ksyms_lookup(const struct ksyms *ks, uint64_t addr, uint64_t *ret_offset,
			 uint64_t *ret_size, const char **ret_module)
{
	const struct ksym *s;
	ssize_t i = find(ks, addr);

	if (i < 0)
		return NULL;
	s = &ks->syms[i];
	if (ret_offset)
		*ret_offset = addr - s->addr;
	if (ret_size)
		*ret_size = s[1].addr - s->addr;
	if (ret_module)
		*ret_module = s->module == NO_MODULE ? NULL : ks->pool + s->module;
	return ks->pool + s->name;
}

int ksyms_format(const struct ksyms *ks, uint64_t addr, char *buf, size_t len)
{
	uint64_t off, size;
	const char *name, *mod;
	int n;

	name = ksyms_lookup(ks, addr, &off, &size, &mod);
	/* The kernel prints the 0x prefix even for 0: "func+0x0/0x80". */
	if (!name)
		n = snprintf(buf, len, "0x%" PRIx64, addr);
	else if (mod)
		n = snprintf(buf, len, "%s+0x%" PRIx64 "/0x%" PRIx64 " [%s]", name, off, size, mod);
	else
		n = snprintf(buf, len, "%s+0x%" PRIx64 "/0x%" PRIx64, name, off, size);
	if (n < 0)
		return -EINVAL;
	if ((size_t)n >= len)
		return -ENOBUFS;
	return n;
}

static int size_cmp(const void *a, const void *b)
{
	size_t x = *(const size_t *)a, y = *(const size_t *)b;

	return x < y ? -1 : x > y;
}

/* ksyms_subset() for addresses of a kernel whose text lay delta below this one's. */
static int subset(const struct ksyms *ks, const uint64_t *addrs, size_t n, int64_t delta,
		  struct buf *out)
{
	_cleanup_free_ size_t *idx = NULL;
	size_t i, nidx = 0, lines = 0;
	int r;

	assert(addrs || n == 0);
	assert(out);

	if (n == 0)
		return 0;
	if (n > SIZE_MAX / (2 * sizeof(size_t)))
		return -ENOMEM;
	idx = malloc(2 * n * sizeof(size_t));
	if (!idx)
		return -ENOMEM;
	for (i = 0; i < n; i++) {
		ssize_t k = find(ks, addrs[i] + (uint64_t)delta);

		if (k < 0)
			continue;
		/* Bit 0 set: only the end of the symbol below (find() never returns the last). */
		idx[nidx++] = (size_t)k << 1;
		idx[nidx++] = ((size_t)k + 1) << 1 | 1;
	}
	qsort(idx, nidx, sizeof(size_t), size_cmp);

	for (i = 0; i < nidx; i++) {
		const struct ksym *s;

		/* Sorted, a symbol needed for itself comes before its use as an end. */
		if (i > 0 && idx[i] >> 1 == idx[i - 1] >> 1)
			continue;
		s = &ks->syms[idx[i] >> 1];
		if ((idx[i] & 1) || s->name == END_MARK)
			/* Not a text symbol: readers end the one below here, and place nothing in it. */
			r = buf_printf(out, "%016" PRIx64 " ? .end\n", s->addr - (uint64_t)delta);
		else if (s->module == NO_MODULE)
			r = buf_printf(out, "%016" PRIx64 " %c %s\n", s->addr - (uint64_t)delta,
				       ks->pool[s->name - 1], ks->pool + s->name);
		else
			r = buf_printf(out, "%016" PRIx64 " %c %s\t[%s]\n", s->addr - (uint64_t)delta,
				       ks->pool[s->name - 1], ks->pool + s->name,
				       ks->pool + s->module);
		if (r < 0)
			return r;
		lines++;
	}
	return (int)MIN(lines, (size_t)INT32_MAX);
}

int ksyms_subset(const struct ksyms *ks, const uint64_t *addrs, size_t n, struct buf *out)
{
	return subset(ks, addrs, n, 0, out);
}

int ksyms_subset_moved(const struct ksyms *ks, const uint64_t *addrs, size_t n, int64_t delta,
		       struct buf *out)
{
	return subset(ks, addrs, n, delta, out);
}

uint64_t ksyms_address_of(const struct ksyms *ks, const char *name)
{
	if (!ks || !ks->usable)
		return 0;
	for (size_t i = 0; i < ks->n; i++)
		if (ks->syms[i].module == NO_MODULE && streq(ks->pool + ks->syms[i].name, name))
			return ks->syms[i].addr;
	return 0;
}
