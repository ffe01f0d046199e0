/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The compiled event formatter against libtraceevent itself: real kernel
 * formats (tests/unit/event-formats.h) and synthetic ones that exercise
 * every conversion, flag and operator the compiler accepts are parsed into
 * tep handles, then many records with random and edge field values (0, -1,
 * sign bits, maxima, every sched_switch state bit, known and unknown
 * symbols, empty, full and unterminated strings, records cut short) are
 * printed both ways: event_format_info() must print what tep_print_event()
 * prints, byte for byte, or decline. The kernel formats must all compile,
 * and shapes we do not reproduce must be declined.
 */
#include <limits.h>

#include <event-parse.h>

#include "event-format.h"
#include "event-formats.h"
#include "helpers.h"

#define COMMON_FIELDS FTRACE_COMMON_FIELDS_FORMAT "\n"

/* Every conversion, flag, length, cast and operator the compiler takes. */
static const char conv_format[] =
	"name: conv\nID: 9001\nformat:\n" COMMON_FIELDS
	"\tfield:int i;\toffset:8;\tsize:4;\tsigned:1;\n"
	"\tfield:unsigned int u;\toffset:12;\tsize:4;\tsigned:0;\n"
	"\tfield:long l;\toffset:16;\tsize:8;\tsigned:1;\n"
	"\tfield:short h;\toffset:24;\tsize:2;\tsigned:1;\n"
	"\tfield:char c;\toffset:26;\tsize:1;\tsigned:1;\n"
	"\tfield:unsigned char uc;\toffset:27;\tsize:1;\tsigned:0;\n"
	"\tfield:int w;\toffset:28;\tsize:4;\tsigned:1;\n"
	"\tfield:char name[8];\toffset:32;\tsize:8;\tsigned:0;\n"
	"\tfield:__data_loc char[] s;\toffset:40;\tsize:4;\tsigned:0;\n"
	"\tfield:unsigned short arr[4];\toffset:44;\tsize:8;\tsigned:0;\n\n"
	"print fmt: \"a=%5d b=%-5u c=%05x d=%#x e=%#08X f=%.3d g=%-8.3i h=%hd i=%hhd j=%hhu "
	"k=%o l=%ld m=%lu n=%lx o=%llx p=%zu q=%zd t=%10s u=%-10s| v=%.2s "
	"w=%s x=%d y=%u z=%d A=%d B=%llu C=%d D=%x E=%d F=%u G=%.0d H=%-4s| I=%05d J=%x K=%Lu L=%Ld "
	"100%% \\\"q\\\" \\t\\n %d\", "
	"REC->i, REC->u, REC->i, REC->u, REC->i, REC->i, REC->i, REC->h, REC->c, REC->uc, "
	"REC->u, REC->l, REC->l, REC->l, REC->l, REC->l, REC->l, "
	"REC->name, REC->name, REC->name, __get_str(s), "
	"(REC->i + REC->u * 3 - REC->l) / 7 % 5, (u8)REC->u << 2 | ~REC->i >> 3, "
	"(REC->i > 0 && REC->u != 5) || !REC->l, REC->i < REC->w ? REC->i : -REC->w, "
	"(s16)REC->u, (unsigned char)REC->l, REC->l >= 100, REC->arr[0] + REC->arr[3], "
	"REC->l <= -1, REC->i == 0, REC->c ? \"yes\" : \"\", REC->u >> 4, REC->u & 0xff0, "
	"(unsigned long long)REC->l, REC->i, "
	"(int)REC->l\n";

/* Shapes the compiler must leave to libtraceevent. */
static const char *const declined_formats[] = {
	"name: hexdump\nID: 9002\nformat:\n" COMMON_FIELDS
	"\tfield:unsigned char buf[4];\toffset:8;\tsize:4;\tsigned:0;\n\n"
	"print fmt: \"buf=%s\", __print_hex(REC->buf, 4)\n",
	"name: charconv\nID: 9003\nformat:\n" COMMON_FIELDS
	"\tfield:int i;\toffset:8;\tsize:4;\tsigned:1;\n\n"
	"print fmt: \"c=%c\", REC->i\n",
	"name: divfield\nID: 9004\nformat:\n" COMMON_FIELDS
	"\tfield:int i;\toffset:8;\tsize:4;\tsigned:1;\n\n"
	"print fmt: \"d=%d\", 100 / REC->i\n",
	"name: star\nID: 9005\nformat:\n" COMMON_FIELDS
	"\tfield:int i;\toffset:8;\tsize:4;\tsigned:1;\n\n"
	"print fmt: \"d=%*d\", 3, REC->i\n",
};

