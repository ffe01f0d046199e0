/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The kernel's event filter grammar, checked without tracefs (see
 * filter-grammar.c).
 */
#ifndef STACKMAPD_FILTER_GRAMMAR_H
#define STACKMAPD_FILTER_GRAMMAR_H

struct tep_event;

/*
 * Check the filter expression expr against the kernel's filter grammar:
 * its structure always; with event (a parsed format, borrowed; NULL to
 * skip) also its field names, the operators each kind of field allows
 * and the kind of value each is compared with. Returns 0; -EINVAL with
 * *ret_error ("what is wrong", caller frees) if ret_error is not NULL;
 * -ENOMEM.
 */
int filter_grammar_check(struct tep_event *event, const char *expr, char **ret_error);

#endif
