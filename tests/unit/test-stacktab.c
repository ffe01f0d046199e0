/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Stack table: STACKS entry codec (round trip, malformed payloads) and the
 * resolution rules for stack ids across generations.
 */
#include <stdint.h>

#include "helpers.h"
#include "stacktab-resolve.h"
#include "stacktab.h"
#include "util.h"

#define MAX_SEEN 16

struct seen {
	size_t n;
	struct stack_entry e[MAX_SEEN];
	uint64_t ips[MAX_SEEN][8];
	char text[MAX_SEEN][4][32];
};

static int collect(const struct stack_entry *e, void *userdata)
{
	struct seen *s = userdata;
	size_t i = s->n++;

	if (i >= MAX_SEEN)
		return -E2BIG;
	s->e[i] = *e;
	s->e[i].ips = NULL;
	s->e[i].text = NULL;
	for (uint16_t k = 0; k < e->nr && k < 8; k++) {
		if (e->flags & SEGMENT_STACK_F_TEXT) {
			if (k < 4)
				snprintf(s->text[i][k], sizeof(s->text[i][k]), "%s", e->text[k]);
		} else
			s->ips[i][k] = e->ips[k];
	}
	return 0;
}

static int count_cb(const struct stack_entry *e, void *userdata)
{
	(*(size_t *)userdata)++;
	return 0;
}

static void test_round_trip(void)
{
	static const uint64_t ips[] = { 0xffffffff81000010, 0xffffffff81234567, 0x7fffffff };
	static const char *const text[] = { "schedule+0x48/0xc0", "[FTRACE TRAMPOLINE]" };
	const struct stack_entry in[] = {
		{ .generation = 1, .id = 42, .refs = 1337, .nr = 3, .ips = ips },
		{ .generation = 0, .id = 7, .refs = 2, .nr = 2, .flags = SEGMENT_STACK_F_TEXT,
		  .text = text },
		{ .generation = 3, .id = 9, .flags = SEGMENT_STACK_F_ABSENT },
		{ .generation = 2, .id = 0xffffffff, .refs = 0xffffffff, .nr = 0 },
	};
	struct buf b = {};
	struct seen s = {};

	for (size_t i = 0; i < ARRAY_SIZE(in); i++)
		CHECK(stacktab_encode(&b, &in[i]) == 0);
	/* 16-byte headers, 3 addresses, two strings with their NULs */
	CHECK(b.len == 4 * 16 + 3 * 8 + strlen(text[0]) + 1 + strlen(text[1]) + 1);
	/* little-endian on disk */
	CHECK(b.data[0] == 1 && b.data[4] == 42 && b.data[12] == 3 && b.data[16] == 0x10);

	CHECK(stacktab_decode(b.data, b.len, collect, &s) == 0);
	CHECK(s.n == ARRAY_SIZE(in));
	for (size_t i = 0; i < s.n && i < ARRAY_SIZE(in); i++) {
		CHECK(s.e[i].generation == in[i].generation);
		CHECK(s.e[i].id == in[i].id);
		CHECK(s.e[i].refs == in[i].refs);
		CHECK(s.e[i].nr == in[i].nr);
		CHECK(s.e[i].flags == in[i].flags);
	}
	CHECK(s.ips[0][0] == ips[0] && s.ips[0][1] == ips[1] && s.ips[0][2] == ips[2]);
	CHECK(streq(s.text[1][0], text[0]) && streq(s.text[1][1], text[1]));

	/* Unaligned payload decodes the same. */
	{
		uint8_t *u = malloc(b.len + 1);
		struct seen s2 = {};

		memcpy(u + 1, b.data, b.len);
		CHECK(stacktab_decode(u + 1, b.len, collect, &s2) == 0);
		CHECK(s2.n == s.n && s2.ips[0][1] == ips[1]);
		free(u);
	}

	/* An empty payload has no entries. */
	{
		struct seen s3 = {};

		CHECK(stacktab_decode(b.data, 0, collect, &s3) == 0 && s3.n == 0);
	}
	buf_done(&b);
}