/* A few kernel functions, in the decoder's manner: a resolver over a sorted table. */
static const struct {
	unsigned long long addr;
	const char *name;
} syms[] = {
	{ 0xffffffff81000000ULL, "_stext" },
	{ 0xffffffff81001000ULL, "kmem_cache_alloc_noprof" },
	{ 0xffffffff81001800ULL, "kmalloc_trace" },
	{ 0xffffffff81002000ULL, "tracing_mark_write" },
	{ 0xffffffff81003000ULL, "hrtimer_wakeup" },
	{ 0xffffffff81004000ULL, "tick_nohz_handler" },
	{ 0xffffffff81005000ULL, "process_timeout" },
};
#define SYMS_END 0xffffffff81006000ULL
#define NR_SYMS (sizeof(syms) / sizeof(syms[0]))

static char *resolve(void *priv, unsigned long long *addrp, char **modp)
{
	for (size_t i = NR_SYMS; i-- > 0;)
		if (*addrp >= syms[i].addr && *addrp < SYMS_END) {
			*addrp = syms[i].addr;
			*modp = NULL;
			return (char *)syms[i].name;
		}
	return NULL;
}

/* A value for a field of size bytes: edges half of the time. */
static uint64_t pick_value(const struct tep_format_field *f)
{
	uint64_t top = f->size >= 8 ? 0 : ~0ULL << (f->size * 8);
	uint64_t sign = 1ULL << (f->size * 8 - 1);
	const uint64_t edges[] = { 0, 1, ~0ULL, sign, sign - 1, ~top, 2, 100, 0x7f, 0x80 };

	if (strstr(f->name, "state")) {
		/* sched_switch: every state bit alone, combinations, and beyond */
		uint64_t r = test_random() % 4;

		return r == 0 ? 1ULL << (test_random() % 12) : r == 1 ? test_random() % 0x200 : r == 2 ? 0 : test_random();
	}
	if (!strcmp(f->name, "call_site") || !strcmp(f->name, "function") ||
	    !strcmp(f->name, "ip")) {
		if (test_random() % 4)
			return syms[test_random() % NR_SYMS].addr + test_random() % 0x1000;
	}
	if (test_random() % 2)
		return edges[test_random() % (sizeof(edges) / sizeof(edges[0]))] & ~top;
	return test_random() & ~top;
}

static void put_num(uint8_t *p, uint64_t v, int size)
{
	for (int i = 0; i < size; i++)
		p[i] = v >> (8 * i);
}

/* A random string of at most max bytes (its NUL included when it fits). */
static size_t put_string(uint8_t *p, size_t max, bool terminate)
{
	static const char chars[] = "abcXYZ 019-_/:%\\";
	size_t n = test_random() % 3 == 0 ? 0 : test_random() % (max + 1);

	if (terminate && n >= max)
		n = max - 1;
	for (size_t i = 0; i < n; i++)
		p[i] = chars[test_random() % (sizeof(chars) - 1)];
	if (n < max)
		p[n] = '\0';
	return n;
}

/* A record of event with random fields; returns its size. */
static int make_record(const struct tep_event *event, uint8_t *buf, size_t cap)
{
	size_t end = 0;

	for (size_t i = 0; i < cap; i++)
		buf[i] = test_random();
	for (struct tep_format_field *f = event->format.fields; f; f = f->next)
		if ((size_t)(f->offset + f->size) > end)
			end = f->offset + f->size;
	for (struct tep_format_field *f = event->format.fields; f; f = f->next) {
		if (f->flags & TEP_FIELD_IS_DYNAMIC) {
			size_t n = put_string(buf + end, 40, true) + 1;

			put_num(buf + f->offset, end | n << 16, f->size);
			end += n;
		} else if (!f->size) {
			end = f->offset + put_string(buf + f->offset, 60, true) + 1;
		} else if ((f->flags & TEP_FIELD_IS_ARRAY) && f->elementsize == 1) {
			put_string(buf + f->offset, f->size, test_random() % 8);
		} else if (f->flags & TEP_FIELD_IS_ARRAY) {
			for (unsigned j = 0; j < f->arraylen; j++)
				put_num(buf + f->offset + j * f->elementsize, test_random(), f->elementsize);
		} else {
			put_num(buf + f->offset, pick_value(f), f->size);
		}
	}
	put_num(buf, event->id, 2);
	return (int)((end + 3) & ~3UL);
}

static int mismatches;

/*
 * Print one record both ways; returns whether the compiled path printed it.
 * A record cut short, or one of a format we decline, is given to
 * libtraceevent only if we printed it: libtraceevent reads past the end of
 * records, and divides by zero, where we decline.
 */
