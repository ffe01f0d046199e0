/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Tracefs under our feet: a periodic check that our instance still exists
 * and that what we set (event enables, filters, options, tracing_on) still
 * holds, since anyone with access to tracefs can change it while we run.
 * What changed is set back, logged at a bounded rate and counted for
 * status. The values to check are the undo log's (what we wrote).
 */
#include <assert.h>

#include "tracing-internal.h"
#include "util.h"

static bool ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), k = strlen(suffix);

	return n >= k && streq(s + n - k, suffix);
}

/* Files whose value we own while recording; trigger files and buffer sizes are left out. */
static bool checked_file(const char *path)
{
	return ends_with(path, "/enable") || ends_with(path, "/filter") || strstr(path, "/options/");
}

/* Whether cur (as read back) is what writing want leaves. */
static bool holds(const char *path, const char *cur, const char *want)
{
	if (ends_with(path, "/enable"))
		return cur[0] == want[0];	/* "1*" while a trigger holds it in soft mode */
	if (ends_with(path, "/filter") && streq(want, "0"))
		return streq(cur, "none");
	return streq(cur, want);
}

static int set_back(struct tracing *t, const char *path, const char *cur, const char *want)
{
	int r;

	r = tracing_write_value(path, want, true);
	log_ratelimit_warn_errno(&t->health_rl, r, "'%s' was changed to '%s' by someone else%s",
				 path, cur, r < 0 ? ", cannot set it back" : ": set back");
	if (r < 0)
		return r;
	t->repairs++;
	return 1;
}

int tracing_check(struct tracing *t, bool expect_on)
{
	char path[PATH_MAX];
	int n = 0, r;

	assert(t);

	if (!tracing_exists(t->instance_dir)) {
		log_ratelimit_err_errno(&t->health_rl, -ENOENT, "tracing instance '%s' was removed",
					t->instance_dir);
		return -ENOENT;
	}
	for (size_t i = 0; i < t->n_undo; i++) {
		const struct undo *u = &t->undo[i];
		_cleanup_free_ char *cur = NULL;

		if (!u->want || !u->truncate || !checked_file(u->path))
			continue;
		if (tracing_read_value(u->path, &cur) < 0 || holds(u->path, cur, u->want))
			continue;
		if (set_back(t, u->path, cur, u->want) > 0)
			n++;
	}
	if (expect_on) {
		_cleanup_free_ char *cur = NULL;

		r = tracing_pathf(path, "%s/tracing_on", t->instance_dir);
		if (r < 0)
			return r;
		if (tracing_read_value(path, &cur) >= 0 && !streq(cur, "1") &&
		    set_back(t, path, cur, "1") > 0)
			n++;
	}
	return n;
}

uint64_t tracing_repairs(const struct tracing *t)
{
	assert(t);
	return t->repairs;
}
