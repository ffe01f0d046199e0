/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Decoded events to samples (sample-source.h). The kernel writes a stack
 * right after its event on the same CPU, so each CPU keeps its last event
 * pending (copied: the decoder's pointers last one step) until the next
 * event of that CPU shows whether a stack belongs to it. Each segment's
 * META is copied once into an origin that its samples point to.
 */
#include <assert.h>
#include <errno.h>
#include <string.h>

#include <event-parse.h>

#include "cmd-common.h"
#include "decode.h"
#include "hashtab.h"
#include "log.h"
#include "progress.h"
#include "sample-source.h"
#include "selection.h"
#include "util.h"
#include "wallclock.h"

#define MAX_FRAMES 512
#define SYM_CACHE_BITS 12

/* An address's symbol in the segment of that serial (symbols differ by segment). */
struct sym_slot {
	uint64_t serial;		/* 0: empty (serials start at 1) */
	uint64_t addr;
	const char *sym;
};

/* A segment's META as samples see it; the strings are owned. */
struct origin {
	struct sample_origin o;
	char *path, *host, *boot_id, *recording_id, *kernel;
};

struct pending {
	bool set;
	size_t origin;			/* index in source.origins */
	const struct tep_event *event;	/* NULL: no event waits for a stack; not dereferenced */
	char name[64], system[64], comm[32], call_site[128];
	struct sample s;
	struct sample_field fields[SAMPLE_SOURCE_MAX_FIELDS];
	char values[SAMPLE_SOURCE_MAX_FIELDS][64];
	uint64_t numbers[SAMPLE_SOURCE_MAX_FIELDS];
};

/* The fields of sample_source_options.fields an event type has (looked up once per type). */
#define FIELD_SLOTS 64
struct field_slot {
	const struct tep_event *event;	/* NULL: empty */
	uint64_t serial;		/* of its segment: a closed one's event address comes back */
	struct tep_format_field *fields[SAMPLE_SOURCE_MAX_FIELDS]; /* NULL: the type has none */
};

/* The call_site field of an event type, if it has one (looked up once per type). */
#define CALL_SITE_SLOTS 64
struct call_site_slot {
	const struct tep_event *event;	/* NULL: empty */
	uint64_t serial;		/* of its segment, as field_slot's */
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
	struct field_slot field_slots[FIELD_SLOTS];
	struct selection *sel;		/* borrowed: wall-clock times of segments without pairs */
	struct origin *origins;		/* one per segment read */
	size_t nr_origins, cap_origins;
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
	p->s.system = p->system;
	p->s.call_site = p->call_site[0] ? p->call_site : NULL;
	p->s.fields = p->s.nr_fields ? p->fields : NULL;
	p->s.numbers = p->s.numeric_fields ? p->numbers : NULL;
	for (size_t i = 0; i < p->s.nr_fields; i++)
		p->fields[i].value = p->values[i];
	skip = src->o->raw_stacks ? 0 : sample_machinery_frames(src->frames, nr, p->name);
	p->s.nr_frames = nr - skip;
	p->s.frames = nr ? src->frames + skip : NULL;
	p->s.origin = src->nr_origins ? &src->origins[p->origin].o : NULL;
	r = src->fn(&p->s, src->userdata);
	return r < 0 ? r : 0;
}

/* The symbol of addr in ev's segment; a stack's frames repeat, so they are cached. */
static const char *frame_symbol(struct source *src, const struct decoded_event *ev, uint64_t addr)
{
	uint64_t serial = decoder_segment_serial(ev->seg);
	struct sym_slot *c = &src->syms[hash_u64(addr) >> (64 - SYM_CACHE_BITS)];
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
	if (c->event != ev->event || c->serial != decoder_segment_serial(ev->seg))
		*c = (struct call_site_slot){ ev->event, decoder_segment_serial(ev->seg),
					      tep_find_field(ev->event, "call_site") };
	if (!c->field || tep_read_number_field(c->field, ev->record->data, &addr) < 0)
		return;
	sym = frame_symbol(src, ev, addr);
	if (sym)
		copy_str(p->call_site, sizeof(p->call_site), sym);
	else
		(void)snprintf(p->call_site, sizeof(p->call_site), "0x%llx", addr);
}

/* v in decimal into buf (at least 21 bytes): snprintf is slow per event. */
static void u64_text(char *buf, unsigned long long v)
{
	char tmp[24];
	size_t n = 0;

	do {
		tmp[n++] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	for (size_t i = 0; i < n; i++)
		buf[i] = tmp[n - 1 - i];
	buf[n] = '\0';
}

/* The fields of o->fields that ev has into p->fields, as text (and numbers). */
static void take_fields(struct source *src, struct pending *p, const struct decoded_event *ev)
{
	struct field_slot *c;
	size_t n = 0;

	p->s.nr_fields = 0;
	p->s.numeric_fields = 0;
	if (!ev->event)
		return;
	c = &src->field_slots[((uintptr_t)ev->event >> 4) % FIELD_SLOTS];
	if (c->event != ev->event || c->serial != decoder_segment_serial(ev->seg)) {
		*c = (struct field_slot){ .event = ev->event,
					  .serial = decoder_segment_serial(ev->seg) };
		for (size_t i = 0; i < SAMPLE_SOURCE_MAX_FIELDS && src->o->fields[i]; i++)
			c->fields[i] = tep_find_field(ev->event, src->o->fields[i]);
	}
	for (size_t i = 0; i < SAMPLE_SOURCE_MAX_FIELDS && src->o->fields[i]; i++) {
		struct tep_format_field *f = c->fields[i];
		unsigned long long v;

		if (!f)
			continue;
		if (f->flags & TEP_FIELD_IS_STRING) {
			int len = 0;
			const char *str = tep_get_field_raw(NULL, ev->event, f->name, ev->record,
							    &len, 0);

			if (!str || len < 0)
				continue;
			(void)snprintf(p->values[n], sizeof(p->values[n]), "%.*s",
				       (int)strnlen(str, (size_t)len), str);
		} else if (tep_read_number_field(f, ev->record->data, &v) == 0) {
			u64_text(p->values[n], v);
			p->numbers[n] = v;
			p->s.numeric_fields |= UINT32_C(1) << n;
		} else {
			continue;
		}
		p->fields[n].name = src->o->fields[i];
		n++;
	}
	p->s.nr_fields = n;
}

/* src into dst of len bytes, cut short if need be (snprintf("%s") is slow per event). */
static void copy_str(char *dst, size_t len, const char *src)
{
	size_t n = strnlen(src ?: "(null)", len - 1);

	memcpy(dst, src ?: "(null)", n);
	dst[n] = '\0';
}

static char *meta_dup(const struct decoded_event *ev, const char *key)
{
	return strdup(decoder_segment_meta(ev->seg, key) ?: "");
}

/* The index of the origin of ev's segment, made when the segment's first event comes. */
static int origin_of(struct source *src, const struct decoded_event *ev, size_t *ret)
{
	uint64_t serial = decoder_segment_serial(ev->seg);
	struct origin *o;
	const char *seq;

	/* events of two consecutive segments interleave where they meet */
	for (size_t i = src->nr_origins; i > 0 && i + 2 > src->nr_origins; i--)
		if (src->origins[i - 1].o.serial == serial) {
			*ret = i - 1;
			return 0;
		}
	if (GREEDY_REALLOC(src->origins, src->cap_origins, src->nr_origins + 1) < 0)
		return -ENOMEM;
	o = &src->origins[src->nr_origins];
	*o = (struct origin){
		.path = strdup(ev->segment),
		.host = meta_dup(ev, "hostname"),
		.boot_id = meta_dup(ev, "boot_id"),
		.recording_id = meta_dup(ev, "recording_id"),
		.kernel = meta_dup(ev, "kernel_release"),
	};
	src->nr_origins++;
	if (!o->path || !o->host || !o->boot_id || !o->recording_id || !o->kernel)
		return -ENOMEM;
	seq = decoder_segment_meta(ev->seg, "segment_seq");
	o->o = (struct sample_origin){ .path = o->path, .host = o->host, .boot_id = o->boot_id,
				       .recording_id = o->recording_id, .kernel = o->kernel,
				       .segment_seq = seq ? strtoull(seq, NULL, 10) : 0,
				       .serial = serial };
	*ret = src->nr_origins - 1;
	return 0;
}

/*
 * CLOCK_REALTIME of ev, as the decoder places it in a wall-clock window:
 * through its segment's own pairs, else those of the recording's others.
 */
static uint64_t wall_of(struct source *src, const struct decoded_event *ev)
{
	size_t n;
	const struct wallclock_pair *pairs = decoder_segment_clocks(ev->seg, &n);
	uint64_t wall = 0;

	if (n)
		return wallclock_to_realtime(pairs, n, ev->ts);
	return selection_wall(src->sel, ev, &wall) ? wall : 0;
}

/* Make ev the pending sample of its CPU. */
static void keep(struct source *src, struct pending *p, const struct decoded_event *ev,
		 size_t origin, int pid)
{
	p->set = true;
	p->event = NULL;
	p->origin = origin;
	p->s = (struct sample){ .ts = ev->ts, .cpu = ev->cpu, .pid = pid,
				.scope = decoder_segment_serial(ev->seg), .wall_ns = wall_of(src, ev),
				.lost_before = ev->lost_before };
}

static int on_event(struct source *src, const struct decoded_event *ev)
{
	struct pending *p;
	size_t origin;
	int pid, r;

	if (GREEDY_REALLOC0(src->cpus, src->nr_cpus, (size_t)ev->cpu + 1) < 0)
		return -ENOMEM;
	p = &src->cpus[ev->cpu];
	r = origin_of(src, ev, &origin);
	if (r < 0)
		return r;
	if (ev->is_stack) {
		/* the owner is of the stack's segment, which may follow the event's */
		if (p->set && p->event && ev->owner && streq(ev->owner->name, p->name) &&
		    streq(ev->owner->system, p->system)) {
			size_t nr = stack_frames(src, ev);

			p->s.stack_entry = ev->kind != DECODED_STACK_MISSING;
			if (!src->o->segment_entries || origin == p->origin || !p->s.stack_entry)
				return flush(src, p, nr);
			/* the stack's entry stays its segment's (segment_entries) */
			p->s.stack_entry = false;
			if (flush(src, p, nr) < 0)
				return -ECANCELED;
			pid = tep_data_pid(ev->tep, ev->record);
			keep(src, p, ev, origin, pid);
			copy_str(p->name, sizeof(p->name), "[unknown]");
			p->system[0] = '\0';
			copy_str(p->comm, sizeof(p->comm), tep_data_comm_from_pid(ev->tep, pid));
			p->call_site[0] = '\0';
			p->s.stack_entry = true;
			p->s.no_event = true;
			return flush(src, p, nr);
		}
		if (!src->o->orphan_stacks || ev->kind == DECODED_STACK_MISSING)
			return 0;	/* a stack whose event was not seen (lost) */
		/* as folded counts it: under its owner's event, or one of unknown name */
		if (flush(src, p, 0) < 0)
			return -ECANCELED;
		pid = tep_data_pid(ev->tep, ev->record);
		keep(src, p, ev, origin, pid);
		copy_str(p->name, sizeof(p->name), ev->owner ? ev->owner->name : "[unknown]");
		copy_str(p->system, sizeof(p->system), ev->owner ? ev->owner->system : "");
		copy_str(p->comm, sizeof(p->comm), tep_data_comm_from_pid(ev->tep, pid));
		p->call_site[0] = '\0';
		p->s.stack_entry = true;
		p->s.no_event = true;
		return flush(src, p, stack_frames(src, ev));
	}
	if (flush(src, p, 0) < 0)
		return -ECANCELED;
	pid = tep_data_pid(ev->tep, ev->record);
	keep(src, p, ev, origin, pid);
	p->event = ev->event;
	copy_str(p->name, sizeof(p->name), ev->event ? ev->event->name : "[unknown]");
	copy_str(p->system, sizeof(p->system), ev->event ? ev->event->system : "");
	copy_str(p->comm, sizeof(p->comm), tep_data_comm_from_pid(ev->tep, pid));
	p->call_site[0] = '\0';
	if (src->o->call_sites)
		take_call_site(src, p, ev);
	if (src->o->fields)
		take_fields(src, p, ev);
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
	struct source src = { .o = o, .fn = fn, .userdata = userdata, .sel = sel };
	struct progress bar;
	int r;

	assert(sel);
	assert(o);
	assert(fn);

	src.syms = calloc((size_t)1 << SYM_CACHE_BITS, sizeof(*src.syms));
	if (!src.syms)
		return log_errno(LOG_ERR, -ENOMEM, "cannot read the events");
	progress_init(&bar, STDERR_FILENO, o->progress_label ?: "",
		      o->progress_label ? sel->nr_paths : 0);
	cmd_progress_policy(&bar);	/* only for reads that take a while */
	src.bar = &bar;
	r = selection_decode(sel, &(struct selection_run){ .event = source_event,
							   .progress = source_progress,
							   .userdata = &src });
	/* the last event of each CPU has no stack after it */
	for (size_t i = 0; r >= 0 && i < src.nr_cpus; i++)
		if (flush(&src, &src.cpus[i], 0) < 0)
			r = 1;
	progress_done(&bar);
	for (size_t i = 0; i < src.nr_origins; i++) {
		free(src.origins[i].path);
		free(src.origins[i].host);
		free(src.origins[i].boot_id);
		free(src.origins[i].recording_id);
		free(src.origins[i].kernel);
	}
	free(src.origins);
	free(src.cpus);
	free(src.syms);
	return r;
}
