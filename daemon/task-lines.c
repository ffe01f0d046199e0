/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The lines of the task files' head copies, sorted for look-up
 * (task-lines.h).
 */
#include <assert.h>
#include <stdlib.h>

#include "task-lines.h"

static const char *const task_files[] = { "saved_cmdlines", "saved_tgids" };

bool task_lines_is_task_file(const char *name)
{
	for (size_t i = 0; i < ARRAY_SIZE(task_files); i++)
		if (streq(name, task_files[i]))
			return true;
	return false;
}

struct task_file {
	const char *text;		/* the head copy, borrowed */
	size_t len;
	uint32_t *lines;		/* offsets of its line starts, the lines in byte order */
	size_t n;
};

struct task_lines {
	struct task_file f[ARRAY_SIZE(task_files)];
};

/* The length of the line at p (up to its newline or end), end of text at end. */
static size_t line_len(const char *p, const char *end)
{
	const char *nl = memchr(p, '\n', (size_t)(end - p));

	return (size_t)((nl ? nl : end) - p);
}

/* The start of the line after the one at p. */
static const char *next_line(const char *p, const char *end)
{
	size_t n = line_len(p, end);

	return p + n + (p + n < end);
}

static int line_cmp(const char *a, size_t alen, const char *b, size_t blen)
{
	int c = memcmp(a, b, MIN(alen, blen));

	return c ? c : (alen > blen) - (alen < blen);
}

static int cmp_offsets(const void *x, const void *y, void *userdata)
{
	const struct task_file *f = userdata;
	const char *end = f->text + f->len;
	const char *a = f->text + *(const uint32_t *)x, *b = f->text + *(const uint32_t *)y;

	return line_cmp(a, line_len(a, end), b, line_len(b, end));
}

static int index_file(struct task_file *f, const char *text, size_t len)
{
	const char *p = text, *end = text + len;
	size_t n = 0;

	if (len >= UINT32_MAX)
		return 0;	/* not indexed: every line is kept */
	for (const char *q = p; q < end; q = next_line(q, end))
		n++;
	f->lines = malloc((n ? n : 1) * sizeof(*f->lines));
	if (!f->lines)
		return -ENOMEM;
	for (; p < end; p = next_line(p, end))
		f->lines[f->n++] = (uint32_t)(p - text);
	f->text = text;
	f->len = len;
	qsort_r(f->lines, f->n, sizeof(*f->lines), cmp_offsets, f);
	return 0;
}

int task_lines_new(const struct named_text *files, size_t nr_files, struct task_lines **ret)
{
	struct task_lines *tl = calloc(1, sizeof(*tl));

	assert(files || nr_files == 0);
	assert(ret);

	if (!tl)
		return -ENOMEM;
	for (size_t i = 0; i < ARRAY_SIZE(task_files); i++)
		for (size_t j = 0; j < nr_files; j++)
			if (streq(files[j].name, task_files[i]) && !tl->f[i].text) {
				if (index_file(&tl->f[i], files[j].data, files[j].len) < 0) {
					task_lines_free(tl);
					return -ENOMEM;
				}
			}
	*ret = tl;
	return 0;
}

struct task_lines *task_lines_free(struct task_lines *tl)
{
	if (!tl)
		return NULL;
	for (size_t i = 0; i < ARRAY_SIZE(task_files); i++)
		free(tl->f[i].lines);
	free(tl);
	return NULL;
}

static bool has_line(const struct task_file *f, const char *line, size_t len)
{
	const char *end = f->text + f->len;
	size_t lo = 0, hi = f->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const char *m = f->text + f->lines[mid];
		int c = line_cmp(line, len, m, line_len(m, end));

		if (c == 0)
			return true;
		if (c < 0)
			hi = mid;
		else
			lo = mid + 1;
	}
	return false;
}

int task_lines_changed(const struct task_lines *tl, const char *name, const char *data, size_t len,
		       struct buf *out)
{
	const struct task_file *f = NULL;
	const char *p = data, *end = data + len;

	assert(name);
	assert(data || len == 0);
	assert(out);

	for (size_t i = 0; tl && i < ARRAY_SIZE(task_files); i++)
		if (streq(name, task_files[i]) && tl->f[i].text)
			f = &tl->f[i];
	if (!f)
		return buf_append(out, data, len);
	while (p < end) {
		const char *next = next_line(p, end);

		if (!has_line(f, p, line_len(p, end)) && buf_append(out, p, (size_t)(next - p)) < 0)
			return -ENOMEM;
		p = next;
	}
	return 0;
}
