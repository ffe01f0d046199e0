/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A string interning table: each distinct string (any bytes) gets a dense
 * index 0, 1, 2... in the order first seen, and a 64-bit counter the
 * caller may use. Used by the exporters to number stacks, functions and
 * strings. Not thread-safe.
 */
#ifndef STACKMAPD_STRMAP_H
#define STACKMAPD_STRMAP_H

#include <stddef.h>
#include <stdint.h>

#include "util.h"

struct strmap;

/* A new empty table, or NULL without memory. */
struct strmap *strmap_new(void);

/* Free the table and its copies of the strings. Accepts NULL; returns NULL. */
struct strmap *strmap_free(struct strmap *m);
DEFINE_TRIVIAL_CLEANUP_FUNC(struct strmap *, strmap_free);

/*
 * Index of the len bytes at s (copied when new) in *ret_idx. Returns 1 if
 * the string was added, 0 if it was known, or -ENOMEM.
 */
int strmap_intern(struct strmap *m, const char *s, size_t len, size_t *ret_idx);

/* Number of strings. */
size_t strmap_size(const struct strmap *m);

/* String of index idx (NUL-terminated, borrowed), its length in *ret_len if not NULL. */
const char *strmap_get(const struct strmap *m, size_t idx, size_t *ret_len);

/* The counter of index idx, for the caller to read and change. */
uint64_t *strmap_counter(struct strmap *m, size_t idx);

#endif
