/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Kernel symbols (lib/kernel/ksyms.c): parsing and looking up a kallsyms
 * text, formatting into small buffers, the subset a segment stores,
 * restricted (zeroed) and malformed tables, and loading from a file.
 */
#include <inttypes.h>

#include <event-parse.h>

#include "buf.h"
#include "helpers.h"
#include "ksyms.h"
#include "util.h"

/*
 * Out of order like a real /proc/kallsyms (modules after the core kernel,
 * data symbols mixed in), with aliases, weak symbols and module symbols.
 */
static const char fixture[] =
	"ffffffff81000000 T _stext\n"
	"ffffffff81000000 T _text\n"
	"ffffffff81000100 t __pfx_schedule\n"
	"ffffffff81000110 T schedule\n"
	"ffffffff810001d0 T schedule_timeout\n"
	"ffffffff81000200 W arch_weak_hook\n"
	"ffffffff81000240 D some_data\n"
	"ffffffff81000300 T _etext\n"
	"ffffffff82000000 d init_data\n"
	"0000000000000000 A fixed_percpu_data\n"
	"ffffffffc0201000 t ftrace_trampoline\t[__builtin__ftrace]\n"
	"ffffffffc0a02000 t mod_func_b\t[mymod]\n"
	"ffffffffc0a01000 t mod_func_a\t[mymod]\n"
	"ffffffffc0a02080 T mod_end_marker\t[mymod]\n"
	"ffffffffc0b00000 t other_func\t[other]\n";

struct lookup_case {
	uint64_t addr;
	const char *name;		/* NULL: must not resolve */
	uint64_t offset, size;
	const char *module;
	const char *formatted;
};

static const struct lookup_case cases[] = {
	/* before the first symbol */
	{ 0xffffffff80ffffffULL, NULL, 0, 0, NULL, "0xffffffff80ffffff" },
	{ 0, NULL, 0, 0, NULL, "0x0" },
	/* first symbol: the first alias in file order wins */
	{ 0xffffffff81000000ULL, "_stext", 0, 0x100, NULL, "_stext+0x0/0x100" },
	{ 0xffffffff810000ffULL, "_stext", 0xff, 0x100, NULL, "_stext+0xff/0x100" },
	{ 0xffffffff81000105ULL, "__pfx_schedule", 5, 0x10, NULL, "__pfx_schedule+0x5/0x10" },
	/* start, middle, end of a function */
	{ 0xffffffff81000110ULL, "schedule", 0, 0xc0, NULL, "schedule+0x0/0xc0" },
	{ 0xffffffff81000158ULL, "schedule", 0x48, 0xc0, NULL, "schedule+0x48/0xc0" },
	{ 0xffffffff810001cfULL, "schedule", 0xbf, 0xc0, NULL, "schedule+0xbf/0xc0" },
	{ 0xffffffff810001d0ULL, "schedule_timeout", 0, 0x30, NULL, "schedule_timeout+0x0/0x30" },
	/* weak text counts; data symbols do not cut a function short */
	{ 0xffffffff81000250ULL, "arch_weak_hook", 0x50, 0x100, NULL, "arch_weak_hook+0x50/0x100" },
	/* up to the next text symbol, even far away */
	{ 0xffffffff82000000ULL, "_etext", 0xfffd00, 0x3f200d00, NULL, "_etext+0xfffd00/0x3f200d00" },
	/* modules */
	{ 0xffffffffc0201010ULL, "ftrace_trampoline", 0x10, 0x800000, "__builtin__ftrace",
	  "ftrace_trampoline+0x10/0x800000 [__builtin__ftrace]" },
	{ 0xffffffffc0a01000ULL, "mod_func_a", 0, 0x1000, "mymod", "mod_func_a+0x0/0x1000 [mymod]" },
	{ 0xffffffffc0a02044ULL, "mod_func_b", 0x44, 0x80, "mymod", "mod_func_b+0x44/0x80 [mymod]" },
	{ 0xffffffffc0a02090ULL, "mod_end_marker", 0x10, 0xfdf80, "mymod",
	  "mod_end_marker+0x10/0xfdf80 [mymod]" },
	/* the last symbol has no known end: nothing at or after it resolves */
	{ 0xffffffffc0b00000ULL, NULL, 0, 0, NULL, "0xffffffffc0b00000" },
	{ 0xffffffffffffffffULL, NULL, 0, 0, NULL, "0xffffffffffffffff" },
};

