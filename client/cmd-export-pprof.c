/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * stackmapctl export --format pprof (cmd-export-pprof.h). Samples go
 * into one profile (lib/export/pprof.h), or with --slice into one profile per
 * (slice of wall-clock time, host, kernel, event), all kept in memory
 * until the end: the samples of two segments interleave, and the losses
 * of a segment are known from its index once its samples are in
 * (lib/export/segtally.h). Each profile gets its start and duration
 * from the segments' CLOCK pairs, its host, kernel and event as comments
 * "key=value" (pprof has no profile-level labels), a "[lost events]"
 * sample for the events the kernel lost in its time and host (of any
 * event type), and unresolved stacks under one "[unresolved stack]" frame.
 */
#include <assert.h>
#include <ctype.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <time.h>

#include "cmd-common.h"
#include "cmd-export-pprof.h"
#include "log.h"
#include "pprof.h"
#include "sample-source.h"
#include "segtally.h"
#include "selection.h"
#include "strmap.h"
#include "util.h"

#define NSEC_PER_S UINT64_C(1000000000)

struct profile {
	struct pprof *p;
	uint64_t start;			/* slice start, wall-clock ns */
	char *host, *kernel, *event;
};

struct ctx {
	const struct export_pprof_options *o;
	struct segtally tally;
	struct strmap *keys;		/* "START\0HOST\0KERNEL\0EVENT" -> profiles[index] */
	struct profile *profiles;
	size_t cap_profiles;
	uint64_t first_wall, last_wall;	/* over all samples */
	uint64_t first_ts, last_ts;
	uint64_t unplaced;		/* samples without wall-clock time, left out of slices */
	struct buf key;
};

int export_pprof_parse_slice(const char *s, uint64_t *ret_ns)
{
	static const struct {
		const char *unit;
		uint64_t sec;
	} units[] = { { "", 1 }, { "s", 1 }, { "min", 60 }, { "m", 60 }, { "h", 3600 } };
	char *end;
	unsigned long long n;

	assert(s);
	assert(ret_ns);

	errno = 0;
	n = strtoull(s, &end, 10);
	if (errno || end == s || *s == '-' || !n)
		return -EINVAL;
	for (size_t i = 0; i < ARRAY_SIZE(units); i++)
		if (streq(end, units[i].unit)) {
			if (n > UINT64_MAX / NSEC_PER_S / units[i].sec)
				return -EINVAL;
			*ret_ns = n * units[i].sec * NSEC_PER_S;
			return 0;
		}
	return -EINVAL;
}

static void ctx_done(struct ctx *c)
{
	for (size_t i = 0; c->keys && i < strmap_size(c->keys); i++) {
		pprof_free(c->profiles[i].p);
		free(c->profiles[i].host);
		free(c->profiles[i].kernel);
		free(c->profiles[i].event);
	}
	free(c->profiles);
	strmap_free(c->keys);
	segtally_done(&c->tally);
	buf_done(&c->key);
}

/* The profile of (start, host, kernel, event), made when first asked for. */
static int profile_of(struct ctx *c, uint64_t start, const char *host, const char *kernel,
		      const char *event, struct profile **ret)
{
	struct profile *p;
	size_t idx;
	int r;

	buf_reset(&c->key);
	r = buf_append(&c->key, &start, sizeof(start));
	if (r >= 0)
		r = buf_printf(&c->key, "%s%c%s%c%s", host, 0, kernel, 0, event);
	if (r >= 0)
		r = strmap_intern(c->keys, (const char *)c->key.data, c->key.len, &idx);
	if (r < 0)
		return r;
	if (r == 0) {
		*ret = &c->profiles[idx];
		return 0;
	}
	if (GREEDY_REALLOC(c->profiles, c->cap_profiles, idx + 1) < 0)
		return -ENOMEM;
	p = &c->profiles[idx];
	*p = (struct profile){ .p = pprof_new(), .start = start, .host = strdup(host),
			       .kernel = strdup(kernel), .event = strdup(event) };
	if (!p->p || !p->host || !p->kernel || !p->event)
		return -ENOMEM;
	pprof_set_pid_cpu_labels(p->p, c->o->pid_cpu_labels);
	*ret = p;
	return 0;
}

