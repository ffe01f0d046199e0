/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * stackmapctl export: segments to formats other tools read. pprof (gzipped
 * profiles, client/cmd-export-pprof.h), ClickHouse rows
 * (lib/export/clickhouse.h) and CSV (a directory with events.csv and
 * stacks.csv, lib/export/csv.h), from client/sample-source.h, and
 * trace-cmd's trace.dat (lib/export/tracedat.h) from the decoded events
 * themselves, with each segment's formats, symbols and tasks. Files are
 * written under a temporary name and renamed when complete. Exit status
 * as report's.
 */
#include <assert.h>
#include <fcntl.h>
#include <getopt.h>
#include <sys/stat.h>

#include <event-parse.h>

#include "clickhouse.h"
#include "cmd-common.h"
#include "cmd-export-pprof.h"
#include "commands-export.h"
#include "csv.h"
#include "decode.h"
#include "log.h"
#include "memory.h"
#include "sample-source.h"
#include "selection.h"
#include "strmap.h"
#include "tracedat.h"

static const char export_usage[] =
	"Usage: stackmapctl export --format pprof|csv|trace.dat|clickhouse -o OUTPUT [OPTIONS]\n"
	"                          [SEGMENT|DIRECTORY...]\n"
	"  pprof: OUTPUT is a gzipped profile; csv: OUTPUT is a directory that gets\n"
	"  events.csv and stacks.csv; trace.dat: a trace-cmd data file; clickhouse: a\n"
	"  directory that gets events.tsv, stacks.tsv, losses.tsv, allocations.tsv,\n"
	"  frees.tsv and loads.tsv, the rows of clickhouse/schema.sql (whole segments,\n"
	"  no filters)\n"
	"  --slice LENGTH  pprof: one profile per slice of wall-clock time (60s, 5min, 1h),\n"
	"                  host, kernel and event; OUTPUT is a directory\n"
	"  --pid-cpu-labels  pprof: label each sample with its pid and CPU\n"
	"  --load-id N     clickhouse: the load id of every row (default: the time in ns)\n"
	SAMPLE_SOURCE_USAGE SELECTION_USAGE;

static int csv_sample(const struct sample *s, void *userdata)
{
	return csv_export_add(userdata, s);
}

static int export_csv(struct selection *sel, const struct sample_source_options *so,
		      const char *dir)
{
	_cleanup_free_ char *ev = NULL, *st = NULL;
	_cleanup_(csv_export_freep) struct csv_export *c = NULL;
	_cleanup_fclose_ FILE *fe = NULL, *fs = NULL;
	int r, ret;

	if (mkdir(dir, 0755) < 0 && errno != EEXIST) {
		(void)log_errno(LOG_ERR, -errno, "cannot create '%s'", dir);
		return 1;
	}
	if (strprintf(&ev, "%s/events.csv", dir) < 0 || strprintf(&st, "%s/stacks.csv", dir) < 0) {
		(void)log_errno(LOG_ERR, -ENOMEM, "cannot export");
		return 1;
	}
	fe = fopen(ev, "we");
	fs = fe ? fopen(st, "we") : NULL;
	if (!fe || !fs) {
		(void)log_errno(LOG_ERR, -errno, "cannot write into '%s'", dir);
		return 1;
	}
	r = csv_export_new(fe, &c);
	if (r < 0) {
		(void)log_errno(LOG_ERR, r, "cannot write '%s'", ev);
		return 1;
	}
	ret = sample_source_run(sel, so, csv_sample, c);
	if (ret < 0)
		return 1;
	r = csv_export_finish(c, fs);
	if (r < 0) {
		(void)log_errno(LOG_ERR, r, "cannot write into '%s'", dir);
		return 1;
	}
	return ret;
}

/* ---- ClickHouse ---- */

static int ch_sample(const struct sample *s, void *userdata)
{
	return ch_export_add(userdata, s);
}

static FILE *open_in(const char *dir, const char *name)
{
	_cleanup_free_ char *path = NULL;

	if (strprintf(&path, "%s/%s", dir, name) < 0) {
		errno = ENOMEM;
		return NULL;
	}
	return fopen(path, "we");
}

/*
 * The rows of the segments for the tables of clickhouse/schema.sql,
 * tagged with load_id (lib/export/clickhouse.h). Every event, stack entries
 * whose event was lost included, so that the rows add up to what the
 * segments hold.
 */