static void check_lookups(const struct ksyms *ks, const char *what)
{
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		const struct lookup_case *c = &cases[i];
		uint64_t off = 1234, size = 5678;
		const char *mod = "untouched", *name;
		char text[128];
		int n;

		name = ksyms_lookup(ks, c->addr, &off, &size, &mod);
		if (!c->name) {
			CHECK_MSG(!name, "%s: %#" PRIx64 " resolved to %s", what, c->addr, name);
			CHECK(off == 1234 && size == 5678 && streq(mod, "untouched"));
		} else {
			CHECK_MSG(name && streq(name, c->name), "%s: %#" PRIx64 ": %s", what,
				  c->addr, name ? name : "(null)");
			CHECK_MSG(off == c->offset && size == c->size,
				  "%s: %#" PRIx64 ": off %#" PRIx64 " size %#" PRIx64, what, c->addr,
				  off, size);
			CHECK(c->module ? mod && streq(mod, c->module) : mod == NULL);
		}
		n = ksyms_format(ks, c->addr, text, sizeof(text));
		CHECK_MSG(n == (int)strlen(c->formatted) && streq(text, c->formatted),
			  "%s: format %#" PRIx64 ": '%s'", what, c->addr, text);
	}
}

static void test_parse_lookup(void)
{
	struct ksyms *ks = NULL;

	CHECK(ksyms_parse(fixture, strlen(fixture), &ks) == 0);
	if (!ks)
		return;
	CHECK(ksyms_usable(ks));
	/* 12 text symbols, one of them an alias */
	CHECK_MSG(ksyms_count(ks) == 11, "count %zu", ksyms_count(ks));
	check_lookups(ks, "full");
	/* optional outputs may be NULL */
	CHECK(streq(ksyms_lookup(ks, 0xffffffff81000158ULL, NULL, NULL, NULL), "schedule"));
	/* by name: core-kernel text only */
	CHECK(ksyms_address_of(ks, "schedule_timeout") == 0xffffffff810001d0ULL);
	CHECK(ksyms_address_of(ks, "mod_func_a") == 0);
	CHECK(ksyms_address_of(ks, "no_such_function") == 0);
	ks = ksyms_free(ks);
	CHECK(ks == NULL);
}

static void test_format_small_buffer(void)
{
	struct ksyms *ks = NULL;
	char small[8];

	CHECK(ksyms_parse(fixture, strlen(fixture), &ks) == 0);
	CHECK(ksyms_format(ks, 0xffffffff81000158ULL, small, sizeof(small)) == -ENOBUFS);
	CHECK(strlen(small) == sizeof(small) - 1);
	CHECK(ksyms_format(NULL, 0x10, small, sizeof(small)) == 4 && streq(small, "0x10"));
	ksyms_free(ks);
}

static char *resolve(void *priv, unsigned long long *addrp, char **modp)
{
	const char *mod = NULL, *name;
	uint64_t off;

	name = ksyms_lookup(priv, *addrp, &off, NULL, &mod);
	if (!name)
		return NULL;
	*addrp -= off;
	*modp = (char *)mod;
	return (char *)name;
}

