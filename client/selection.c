/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * What an offline command reads (selection.h): expanding archive
 * directories and the configured archive into segment paths, grouping
 * them by recording, the shared filters, and the decoding loop over the
 * groups. Wall-clock windows become trace-clock windows per segment with
 * lib/segment/wallclock.h and the CLOCK pairs of the segments of the same boot.
 */
#include <assert.h>
#include <dirent.h>
#include <sys/stat.h>

#include <event-parse.h>

#include "budget.h"
#include "config.h"
#include "decode.h"
#include "log.h"
#include "segment-meta.h"
#include "segment.h"
#include "selection.h"
#include "util.h"

#ifndef SYSCONFDIR
#define SYSCONFDIR "/etc"
#endif

/* What each path's META says, for grouping and labels. */
struct seg_info {
	char *host, *boot, *recording, *clock;
	uint64_t opened_usec;
	uint64_t nr_cpus;		/* 0: unknown */
	uint64_t mtime_usec;
	uint64_t last_ts;		/* of its last event by the INDEX; 0: unknown */
	char *saved_by;			/* a crash capture: the boot that saved it */
	bool undated;			/* a crash capture without clock pairs of its own */
	bool nothing_yet;		/* a .part cut short before its first record */
};

static void closedirp(DIR **d)
{
	if (*d)
		(void)closedir(*d);
}

struct selection_state {
	struct seg_info *info;		/* per path */
	bool only_nothing_yet;		/* every path was a .part with no record yet */
	bool *cpu_wanted;		/* per CPU: the last event passed */
	size_t nr_cpus;
	/* trace-clock window of the segment being read */
	uint64_t seg;			/* its decoder_segment_serial() */
	uint64_t lo, hi;
	/* CLOCK pairs pooled over the segments of the group read so far */
	struct wallclock_pair *pairs;
	size_t nr_pairs, cap_pairs;
	uint64_t pooled_last;		/* serial of the last segment pooled */
	bool warned_no_clock;
	bool wall_by_decoder;		/* the decoder took the wall-clock window */
	struct decoder_overlap_plan *plan;	/* which copies of a crash capture's events */
};

void selection_init(struct selection *s)
{
	struct timespec ts;

	assert(s);

	*s = (struct selection){ .pid = -1 };
	(void)clock_gettime(CLOCK_REALTIME, &ts);
	s->now = (uint64_t)ts.tv_sec * NSEC_PER_SEC + (uint64_t)ts.tv_nsec;
}

void selection_done(struct selection *s)
{
	assert(s);

	for (size_t i = 0; i < s->nr_paths; i++) {
		free(s->paths[i]);
		if (s->state) {
			free(s->state->info[i].host);
			free(s->state->info[i].boot);
			free(s->state->info[i].recording);
			free(s->state->info[i].clock);
			free(s->state->info[i].saved_by);
		}
	}
	if (s->state) {
		free(s->state->info);
		free(s->state->cpu_wanted);
		free(s->state->pairs);
		decoder_overlap_plan_free(s->state->plan);
		free(s->state);
	}
	free(s->paths);
	free(s->group_start);
	free(s->cpus);
	selection_seen_free(s);
	*s = (struct selection){ .pid = -1 };
}

static int parse_cpus(struct selection *s, const char *arg)
{
	const char *p = arg;

	if (!s->cpus) {
		s->cpus = calloc(STACKTAB_MAX_CPUS, sizeof(bool));
		if (!s->cpus)
			return -ENOMEM;
	}
	while (*p) {
		char *e;
		unsigned long a, b;

		errno = 0;
		a = strtoul(p, &e, 10);
		b = a;
		if (e != p && *e == '-') {
			p = e + 1;
			b = strtoul(p, &e, 10);
		}
		if (errno || e == p || a > b || b >= STACKTAB_MAX_CPUS || (*e && *e != ','))
			return -EINVAL;
		for (unsigned long c = a; c <= b; c++)
			s->cpus[c] = true;
		p = *e ? e + 1 : e;
	}
	return 0;
}

