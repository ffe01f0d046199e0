/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The STACKS record's entries (doc/segment-format.md): one stack of a
 * generation and id, its encoding and decoding. The table that resolves
 * references across generations is stacktab-resolve.h.
 */
#ifndef STACKMAPD_STACKTAB_H
#define STACKMAPD_STACKTAB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "buf.h"
#include "segment.h"

/* One stack table entry. Pointers are borrowed (see the functions). */
struct stack_entry {
	uint32_t generation;		/* 0: daemon table (stack_ref); >= 1: kernel map generation */
	uint32_t id;
	uint32_t refs;
	uint16_t nr;			/* frames */
	uint16_t flags;			/* SEGMENT_STACK_F_ABSENT, SEGMENT_STACK_F_TEXT */
	const uint64_t *ips;		/* nr addresses, innermost first (when !TEXT) */
	const char *const *text;	/* nr symbolized frames (when TEXT) */
};

/* Append the encoding of e to b. Returns 0 or -ENOMEM/-EINVAL. */
int stacktab_encode(struct buf *b, const struct stack_entry *e);

/*
 * Decode a STACKS payload, calling cb for each entry (its pointers are
 * valid only during the call). Returns 0, the first negative value cb
 * returns, or -EBADMSG if the payload is malformed (entries before the bad
 * one were delivered).
 */
int stacktab_decode(const void *payload, size_t len,
		    int (*cb)(const struct stack_entry *e, void *userdata), void *userdata);

/*
 * True if a and b name the same stack: same ABSENT and TEXT flags, same
 * number of frames, same addresses (or the same strings). generation, id
 * and refs are not compared. An address stack never equals a TEXT one.
 */
int stacktab_frames_equal(const struct stack_entry *a, const struct stack_entry *b);

/* Reader limit (doc/segment-format.md): an entry deeper than this is malformed. */
#define STACKTAB_MAX_DEPTH 256

#endif