static void span_add(uint64_t *first, uint64_t *last, uint64_t v)
{
	if (!v)
		return;
	if (!*first || v < *first)
		*first = v;
	*last = MAX(*last, v);
}

static int on_sample(const struct sample *s, void *userdata)
{
	static const struct sample_frame unresolved = { PPROF_UNRESOLVED_ADDR, "[unresolved stack]" };
	struct ctx *c = userdata;
	struct sample copy = *s;
	struct profile *prof;
	int r;

	r = segtally_add(&c->tally, s, 1, NULL);
	if (r < 0 && r != -EINVAL)
		return r;
	span_add(&c->first_wall, &c->last_wall, s->wall_ns);
	span_add(&c->first_ts, &c->last_ts, s->ts);
	/* the sample source names an unresolved stack "[unresolved]", as folded prints it */
	if (s->nr_frames == 1 && !s->frames[0].addr && s->frames[0].sym &&
	    streq(s->frames[0].sym, "[unresolved]"))
		copy.frames = &unresolved;
	if (!c->o->slice_ns) {
		r = profile_of(c, 0, "", "", "", &prof);
	} else if (!s->wall_ns) {
		c->unplaced++;
		return 0;
	} else {
		const struct sample_origin *o = s->origin;

		r = profile_of(c, s->wall_ns - s->wall_ns % c->o->slice_ns, o ? o->host : "",
			       o ? o->kernel : "", s->event, &prof);
	}
	return r < 0 ? r : pprof_add(prof->p, &copy);
}

/* Each segment's losses go to the profiles of the slice where that CPU's data ends. */
static int add_losses(struct ctx *c)
{
	for (size_t i = 0; i < c->tally.nr_segs; i++) {
		const struct segtally_segment *seg = &c->tally.segs[i];
		_cleanup_free_ struct segtally_loss *ls = NULL;
		size_t nr;
		int r;

		r = segtally_losses(seg, &ls, &nr);
		if (r < 0)
			return r;
		for (size_t k = 0; k < nr; k++) {
			const struct segtally_loss l = ls[k];
			/* a loss the kernel did not count is at least one event */
			uint64_t n = l.lost + l.lost_unknown, start;
			bool found = false;

			if (!c->o->slice_ns) {
				struct profile *prof;

				r = profile_of(c, 0, "", "", "", &prof);
				if (r >= 0)
					r = pprof_add_lost(prof->p, n, l.cpu);
				if (r < 0)
					return r;
				continue;
			}
			if (!l.last_wall)
				continue;	/* counted in c->unplaced's warning */
			start = l.last_wall - l.last_wall % c->o->slice_ns;
			for (size_t j = 0; j < strmap_size(c->keys); j++) {
				struct profile *p = &c->profiles[j];

				if (p->start != start || !streq(p->host, seg->host) ||
				    !streq(p->kernel, seg->kernel))
					continue;
				r = pprof_add_lost(p->p, n, l.cpu);
				if (r < 0)
					return r;
				found = true;
			}
			if (!found) {
				/* no event of this host in that slice: a profile of the losses alone */
				struct sample_frame f = { PPROF_LOST_ADDR, "[lost events]" };
				struct sample s = { .event = "lost_events", .cpu = l.cpu, .comm = "",
						    .nr_frames = 1, .frames = &f };
				struct profile *prof;

				r = profile_of(c, start, seg->host, seg->kernel, "lost_events", &prof);
				if (r >= 0)
					r = pprof_add(prof->p, &s);
				if (r >= 0 && n > 1)
					r = pprof_add_lost(prof->p, n - 1, l.cpu);
				if (r < 0)
					return r;
			}
		}
	}
	return 0;
}

/* Write p to path, whole or not at all (cmd_output_open()). */
static int write_profile(struct pprof *p, const char *path)
{
	struct cmd_output o;
	int r;

	r = cmd_output_open(&o, path);
	if (r < 0)
		return r;
	return cmd_output_finish(&o, pprof_write(p, o.fd));
}