int selection_option(struct selection *s, int c, const char *arg)
{
	struct wallclock_time *t;
	char *e;

	assert(s);

	switch (c) {
	case SELECTION_OPT_SINCE:
	case SELECTION_OPT_UNTIL:
		t = c == SELECTION_OPT_SINCE ? &s->since : &s->until;
		*(c == SELECTION_OPT_SINCE ? &s->since_arg : &s->until_arg) = arg;
		if (wallclock_parse(arg, s->now, t) < 0) {
			log_err("invalid time '%s' (2026-12-01 03:12, 03:12, -10min, "
				"2026-12-01T03:12:00+01:00 or trace-clock seconds)", arg);
			return -EINVAL;
		}
		return 1;
	case SELECTION_OPT_CPU:
		if (parse_cpus(s, arg) < 0) {
			log_err("invalid CPU list '%s'", arg);
			return -EINVAL;
		}
		return 1;
	case SELECTION_OPT_PID:
		errno = 0;
		s->pid = strtol(arg, &e, 10);
		if (errno || *e || !*arg || s->pid < 0) {
			log_err("invalid pid '%s'", arg);
			return -EINVAL;
		}
		return 1;
	case SELECTION_OPT_COMM:
		s->comm = arg;
		return 1;
	case SELECTION_OPT_EVENT:
		s->event = arg;
		return 1;
	case SELECTION_OPT_MARKERS:
		s->markers = true;
		return 1;
	case 'c':
	case SELECTION_OPT_CONFIG:
		s->config = arg;
		return 1;
	case SELECTION_OPT_BOOT:
		if (!*arg) {
			log_err("invalid boot '' (0, -1, ... or a boot id)");
			return -EINVAL;
		}
		s->boot = arg;
		return 1;
	case SELECTION_OPT_LAST: {
		uint64_t usec;

		if (config_parse_duration(arg, &usec) < 0 || !usec) {
			log_err("invalid duration '%s' (e.g. 5s, 500ms, 2min)", arg);
			return -EINVAL;
		}
		s->last_ns = usec * 1000;
		return 1;
	}
	case SELECTION_OPT_MEMORY_LIMIT: {
		uint64_t v;

		if (budget_parse_size(arg, &v) < 0 || v < BUDGET_MIN_LIMIT) {
			log_err("invalid memory limit '%s' (a size such as 256M or 1G, at least %" PRIu64
				" MiB)", arg, BUDGET_MIN_LIMIT >> 20);
			return -EINVAL;
		}
		s->memory_limit = arg;
		return 1;
	}
	default:
		return 0;
	}
}

int selection_getopt(struct selection *s, int argc, char **argv, const char *shortopts,
		     const struct option *longopts)
{
	int c, r;

	assert(s);
	assert(argv);
	assert(shortopts);
	assert(longopts);

	while ((c = getopt_long(argc, argv, shortopts, longopts, NULL)) >= 0) {
		r = selection_option(s, c, optarg);
		if (r < 0)
			return r;
		if (r == 0)
			return c;
	}
	return 0;
}

bool selection_filtering(const struct selection *s)
{
	assert(s);

	return s->since.set || s->until.set || s->cpus || s->pid >= 0 || s->comm || s->event;
}

/* ---- paths ---- */

static int add_path(struct selection *s, const char *path)
{
	if (GREEDY_REALLOC(s->paths, s->cap_paths, s->nr_paths + 1) < 0)
		return -ENOMEM;
	s->paths[s->nr_paths] = strdup(path);
	if (!s->paths[s->nr_paths])
		return -ENOMEM;
	s->nr_paths++;
	return 0;
}

static int name_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Every segment of dir, finished and unfinished, in name (recording) order. */
static int add_directory(struct selection *s, const char *dir)
{
	_cleanup_(closedirp) DIR *d = opendir(dir);
	size_t first = s->nr_paths;
	struct dirent *de;
	int r;

	if (!d)
		return log_errno(LOG_ERR, -errno, "cannot open '%s'", dir);
	while ((de = readdir(d))) {
		_cleanup_free_ char *path = NULL;

		if (!segment_name_is_finished(de->d_name) && !segment_name_is_part(de->d_name))
			continue;
		if (asprintf(&path, "%s/%s", dir, de->d_name) < 0)
			return log_errno(LOG_ERR, -ENOMEM, "cannot list '%s'", dir);
		r = add_path(s, path);
		if (r < 0)
			return log_errno(LOG_ERR, r, "cannot list '%s'", dir);
	}
	if (s->nr_paths == first) {
		log_err("'%s': no segments in this directory", dir);
		return -ENOENT;
	}
	/* names start with the sequence number: name order is recording order */
	qsort(s->paths + first, s->nr_paths - first, sizeof(*s->paths), name_cmp);
	return 0;
}

