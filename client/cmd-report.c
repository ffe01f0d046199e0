/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Offline commands that decode events: report (trace-cmd report layout,
 * every frame as the kernel wrote it) and folded (flame graph input, from
 * client/sample-source.h: without the tracing machinery's frames unless
 * --raw-stacks).
 *
 * Exit status: 0 when every segment decoded, 1 when any was unreadable,
 * damaged, cut short or recovered after a crash (everything readable is
 * printed first), 2 on usage errors.
 */
#include <getopt.h>
#include <inttypes.h>

#include <event-parse.h>

#include "cmd-common.h"
#include "commands.h"
#include "decode.h"
#include "event-format.h"
#include "log.h"
#include "sample-source.h"
#include "selection.h"
#include "strmap.h"
#include "util.h"
#include "wallclock.h"

#define REPORT_STDOUT_BUFFER (1 << 20)

/* Nanosecond clocks print as s.us, like trace-cmd; counter clocks as raw counts. */
static bool clock_in_ns(const char *clock)
{
	return !cmd_clock_is_counter(clock);
}

/* Say how many stack references did not resolve (they are marked in the output). */
static void note_unresolved(const struct selection *sel)
{
	uint64_t bad = 0, all = 0;

	for (int k = 0; k < STACKTAB_KIND_MAX; k++) {
		bad += sel->stats.unresolved[k];
		all += sel->stats.unresolved[k] + sel->stats.resolved[k];
	}
	if (bad)
		log_notice("%" PRIu64 " of %" PRIu64 " stack references could not be resolved",
			   bad, all);
}

static void print_frame(struct trace_seq *s, const struct decoded_event *ev, uint16_t i)
{
	const char *func;
	uint64_t addr;

	if (ev->text) {
		trace_seq_printf(s, "\n=> %s", ev->frames[i]);
		return;
	}
	addr = ev->ips[i];
	func = tep_find_function(ev->tep, addr);
	if (!func && addr == DECODE_FTRACE_TRAMPOLINE)
		func = "[FTRACE TRAMPOLINE]";
	if (func)
		trace_seq_printf(s, "\n=> %s (%" PRIx64 ")", func, addr);
	else
		trace_seq_printf(s, "\n=> %" PRIx64, addr);
}

/* An event whose type the segment has no format for: libtraceevent cannot print it. */
static void print_unknown(struct trace_seq *s, const struct decoded_event *ev, bool ns)
{
	int pid = tep_data_pid(ev->tep, ev->record);

	trace_seq_printf(s, "%16s-%-5d [%03d]", tep_data_comm_from_pid(ev->tep, pid), pid, ev->cpu);
	if (ns)
		trace_seq_printf(s, " %5" PRIu64 ".%06" PRIu64 ":", ev->ts / 1000000000,
				 ev->ts % 1000000000 / 1000);
	else
		trace_seq_printf(s, " %11" PRIu64 ":", ev->ts);
	trace_seq_printf(s, " [UNKNOWN EVENT TYPE %d]", tep_data_type(ev->tep, ev->record));
}

/*
 * The printed frames of daemon stacks (stack_ref), which a segment stores
 * once and its events name again and again: formatted once per segment
 * and stack, not once per event. Direct-mapped; the key is the segment's
 * serial (decoder_segment_serial(): a later segment may get a closed one's
 * address, never its serial) and the stack's id.
 */
#define STACK_TEXT_SLOTS 8192
struct stack_text {
	uint64_t segment;
	uint32_t id;
	char *text;
	size_t len;
};
static struct stack_text *stack_texts;

static void stack_texts_free(void)
{
	if (!stack_texts)
		return;
	for (size_t i = 0; i < STACK_TEXT_SLOTS; i++)
		free(stack_texts[i].text);
	free(stack_texts);
	stack_texts = NULL;
}

static void print_frames(struct trace_seq *s, const struct decoded_event *ev)
{
	uint64_t serial = decoder_segment_serial(ev->seg);
	struct stack_text *t;
	struct trace_seq f;
	uint32_t h;

	if (ev->kind != DECODED_STACK_REF || (!stack_texts &&
	    !(stack_texts = calloc(STACK_TEXT_SLOTS, sizeof(*stack_texts))))) {
		for (uint16_t i = 0; i < ev->nr; i++)
			print_frame(s, ev, i);
		return;
	}
	h = (ev->stack_id * 2654435761u + (uint32_t)serial * 40503u) % STACK_TEXT_SLOTS;
	t = &stack_texts[h];
	if (!t->text || t->segment != serial || t->id != ev->stack_id) {
		trace_seq_init(&f);
		for (uint16_t i = 0; i < ev->nr; i++)
			print_frame(&f, ev, i);
		trace_seq_terminate(&f);
		free(t->text);
		*t = (struct stack_text){ .segment = serial, .id = ev->stack_id,
					  .text = strndup(f.buffer, f.len), .len = f.len };
		trace_seq_destroy(&f);
		if (!t->text) {
			for (uint16_t i = 0; i < ev->nr; i++)
				print_frame(s, ev, i);
			return;
		}
	}
	trace_seq_puts(s, t->text);
}