static void test_encode_invalid(void)
{
	static const uint64_t ips[] = { 1 };
	const char *bad_text[] = { NULL };
	struct stack_entry e;
	struct buf b = {};

	e = (struct stack_entry){ .id = 1, .nr = 1, .flags = SEGMENT_STACK_F_ABSENT, .ips = ips };
	CHECK(stacktab_encode(&b, &e) == -EINVAL);
	e = (struct stack_entry){ .id = 1, .nr = 1, .flags = 0x8, .ips = ips };
	CHECK(stacktab_encode(&b, &e) == -EINVAL);
	e = (struct stack_entry){ .id = 1, .nr = 1, .flags = SEGMENT_STACK_F_TEXT, .text = bad_text };
	CHECK(stacktab_encode(&b, &e) == -EINVAL);
	e = (struct stack_entry){ .id = 1, .nr = 1 };
	CHECK(stacktab_encode(&b, &e) == -EINVAL);
	CHECK(b.len == 0);
	buf_done(&b);
}

static void test_malformed(void)
{
	static const uint64_t ips[] = { 0x1111, 0x2222 };
	static const char *const text[] = { "a", "bc" };
	const struct stack_entry in[] = {
		{ .generation = 1, .id = 1, .nr = 2, .ips = ips },
		{ .generation = 1, .id = 2, .nr = 2, .flags = SEGMENT_STACK_F_TEXT, .text = text },
	};
	struct buf b = {};
	size_t full, first;

	for (size_t i = 0; i < ARRAY_SIZE(in); i++)
		CHECK(stacktab_encode(&b, &in[i]) == 0);
	full = b.len;
	first = 16 + 2 * 8;

	/* Every truncation is detected; entries before the cut are delivered. */
	for (size_t l = 0; l < full; l++) {
		size_t n = 0;
		int r = stacktab_decode(b.data, l, count_cb, &n);

		if (l == 0 || l == first)
			CHECK_MSG(r == 0, "len %zu: %d", l, r);
		else
			CHECK_MSG(r == -EBADMSG, "len %zu: %d", l, r);
		CHECK(n == (l >= first ? 1u : 0u));
	}

	/* ABSENT with frames */
	{
		uint8_t p[16] = { 1, 0, 0, 0, 5, 0, 0, 0, 0, 0, 0, 0, 1, 0, SEGMENT_STACK_F_ABSENT, 0 };
		size_t n = 0;

		CHECK(stacktab_decode(p, sizeof(p), count_cb, &n) == -EBADMSG && n == 0);
	}
	/* frame count larger than the payload (no overflow of n * 8) */
	{
		uint8_t p[16] = { 1, 0, 0, 0, 5, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0, 0 };
		size_t n = 0;

		CHECK(stacktab_decode(p, sizeof(p), count_cb, &n) == -EBADMSG);
	}
	/* a TEXT frame without its NUL */
	{
		uint8_t p[19] = { 1, 0, 0, 0, 5, 0, 0, 0, 0, 0, 0, 0, 1, 0, SEGMENT_STACK_F_TEXT, 0,
				  'a', 'b', 'c' };
		size_t n = 0;

		CHECK(stacktab_decode(p, sizeof(p), count_cb, &n) == -EBADMSG);
	}
	/* Garbage never crashes (run with sanitizers) and fails cleanly. */
	{
		uint8_t g[512];
		uint32_t x = 12345;

		for (int round = 0; round < 2000; round++) {
			size_t len = (size_t)(x % sizeof(g)), n = 0;
			int r;

			for (size_t i = 0; i < len; i++) {
				x = x * 1103515245 + 12345;
				g[i] = (uint8_t)(x >> 16);
			}
			r = stacktab_decode(g, len, count_cb, &n);
			CHECK(r == 0 || r == -EBADMSG);
			{
				struct stacktab *t = stacktab_new();

				r = stacktab_add_stacks(t, g, len);
				CHECK(r == 0 || r == -EBADMSG);
				stacktab_free(t);
			}
		}
	}
	/* A callback error stops the walk and is returned. */
	{
		struct seen s = { .n = MAX_SEEN };

		CHECK(stacktab_decode(b.data, b.len, collect, &s) == -E2BIG);
	}
	buf_done(&b);
}

static void add(struct stacktab *t, uint32_t generation, uint32_t id, uint16_t flags,
		uint64_t frame)
{
	uint64_t ips[2] = { frame, 0xffffffff81000000 };
	struct stack_entry e = {
		.generation = generation, .id = id, .refs = 1, .flags = flags,
		.nr = (flags & SEGMENT_STACK_F_ABSENT) ? 0 : 2, .ips = ips,
	};
	struct buf b = {};

	CHECK(stacktab_encode(&b, &e) == 0);
	CHECK(stacktab_add_stacks(t, b.data, b.len) == 0);
	buf_done(&b);
}