static int configured_archive(struct selection *s, char **ret)
{
	const char *path = s->config ?: SYSCONFDIR "/stackmapd.conf";
	_cleanup_free_ char *error = NULL;
	struct config c;
	int r;

	r = config_init(&c);
	if (r < 0)
		return log_errno(LOG_ERR, r, "cannot set up the configuration");
	r = config_load(&c, path, &error);
	if (r == -ENOENT && !s->config) {
		/* no config file: the daemon records into the default directory */
		config_done(&c);
		r = config_init(&c);
		if (r < 0)
			return log_errno(LOG_ERR, r, "cannot set up the configuration");
	} else if (r < 0) {
		if (error)
			log_err("%s", error);
		else
			log_errno(LOG_ERR, r, "cannot read '%s'", path);
		config_done(&c);
		return r;
	}
	*ret = c.directory ? strdup(c.directory) : NULL;
	config_done(&c);
	return *ret ? 0 : log_errno(LOG_ERR, -ENOMEM, "cannot read '%s'", path);
}

static void read_info(const char *path, struct seg_info *ret)
{
	_cleanup_(segment_reader_freep) struct segment_reader *rd = NULL;
	struct segment_meta m = {};
	const struct segment_index *idx;
	struct segment_record rec;
	struct stat st;
	int k;

	if (stat(path, &st) == 0)
		ret->mtime_usec = (uint64_t)st.st_mtim.tv_sec * USEC_PER_SEC +
				  (uint64_t)st.st_mtim.tv_nsec / NSEC_PER_USEC;
	if (segment_reader_open(path, &rd) < 0)
		return;
	k = segment_reader_next(rd, &rec);
	/* a segment the daemon has just created, or one a kill left before it wrote anything */
	ret->nothing_yet = segment_name_is_part(path) &&
			   (k == 0 || (k == -EBADMSG && segment_reader_cut_short(rd)));
	if (k != 1 || rec.type != SEGMENT_REC_META || segment_meta_parse(&m, rec.data, rec.len) < 0)
		return;
	ret->host = strdup(segment_meta_get(&m, "hostname") ?: "");
	ret->boot = strdup(segment_meta_get(&m, "boot_id") ?: "");
	ret->recording = strdup(segment_meta_get(&m, "recording_id") ?: "");
	ret->clock = strdup(segment_meta_get(&m, "clock") ?: "");
	(void)segment_meta_u64(&m, "opened_usec", &ret->opened_usec);
	(void)segment_meta_u64(&m, "nr_cpus", &ret->nr_cpus);
	/* a crash capture is opened at the next boot: its events span what its clock pairs say */
	if (segment_meta_get(&m, "capture")) {
		uint64_t first = 0, last = 0;

		ret->saved_by = strdup(segment_meta_get(&m, "capture_current_boot_id") ?: "");
		if (segment_meta_u64(&m, "capture_first_usec", &first) == 0 && first &&
		    segment_meta_u64(&m, "capture_last_usec", &last) == 0 && last >= first) {
			ret->opened_usec = first;
			ret->mtime_usec = last;
		} else {
			ret->undated = true;
		}
	}
	idx = segment_reader_index(rd);
	for (uint32_t i = 0; idx && i < idx->nr_cpus; i++)
		ret->last_ts = MAX(ret->last_ts, idx->cpus[i].last_ts);
	segment_meta_done(&m);
}

static bool same_str(const char *a, const char *b)
{
	return streq(a ?: "", b ?: "");
}

/*
 * A wall-clock window skips segments that surely lie outside it: a
 * segment spans from its opening (META) to its last write (mtime), give
 * or take a minute for clock pairs.
 */
static bool outside_window(const struct selection *s, const struct seg_info *i)
{
	const uint64_t margin = 60 * USEC_PER_SEC;

	if (!i->opened_usec || !i->mtime_usec)
		return false;
	if (s->since.set && !s->since.trace && i->mtime_usec + margin < s->since.ns / 1000)
		return true;
	if (s->until.set && !s->until.trace && i->opened_usec > s->until.ns / 1000 + margin)
		return true;
	return false;
}

/*
 * Path order: by recording (its earliest opening, then its ids), then as
 * listed. A crash capture goes by the end of its boot instead: it holds
 * that boot's last seconds, and its first clock pair can be older than
 * the opening of the boot's own recording (the crash buffer was armed
 * first), which would print the end of a boot before the rest of it. A
 * capture without clock pairs (its markers overwritten) has only the
 * times of the boot that saved it, and goes right after its own boot's
 * last write.
 */
struct path_order {
	size_t idx;
	uint64_t first;			/* earliest opened_usec of its recording; 0: unknown */
	uint64_t last;			/* latest mtime of its recording */
	uint64_t key;			/* first, or for a capture last */
	const struct seg_info *i;
};

