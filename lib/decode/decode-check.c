/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Checks of what a segment hands to libtraceevent (decode-internal.h).
 *
 * libtraceevent's parsers trust their input: a format or printk_formats
 * text from a damaged or hostile segment can make them read past their
 * buffers, dereference NULL or divide by zero, and its printing reads
 * fields at the offsets a format names without looking at the record
 * size. So the FILE texts are checked here first, line by line, against
 * the shape tracefs gives them (bounded length, printable text, known line
 * kinds, field offsets and sizes that fit a record, sane counts), and each
 * event's fields are checked against its record before it is printed.
 * What does not pass is never seen by libtraceevent.
 */
#include <ctype.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include <event-parse.h>

#include "decode-internal.h"
#include "page-walk.h"
#include "util.h"

/* A line of the text: [p, end), without its newline. */
struct line {
	const char *p, *end;
};

static bool next_line(const char **pos, const char *end, struct line *ret)
{
	const char *nl;

	if (*pos >= end)
		return false;
	nl = memchr(*pos, '\n', (size_t)(end - *pos));
	ret->p = *pos;
	ret->end = nl ? nl : end;
	*pos = nl ? nl + 1 : end;
	return true;
}

static bool line_starts(const struct line *l, const char *prefix)
{
	size_t n = strlen(prefix);

	return (size_t)(l->end - l->p) >= n && memcmp(l->p, prefix, n) == 0;
}

/* Printable ASCII, tabs and newlines only; no NUL. */
static bool text_ok(const char *p, size_t len)
{
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)p[i];

		if (c != '\n' && c != '\t' && (c < 0x20 || c > 0x7e))
			return false;
	}
	return true;
}

/* A field's name in the format text. */
struct name {
	const char *p;
	size_t len;
};

static bool is_ident(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '_';
}

/* Whether each REC->NAME in [p, end) outside strings names one of the n fields. */
static bool check_field_refs(const char *p, const char *end, const struct name *names, size_t n)
{
	bool quoted = false;

	for (; p < end; p++) {
		const char *b;
		size_t i;

		if (*p == '\\' && quoted) {
			p++;
			continue;
		}
		if (*p == '"')
			quoted = !quoted;
		if (quoted || (size_t)(end - p) < 5 || memcmp(p, "REC->", 5) != 0)
			continue;
		b = p += 5;
		while (p < end && is_ident(*p))
			p++;
		for (i = 0; i < n; i++)
			if (names[i].len == (size_t)(p - b) && memcmp(names[i].p, b, names[i].len) == 0)
				break;
		if (i == n)
			return false;
		p--;
	}
	return true;
}

/* A decimal number of at most 9 digits at *p, followed by ';'. */
static bool parse_num(const char **p, const char *end, uint64_t *ret)
{
	uint64_t v = 0;
	int digits = 0;

	while (*p < end && **p >= '0' && **p <= '9' && digits < 10) {
		v = v * 10 + (uint64_t)(**p - '0');
		(*p)++;
		digits++;
	}
	if (digits == 0 || digits > 9 || *p >= end || **p != ';')
		return false;
	(*p)++;
	*ret = v;
	return true;
}

/* Skip blanks, then expect key (e.g. "offset:") and a number. */
static bool parse_key_num(const char **p, const char *end, const char *key, uint64_t *ret)
{
	size_t n = strlen(key);

	while (*p < end && (**p == ' ' || **p == '\t'))
		(*p)++;
	if ((size_t)(end - *p) < n || memcmp(*p, key, n) != 0)
		return false;
	*p += n;
	return parse_num(p, end, ret);
}

/*
 * "\tfield:TYPE NAME[N];\toffset:O;\tsize:S;\tsigned:X;" with the offset
 * and size inside max_end; *ret_end gets offset + size.
 */