static void window(struct stacktab *t, uint32_t generation, uint32_t prev, uint64_t begin,
		   uint64_t end)
{
	struct segment_generation g = {
		.generation = generation, .prev_generation = prev,
		.kind = prev ? SEGMENT_GEN_RESET_LOSSLESS : SEGMENT_GEN_ADOPTED,
		.window_begin = begin, .window_end = end,
	};

	CHECK(stacktab_add_generation(t, SEGMENT_NO_CPU, &g) == 0);
}

/* Expect id to resolve to a stack whose first frame is frame (0: unresolved with reason). */
static void expect(struct stacktab *t, uint32_t cpu, uint64_t ts, enum stacktab_kind kind,
		   uint32_t id, uint64_t frame, const char *reason, int line)
{
	const struct stack_entry *e = NULL;
	const char *why = NULL;
	int r = stacktab_resolve(t, cpu, ts, kind, id, &e, &why);

	if (frame) {
		CHECK_MSG(r == 1 && e && e->nr == 2 && e->ips[0] == frame,
			  "line %d: id %u ts %lu: r=%d reason '%s'", line, id, (unsigned long)ts, r,
			  why ? why : "");
	} else {
		CHECK_MSG(r == 0 && why && streq(why, reason),
			  "line %d: id %u ts %lu: r=%d reason '%s', expected '%s'", line, id,
			  (unsigned long)ts, r, why ? why : "(resolved)", reason);
	}
}

#define EXPECT(t, cpu, ts, id, frame) expect(t, cpu, ts, STACKTAB_KERNEL_ID, id, frame, NULL, __LINE__)
#define EXPECT_NOT(t, cpu, ts, id, reason) \
	expect(t, cpu, ts, STACKTAB_KERNEL_ID, id, 0, reason, __LINE__)

static int count_gen_cb(uint32_t cpu, const struct segment_generation *g, void *userdata)
{
	(*(size_t *)userdata)++;
	return 0;
}