static int order_cmp(const void *a, const void *b)
{
	const struct path_order *x = a, *y = b;
	int d;

	if (x->key != y->key)
		return x->key < y->key ? -1 : 1;
	d = strcmp(x->i->boot ?: "", y->i->boot ?: "");
	if (!d)
		d = strcmp(x->i->recording ?: "", y->i->recording ?: "");
	if (d)
		return d;
	return x->idx < y->idx ? -1 : x->idx > y->idx;
}

static bool same_recording(const struct seg_info *a, const struct seg_info *b)
{
	return same_str(a->boot, b->boot) && same_str(a->recording, b->recording);
}

/*
 * A wall-clock window selects the recordings it covers: one whose span,
 * from its first opening to its last write (give or take a second), lies
 * outside the window is left out whole.
 */
static bool recording_outside(const struct selection *s, const struct path_order *o)
{
	const uint64_t margin = USEC_PER_SEC;

	if (!o->first || !o->last)
		return false;
	if (s->since.set && !s->since.trace && o->last + margin < s->since.ns / 1000)
		return true;
	return s->until.set && !s->until.trace && o->first > s->until.ns / 1000 + margin;
}

static void info_free(struct seg_info *i)
{
	free(i->host);
	free(i->boot);
	free(i->recording);
	free(i->clock);
	free(i->saved_by);
	*i = (struct seg_info){};
}

/*
 * The boot --boot names: "0" the last boot the segments know of, "-1" the
 * one before, or an id's start. A crash capture names the boot that saved
 * it too: in flight mode that boot may have no segment yet, and its
 * previous boot is still -1.
 */
static const char *boot_wanted(const struct selection *s, const struct seg_info *info, size_t n)
{
	const char **order;
	const char *found = NULL;
	size_t k = 0;
	char *e;
	long back;

	errno = 0;
	back = strtol(s->boot, &e, 10);
	if (*e || errno || back > 0) {
		for (size_t i = 0; i < n; i++)
			if (info[i].boot && startswith(info[i].boot, s->boot))
				return info[i].boot;
		return NULL;
	}
	order = calloc(2 * n + 1, sizeof(*order));
	if (!order)
		return NULL;
	for (size_t i = 0; i < n; i++) {
		const char *b[2] = { info[i].boot, info[i].saved_by };
		size_t at = k;

		for (size_t j = 0; j < 2; j++) {
			if (!b[j] || !*b[j])
				continue;
			/* each boot once, where it first appears */
			for (size_t x = 0; x < k && b[j]; x++)
				if (streq(order[x], b[j]))
					b[j] = NULL;
			if (b[j])
				order[k++] = b[j];
		}
		/*
		 * A capture's boot came before the boot that saved it, also when
		 * that boot's recording wrote segments first (the capture waited
		 * for room in the archive): it goes in front of it.
		 */
		if (b[0] && *b[0] && info[i].saved_by && *info[i].saved_by && !b[1]) {
			for (size_t x = 0; x < at; x++)
				if (streq(order[x], info[i].saved_by)) {
					memmove(order + x + 1, order + x, (k - 1 - x) * sizeof(*order));
					order[x] = b[0];
					break;
				}
		}
	}
	if ((size_t)-back < k)
		found = order[k - 1 - (size_t)-back];
	free(order);
	return found;
}

static void drop_path(struct selection *s, size_t i)
{
	info_free(&s->state->info[i]);
	free(s->paths[i]);
	s->paths[i] = NULL;
}

/*
 * --boot keeps the segments of one boot; --last keeps those of the last
 * boot left and turns into a trace-clock --since: the last event of its
 * segments (by their INDEX) minus the duration. 0, or -ENOENT (logged).
 */
static int select_boot(struct selection *s)
{
	struct selection_state *st = s->state;
	_cleanup_free_ char *boot = NULL;
	uint64_t end = 0;
	const char *b;

	if (s->boot) {
		b = boot_wanted(s, st->info, s->nr_paths);
		if (!b) {
			log_err("no boot '%s' in the segments read", s->boot);
			return -ENOENT;
		}
		boot = strdup(b);
	} else if (s->last_ns) {
		b = boot_wanted(&(struct selection){ .boot = "0" }, st->info, s->nr_paths);
		boot = b ? strdup(b) : NULL;
	} else
		return 0;
	if (!boot)
		return b ? -ENOMEM : 0;
	for (size_t i = 0; i < s->nr_paths; i++) {
		if (!same_str(st->info[i].boot, boot))
			drop_path(s, i);
		else
			end = MAX(end, st->info[i].last_ts);
	}
	if (s->last_ns && end) {
		s->since = (struct wallclock_time){ .set = true, .trace = true,
						    .ns = end > s->last_ns ? end - s->last_ns : 0 };
	}
	return 0;
}

