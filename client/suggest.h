/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The closest of some names to a mistyped one (client/suggest.c), for "did you mean" hints. */
#ifndef STACKMAPCTL_SUGGEST_H
#define STACKMAPCTL_SUGGEST_H

#include <stddef.h>

/*
 * The name of names[0..n) closest to word by edit distance, when it is
 * close enough to be a typo of it (at most a third of its length apart,
 * or one contains the other); NULL otherwise. Borrowed from names.
 */
const char *suggest_closest(const char *word, const char *const *names, size_t n);

#endif