static bool check_field_line(const struct line *l, uint64_t max_end, uint64_t *ret_end,
			     bool *ret_common, struct name *ret_name)
{
	const char *p = l->p, *decl, *semi, *br;
	uint64_t off, size, sgn, n = 0;

	while (p < l->end && (*p == ' ' || *p == '\t'))
		p++;
	if ((size_t)(l->end - p) < 6 || memcmp(p, "field:", 6) != 0)
		return false;
	decl = p + 6;
	semi = memchr(decl, ';', (size_t)(l->end - decl));
	if (!semi || semi - decl < 3 || semi - decl > 256)
		return false;
	p = semi + 1;
	if (!parse_key_num(&p, l->end, "offset:", &off) || !parse_key_num(&p, l->end, "size:", &size))
		return false;
	if (p < l->end && !parse_key_num(&p, l->end, "signed:", &sgn))
		return false;
	while (p < l->end && (*p == ' ' || *p == '\t'))
		p++;
	if (p != l->end || off > max_end || size > max_end - off)
		return false;

	/* An array's length must divide its size (libtraceevent divides by it). */
	br = memchr(decl, '[', (size_t)(semi - decl));
	if (br) {
		const char *q = br + 1;

		while (q < semi && *q >= '0' && *q <= '9' && n < 1000000)
			n = n * 10 + (uint64_t)(*q++ - '0');
		if (q >= semi || *q != ']')
			return false;
		if (n && (size == 0 || size % n))
			return false;
	}
	if (memmem(decl, (size_t)(semi - decl), "__data_loc", 10) ||
	    memmem(decl, (size_t)(semi - decl), "__rel_loc", 9)) {
		if (size != 4)
			return false;
	}
	*ret_end = off + size;
	*ret_common = memmem(decl, (size_t)(semi - decl), " common_", 8) != NULL;
	/* The name: the last identifier before the array brackets, if any. */
	{
		const char *e = br ? br : semi, *b = e;

		while (b > decl && is_ident(b[-1]))
			b--;
		ret_name->p = b;
		ret_name->len = (size_t)(e - b);
	}
	return ret_name->len > 0;
}

/*
 * After the ']' at p that closes an index (REC->field[N]): what follows
 * must be an operator libtraceevent 1.7 knows, or the end of the
 * argument. An unknown one there ('=', '.', '->', ';', '{', an assignment,
 * another '[') sends its parser through a NULL pointer.
 */
static bool index_end_ok(const char *p, const char *end)
{
	char c, n;

	for (p++; p < end && (*p == ' ' || *p == '\t' || *p == '\n'); p++)
		;
	if (p >= end)
		return true;
	c = *p;
	n = p + 1 < end ? p[1] : '\0';
	if (c && strchr("[.;{}", c))
		return false;
	if (c == '=' && n != '=')
		return false;
	if (c == '-' && n == '>')
		return false;
	return !(strchr("+-*/%&|^", c) && n == '=');
}

/* Characters no print fmt has outside its strings; libtraceevent 1.7 crashes on some. */
#define PRINT_ARGS_NEVER "$@#`\\"

/*
 * A print fmt: its strings terminated, its brackets balanced (the
 * expression parser of libtraceevent 1.7 follows a NULL argument out of
 * an expression cut short), an index followed by an operator it knows, no
 * character that is not C outside strings, and no division or remainder
 * by anything but a non-zero constant (libtraceevent evaluates them on
 * record values).
 */
static bool check_print_args(const char *p, const char *end)
{
	char open[DECODE_MAX_PRINT_DEPTH];
	const char *opened_at[DECODE_MAX_PRINT_DEPTH];
	unsigned depth = 0;
	bool quoted = false;

	for (; p < end; p++) {
		if (*p == '\\' && quoted) {
			p++;
			continue;
		}
		if (*p == '"') {
			quoted = !quoted;
			continue;
		}
		if (quoted)
			continue;
		if (*p && strchr(PRINT_ARGS_NEVER, *p))
			return false;
		if (*p == '(' || *p == '{' || *p == '[') {
			if (depth == DECODE_MAX_PRINT_DEPTH)
				return false;
			opened_at[depth] = p;
			open[depth++] = *p == '(' ? ')' : *p == '{' ? '}' : ']';
			continue;
		}
		if (*p == ')' || *p == '}' || *p == ']') {
			if (!depth || open[--depth] != *p)
				return false;
			/* an index, not the empty [] of a declaration */
			if (*p == ']' && strspn(opened_at[depth] + 1, " \t") < (size_t)(p - opened_at[depth] - 1) &&
			    !index_end_ok(p, end))
				return false;
			continue;
		}
		if (*p != '/' && *p != '%')
			continue;
		{
			const char *q = p + 1;
			char *e;
			unsigned long long v;

			while (q < end && (*q == ' ' || *q == '(' || *q == ')'))
				q++;
			/* sizeof(type) is a constant, and not 0 */
			if ((size_t)(end - q) > 7 && memcmp(q, "sizeof(", 7) == 0)
				continue;
			if (q >= end || *q < '0' || *q > '9')
				return false;
			errno = 0;
			v = strtoull(q, &e, 0);
			if (errno || v == 0)
				return false;
		}
	}
	return !quoted && !depth;
}

