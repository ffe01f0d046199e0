/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * stackmapctl memory: live kernel memory from allocation and free events
 * (lib/export/memory.h over client/sample-source.h): the curve, the peak
 * and the stacks that held it, a chosen moment, what is still live at the
 * end, churn and what could not be paired (doc/memory.md). --pid, --comm
 * and --event choose the allocations that count; every free is read, so
 * that an allocation of the task is paired whoever frees it.
 */
#include <getopt.h>

#include "budget.h"
#include "cmd-common.h"
#include "commands-export.h"
#include "config.h"
#include "flamegraph.h"
#include "log.h"
#include "memory.h"
#include "sample-source.h"
#include "segtally.h"
#include "selection.h"

static const char memory_usage[] =
	"Usage: stackmapctl memory [--at TIME] [--baseline TIME] [--churn DURATION] [--rows N]\n"
	"                          [--limit N] [--width N] [--percent-limit P] [--json]\n"
	"                          [--callers] [--svg FILE] [--flamegraph FILE] [OPTIONS]\n"
	"                          [SEGMENT|DIRECTORY...]\n"
	"Live kernel memory: allocations (kmalloc, kmem_cache_alloc, mm_page_alloc)\n"
	"paired with their frees; needs the frees recorded (conf/stackmapd.conf).\n"
	"  --at TIME          also the live memory and its stacks at TIME (as --since)\n"
	"  --baseline TIME    the growth per stack from TIME to --at (or to the end);\n"
	"                     --flamegraph draws it as a differential graph\n"
	"  --churn DURATION   an allocation freed within this is churn (default 1s)\n"
	"  --rows N           rows of the curve, about (default 60)\n"
	"  --limit N          stacks per table (default 10)\n"
	"  --width N          cut lines to N columns (0: never; default 0)\n"
	"  --percent-limit P  leave out tree branches under P %% (default 0.5)\n"
	"  --json             everything as one JSON document\n"
	"  --callers          also the slab allocations by call site (count, bytes)\n"
	"  --svg FILE         the curve as an SVG, the peak marked\n"
	"  --flamegraph FILE  flame graph of the bytes live at the peak (at --at if given)\n"
	"  --pid, --comm, --event  count only these allocations (frees are all read)\n"
	SAMPLE_SOURCE_USAGE SELECTION_USAGE;

enum {
	OPT_AT = 0x1200,
	OPT_BASELINE,
	OPT_CHURN,
	OPT_ROWS,
	OPT_LIMIT,
	OPT_WIDTH,
	OPT_PERCENT,
	OPT_JSON,
	OPT_SVG,
	OPT_FLAMEGRAPH,
	OPT_CALLERS,
};

struct memory_args {
	struct memory_options o;
	struct memory_view v;
	const char *svg, *flamegraph;
	const char *pid_arg;
	bool raw_stacks;
};

struct memory_ctx {
	struct memory *m;
	struct segtally tally;		/* the segments read: their index's losses */
	uint64_t last_serial;		/* the latest segment whose losses were given */
	uint64_t samples;
	int error;
};

/*
 * The losses the index of the segment of s counts (the kernel's drops,
 * which no page marks), given to the engine with the segment's first
 * sample. A segment without an index (being written, recovered) has only
 * the losses its pages mark, which come with the samples.
 */
static int segment_losses(struct memory_ctx *ctx, const struct sample *s)
{
	const struct segtally_segment *seg;
	int r;

	if (!s->origin || s->origin->serial <= ctx->last_serial)
		return 0;	/* seen (samples of two segments interleave where they meet) */
	ctx->last_serial = s->origin->serial;
	r = segtally_add_segment(&ctx->tally, s->origin->path);
	if (r == -ENOMEM)
		return r;
	if (r < 0)
		return 0;	/* the decoder has said what is wrong with it */
	seg = &ctx->tally.segs[ctx->tally.nr_segs - 1];
	for (uint32_t i = 0; i < seg->nr_index; i++) {
		if (!seg->index[i].lost_events)
			continue;
		r = memory_segment_loss(ctx->m, s, seg->index[i].cpu, seg->index[i].lost_events);
		if (r < 0)
			return r;
	}
	return 0;
}

static int memory_sample(const struct sample *s, void *userdata)
{
	struct memory_ctx *ctx = userdata;
	int r = memory_add(ctx->m, s);

	if (r >= 0)
		r = segment_losses(ctx, s);
	ctx->samples++;
	if (r < 0) {
		ctx->error = r;
		return -ECANCELED;	/* said once by the command, not per event */
	}
	return 0;
}

static int parse_number(const char *arg, unsigned long max, unsigned long *ret)
{
	char *end;

	errno = 0;
	*ret = strtoul(arg, &end, 10);
	if (errno || *end || !*arg || *arg == '-' || *ret > max) {
		log_err("bad number '%s'", arg);
		return -EINVAL;
	}
	return 0;
}

