/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * JSON (json.h): the one writer, used for control replies and for every
 * --json output of stackmapctl, and the small reader the client uses for
 * control replies. Strings are UTF-8; invalid sequences are never written.
 */
#include <assert.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "json.h"
#include "utf8.h"
#include "util.h"

/* ---- JSON writer ---- */

static void w_fail(struct json_writer *w, int r)
{
	if (!w->error)
		w->error = r;
}

static void w_append(struct json_writer *w, const void *p, size_t n)
{
	int r;

	if (w->error)
		return;
	if (n > w->max - w->buf.len) {
		w_fail(w, -E2BIG);
		return;
	}
	r = buf_append(&w->buf, p, n);
	if (r < 0)
		w_fail(w, r);
}

static void w_puts(struct json_writer *w, const char *s)
{
	w_append(w, s, strlen(s));
}

static void w_string(struct json_writer *w, const char *s, size_t len)
{
	const unsigned char *u = (const unsigned char *)s;
	size_t i = 0, run = 0;
	char esc[8];
	uint32_t cp;

	w_append(w, "\"", 1);
	while (i < len && !w->error) {
		unsigned char c = u[i];
		size_t k;

		if (c >= 0x20 && c != '"' && c != '\\' && c < 0x80) {
			i++;
			continue;
		}
		k = c < 0x80 ? 1 : utf8_decode(u + i, len - i, &cp);
		if (k > 1) {
			i += k;		/* valid multi-byte sequence: copied as is */
			continue;
		}
		w_append(w, s + run, i - run);
		switch (c) {
		case '"': w_puts(w, "\\\""); break;
		case '\\': w_puts(w, "\\\\"); break;
		case '\n': w_puts(w, "\\n"); break;
		case '\t': w_puts(w, "\\t"); break;
		case '\r': w_puts(w, "\\r"); break;
		case '\b': w_puts(w, "\\b"); break;
		case '\f': w_puts(w, "\\f"); break;
		default:
			if (c < 0x20) {
				(void)snprintf(esc, sizeof(esc), "\\u%04x", c);
				w_puts(w, esc);
			} else {
				w_puts(w, "\\ufffd");	/* invalid UTF-8 byte */
			}
		}
		i++;
		run = i;
	}
	w_append(w, s + run, i - run);
	w_append(w, "\"", 1);
}

/* Write the separator and key that precede a value. Returns false if the writer failed. */
static bool w_value_start(struct json_writer *w, const char *key)
{
	if (w->error)
		return false;
	if (w->depth == 0 ? (key || w->has_items[0]) : (w->in_object[w->depth] != !!key)) {
		w_fail(w, -EINVAL);
		return false;
	}
	if (w->has_items[w->depth])
		w_append(w, ",", 1);
	w->has_items[w->depth] = true;
	if (key) {
		w_string(w, key, strlen(key));
		w_append(w, ":", 1);
	}
	return !w->error;
}

void json_writer_init(struct json_writer *w, size_t max)
{
	assert(w);
	*w = (struct json_writer){ .max = max ? max : JSON_TEXT_MAX_DEFAULT };
}

void json_writer_done(struct json_writer *w)
{
	buf_done(&w->buf);
	json_writer_init(w, w->max);
}

static void w_open(struct json_writer *w, const char *key, bool object)
{
	if (!w_value_start(w, key))
		return;
	if (w->depth == JSON_DEPTH_MAX) {
		w_fail(w, -EINVAL);
		return;
	}
	w->depth++;
	w->in_object[w->depth] = object;
	w->has_items[w->depth] = false;
	w_append(w, object ? "{" : "[", 1);
}

static void w_close(struct json_writer *w, bool object)
{
	if (w->error)
		return;
	if (w->depth == 0 || w->in_object[w->depth] != object) {
		w_fail(w, -EINVAL);
		return;
	}
	w->depth--;
	w_append(w, object ? "}" : "]", 1);
}

void json_object_open(struct json_writer *w, const char *key)
{
	assert(w);
	w_open(w, key, true);
}

void json_object_close(struct json_writer *w)
{
	assert(w);
	w_close(w, true);
}

void json_array_open(struct json_writer *w, const char *key)
{
	assert(w);
	w_open(w, key, false);
}

void json_array_close(struct json_writer *w)
{
	assert(w);
	w_close(w, false);
}