static void test_windows(void)
{
	struct stacktab *t = stacktab_new();
	struct stacktab_stats st;

	CHECK(t);
	EXPECT_NOT(t, 0, 10, 5, "no generation information");

	add(t, 1, 5, 0, 0xa1);			/* id 5 moves between generations */
	add(t, 2, 5, 0, 0xb1);
	add(t, 1, 7, 0, 0xc1);			/* id 7 names the same stack in both */
	add(t, 2, 7, 0, 0xc1);
	add(t, 1, 8, 0, 0xd1);			/* id 8 gone after the reset */
	add(t, 2, 8, SEGMENT_STACK_F_ABSENT, 0);
	add(t, 1, 9, SEGMENT_STACK_F_ABSENT, 0);	/* id 9 new after the reset */
	add(t, 2, 9, 0, 0xe1);
	add(t, 1, 11, 0, 0xf1);			/* id 11 unknown to generation 2 */
	EXPECT_NOT(t, 0, 10, 5, "no generation information");

	window(t, 2, 1, 100, 200);
	window(t, 2, 1, 100, 200);			/* written again: the same window */

	EXPECT(t, 0, 50, 5, 0xa1);			/* before the window: generation 1 */
	EXPECT(t, 0, 99, 5, 0xa1);
	EXPECT(t, 0, 201, 5, 0xb1);			/* after: generation 2 */
	EXPECT(t, 3, 5000, 5, 0xb1);
	EXPECT_NOT(t, 0, 100, 5, "ambiguous between generations 1 and 2");
	EXPECT_NOT(t, 0, 150, 5, "ambiguous between generations 1 and 2");
	EXPECT_NOT(t, 0, 200, 5, "ambiguous between generations 1 and 2");
	EXPECT(t, 0, 150, 7, 0xc1);			/* same frames in both */
	EXPECT(t, 0, 150, 8, 0xd1);			/* present before, ABSENT after */
	EXPECT_NOT(t, 0, 150, 9, "ambiguous between generations 1 and 2");
	EXPECT(t, 0, 250, 9, 0xe1);
	EXPECT_NOT(t, 0, 50, 9, "id absent from generation 1");
	EXPECT_NOT(t, 0, 150, 11, "ambiguous between generations 1 and 2"); /* not proven absent */
	EXPECT_NOT(t, 0, 250, 11, "id absent from generation 2");
	EXPECT_NOT(t, 0, 250, 12345, "id absent from generation 2");

	/* a second reset, added out of order */
	add(t, 3, 5, 0, 0x31);
	window(t, 3, 2, 400, 500);
	EXPECT(t, 0, 300, 5, 0xb1);
	EXPECT(t, 0, 501, 5, 0x31);
	EXPECT_NOT(t, 0, 450, 5, "ambiguous between generations 2 and 3");
	EXPECT(t, 0, 50, 5, 0xa1);

	stacktab_get_stats(t, &st);
	CHECK_MSG(st.resolved[STACKTAB_KERNEL_ID] == 10, "%lu", (unsigned long)st.resolved[STACKTAB_KERNEL_ID]);
	CHECK_MSG(st.unresolved[STACKTAB_KERNEL_ID] == 11, "%lu", (unsigned long)st.unresolved[STACKTAB_KERNEL_ID]);
	CHECK(st.resolved[STACKTAB_DAEMON_REF] == 0 && st.unresolved[STACKTAB_DAEMON_REF] == 0);
	stacktab_free(t);

	/* A map adopted at start (no previous generation) covers earlier events. */
	t = stacktab_new();
	add(t, 1, 5, 0, 0xa1);
	window(t, 1, 0, 100, 200);
	EXPECT(t, 0, 50, 5, 0xa1);
	EXPECT(t, 0, 150, 5, 0xa1);
	EXPECT(t, 0, 250, 5, 0xa1);
	stacktab_free(t);

	/* Two windows of one reset (different bounds) act as one. */
	t = stacktab_new();
	add(t, 1, 5, 0, 0xa1);
	add(t, 2, 5, 0, 0xb1);
	add(t, 1, 7, 0, 0xc1);
	add(t, 2, 7, 0, 0xc1);
	window(t, 2, 1, 100, 200);
	window(t, 2, 1, 150, 250);
	EXPECT(t, 0, 175, 7, 0xc1);
	EXPECT(t, 0, 225, 7, 0xc1);
	EXPECT_NOT(t, 0, 225, 5, "ambiguous between generations 1 and 2");
	EXPECT(t, 0, 300, 5, 0xb1);
	EXPECT(t, 0, 50, 5, 0xa1);
	{
		size_t n = 0;

		CHECK(stacktab_foreach_generation(t, count_gen_cb, &n) == 0 && n == 2);
	}
	stacktab_free(t);

	/* Overlapping windows never resolve by guessing. */
	t = stacktab_new();
	add(t, 1, 5, 0, 0xa1);
	add(t, 2, 5, 0, 0xa1);
	add(t, 3, 5, 0, 0xa1);
	window(t, 2, 1, 100, 300);
	window(t, 3, 2, 200, 400);
	EXPECT_NOT(t, 0, 250, 5, "ambiguous between generations 1 and 3");
	EXPECT(t, 0, 150, 5, 0xa1);
	stacktab_free(t);
}

/*
 * A generation whose marker after the reset was never read back has a
 * window open to the end of time, and the next reset found behind the
 * daemon's back can only be dated from that marker: its window begins at
 * no time at all. The event at 500 may be of generation 3 (stack B).
 */
/*
 * A lossless window that says where its markers were read: on those CPUs
 * the markers order events exactly, elsewhere the guard still applies.
 */