/* s with every character that is not safe in a file name as '-'. */
static void file_part(char *dst, size_t len, const char *s)
{
	size_t i = 0;

	for (; *s && i + 1 < len; s++, i++)
		dst[i] = (isalnum((unsigned char)*s) || strchr("._+-", *s)) ? *s : '-';
	dst[i] = '\0';
	if (!i && len > 1)
		(void)snprintf(dst, len, "unknown");
}

static int write_slice(struct ctx *c, struct profile *p, const char *dir)
{
	_cleanup_free_ char *path = NULL, *lh = NULL, *lk = NULL, *le = NULL;
	char when[32], host[128], kernel[128], event[128];
	time_t t = (time_t)(p->start / NSEC_PER_S);
	struct tm tm;
	int r;

	(void)gmtime_r(&t, &tm);
	(void)strftime(when, sizeof(when), "%Y%m%dT%H%M%SZ", &tm);
	file_part(host, sizeof(host), p->host);
	file_part(kernel, sizeof(kernel), p->kernel);
	file_part(event, sizeof(event), p->event);
	if (strprintf(&path, "%s/%s_%s_%s_%s.pb.gz", dir, when, host, kernel, event) < 0 ||
	    strprintf(&lh, "host=%s", p->host) < 0 || strprintf(&lk, "kernel=%s", p->kernel) < 0 ||
	    strprintf(&le, "event=%s", p->event) < 0)
		return -ENOMEM;
	pprof_set_time(p->p, p->start, c->o->slice_ns);
	r = pprof_add_comment(p->p, lh);
	if (r >= 0)
		r = pprof_add_comment(p->p, lk);
	if (r >= 0)
		r = pprof_add_comment(p->p, le);
	return r < 0 ? r : write_profile(p->p, path);
}

static int write_profiles(struct ctx *c, const char *out)
{
	struct profile *p;
	int r;

	if (!c->o->slice_ns) {
		r = profile_of(c, 0, "", "", "", &p);
		if (r < 0)
			return r;
		/* wall-clock time when the pairs give it, else only the duration */
		if (c->first_wall)
			pprof_set_time(p->p, c->first_wall, c->last_wall - c->first_wall);
		else
			pprof_set_time(p->p, 0, c->last_ts - c->first_ts);
		return write_profile(p->p, out);
	}
	if (mkdir(out, 0755) < 0 && errno != EEXIST)
		return -errno;
	for (size_t i = 0; i < strmap_size(c->keys); i++) {
		r = write_slice(c, &c->profiles[i], out);
		if (r < 0)
			return r;
	}
	return 0;
}

int export_pprof(struct selection *sel, struct sample_source_options *so,
		 const struct export_pprof_options *o, const char *out)
{
	struct ctx c = { .o = o, .keys = strmap_new() };
	int r, ret = 1;

	assert(sel);
	assert(so);
	assert(o);
	assert(out);

	segtally_init(&c.tally);
	if (!c.keys) {
		log_errno(LOG_ERR, -ENOMEM, "cannot export");
		goto done;
	}
	for (size_t i = 0; i < sel->nr_paths; i++) {
		r = segtally_add_segment(&c.tally, sel->paths[i]);
		if (r == -ENOMEM) {
			log_errno(LOG_ERR, r, "cannot export");
			goto done;
		}
		/* one that cannot be read is reported by the decoding below */
	}
	ret = sample_source_run(sel, so, on_sample, &c);
	if (ret < 0 || ret == 2) {	/* 2: the filters named what is not there */
		ret = ret < 0 ? 1 : ret;
		goto done;
	}
	if (c.unplaced)
		log_warn("%" PRIu64 " events without a wall-clock time (their segments have no "
			 "CLOCK record) are left out of the slices", c.unplaced);
	r = add_losses(&c);
	if (r >= 0)
		r = write_profiles(&c, out);
	if (r < 0) {
		log_errno(LOG_ERR, r, "cannot write '%s'", out);
		ret = 1;
	}
done:
	ctx_done(&c);
	return ret;
}
