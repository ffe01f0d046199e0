/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Decoded events to samples (sample-source.h). The kernel writes a stack
 * right after its event on the same CPU, so each CPU keeps its last event
 * pending (copied: the decoder's pointers last one step) until the next
 * event of that CPU shows whether a stack belongs to it.
 */
#include <errno.h>
#include <string.h>

#include <event-parse.h>

#include "decode.h"
#include "log.h"
#include "progress.h"
#include "sample-source.h"
#include "selection.h"
#include "util.h"

#define MAX_FRAMES 512
#define SYM_CACHE_BITS 12

/* An address's symbol in the segment of that serial (symbols differ by segment). */
struct sym_slot {
	uint64_t serial;		/* 0: empty (serials start at 1) */
	uint64_t addr;
	const char *sym;
};

struct pending {
	bool set;
	const struct tep_event *event;	/* to match the stack's owner; not dereferenced */
	char name[64], system[64], comm[32], call_site[128];
	struct sample s;
};

/* The call_site field of an event type, if it has one (looked up once per type). */
#define CALL_SITE_SLOTS 64
struct call_site_slot {
	const struct tep_event *event;	/* NULL: empty */
	struct tep_format_field *field;	/* NULL: the type has none */
};

struct source {
	const struct sample_source_options *o;
	int (*fn)(const struct sample *s, void *userdata);
	void *userdata;
	struct pending *cpus;
	size_t nr_cpus;
	struct progress *bar;
	struct sample_frame frames[MAX_FRAMES];
	char text[MAX_FRAMES][128];	/* symbol names of TEXT stack entries */
	struct sym_slot *syms;		/* 1 << SYM_CACHE_BITS, direct-mapped */
	struct call_site_slot call_sites[CALL_SITE_SLOTS];
};

/* Hand the pending event of a CPU on, with frames[0..nr) as its stack. */
static int flush(struct source *src, struct pending *p, size_t nr)
{
	size_t skip;
	int r = 0;

	if (!p->set)
		return 0;
	p->set = false;
	/* the pending array may have moved since the event was kept */
	p->s.event = p->name;
	p->s.comm = p->comm;
	p->s.call_site = p->call_site[0] ? p->call_site : NULL;
	skip = src->o->raw_stacks ? 0 : sample_machinery_frames(src->frames, nr, p->name);
	p->s.nr_frames = nr - skip;
	p->s.frames = nr ? src->frames + skip : NULL;
	r = src->fn(&p->s, src->userdata);
	return r < 0 ? r : 0;
}

/* The symbol of addr in ev's segment; a stack's frames repeat, so they are cached. */
static const char *frame_symbol(struct source *src, const struct decoded_event *ev, uint64_t addr)
{
	uint64_t serial = decoder_segment_serial(ev->seg);
	struct sym_slot *c = &src->syms[(addr * UINT64_C(0x9e3779b97f4a7c15)) >> (64 - SYM_CACHE_BITS)];
	const char *sym;

	if (c->serial == serial && c->addr == addr)
		return c->sym;
	sym = tep_find_function(ev->tep, addr);
	if (!sym && addr == DECODE_FTRACE_TRAMPOLINE)
		sym = "[FTRACE TRAMPOLINE]";
	*c = (struct sym_slot){ serial, addr, sym };
	return sym;
}

static size_t stack_frames(struct source *src, const struct decoded_event *ev)
{
	size_t nr = MIN((size_t)ev->nr, (size_t)MAX_FRAMES);

	if (!ev->resolved) {
		src->frames[0] = (struct sample_frame){ 0, "[unresolved]" };
		return 1;
	}
	for (size_t i = 0; i < nr; i++) {
		struct sample_frame *f = &src->frames[i];

		if (ev->text) {
			const char *t = ev->frames[i];
			size_t len = strcspn(t, "+ ");

			if (!len || t[0] == '[')
				len = strlen(t);
			(void)snprintf(src->text[i], sizeof(src->text[i]), "%.*s", (int)len, t);
			*f = (struct sample_frame){ 0, src->text[i] };
			continue;
		}
		f->addr = ev->ips[i];
		f->sym = frame_symbol(src, ev, f->addr);
	}
	return nr;
}

static void copy_str(char *dst, size_t len, const char *src);

/* The function of ev's call_site field into p->call_site, "" when it has none. */
static void take_call_site(struct source *src, struct pending *p, const struct decoded_event *ev)
{
	struct call_site_slot *c;
	unsigned long long addr;
	const char *sym;

	p->call_site[0] = '\0';
	if (!ev->event)
		return;
	c = &src->call_sites[((uintptr_t)ev->event >> 4) % CALL_SITE_SLOTS];
	if (c->event != ev->event)
		*c = (struct call_site_slot){ ev->event, tep_find_field(ev->event, "call_site") };
	if (!c->field || tep_read_number_field(c->field, ev->record->data, &addr) < 0)
		return;
	sym = frame_symbol(src, ev, addr);
	if (sym)
		copy_str(p->call_site, sizeof(p->call_site), sym);
	else
		(void)snprintf(p->call_site, sizeof(p->call_site), "0x%llx", addr);
}

/* src into dst of len bytes, cut short if need be (snprintf("%s") is slow per event). */
static void copy_str(char *dst, size_t len, const char *src)
{
	size_t n = strnlen(src ?: "(null)", len - 1);

	memcpy(dst, src ?: "(null)", n);
	dst[n] = '\0';
}

static int on_event(struct source *src, const struct decoded_event *ev)
{
	struct pending *p;
	int pid;

	if (GREEDY_REALLOC0(src->cpus, src->nr_cpus, (size_t)ev->cpu + 1) < 0)
		return -ENOMEM;
	p = &src->cpus[ev->cpu];
	if (ev->is_stack) {
		if (p->set && ev->owner && ev->owner == p->event && streq(ev->owner->name, p->name))
			return flush(src, p, stack_frames(src, ev));
		if (!src->o->orphan_stacks)
			return 0;	/* a stack whose event was not seen (lost) */
		if (flush(src, p, 0) < 0)
			return -ECANCELED;
		pid = tep_data_pid(ev->tep, ev->record);
		p->set = true;
		copy_str(p->name, sizeof(p->name), ev->owner ? ev->owner->name : "[unknown]");
		copy_str(p->comm, sizeof(p->comm), tep_data_comm_from_pid(ev->tep, pid));
		p->call_site[0] = '\0';
		p->s = (struct sample){ .ts = ev->ts, .cpu = ev->cpu, .pid = pid,
					.scope = decoder_segment_serial(ev->seg) };
		return flush(src, p, stack_frames(src, ev));
	}
	if (flush(src, p, 0) < 0)
		return -ECANCELED;
	pid = tep_data_pid(ev->tep, ev->record);
	p->set = true;
	p->event = ev->event;
	copy_str(p->name, sizeof(p->name), ev->event ? ev->event->name : "[unknown]");
	copy_str(p->system, sizeof(p->system), ev->event ? ev->event->system : "");
	copy_str(p->comm, sizeof(p->comm), tep_data_comm_from_pid(ev->tep, pid));
	p->s = (struct sample){ .ts = ev->ts, .cpu = ev->cpu, .pid = pid,
				.scope = decoder_segment_serial(ev->seg) };
	if (src->o->call_sites)
		take_call_site(src, p, ev);
	return 0;
}

static int source_event(struct decoded_event *ev, void *userdata)
{
	struct source *src = userdata;
	int r = on_event(src, ev);

	if (r < 0 && r != -ECANCELED)
		log_errno(LOG_ERR, r, "cannot read the events");
	return r;
}

static void source_progress(size_t done, void *userdata)
{
	struct source *src = userdata;

	progress_update(src->bar, done);
}

int sample_source_run(struct selection *sel, const struct sample_source_options *o,
		      int (*fn)(const struct sample *s, void *userdata), void *userdata)
{
	struct source src = { .o = o, .fn = fn, .userdata = userdata };
	struct progress bar;
	int r;

	src.syms = calloc((size_t)1 << SYM_CACHE_BITS, sizeof(*src.syms));
	if (!src.syms) {
		log_errno(LOG_ERR, -ENOMEM, "cannot read the events");
		return -1;
	}
	progress_init(&bar, STDERR_FILENO, o->progress_label ?: "",
		      o->progress_label ? sel->nr_paths : 0);
	bar.delay_usec = USEC_PER_SEC;	/* only for reads that take a while */
	src.bar = &bar;
	r = selection_decode(sel, &(struct selection_run){ .event = source_event,
							   .progress = source_progress,
							   .userdata = &src });
	/* the last event of each CPU has no stack after it */
	for (size_t i = 0; r >= 0 && i < src.nr_cpus; i++)
		if (flush(&src, &src.cpus[i], 0) < 0)
			r = 1;
	progress_done(&bar);
	free(src.cpus);
	free(src.syms);
	return r;
}