static int export_clickhouse(struct selection *sel, struct sample_source_options *so,
			     const char *dir, uint64_t load_id)
{
	_cleanup_fclose_ FILE *fe = NULL, *fs = NULL, *fl = NULL, *fa = NULL, *ff = NULL, *fd = NULL;
	_cleanup_(ch_export_freep) struct ch_export *c = NULL;
	int r, ret;

	if (selection_filtering(sel)) {
		log_err("--format clickhouse exports whole segments: no filter options");
		return 2;
	}
	if (mkdir(dir, 0755) < 0 && errno != EEXIST) {
		(void)log_errno(LOG_ERR, -errno, "cannot create '%s'", dir);
		return 1;
	}
	fe = open_in(dir, "events.tsv");
	fs = fe ? open_in(dir, "stacks.tsv") : NULL;
	fl = fs ? open_in(dir, "losses.tsv") : NULL;
	fa = fl ? open_in(dir, "allocations.tsv") : NULL;
	ff = fa ? open_in(dir, "frees.tsv") : NULL;
	fd = ff ? open_in(dir, "loads.tsv") : NULL;
	if (!fd) {
		(void)log_errno(LOG_ERR, -errno, "cannot write into '%s'", dir);
		return 1;
	}
	r = ch_export_new(&(struct ch_files){ fe, fs, fl, fd, fa, ff }, load_id, now_nsec(CLOCK_REALTIME),
			  &c);
	for (size_t i = 0; r >= 0 && i < sel->nr_paths; i++) {
		r = ch_export_add_segment(c, sel->paths[i]);
		if (r < 0 && r != -ENOMEM) {
			log_errno(LOG_ERR, r, "'%s': cannot read it as a segment", sel->paths[i]);
			return 1;
		}
	}
	if (r < 0) {
		(void)log_errno(LOG_ERR, r, "cannot export");
		return 1;
	}
	so->orphan_stacks = true;
	so->segment_entries = true;	/* a segment's rows do not depend on its batch */
	so->fields = memory_fields;	/* the allocations, paired (memory.h) */
	sel->markers = true;	/* every event, as info counts them: the daemon's markers too */
	ret = sample_source_run(sel, so, ch_sample, c);
	if (ret < 0)
		return 1;
	r = ch_export_finish(c);
	if (r < 0) {
		(void)log_errno(LOG_ERR, r, "cannot write into '%s'", dir);
		return 1;
	}
	return ret;
}

/* ---- trace.dat ---- */

struct tracedat_ctx {
	struct tracedat *t;
	uint64_t seg;				/* serial of the last segment whose tables were taken */
	struct strmap *kallsyms;		/* lines of every segment, once each */
	struct strmap *pids;			/* saved_cmdlines: pid -> comms[index] */
	char **comms;				/* the latest comm of each pid */
	size_t cap_comms;
	const char *out;
};

/* "PID COMM" lines: the latest name of a pid wins, as the decoder reads them. */
static int add_comms(struct tracedat_ctx *ctx, const char *text, size_t len)
{
	for (const char *p = text, *end = text + len; p < end;) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t l = nl ? (size_t)(nl - p) : (size_t)(end - p), idx;
		const char *sp = memchr(p, ' ', l);
		int r;

		if (sp && sp > p && sp + 1 < p + l) {
			r = strmap_intern(ctx->pids, p, (size_t)(sp - p), &idx);
			if (r > 0) {
				if (GREEDY_REALLOC(ctx->comms, ctx->cap_comms, idx + 1) < 0)
					return -ENOMEM;
				ctx->comms[idx] = NULL;
			}
			if (r < 0)
				return r;
			free(ctx->comms[idx]);
			ctx->comms[idx] = strndup(sp + 1, (size_t)(p + l - sp - 1));
			if (!ctx->comms[idx])
				return -ENOMEM;
		}
		p += l + 1;
	}
	return 0;
}

/* Hand the text built in b as a string, or free it when r (the building's result) failed. */
static int text_finish(struct buf *b, int r, char **ret)
{
	if (r >= 0)
		r = buf_append(b, "", 1);
	if (r < 0) {
		buf_done(b);
		return r;
	}
	*ret = (char *)b->data;
	return 0;
}

static int comms_text(const struct tracedat_ctx *ctx, char **ret)
{
	struct buf b = {};
	int r = 0;

	for (size_t i = 0; r >= 0 && i < strmap_size(ctx->pids); i++)
		r = buf_printf(&b, "%s %s\n", strmap_get(ctx->pids, i, NULL), ctx->comms[i]);
	return text_finish(&b, r, ret);
}

/* Add every line of text to the set m. */
static int add_lines(struct strmap *m, const char *text, size_t len)
{
	for (const char *p = text, *end = text + len; p < end;) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t l = nl ? (size_t)(nl - p) : (size_t)(end - p), idx;
		int r = l ? strmap_intern(m, p, l, &idx) : 0;

		if (r < 0)
			return r;
		p += l + 1;
	}
	return 0;
}