/*
 * Group the paths by recording (META boot_id and recording_id, not file
 * names: two archives copied into one directory number their segments
 * alike), recordings in the order they were opened, and leave out the
 * segments and recordings a wall-clock window cannot cover.
 */
static int group_paths(struct selection *s)
{
	struct selection_state *st = s->state;
	_cleanup_free_ struct path_order *o = NULL;
	_cleanup_free_ struct seg_info *info = NULL;
	_cleanup_free_ char **in = NULL;
	size_t k = 0, m = 0, n = s->nr_paths, all = s->nr_paths;
	int r;

	st->info = calloc(n ?: 1, sizeof(*st->info));
	s->group_start = calloc(n + 1, sizeof(*s->group_start));
	o = calloc(n ?: 1, sizeof(*o));
	info = calloc(n ?: 1, sizeof(*info));
	in = calloc(n ?: 1, sizeof(*in));
	if (!st->info || !s->group_start || !o || !info || !in)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++)
		read_info(s->paths[i], &st->info[i]);
	/* --boot and --last first: they drop the paths of other boots */
	r = select_boot(s);
	if (r < 0)
		return r;
	for (size_t i = 0; i < n; i++) {
		if (!s->paths[i])
			continue;
		if (st->info[i].nothing_yet && !s->every_file) {
			/* nothing to read, and no recording to group it with */
			log_debug("'%s': holds no record yet, skipped", s->paths[i]);
			info_free(&st->info[i]);
			free(s->paths[i]);
			st->only_nothing_yet = true;
			continue;
		}
		info[m] = st->info[i];
		in[m++] = s->paths[i];
	}
	st->only_nothing_yet &= m == 0;
	n = m;
	for (size_t i = 0; i < n; i++) {
		o[i] = (struct path_order){ .idx = i, .i = &info[i] };
		for (size_t j = 0; j < n; j++) {
			if (!same_recording(&info[i], &info[j]))
				continue;
			if (info[j].opened_usec && (!o[i].first || info[j].opened_usec < o[i].first))
				o[i].first = info[j].opened_usec;
			o[i].last = MAX(o[i].last, info[j].mtime_usec);
		}
		o[i].key = info[i].saved_by && o[i].last ? o[i].last : o[i].first;
		if (!info[i].undated)
			continue;
		/* its times are the next boot's: right after the last write of its own boot */
		for (size_t j = 0; j < n; j++)
			if (!info[j].saved_by && same_str(info[i].boot, info[j].boot) &&
			    info[j].mtime_usec)
				o[i].key = MIN(o[i].key, info[j].mtime_usec + 1);
	}
	qsort(o, n, sizeof(*o), order_cmp);
	for (size_t i = 0; i < n; i++) {
		size_t x = o[i].idx;

		if (recording_outside(s, &o[i]) || outside_window(s, &info[x])) {
			info_free(&info[x]);
			free(in[x]);
			continue;
		}
		st->info[k] = info[x];
		s->paths[k] = in[x];
		if (!k || !same_recording(&st->info[k], &st->info[k - 1]))
			s->group_start[s->nr_groups++] = k;
		k++;
	}
	/* the entries past the last kept one were moved or freed above */
	memset(st->info + k, 0, (all - k) * sizeof(*st->info));
	s->nr_paths = k;
	s->group_start[s->nr_groups] = k;
	return 0;
}

int selection_resolve(struct selection *s, int argc, char **argv)
{
	_cleanup_free_ char *archive = NULL;
	uint64_t nr_cpus = 0;
	const char *bad;
	int r;

	assert(s);
	assert(!s->state);	/* resolved once */
	assert(argv || argc == 0);

	/* every byte the readers hold comes out of this budget (doc/reading-archives.md) */
	if (budget_setup(s->memory_limit, &bad) < 0) {
		log_err("invalid memory limit '%s' (a size such as 256M or 1G, at least %" PRIu64
			" MiB)", bad, BUDGET_MIN_LIMIT >> 20);
		return -EINVAL;
	}
	r = selection_check_options(s, 0);
	if (r < 0)
		return r;
	if (argc == 0) {
		r = configured_archive(s, &archive);
		if (r < 0)
			return r;
		r = add_directory(s, archive);
	}
	for (int i = 0; r >= 0 && i < argc; i++) {
		struct stat st;

		if (stat(argv[i], &st) == 0 && S_ISDIR(st.st_mode))
			r = add_directory(s, argv[i]);
		else
			r = add_path(s, argv[i]);	/* decoding reports what is wrong with it */
		if (r == -ENOMEM)
			log_errno(LOG_ERR, r, "cannot list the segments");
	}
	if (r < 0)
		return r;
	s->state = calloc(1, sizeof(*s->state));
	if (!s->state)
		return log_errno(LOG_ERR, -ENOMEM, "cannot list the segments");
	r = group_paths(s);
	if (r == -ENOENT)
		return r;
	if (r < 0)
		return log_errno(LOG_ERR, r, "cannot list the segments");
	for (size_t i = 0; i < s->nr_paths; i++)
		nr_cpus = MAX(nr_cpus, s->state->info[i].nr_cpus);
	r = selection_check_options(s, (unsigned int)MIN(nr_cpus, (uint64_t)STACKTAB_MAX_CPUS));
	if (r < 0)
		return r;
	if (!s->nr_paths) {
		log_err("no events matched: %s", s->state->only_nothing_yet
				? "the only segments are unfinished and hold no record yet"
				: "no segment overlaps the time window");
		return -ENOENT;
	}
	return 0;
}

