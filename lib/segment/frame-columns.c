/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The column encoding's context (frame-columns.h), which the encoder
 * (frame-columns-encode.c, frame-columns-streams.c) and the decoder
 * (frame-columns-decode.c) share: its life, the event layouts the encoder
 * works from, and what it tells of the last encoding. It calls none of
 * them; they use it and frame-columns-internal.h.
 */
#include <assert.h>
#include <stdlib.h>

#include "budget.h"
#include "frame-columns-internal.h"

struct frame_columns *frame_columns_new(unsigned int long_size)
{
	struct frame_columns *fc;

	if (long_size != 4 && long_size != 8)
		return NULL;
	fc = calloc(1, sizeof(*fc));
	if (!fc)
		return NULL;
	fc->long_size = long_size;
	fc->version = FRAME_COLUMNS_VERSION;
	fc->fmt = calloc(FC_NR_IDS, sizeof(*fc->fmt));
	fc->ftype_of = calloc(FC_NR_IDS, 1);
	if (!fc->fmt || !fc->ftype_of)
		return frame_columns_free(fc);
	return fc;
}

struct frame_columns *frame_columns_free(struct frame_columns *fc)
{
	if (!fc)
		return NULL;
	if (fc->fmt)
		for (size_t i = 0; i < FC_NR_IDS; i++)
			free(fc->fmt[i]);
	free(fc->fmt);
	free(fc->ftype_of);
	for (size_t i = 0; i < FRAME_COLUMNS_MAX_TYPES; i++)
		buf_done(&fc->types[i].ev);
	for (size_t i = 0; i < FC_S_FIXED; i++)
		buf_done(&fc->s[i]);
	buf_done(&fc->cols);
	buf_done(&fc->lens);
	buf_done(&fc->table);
	budget_release_all(&fc->charged);
	buf_done(&fc->dcols);
	buf_done(&fc->dict);
	buf_done(&fc->dtpls);
	buf_done(&fc->kinds);
	buf_done(&fc->ents);
	buf_done(&fc->tpls);
	hashtab_done(&fc->tslots);
	free(fc->slots);
	free(fc);
	return NULL;
}

int frame_columns_set_version(struct frame_columns *fc, unsigned int version)
{
	assert(fc);

	if (version < FRAME_COLUMNS_VERSION_MIN || version > FRAME_COLUMNS_VERSION)
		return -EINVAL;
	fc->version = (uint8_t)version;
	for (size_t i = 0; i < FC_NR_IDS; i++)
		if (fc->fmt[i])
			fc->fmt[i]->chosen = 0;	/* the time transforms differ */
	return 0;
}

static int cmp_field(const void *a, const void *b)
{
	const struct frame_columns_field *x = a, *y = b;

	return x->offset < y->offset ? -1 : x->offset > y->offset;
}

static void add_column(struct fc_format *f, unsigned int offset, unsigned int size, bool sgn)
{
	struct fc_column *c = &f->cols[f->nr++];

	c->offset = (uint16_t)offset;
	c->size = (uint16_t)size;
	c->blob = !(size == 1 || size == 2 || size == 4 || size == 8);
	c->flags = sgn && !c->blob ? FC_F_SIGNED : 0;
}

int frame_columns_add_event(struct frame_columns *fc, uint16_t id,
			    const struct frame_columns_field *fields, size_t n)
{
	_cleanup_free_ struct frame_columns_field *sorted = NULL;
	_cleanup_free_ struct fc_format *f = NULL;
	unsigned int pos = 2;

	assert(fc);

	sorted = malloc((n ? n : 1) * sizeof(*sorted));
	f = calloc(1, sizeof(*f));
	if (!sorted || !f)
		return -ENOMEM;
	if (n)
		memcpy(sorted, fields, n * sizeof(*sorted));
	qsort(sorted, n, sizeof(*sorted), cmp_field);
	for (size_t i = 0; i < n; i++) {
		unsigned int off = sorted[i].offset, size = sorted[i].size;

		/* common_type is the entry's type; overlaps are already covered */
		if (size == 0 || off < pos || off + size > UINT16_MAX)
			continue;
		if (f->nr + (off > pos) + 1 > FRAME_COLUMNS_MAX_FIELDS)
			return -EINVAL;
		if (off > pos)
			add_column(f, pos, off - pos, false);
		add_column(f, off, size, sorted[i].is_signed);
		pos = off + size;
	}
	f->fixed = (uint16_t)pos;
	free(fc->fmt[id]);
	fc->fmt[id] = steal_ptr(f);
	return 0;
}

int frame_columns_add_format(struct frame_columns *fc, const char *text)
{
	struct frame_columns_field fields[FRAME_COLUMNS_MAX_FIELDS];
	const char *p;
	size_t n = 0;
	unsigned int id;
	int r;

	assert(fc);
	assert(text);

	p = strncmp(text, "ID: ", 4) == 0 ? text : strstr(text, "\nID: ");
	if (!p || sscanf(p + (*p == '\n'), "ID: %u", &id) != 1 || id >= FC_NR_IDS)
		return -EINVAL;
	for (p = strstr(text, "field:"); p; p = strstr(p + 6, "field:")) {
		unsigned int off, size, sgn;
		const char *q = strstr(p, "offset:");
		const char *eol = strchr(p, '\n');

		if (!q || (eol && q > eol) || sscanf(q, "offset:%u;\tsize:%u;\tsigned:%u;", &off, &size, &sgn) != 3)
			continue;
		if (off > UINT16_MAX || size > UINT16_MAX)
			continue;
		if (n == FRAME_COLUMNS_MAX_FIELDS)
			return -EINVAL;
		fields[n++] = (struct frame_columns_field){ (uint16_t)off, (uint16_t)size, sgn != 0 };
	}
	if (n == 0)
		return -EINVAL;
	r = frame_columns_add_event(fc, (uint16_t)id, fields, n);
	return r < 0 ? r : (int)id;
}

void frame_columns_get_stats(const struct frame_columns *fc, struct frame_columns_stats *ret)
{
	assert(fc);
	assert(ret);
	*ret = fc->stats;
}

int frame_columns_get_stream(const struct frame_columns *fc, size_t i,
			     struct frame_columns_stream *ret)
{
	static const char *const names[FC_S_FIXED] = { "page", "code", "delta", "len", "raw", "tval" };
	struct frame_columns_stream st = { .start = fc->head_len, .column = -1 };
	size_t j = 0;

	if (i < FC_S_FIXED) {
		for (; j < i; j++)
			st.start += fc->s[j].len;
		st.name = names[i];
		st.len = fc->s[i].len;
		*ret = st;
		return 0;
	}
	for (j = 0; j < FC_S_FIXED; j++)
		st.start += fc->s[j].len;
	i -= FC_S_FIXED;
	if (i >= fc->lens.len / 4)
		return -ENOENT;
	for (j = 0; j < i; j++)
		st.start += get_le32(fc->lens.data + 4 * j);
	st.len = get_le32(fc->lens.data + 4 * i);
	for (unsigned int k = 0; k < fc->nr_types; k++) {
		const struct fc_format *f = fc->types[k].fmt;

		if (i > f->nr + (size_t)FC_TIME_STREAMS) {
			i -= f->nr + 1u + FC_TIME_STREAMS;
			continue;
		}
		st.id = fc->types[k].id;
		st.column = (int)i;
		if (i > f->nr) {
			st.transform = f->time;
			break;
		}
		st.offset = i < f->nr ? f->cols[i].offset : f->fixed;
		st.size = i < f->nr ? f->cols[i].size : 0;
		st.transform = f->t[i];
		break;
	}
	*ret = st;
	return 0;
}