/* Options of the command; the shared ones go to sel, but --pid, --comm and --event to a->o. */
static int parse_args(int argc, char **argv, struct memory_args *a, struct selection *sel)
{
	static const struct option opts[] = {
		{ "at", required_argument, NULL, OPT_AT },
		{ "baseline", required_argument, NULL, OPT_BASELINE },
		{ "churn", required_argument, NULL, OPT_CHURN },
		{ "rows", required_argument, NULL, OPT_ROWS },
		{ "limit", required_argument, NULL, OPT_LIMIT },
		{ "width", required_argument, NULL, OPT_WIDTH },
		{ "percent-limit", required_argument, NULL, OPT_PERCENT },
		{ "json", no_argument, NULL, OPT_JSON },
		{ "svg", required_argument, NULL, OPT_SVG },
		{ "flamegraph", required_argument, NULL, OPT_FLAMEGRAPH },
		{ "callers", no_argument, NULL, OPT_CALLERS },
		{ "help", no_argument, NULL, 'h' },
		SAMPLE_SOURCE_OPTIONS,
		SELECTION_OPTIONS,
		{}
	};
	struct wallclock_time at;
	unsigned long n;
	uint64_t usec;
	char *end;
	int c, r;

	*a = (struct memory_args){ .o = { .pid = -1 }, .v = { .min_percent = 0.5 } };
	optind = 0;
	while ((c = getopt_long(argc, argv, "+hc:", opts, NULL)) >= 0) {
		switch (c) {
		case SELECTION_OPT_PID:
			errno = 0;
			a->o.pid = strtol(optarg, &end, 10);
			if (errno || *end || !*optarg || a->o.pid < 0) {
				log_err("bad pid '%s'", optarg);
				return -EINVAL;
			}
			a->pid_arg = optarg;
			continue;
		case SELECTION_OPT_COMM:
			a->o.comm = optarg;
			continue;
		case SELECTION_OPT_EVENT:
			a->o.event = optarg;
			continue;
		case OPT_AT:
		case OPT_BASELINE:
			if (wallclock_parse(optarg, sel->now, &at) < 0) {
				log_err("invalid time '%s' (2026-12-01 03:12, 03:12, -10min, "
					"2026-12-01T03:12:00+01:00 or trace-clock seconds)",
					optarg);
				return -EINVAL;
			}
			/* 0 means none */
			*(c == OPT_AT ? &a->o.at : &a->o.baseline) = at.ns ?: 1;
			*(c == OPT_AT ? &a->o.at_trace : &a->o.baseline_trace) = at.trace;
			continue;
		case OPT_CHURN:
			if (config_parse_duration(optarg, &usec) < 0 || !usec) {
				log_err("invalid duration '%s' (e.g. 100ms, 1s)", optarg);
				return -EINVAL;
			}
			a->o.churn_ns = usec * 1000;
			continue;
		case OPT_ROWS:
			if (parse_number(optarg, 10000, &n) < 0 || n < 2)
				return -EINVAL;
			a->o.rows = n;
			continue;
		case OPT_LIMIT:
			if (parse_number(optarg, 1000000, &n) < 0 || !n)
				return -EINVAL;
			a->v.limit = n;
			continue;
		case OPT_WIDTH:
			if (parse_number(optarg, 100000, &n) < 0 || (n && n < 20)) {
				log_err("bad width '%s' (0, or 20 columns and more)", optarg);
				return -EINVAL;
			}
			a->v.width = (unsigned int)n;
			continue;
		case OPT_PERCENT:
			errno = 0;
			a->v.min_percent = strtod(optarg, &end);
			if (errno || *end || !*optarg ||
			    !(a->v.min_percent >= 0 && a->v.min_percent <= 100)) {
				log_err("bad percentage '%s' (0 to 100)", optarg);
				return -EINVAL;
			}
			continue;
		case OPT_JSON:
			a->v.json = true;
			continue;
		case OPT_SVG:
			a->svg = optarg;
			continue;
		case OPT_FLAMEGRAPH:
			a->flamegraph = optarg;
			continue;
		case OPT_CALLERS:
			a->o.callers = true;
			continue;
		case SAMPLE_SOURCE_OPT_RAW_STACKS:
			a->raw_stacks = true;
			continue;
		case 'h':
			printf("%s", memory_usage);
			return 1;
		default:
			r = selection_option(sel, c, optarg);
			if (r > 0)
				continue;
			if (r == 0)
				fprintf(stderr, "%s", memory_usage);
			return -EINVAL;	/* a bad value is logged */
		}
	}
	return 0;
}