void json_add_stringn(struct json_writer *w, const char *key, const char *s, size_t len)
{
	assert(w);
	assert(s || len == 0);

	if (!w_value_start(w, key))
		return;
	if (s)
		w_string(w, s, len);
	else
		w_puts(w, "null");
}

void json_add_string(struct json_writer *w, const char *key, const char *s)
{
	json_add_stringn(w, key, s, s ? strlen(s) : 0);
}

void json_add_int(struct json_writer *w, const char *key, int64_t v)
{
	char s[32];

	assert(w);

	if (!w_value_start(w, key))
		return;
	(void)snprintf(s, sizeof(s), "%" PRId64, v);
	w_puts(w, s);
}

void json_add_uint(struct json_writer *w, const char *key, uint64_t v)
{
	char s[32];

	assert(w);

	if (!w_value_start(w, key))
		return;
	(void)snprintf(s, sizeof(s), "%" PRIu64, v);
	w_puts(w, s);
}

void json_add_bool(struct json_writer *w, const char *key, bool v)
{
	assert(w);

	if (w_value_start(w, key))
		w_puts(w, v ? "true" : "false");
}

void json_add_double(struct json_writer *w, const char *key, double v)
{
	char s[40];

	assert(w);

	if (!w_value_start(w, key))
		return;
	if (!isfinite(v)) {
		w_puts(w, "null");
		return;
	}
	(void)snprintf(s, sizeof(s), "%.15g", v);
	if (strtod(s, NULL) != v)
		(void)snprintf(s, sizeof(s), "%.17g", v);
	w_puts(w, s);
}

void json_add_null(struct json_writer *w, const char *key)
{
	assert(w);

	if (w_value_start(w, key))
		w_puts(w, "null");
}

int json_writer_finish(struct json_writer *w, char **ret_text, size_t *ret_len)
{
	char *text;
	size_t len;
	int r;

	assert(w);
	assert(ret_text);

	if (!w->error && (w->depth != 0 || !w->has_items[0]))
		w_fail(w, -EINVAL);
	if (w->error)
		return w->error;
	r = buf_append(&w->buf, "", 1);
	if (r < 0)
		return r;
	text = (char *)w->buf.data;
	len = w->buf.len - 1;
	w->buf = (struct buf){ 0 };
	json_writer_init(w, w->max);
	*ret_text = text;
	if (ret_len)
		*ret_len = len;
	return 0;
}

/* ---- JSON reader ---- */

struct parser {
	const char *s;
	size_t len;
	size_t pos;
	unsigned depth;
};

static void skip_ws(struct parser *p)
{
	while (p->pos < p->len && strchr(" \t\r\n", p->s[p->pos]) && p->s[p->pos])
		p->pos++;
}

static bool literal(struct parser *p, const char *word)
{
	size_t n = strlen(word);

	if (p->len - p->pos < n || memcmp(p->s + p->pos, word, n) != 0)
		return false;
	p->pos += n;
	return true;
}

static int hex4(struct parser *p, uint32_t *ret)
{
	uint32_t v = 0;

	if (p->len - p->pos < 4)
		return -EBADMSG;
	for (int i = 0; i < 4; i++) {
		char c = p->s[p->pos++];

		v <<= 4;
		if (c >= '0' && c <= '9')
			v |= (uint32_t)(c - '0');
		else if (c >= 'a' && c <= 'f')
			v |= (uint32_t)(c - 'a' + 10);
		else if (c >= 'A' && c <= 'F')
			v |= (uint32_t)(c - 'A' + 10);
		else
			return -EBADMSG;
	}
	*ret = v;
	return 0;
}