static void test_subset(void)
{
	static const uint64_t addrs[] = {
		0xffffffff81000158ULL,		/* schedule */
		0xffffffff81000120ULL,		/* schedule again: one line */
		0xffffffffc0a02044ULL,		/* mod_func_b */
		0xffffffff80000000ULL,		/* unknown: skipped */
		0xffffffffc0b00010ULL,		/* after the last: skipped */
	};
	static const char expect[] =
		"ffffffff81000110 T schedule\n"
		"ffffffff810001d0 ? .end\n"
		"ffffffffc0a02000 t mod_func_b\t[mymod]\n"
		"ffffffffc0a02080 ? .end\n";
	struct ksyms *ks = NULL, *sub = NULL;
	struct buf out = {};
	uint64_t all[ARRAY_SIZE(cases)];
	int n;

	CHECK(ksyms_parse(fixture, strlen(fixture), &ks) == 0);
	n = ksyms_subset(ks, addrs, ARRAY_SIZE(addrs), &out);
	CHECK_MSG(n == 4, "lines %d", n);
	CHECK(out.len == strlen(expect) && memcmp(out.data, expect, out.len) == 0);
	CHECK(ksyms_subset(ks, addrs, 0, &out) == 0);

	/* a previous boot's addresses, its kernel text 0x200000 lower: lines moved down as much */
	{
		static const uint64_t old[] = { 0xffffffff80e00158ULL, 0xffffffffc0802044ULL };
		static const char moved[] =
			"ffffffff80e00110 T schedule\n"
			"ffffffff80e001d0 ? .end\n"
			"ffffffffc0802000 t mod_func_b\t[mymod]\n"
			"ffffffffc0802080 ? .end\n";
		struct buf mv = {};
		struct ksyms *msub = NULL;

		CHECK(ksyms_subset_moved(ks, old, ARRAY_SIZE(old), 0x200000, &mv) == 4);
		CHECK_MSG(mv.len == strlen(moved) && memcmp(mv.data, moved, mv.len) == 0, "%.*s",
			  (int)mv.len, (const char *)mv.data);
		CHECK(ksyms_parse((const char *)mv.data, mv.len, &msub) == 0);
		CHECK(msub && ksyms_lookup(msub, old[0], NULL, NULL, NULL) &&
		      streq(ksyms_lookup(msub, old[0], NULL, NULL, NULL), "schedule"));
		ksyms_free(msub);
		buf_done(&mv);
	}

	/* An address in a gap of the subset is placed nowhere, not in the symbol below it. */
	CHECK(ksyms_parse((const char *)out.data, out.len, &sub) == 0);
	CHECK(sub && ksyms_count(sub) == 2);
	CHECK(ksyms_lookup(sub, 0xffffffff81000158ULL, NULL, NULL, NULL) &&
	      streq(ksyms_lookup(sub, 0xffffffff81000158ULL, NULL, NULL, NULL), "schedule"));
	CHECK(!ksyms_lookup(sub, 0xffffffff810001d8ULL, NULL, NULL, NULL));
	CHECK(!ksyms_lookup(sub, 0xffffffff81000250ULL, NULL, NULL, NULL));
	CHECK(!ksyms_lookup(sub, 0xffffffffc0a01000ULL, NULL, NULL, NULL));
	{
		char text[64];

		CHECK(ksyms_format(sub, 0xffffffff81000250ULL, text, sizeof(text)) > 0 &&
		      streq(text, "0xffffffff81000250"));
	}
	sub = ksyms_free(sub);

	/* A subset built for every case address resolves them all the same way. */
	buf_reset(&out);
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++)
		all[i] = cases[i].addr;
	CHECK(ksyms_subset(ks, all, ARRAY_SIZE(all), &out) > 0);
	CHECK(ksyms_parse((const char *)out.data, out.len, &sub) == 0);
	if (sub)
		check_lookups(sub, "subset");

	/* libtraceevent, resolving through the subset, finds the same functions. */
	{
		struct tep_handle *tep = tep_alloc();
		char *text = strndup((const char *)out.data, out.len);

		CHECK(tep && text);
		if (tep && text && sub) {
			CHECK(tep_set_function_resolver(tep, resolve, sub) == 0);
			for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
				const char *f;

				if (!cases[i].name)
					continue;
				f = tep_find_function(tep, cases[i].addr);
				CHECK_MSG(f && streq(f, cases[i].name), "tep %#" PRIx64 ": %s",
					  cases[i].addr, f ? f : "(null)");
			}
		}
		free(text);
		tep_free(tep);
	}

	buf_done(&out);
	ksyms_free(sub);
	ksyms_free(ks);
}

