/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The kernel stack map's exports as data: a parsed snapshot (entries
 * sorted by id, their frames in one buffer) from the binary stack_map_bin
 * image or the text stack_map, and the counters of stack_map_stat
 * (STACKMAP-ABI.md). Parsing needs no tracefs: the daemon reads the files
 * and hands the bytes here.
 */
#ifndef STACKMAPD_STACKMAP_EXPORT_H
#define STACKMAPD_STACKMAP_EXPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "buf.h"

/* Ids are hash-table slots: below table_size, at most 2^19 (bits = 18). */
#define STACKMAP_MAX_IDS (1u << 19)

/* A stack_map_bin image larger than this is refused. */
#define STACKMAP_BIN_MAX_SIZE (256u << 20)

/* One stack of a snapshot; its frames are in the snapshot's data. */
struct stackmap_export_entry {
	uint32_t id;
	uint32_t refs;			/* the kernel's ref_count */
	uint32_t nr;			/* frames */
	size_t off;			/* nr native u64 addresses, or nr NUL-terminated strings (text) */
	size_t len;			/* bytes at off */
};

/* A parsed snapshot. Zero-initialize; reusable; free with stackmap_export_done(). */
struct stackmap_export {
	struct stackmap_export_entry *v;	/* sorted by id, unique */
	size_t n, cap;
	struct buf data;
	bool text;			/* frames are the kernel's text ("sym+off/len"), not addresses */
};

/* stack_map_stat; valid is set by a successful parse. */
struct stackmap_stat {
	bool valid;
	uint64_t entries, capacity, table_size, successes, drops;
	unsigned rate;			/* success rate, percent */
};

/*
 * Parse a stack_map_bin image p (len bytes) into sn, replacing its
 * content: a 16-byte header (magic 0x46534D42 in the writer's byte order,
 * version 1, count), then per stack 16 bytes (id, nr, ref_count, reserved)
 * and nr u64 addresses. Ids must be below id_limit and unique. Returns 0,
 * -EBADMSG (malformed), -EPROTONOSUPPORT (another version), -ENOMEM.
 */
int stackmap_export_parse_bin(struct stackmap_export *sn, const uint8_t *p, size_t len,
			      uint32_t id_limit);

/*
 * Parse the text export read from f (streaming: bounded memory per line)
 * into sn, replacing its content: "stack_id N [ref R, depth D]", D lines
 * "  [i] frame", a blank line. Returns 0, -EBADMSG, -EIO (read error) or
 * -ENOMEM.
 */
int stackmap_export_parse_text(struct stackmap_export *sn, FILE *f, uint32_t id_limit);

/*
 * Parse the NUL-terminated text of stack_map_stat ("key: value" lines;
 * "entries: N / CAPACITY" is required, unknown keys are ignored). Returns
 * 0 with *ret filled (valid set), or -EBADMSG.
 */
int stackmap_stat_parse(const char *text, struct stackmap_stat *ret);

/* Free what sn holds (not sn itself); it is empty afterwards. */
void stackmap_export_done(struct stackmap_export *sn);

#endif
