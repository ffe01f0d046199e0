/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The stack entries of a segment's events for the decoder
 * (decode-internal.h): the frames of a kernel_stack entry, and the
 * resolution of stack_id and stack_ref entries through the segment's
 * stack table. Which events were recorded with a stack, and which stack
 * never came, is the rule of lib/config/stack-expect.h.
 */
#include <event-parse.h>

#include "decode-internal.h"
#include "stacktab-resolve.h"
#include "stacktab.h"
#include "util.h"

int decode_read_callers(const struct decoder_segment *s, const void *data, int size,
			uint64_t **ips, size_t *ips_cap, struct decoded_event *ev)
{
	const uint8_t *base = data;
	size_t avail = 0, n;
	unsigned long long v;
	uint64_t term = s->long_size == 8 ? UINT64_MAX : UINT32_MAX;

	if (!s->caller_field) {
		ev->unresolved_reason = "no format for kernel_stack";
		return 0;
	}
	if ((size_t)size > (size_t)s->caller_field->offset)
		avail = ((size_t)size - (size_t)s->caller_field->offset) / s->long_size;
	if (s->size_field && s->size_field->offset >= 0 && s->size_field->size > 0 &&
	    (uint64_t)s->size_field->offset + (uint64_t)s->size_field->size <= (uint64_t)size &&
	    tep_read_number_field(s->size_field, data, &v) == 0 && v > 0 && v < avail)
		avail = (size_t)v;
	avail = MIN(avail, (size_t)STACKTAB_MAX_DEPTH);
	if (avail > *ips_cap) {
		uint64_t *n_ips = realloc(*ips, sizeof(*n_ips) * avail);

		if (!n_ips)
			return -ENOMEM;
		*ips = n_ips;
		*ips_cap = avail;
	}
	for (n = 0; n < avail; n++) {
		v = tep_read_number(s->tep, base + s->caller_field->offset + n * s->long_size,
				    (int)s->long_size);
		if (v == 0 || v == term)
			break;
		(*ips)[n] = v;
	}
	ev->resolved = true;
	ev->nr = (uint16_t)n;
	ev->ips = *ips;
	return 0;
}

void decode_resolve_ref(struct decoder_segment *s, const void *data, struct decoded_event *ev,
			const char *refuse)
{
	struct tep_format_field *field = ev->kind == DECODED_STACK_ID ? s->id_field : s->ref_field;
	const struct stack_entry *e;
	unsigned long long v;
	const char *why;

	if (!field || tep_read_number_field(field, data, &v) < 0) {
		ev->unresolved_reason = "no format for the stack entry";
		return;
	}
	ev->stack_id = (uint32_t)v;
	if (refuse)
		ev->unresolved_reason = refuse;
	else if (stacktab_resolve(s->tab, ev->cpu, ev->ts,
			     ev->kind == DECODED_STACK_ID ? STACKTAB_KERNEL_ID : STACKTAB_DAEMON_REF,
			     ev->stack_id, &e, &why) > 0) {
		ev->resolved = true;
		ev->nr = e->nr;
		ev->text = e->flags & SEGMENT_STACK_F_TEXT;
		ev->ips = e->ips;
		ev->frames = e->text;
	} else
		ev->unresolved_reason = why;
}
