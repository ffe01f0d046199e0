/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Which known name a mistyped one was meant to be (suggest.h): Levenshtein distance. */
#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "suggest.h"
#include "util.h"

/* Edit distance of a and b (insert, delete, substitute: 1 each), or SIZE_MAX without memory. */
static size_t distance(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b), d;
	_cleanup_free_ size_t *row = calloc(lb + 1, sizeof(*row));

	if (!row)
		return SIZE_MAX;
	for (size_t j = 0; j <= lb; j++)
		row[j] = j;
	for (size_t i = 1; i <= la; i++) {
		size_t diag = row[0];

		row[0] = i;
		for (size_t j = 1; j <= lb; j++) {
			size_t up = row[j];

			d = diag + (a[i - 1] != b[j - 1]);
			d = MIN(d, up + 1);
			d = MIN(d, row[j - 1] + 1);
			row[j] = d;
			diag = up;
		}
	}
	return row[lb];
}

const char *suggest_closest(const char *word, const char *const *names, size_t n)
{
	const char *best = NULL;
	size_t best_d = SIZE_MAX, len;

	assert(word);
	assert(names || n == 0);

	len = strlen(word);
	for (size_t i = 0; i < n; i++) {
		size_t d = distance(word, names[i]);

		if (len >= 3 && strlen(names[i]) >= 3 &&
		    (strstr(names[i], word) || strstr(word, names[i])))
			d = MIN(d, (size_t)1);
		if (d < best_d) {
			best_d = d;
			best = names[i];
		}
	}
	return best && best_d <= MAX(len / 3, (size_t)1) ? best : NULL;
}