const char *selection_group_label(const struct selection *s, size_t g)
{
	static char label[256];
	const struct seg_info *i;

	assert(s);
	assert(s->state);
	assert(g < s->nr_groups);

	i = &s->state->info[s->group_start[g]];
	(void)snprintf(label, sizeof(label), "host %s boot %s recording %s",
		       i->host && *i->host ? i->host : "?", i->boot && *i->boot ? i->boot : "?",
		       i->recording && *i->recording ? i->recording : "?");
	return label;
}

/* ---- filtering ---- */

/* Add the CLOCK pairs of ev's segment to the group's pool, once per segment. */
static void pool_pairs(struct selection_state *st, const struct decoded_event *ev)
{
	const struct wallclock_pair *p;
	size_t n;

	if (decoder_segment_serial(ev->seg) == st->pooled_last)
		return;
	st->pooled_last = decoder_segment_serial(ev->seg);
	p = decoder_segment_clocks(ev->seg, &n);
	if (!n)
		return;
	if (GREEDY_REALLOC(st->pairs, st->cap_pairs, st->nr_pairs + n) < 0)
		return;		/* dates fall back to fewer pairs */
	memcpy(st->pairs + st->nr_pairs, p, n * sizeof(*p));
	st->nr_pairs = wallclock_pairs_sort(st->pairs, st->nr_pairs + n);
}

static uint64_t window_bound(struct selection *s, const struct wallclock_time *t, uint64_t none)
{
	struct selection_state *st = s->state;

	if (!t->set)
		return none;
	if (t->trace)
		return t->ns;
	return wallclock_to_trace(st->pairs, st->nr_pairs, t->ns);
}

/* Why a segment's events cannot be placed in a wall-clock window. */
static void warn_no_clock(const char *segment)
{
	/* the segment being written gets its first pair within a moment */
	if (segment_name_is_part(segment))
		log_warn("'%s' has no CLOCK record yet: its events are left out "
			 "until the daemon has read its first clock marker", segment);
	else
		log_warn("'%s' has no CLOCK record (written by an older stackmapd): "
			 "its events cannot be placed in wall-clock time and are left out",
			 segment);
}

/*
 * Whether ev lies in the window. The decoder applies trace-clock bounds,
 * and wall-clock bounds too in segments with CLOCK pairs; this places
 * the events of a segment without any through the pairs of the others of
 * its group, if there are some.
 */
static bool in_window(struct selection *s, const struct decoded_event *ev)
{
	struct selection_state *st = s->state;

	if (!s->since.set && !s->until.set)
		return true;
	if (st->wall_by_decoder && decoder_segment_wall_placed(ev->seg))
		return true;
	pool_pairs(st, ev);
	if (decoder_segment_serial(ev->seg) != st->seg) {
		bool wall = (s->since.set && !s->since.trace) || (s->until.set && !s->until.trace);

		st->seg = decoder_segment_serial(ev->seg);
		if (wall && !st->nr_pairs) {
			if (!st->warned_no_clock)
				warn_no_clock(ev->segment);
			st->warned_no_clock = true;
			st->lo = 1;
			st->hi = 0;
		} else {
			st->lo = window_bound(s, &s->since, 0);
			st->hi = window_bound(s, &s->until, UINT64_MAX);
		}
	}
	return ev->ts >= st->lo && ev->ts <= st->hi;
}

static bool event_matches(const struct tep_event *e, const char *filter)
{
	const char *colon = strchr(filter, ':');

	if (!e)
		return false;
	if (!colon)
		return streq(e->name, filter);
	return strlen(e->system) == (size_t)(colon - filter) &&
	       !strncmp(e->system, filter, (size_t)(colon - filter)) && streq(e->name, colon + 1);
}

