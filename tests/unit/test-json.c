/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The JSON writer: escaping (control characters, quotes, invalid UTF-8),
 * numbers, and error latching (misuse, depth, size cap).
 */
#include <math.h>

#include "helpers.h"
#include "json.h"
#include "util.h"

static char *finish(struct json_writer *w, int *ret_r)
{
	char *text = NULL;

	*ret_r = json_writer_finish(w, &text, NULL);
	return text;
}

static void test_writer_escaping(void)
{
	char all[256];
	struct json_writer w;
	struct json_value *v = NULL;
	char *text;
	int r;

	/* Every byte 1..127, plus valid UTF-8 (2, 3, 4 bytes). */
	for (int i = 1; i < 128; i++)
		all[i - 1] = (char)i;
	all[127] = '\0';
	static const char *const strings[] = {
		"", "plain", "\"quoted\"", "back\\slash", "line\nbreak\ttab\r\b\f", "\x01\x1f\x7f",
		"\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80", "</script>", "/path/to/00000001-20240101T000000.smseg",
	};

	json_writer_init(&w, 0);
	json_array_open(&w, NULL);
	json_add_string(&w, NULL, all);
	for (size_t i = 0; i < ARRAY_SIZE(strings); i++)
		json_add_string(&w, NULL, strings[i]);
	json_add_stringn(&w, NULL, "a\0b", 3);
	json_add_string(&w, NULL, "bad\xff\xc3(utf8\xed\xa0\x80");
	json_add_string(&w, NULL, NULL);
	json_array_close(&w);
	text = finish(&w, &r);
	CHECK(r == 0);
	if (r < 0)
		return;
	/* No raw control characters in the output. */
	for (const char *p = text; *p; p++)
		CHECK_MSG((unsigned char)*p >= 0x20, "raw 0x%02x in output", *p);
	r = json_parse(text, strlen(text), &v);
	CHECK_MSG(r == 0, "parse %s: %d", text, r);
	if (r == 0) {
		CHECK(v->type == JSON_ARRAY && v->nr_items == ARRAY_SIZE(strings) + 4);
		CHECK(v->items[0]->type == JSON_STRING && streq(v->items[0]->string, all));
		for (size_t i = 0; i < ARRAY_SIZE(strings); i++)
			CHECK_MSG(streq(v->items[i + 1]->string, strings[i]), "string %zu", i);
		struct json_value *nul = v->items[ARRAY_SIZE(strings) + 1];
		CHECK(nul->len == 3 && !memcmp(nul->string, "a\0b", 3));
		CHECK(streq(v->items[ARRAY_SIZE(strings) + 2]->string,
			    "bad\xef\xbf\xbd\xef\xbf\xbd(utf8\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd"));
		CHECK(v->items[ARRAY_SIZE(strings) + 3]->type == JSON_NULL);
	}
	json_value_free(v);
	free(text);
	json_writer_done(&w);
}

