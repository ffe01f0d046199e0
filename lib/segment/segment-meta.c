/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * META record parsing (segment-meta.h). The payload is small and read
 * once per segment: one copy, split in place, and a linear lookup.
 */
#include <assert.h>
#include <endian.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "segment-meta.h"
#include "util.h"

void segment_meta_done(struct segment_meta *m)
{
	free(m->text);
	free(m->kv);
	*m = (struct segment_meta){ 0 };
}

int segment_meta_parse(struct segment_meta *m, const void *data, size_t len)
{
	char *p, *end;
	size_t cap = 0;

	assert(m);
	assert(data || len == 0);

	segment_meta_done(m);
	m->text = malloc(len + 1);
	if (!m->text)
		return -ENOMEM;
	memcpy(m->text, data, len);
	m->text[len] = '\0';
	for (p = m->text, end = m->text + len; p < end;) {
		char *nl = memchr(p, '\n', (size_t)(end - p)), *eq;

		if (nl)
			*nl = '\0';
		eq = strchr(p, '=');
		if (eq) {
			if (GREEDY_REALLOC(m->kv, cap, m->n + 1) < 0) {
				segment_meta_done(m);
				return -ENOMEM;
			}
			*eq = '\0';
			m->kv[m->n++] = (struct segment_meta_kv){ p, eq + 1 };
		}
		if (!nl)
			break;
		p = nl + 1;
	}
	return 0;
}

const char *segment_meta_get(const struct segment_meta *m, const char *key)
{
	assert(m);
	assert(key);

	for (size_t i = 0; i < m->n; i++)
		if (streq(m->kv[i].key, key))
			return m->kv[i].value;
	return NULL;
}

int segment_meta_u64(const struct segment_meta *m, const char *key, uint64_t *ret)
{
	const char *v = segment_meta_get(m, key);
	unsigned long long x;
	char *e;

	assert(m);
	assert(key);
	assert(ret);

	if (!v || !*v)
		return -ENOENT;
	if (*v < '0' || *v > '9')
		return -EINVAL;
	errno = 0;
	x = strtoull(v, &e, 10);
	if (errno || *e)
		return -EINVAL;
	*ret = x;
	return 0;
}

unsigned int segment_meta_page_format(const struct segment_meta *m, struct page_format *ret)
{
	const char *bo = segment_meta_get(m, "byte_order");
	unsigned int guessed = 0;
	uint64_t v;

	assert(m);
	assert(ret);

	ret->long_size = sizeof(long);
	if (segment_meta_u64(m, "long_size", &v) == 0 && (v == 4 || v == 8))
		ret->long_size = (unsigned int)v;
	else
		guessed |= SEGMENT_META_GUESSED_LONG_SIZE;

	ret->big_endian = __BYTE_ORDER == __BIG_ENDIAN;
	if (bo && (streq(bo, "little") || streq(bo, "big")))
		ret->big_endian = streq(bo, "big");
	else
		guessed |= SEGMENT_META_GUESSED_BYTE_ORDER;

	ret->page_size = 0;
	if (segment_meta_u64(m, "page_size", &v) == 0 && v >= 64 && v <= SEGMENT_META_MAX_PAGE_SIZE)
		ret->page_size = (size_t)v;
	else
		guessed |= SEGMENT_META_GUESSED_PAGE_SIZE;
	return guessed;
}