static void test_marker_cpus(void)
{
	struct stacktab *t = stacktab_new();
	struct segment_generation g = {
		.generation = 2, .prev_generation = 1, .kind = SEGMENT_GEN_RESET_LOSSLESS,
		.window_begin = 100, .window_end = 210,	/* markers at 110 (CPU 1) and 200 (CPU 0) */
		.begin_cpu = 1, .end_cpu = 0, .guard = 10,
	};

	CHECK(t);
	add(t, 1, 5, 0, 0xa1);
	add(t, 2, 5, 0, 0xb1);
	add(t, 1, 9, SEGMENT_STACK_F_ABSENT, 0);
	add(t, 2, 9, 0, 0xe1);
	CHECK(stacktab_add_generation(t, SEGMENT_NO_CPU, &g) == 0);

	EXPECT(t, 1, 105, 5, 0xa1);		/* before the first marker, on its CPU */
	EXPECT_NOT(t, 1, 105, 9, "id absent from generation 1");
	EXPECT_NOT(t, 1, 110, 5, "ambiguous between generations 1 and 2");	/* same time: no order */
	EXPECT_NOT(t, 0, 105, 5, "ambiguous between generations 1 and 2");	/* another CPU: guard */
	EXPECT_NOT(t, 1, 150, 5, "ambiguous between generations 1 and 2");
	EXPECT_NOT(t, 0, 150, 5, "ambiguous between generations 1 and 2");
	EXPECT_NOT(t, 0, 200, 5, "ambiguous between generations 1 and 2");
	EXPECT(t, 0, 205, 5, 0xb1);		/* after the second marker, on its CPU */
	EXPECT(t, 0, 205, 9, 0xe1);
	EXPECT_NOT(t, 1, 205, 5, "ambiguous between generations 1 and 2");
	EXPECT_NOT(t, SEGMENT_NO_CPU, 205, 5, "ambiguous between generations 1 and 2");
	EXPECT(t, 1, 211, 5, 0xb1);		/* past the window: as before */
	t = stacktab_free(t);

	/* a guard wider than the window is not ours: the whole window stays ambiguous */
	t = stacktab_new();
	CHECK(t);
	add(t, 1, 5, 0, 0xa1);
	add(t, 2, 5, 0, 0xb1);
	g.guard = 60;
	CHECK(stacktab_add_generation(t, SEGMENT_NO_CPU, &g) == 0);
	EXPECT_NOT(t, 1, 105, 5, "ambiguous between generations 1 and 2");
	EXPECT_NOT(t, 0, 205, 5, "ambiguous between generations 1 and 2");
	t = stacktab_free(t);
}

static void test_unknown_begin(void)
{
	const uint64_t max = UINT64_MAX;
	struct stacktab *t;

	for (int pass = 0; pass < 2; pass++) {
		t = stacktab_new();
		CHECK(t);
		add(t, 1, 5, 0, 0xa1);
		add(t, 2, 5, 0, 0xa1);
		add(t, 3, 5, 0, 0xb1);
		window(t, 2, 1, 100, max);
		window(t, 3, 2, pass ? 400 : max - 1000000, max);
		EXPECT_NOT(t, 0, 500, 5, "ambiguous between generations 1 and 3");
		EXPECT(t, 0, 50, 5, 0xa1);		/* before every window: generation 1 */
		stacktab_free(t);
	}

	/* a chain of them: each begins where the one before it does */
	t = stacktab_new();
	add(t, 1, 5, 0, 0xa1);
	add(t, 2, 5, 0, 0xa1);
	add(t, 3, 5, 0, 0xa1);
	add(t, 4, 5, 0, 0xb1);
	window(t, 4, 3, max - 5, max);
	window(t, 3, 2, SEGMENT_WINDOW_UNKNOWN, max);
	window(t, 2, 1, 100, max);
	EXPECT_NOT(t, 0, 500, 5, "ambiguous between generations 1 and 4");
	EXPECT(t, 0, 99, 5, 0xa1);
	stacktab_free(t);

	/* a window whose markers came back in the wrong order spans both */
	t = stacktab_new();
	add(t, 1, 5, 0, 0xa1);
	add(t, 2, 5, 0, 0xb1);
	window(t, 2, 1, 300, 200);
	EXPECT_NOT(t, 0, 250, 5, "ambiguous between generations 1 and 2");
	EXPECT(t, 0, 150, 5, 0xa1);
	EXPECT(t, 0, 350, 5, 0xb1);
	stacktab_free(t);
}