/*
 * The markers stackmapd writes into trace_marker (ftrace print events):
 * clock pairs (daemon/recorder-clock.c), stack map snapshots and
 * generations (daemon/generations.c), and those of the crash buffer
 * (daemon/crash-buffer.c), which a capture of it holds. Their key, if
 * any, cannot be checked here: the text alone decides.
 */
static const char *const daemon_markers[] = {
	"stackmapd: clock ", "stackmapd: snap ", "stackmapd: gen ", "stackmapd: crash ",
};

static bool daemon_marker(const struct decoded_event *ev)
{
	const char *buf;
	int len = 0;

	if (!ev->event || !streq(ev->event->name, "print") || !streq(ev->event->system, "ftrace"))
		return false;
	buf = tep_get_field_raw(NULL, ev->event, "buf", ev->record, &len, 0);
	if (!buf)
		return false;
	/* buf is char buf[]: size 0, the text runs to the end of the record */
	len = ev->record->size - (int)(buf - (const char *)ev->record->data);
	for (size_t i = 0; i < ARRAY_SIZE(daemon_markers); i++)
		if (len >= (int)strlen(daemon_markers[i]) &&
		    !memcmp(buf, daemon_markers[i], strlen(daemon_markers[i])))
			return true;
	return false;
}

static bool passes(struct selection *s, const struct decoded_event *ev)
{
	int pid;

	if (!s->markers && daemon_marker(ev)) {
		s->markers_hidden++;
		return false;
	}
	if (s->cpus && (ev->cpu >= STACKTAB_MAX_CPUS || !s->cpus[ev->cpu]))
		return false;
	if (s->event && !event_matches(ev->event, s->event))
		return false;
	if (s->pid >= 0 || s->comm) {
		pid = tep_data_pid(ev->tep, ev->record);
		if (s->pid >= 0 && pid != s->pid)
			return false;
		if (s->comm && !streq(tep_data_comm_from_pid(ev->tep, pid) ?: "", s->comm))
			return false;
	}
	return in_window(s, ev);
}

/* Any filter that can tell events of one CPU apart. */
static bool filtering_beyond_cpu(const struct selection *s)
{
	return s->since.set || s->until.set || s->pid >= 0 || s->comm || s->event;
}

bool selection_wanted(struct selection *s, const struct decoded_event *ev)
{
	struct selection_state *st;
	bool w;

	assert(s);
	assert(s->state);
	assert(ev);

	st = s->state;
	if (GREEDY_REALLOC0(st->cpu_wanted, st->nr_cpus, (size_t)ev->cpu + 1) < 0)
		return false;
	/*
	 * A stack goes with the event before it on its CPU. With no filter but
	 * the CPU, also one whose event was not seen (lost, or before the
	 * data): the CPU alone decides, as for every other event.
	 */
	if (ev->is_stack) {
		if (s->cpus && (ev->cpu >= STACKTAB_MAX_CPUS || !s->cpus[ev->cpu]))
			return false;
		return st->cpu_wanted[ev->cpu] || !filtering_beyond_cpu(s);
	}
	w = passes(s, ev);
	st->cpu_wanted[ev->cpu] = w;
	selection_seen_event(s, ev, w);
	return w;
}

bool selection_wall(struct selection *s, const struct decoded_event *ev, uint64_t *ret)
{
	struct selection_state *st;

	assert(s);
	assert(s->state);
	assert(ev);
	assert(ret);

	st = s->state;
	pool_pairs(st, ev);
	if (!st->nr_pairs)
		return false;
	*ret = wallclock_to_realtime(st->pairs, st->nr_pairs, ev->ts);
	return true;
}

/* ---- decoding ---- */

static size_t path_index(const struct selection *s, size_t from, size_t to, const char *path,
			 size_t last)
{
	if (last >= from && last < to && streq(s->paths[last], path))
		return last;
	for (size_t i = from; i < to; i++)
		if (streq(s->paths[i], path))
			return i;
	return last;
}

/*
 * What the decoder itself can leave unread, by each segment's seek table:
 * the time window (a wall-clock one it places in each segment's trace
 * clock through the segment's CLOCK pairs), and the CPU when only one is
 * asked for.
 */
static struct decoder_filter seek_filter(const struct selection *s)
{
	struct decoder_filter f = DECODER_FILTER_ALL;
	int only = -1, n = 0;