/* Why the input cannot be analysed; the exit status. */
static int explain(enum memory_verdict verdict, const struct memory_args *a, uint64_t allocs)
{
	switch (verdict) {
	case MEMORY_NO_ALLOCATIONS:
		log_err("no allocation events read: record kmem:kmalloc and kmem:kmem_cache_alloc "
			"(or kmem:mm_page_alloc) with their frees (trace.events, doc/memory.md)");
		return 1;
	case MEMORY_NO_SLAB_FREES:
		log_err("the segments hold slab allocations but no frees: record kmem:kfree and "
			"kmem:kmem_cache_free too (trace.events, as conf/stackmapd.conf does)");
		return 1;
	case MEMORY_NO_PAGE_FREES:
		log_err("the segments hold page allocations but no frees: record kmem:mm_page_free "
			"too (trace.events)");
		return 1;
	case MEMORY_NOTHING_SELECTED:
		log_err("none of the %" PRIu64 " allocations read is %s%s%s%s%s%s", allocs,
			a->pid_arg ? "of pid " : "", a->pid_arg ?: "",
			a->o.comm ? (a->pid_arg ? " and of task " : "of task ") : "",
			a->o.comm ?: "",
			a->o.event ? (a->pid_arg || a->o.comm ? " and a " : "a ") : "",
			a->o.event ?: "");
		return 2;
	default:
		return 0;
	}
}

static int svg_to(void *data, FILE *f)
{
	return memory_write_svg(data, f, "live kernel memory (stackmapctl memory)");
}

struct fg_data {
	struct memory *m;
	const char *title;
};

static int flamegraph_to(void *data, FILE *f)
{
	struct fg_data *d = data;
	_cleanup_(flamegraph_freep) struct flamegraph *fg = flamegraph_new();
	struct flamegraph_options o = { .count_name = "bytes", .title = d->title };
	int r;

	if (!fg)
		return -ENOMEM;
	r = memory_flamegraph(d->m, fg);
	if (r >= 0 && !flamegraph_total(fg, false))
		r = -ENOENT;
	if (r >= 0)
		r = flamegraph_write(fg, f, &o);
	return r;
}

int cmd_memory(int argc, char **argv)
{
	_cleanup_(selection_done) struct selection sel;
	_cleanup_(memory_freep) struct memory *m = NULL;
	struct memory_args a;
	struct sample_source_options so = { .fields = memory_fields };
	struct memory_ctx ctx = {};
	enum memory_verdict verdict;
	int r, ret;

	selection_init(&sel);
	r = parse_args(argc, argv, &a, &sel);
	if (r != 0)
		return r > 0 ? 0 : 2;
	so.raw_stacks = a.raw_stacks;
	so.call_sites = a.o.callers;
	so.progress_label = a.v.json ? NULL : "memory";
	r = selection_resolve(&sel, argc - optind, argv + optind);
	if (r < 0)
		return selection_resolve_status(r);
	m = memory_new(&a.o);
	if (!m) {
		log_errno(LOG_ERR, -ENOMEM, "cannot pair the allocations");
		return 1;
	}
	ctx.m = m;
	segtally_init(&ctx.tally);
	ret = sample_source_run(&sel, &so, memory_sample, &ctx);
	segtally_done(&ctx.tally);
	if (ctx.error) {
		if (budget_error())
			log_err("%s", budget_error());
		else
			log_errno(LOG_ERR, ctx.error, "cannot pair the allocations");
		return 1;
	}
	if (ret < 0 || ret == 2)
		return ret < 0 ? 1 : 2;
	if (!ctx.samples)
		return ret;	/* the selection said "no events matched", as elsewhere */
	verdict = memory_check(m);
	if (verdict != MEMORY_OK)
		return explain(verdict, &a, memory_allocations(m));
	r = memory_print(m, stdout, &a.v);
	if (r < 0 || fflush(stdout) != 0) {
		log_errno(LOG_ERR, r < 0 ? r : -errno, "cannot write the tables");
		return 1;
	}
	if (a.svg) {
		r = cmd_output_write(a.svg, svg_to, m);
		if (r < 0) {
			log_errno(LOG_ERR, r, "cannot write '%s'", a.svg);
			return 1;
		}
	}
	if (a.flamegraph) {
		struct fg_data d = { m, "bytes live at the peak" };

		if (a.o.baseline)
			d.title = a.o.at ? "growth of live bytes from --baseline to --at"
					 : "growth of live bytes from --baseline to the end";
		else if (a.o.at)
			d.title = "bytes live at --at";

		r = cmd_output_write(a.flamegraph, flamegraph_to, &d);
		if (r < 0) {
			log_errno(LOG_ERR, r, "cannot write '%s'", a.flamegraph);
			return 1;
		}
	}
	return ret;
}