static int lines_text(const struct strmap *m, char **ret)
{
	struct buf b = {};
	int r = 0;

	for (size_t i = 0; r >= 0 && i < strmap_size(m); i++) {
		size_t len;
		const char *s = strmap_get(m, i, &len);

		r = buf_printf(&b, "%.*s\n", (int)len, s);
	}
	return text_finish(&b, r, ret);
}

/* The file's header from the first segment; symbols and tasks from every segment. */
static int take_tables(struct tracedat_ctx *ctx, const struct decoded_event *ev)
{
	const char *name, *data, *v;
	size_t len;
	int r = 0;

	if (!ctx->t) {
		struct tracedat_info info = {};

		for (size_t i = 0; decoder_segment_file(ev->seg, i, &name, &data, &len) == 0; i++) {
			if (streq(name, "header_page") || streq(name, "events/header_page"))
				info.header_page = data;
			else if (streq(name, "printk_formats"))
				info.printk_formats = data;
		}
		v = decoder_segment_meta(ev->seg, "nr_cpus");
		info.nr_cpus = v ? (unsigned int)strtoul(v, NULL, 10) : 0;
		info.nr_cpus = MAX(info.nr_cpus, ev->cpu + 1);
		v = decoder_segment_meta(ev->seg, "page_size");
		info.page_size = v ? (unsigned int)strtoul(v, NULL, 10) : 0;
		r = tracedat_new(&info, &ctx->t);
		if (r < 0)
			return log_errno(LOG_ERR, r, "'%s': cannot start a trace.dat file from it",
					 ev->segment);
		for (size_t i = 0; r >= 0 && decoder_segment_file(ev->seg, i, &name, &data, &len) == 0;
		     i++) {
			const char *sys = name + strlen("events/"), *slash;
			char system[128];

			if (!startswith(name, "events/") || !(slash = strchr(sys, '/')) ||
			    (size_t)(slash - sys) >= sizeof(system) || !strstr(slash, "/format"))
				continue;
			(void)snprintf(system, sizeof(system), "%.*s", (int)(slash - sys), sys);
			r = tracedat_add_format(ctx->t, system, data);
		}
	}
	for (size_t i = 0; r >= 0 && decoder_segment_file(ev->seg, i, &name, &data, &len) == 0; i++) {
		if (streq(name, "kallsyms"))
			r = add_lines(ctx->kallsyms, data, len);
		else if (streq(name, "saved_cmdlines"))
			r = add_comms(ctx, data, len);
	}
	ctx->seg = decoder_segment_serial(ev->seg);
	return r < 0 ? log_errno(LOG_ERR, r, "cannot export") : 0;
}

static int tracedat_event(struct decoded_event *ev, void *userdata)
{
	struct tracedat_ctx *ctx = userdata;
	int r;

	if (ev->kind == DECODED_STACK_MISSING)
		return 0;	/* nothing the kernel wrote */
	if (decoder_segment_serial(ev->seg) != ctx->seg) {
		r = take_tables(ctx, ev);
		if (r < 0)
			return r;
	}
	/* a stack stored by id or reference goes in as the kernel_stack it stands for */
	if ((ev->kind == DECODED_STACK_REF || ev->kind == DECODED_STACK_ID) && ev->resolved &&
	    !ev->text)
		r = tracedat_add_stack(ctx->t, ev->cpu, ev->ts, tep_data_pid(ev->tep, ev->record),
				       ev->ips, ev->nr);
	else
		r = tracedat_add_event(ctx->t, ev->cpu, ev->ts, ev->record->data,
				       (size_t)ev->record->size);
	if (r == -EINVAL) {
		log_warn("%s: an event at %" PRIu64 " on CPU %u does not fit a trace.dat file, left out",
			 ev->segment, ev->ts, ev->cpu);
		return 0;
	}
	return r < 0 ? log_errno(LOG_ERR, r, "cannot export") : 0;
}

static int write_tracedat(struct tracedat_ctx *ctx)
{
	_cleanup_free_ char *syms = NULL, *comms = NULL;
	struct cmd_output o;
	int r;

	r = lines_text(ctx->kallsyms, &syms);
	if (r >= 0)
		r = comms_text(ctx, &comms);
	if (r >= 0)
		r = tracedat_set_text(ctx->t, TRACEDAT_KALLSYMS, syms);
	if (r >= 0)
		r = tracedat_set_text(ctx->t, TRACEDAT_CMDLINES, comms);
	if (r >= 0)
		r = cmd_output_open(&o, ctx->out);
	if (r < 0)
		return r;
	return cmd_output_finish(&o, tracedat_write(ctx->t, o.fd));
}