	if (s->since.set)
		*(s->since.trace ? &f.since : &f.wall_since) = s->since.ns;
	if (s->until.set)
		*(s->until.trace ? &f.until : &f.wall_until) = s->until.ns;
	for (int c = 0; s->cpus && c < STACKTAB_MAX_CPUS && n < 2; c++)
		if (s->cpus[c]) {
			only = c;
			n++;
		}
	if (n == 1)
		f.cpu = only;
	return f;
}

/*
 * Decode group g. Returns 0, 1 (damaged), 2 (stopped: fn failed or no
 * memory), or the -errno of opening the decoder (logged).
 */
static int decode_group(struct selection *s, size_t g, const struct selection_run *run)
{
	size_t from = s->group_start[g], to = s->group_start[g + 1], idx = from;
	struct selection_state *st = s->state;
	struct decoder *d = NULL;
	struct stacktab_stats stats;
	struct decoded_event ev;
	bool damaged = false;
	int r, ret = 0;

	r = decoder_open((const char *const *)s->paths + from, to - from, &d);
	if (r < 0) {
		if (r == -ENOMEM && budget_error())
			log_err("cannot decode: %s", budget_error());
		else
			log_errno(LOG_ERR, r, "cannot decode");
		return r;
	}
	{
		struct decoder_filter f = seek_filter(s);

		/* an empty window: nothing passes in_window(), by the pairs of the group */
		st->wall_by_decoder = decoder_set_filter(d, &f) == 0;
	}
	decoder_set_overlap_plan(d, st->plan);
	st->nr_pairs = 0;
	st->seg = st->pooled_last = 0;
	if (st->cpu_wanted)
		memset(st->cpu_wanted, 0, st->nr_cpus * sizeof(*st->cpu_wanted));
	if (s->nr_groups > 1 && run->group && run->group(s, g, run->userdata) < 0)
		ret = 2;
	while (ret == 0) {
		r = decoder_next(d, &ev);
		if (r == 0)
			break;
		if (r < 0) {
			const char *msg = decoder_error(d) ?: strerror(-r);

			st->seg = 0;
			if (r == -EINPROGRESS) {
				if (!s->quiet_unfinished)
					log_notice("%s", msg);
				continue;
			}
			if (s->quiet_unfinished && r != -ENOMEM && strstr(msg, SEGMENT_PART_SUFFIX))
				continue;
			damaged = true;
			if (r == -ENOMEM && budget_error())
				log_err("%s%s%s", decoder_error(d) ?: "", decoder_error(d) ? ": " : "",
					budget_error());
			else
				log_err("%s", msg);
			if (r == -ENOMEM)
				ret = 2;
			continue;
		}
		if (run->progress) {
			idx = path_index(s, from, to, ev.segment, idx);
			run->progress(idx, run->userdata);
		}
		if (selection_wanted(s, &ev) && run->event(&ev, run->userdata) < 0)
			ret = 2;
	}
	decoder_get_stats(d, &stats);
	for (int k = 0; k < STACKTAB_KIND_MAX; k++) {
		s->stats.resolved[k] += stats.resolved[k];
		s->stats.unresolved[k] += stats.unresolved[k];
	}
	decoder_free(d);
	return ret ?: damaged ? 1 : 0;
}

/*
 * With a crash capture among the paths: which copy of the events it shares
 * with its boot's segments to read (decoder_overlap_plan_new()). Logs.
 */
static int plan_overlap(struct selection *s)
{
	bool capture = false;
	int r;

	for (size_t i = 0; i < s->nr_paths; i++)
		capture |= s->state->info[i].saved_by != NULL;
	if (!capture || s->state->plan)
		return 0;
	r = decoder_overlap_plan_new((const char *const *)s->paths, s->nr_paths, &s->state->plan);
	if (r < 0)
		return log_errno(LOG_ERR, r, "cannot decode");
	if (decoder_overlap_plan_size(s->state->plan))
		log_notice("a crash capture holds with full stacks events that the recorded segments "
			 "of its boot cannot resolve: they are read from the capture");
	return 0;
}

int selection_decode(struct selection *s, const struct selection_run *run)
{
	int ret = 0, r;

	assert(s);
	assert(s->state);
	assert(run);
	assert(run->event);

	r = plan_overlap(s);
	if (r < 0)
		return r;

	for (size_t g = 0; g < s->nr_groups; g++) {
		r = decode_group(s, g, run);
		if (r < 0 && s->nr_groups == 1)
			return r;
		if (r != 0)
			ret = 1;
		if (r == 2)
			break;
	}
	if (s->markers_hidden && !s->markers_in_output)
		log_notice("%" PRIu64 " of the daemon's own markers (%s) not shown: --markers shows "
			   "them", s->markers_hidden, SELECTION_MARKERS);
	return selection_verdict(s, ret);
}