/* Parse a string at p->pos (the opening quote); *ret is allocated. */
static int parse_string(struct parser *p, char **ret, size_t *ret_len)
{
	_cleanup_free_ char *out = NULL;
	size_t o = 0, end;
	uint32_t cp;
	int r;

	p->pos++;
	/* The decoded string is never longer than its source: size it by the closing quote. */
	for (end = p->pos; end < p->len && p->s[end] != '"'; end++)
		if (p->s[end] == '\\')
			end++;
	if (end >= p->len)
		return -EBADMSG;
	out = malloc(end - p->pos + 1);
	if (!out)
		return -ENOMEM;
	for (;;) {
		unsigned char c;
		size_t k;

		if (p->pos >= p->len)
			return -EBADMSG;
		c = (unsigned char)p->s[p->pos];
		if (c == '"') {
			p->pos++;
			break;
		}
		if (c < 0x20)
			return -EBADMSG;
		if (c != '\\') {
			k = utf8_decode((const unsigned char *)p->s + p->pos, p->len - p->pos, &cp);
			if (k == 0)
				return -EBADMSG;
			memcpy(out + o, p->s + p->pos, k);
			o += k;
			p->pos += k;
			continue;
		}
		if (++p->pos >= p->len)
			return -EBADMSG;
		c = (unsigned char)p->s[p->pos++];
		switch (c) {
		case '"': out[o++] = '"'; break;
		case '\\': out[o++] = '\\'; break;
		case '/': out[o++] = '/'; break;
		case 'b': out[o++] = '\b'; break;
		case 'f': out[o++] = '\f'; break;
		case 'n': out[o++] = '\n'; break;
		case 'r': out[o++] = '\r'; break;
		case 't': out[o++] = '\t'; break;
		case 'u':
			r = hex4(p, &cp);
			if (r < 0)
				return r;
			if (cp >= 0xdc00 && cp <= 0xdfff)
				return -EBADMSG;
			if (cp >= 0xd800 && cp <= 0xdbff) {
				uint32_t lo;

				if (!literal(p, "\\u") || hex4(p, &lo) < 0 || lo < 0xdc00 || lo > 0xdfff)
					return -EBADMSG;
				cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
			}
			/* \uXXXX is 6 source bytes and decodes to at most 4 (a pair: 12 -> 4). */
			o += utf8_encode(cp, out + o);
			break;
		default:
			return -EBADMSG;
		}
	}
	out[o] = '\0';
	*ret = steal_ptr(out);
	*ret_len = o;
	return 0;
}

static bool is_digit(char c)
{
	return c >= '0' && c <= '9';
}

static int parse_number(struct parser *p, struct json_value *v)
{
	size_t start = p->pos;
	bool integer = true;
	char *end;

	if (p->pos < p->len && p->s[p->pos] == '-')
		p->pos++;
	if (p->pos >= p->len || !is_digit(p->s[p->pos]))
		return -EBADMSG;
	if (p->s[p->pos] == '0')
		p->pos++;
	else
		while (p->pos < p->len && is_digit(p->s[p->pos]))
			p->pos++;
	if (p->pos < p->len && p->s[p->pos] == '.') {
		integer = false;
		p->pos++;
		if (p->pos >= p->len || !is_digit(p->s[p->pos]))
			return -EBADMSG;
		while (p->pos < p->len && is_digit(p->s[p->pos]))
			p->pos++;
	}
	if (p->pos < p->len && (p->s[p->pos] == 'e' || p->s[p->pos] == 'E')) {
		integer = false;
		p->pos++;
		if (p->pos < p->len && (p->s[p->pos] == '+' || p->s[p->pos] == '-'))
			p->pos++;
		if (p->pos >= p->len || !is_digit(p->s[p->pos]))
			return -EBADMSG;
		while (p->pos < p->len && is_digit(p->s[p->pos]))
			p->pos++;
	}
	v->string = strndup(p->s + start, p->pos - start);
	if (!v->string)
		return -ENOMEM;
	v->len = p->pos - start;
	v->number = strtod(v->string, NULL);
	if (integer) {
		errno = 0;
		v->integer = strtoll(v->string, &end, 10);
		v->is_integer = errno == 0 && *end == '\0';
	}
	return 0;
}

static int add_item(struct json_value *parent, struct json_value *item)
{
	if (GREEDY_REALLOC(parent->items, parent->cap_items, parent->nr_items + 1) < 0)
		return -ENOMEM;
	parent->items[parent->nr_items++] = item;
	return 0;
}

static int parse_value(struct parser *p, struct json_value **ret);

