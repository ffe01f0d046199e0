/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The archive directory at start: created with its parents if missing
 * (mode 0750), then every entry named like a segment looked at without
 * trusting it. An unfinished segment of ours (a regular file that starts
 * with our prologue) is recovered; one that holds nothing (empty, or only
 * zeros: a power cut before its data reached the disk) is removed; anything
 * else named like a segment (garbage, another format version, a FIFO, a
 * directory, a symbolic link) is never deleted and never opened in a way
 * that could block: it is renamed to NAME.damaged-YYYYmmddTHHMMSS and
 * logged. Finished segments are learned for retention and numbering.
 */
#include <dirent.h>
#include <fcntl.h>
#include <inttypes.h>
#include <sys/stat.h>

#include "archive-internal.h"
#include "util.h"

enum part_kind {
	PART_OURS,		/* starts with our prologue: recover */
	PART_NOTHING,		/* empty or zeros only: nothing to keep */
	PART_FOREIGN,		/* not provably ours: set aside */
};

int archive_make_directory(const char *dir)
{
	_cleanup_free_ char *p = strdup(dir);
	struct stat st;

	if (!p)
		return -ENOMEM;
	/* each parent in turn, like mkdir -p; EEXIST of a non-directory shows below */
	for (char *s = p + 1; *s; s++) {
		if (*s != '/')
			continue;
		*s = '\0';
		if (mkdir(p, 0750) < 0 && errno != EEXIST)
			return -errno;
		*s = '/';
	}
	if (mkdir(p, 0750) < 0 && errno != EEXIST)
		return -errno;
	if (stat(p, &st) < 0)
		return -errno;
	return S_ISDIR(st.st_mode) ? 0 : -ENOTDIR;
}