static bool compare(struct event_format_cache *c, struct tep_event *event, uint8_t *buf, int size,
		    bool cut)
{
	struct tep_record rec = { .data = buf, .size = size };
	struct trace_seq want, got;
	bool fast;

	trace_seq_init(&want);
	trace_seq_init(&got);
	trace_seq_puts(&got, "|");
	fast = event_format_info(c, &got, event, &rec);
	if (fast || !cut)
		tep_print_event(event->tep, &want, &rec, "%s", TEP_PRINT_INFO);
	trace_seq_terminate(&want);
	trace_seq_terminate(&got);
	if (fast) {
		CHECK(strcmp(want.buffer, got.buffer + 1) == 0);
		if (strcmp(want.buffer, got.buffer + 1) && mismatches++ < 10)
			fprintf(stderr, "%s:\n  libtraceevent: '%s'\n  compiled:      '%s'\n",
				event->name, want.buffer, got.buffer + 1);
	} else {
		CHECK(strcmp(got.buffer, "|") == 0);	/* declined: s untouched */
	}
	trace_seq_destroy(&want);
	trace_seq_destroy(&got);
	return fast;
}

static struct tep_handle *make_tep(bool resolver)
{
	struct tep_handle *tep = tep_alloc();

	CHECK(tep != NULL);
	tep_set_long_size(tep, 8);
	tep_set_file_bigendian(tep, TEP_LITTLE_ENDIAN);
	tep_set_local_bigendian(tep, TEP_LITTLE_ENDIAN);
	if (resolver) {
		CHECK(tep_set_function_resolver(tep, resolve, NULL) == 0);
	} else {
		for (size_t i = 0; i < NR_SYMS; i++)
			CHECK(tep_register_function(tep, (char *)syms[i].name, syms[i].addr,
						    NULL) == 0);
	}
	for (size_t i = 0; i < sizeof(kernel_formats) / sizeof(kernel_formats[0]); i++)
		CHECK(tep_parse_event(tep, kernel_formats[i].text, strlen(kernel_formats[i].text),
				      kernel_formats[i].system) == 0);
	CHECK(tep_parse_event(tep, conv_format, strlen(conv_format), "test") == 0);
	for (size_t i = 0; i < sizeof(declined_formats) / sizeof(declined_formats[0]); i++)
		(void)tep_parse_event(tep, declined_formats[i], strlen(declined_formats[i]), "test");
	return tep;
}

static bool is_declined(const struct tep_event *event)
{
	return !strcmp(event->name, "hexdump") || !strcmp(event->name, "charconv") ||
	       !strcmp(event->name, "divfield") || !strcmp(event->name, "star");
}

static void test_events(bool resolver, int per_event)
{
	_cleanup_(event_format_cache_freep) struct event_format_cache *c = event_format_cache_new();
	struct tep_handle *tep = make_tep(resolver);
	struct tep_event **events = tep_list_events(tep, TEP_EVENT_SORT_ID);
	uint8_t buf[512];

	CHECK(c && events);
	for (size_t i = 0; events && events[i]; i++) {
		struct tep_event *ev = events[i];
		int fast = 0;

		for (int n = 0; n < per_event; n++) {
			int size = make_record(ev, buf, sizeof(buf));

			fast += compare(c, ev, buf, size, is_declined(ev));
			/* cut short: printed alike, or declined */
			(void)compare(c, ev, buf, test_random() % (size + 1), true);
		}
		if (is_declined(ev))
			CHECK_MSG(fast == 0, "%s compiled", ev->name);
		else
			CHECK_MSG(fast == per_event, "%s: %d of %d compiled", ev->name, fast,
				  per_event);
	}
	tep_free(tep);		/* the cache still holds a reference */
}

/* Two handles alive at once and handles past the cache's slots: programs never mix. */
static void test_many_handles(void)
{
	_cleanup_(event_format_cache_freep) struct event_format_cache *c = event_format_cache_new();
	struct event_format_stats st;
	uint8_t buf[512];

	for (int round = 0; round < 10; round++) {
		struct tep_handle *tep = make_tep(round % 2);
		struct tep_event *ev = tep_find_event_by_name(tep, "sched", "sched_switch");
		int size;

		CHECK(ev != NULL);
		if (!ev)
			continue;
		size = make_record(ev, buf, sizeof(buf));
		CHECK(compare(c, ev, buf, size, false));
		tep_free(tep);
	}
	event_format_stats(c, &st);
	CHECK(st.types_fast == 10 && st.types_fallback == 0);
	CHECK(st.records_fast == 10 && st.records_fallback == 0);
}

int main(void)
{
	test_events(true, 3000);
	test_events(false, 1000);
	test_many_handles();
	return tests_done("test-event-format");
}
