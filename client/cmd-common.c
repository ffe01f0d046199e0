/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * What the offline segment commands (info, verify, stacks) share: their
 * argument parsing, the words for a segment that cannot be opened, and
 * printing a JSON document built with the JSON writer; when a progress
 * bar is drawn; and the output files of flamegraph and export, written
 * whole or not at all.
 */
#include <assert.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cmd-common.h"
#include "log.h"
#include "selection.h"
#include "util.h"

/* Print the finished JSON text of w as one line, and free w's memory. Returns 0 or -errno. */
int cmd_json_print(struct json_writer *w)
{
	_cleanup_free_ char *text = NULL;
	int r;

	assert(w);

	r = json_writer_finish(w, &text, NULL);
	json_writer_done(w);
	if (r < 0)
		return r;
	printf("%s\n", text);
	return 0;
}

void cmd_progress_policy(struct progress *p)
{
	const char *e = getenv("STACKMAPCTL_PROGRESS");

	assert(p);

	p->delay_usec = USEC_PER_SEC;
	if (e && streq(e, "never"))
		p->enabled = false;
	else if (e && streq(e, "always"))
		p->delay_usec = 0;
}

void cmd_progress_init(struct progress *p, const char *label, uint64_t total, bool json)
{
	struct stat st;
	bool to_file = !json && isatty(STDOUT_FILENO) != 1 && fstat(STDOUT_FILENO, &st) == 0 &&
		       (S_ISREG(st.st_mode) || S_ISCHR(st.st_mode));

	assert(p);
	assert(label);

	progress_init(p, STDERR_FILENO, label, to_file ? total : 0);
	cmd_progress_policy(p);
}

/*
 * Parse the arguments of cmd_segment_each() into sel (initialized) and
 * *ret_json; *ret_first gets the index of the first SEGMENT argument.
 * Returns 0, 1 when help was printed, -EINVAL on a usage error (logged).
 */
static int segment_args(int argc, char **argv, bool *ret_json, int *ret_first,
			struct selection *sel)
{
	bool json = false;
	int i = 1;

	for (; i < argc && argv[i][0] == '-'; i++) {
		if (streq(argv[i], "--")) {
			i++;
			break;
		}
		if (streq(argv[i], "--json")) {
			json = true;
		} else if ((streq(argv[i], "-c") || streq(argv[i], "--config")) && i + 1 < argc) {
			sel->config = argv[++i];
		} else if (streq(argv[i], "-h") || streq(argv[i], "--help")) {
			printf("Usage: stackmapctl %s [--json] [-c CONFIG] [SEGMENT|DIRECTORY...]\n",
			       argv[0]);
			return 1;
		} else {
			log_err("%s: unknown option '%s'", argv[0], argv[i]);
			return -EINVAL;
		}
	}
	*ret_json = json;
	*ret_first = i;
	return 0;
}

int cmd_segment_each(int argc, char **argv, int (*one)(const char *path, bool json),
		     bool blank_line)
{
	_cleanup_(selection_done) struct selection sel;
	bool json;
	struct progress bar;
	int first, k, ret = 0;

	assert(argc > 0);
	assert(argv);
	assert(one);

	selection_init(&sel);
	k = segment_args(argc, argv, &json, &first, &sel);
	if (k != 0)
		return k > 0 ? 0 : 2;
	sel.every_file = true;
	/* nothing to read (logged): the mistakes it refuses are of filters, not taken here */
	if (selection_resolve(&sel, argc - first, argv + first) < 0)
		return 1;
	cmd_progress_init(&bar, argv[0], sel.nr_paths, json);
	for (size_t i = 0; i < sel.nr_paths; i++) {
		if (blank_line && !json && i > 0)
			printf("\n");
		ret |= one(sel.paths[i], json);
		progress_update(&bar, i + 1);
	}
	progress_done(&bar);
	return ret;
}

const char *cmd_segment_open_error(int r)
{
	if (r == -EBADMSG)
		return "not a segment, or its prologue is damaged";
	if (r == -EPROTONOSUPPORT)
		return "unsupported segment format version";
	return NULL;
}

bool cmd_clock_is_counter(const char *clock)
{
	return clock && *clock && !streq(clock, "local") && !streq(clock, "global") &&
	       !streq(clock, "uptime") && !streq(clock, "perf") && !startswith(clock, "mono") &&
	       !streq(clock, "boot") && !streq(clock, "tai");
}

int cmd_output_open(struct cmd_output *o, const char *path)
{
	struct stat st;
	int r;

	assert(o);
	assert(path);

	*o = (struct cmd_output){ .path = (char *)path, .fd = -1 };
	if (stat(path, &st) == 0 && !S_ISREG(st.st_mode)) {
		o->fd = open(path, O_WRONLY | O_CLOEXEC | O_NOCTTY);
		return o->fd < 0 ? -errno : o->fd;
	}
	r = strprintf(&o->tmp, "%s.tmp", path);
	if (r < 0)
		return r;
	o->fd = open(o->tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (o->fd < 0) {
		r = -errno;
		free(o->tmp);
		o->tmp = NULL;
		return r;
	}
	return o->fd;
}

int cmd_output_finish(struct cmd_output *o, int r)
{
	assert(o);

	if (o->fd >= 0 && close(o->fd) < 0 && r >= 0)
		r = -errno;
	o->fd = -1;
	if (o->tmp) {
		if (r >= 0 && rename(o->tmp, o->path) < 0)
			r = -errno;
		if (r < 0)
			(void)unlink(o->tmp);
		free(o->tmp);
		o->tmp = NULL;
	}
	return r;
}

int cmd_output_write(const char *path, int (*fn)(void *data, FILE *f), void *data)
{
	struct cmd_output out;
	FILE *f;
	int r;

	assert(path);
	assert(fn);

	r = cmd_output_open(&out, path);
	if (r < 0)
		return r;
	f = fdopen(out.fd, "we");
	if (!f)
		return cmd_output_finish(&out, -errno);
	out.fd = -1;		/* fclose() closes it */
	r = fn(data, f);
	if (fclose(f) != 0 && r >= 0)
		r = -errno;
	return cmd_output_finish(&out, r);
}
