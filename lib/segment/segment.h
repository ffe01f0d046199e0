/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The segment format (doc/segment-format.md): write (segment-writer.c),
 * read and verify (segment-reader.c), recover (segment-recover.c), and the
 * shared encodings and file names (segment.c). Shared by the daemon and
 * stackmapctl. Not thread-safe: the daemon's archive serializes access to
 * a writer.
 */
#ifndef STACKMAPD_SEGMENT_H
#define STACKMAPD_SEGMENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util.h"

#define SEGMENT_MAGIC "SMAPSEG"		/* 8 bytes with the NUL */
#define SEGMENT_END_MAGIC "SMAPEND"	/* 8 bytes with the NUL */
#define SEGMENT_VERSION 2
#define SEGMENT_VERSION_MIN 1	/* oldest version readers accept */
#define SEGMENT_REC_MAGIC 0x43524D53u	/* "SMRC" */
#define SEGMENT_PROLOGUE_SIZE 16
#define SEGMENT_REC_HDR_SIZE 32
#define SEGMENT_FOOTER_SIZE 24
#define SEGMENT_NO_CPU 0xffffffffu
#define SEGMENT_MAX_STORED (64u << 20)
#define SEGMENT_MAX_RAW (256u << 20)
/*
 * The INDEX record: CPU lines and seek-table lines that writers write and
 * readers accept (doc/segment-format.md, "Reader limits"). A writer whose
 * seek table is full finishes the segment (the daemon rotates).
 */
/*
 * The largest record payload (raw) that readers decoding events accept
 * (doc/segment-format.md, "Reader limits"); the daemon writes none larger:
 * frames are at most 16 MiB, and it leaves out a FILE that would be.
 */
#define SEGMENT_MAX_DECODE_RECORD (20u << 20)
/*
 * A NOTE is a line or two for humans: writers cut one at this length, and
 * readers show no more of one, nor more than SEGMENT_MAX_NOTES per segment.
 */
#define SEGMENT_MAX_NOTE 4096u
#define SEGMENT_MAX_NOTES 64u
#define SEGMENT_MAX_INDEX_CPUS 8192u
#define SEGMENT_MAX_INDEX_FRAMES (1u << 19)
#define SEGMENT_MAX_INDEX (16u + 56u * SEGMENT_MAX_INDEX_CPUS + 8u + 32u * SEGMENT_MAX_INDEX_FRAMES)
#define SEGMENT_SUFFIX ".smseg"
#define SEGMENT_PART_SUFFIX ".smseg.part"

enum segment_rec_type {
	SEGMENT_REC_META = 1,
	SEGMENT_REC_FILE = 2,
	SEGMENT_REC_PAGES = 3,
	SEGMENT_REC_STACKS = 4,
	SEGMENT_REC_GENERATION = 5,
	SEGMENT_REC_STATS = 6,
	SEGMENT_REC_NOTE = 7,
	SEGMENT_REC_INDEX = 8,
	SEGMENT_REC_CLOCK = 9,
	SEGMENT_REC_MAX
};

#define SEGMENT_REC_F_COMPRESSED 0x1
#define SEGMENT_REC_F_COLUMNS 0x2	/* PAGES, version 2: column-encoded frame (frame-columns.h) */

/* STACKS entry flags */
#define SEGMENT_STACK_F_ABSENT 0x1
#define SEGMENT_STACK_F_TEXT 0x2

/* GENERATION kinds */
enum segment_gen_kind {
	SEGMENT_GEN_ADOPTED = 1,
	SEGMENT_GEN_RESET_LOSSLESS = 2,
	SEGMENT_GEN_RESET_STRICT = 3,
	SEGMENT_GEN_RESET_EXTERNAL = 4,
	SEGMENT_GEN_MAX
};

/* INDEX flags */
#define SEGMENT_INDEX_F_TRUNCATED 0x1
#define SEGMENT_INDEX_F_FINAL 0x2
#define SEGMENT_INDEX_F_SEEK 0x4	/* a seek table follows the CPU lines */
#define SEGMENT_INDEX_F_TABLES_MISSING 0x8	/* stack tables or symbols could not all be written */