static void test_strict(void)
{
	struct stacktab *t = stacktab_new();
	struct segment_generation g = {
		.generation = 3, .prev_generation = 2, .kind = SEGMENT_GEN_RESET_STRICT,
		.window_begin = 1000, .window_end = 1100,
	};

	add(t, 1, 5, 0, 0xa1);
	add(t, 2, 5, 0, 0xb1);
	add(t, 3, 5, 0, 0xc1);
	window(t, 2, 1, 100, 200);

	CHECK(stacktab_add_generation(t, 1, &g) == 0);
	/* CPU 1 is strict from now on: generation 2 until its boundary, whatever the time */
	EXPECT(t, 1, 50, 5, 0xb1);
	EXPECT(t, 1, 150, 5, 0xb1);
	EXPECT(t, 1, 5000, 5, 0xb1);
	/* other CPUs keep the windows */
	EXPECT(t, 0, 50, 5, 0xa1);
	EXPECT(t, 0, 5000, 5, 0xb1);

	CHECK(stacktab_cpu_boundary(t, 1, 3) == 0);
	EXPECT(t, 1, 50, 5, 0xc1);
	EXPECT(t, 1, 5000, 5, 0xc1);
	EXPECT(t, 0, 5000, 5, 0xb1);
	EXPECT_NOT(t, 1, 50, 6, "id absent from generation 3");

	CHECK(stacktab_cpu_boundary(t, STACKTAB_MAX_CPUS, 3) == -EINVAL);
	CHECK(stacktab_add_generation(t, STACKTAB_MAX_CPUS, &g) == -EINVAL);

	/* A strict boundary without previous generation: earlier events cannot be placed. */
	g.prev_generation = 0;
	CHECK(stacktab_add_generation(t, 7, &g) == 0);
	EXPECT_NOT(t, 7, 50, 5, "no generation information");
	stacktab_free(t);
}

struct walk {
	uint64_t last;
	size_t n, conflicts;
};

static int walk_cb(const struct stack_entry *x, bool conflict, void *userdata)
{
	struct walk *w = userdata;
	uint64_t k = (uint64_t)x->generation << 32 | x->id;

	if (w->n)
		CHECK(k > w->last);
	w->last = k;
	w->n++;
	w->conflicts += conflict;
	return 0;
}

static int gen_cb(uint32_t cpu, const struct segment_generation *g, void *userdata)
{
	(*(size_t *)userdata)++;
	CHECK(cpu == SEGMENT_NO_CPU && g->generation == 1);
	return 0;
}

static void test_daemon_refs_and_conflicts(void)
{
	struct stacktab *t = stacktab_new();
	const struct stack_entry *e = NULL;
	struct stacktab_stats st;
	size_t n = 0;

	add(t, 0, 1, 0, 0x11);
	add(t, 1, 1, 0, 0x22);
	window(t, 1, 0, 0, 0);
	expect(t, 0, 10, STACKTAB_DAEMON_REF, 1, 0x11, NULL, __LINE__);
	expect(t, 0, 10, STACKTAB_DAEMON_REF, 2, 0, "id absent from generation 0", __LINE__);
	EXPECT(t, 0, 10, 1, 0x22);

	/* two different stacks for one (generation, id) */
	add(t, 1, 10, 0, 0x100);
	add(t, 1, 10, 0, 0x200);
	EXPECT_NOT(t, 0, 10, 10, "conflicting entries");
	add(t, 1, 10, 0, 0x100);			/* and it stays so */
	EXPECT_NOT(t, 0, 10, 10, "conflicting entries");
	add(t, 0, 3, 0, 0x100);
	add(t, 0, 3, 0, 0x300);
	expect(t, 0, 10, STACKTAB_DAEMON_REF, 3, 0, "conflicting entries", __LINE__);

	/* ABSENT, then the stack: the stack replaces it */
	add(t, 1, 20, SEGMENT_STACK_F_ABSENT, 0);
	EXPECT_NOT(t, 0, 10, 20, "id absent from generation 1");
	add(t, 1, 20, 0, 0x400);
	EXPECT(t, 0, 10, 20, 0x400);
	/* a stack, then ABSENT: still the stack */
	add(t, 1, 21, 0, 0x500);
	add(t, 1, 21, SEGMENT_STACK_F_ABSENT, 0);
	EXPECT(t, 0, 10, 21, 0x500);
	/* the same stack again keeps the larger reference count */
	{
		uint64_t ips[2] = { 0x500, 0xffffffff81000000 };
		struct stack_entry x = { .generation = 1, .id = 21, .refs = 99, .nr = 2, .ips = ips };
		struct buf b = {};

		CHECK(stacktab_encode(&b, &x) == 0);
		CHECK(stacktab_add_stacks(t, b.data, b.len) == 0);
		buf_done(&b);
		CHECK(stacktab_resolve(t, 0, 10, STACKTAB_KERNEL_ID, 21, &e, NULL) == 1);
		CHECK(e && e->refs == 99);
	}

	stacktab_get_stats(t, &st);
	CHECK(st.resolved[STACKTAB_DAEMON_REF] == 1 && st.unresolved[STACKTAB_DAEMON_REF] == 2);

	/* the walk: (generation, id) order, conflicts flagged */
	{
		struct walk w = {};

		CHECK(stacktab_foreach(t, walk_cb, &w) == 0);
		CHECK(w.n == stacktab_size(t) && w.n == 6);
		CHECK(w.conflicts == 2);
	}
	CHECK(stacktab_foreach_generation(t, gen_cb, &n) == 0 && n == 1);
	stacktab_free(t);
}