/* Parse an object or array whose opening bracket is at p->pos. */
static int parse_container(struct parser *p, struct json_value *v)
{
	bool object = p->s[p->pos] == '{';
	char close = object ? '}' : ']';
	int r;

	if (++p->depth > JSON_DEPTH_MAX)
		return -EBADMSG;
	p->pos++;
	skip_ws(p);
	if (p->pos < p->len && p->s[p->pos] == close) {
		p->pos++;
		p->depth--;
		return 0;
	}
	for (;;) {
		_cleanup_free_ char *key = NULL;
		struct json_value *item = NULL;
		size_t klen;

		skip_ws(p);
		if (object) {
			if (p->pos >= p->len || p->s[p->pos] != '"')
				return -EBADMSG;
			r = parse_string(p, &key, &klen);
			if (r < 0)
				return r;
			skip_ws(p);
			if (p->pos >= p->len || p->s[p->pos] != ':')
				return -EBADMSG;
			p->pos++;
		}
		r = parse_value(p, &item);
		if (r < 0)
			return r;
		item->key = steal_ptr(key);
		r = add_item(v, item);
		if (r < 0) {
			json_value_free(item);
			return r;
		}
		skip_ws(p);
		if (p->pos >= p->len)
			return -EBADMSG;
		if (p->s[p->pos] == ',') {
			p->pos++;
			continue;
		}
		if (p->s[p->pos] != close)
			return -EBADMSG;
		p->pos++;
		p->depth--;
		return 0;
	}
}

static int parse_value(struct parser *p, struct json_value **ret)
{
	struct json_value *v;
	int r = 0;

	skip_ws(p);
	if (p->pos >= p->len)
		return -EBADMSG;
	v = calloc(1, sizeof(*v));
	if (!v)
		return -ENOMEM;
	switch (p->s[p->pos]) {
	case '{':
		v->type = JSON_OBJECT;
		r = parse_container(p, v);
		break;
	case '[':
		v->type = JSON_ARRAY;
		r = parse_container(p, v);
		break;
	case '"':
		v->type = JSON_STRING;
		r = parse_string(p, &v->string, &v->len);
		break;
	case 't':
	case 'f':
		v->type = JSON_BOOL;
		v->boolean = p->s[p->pos] == 't';
		if (!literal(p, v->boolean ? "true" : "false"))
			r = -EBADMSG;
		break;
	case 'n':
		v->type = JSON_NULL;
		if (!literal(p, "null"))
			r = -EBADMSG;
		break;
	default:
		v->type = JSON_NUMBER;
		r = parse_number(p, v);
	}
	if (r < 0) {
		json_value_free(v);
		return r;
	}
	*ret = v;
	return 0;
}

int json_parse(const char *text, size_t len, struct json_value **ret)
{
	struct parser p = { .s = text, .len = len };
	struct json_value *v = NULL;
	int r;

	assert(text || len == 0);
	assert(ret);

	r = parse_value(&p, &v);
	if (r < 0)
		return r;
	skip_ws(&p);
	if (p.pos != p.len) {
		json_value_free(v);
		return -EBADMSG;
	}
	*ret = v;
	return 0;
}

struct json_value *json_value_free(struct json_value *v)
{
	if (!v)
		return NULL;
	for (size_t i = 0; i < v->nr_items; i++)
		json_value_free(v->items[i]);
	free(v->items);
	free(v->key);
	free(v->string);
	free(v);
	return NULL;
}

const struct json_value *json_get(const struct json_value *obj, const char *key)
{
	if (!obj || obj->type != JSON_OBJECT)
		return NULL;
	for (size_t i = 0; i < obj->nr_items; i++)
		if (streq(obj->items[i]->key, key))
			return obj->items[i];
	return NULL;
}

const char *json_get_string(const struct json_value *obj, const char *key)
{
	const struct json_value *v = json_get(obj, key);

	return v && v->type == JSON_STRING ? v->string : NULL;
}

bool json_get_bool(const struct json_value *obj, const char *key, bool def)
{
	const struct json_value *v = json_get(obj, key);

	return v && v->type == JSON_BOOL ? v->boolean : def;
}

int json_scan_complete(const char *text, size_t len)
{
	size_t i = 0, depth = 0;
	bool in_string = false;

	while (i < len && strchr(" \t\r\n", text[i]) && text[i])
		i++;
	if (i == len)
		return 0;
	if (text[i] != '{' && text[i] != '[')
		return -EBADMSG;
	for (; i < len; i++) {
		char c = text[i];

		if (c == '\0')
			return -EBADMSG;
		if (in_string) {
			if (c == '\\')
				i++;
			else if (c == '"')
				in_string = false;
			continue;
		}
		if (c == '"') {
			in_string = true;
		} else if (c == '{' || c == '[') {
			depth++;
		} else if (c == '}' || c == ']') {
			if (--depth == 0)
				return i + 1 > INT32_MAX ? -EBADMSG : (int)(i + 1);
		}
	}
	return 0;
}