/* One CPU's line in the index (host byte order in memory, LE on disk). */
struct segment_cpu_index {
	uint32_t cpu;
	uint64_t pages;
	uint64_t events;
	uint64_t first_ts;
	uint64_t last_ts;
	uint64_t lost_events;
	uint64_t bytes;
};

/* One PAGES record in the seek table (host byte order in memory, LE on disk). */
struct segment_seek {
	uint32_t cpu;
	uint64_t offset;	/* of the record header */
	uint64_t first_ts;	/* 0: no event, or unknown (then last_ts is UINT64_MAX) */
	uint64_t last_ts;
};

struct segment_index {
	uint32_t flags;
	uint64_t unresolved;
	uint32_t nr_cpus;
	struct segment_cpu_index *cpus;	/* nr_cpus entries, owned by whoever filled it */
	uint32_t nr_frames;		/* seek table (flag SEEK), in file order */
	struct segment_seek *frames;	/* owned like cpus */
};

/* GENERATION payload, decoded. */
struct segment_generation {
	uint32_t generation;
	uint32_t prev_generation;
	uint32_t kind;
	uint32_t flags;
	uint64_t window_begin;
	uint64_t window_end;
	/*
	 * Where the markers that bound the window were read: the window's
	 * begin less guard is the first marker's time on begin_cpu, its end
	 * less guard the second's on end_cpu (SEGMENT_NO_CPU: not known, as
	 * in files of older writers). On its own CPU a marker orders events
	 * exactly; the guard covers only the other CPUs' clocks.
	 */
	uint32_t begin_cpu;
	uint32_t end_cpu;
	uint64_t guard;
};
#define SEGMENT_GENERATION_SIZE 48
#define SEGMENT_GENERATION_MIN_SIZE 32	/* older writers: no marker CPUs */
/*
 * Window bounds at or above this are not times (no trace clock gets there):
 * an end means the window never closed (its marker was not read back), a
 * begin proves nothing about when the reset happened.
 */
#define SEGMENT_WINDOW_UNKNOWN (UINT64_C(1) << 63)

/*
 * The prologue that starts every segment this version writes (magic,
 * version, CRC; doc/segment-format.md): what tells a file of ours from any
 * other.
 */
void segment_prologue_encode(uint8_t p[SEGMENT_PROLOGUE_SIZE]);

/* Encode/decode a GENERATION payload (32 bytes, LE). decode returns 0 or -EBADMSG. */
void segment_generation_encode(const struct segment_generation *g, uint8_t out[SEGMENT_GENERATION_SIZE]);
int segment_generation_decode(const void *buf, size_t len, struct segment_generation *ret);

/* ---- writing ---- */

struct segment_writer;

/*
 * Create DIR/NAME.smseg.part (O_EXCL) and write the prologue.
 * name is the base name without suffix, e.g. "00000042-20261129T100000".
 * On success *ret owns the writer. Returns 0 or -errno.
 */
int segment_writer_open(const char *dir, const char *name, struct segment_writer **ret);

/*
 * Append one record. If compress_level > 0 the payload is compressed into
 * one zstd frame (with cctx if not NULL: a ZSTD_CCtx * which the caller owns
 * and may reuse, whose compression level and content-size flag are set here;
 * otherwise a context of the writer's); if compress_level == 0 it is stored
 * as is. The first record must be META, and only the first; INDEX is written
 * by segment_writer_finish() only. payload is borrowed. Returns 0, -EINVAL
 * (bad type, order or level), -EFBIG (over the limits) or -errno. After a
 * write error (ENOSPC, EIO...) the file is cut back to its last complete
 * record and the writer can be used again; only if that cut fails is the
 * writer unusable (every later call returns the error; the .part file keeps
 * the records before it).
 */
int segment_writer_append(struct segment_writer *w, enum segment_rec_type type, uint32_t cpu,
			  const void *payload, size_t len, int compress_level, void *cctx);

/*
 * Append a record whose payload the caller already compressed into one zstd
 * frame (stored, of stored_len bytes) from raw_len bytes. Lets reader threads
 * compress outside the archive lock; stored is written from the caller's
 * buffer (borrowed), without a copy. The frame must record its content size
 * (ZSTD_compress2/ZSTD_compressCCtx do) equal to raw_len and be exactly
 * stored_len bytes long, else -EINVAL. flags: 0, or SEGMENT_REC_F_COLUMNS
 * for a PAGES record whose raw payload is a column-encoded frame (COMPRESSED
 * is implied). Returns 0 or -errno.
 */
