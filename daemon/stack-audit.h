/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Counting a segment's stack ids that its own tables cannot resolve, with
 * the same rules a reader applies (lib/segment/stacktab-resolve.c for the
 * generations, lib/config/stack-expect.c for stacks that never came), so
 * that the figure in the index, in `stackmapctl info` and in `status` is
 * the one `report` prints.
 */
#ifndef STACKMAPD_STACK_AUDIT_H
#define STACKMAPD_STACK_AUDIT_H

#include <stdint.h>

#include "transcode.h"

/*
 * Read the segment at path (finished or still being written, its tables
 * appended) and resolve every kernel stack_id event in it. l gives the page
 * layout and the stack_id event type. *ret_refs gets the number of stack
 * ids, *ret_unresolved those that do not resolve. Returns 0 or -errno
 * (-EBADMSG when the file is damaged).
 */
int stack_audit_unresolved(const char *path, const struct page_layout *l, uint64_t *ret_refs,
			   uint64_t *ret_unresolved);

#endif
