/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Recovering a segment left as .part by a stop without its trailer
 * (segment_recover(), segment.h): keep its valid records, add a NOTE that
 * says what was kept and why, write the trailer flagged TRUNCATED, and
 * rename it; delete it when nothing after META survived.
 */
#include <fcntl.h>
#include <inttypes.h>

#include "segment-internal.h"
#include "util.h"

static int remove_part(const char *path, const char *dir)
{
	if (unlink(path) < 0 && errno != ENOENT)
		return -errno;
	return fsync_dir(dir);
}

/* A .part that is a whole segment (stopped between finishing and renaming it). */
static int rename_complete(const char *path, const char *dir, char **ret_path)
{
	_cleanup_free_ char *final = NULL;
	_cleanup_close_ int fd = -1;
	int r;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fsync(fd) < 0)
		return -errno;
	final = strndup(path, strlen(path) - strlen(".part"));
	if (!final)
		return -ENOMEM;
	if (rename(path, final) < 0)
		return -errno;
	r = fsync_dir(dir);
	if (r < 0)
		return r;
	if (ret_path)
		*ret_path = steal_ptr(final);
	return 0;
}

/*
 * Read the records of a .part: *ret_keep_off and *ret_keep_records get
 * where the valid records before any INDEX end and how many they are;
 * *ret_own (its cpus owned by the caller when *ret_have_own) the INDEX
 * that the writer wrote before it stopped, if any. Returns 0 at the clean
 * end, -EBADMSG at damage, other -errno.
 */
static int scan_part(struct segment_reader *rd, uint64_t *ret_keep_off, uint32_t *ret_keep_records,
		     struct segment_index *ret_own, bool *ret_have_own)
{
	struct segment_index own = { 0 };
	bool have_own = false;
	int k;

	for (;;) {
		struct segment_record rec;

		k = segment_reader_next(rd, &rec);
		if (k == 0 || k == -EBADMSG)
			break;
		if (k < 0)
			goto out;
		if (rec.type == SEGMENT_REC_INDEX) {
			/*
			 * An INDEX without a valid footer: the writer stopped
			 * while finishing, all data is there. Cut before this
			 * INDEX but keep what it says.
			 */
			if (have_own)
				segment_index_done(&own);
			have_own = segment_index_decode(rec.data, rec.len, &own) >= 0;
			continue;
		}
		*ret_keep_off = rec.offset + SEGMENT_REC_HDR_SIZE + rec.stored_len;
		*ret_keep_records = rec.seq + 1;
	}
out:
	*ret_own = own;
	*ret_have_own = have_own;
	return k;
}

int segment_recover(const char *part_path, const struct segment_index *idx, const char *note,
		    char **ret_path)
{
	_cleanup_(segment_reader_freep) struct segment_reader *rd = NULL;
	_cleanup_(segment_writer_freep) struct segment_writer *w = NULL;
	_cleanup_free_ struct segment_cpu_index *own_cpus = NULL;
	_cleanup_free_ struct segment_seek *own_frames = NULL;
	_cleanup_free_ char *dir = NULL, *text = NULL, *reason = NULL;
	struct segment_index own = { 0 }, out;
	uint64_t keep_off = SEGMENT_PROLOGUE_SIZE;
	uint32_t keep_records = 0;
	bool have_own = false;
	const char *slash;
	int k;

	if (!part_path || !segment_name_is_part(part_path))
		return -EINVAL;
	slash = strrchr(part_path, '/');
	dir = slash ? strndup(part_path, slash == part_path ? 1 : (size_t)(slash - part_path))
		    : strdup(".");
	if (!dir)
		return -ENOMEM;

	k = segment_reader_open(part_path, &rd);
	if (k == -EBADMSG) {
		/* Not even a prologue: nothing to keep. */
		k = remove_part(part_path, dir);
		if (k >= 0 && ret_path)
			*ret_path = NULL;
		return k;
	}
	if (k < 0)
		return k;

	k = scan_part(rd, &keep_off, &keep_records, &own, &have_own);
	own_cpus = have_own ? own.cpus : NULL;
	own_frames = have_own ? own.frames : NULL;
	if (k < 0 && k != -EBADMSG)
		return k;
	if (k == 0 && segment_reader_complete(rd))
		return rename_complete(part_path, dir, ret_path);
	if (keep_records <= 1) {
		k = remove_part(part_path, dir);
		if (k >= 0 && ret_path)
			*ret_path = NULL;
		return k;
	}

	if (k == -EBADMSG)
		k = strprintf(&reason, "cut at offset %" PRIu64 ": %s",
			      segment_reader_error_offset(rd), segment_reader_error(rd));
	else
		k = strprintf(&reason, "ended at offset %" PRIu64 " without a trailer",
			      segment_reader_good_offset(rd));
	if (k < 0)
		return k;
	k = strprintf(&text, "%s: kept %" PRIu32 " records (%" PRIu64 " bytes), %s",
		      note ? note : "segment recovered after an unclean stop", keep_records,
		      keep_off, reason);
	if (k < 0)
		return k;
	rd = segment_reader_free(rd);

	k = segment_writer_resume(dir, part_path, keep_off, keep_records, &w);
	if (k < 0)
		return k;
	k = segment_writer_append(w, SEGMENT_REC_NOTE, SEGMENT_NO_CPU, text, strlen(text), 0, NULL);
	if (k < 0)
		return k;

	/* The segment's own INDEX knows more than a caller's rebuilt one. */
	out = have_own ? own : idx ? *idx : (struct segment_index){ 0 };
	out.flags |= SEGMENT_INDEX_F_TRUNCATED;
	return segment_writer_finish(steal_ptr(w), &out, true, ret_path);
}
