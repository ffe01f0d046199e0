/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Control protocol: request parsing and formatting (including garbage,
 * oversize and NUL bytes), and the JSON reader on daemon replies and on
 * malformed input.
 */
#include <math.h>

#include "ctl-proto.h"
#include "helpers.h"
#include "util.h"

static const struct {
	const char *in;
	int r;
	const char *command;
	const char *args[6];		/* key, value pairs */
} parse_cases[] = {
	{ "status", 0, "status", { NULL } },
	{ "status\n", 0, "status", { NULL } },
	{ "status\r\n", 0, "status", { NULL } },
	{ "  \tping  ", 0, "ping", { NULL } },
	{ "list limit=10", 0, "list", { "limit", "10", NULL } },
	{ "snapshot reason=\"disk full\" tag=a=b", 0, "snapshot", { "reason", "disk full", "tag", "a=b", NULL } },
	{ "x k=\"q\\\"uo\\\\te\"", 0, "x", { "k", "q\"uo\\te", NULL } },
	{ "x k=", 0, "x", { "k", "", NULL } },
	{ "x k=\"\"", 0, "x", { "k", "", NULL } },
	{ "x k=\xc3\xa9t\xc3\xa9", 0, "x", { "k", "\xc3\xa9t\xc3\xa9", NULL } },
	{ "rotate-now a_b=1\tc-d=2", 0, "rotate-now", { "a_b", "1", "c-d", "2", NULL } },
	{ "", -ENODATA, NULL, { NULL } },
	{ "\n", -ENODATA, NULL, { NULL } },
	{ "   ", -ENODATA, NULL, { NULL } },
	{ "Status", -EBADMSG, NULL, { NULL } },
	{ "9lives", -EBADMSG, NULL, { NULL } },
	{ "status!", -EBADMSG, NULL, { NULL } },
	{ "{\"cmd\":\"status\"}", -EBADMSG, NULL, { NULL } },
	{ "status k", -EBADMSG, NULL, { NULL } },
	{ "status =v", -EBADMSG, NULL, { NULL } },
	{ "status K=v", -EBADMSG, NULL, { NULL } },
	{ "status k=v k=w", -EBADMSG, NULL, { NULL } },
	{ "status k=\"open", -EBADMSG, NULL, { NULL } },
	{ "status k=\"a\"b", -EBADMSG, NULL, { NULL } },
	{ "status k=a\"b", -EBADMSG, NULL, { NULL } },
	{ "status k=a\\b", -EBADMSG, NULL, { NULL } },
	{ "status k=\"\\n\"", -EBADMSG, NULL, { NULL } },
	{ "status k=\"a\tb\"", -EBADMSG, NULL, { NULL } },
	{ "status\x01", -EBADMSG, NULL, { NULL } },
	{ "status\x7f", -EBADMSG, NULL, { NULL } },
	{ "status\n\n", -EBADMSG, NULL, { NULL } },
	{ "status k=\xc3", -EBADMSG, NULL, { NULL } },
	{ "status k=\xc0\x80", -EBADMSG, NULL, { NULL } },		/* overlong NUL */
	{ "status k=\xed\xa0\x80", -EBADMSG, NULL, { NULL } },		/* surrogate */
	{ "status k=\xf4\x90\x80\x80", -EBADMSG, NULL, { NULL } },	/* > U+10FFFF */
	{ "\xff\xfe", -EBADMSG, NULL, { NULL } },
	{ "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", -EBADMSG, NULL, { NULL } },	/* 33 chars */
	{ "a b=1 c=2 d=3 e=4 f=5 g=6 h=7 i=8 j=9 k=10 l=11 m=12 n=13 o=14 p=15 q=16 r=17",
	  -E2BIG, NULL, { NULL } },
};

static void test_parse_table(void)
{
	for (size_t i = 0; i < ARRAY_SIZE(parse_cases); i++) {
		struct ctl_command c;
		const char *why = NULL;
		int r;

		r = ctl_command_parse(parse_cases[i].in, strlen(parse_cases[i].in), &c, &why);
		CHECK_MSG(r == parse_cases[i].r, "case %zu '%s': %d (%s)", i, parse_cases[i].in, r,
			  why ? why : "");
		if (r < 0) {
			CHECK_MSG(why && *why, "case %zu has no message", i);
			continue;
		}
		CHECK_MSG(streq(c.command, parse_cases[i].command), "case %zu: '%s'", i, c.command);
		unsigned n = 0;
		for (const char *const *a = parse_cases[i].args; *a; a += 2, n++) {
			const char *v = ctl_args_get(&c.args, a[0]);

			CHECK_MSG(v && streq(v, a[1]), "case %zu: %s='%s'", i, a[0], v ? v : "(null)");
		}
		CHECK_MSG(c.args.n == n, "case %zu: %u args", i, c.args.n);
	}
}