/*
 * The line's start and the INFO part, from formats compiled once per event
 * type (event-format.h); libtraceevent prints the types and records they
 * decline. The hidden STACKMAPCTL_FORMAT=libtraceevent has libtraceevent
 * print everything (to compare the two); STACKMAPCTL_FORMAT=stats counts
 * both ways on stderr.
 */
enum info_mode { INFO_UNSET, INFO_COMPILED, INFO_STATS, INFO_LIBTRACEEVENT };
static enum info_mode info_mode;
static struct event_format_cache *info_formats;

/* The compiled formats, or NULL when libtraceevent prints everything. */
static struct event_format_cache *formats(void)
{
	if (info_mode == INFO_UNSET) {
		const char *e = getenv("STACKMAPCTL_FORMAT");

		info_mode = e && streq(e, "libtraceevent") ? INFO_LIBTRACEEVENT :
			    e && streq(e, "stats") ? INFO_STATS : INFO_COMPILED;
		if (info_mode != INFO_LIBTRACEEVENT)
			info_formats = event_format_cache_new();
	}
	return info_formats;
}

static void print_info(struct trace_seq *s, const struct decoded_event *ev)
{
	struct event_format_cache *f = formats();

	if (!f || !event_format_info(f, s, ev->event, ev->record))
		tep_print_event(ev->tep, s, ev->record, "%s", TEP_PRINT_INFO);
}

/* COMM-PID [CPU] TIME: as libtraceevent prints "%16s-%-5d [%03d]" and " %6.1000d:". */
static void print_task_time(struct trace_seq *s, const struct decoded_event *ev, bool ns)
{
	struct event_format_cache *f = formats();
	int pid = tep_data_pid(ev->tep, ev->record);

	if (!f || !event_format_task_time(f, s, tep_data_comm_from_pid(ev->tep, pid), pid,
					  ev->record->cpu, ns, ev->record->ts)) {
		tep_print_event(ev->tep, s, ev->record, "%16s-%-5d [%03d]", TEP_PRINT_COMM,
				TEP_PRINT_PID, TEP_PRINT_CPU);
		if (ns)
			tep_print_event(ev->tep, s, ev->record, " %6.1000d:", TEP_PRINT_TIME);
	}
	/* libtraceevent would scale it as nanoseconds: a counter prints as it is. */
	if (!ns)
		trace_seq_printf(s, " %11" PRIu64 ":", ev->ts);
}

static void info_formats_free(void)
{
	struct event_format_stats st;

	if (info_formats && info_mode == INFO_STATS) {
		event_format_stats(info_formats, &st);
		fprintf(stderr, "event formats: %zu compiled, %zu left to libtraceevent; "
			"records: %llu compiled, %llu by libtraceevent\n", st.types_fast,
			st.types_fallback, st.records_fast, st.records_fallback);
	}
	info_formats = event_format_cache_free(info_formats);
}

/* trace-cmd report's layout: COMM-PID [CPU] TIME: NAME: (padded to 20) INFO */
static void print_known(struct trace_seq *s, const struct decoded_event *ev, bool ns)
{
	static const char spaces[] = "                    ";	/* 20 */
	const char *name = ev->event->name;
	size_t len;

	/* A stack_ref is a kernel_stack the daemon stored once: print it as the kernel wrote it. */
	if (ev->kind == DECODED_STACK_REF)
		name = "kernel_stack";

	print_task_time(s, ev, ns);
	len = strlen(name);
	trace_seq_putc(s, ' ');
	trace_seq_puts(s, name);
	trace_seq_puts(s, ": ");
	if (len < 20)
		trace_seq_puts(s, spaces + len);

	if (!ev->is_stack) {
		print_info(s, ev);
		return;
	}
	trace_seq_puts(s, "<stack trace >");
	if (ev->resolved)
		print_frames(s, ev);
	else if (ev->kind == DECODED_KERNEL_STACK)
		trace_seq_printf(s, "\n=> <%s>", ev->unresolved_reason);
	else
		trace_seq_printf(s, "\n=> <unresolved %s %" PRIu32 ": %s>",
				 ev->kind == DECODED_STACK_ID ? "stack_id" : "stack_ref", ev->stack_id,
				 ev->unresolved_reason);
}

