/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * JSON text: the one writer (json_writer_*), used by the daemon's control
 * replies and by every --json output of stackmapctl, and a small reader
 * (json_parse()) for control replies. Nothing here does I/O or logs.
 */
#ifndef STACKMAPD_JSON_H
#define STACKMAPD_JSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "buf.h"

#define JSON_DEPTH_MAX 32			/* nesting accepted by the writer and reader */
#define JSON_TEXT_MAX_DEFAULT (1024 * 1024)	/* json_writer_init() with max 0 */

/*
 * JSON writer. Calls add to a growing text; the first error (-ENOMEM,
 * -E2BIG past the size cap, -EINVAL on a misuse such as a missing key in an
 * object or a key in an array, or too deep nesting) is latched and makes
 * the following calls no-ops, so that a reply is built with plain calls and
 * checked once by json_writer_finish().
 *
 * key is the member name inside an object and must be NULL inside an array
 * or for the top-level value. Strings are escaped; invalid UTF-8 in them is
 * replaced by U+FFFD so the output is always valid JSON.
 */
struct json_writer {
	struct buf buf;
	size_t max;				/* cap on the text's length */
	int error;				/* first error, 0 if none */
	unsigned depth;
	bool in_object[JSON_DEPTH_MAX + 1];	/* [depth]: object (true) or array */
	bool has_items[JSON_DEPTH_MAX + 1];	/* [depth]: a comma is needed */
};

/* Start an empty writer whose text may grow to max bytes (0: JSON_TEXT_MAX_DEFAULT, the control protocol's CTL_REPLY_MAX). */
void json_writer_init(struct json_writer *w, size_t max);

/* Free the writer's memory; the writer may be reused after json_writer_init(). */
void json_writer_done(struct json_writer *w);

void json_object_open(struct json_writer *w, const char *key);
void json_object_close(struct json_writer *w);
void json_array_open(struct json_writer *w, const char *key);
void json_array_close(struct json_writer *w);

/* A string (NULL writes null). */
void json_add_string(struct json_writer *w, const char *key, const char *s);
/* A string of len bytes that may contain NUL (escaped as \u0000). */
void json_add_stringn(struct json_writer *w, const char *key, const char *s, size_t len);
void json_add_int(struct json_writer *w, const char *key, int64_t v);
void json_add_uint(struct json_writer *w, const char *key, uint64_t v);
void json_add_bool(struct json_writer *w, const char *key, bool v);
/* Shortest of %.15g/%.17g that reads back exactly; NaN and infinities are written as null. */
void json_add_double(struct json_writer *w, const char *key, double v);
void json_add_null(struct json_writer *w, const char *key);

/*
 * Check that everything opened was closed and no error was latched, then
 * hand the NUL-terminated text to the caller (*ret_text, caller frees; its
 * length in *ret_len if not NULL) and reset the writer to empty. Returns 0
 * or the latched negative errno (-EINVAL if something is still open).
 */
int json_writer_finish(struct json_writer *w, char **ret_text, size_t *ret_len);

/* JSON reader: a parsed document is a tree of values. */
enum json_type {
	JSON_NULL,
	JSON_BOOL,
	JSON_NUMBER,
	JSON_STRING,
	JSON_ARRAY,
	JSON_OBJECT,
	JSON_TYPE_MAX
};

struct json_value {
	enum json_type type;
	char *key;			/* member name inside an object, else NULL */
	bool boolean;			/* JSON_BOOL */
	double number;			/* JSON_NUMBER */
	bool is_integer;		/* JSON_NUMBER written without fraction/exponent, fits int64 */
	int64_t integer;		/* JSON_NUMBER when is_integer */
	char *string;			/* JSON_STRING: decoded UTF-8; JSON_NUMBER: the literal */
	size_t len;			/* length of string (a decoded \u0000 stays inside) */
	struct json_value **items;	/* JSON_ARRAY, JSON_OBJECT: members in document order */
	size_t nr_items;
	size_t cap_items;		/* room in items; the parser's */
};

/*
 * Parse the JSON text of len bytes (one value, surrounding whitespace
 * allowed; it need not be NUL-terminated). On success *ret owns the tree
 * (free with json_value_free()). Returns 0, -EBADMSG on any syntax error,
 * invalid UTF-8, nesting deeper than JSON_DEPTH_MAX or trailing garbage,
 * or -ENOMEM.
 */
int json_parse(const char *text, size_t len, struct json_value **ret);

/* Free a tree from json_parse(). Accepts NULL; returns NULL. */
struct json_value *json_value_free(struct json_value *v);

/* Member key of object obj (borrowed from obj), or NULL if missing or obj is not an object. */
const struct json_value *json_get(const struct json_value *obj, const char *key);

/* The string member key of obj (borrowed), or NULL if missing or not a string. */
const char *json_get_string(const struct json_value *obj, const char *key);

/* The boolean member key of obj, or def if missing or not a boolean. */
bool json_get_bool(const struct json_value *obj, const char *key, bool def);

/*
 * How much of text is one complete JSON object or array: returns its
 * length (> 0) once the top-level value has closed, 0 while it is still
 * incomplete, -EBADMSG if the text cannot be the start of an object or
 * array. Used to reassemble a reply that spans several packets; it checks
 * only brackets and strings, json_parse() checks the rest.
 */
int json_scan_complete(const char *text, size_t len);

#endif