static void test_parse_limits(void)
{
	char buf[CTL_REQUEST_MAX + 16];
	struct ctl_command c;
	const char *why;

	/* Exactly the limit is fine, one more byte is not. */
	memcpy(buf, "status k=", 9);
	memset(buf + 9, 'x', sizeof(buf) - 9);
	CHECK(ctl_command_parse(buf, CTL_REQUEST_MAX, &c, NULL) == 0);
	CHECK(strlen(ctl_args_get(&c.args, "k")) == CTL_REQUEST_MAX - 9);
	CHECK(ctl_command_parse(buf, CTL_REQUEST_MAX + 1, &c, &why) == -EMSGSIZE);
	CHECK(ctl_command_parse(buf, SIZE_MAX, &c, NULL) == -EMSGSIZE);

	/* Many short arguments: the decoded text still fits in c.text. */
	size_t o = (size_t)snprintf(buf, sizeof(buf), "a");
	for (int i = 0; i < CTL_ARGS_MAX; i++)
		o += (size_t)snprintf(buf + o, sizeof(buf) - o, " %c=", 'a' + i);
	CHECK(ctl_command_parse(buf, o, &c, NULL) == 0 && c.args.n == CTL_ARGS_MAX);

	/* Embedded NUL bytes anywhere, including a C string's terminator. */
	CHECK(ctl_command_parse("status\0", 7, &c, &why) == -EBADMSG);
	CHECK(ctl_command_parse("sta\0tus", 7, &c, NULL) == -EBADMSG);
	CHECK(ctl_command_parse("status k=\"a\0b\"", 14, &c, NULL) == -EBADMSG);
	CHECK(ctl_command_parse("\0", 1, &c, NULL) == -EBADMSG);
	CHECK(ctl_command_parse(NULL, 0, &c, NULL) == -ENODATA);

	/* Random garbage never crashes and is rarely accepted. */
	unsigned seed = 1;
	for (int round = 0; round < 20000; round++) {
		size_t len = (size_t)(rand_r(&seed) % 64);

		for (size_t i = 0; i < len; i++)
			buf[i] = (char)(rand_r(&seed) & 0xff);
		(void)ctl_command_parse(buf, len, &c, NULL);
	}
}

