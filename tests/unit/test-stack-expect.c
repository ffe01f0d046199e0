/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The rule of which events carry a stack and which stacks never came
 * (lib/config/stack-expect.c), and the two places that apply it to a
 * segment: the daemon's count for the index and status
 * (daemon/stack-audit.c) and the decoder behind report
 * (lib/decode/decode.c). For a table of cases (stacktrace triggers,
 * stacktrace = all and none, filters, no or a broken stored config, full
 * stacks, strict boundaries and lossless windows, one or two CPUs) a
 * segment is written, and both must count the expected stack references
 * and unresolved ones: the same figures.
 */
#include <event-parse.h>

#include "config.h"
#include "decode.h"
#include "helpers.h"
#include "page-walk.h"
#include "segment.h"
#include "stack-audit.h"
#include "stack-expect.h"
#include "stacktab-resolve.h"
#include "transcode.h"
#include "util.h"

#include "synth-segment.h"

static char *dir;

#define TICK 30
#define TOCK 31

static const char trigger_tick[] =
	"[trace]\nevents = test:tick test:tock\nstacktrace = test:tick\n";
static const char all_events[] = "[trace]\nevents = test:tick test:tock\nstacktrace = all\n";
static const char no_stacks[] = "[trace]\nevents = test:tick test:tock\nstacktrace = none\n";
static const char filtered[] =
	"[trace]\nevents = test:tick test:tock\nstacktrace = test:tick\n"
	"filter.test:tick = n > 0\n";
static const char broken[] = "[trace]\nevents = test:tick\nno_such_key = 1\n";
static const char full_stacks[] =
	"[trace]\nevents = test:tick test:tock\nstacktrace = test:tick\nstackmap = off\n";

/* ---- which events want a stack ---- */

static void test_types(void)
{
	static const struct {
		const char *config;	/* NULL: none stored */
		bool tick, tock;
		int r;
	} cases[] = {
		{ trigger_tick, true, false, 0 },
		{ all_events, true, true, 0 },
		{ no_stacks, false, false, 0 },
		{ filtered, true, false, 0 },
		{ full_stacks, true, false, 0 },
		{ "[trace]\nevents = test:tick test:tock\n", true, true, 0 },	/* all by default */
		{ broken, false, false, -EINVAL },
		{ NULL, false, false, -ENOENT },
	};

	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		struct named_text *files = NULL;
		size_t n = 0;
		struct stack_expect_types t;
		int r;

		CHECK(named_texts_append(&files, &n, "events/test/tick/format", tick_format,
					 strlen(tick_format)) == 0);
		CHECK(named_texts_append(&files, &n, "events/test/tock/format", tock_format,
					 strlen(tock_format)) == 0);
		if (cases[i].config)
			CHECK(named_texts_append(&files, &n, "config", cases[i].config,
						 strlen(cases[i].config)) == 0);
		r = stack_expect_types_load(&t, files, n);
		CHECK_MSG(r == cases[i].r, "%zu: %d", i, r);
		CHECK_MSG(stack_expect_types_has(&t, TICK) == cases[i].tick &&
			  stack_expect_types_has(&t, TOCK) == cases[i].tock, "%zu", i);
		CHECK(!stack_expect_types_has(&t, 20) && !stack_expect_types_has(&t, -1) &&
		      !stack_expect_types_has(&t, STACK_EXPECT_MAX_TYPES));
		named_texts_free(&files, &n);
	}
}

/* ---- the daemon's count and the decoder's, on a table of segments ---- */

struct seg_case {
	const char *name;
	const char *config;	/* stored config; NULL: none */
	const char *cpu[2];	/* T tick, O tock, S stack_id 5, K kernel_stack, | strict boundary */
	bool window;		/* a lossless reset window over the whole segment */
	uint64_t refs, unresolved;
};

static const struct seg_case seg_cases[] = {
	{ "trigger: each stack follows its event", trigger_tick, { "TS|TS", "" }, false, 2, 0 },
	{ "trigger: lost before the next event", trigger_tick, { "T|TS", "" }, false, 2, 1 },
	{ "trigger: an id written after the pause", trigger_tick, { "T|S", "" }, false, 1, 1 },
	{ "trigger: lost at the end of the segment", trigger_tick, { "TST|", "" }, false, 2, 1 },
	{ "trigger: tock wants none", trigger_tick, { "O|OS", "" }, false, 1, 0 },
	{ "trigger: no boundary, nothing lost", trigger_tick, { "TSO|T", "" }, false, 1, 0 },
	{ "two boundaries, one pause", trigger_tick, { "T||T", "" }, false, 1, 1 },
	{ "boundaries with nothing pending", trigger_tick, { "TS||TS", "" }, false, 2, 0 },
	{ "stacktrace = all: tock lost", all_events, { "O|O", "" }, false, 1, 1 },
	{ "stacktrace = all: an id after the pause", all_events, { "O|STS", "" }, false, 2, 1 },
	{ "stacktrace = none", no_stacks, { "T|T", "" }, false, 0, 0 },
	{ "no stored config", NULL, { "T|T", "" }, false, 0, 0 },
	{ "a config that does not load", broken, { "T|T", "" }, false, 0, 0 },
	{ "filter and trigger", filtered, { "T|T", "" }, false, 1, 1 },
	{ "full stacks: kernel_stack after the pause", full_stacks, { "T|KT", "" }, false, 0, 0 },
	{ "two CPUs, one loses its stack", trigger_tick, { "T|", "TS|TS" }, false, 3, 1 },
	{ "two CPUs, both lose one", all_events, { "TSO|", "T|O" }, false, 3, 2 },
	{ "lossless window: ambiguous ids", trigger_tick, { "TSTS", "" }, true, 2, 2 },
};

