/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * stackmapctl export: segments to formats other tools read. pprof (one
 * gzipped profile, lib/pprof.h) and CSV (a directory with events.csv and
 * stacks.csv, lib/csvexport.h), from client/sample-source.h. Files are
 * written under a temporary name and renamed when complete. Exit status
 * as report's.
 */
#include <fcntl.h>
#include <getopt.h>
#include <sys/stat.h>

#include "commands-export.h"
#include "csvexport.h"
#include "log.h"
#include "pprof.h"
#include "sample-source.h"

static const char export_usage[] =
	"Usage: stackmapctl export --format pprof|csv -o OUTPUT [--event NAME] SEGMENT...\n"
	"  pprof: OUTPUT is a gzipped profile; csv: OUTPUT is a directory that gets\n"
	"  events.csv and stacks.csv\n";

struct pprof_ctx {
	struct pprof *p;
	uint64_t first, last;
};

static int pprof_sample(const struct sample *s, void *userdata)
{
	struct pprof_ctx *ctx = userdata;

	if (!ctx->first || s->ts < ctx->first)
		ctx->first = s->ts;
	ctx->last = MAX(ctx->last, s->ts);
	return pprof_add(ctx->p, s);
}

static int export_pprof(char **paths, int n, const struct sample_source_options *so,
			const char *out)
{
	_cleanup_free_ char *tmp = NULL;
	struct pprof_ctx ctx = { .p = pprof_new() };
	int fd, r, ret;

	if (!ctx.p || strprintf(&tmp, "%s.tmp", out) < 0) {
		pprof_free(ctx.p);
		log_errno(LOG_ERR, -ENOMEM, "cannot export");
		return 1;
	}
	ret = sample_source_run(paths, n, so, pprof_sample, &ctx);
	if (ret < 0) {
		pprof_free(ctx.p);
		return 1;
	}
	/* the trace clock is not wall-clock time: only the duration is known */
	pprof_set_time(ctx.p, 0, ctx.last - ctx.first);
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	r = fd < 0 ? -errno : pprof_write(ctx.p, fd);
	if (fd >= 0 && close(fd) < 0 && r >= 0)
		r = -errno;
	if (r >= 0 && rename(tmp, out) < 0)
		r = -errno;
	pprof_free(ctx.p);
	if (r < 0) {
		(void)unlink(tmp);
		log_errno(LOG_ERR, r, "cannot write '%s'", out);
		return 1;
	}
	return ret;
}

static int csv_sample(const struct sample *s, void *userdata)
{
	return csv_export_add(userdata, s);
}

static int export_csv(char **paths, int n, const struct sample_source_options *so,
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
	ret = sample_source_run(paths, n, so, csv_sample, c);
	if (ret < 0)
		return 1;
	r = csv_export_finish(c, fs);
	if (r < 0) {
		(void)log_errno(LOG_ERR, r, "cannot write into '%s'", dir);
		return 1;
	}
	return ret;
}

int cmd_export(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "format", required_argument, NULL, 'f' },
		{ "output", required_argument, NULL, 'o' },
		{ "event", required_argument, NULL, 'e' },
		{ "help", no_argument, NULL, 'h' },
		{}
	};
	struct sample_source_options so = { .progress_label = "export" };
	const char *format = NULL, *out = NULL;
	int c;

	optind = 0;
	while ((c = getopt_long(argc, argv, "+ho:", opts, NULL)) >= 0) {
		switch (c) {
		case 'f':
			format = optarg;
			break;
		case 'o':
			out = optarg;
			break;
		case 'e':
			so.event = optarg;
			break;
		case 'h':
			printf("%s", export_usage);
			return 0;
		default:
			fprintf(stderr, "%s", export_usage);
			return 2;
		}
	}
	if (optind >= argc || !out || !format) {
		fprintf(stderr, "%s", export_usage);
		return 2;
	}
	if (streq(format, "pprof"))
		return export_pprof(argv + optind, argc - optind, &so, out);
	if (streq(format, "csv"))
		return export_csv(argv + optind, argc - optind, &so, out);
	log_err("unknown format '%s' (pprof, csv)", format);
	return 2;
}