static int export_tracedat(struct selection *sel, const struct sample_source_options *so,
			   const char *out)
{
	struct tracedat_ctx ctx = { .kallsyms = strmap_new(), .pids = strmap_new(), .out = out };
	int r, ret = 1;

	if (sel->nr_groups > 1) {
		log_err("a trace.dat file holds one recording of one boot; these segments are %zu "
			"(select one with --since/--until or by naming its segments)", sel->nr_groups);
		goto out;
	}
	if (!ctx.kallsyms || !ctx.pids) {
		log_errno(LOG_ERR, -ENOMEM, "cannot export");
		goto out;
	}
	r = selection_decode(sel, &(struct selection_run){ .event = tracedat_event,
							   .userdata = &ctx });
	if (r < 0)
		goto out;
	if (!ctx.t) {
		log_err("no events to export");
		goto out;
	}
	ret = r;
	r = write_tracedat(&ctx);
	if (r < 0) {
		log_errno(LOG_ERR, r, "cannot write '%s'", out);
		ret = 1;
	}
out:
	tracedat_free(ctx.t);
	for (size_t i = 0; ctx.pids && i < strmap_size(ctx.pids); i++)
		free(ctx.comms[i]);
	free(ctx.comms);
	strmap_free(ctx.kallsyms);
	strmap_free(ctx.pids);
	return ret;
}

int cmd_export(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "format", required_argument, NULL, 'f' },
		{ "output", required_argument, NULL, 'o' },
		{ "load-id", required_argument, NULL, 'L' },
		{ "slice", required_argument, NULL, 'S' },
		{ "pid-cpu-labels", no_argument, NULL, 'P' },
		{ "help", no_argument, NULL, 'h' },
		SAMPLE_SOURCE_OPTIONS,
		SELECTION_OPTIONS,
		{}
	};
	_cleanup_(selection_done) struct selection sel;
	struct sample_source_options so = { .progress_label = "export" };
	const char *format = NULL, *out = NULL;
	struct export_pprof_options po = {};
	uint64_t load_id = 0;
	char *end;
	int c, r;

	assert(argv);

	selection_init(&sel);
	optind = 0;
	while ((c = selection_getopt(&sel, argc, argv, "+ho:c:", opts)) > 0) {
		switch (c) {
		case 'f':
			format = optarg;
			break;
		case 'o':
			out = optarg;
			break;
		case SAMPLE_SOURCE_OPT_RAW_STACKS:
			so.raw_stacks = true;
			break;
		case 'L':
			errno = 0;
			load_id = strtoull(optarg, &end, 10);
			if (errno || *end || !*optarg || *optarg == '-' || !load_id) {
				log_err("bad load id '%s' (a number from 1)", optarg);
				return 2;
			}
			break;
		case 'S':
			if (export_pprof_parse_slice(optarg, &po.slice_ns) < 0) {
				log_err("bad slice length '%s' (60s, 5min, 1h)", optarg);
				return 2;
			}
			break;
		case 'P':
			po.pid_cpu_labels = true;
			break;
		case 'h':
			printf("%s", export_usage);
			return 0;
		default:
			fprintf(stderr, "%s", export_usage);
			return 2;
		}
	}
	if (c < 0)
		return 2;
	if (!out || !format) {
		fprintf(stderr, "%s", export_usage);
		return 2;
	}
	if (!streq(format, "pprof") && !streq(format, "csv") && !streq(format, "trace.dat") &&
	    !streq(format, "clickhouse")) {
		log_err("unknown format '%s' (pprof, csv, trace.dat, clickhouse)", format);
		return 2;
	}
	if (load_id && !streq(format, "clickhouse")) {
		log_err("--load-id goes with --format clickhouse");
		return 2;
	}
	if ((po.slice_ns || po.pid_cpu_labels) && !streq(format, "pprof")) {
		log_err("--slice and --pid-cpu-labels go with --format pprof");
		return 2;
	}
	r = selection_resolve(&sel, argc - optind, argv + optind);
	if (r < 0)
		return selection_resolve_status(r);
	if (streq(format, "pprof"))
		return export_pprof(&sel, &so, &po, out);
	if (streq(format, "csv"))
		return export_csv(&sel, &so, out);
	if (streq(format, "clickhouse"))
		return export_clickhouse(&sel, &so, out, load_id ?: now_nsec(CLOCK_REALTIME));
	return export_tracedat(&sel, &so, out);
}
