/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Between the two halves of the decoder: decode-segment.c reads a
 * segment's tables and hands out each CPU's records of it; decode.c walks
 * the pages and merges the CPUs. Not for other modules.
 */
#ifndef STACKMAPD_DECODE_INTERNAL_H
#define STACKMAPD_DECODE_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "decode.h"
#include "segment-meta.h"
#include "util.h"
#include "wallclock.h"

struct ksyms;
struct segment_reader;
struct tep_format_field;

#define DECODE_MAX_ERRORS 16

/* One item of a CPU's stream in a segment: a PAGES payload, or a strict boundary. */
struct item {
	struct item *next;
	uint64_t offset;	/* of its record */
	bool boundary;
	uint32_t generation;	/* boundary: the generation that starts */
	size_t len;
	uint8_t data[];
};

struct cpu_stream {
	uint32_t total;		/* items the first pass found */
	uint32_t read;		/* items read from the file so far (queued or handed out) */
	struct item *head, *tail;
	struct segment_reader *own;	/* private reader, after the lookahead limit was hit */
	uint32_t own_skip;	/* items the private reader must skip (read before it existed) */
};

struct decoder_file {
	char *name;
	char *data;		/* NUL-terminated copy */
	size_t len;
};

struct decoder_segment {
	char *path;
	char *errors[DECODE_MAX_ERRORS];
	size_t nr_errors;
	struct tep_handle *tep;
	struct ksyms *ks;
	struct stacktab *tab;
	struct segment_meta meta;
	unsigned int long_size;
	bool big_endian;
	size_t page_size;	/* 0: unknown */
	int stack_type[DECODED_STACK_MAX];	/* event type id of each stack kind, -1: none */
	struct tep_format_field *caller_field, *size_field, *id_field, *ref_field;
	uint64_t data_end;	/* records at or after this offset are not used */
	struct decoder_file *files;	/* FILE records, as stored (for exporters) */
	size_t nr_files;
	struct wallclock_pair *clocks;	/* CLOCK pairs, sorted by trace clock */
	size_t nr_clocks;

	/* second pass */
	struct cpu_stream *cpus;	/* indexed by CPU */
	size_t nr_cpus;
	struct segment_reader *shared;
	bool shared_done;
	size_t queued;		/* payload bytes in all queues */
};

/*
 * Record a problem of segment s (at most DECODE_MAX_ERRORS are kept); the
 * decoder reports them when it is done with the segment.
 */
void decoder_segment_add_error(struct decoder_segment *s, const char *fmt, ...) _printf_(2, 3);

/*
 * The next item of cpu's stream in segment s (NULL: a segment that could
 * not be read): 1 and *ret (owned by the caller, free()), 0 when the CPU
 * has nothing more in s, or -ENOMEM. lookahead bounds the bytes queued for
 * other CPUs before cpu switches to a reader of its own.
 */
int decoder_segment_next_item(struct decoder_segment *s, unsigned int cpu, size_t lookahead,
			      struct item **ret);

#endif