static void test_restricted(void)
{
	static const char hidden[] =
		"0000000000000000 T _stext\n"
		"0000000000000000 T schedule\n"
		"0000000000000000 t mod_func\t[mymod]\n";
	struct ksyms *ks = NULL;
	char text[32];

	CHECK(ksyms_parse(hidden, strlen(hidden), &ks) == 0);
	CHECK(!ksyms_usable(ks));
	CHECK(ksyms_lookup(ks, 0, NULL, NULL, NULL) == NULL);
	CHECK(ksyms_lookup(ks, 0xffffffff81000000ULL, NULL, NULL, NULL) == NULL);
	CHECK(ksyms_format(ks, 0x1234, text, sizeof(text)) == 6 && streq(text, "0x1234"));
	ks = ksyms_free(ks);

	/* No text symbols at all is not usable either. */
	CHECK(ksyms_parse("", 0, &ks) == 0);
	CHECK(ks && !ksyms_usable(ks) && ksyms_count(ks) == 0);
	ksyms_free(ks);
}

static void test_malformed(void)
{
	static const char *const bad[] = {
		"zzzz T foo\n",
		"ffffffff81000000\n",
		"ffffffff81000000 T\n",
		"ffffffff81000000 T \n",
		"ffffffff81000000 TT foo\n",
		"11112222333344445 T foo\n",
		"ffffffff81000000 T foo junk\n",
		"ffffffff81000000 t foo\t[]\n",
		"ffffffff81000000 t foo\t[mod\n",
	};
	static const char ok[] = "\n  \nffffffff81000000 T foo\r\nffffffff81000010 T barzzz";

	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		struct ksyms *ks = NULL;

		CHECK_MSG(ksyms_parse(bad[i], strlen(bad[i]), &ks) == -EINVAL, "'%s'", bad[i]);
		CHECK(ks == NULL);
	}
	{
		struct ksyms *ks = NULL;

		/* blank lines, CRLF, no final newline; not NUL-terminated input */
		CHECK(ksyms_parse(ok, strlen(ok) - 3, &ks) == 0);
		CHECK(ksyms_count(ks) == 2);
		CHECK(streq(ksyms_lookup(ks, 0xffffffff81000005ULL, NULL, NULL, NULL), "foo"));
		ksyms_free(ks);
	}
}

static void test_load(void)
{
	_cleanup_free_ char *dir = test_tmpdir();
	char path[4096];
	struct ksyms *ks = NULL;
	FILE *f;

	snprintf(path, sizeof(path), "%s/kallsyms", dir);
	f = fopen(path, "w");
	CHECK(f != NULL);
	if (f) {
		fputs(fixture, f);
		fclose(f);
	}
	CHECK(ksyms_load(path, &ks) == 0);
	if (ks)
		check_lookups(ks, "load");
	ksyms_free(ks);
	ks = NULL;

	/* the same without the last newline: read line by line, the last line counts too */
	f = fopen(path, "w");
	CHECK(f != NULL);
	if (f) {
		fwrite(fixture, 1, strlen(fixture) - 1, f);
		fclose(f);
	}
	CHECK(fixture[strlen(fixture) - 1] == '\n');
	CHECK(ksyms_load(path, &ks) == 0);
	if (ks)
		check_lookups(ks, "load, no final newline");
	ksyms_free(ks);
	CHECK(unlink(path) == 0);
	CHECK(ksyms_load(path, &ks) == -ENOENT);
	CHECK(rmdir(dir) == 0);
}

/*
 * A file many times the loader's read size: lines cross every boundary,
 * and a last line without a newline ends it. The table must be the one
 * ksyms_parse() makes of the same text; a line longer than any symbol's
 * is refused.
 */