/* The segment of case c; returns its path (caller frees). */
static char *case_segment(const struct seg_case *c, size_t k)
{
	char name[32];
	struct segment_writer *w;
	uint32_t max_gen = 1;

	(void)snprintf(name, sizeof(name), "%08zx-c", k + 1);
	w = seg_open(dir, name, c->config == full_stacks ?
			 "stack_id_event_id=20\nstack_mode=full\n" :
			 "stack_id_event_id=20\nstack_mode=stackmap\n");
	add_synth_formats(w);
	if (c->config)
		CHECK(segment_writer_append_file(w, "config", c->config, strlen(c->config), 0) ==
		      0);
	for (unsigned cpu = 0; cpu < 2; cpu++) {
		struct synth_entry e[32];
		uint32_t gen = 1;
		size_t n = 0;
		uint64_t ts = 10 + cpu;

		for (const char *p = c->cpu[cpu];; p++) {
			if ((*p == '|' || !*p) && n > 0) {
				add_entries(w, cpu, e, n);
				n = 0;
			}
			if (!*p)
				break;
			if (*p == '|') {
				add_gen(w, cpu, gen + 1, gen, 0, 0);
				gen++;
				continue;
			}
			CHECK(n < ARRAY_SIZE(e));
			e[n++] = (struct synth_entry){
				.type = *p == 'T' ? TICK : *p == 'O' ? TOCK : *p == 'S' ? 20 : 4,
				.ts = ts,
			};
			ts += 10;
		}
		max_gen = MAX(max_gen, gen);
	}
	add_id5_stacks(w, max_gen + 1);
	if (c->window)
		add_gen(w, SEGMENT_NO_CPU, 2, 1, 0, 1000000);
	return seg_finish(w);
}

static void test_counts_agree(void)
{
	struct page_layout layout;

	synth_layout(&layout);
	for (size_t k = 0; k < ARRAY_SIZE(seg_cases); k++) {
		const struct seg_case *c = &seg_cases[k];
		_cleanup_free_ char *path = case_segment(c, k);
		uint64_t refs = 0, unresolved = 0, missing = 0, dec_refs, dec_unresolved;
		struct stacktab_stats st;
		struct decoded_event ev;
		struct decoder *d;
		int r;

		/* the daemon: the index's and status's figure */
		CHECK_MSG(stack_audit_unresolved(path, &layout, &refs, &unresolved) == 0, "%s",
			  c->name);

		/* the decoder: report's figure */
		CHECK(decoder_open((const char *const[]){ path }, 1, &d) == 0);
		while ((r = decoder_next(d, &ev)) != 0) {
			CHECK_MSG(r > 0, "%s: %s", c->name, decoder_error(d));
			if (r > 0 && ev.kind == DECODED_STACK_MISSING)
				missing++;
		}
		decoder_get_stats(d, &st);
		decoder_free(d);
		dec_unresolved = st.unresolved[STACKTAB_KERNEL_ID];
		dec_refs = st.resolved[STACKTAB_KERNEL_ID] + dec_unresolved;

		CHECK_MSG(refs == c->refs && unresolved == c->unresolved,
			  "%s: the daemon counts %" PRIu64 " unresolved of %" PRIu64 ", expected %"
			  PRIu64 " of %" PRIu64, c->name, unresolved, refs, c->unresolved, c->refs);
		CHECK_MSG(dec_refs == refs && dec_unresolved == unresolved,
			  "%s: the decoder counts %" PRIu64 " unresolved of %" PRIu64
			  ", the daemon %" PRIu64 " of %" PRIu64, c->name, dec_unresolved, dec_refs,
			  unresolved, refs);
		CHECK_MSG(missing <= dec_unresolved, "%s: %" PRIu64 " missing", c->name, missing);
	}
}

/* Our own bugs stop at the entry point that names them. */
static void test_misuse(void)
{
	struct stack_expect_types t;

	CHECK_ABORTS(stack_expect_types_has(NULL, TICK));
	CHECK_ABORTS(stack_expect_boundary(NULL));
	CHECK_ABORTS(stack_expect_types_load(&t, NULL, 1));
	CHECK_ABORTS(stack_expect_config(NULL, NULL));
}

int main(void)
{
	dir = test_tmpdir();
	test_misuse();
	test_types();
	test_counts_agree();
	test_rmtree(dir);
	free(dir);
	return tests_done("test-stack-expect");
}
