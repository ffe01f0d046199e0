/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Control requests and the frame of replies (ctl-proto.h): parsing and
 * formatting "COMMAND key=value ..." packets, and starting or formatting a
 * JSON reply. The JSON itself is lib/base/json.c's.
 */
#include <assert.h>
#include <inttypes.h>
#include <stdarg.h>

#include "ctl-proto.h"
#include "utf8.h"
#include "util.h"

/* ---- requests ---- */

static bool is_word_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
}

static bool is_blank(char c)
{
	return c == ' ' || c == '\t';
}

static bool word_valid(const char *s)
{
	size_t i;

	if (!(s[0] >= 'a' && s[0] <= 'z'))
		return false;
	for (i = 0; s[i]; i++)
		if (!is_word_char(s[i]) || i >= CTL_WORD_MAX)
			return false;
	return true;
}

/* Valid UTF-8 without control characters (a value we can send). */
static bool value_valid(const char *s)
{
	size_t n = strlen(s), i = 0;
	uint32_t cp;

	while (i < n) {
		size_t k = utf8_decode((const unsigned char *)s + i, n - i, &cp);

		if (k == 0 || cp < 0x20 || cp == 0x7f)
			return false;
		i += k;
	}
	return true;
}

#define PARSE_FAIL(r, msg)                     \
	do {                                   \
		if (ret_error)                 \
			*ret_error = (msg);    \
		return (r);                    \
	} while (0)

/*
 * Copy the word at in[*pos] to out[*o] NUL-terminated. Words are short
 * lowercase ASCII; returns false if there is none or it is too long.
 */
static bool take_word(const char *in, size_t len, size_t *pos, char *out, size_t *o)
{
	size_t start = *pos;

	if (*pos >= len || !(in[*pos] >= 'a' && in[*pos] <= 'z'))
		return false;
	while (*pos < len && is_word_char(in[*pos]))
		out[(*o)++] = in[(*pos)++];
	if (*pos - start > CTL_WORD_MAX)
		return false;
	out[(*o)++] = '\0';
	return true;
}

int ctl_command_parse(const void *data, size_t len, struct ctl_command *ret, const char **ret_error)
{
	const char *in = data;
	size_t pos = 0, o = 0, i;
	uint32_t cp;
	char *out;

	assert(ret);
	out = ret->text;
	if (len > CTL_REQUEST_MAX)
		PARSE_FAIL(-EMSGSIZE, "request longer than 4096 bytes");
	if (len > 0 && memchr(in, '\0', len))
		PARSE_FAIL(-EBADMSG, "NUL byte in request");
	/* One trailing newline is allowed, so that "echo status | socat ..." works. */
	if (len > 0 && in[len - 1] == '\n')
		len--;
	if (len > 0 && in[len - 1] == '\r')
		len--;
	for (i = 0; i < len;) {
		size_t k = utf8_decode((const unsigned char *)in + i, len - i, &cp);

		if (k == 0)
			PARSE_FAIL(-EBADMSG, "request is not valid UTF-8");
		if ((cp < 0x20 && cp != '\t') || cp == 0x7f)
			PARSE_FAIL(-EBADMSG, "control character in request");
		i += k;
	}

	ret->args.n = 0;
	while (pos < len && is_blank(in[pos]))
		pos++;
	if (pos == len)
		PARSE_FAIL(-ENODATA, "empty request");
	ret->command = out + o;
	if (!take_word(in, len, &pos, out, &o))
		PARSE_FAIL(-EBADMSG, "bad command word (expected lowercase letters, digits, '-', '_')");
	if (pos < len && !is_blank(in[pos]))
		PARSE_FAIL(-EBADMSG, "bad command word (expected lowercase letters, digits, '-', '_')");

	for (;;) {
		struct ctl_arg *a;

		while (pos < len && is_blank(in[pos]))
			pos++;
		if (pos == len)
			break;
		if (ret->args.n == CTL_ARGS_MAX)
			PARSE_FAIL(-E2BIG, "too many arguments");
		a = &ret->args.v[ret->args.n];
		a->key = out + o;
		if (!take_word(in, len, &pos, out, &o) || pos >= len || in[pos] != '=')
			PARSE_FAIL(-EBADMSG, "bad argument (expected key=value)");
		pos++;
		a->value = out + o;
		if (pos < len && in[pos] == '"') {
			pos++;
			for (;;) {
				if (pos >= len)
					PARSE_FAIL(-EBADMSG, "unterminated quoted value");
				if (in[pos] == '"')
					break;
				if (in[pos] == '\t')
					PARSE_FAIL(-EBADMSG, "control character in value");
				if (in[pos] == '\\') {
					if (pos + 1 >= len || (in[pos + 1] != '"' && in[pos + 1] != '\\'))
						PARSE_FAIL(-EBADMSG, "bad escape in quoted value");
					pos++;
				}
				out[o++] = in[pos++];
			}
			pos++;
		} else {
			while (pos < len && !is_blank(in[pos])) {
				if (in[pos] == '"' || in[pos] == '\\')
					PARSE_FAIL(-EBADMSG, "'\"' or '\\' in an unquoted value");
				out[o++] = in[pos++];
			}
		}
		out[o++] = '\0';
		if (pos < len && !is_blank(in[pos]))
			PARSE_FAIL(-EBADMSG, "bad argument (expected key=value)");
		if (ctl_args_get(&ret->args, a->key))
			PARSE_FAIL(-EBADMSG, "duplicate argument");
		ret->args.n++;
	}
	return 0;
}