/* Format ev into s and, unless hold (the caller rewrites it), print it. */
static void print_event(struct trace_seq *s, const struct decoded_event *ev, bool ns, bool hold)
{
	size_t len;

	trace_seq_reset(s);
	if (ev->event)
		print_known(s, ev, ns);
	else
		print_unknown(s, ev, ns);
	trace_seq_terminate(s);
	len = s->len;
	if (len && s->buffer[len - 1] == '\n')
		s->buffer[--len] = '\0';
	if (hold)
		return;
	fwrite(s->buffer, 1, len, stdout);
	fputc('\n', stdout);
}

static void report_usage(FILE *f)
{
	fprintf(f, "Usage: stackmapctl report [OPTIONS] [SEGMENT|DIRECTORY...]\n"
		   "  --events        only events, without their stacks\n"
		   "  --wall          print wall-clock dates instead of trace-clock seconds\n"
		   SELECTION_USAGE);
}

struct report_ctx {
	struct trace_seq s;
	struct selection *sel;
	uint64_t clock_seg;		/* serial of the segment clock_ns is of */
	bool clock_ns;
	bool events_only;
	bool wall;
	struct progress bar;
};

static void report_progress(size_t done, void *userdata)
{
	struct report_ctx *ctx = userdata;

	progress_update(&ctx->bar, done);
}

static int report_group(struct selection *sel, size_t g, void *userdata)
{
	printf("# %s\n", selection_group_label(sel, g));
	return 0;
}

/* --wall: the date replaces the trace-clock time after the CPU column. */
static void print_wall(struct report_ctx *ctx, const struct decoded_event *ev)
{
	const char *line = ctx->s.buffer, *cpu_end = strstr(line, "]"), *colon;
	char date[48];
	uint64_t real;

	colon = cpu_end ? strchr(cpu_end, ':') : NULL;
	if (!colon || !selection_wall(ctx->sel, ev, &real)) {
		printf("%s\n", line);	/* no CLOCK pairs: keep the trace clock */
		return;
	}
	wallclock_format(real, date, sizeof(date));
	printf("%.*s %s%s\n", (int)(cpu_end + 1 - line), line, date, colon);
}

static int report_event(struct decoded_event *ev, void *userdata)
{
	struct report_ctx *ctx = userdata;

	/* trace-cmd 3.1.6's words for events the kernel lost before a page */
	if (ev->lost_before > 0)
		printf("CPU:%u [%lld EVENTS DROPPED]\n", ev->cpu, ev->lost_before);
	else if (ev->lost_before < 0)
		printf("CPU:%u [EVENTS DROPPED]\n", ev->cpu);
	if (ctx->events_only && ev->is_stack)
		return 0;
	/* no entry to print, only that the event before it lost its stack */
	if (ev->kind == DECODED_STACK_MISSING) {
		printf("=> <unresolved: %s>\n", ev->unresolved_reason);
		return 0;
	}
	if (decoder_segment_serial(ev->seg) != ctx->clock_seg) {	/* looked up once a segment */
		ctx->clock_seg = decoder_segment_serial(ev->seg);
		ctx->clock_ns = clock_in_ns(decoder_segment_meta(ev->seg, "clock"));
	}
	print_event(&ctx->s, ev, ctx->clock_ns, ctx->wall);
	if (ctx->wall)
		print_wall(ctx, ev);
	return 0;
}

int cmd_report(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "events", no_argument, NULL, 'e' },
		{ "wall", no_argument, NULL, 'w' },
		{ "help", no_argument, NULL, 'h' },
		SELECTION_OPTIONS,
		{}
	};
	_cleanup_(selection_done) struct selection sel;
	struct report_ctx ctx = { .sel = &sel };
	int c, r;

	selection_init(&sel);
	optind = 0;
	while ((c = selection_getopt(&sel, argc, argv, "+hc:", opts)) > 0) {
		switch (c) {
		case 'e':
			ctx.events_only = true;
			break;
		case 'w':
			ctx.wall = true;
			break;
		case 'h':
			report_usage(stdout);
			return 0;
		default:
			report_usage(stderr);
			return 2;
		}
	}
	if (c < 0)
		return 2;
	r = selection_resolve(&sel, argc - optind, argv + optind);
	if (r < 0)
		return selection_resolve_status(r);

	/* hundreds of MB of text: write it in large blocks, not st_blksize ones */
	if (!isatty(STDOUT_FILENO))
		(void)setvbuf(stdout, NULL, _IOFBF, REPORT_STDOUT_BUFFER);
	trace_seq_init(&ctx.s);
	cmd_progress_init(&ctx.bar, "report", sel.nr_paths, false);
	r = selection_decode(&sel, &(struct selection_run){ .event = report_event,
							    .group = report_group,
							    .progress = report_progress,
							    .userdata = &ctx });
	progress_done(&ctx.bar);
	note_unresolved(&sel);
	trace_seq_destroy(&ctx.s);
	stack_texts_free();
	info_formats_free();
	if (r < 0)
		return 1;
	if (fflush(stdout) != 0) {
		log_errno(LOG_ERR, -errno, "cannot write the report");
		return 1;
	}
	return r;
}

