/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * stackmapctl info: the summary of a whole source first, per recording
 * (host, boot, daemon run, told apart by META's ids): dates, segments,
 * events, lost events, unresolved stacks, all from each segment's META
 * and INDEX, so that no page is read whatever the archive's size; then,
 * with -v or for segments named one by one, each segment in detail
 * (cmd-info.c).
 */
#include <assert.h>
#include <getopt.h>
#include <inttypes.h>
#include <sys/stat.h>
#include <time.h>

#include "cmd-common.h"
#include "commands.h"
#include "decode.h"
#include "info.h"
#include "json.h"
#include "log.h"
#include "segment-meta.h"
#include "segment.h"
#include "selection.h"
#include "util.h"
#include "wallclock.h"

static const char info_usage[] =
	"Usage: stackmapctl info [--json] [-v] [--pages] [-c CONFIG] [SEGMENT|DIRECTORY...]\n"
	"  the summary of each recording (host, boot, dates, events, lost, unresolved,\n"
	"  segments), from the segments' indexes; then each segment in detail with -v,\n"
	"  or when segments are named one by one\n"
	"  -v, --verbose   each segment in detail too\n"
	"  --summary       only the summary, also for segments named one by one\n"
	"  --pages         read every page (slow) to count malformed ones; verify checks them too\n";

/* One recording's figures. */
struct summary {
	char host[256], boot[64], recording[64];
	uint64_t first_usec, last_usec;	/* opened, last write (CLOCK_REALTIME µs) */
	uint64_t segments, unfinished, damaged, bytes;
	uint64_t events, lost, unresolved;
};

/*
 * The trace time of the last event of a segment whose INDEX has no CPU
 * lines (recovery at start writes none): its pages are read. 0 if none.
 */
static uint64_t last_event_ts(const char *path)
{
	struct decoder *d;
	struct decoded_event ev;
	uint64_t last = 0;
	int r;

	if (decoder_open(&path, 1, &d) < 0)
		return 0;
	while ((r = decoder_next(d, &ev)) != 0)
		if (r > 0)
			last = MAX(last, ev.ts);
		else if (r == -ENOMEM)
			break;
	decoder_free(d);
	return last;
}

/*
 * CLOCK_REALTIME µs of the last event of a segment that was not finished
 * when its events were written (recovered at a later start, or still
 * being written): its CLOCK pairs place its last event's trace time (from
 * its INDEX, else from its pages when it was recovered), or give the last
 * pair's own time. 0 when it has none. Reads the records after rd's
 * position (pages skipped).
 */
static uint64_t events_end_usec(struct segment_reader *rd, const struct segment_index *idx,
				const char *path)
{
	_cleanup_free_ struct wallclock_pair *pairs = NULL;
	struct segment_record rec;
	uint64_t last_ts = 0, real = 0;
	size_t n = 0, cap = 0;

	while (segment_reader_next(rd, &rec) == 1)
		if (rec.type == SEGMENT_REC_CLOCK &&
		    wallclock_pairs_decode(rec.data, rec.len, &pairs, &n, &cap) == -ENOMEM)
			return 0;
	if (!n)
		return 0;
	n = wallclock_pairs_sort(pairs, n);
	for (uint32_t i = 0; idx && i < idx->nr_cpus; i++)
		if (idx->cpus[i].events)
			last_ts = MAX(last_ts, idx->cpus[i].last_ts);
	/* a recovered one (a .part being written has no INDEX: its last pair is recent) */
	if (!last_ts && idx)
		last_ts = last_event_ts(path);
	real = last_ts ? wallclock_to_realtime(pairs, n, last_ts) : 0;
	for (size_t i = 0; i < n; i++)
		real = MAX(real, pairs[i].realtime);
	return real / NSEC_PER_USEC;
}

/*
 * Add the segment at path to *sum from its META and INDEX (no page is
 * read). The dates are its events': a crash capture's from its META (it
 * was saved at the next boot), a segment finished by recovery at a later
 * start from its clock pairs; a finished segment's from its last write.
 */
static void summary_add(struct summary *sum, const char *path)
{
	_cleanup_(segment_reader_freep) struct segment_reader *rd = NULL;
	const struct segment_index *idx;
	struct segment_meta m = {};
	struct segment_record rec;
	struct stat st;
	uint64_t v, mtime = 0, first = 0, last = 0;
	bool capture = false;

	sum->segments++;
	if (stat(path, &st) == 0) {
		mtime = (uint64_t)st.st_mtim.tv_sec * USEC_PER_SEC +
			(uint64_t)st.st_mtim.tv_nsec / NSEC_PER_USEC;
		sum->bytes += (uint64_t)st.st_size;
	}
	if (segment_reader_open(path, &rd) < 0) {
		sum->damaged++;
		sum->last_usec = MAX(sum->last_usec, mtime);
		return;
	}
	segment_reader_skip_pages(rd, true);
	if (segment_reader_next(rd, &rec) == 1 && rec.type == SEGMENT_REC_META &&
	    segment_meta_parse(&m, rec.data, rec.len) == 0) {
		if (!*sum->host)
			(void)snprintf(sum->host, sizeof(sum->host), "%s",
				       segment_meta_get(&m, "hostname") ?: "?");
		if (!*sum->boot)
			(void)snprintf(sum->boot, sizeof(sum->boot), "%s",
				       segment_meta_get(&m, "boot_id") ?: "?");
		if (!*sum->recording)
			(void)snprintf(sum->recording, sizeof(sum->recording), "%s",
				       segment_meta_get(&m, "recording_id") ?: "?");
		capture = segment_meta_get(&m, "capture") != NULL;
		if (capture) {
			(void)segment_meta_u64(&m, "capture_first_usec", &first);
			(void)segment_meta_u64(&m, "capture_last_usec", &last);
		} else if (segment_meta_u64(&m, "opened_usec", &v) == 0) {
			first = v;
		}
	}
	segment_meta_done(&m);
	idx = segment_reader_index(rd);
	/* a capture without its own clock markers holds its boot's recorded pairs */
	if ((!capture && (!idx || (idx->flags & SEGMENT_INDEX_F_TRUNCATED))) || (capture && !last))
		last = events_end_usec(rd, idx, path);
	else if (!capture)
		last = mtime;
	if (first && (!sum->first_usec || first < sum->first_usec))
		sum->first_usec = first;
	/* a capture whose markers were overwritten has no dates of its own: when it was saved */
	sum->last_usec = MAX(sum->last_usec, last ?: mtime);
	if (!idx || (idx->flags & SEGMENT_INDEX_F_TRUNCATED) || !idx->nr_cpus) {
		sum->unfinished++;	/* its figures need its pages: info -v */
		return;
	}
	sum->unresolved += idx->unresolved;
	for (uint32_t i = 0; i < idx->nr_cpus; i++) {
		sum->events += idx->cpus[i].events;
		sum->lost += idx->cpus[i].lost_events;
	}
}

static const char *fmt_date(char buf[64], uint64_t usec)
{
	time_t t = (time_t)(usec / USEC_PER_SEC);
	struct tm tm;

	if (!usec || !localtime_r(&t, &tm) || !strftime(buf, 64, "%Y-%m-%d %H:%M:%S %Z", &tm))
		return "?";
	return buf;
}

static void summary_print(const struct summary *s, bool json, struct json_writer *w)
{
	char a[64], b[64];

	if (json) {
		json_object_open(w, NULL);
		json_add_string(w, "host", s->host);
		json_add_string(w, "boot_id", s->boot);
		json_add_string(w, "recording_id", s->recording);
		json_add_uint(w, "first_usec", s->first_usec);
		json_add_uint(w, "last_usec", s->last_usec);
		json_add_uint(w, "segments", s->segments);
		json_add_uint(w, "unfinished_segments", s->unfinished);
		json_add_uint(w, "unreadable_segments", s->damaged);
		json_add_uint(w, "bytes", s->bytes);
		json_add_uint(w, "events", s->events);
		json_add_uint(w, "lost_events", s->lost);
		json_add_uint(w, "unresolved", s->unresolved);
		json_object_close(w);
		return;
	}
	/* "?": a segment that does not say (one holding no record yet, with -v) */
	printf("host %s  boot %s  recording %s\n", *s->host ? s->host : "?", *s->boot ? s->boot : "?",
	       *s->recording ? s->recording : "?");
	printf("  from %s to %s\n", fmt_date(a, s->first_usec), fmt_date(b, s->last_usec));
	printf("  %" PRIu64 " segments, %.1f MiB", s->segments, (double)s->bytes / (1 << 20));
	if (s->unfinished)
		printf(" (%" PRIu64 " unfinished or recovered: not counted below; -v reads them)",
		       s->unfinished);
	if (s->damaged)
		printf(" (%" PRIu64 " unreadable)", s->damaged);
	printf("\n  %" PRIu64 " events, %" PRIu64 " lost, %" PRIu64 " unresolved stacks\n",
	       s->events, s->lost, s->unresolved);
}

/* The summary of every recording of sel. Returns 0 or -errno. */
static int print_summary(const struct selection *sel, bool json)
{
	struct json_writer w;

	if (json) {
		json_writer_init(&w, SIZE_MAX);
		json_object_open(&w, NULL);
		json_add_uint(&w, "segments", sel->nr_paths);
		json_array_open(&w, "recordings");
	}
	for (size_t g = 0; g < sel->nr_groups; g++) {
		struct summary s = {};

		for (size_t i = sel->group_start[g]; i < sel->group_start[g + 1]; i++)
			summary_add(&s, sel->paths[i]);
		if (!json && g)
			printf("\n");
		summary_print(&s, json, &w);
	}
	if (!json)
		return 0;
	json_array_close(&w);
	json_object_close(&w);
	return cmd_json_print(&w);
}

/* Whether any source is a directory (or none is named: the configured archive). */
static bool names_directory(int argc, char **argv)
{
	struct stat st;

	if (!argc)
		return true;
	for (int i = 0; i < argc; i++)
		if (stat(argv[i], &st) == 0 && S_ISDIR(st.st_mode))
			return true;
	return false;
}

int cmd_info(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "summary", no_argument, NULL, 's' },
		{ "pages", no_argument, NULL, 'p' },
		{ "config", required_argument, NULL, 'c' },
		{ "help", no_argument, NULL, 'h' },
		{}
	};
	_cleanup_(selection_done) struct selection sel;
	bool json = false, verbose = false, only_summary = false, pages = false, summary, each;
	int c, r, ret = 0;

	assert(argv);

	selection_init(&sel);
	optind = 0;
	while ((c = getopt_long(argc, argv, "+hvc:", opts, NULL)) >= 0) {
		switch (c) {
		case 'j':
			json = true;
			break;
		case 'v':
			verbose = true;
			break;
		case 's':
			only_summary = true;
			break;
		case 'p':
			pages = true;
			break;
		case 'c':
			sel.config = optarg;
			break;
		case 'h':
			printf("%s", info_usage);
			return 0;
		default:
			fprintf(stderr, "%s", info_usage);
			return 2;
		}
	}
	if (verbose && only_summary) {
		log_err("-v and --summary exclude each other");
		return 2;
	}
	summary = only_summary || names_directory(argc - optind, argv + optind);
	each = !only_summary && (verbose || !summary);
	sel.every_file = each;	/* a file that holds nothing is listed, not summed */
	r = selection_resolve(&sel, argc - optind, argv + optind);
	if (r < 0)
		return selection_resolve_status(r);
	if (summary && print_summary(&sel, json) < 0) {
		log_errno(LOG_ERR, -EIO, "cannot write the summary");
		return 1;
	}
	for (size_t i = 0; each && i < sel.nr_paths; i++) {
		if (!json && (i || summary))
			printf("\n");
		ret |= info_segment(sel.paths[i], json, pages);
	}
	if (fflush(stdout) != 0) {
		log_errno(LOG_ERR, -errno, "cannot write the information");
		return 1;
	}
	return ret;
}
