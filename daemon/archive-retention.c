/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Retention (archive.h): which finished segments are deleted so that the
 * archive's limits hold (rotation.c decides, from their sizes and what
 * deleting each really frees), and their deletion.
 */
#include <assert.h>
#include <pthread.h>
#include <sys/stat.h>
#include <sys/statvfs.h>

#include "archive-internal.h"
#include "util.h"

/*
 * What deleting each finished segment frees: nothing for a file with
 * another link (st_nlink > 1, such as the uploader's spool entry of a
 * segment not sent yet or refused), as the name goes and the data stays.
 * Returns an array of a->nr_done (caller frees), or NULL (sizes then).
 */
static uint64_t *retention_frees(struct archive *a, const uint64_t *sizes)
{
	uint64_t *frees = calloc(a->nr_done, sizeof(*frees));

	if (!frees)
		return NULL;
	for (size_t i = 0; i < a->nr_done; i++) {
		_cleanup_free_ char *path = NULL;
		struct stat st;

		frees[i] = sizes[i];
		if (strprintf(&path, "%s/%s", a->dir, a->done[i].name) == 0 &&
		    lstat(path, &st) == 0 && st.st_nlink > 1)
			frees[i] = 0;
	}
	return frees;
}

void archive_enforce_retention(struct archive *a)
{
	_cleanup_free_ uint64_t *sizes = NULL, *frees = NULL;
	_cleanup_free_ bool *del_mask = NULL;
	uint64_t cur_size = 0, fs_total = 0, fs_free = 0;
	struct rotation_policy policy;
	struct statvfs sv;
	size_t del;

	assert(a);

	policy = a->policy;
	if (!a->nr_done)
		return;
	sizes = calloc(a->nr_done, sizeof(*sizes));
	if (!sizes)
		return;
	for (size_t i = 0; i < a->nr_done; i++)
		sizes[i] = a->done[i].bytes;
	pthread_mutex_lock(&a->lock);
	if (a->cur)
		cur_size = segment_writer_size(a->cur->writer);
	else if (policy.max_segments)
		/*
		 * rotation_retention() counts the segment being written as one;
		 * there is none (flight recorder, stop): keep max_segments.
		 */
		policy.max_segments++;
	pthread_mutex_unlock(&a->lock);
	if (statvfs(a->dir, &sv) == 0) {
		fs_total = (uint64_t)sv.f_blocks * sv.f_frsize;
		fs_free = (uint64_t)sv.f_bavail * sv.f_frsize;
	}
	/* short of free space: what deleting each would really free (not a file with another name) */
	if (policy.keep_free_percent && fs_total &&
	    fs_free < fs_total / 100 * policy.keep_free_percent)
		frees = retention_frees(a, sizes);
	del_mask = calloc(a->nr_done, sizeof(*del_mask));
	if (!del_mask)
		return;
	del = rotation_retention_select(&policy, sizes, frees, a->nr_done, cur_size, fs_total,
					fs_free, del_mask);
	if (!del)
		return;
	/* not always the oldest: a segment the spool holds may be kept while newer ones go */
	for (size_t i = 0, k = 0; i < a->nr_done; i++) {
		_cleanup_free_ char *path = NULL;

		if (!del_mask[i]) {
			a->done[k++] = a->done[i];
			continue;
		}
		if (strprintf(&path, "%s/%s", a->dir, a->done[i].name) == 0)
			(void)unlink(path);
		free(a->done[i].name);
		a->deleted++;
	}
	a->nr_done -= del;
	if (a->sync)
		(void)fsync_dir(a->dir);
}