static void test_frames_equal(void)
{
	uint64_t a[] = { 1, 2 }, b[] = { 1, 3 };
	const char *ta[] = { "x", "y" }, *tb[] = { "x", "y" }, *tc[] = { "x", "z" };
	struct stack_entry ea = { .nr = 2, .ips = a }, eb = { .nr = 2, .ips = b };
	struct stack_entry tea = { .nr = 2, .flags = SEGMENT_STACK_F_TEXT, .text = ta };
	struct stack_entry teb = { .nr = 2, .flags = SEGMENT_STACK_F_TEXT, .text = tb };
	struct stack_entry tec = { .nr = 2, .flags = SEGMENT_STACK_F_TEXT, .text = tc };
	struct stack_entry abs1 = { .id = 1, .flags = SEGMENT_STACK_F_ABSENT };
	struct stack_entry abs2 = { .id = 2, .flags = SEGMENT_STACK_F_ABSENT };
	struct stack_entry short_a = { .id = 3, .refs = 9, .nr = 1, .ips = a };

	CHECK(stacktab_frames_equal(&ea, &ea));
	CHECK(!stacktab_frames_equal(&ea, &eb));
	CHECK(!stacktab_frames_equal(&ea, &short_a));
	CHECK(stacktab_frames_equal(&tea, &teb));
	CHECK(!stacktab_frames_equal(&tea, &tec));
	CHECK(!stacktab_frames_equal(&ea, &tea));
	CHECK(stacktab_frames_equal(&abs1, &abs2));
	CHECK(!stacktab_frames_equal(&abs1, &ea));
	eb.ips = a;
	eb.id = 77;
	CHECK(stacktab_frames_equal(&ea, &eb));
}

static void test_many(void)
{
	struct stacktab *t = stacktab_new();
	struct buf b = {};
	size_t bad = 0;

	/* 20000 entries in one payload: the table grows and keeps every entry. */
	for (uint32_t id = 0; id < 20000; id++) {
		uint64_t ips[2] = { 0xffffffff80000000 + id, id };
		struct stack_entry e = { .generation = 1 + id % 3, .id = id, .refs = 1, .nr = 2,
					 .ips = ips };

		CHECK(stacktab_encode(&b, &e) == 0);
	}
	CHECK(stacktab_add_stacks(t, b.data, b.len) == 0);
	CHECK(stacktab_size(t) == 20000);
	for (uint32_t id = 0; id < 20000; id++) {
		const struct stack_entry *e;

		CHECK(stacktab_cpu_boundary(t, 0, 1 + id % 3) == 0);
		if (stacktab_resolve(t, 0, 0, STACKTAB_KERNEL_ID, id, &e, NULL) != 1 ||
		    e->ips[1] != id)
			bad++;
	}
	CHECK(bad == 0);
	buf_done(&b);
	stacktab_free(t);
	CHECK(stacktab_free(NULL) == NULL);
}

/* Our own bugs stop at the entry point that names them. */
static void test_misuse(void)
{
	uint8_t payload[1] = { 0 };

	CHECK_ABORTS(stacktab_add_stacks(NULL, payload, sizeof(payload)));
	CHECK_ABORTS(stacktab_resolve(NULL, 0, 0, STACKTAB_KERNEL_ID, 1, NULL, NULL));
	CHECK_ABORTS(stacktab_decode(NULL, 16, NULL, NULL));
}

int main(void)
{
	test_misuse();
	test_round_trip();
	test_encode_invalid();
	test_malformed();
	test_windows();
	test_marker_cpus();
	test_unknown_begin();
	test_strict();
	test_daemon_refs_and_conflicts();
	test_frames_equal();
	test_many();
	return tests_done("test-stacktab");
}