int segment_writer_append_compressed(struct segment_writer *w, enum segment_rec_type type,
				     uint32_t cpu, const void *stored, size_t stored_len,
				     size_t raw_len, uint16_t flags);

/* Convenience: a FILE record (name NUL content), compressed at level. */
int segment_writer_append_file(struct segment_writer *w, const char *name, const void *data,
			       size_t len, int compress_level);

/* Bytes written so far, including the prologue. */
uint64_t segment_writer_size(const struct segment_writer *w);

/* Records written so far. */
uint32_t segment_writer_records(const struct segment_writer *w);

/*
 * 0, or the -errno that made the writer unusable (a failed write whose cut
 * back failed too): nothing more can be appended, the .part file holds the
 * records before it and is finished by segment_recover().
 */
int segment_writer_error(const struct segment_writer *w);

/* Path of the file as it is now (the .part name until finished). Borrowed. */
const char *segment_writer_path(const struct segment_writer *w);

/*
 * Write INDEX (idx, borrowed; NULL: no CPU lines) and footer, fsync, rename
 * to the final name, fsync the directory, close. With sync = false, skip the
 * fsyncs (tests only). On success *ret_path (if not NULL) gets the final
 * path (caller frees). The writer is freed in every case. Returns 0, -EINVAL
 * if no record (not even META) was written, or -errno; on failure the .part
 * file stays for recovery.
 */
int segment_writer_finish(struct segment_writer *w, const struct segment_index *idx, bool sync,
			  char **ret_path);

/* Close without finishing: the .part file stays for recovery. Returns NULL. */
struct segment_writer *segment_writer_free(struct segment_writer *w);
DEFINE_TRIVIAL_CLEANUP_FUNC(struct segment_writer *, segment_writer_free);

/* ---- reading ---- */

struct segment_record {
	enum segment_rec_type type;
	uint16_t flags;
	uint32_t cpu;
	uint32_t seq;
	uint64_t offset;	/* of the record header in the file */
	uint64_t stored_len;
	const uint8_t *data;	/* decompressed payload, valid until the next call */
	size_t len;
};

struct segment_reader;

/*
 * Open a segment (finished or .part) for sequential reading. Fails only if
 * the file cannot be opened or read (-errno; -EINVAL if it is not a regular
 * file), or the prologue is invalid: -EBADMSG if it is damaged or not a
 * segment's, -EPROTONOSUPPORT if it is intact but names another format
 * version. A file that is empty or holds only the start of a prologue opens:
 * its reader fails at offset 0 as cut short (segment_reader_cut_short()),
 * like a writer's unfinished record. On success *ret owns the reader (free
 * with segment_reader_free()).
 */
int segment_reader_open(const char *path, struct segment_reader **ret);

/*
 * Lower the payload size the reader accepts (default: the format's
 * SEGMENT_MAX_RAW): a record whose raw length, or stored length beyond
 * what compression may add, exceeds max_raw is reported as damaged before
 * anything is allocated for it.
 */
void segment_reader_set_max_raw(struct segment_reader *r, uint32_t max_raw);

/*
 * Read the next record into *rec. Returns 1 for a record, 0 at the clean end
 * (the INDEX record was read and the footer follows, or a .part file ends on
 * a record boundary), -EBADMSG at the first invalid or truncated record (see
 * segment_reader_error()), other -errno on I/O errors.
 */
int segment_reader_next(struct segment_reader *r, struct segment_record *rec);

/*
 * After -EBADMSG: offset of the first bad byte range and a static
 * description. Borrowed, valid while the reader lives.
 */
uint64_t segment_reader_error_offset(const struct segment_reader *r);
const char *segment_reader_error(const struct segment_reader *r);

/*
 * After -EBADMSG: true when the error is only that the last record runs
 * past the end of the file (a writer's unfinished tail, or a file cut
 * short), with everything before it intact.
 */
bool segment_reader_cut_short(const struct segment_reader *r);

/* Offset just past the last valid record read so far. */
uint64_t segment_reader_good_offset(const struct segment_reader *r);

/*
 * True if the file ends with a valid footer pointing at a valid INDEX.
 * Checked at open time without reading the whole file.
 */