static void test_load_large(void)
{
	_cleanup_free_ char *dir = test_tmpdir();
	_cleanup_(buf_done) struct buf text = {};
	struct ksyms *loaded = NULL, *parsed = NULL;
	uint64_t addrs[64];
	char path[4096];

	snprintf(path, sizeof(path), "%s/kallsyms", dir);
	for (unsigned int i = 0; i < 20000; i++) {
		uint64_t a = 0xffffffff81000000ULL + 16ULL * i;

		if (i % 7 == 3)
			CHECK(buf_printf(&text, "%016" PRIx64 " d data_%u\n", a, i) == 0);
		else if (i % 5 == 1)
			CHECK(buf_printf(&text, "%016" PRIx64 " t func_%u_with_a_longer_name\t[mod%u]\n",
					 a, i, i / 1000) == 0);
		else
			CHECK(buf_printf(&text, "%016" PRIx64 " T func_%u\n", a, i) == 0);
	}
	CHECK(text.len > 8 * 64 * 1024);
	CHECK(write_file_atomic(path, text.data, text.len - 1) == 0);	/* no final newline */
	CHECK(ksyms_load(path, &loaded) == 0);
	CHECK(ksyms_parse((const char *)text.data, text.len, &parsed) == 0);
	CHECK_MSG(loaded && parsed && ksyms_count(loaded) == ksyms_count(parsed) &&
		  ksyms_count(parsed) == 20000 - 20000 / 7,
		  "%zu loaded, %zu parsed", ksyms_count(loaded), ksyms_count(parsed));
	if (loaded && parsed) {
		_cleanup_(buf_done) struct buf a = {}, b = {};

		for (unsigned int i = 0; i < 64; i++)
			addrs[i] = 0xffffffff81000000ULL + 16ULL * (i * 311 % 20000) + 4;
		CHECK(ksyms_subset(loaded, addrs, 64, &a) > 0);
		CHECK(ksyms_subset(parsed, addrs, 64, &b) > 0);
		CHECK(a.len == b.len && memcmp(a.data, b.data, a.len) == 0);
		/* the last symbol has no end; the one before it ends at the last */
		CHECK(ksyms_lookup(loaded, 0xffffffff81000000ULL + 16ULL * 19998, NULL, NULL, NULL));
	}
	ksyms_free(loaded);
	ksyms_free(parsed);
	loaded = NULL;

	buf_reset(&text);
	CHECK(buf_printf(&text, "ffffffff81000000 T ") == 0);
	for (unsigned int i = 0; i < 70000; i++)
		CHECK(buf_append(&text, "x", 1) == 0);
	CHECK(write_file_atomic(path, text.data, text.len) == 0);
	CHECK(ksyms_load(path, &loaded) == -EINVAL);
	CHECK(!loaded);
	CHECK(unlink(path) == 0);
	CHECK(rmdir(dir) == 0);
}

/* Not a check: how long the real table takes, when it is readable. */
static void bench_proc_kallsyms(void)
{
	struct ksyms *ks = NULL;
	uint64_t t0, t1, t2, found = 0;
	char text[256];

	t0 = now_usec(CLOCK_MONOTONIC);
	if (ksyms_load("/proc/kallsyms", &ks) < 0 || !ksyms_usable(ks)) {
		fprintf(stderr, "# /proc/kallsyms not usable here, no timing\n");
		ksyms_free(ks);
		return;
	}
	t1 = now_usec(CLOCK_MONOTONIC);
	for (uint64_t i = 0; i < 1000000; i++) {
		uint64_t a = 0xffffffff81000000ULL + (i * 2654435761ULL) % 0x1000000;

		if (ksyms_format(ks, a, text, sizeof(text)) > 0 && text[0] != '0')
			found++;
	}
	t2 = now_usec(CLOCK_MONOTONIC);
	fprintf(stderr, "# /proc/kallsyms: %zu text symbols, load %" PRIu64 " ms, "
		"1M formats %" PRIu64 " ms (%" PRIu64 " resolved)\n",
		ksyms_count(ks), (t1 - t0) / 1000, (t2 - t1) / 1000, found);
	{
		/* read line by line or whole, the same table */
		_cleanup_free_ char *all = NULL;
		struct ksyms *whole = NULL;
		size_t len;

		CHECK(read_file("/proc/kallsyms", &all, &len) == 0);
		CHECK(all && ksyms_parse(all, len, &whole) == 0);
		CHECK_MSG(whole && ksyms_count(whole) == ksyms_count(ks), "%zu against %zu",
			  ksyms_count(whole), ksyms_count(ks));
		ksyms_free(whole);
	}
	ksyms_free(ks);
}

int main(void)
{
	test_parse_lookup();
	test_format_small_buffer();
	test_subset();
	test_restricted();
	test_malformed();
	test_load();
	test_load_large();
	bench_proc_kallsyms();
	return tests_done("test-ksyms");
}