static int finished_cmp(const void *a, const void *b)
{
	const struct finished *x = a, *y = b;

	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

int archive_add_finished(struct archive *a, const char *name, uint64_t seq, uint64_t bytes)
{
	struct finished *f;

	if (GREEDY_REALLOC(a->done, a->done_cap, a->nr_done + 1) < 0)
		return -ENOMEM;
	f = &a->done[a->nr_done];
	f->name = strdup(name);
	if (!f->name)
		return -ENOMEM;
	f->seq = seq;
	f->bytes = bytes;
	a->nr_done++;
	if (seq >= a->next_seq)
		a->next_seq = seq + 1;
	return 0;
}

/* True if the rest of fd from off holds only zero bytes. */
static int only_zeros(int fd, off_t off)
{
	uint8_t b[65536];

	for (;;) {
		ssize_t n = pread(fd, b, sizeof(b), off);

		if (n < 0)
			return errno == EINTR ? only_zeros(fd, off) : -errno;
		if (n == 0)
			return 1;
		for (ssize_t i = 0; i < n; i++)
			if (b[i])
				return 0;
		off += n;
	}
}

/*
 * What a file named like an unfinished segment is, opened so that nothing
 * can block or follow a link. *ret_why says why it is not ours.
 */
static int classify_part(int dfd, const char *name, const char **ret_why)
{
	uint8_t p[SEGMENT_PROLOGUE_SIZE], want[SEGMENT_PROLOGUE_SIZE];
	_cleanup_close_ int fd = -1;
	struct stat st;
	ssize_t n;
	int k;

	fd = openat(dfd, name, O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_NOCTTY | O_CLOEXEC);
	if (fd < 0) {
		if (errno != ELOOP)
			return -errno;
		*ret_why = "is a symbolic link";
		return PART_FOREIGN;
	}
	if (fstat(fd, &st) < 0)
		return -errno;
	if (!S_ISREG(st.st_mode)) {
		*ret_why = S_ISDIR(st.st_mode) ? "is a directory" : "is not a regular file";
		return PART_FOREIGN;
	}
	do
		n = pread(fd, p, sizeof(p), 0);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;
	segment_prologue_encode(want);
	if ((size_t)n == sizeof(p) && memcmp(p, want, sizeof(p)) == 0)
		return PART_OURS;
	/* our prologue, cut short: nothing was written after it */
	if ((size_t)n < sizeof(p) && memcmp(p, want, (size_t)n) == 0)
		return PART_NOTHING;
	k = only_zeros(fd, 0);
	if (k != 0)
		return k < 0 ? k : PART_NOTHING;
	*ret_why = n >= 8 && memcmp(p, want, 8) == 0 ?
		"is a segment of another format version, or its header is damaged" :
		"does not start with a segment header";
	return PART_FOREIGN;
}

/* Rename dir/name to name.damaged-STAMP (another free name if taken). Logs. */
static int set_aside(struct archive *a, int dfd, const char *name, const char *why)
{
	time_t now = time(NULL);
	char stamp[32];
	struct tm tm;

	(void)gmtime_r(&now, &tm);
	(void)strftime(stamp, sizeof(stamp), "%Y%m%dT%H%M%S", &tm);
	for (unsigned i = 0; i < 100; i++) {
		_cleanup_free_ char *to = NULL;
		struct stat st;

		if ((i ? strprintf(&to, "%s.damaged-%s.%u", name, stamp, i)
		       : strprintf(&to, "%s.damaged-%s", name, stamp)) < 0)
			return -ENOMEM;
		if (fstatat(dfd, to, &st, AT_SYMLINK_NOFOLLOW) == 0)
			continue;
		if (renameat(dfd, name, dfd, to) < 0)
			return log_errno(LOG_ERR, -errno, "'%s/%s' %s, and cannot be moved aside",
					 a->dir, name, why);
		a->quarantined++;
		log_warn("'%s/%s' %s: not a segment of ours, kept as '%s'", a->dir, name, why, to);
		return 0;
	}
	return log_errno(LOG_ERR, -EEXIST, "'%s/%s' %s, and cannot be moved aside", a->dir, name,
			 why);
}

void archive_add_recovered(struct archive *a, const char *path)
{
	const char *name = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
	struct stat st;
	uint64_t seq;

	if (stat(path, &st) < 0 || segment_name_seq(name, &seq) < 0)
		return;
	if (archive_add_finished(a, name, seq, (uint64_t)st.st_size) < 0)
		return;
	/* retention deletes from the front: oldest first, a recovered one included */
	qsort(a->done, a->nr_done, sizeof(*a->done), finished_cmp);
	if (a->hooks && a->hooks->recovered)
		a->hooks->recovered(a->userdata, path);
}

int archive_defer_recovery(struct archive *a, const char *name)
{
	uint64_t seq;

	for (size_t i = 0; i < a->nr_unrecovered; i++)
		if (streq(a->unrecovered[i], name))
			return 0;
	if (GREEDY_REALLOC(a->unrecovered, a->cap_unrecovered, a->nr_unrecovered + 1) < 0)
		return -ENOMEM;
	a->unrecovered[a->nr_unrecovered] = strdup(name);
	if (!a->unrecovered[a->nr_unrecovered])
		return -ENOMEM;
	a->nr_unrecovered++;
	/* a new segment must not take its number */
	if (segment_name_seq(name, &seq) == 0 && seq >= a->next_seq)
		a->next_seq = seq + 1;
	return 0;
}

/*
 * An unfinished segment of ours: finish what the last run left. Logs. A
 * write error the device may get over (a full disk: recovery appends a
 * NOTE and the trailer) does not stop the start: it is retried later.
 * Returns 0, 1 when deferred, or -errno.
 */
static int recover_part(struct archive *a, int dfd, const char *name, bool retry)
{
	_cleanup_free_ char *path = NULL, *final = NULL;
	int r;

	if (strprintf(&path, "%s/%s", a->dir, name) < 0)
		return -ENOMEM;
	r = segment_recover(path, NULL,
			    "recovered at start: the daemon stopped before finishing "
			    "this segment; records after the last complete one are lost",
			    &final);
	if (r == -EBADMSG || r == -EPROTONOSUPPORT || r == -EINVAL)
		return set_aside(a, dfd, name, "cannot be recovered");
	if (archive_error_transient(r) && archive_defer_recovery(a, name) >= 0) {
		if (!retry)
			log_errno(LOG_WARNING, r, "cannot recover the unfinished segment '%s' now; "
				  "retrying every second, continuing", path);
		return 1;
	}
	if (r < 0)
		return log_errno(LOG_ERR, r, "cannot recover the unfinished segment '%s'", path);
	a->recovered++;
	if (!final) {
		log_info("removed the unfinished segment '%s': nothing in it after its header", path);
		return 0;
	}
	log_notice("recovered the unfinished segment '%s' as '%s'", path, final);
	archive_add_recovered(a, final);
	return 0;
}

void archive_retry_recoveries(struct archive *a)
{
	_cleanup_close_ int dfd = -1;
	char **names = a->unrecovered;
	size_t n = a->nr_unrecovered;

	if (!n)
		return;
	dfd = open(a->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return;
	/* taken out first: recover_part() puts back what fails again */
	a->unrecovered = NULL;
	a->nr_unrecovered = a->cap_unrecovered = 0;
	for (size_t i = 0; i < n; i++) {
		struct stat st;

		if (fstatat(dfd, names[i], &st, AT_SYMLINK_NOFOLLOW) == 0)
			(void)recover_part(a, dfd, names[i], true);
		free(names[i]);
	}
	free(names);
}

static int scan_part(struct archive *a, int dfd, const char *name)
{
	const char *why = NULL;
	int k;

	k = classify_part(dfd, name, &why);
	if (k < 0)
		return log_errno(LOG_ERR, k, "cannot read '%s/%s'", a->dir, name);
	switch (k) {
	case PART_OURS:
		return recover_part(a, dfd, name, false);
	case PART_NOTHING:
		if (unlinkat(dfd, name, 0) < 0 && errno != ENOENT)
			return log_errno(LOG_ERR, -errno, "cannot remove '%s/%s'", a->dir, name);
		log_info("removed the unfinished segment '%s/%s': no data reached the disk",
			 a->dir, name);
		return 0;
	default:
		return set_aside(a, dfd, name, why);
	}
}

int archive_scan_directory(struct archive *a)
{
	char **parts = NULL;
	size_t nr_parts = 0, cap_parts = 0;
	DIR *d;
	struct dirent *de;
	int r = 0;

	d = opendir(a->dir);
	if (!d)
		return -errno;
	/* names first: recovering renames entries, which readdir must not see twice */
	while ((de = readdir(d))) {
		struct stat st;
		uint64_t seq;

		if (segment_name_is_part(de->d_name)) {
			if (GREEDY_REALLOC(parts, cap_parts, nr_parts + 1) < 0 ||
			    !(parts[nr_parts] = strdup(de->d_name))) {
				r = -ENOMEM;
				break;
			}
			nr_parts++;
		} else if (segment_name_is_finished(de->d_name)) {
			/* retention deletes only regular files named like ours */
			if (segment_name_seq(de->d_name, &seq) < 0 ||
			    fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
			    !S_ISREG(st.st_mode))
				continue;
			r = archive_add_finished(a, de->d_name, seq, (uint64_t)st.st_size);
			if (r < 0)
				break;
		}
	}
	for (size_t i = 0; i < nr_parts; i++) {
		if (r >= 0)
			r = scan_part(a, dirfd(d), parts[i]);
		free(parts[i]);
	}
	free(parts);
	closedir(d);
	if (r < 0)
		return r;
	if (a->quarantined || a->recovered)
		(void)fsync_dir(a->dir);
	if (a->nr_done)
		qsort(a->done, a->nr_done, sizeof(*a->done), finished_cmp);
	return 0;
}