/* ---- folded ---- */

/* Folded lines and their counts: a string hash table. */
/* A folded stack and how many times it was seen, for sorting the output. */
struct fold {
	const char *key;		/* borrowed from the strmap */
	uint64_t count;
};

static int fold_cmp(const void *a, const void *b)
{
	return strcmp(((const struct fold *)a)->key, ((const struct fold *)b)->key);
}

/* One frame as a flame graph wants it: the function name, no offset, no ';'. */
static int append_name(struct buf *b, const char *f)
{
	for (size_t k = 0; f[k]; k++) {
		int r = buf_append(b, f[k] == ';' ? ":" : &f[k], 1);

		if (r < 0)
			return r;
	}
	return 0;
}

struct folded_ctx {
	struct strmap *folds;
	struct buf b;
};

/* The sample's event, then its frames from the outermost in: each folded line once in folds, with its count. */
static int folded_sample(const struct sample *s, void *userdata)
{
	struct folded_ctx *ctx = userdata;
	char addr[SAMPLE_FRAME_NAME_MAX];
	size_t idx;
	int r;

	if (!s->nr_frames)
		return 0;
	buf_reset(&ctx->b);
	r = append_name(&ctx->b, s->event);
	for (size_t i = s->nr_frames; r >= 0 && i-- > 0;) {
		r = buf_append(&ctx->b, ";", 1);
		if (r >= 0)
			r = append_name(&ctx->b, sample_frame_name(&s->frames[i], addr, sizeof(addr)));
	}
	if (r >= 0)
		r = strmap_intern(ctx->folds, (const char *)ctx->b.data, ctx->b.len, &idx);
	if (r >= 0)
		(*strmap_counter(ctx->folds, idx))++;
	if (r < 0)
		return log_errno(LOG_ERR, r, "cannot fold stacks");
	return 0;
}

int cmd_folded(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "help", no_argument, NULL, 'h' },
		SAMPLE_SOURCE_OPTIONS,
		SELECTION_OPTIONS,
		{}
	};
	const char *usage = "Usage: stackmapctl folded [--raw-stacks] [OPTIONS] [SEGMENT|DIRECTORY...]\n"
		SAMPLE_SOURCE_USAGE SELECTION_USAGE;
	_cleanup_(selection_done) struct selection sel;
	_cleanup_(strmap_freep) struct strmap *folds = NULL;
	_cleanup_free_ struct fold *all = NULL;
	struct sample_source_options so = { .progress_label = "folded", .orphan_stacks = true };
	struct folded_ctx ctx = {};
	size_t n;
	int c, r;

	selection_init(&sel);
	optind = 0;
	while ((c = selection_getopt(&sel, argc, argv, "+hc:", opts)) > 0) {
		if (c == SAMPLE_SOURCE_OPT_RAW_STACKS) {
			so.raw_stacks = true;
			continue;
		}
		if (c == 'h') {
			printf("%s", usage);
			return 0;
		}
		fprintf(stderr, "%s", usage);
		return 2;
	}
	if (c < 0)
		return 2;
	r = selection_resolve(&sel, argc - optind, argv + optind);
	if (r < 0)
		return selection_resolve_status(r);

	folds = ctx.folds = strmap_new();
	if (!folds) {
		log_errno(LOG_ERR, -ENOMEM, "cannot fold stacks");
		return 1;
	}
	r = sample_source_run(&sel, &so, folded_sample, &ctx);
	note_unresolved(&sel);
	buf_done(&ctx.b);
	if (r < 0)
		return 1;

	/* Sorted so that equal inputs give equal outputs (diffable flame graph input). */
	n = strmap_size(folds);
	all = calloc(n ? n : 1, sizeof(*all));
	if (!all) {
		log_errno(LOG_ERR, -ENOMEM, "cannot fold stacks");
		return 1;
	}
	for (size_t i = 0; i < n; i++)
		all[i] = (struct fold){ strmap_get(folds, i, NULL), *strmap_counter(folds, i) };
	qsort(all, n, sizeof(*all), fold_cmp);
	for (size_t i = 0; i < n; i++)
		printf("%s %" PRIu64 "\n", all[i].key, all[i].count);
	if (fflush(stdout) != 0) {
		log_errno(LOG_ERR, -errno, "cannot write the stacks");
		return 1;
	}
	return r;
}