int decode_check_format(const char *text, size_t len, const char **ret_why)
{
	const char *pos = text, *end = text + len;
	bool name = false, id = false, format = false, print = false, common_seen = false;
	unsigned int fields = 0, lines = 0;
	struct name names[DECODE_MAX_FIELDS];
	struct line l;
	uint64_t fend, common_end = 0;
	bool common;

	*ret_why = NULL;
	if (len == 0 || len > DECODE_MAX_FORMAT_LEN)
		return (*ret_why = "format text is empty or too long"), -EBADMSG;
	if (!text_ok(text, len))
		return (*ret_why = "format text has control characters or NUL"), -EBADMSG;
	while (next_line(&pos, end, &l)) {
		if (++lines > DECODE_MAX_FORMAT_LINES)
			return (*ret_why = "format text has too many lines"), -EBADMSG;
		if (print)
			return (*ret_why = "format text goes on after the print fmt"), -EBADMSG;
		if (l.p == l.end)
			continue;
		if (!name && line_starts(&l, "name: ") && l.end - l.p > 6 && l.end - l.p < 200) {
			name = true;
		} else if (name && !id && line_starts(&l, "ID: ")) {
			const char *q = l.p + 4;
			uint64_t v;
			char num[16];

			if (l.end - q <= 0 || l.end - q > 9)
				return (*ret_why = "bad event ID line"), -EBADMSG;
			memcpy(num, q, (size_t)(l.end - q));
			num[l.end - q] = ';';
			q = num;
			if (!parse_num(&q, num + (l.end - l.p - 4) + 1, &v) || v == 0 || v > 65535)
				return (*ret_why = "bad event ID line"), -EBADMSG;
			id = true;
		} else if (id && !format && l.end - l.p == 7 && line_starts(&l, "format:")) {
			format = true;
		} else if (format && fields < DECODE_MAX_FIELDS &&
			   check_field_line(&l, DECODE_MAX_RECORD, &fend, &common, &names[fields])) {
			fields++;
			if (common) {
				common_seen = true;
				common_end = MAX(common_end, fend);
			}
		} else if (format && line_starts(&l, "print fmt: \"")) {
			/* Its string may hold newlines: the rest of the text is the print fmt. */
			const char *q = l.p + strlen("print fmt: ");

			pos = end;
			if (!check_print_args(q, end))
				return (*ret_why = "print fmt has an unterminated string, unbalanced "
						   "brackets or a division by a field"), -EBADMSG;
			/* libtraceevent dereferences the field a REC->NAME finds, found or not. */
			if (!check_field_refs(q, end, names, fields))
				return (*ret_why = "print fmt names a field the format lacks"), -EBADMSG;
			print = true;
		} else
			return (*ret_why = "format text has a line of an unknown kind"), -EBADMSG;
	}
	if (!print || !fields)
		return (*ret_why = "format text lacks fields or a print fmt"), -EBADMSG;
	/* The common fields are read from every record before its event is known. */
	if (!common_seen || common_end > DECODE_COMMON_END)
		return (*ret_why = "format has no common fields in the first 8 bytes"), -EBADMSG;
	return 0;
}

int decode_check_header_page(const char *text, size_t len)
{
	const char *pos = text, *end = text + len;
	unsigned int fields = 0;
	struct line l;
	uint64_t fend;
	struct name name;
	bool common;

	if (len == 0 || len > DECODE_MAX_FORMAT_LEN || !text_ok(text, len))
		return -EBADMSG;
	while (next_line(&pos, end, &l)) {
		if (l.p == l.end)
			continue;
		/* "\tfield: u64 timestamp;\toffset:0;\tsize:8;\tsigned:0;" */
		if (!check_field_line(&l, PAGE_COMMIT_MASK + 1 + 64, &fend, &common, &name) ||
		    ++fields > 16)
			return -EBADMSG;
	}
	return fields ? 0 : -EBADMSG;
}