static void test_format(void)
{
	static const char *const values[] = {
		"plain", "", "with space", "q\"uote", "back\\slash", "\\\"", "a=b=c",
		"\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80", "trailing ", " leading", "=",
	};
	struct buf b = { 0 };
	struct ctl_command c;

	for (size_t i = 0; i < ARRAY_SIZE(values); i++) {
		struct ctl_args a = { .n = 2, .v = { { "first", values[i] }, { "k2", "x" } } };
		int r;

		buf_reset(&b);
		r = ctl_command_format(&b, "cmd", &a);
		CHECK_MSG(r == 0, "format '%s': %d", values[i], r);
		if (r < 0)
			continue;
		r = ctl_command_parse(b.data, b.len, &c, NULL);
		CHECK_MSG(r == 0, "parse '%.*s': %d", (int)b.len, (char *)b.data, r);
		if (r < 0)
			continue;
		CHECK(streq(c.command, "cmd") && c.args.n == 2);
		CHECK_MSG(streq(ctl_args_get(&c.args, "first"), values[i]), "round trip '%s'", values[i]);
		CHECK(streq(ctl_args_get(&c.args, "k2"), "x"));
	}

	buf_reset(&b);
	CHECK(ctl_command_format(&b, "status", NULL) == 0 && b.len == 6 && !memcmp(b.data, "status", 6));

	/* Rejected: bad words, control characters, invalid UTF-8, too long. b stays as it was. */
	struct ctl_args bad_key = { .n = 1, .v = { { "Key", "v" } } };
	struct ctl_args bad_val = { .n = 1, .v = { { "k", "a\nb" } } };
	struct ctl_args bad_utf = { .n = 1, .v = { { "k", "\xc3(" } } };
	struct ctl_args null_val = { .n = 1, .v = { { "k", NULL } } };
	size_t before = b.len;

	CHECK(ctl_command_format(&b, "Status", NULL) == -EINVAL);
	CHECK(ctl_command_format(&b, "", NULL) == -EINVAL);
	CHECK(ctl_command_format(&b, "x y", NULL) == -EINVAL);
	CHECK(ctl_command_format(&b, "x", &bad_key) == -EINVAL);
	CHECK(ctl_command_format(&b, "x", &bad_val) == -EINVAL);
	CHECK(ctl_command_format(&b, "x", &bad_utf) == -EINVAL);
	CHECK(ctl_command_format(&b, "x", &null_val) == -EINVAL);
	CHECK(b.len == before);

	char big[CTL_REQUEST_MAX + 1];
	memset(big, 'v', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	struct ctl_args too_long = { .n = 1, .v = { { "k", big } } };
	CHECK(ctl_command_format(&b, "x", &too_long) == -EMSGSIZE);
	CHECK(b.len == before);
	buf_done(&b);
}

/* A reply as the daemon builds it for "status". */
static char *make_status_reply(void)
{
	struct json_writer w;
	char *text = NULL;

	json_writer_init(&w, 0);
	ctl_reply_begin(&w, true);
	json_add_string(&w, "state", "recording");
	json_add_string(&w, "instance", "stackmapd");
	json_add_string(&w, "stack_mode", "full");
	json_add_uint(&w, "generation", 3);
	json_object_open(&w, "map");
	json_add_uint(&w, "entries", 1234);
	json_add_uint(&w, "capacity", 65536);
	json_add_uint(&w, "drops", 0);
	json_add_double(&w, "success_rate", 0.9998);
	json_object_close(&w);
	json_array_open(&w, "cpus");
	for (int cpu = 0; cpu < 4; cpu++) {
		json_object_open(&w, NULL);
		json_add_int(&w, "cpu", cpu);
		json_add_uint(&w, "events", 1000u * (unsigned)cpu);
		json_add_uint(&w, "pages", 10u * (unsigned)cpu);
		json_add_uint(&w, "bytes", 40960u * (unsigned)cpu);
		json_add_uint(&w, "lost_events", 0);
		json_add_double(&w, "rate_events_per_s", 12.5 * cpu);
		json_object_close(&w);
	}
	json_array_close(&w);
	json_object_open(&w, "segment");
	json_add_string(&w, "path", "/var/lib/stackmapd/00000012-20240101T000000.smseg.part");
	json_add_uint(&w, "bytes", 1 << 20);
	json_add_double(&w, "age_s", 41.5);
	json_object_close(&w);
	json_object_open(&w, "archive");
	json_add_string(&w, "directory", "/var/lib/stackmapd");
	json_add_uint(&w, "bytes", UINT64_C(5) << 30);
	json_add_uint(&w, "max_bytes", UINT64_C(8) << 30);
	json_add_uint(&w, "segments", 23);
	json_object_close(&w);
	json_add_uint(&w, "unresolved", 0);
	json_object_close(&w);
	CHECK(json_writer_finish(&w, &text, NULL) == 0);
	json_writer_done(&w);
	return text;
}

static void test_reader_reply(void)
{
	_cleanup_free_ char *text = make_status_reply();
	struct json_value *v = NULL;
	const struct json_value *x;
	size_t len;

	if (!text)
		return;
	len = strlen(text);
	CHECK(!strchr(text, '\n'));
	CHECK(startswith(text, "{\"version\":1,\"ok\":true,"));
	CHECK(json_parse(text, len, &v) == 0);
	if (!v)
		return;
	CHECK(v->type == JSON_OBJECT && streq(v->items[0]->key, "version"));
	CHECK(json_get_bool(v, "ok", false));
	CHECK(streq(json_get_string(v, "state"), "recording"));
	CHECK(json_get_string(v, "generation") == NULL);	/* not a string */
	x = json_get(v, "map");
	CHECK(x && x->type == JSON_OBJECT && json_get(x, "capacity")->integer == 65536);
	CHECK(json_get(x, "success_rate")->number == 0.9998);
	x = json_get(v, "cpus");
	CHECK(x && x->type == JSON_ARRAY && x->nr_items == 4);
	CHECK(x && json_get(x->items[3], "events")->integer == 3000);
	CHECK(json_get(json_get(v, "archive"), "bytes")->integer == INT64_C(5) << 30);
	CHECK(json_get(v, "nope") == NULL && json_get(NULL, "x") == NULL);
	CHECK(json_get(json_get(v, "cpus"), "cpu") == NULL);	/* not an object */
	v = json_value_free(v);

	/* Whitespace around is fine, and a reply parses the same when pretty. */
	CHECK(json_parse(" \n{ \"a\" : [ 1 , { } , [ ] ] }\r\n\t", 29, &v) == 0);
	v = json_value_free(v);

	/* Every prefix is incomplete for the packet reassembly, and invalid JSON. */
	for (size_t i = 0; i < len; i++) {
		CHECK_MSG(json_scan_complete(text, i) == 0, "prefix %zu complete", i);
		CHECK_MSG(json_parse(text, i, &v) == -EBADMSG, "prefix %zu parsed", i);
	}
	CHECK(json_scan_complete(text, len) == (int)len);
	CHECK(json_scan_complete("{\"a\":\"}\\\"]\"}xyz", 15) == 12);
	CHECK(json_scan_complete("  garbage", 9) == -EBADMSG);
	CHECK(json_scan_complete("{\0}", 3) == -EBADMSG);

	/* An error reply made by the daemon's helper. */
	_cleanup_free_ char *err = NULL;
	CHECK(ctl_reply_format_error(-EACCES, "permission denied: uid 65534 is not in group 'stackmap'",
				     &err) == 0);
	CHECK(err && json_parse(err, strlen(err), &v) == 0);
	CHECK(v && !json_get_bool(v, "ok", true) && json_get(v, "version")->integer == 1);
	CHECK(v && streq(json_get_string(v, "errno"), "EACCES"));
	CHECK(v && startswith(json_get_string(v, "error"), "permission denied: "));
	v = json_value_free(v);
}

static void test_reader_malformed(void)
{
	static const char *const bad[] = {
		"", " ", "{", "}", "[", "]", "{,}", "[,]", "[1,]", "{\"a\":1,}", "{\"a\" 1}", "{a:1}",
		"{'a':1}", "{\"a\":}", "[01]", "[1.]", "[.5]", "[1e]", "[-]", "[+1]", "[0x10]", "[NaN]",
		"[Infinity]", "[tru]", "[nul]", "[True]", "\"abc", "\"\\x\"", "\"\\u12\"", "\"\\ud800\"",
		"\"\\udc00\"", "\"\\ud800\\u0041\"", "\"a\nb\"", "\"\xff\"", "\"\xc0\x80\"", "{} {}",
		"[1] x", "{\"a\":1}}", "\"\\", "[\"\\u00",
	};
	struct json_value *v = NULL;
	char deep[2 * JSON_DEPTH_MAX + 8];
	int r;

	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		r = json_parse(bad[i], strlen(bad[i]), &v);
		CHECK_MSG(r == -EBADMSG, "'%s' -> %d", bad[i], r);
		if (r == 0)
			v = json_value_free(v);
	}
	CHECK(json_parse("[1,\0]", 5, &v) == -EBADMSG);
	CHECK(json_parse("\"a\\u0000b\"", 10, &v) == 0 && v->len == 3);
	v = json_value_free(v);
	CHECK(json_parse("\"\\ud83d\\ude00\"", 14, &v) == 0 && streq(v->string, "\xf0\x9f\x98\x80"));
	v = json_value_free(v);

	/* JSON_DEPTH_MAX levels are fine, one more is not (and no stack overflow). */
	memset(deep, '[', JSON_DEPTH_MAX);
	memset(deep + JSON_DEPTH_MAX, ']', JSON_DEPTH_MAX);
	CHECK(json_parse(deep, 2 * JSON_DEPTH_MAX, &v) == 0);
	v = json_value_free(v);
	memset(deep, '[', JSON_DEPTH_MAX + 1);
	memset(deep + JSON_DEPTH_MAX + 1, ']', JSON_DEPTH_MAX + 1);
	CHECK(json_parse(deep, 2 * JSON_DEPTH_MAX + 2, &v) == -EBADMSG);
	static char huge[100000];
	memset(huge, '[', sizeof(huge));
	CHECK(json_parse(huge, sizeof(huge), &v) == -EBADMSG);
	CHECK(json_scan_complete(huge, sizeof(huge)) == 0);

	/* Mutations of a real reply: flipped bytes, cut and spliced text. Must not crash. */
	_cleanup_free_ char *text = make_status_reply();
	size_t len = text ? strlen(text) : 0;
	_cleanup_free_ char *m = malloc(len + 1);
	unsigned seed = 7;
	int ok = 0;

	for (int round = 0; text && m && round < 20000; round++) {
		size_t n = len;

		memcpy(m, text, len);
		for (int k = 0; k < 1 + round % 4; k++) {
			size_t at = (size_t)rand_r(&seed) % len;

			switch (rand_r(&seed) % 3) {
			case 0: m[at] = (char)(rand_r(&seed) & 0xff); break;
			case 1: n = at; break;
			default: m[at] = "{}[]\",:\\0e-."[rand_r(&seed) % 12]; break;
			}
		}
		if (json_parse(m, n, &v) == 0) {
			ok++;
			v = json_value_free(v);
		}
		(void)json_scan_complete(m, n);
	}
	CHECK(ok < 20000);
}

int main(void)
{
	test_parse_table();
	test_parse_limits();
	test_format();
	test_reader_reply();
	test_reader_malformed();
	return tests_done("test-ctl-proto");
}