bool segment_reader_complete(const struct segment_reader *r);

/*
 * The index from the trailer, if complete (else NULL). Borrowed.
 */
const struct segment_index *segment_reader_index(const struct segment_reader *r);

/* File size in bytes. */
uint64_t segment_reader_file_size(const struct segment_reader *r);

/*
 * With skip = true, segment_reader_next() hands out PAGES records without
 * reading their payload (rec->data NULL, rec->len the raw length, header
 * checked only): what a reader of the tables (formats, stacks, index) needs,
 * without reading or decompressing pages. Their payloads are read later
 * with segment_reader_read_at().
 */
void segment_reader_skip_pages(struct segment_reader *r, bool skip);

/*
 * Read and check the record at offset (a record header, as a seek table or
 * segment_reader_next() gave it) into *rec, as segment_reader_next() would,
 * without checking its sequence number. Does not move the sequential
 * position. Returns 0, -EBADMSG (see segment_reader_error()) or -errno.
 */
int segment_reader_read_at(struct segment_reader *r, uint64_t offset, struct segment_record *rec);

/*
 * The seek table: every PAGES record with its CPU, time span and offset, in
 * file order. From the INDEX of a finished segment when it has one; else by
 * a scan of the record headers (no payload is read; then first_ts is 0 and
 * last_ts UINT64_MAX: unknown, and the scan stops at the first bad header).
 * *ret is borrowed, valid while the reader lives. Returns the number of
 * entries (>= 0) or -errno.
 */
int segment_reader_seek_table(struct segment_reader *r, const struct segment_seek **ret);

/* PAGES payloads this reader decompressed so far (for tests and measurements). */
uint64_t segment_reader_pages_read(const struct segment_reader *r);

/* Format version from the prologue. */
uint32_t segment_reader_version(const struct segment_reader *r);

struct segment_reader *segment_reader_free(struct segment_reader *r);
DEFINE_TRIVIAL_CLEANUP_FUNC(struct segment_reader *, segment_reader_free);

/*
 * Encode/decode an INDEX payload. decode allocates idx->cpus and idx->frames
 * (caller frees both, or calls segment_index_done()).
 */
int segment_index_encode(const struct segment_index *idx, uint8_t **ret, size_t *ret_len);
int segment_index_decode(const void *buf, size_t len, struct segment_index *ret);
void segment_index_done(struct segment_index *idx);

/* ---- recovery ---- */

/*
 * Recover a .part file: truncate it after its last valid record, append a
 * NOTE (note, may be NULL; the NOTE adds what was kept and where and why the
 * file was cut) and the given index (flags get TRUNCATED), fsync and rename
 * to the final name, fsync the directory. A .part file without any valid
 * record after META (or without a valid prologue) is deleted (returns 0 with
 * *ret_path = NULL). idx may be NULL when the caller cannot rebuild it: an
 * index with no CPU lines is written. If the file holds its own valid INDEX
 * record (the writer stopped while writing the footer), that index is used
 * instead of idx. A .part that is already complete (stopped between
 * finishing and renaming) is renamed unchanged. On success *ret_path (if
 * not NULL) gets the final path (caller frees). Returns 0, -EINVAL if
 * part_path does not end in .smseg.part, or -errno (-EPROTONOSUPPORT: a
 * segment of another format version, left alone).
 */
int segment_recover(const char *part_path, const struct segment_index *idx, const char *note,
		    char **ret_path);

/* ---- helpers ---- */

/* Name of a record type ("META", ...), or NULL if the type is unknown. Static. */
const char *segment_rec_type_name(unsigned int type);

/*
 * The name and content of a FILE record's payload, "NAME\0CONTENT" (the
 * name at most 255 bytes): both point into rec's data. Returns 0, or
 * -EBADMSG when the payload has no name.
 */
int segment_file_split(const struct segment_record *rec, const char **ret_name,
		       const uint8_t **ret_content, size_t *ret_len);

/* ---- names ---- */

/* True if name is a finished ("...smseg") or partial segment file name. */
bool segment_name_is_finished(const char *name);
bool segment_name_is_part(const char *name);

/* Parse the sequence number from a segment file name; returns 0 or -EINVAL. */
int segment_name_seq(const char *name, uint64_t *ret_seq);

#endif