const char *ctl_args_get(const struct ctl_args *args, const char *key)
{
	if (!args)
		return NULL;
	for (unsigned i = 0; i < args->n; i++)
		if (streq(args->v[i].key, key))
			return args->v[i].value;
	return NULL;
}

int ctl_command_format(struct buf *b, const char *command, const struct ctl_args *args)
{
	size_t start;
	int r;

	assert(b);
	start = b->len;
	if (!command || !word_valid(command))
		return -EINVAL;
	if (args && args->n > CTL_ARGS_MAX)
		return -EINVAL;
	r = buf_append(b, command, strlen(command));
	for (unsigned i = 0; r >= 0 && args && i < args->n; i++) {
		const char *k = args->v[i].key, *v = args->v[i].value;

		if (!k || !v || !word_valid(k) || !value_valid(v)) {
			r = -EINVAL;
			break;
		}
		r = buf_printf(b, " %s=", k);
		if (r < 0)
			break;
		if (*v && !strpbrk(v, " \"\\")) {
			r = buf_append(b, v, strlen(v));
			continue;
		}
		r = buf_append(b, "\"", 1);
		for (const char *p = v; r >= 0 && *p; p++) {
			if (*p == '"' || *p == '\\')
				r = buf_append(b, "\\", 1);
			if (r >= 0)
				r = buf_append(b, p, 1);
		}
		if (r >= 0)
			r = buf_append(b, "\"", 1);
	}
	if (r >= 0 && b->len - start > CTL_REQUEST_MAX)
		r = -EMSGSIZE;
	if (r < 0)
		b->len = start;
	return r;
}

void ctl_reply_begin(struct json_writer *w, bool ok)
{
	assert(w);

	json_object_open(w, NULL);
	json_add_int(w, "version", CTL_PROTO_VERSION);
	json_add_bool(w, "ok", ok);
}

int ctl_reply_format_error(int error, const char *message, char **ret_text)
{
	struct json_writer w;
	const char *name = NULL;
	int r;

	assert(ret_text);

	json_writer_init(&w, 0);
	ctl_reply_begin(&w, false);
	json_add_string(&w, "error", message ? message : "error");
	if (error)
		name = strerrorname_np(error < 0 ? -error : error);
	if (name)
		json_add_string(&w, "errno", name);
	json_object_close(&w);
	r = json_writer_finish(&w, ret_text, NULL);
	json_writer_done(&w);
	return r;
}