int decode_check_printk_formats(const char *text, size_t len)
{
	const char *pos = text, *end = text + len;
	unsigned int lines = 0;
	struct line l;

	if (len > DECODE_MAX_PRINTK_LEN || !text_ok(text, len))
		return -EBADMSG;
	while (next_line(&pos, end, &l)) {
		const char *p = l.p;
		int digits = 0;

		if (l.p == l.end)
			continue;
		if (++lines > DECODE_MAX_PRINTK_LINES)
			return -EBADMSG;
		/* 0xffffffff8a2b3c4d : "text\n" */
		if (l.end - p < 3 || memcmp(p, "0x", 2) != 0)
			return -EBADMSG;
		for (p += 2; p < l.end && isxdigit((unsigned char)*p); p++)
			digits++;
		if (digits == 0 || digits > 16 || l.end - p < 5 || memcmp(p, " : \"", 4) != 0 ||
		    l.end[-1] != '"')
			return -EBADMSG;
	}
	return 0;
}

size_t decode_drop_short_printk(char *text, size_t len)
{
	const char *pos = text, *end = text + len;
	struct line l;
	size_t out = 0;

	while (next_line(&pos, end, &l)) {
		const char *q = memchr(l.p, '"', (size_t)(l.end - l.p));
		size_t n = (size_t)(l.end - l.p);

		/* "0x... : \"xy\"": the string between the quotes, at least 2 */
		if (!q || l.end - q < 4)
			continue;
		memmove(text + out, l.p, n);
		out += n;
		if (l.end < end)
			text[out++] = '\n';
	}
	text[out] = '\0';
	return out;
}

/* The end of a dynamic (__data_loc, __rel_loc) field's data, or UINT64_MAX if unreadable. */
static uint64_t dynamic_end(struct tep_handle *tep, const struct tep_format_field *f,
			    const void *data, int size)
{
	unsigned long long v;
	uint64_t off, len;

	if ((uint64_t)f->offset + 4 > (uint64_t)size)
		return UINT64_MAX;
	v = tep_read_number(tep, (const uint8_t *)data + f->offset, 4);
	off = v & 0xffff;
	len = (v >> 16) & 0xffff;
	if (f->flags & TEP_FIELD_IS_RELATIVE)
		off += (uint64_t)f->offset + (uint64_t)f->size;
	return off + len;
}

static bool fields_fit(struct tep_handle *tep, struct tep_format_field *f, const void *data,
		       int size)
{
	for (; f; f = f->next) {
		if (f->offset < 0 || f->size < 0 ||
		    (uint64_t)f->offset + (uint64_t)f->size > (uint64_t)size)
			return false;
		if ((f->flags & TEP_FIELD_IS_DYNAMIC) &&
		    dynamic_end(tep, f, data, size) > (uint64_t)size)
			return false;
	}
	return true;
}

static bool field_fits(const struct tep_format_field *f, int size)
{
	return f->offset >= 0 && f->size > 0 &&
	       (uint64_t)f->offset + (uint64_t)f->size <= (uint64_t)size;
}

bool decode_record_fits(const struct decoder_segment *s, const void *data, int size)
{
	struct tep_record rec = { .data = (void *)data, .size = size };
	struct tep_event *e;
	int type;

	if (size < DECODE_COMMON_END)
		return false;
	type = tep_data_type(s->tep, &rec);
	/* The stack entries: what the decoder reads of them. */
	if (type == s->stack_type[DECODED_KERNEL_STACK])
		/* a kernel_stack record holds as many callers as it has */
		return !s->caller_field || (s->caller_field->offset >= 0 &&
					    (uint64_t)s->caller_field->offset <= (uint64_t)size);
	if (type == s->stack_type[DECODED_STACK_ID])
		return !s->id_field || field_fits(s->id_field, size);
	if (type == s->stack_type[DECODED_STACK_REF])
		return !s->ref_field || field_fits(s->ref_field, size);
	e = tep_find_event(s->tep, type);
	if (!e)
		return true;
	return fields_fit(s->tep, e->format.common_fields, data, size) &&
	       fields_fit(s->tep, e->format.fields, data, size);
}