static void test_writer_numbers(void)
{
	static const double doubles[] = { 0.0, 0.1, -1.5, 1e300, 5e-324, 123456.789, 1.0 / 3.0, 99.98 };
	struct json_writer w;
	struct json_value *v = NULL;
	char *text;
	int r;

	json_writer_init(&w, 0);
	json_object_open(&w, NULL);
	json_add_int(&w, "min", INT64_MIN);
	json_add_int(&w, "max", INT64_MAX);
	json_add_uint(&w, "umax", UINT64_MAX);
	json_add_bool(&w, "t", true);
	json_add_bool(&w, "f", false);
	json_add_null(&w, "n");
	json_add_double(&w, "nan", NAN);
	json_add_double(&w, "inf", INFINITY);
	json_array_open(&w, "d");
	for (size_t i = 0; i < ARRAY_SIZE(doubles); i++)
		json_add_double(&w, NULL, doubles[i]);
	json_array_close(&w);
	json_object_close(&w);
	text = finish(&w, &r);
	CHECK(r == 0);
	if (r < 0)
		return;
	CHECK(strstr(text, "\"d\":[0,0.1,-1.5,1e+300,") != NULL);
	r = json_parse(text, strlen(text), &v);
	CHECK_MSG(r == 0, "parse %s", text);
	if (r == 0) {
		const struct json_value *x;

		x = json_get(v, "min");
		CHECK(x && x->is_integer && x->integer == INT64_MIN);
		x = json_get(v, "max");
		CHECK(x && x->is_integer && x->integer == INT64_MAX);
		x = json_get(v, "umax");
		CHECK(x && !x->is_integer && streq(x->string, "18446744073709551615"));
		CHECK(json_get_bool(v, "t", false) && !json_get_bool(v, "f", true));
		CHECK(json_get_bool(v, "missing", true));
		CHECK(json_get(v, "n")->type == JSON_NULL);
		CHECK(json_get(v, "nan")->type == JSON_NULL && json_get(v, "inf")->type == JSON_NULL);
		x = json_get(v, "d");
		CHECK(x && x->nr_items == ARRAY_SIZE(doubles));
		for (size_t i = 0; x && i < x->nr_items; i++)
			CHECK_MSG(x->items[i]->number == doubles[i], "double %zu: %s", i,
				  x->items[i]->string);
	}
	json_value_free(v);
	free(text);
	json_writer_done(&w);
}

static void test_writer_errors(void)
{
	struct json_writer w;
	char *text;
	int r;

	/* Missing key in an object. */
	json_writer_init(&w, 0);
	json_object_open(&w, NULL);
	json_add_int(&w, NULL, 1);
	json_object_close(&w);
	text = finish(&w, &r);
	CHECK(r == -EINVAL && !text);
	json_writer_done(&w);

	/* Key inside an array; then everything else is a no-op. */
	json_writer_init(&w, 0);
	json_array_open(&w, NULL);
	json_add_int(&w, "k", 1);
	json_array_close(&w);
	CHECK(finish(&w, &r) == NULL && r == -EINVAL);
	json_writer_done(&w);

	/* Unclosed, mismatched, and two top-level values. */
	json_writer_init(&w, 0);
	json_object_open(&w, NULL);
	CHECK(finish(&w, &r) == NULL && r == -EINVAL);
	json_writer_done(&w);
	json_writer_init(&w, 0);
	json_object_open(&w, NULL);
	json_array_close(&w);
	CHECK(finish(&w, &r) == NULL && r == -EINVAL);
	json_writer_done(&w);
	json_writer_init(&w, 0);
	json_add_int(&w, NULL, 1);
	json_add_int(&w, NULL, 2);
	CHECK(finish(&w, &r) == NULL && r == -EINVAL);
	json_writer_done(&w);
	json_writer_init(&w, 0);
	CHECK(finish(&w, &r) == NULL && r == -EINVAL);
	json_writer_done(&w);

	/* Too deep. */
	json_writer_init(&w, 0);
	for (int i = 0; i <= JSON_DEPTH_MAX; i++)
		json_array_open(&w, NULL);
	CHECK(w.error == -EINVAL);
	json_writer_done(&w);

	/* The size cap: -E2BIG, latched. */
	json_writer_init(&w, 100);
	json_array_open(&w, NULL);
	for (int i = 0; i < 100; i++)
		json_add_string(&w, NULL, "0123456789");
	json_array_close(&w);
	CHECK(finish(&w, &r) == NULL && r == -E2BIG);
	CHECK(w.buf.len <= 100);
	json_writer_done(&w);

	/* A finished writer is empty and reusable. */
	json_writer_init(&w, 0);
	json_add_int(&w, NULL, 7);
	text = finish(&w, &r);
	CHECK(r == 0 && text && streq(text, "7"));
	free(text);
	json_add_bool(&w, NULL, true);
	text = finish(&w, &r);
	CHECK(r == 0 && text && streq(text, "true"));
	free(text);
	json_writer_done(&w);
}

int main(void)
{
	test_writer_escaping();
	test_writer_numbers();
	test_writer_errors();
	return tests_done("test-json");
}
