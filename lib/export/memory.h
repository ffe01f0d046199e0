/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Live kernel memory from allocation and free events (what `stackmapctl
 * memory` shows, doc/memory.md). Samples go in, in time order, in one
 * pass; each allocation is paired with its free: slab objects by pointer
 * (kmalloc and kmem_cache_alloc against kfree and kmem_cache_free), pages
 * by pfn (mm_page_alloc against mm_page_free and mm_page_free_batched),
 * with the size the allocation event gives (bytes_alloc; PAGE_SIZE <<
 * order for pages). Out come the curve of live bytes and objects over
 * time per kind (slab cache, kmalloc size or page order), the peak with
 * the stacks that held the memory then (and the same at a chosen moment),
 * what is still live at the end by age and by stack, the churn
 * (allocations freed soon after) by stack, and what could not be paired.
 *
 * Nothing is guessed: a free whose allocation was not seen is counted; a
 * pointer allocated again before a free is counted as a lost free; after a
 * CPU lost events, the objects live then may have been freed unseen and
 * are counted as uncertain; pairs never cross a boot (the objects live at
 * a boot's end are dropped and counted).
 *
 * Memory grows with the live set (objects, at about 100 bytes each), the
 * distinct stacks and the kinds, and is charged to the readers' budget
 * (budget.h). Times are nanoseconds: each sample's wall_ns when known,
 * else its trace clock.
 */
#ifndef STACKMAPD_MEMORY_H
#define STACKMAPD_MEMORY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "flamegraph.h"
#include "sample.h"
#include "util.h"

/* The fields memory_add() reads, for a sample producer (NULL-terminated). */
extern const char *const memory_fields[];

struct memory_options {
	/*
	 * A moment to show besides the peak (--at): ns of the trace clock if
	 * at_trace, else CLOCK_REALTIME; 0: none. The state shown is the one
	 * after the last event at or before it.
	 */
	uint64_t at;
	bool at_trace;
	/*
	 * A moment to compare with (--baseline), in the same form: the growth
	 * per stack from it to at (or to the end), and a differential flame
	 * graph. 0: none.
	 */
	uint64_t baseline;
	bool baseline_trace;
	uint64_t churn_ns;	/* an allocation freed within this is churn; 0: 1 s */
	size_t rows;		/* rows of the curve, about; 0: 60 */
	/* Which allocations count (their frees are paired whatever these say): */
	long pid;		/* -1: all */
	const char *comm;	/* NULL: all */
	const char *event;	/* "kmalloc", "kmem:kmalloc", ...; NULL: all */
	/*
	 * Count the slab allocations that count by the function of their
	 * event's call_site field (sample.call_site), as `perf kmem stat
	 * --caller` does by address: the samples must carry it.
	 */
	bool callers;
	/* Optional: told of every selected allocation and its end (struct memory_hook). */
	const struct memory_hook *hook;
};

/* How an allocation told to a struct memory_hook ended. */
enum memory_end {
	MEMORY_FREED,		/* by end, its free */
	MEMORY_FREE_LOST,	/* by end, an allocation of the same pointer or pfn: no free between */
	MEMORY_LIVE,		/* not freed: live at the end, or at its boot's end (end_sample NULL) */
	MEMORY_END_MAX
};

/* An allocation as it ends (for struct memory_hook). */
struct memory_pair {
	enum memory_end end;
	const struct sample *end_sample;	/* borrowed; NULL for MEMORY_LIVE */
	bool pages;				/* a page allocation; else slab */
	uint64_t key;				/* its pointer or pfn */
	uint64_t bytes;
	const char *kind;			/* cache name, kmalloc-SIZE, pages-orderN (borrowed) */
	uint64_t cookie;			/* what the hook's alloc() returned for it */
};

/*
 * The pairs as memory_add() makes them, for an exporter. Only selected
 * allocations (pid, comm, event) are told; frees are paired whatever
 * those say. Each hook's negative return stops memory_add() with it.
 */
struct memory_hook {
	/* Allocation s (borrowed) is taken; *ret_cookie comes back with its end. */
	int (*alloc)(const struct sample *s, void *userdata, uint64_t *ret_cookie);
	/* It ended (or is still live at its boot's end, or at memory_end_live()). */
	int (*pair)(const struct memory_pair *p, void *userdata);
	/* Free s (borrowed) of an allocation not seen (allocated before what was read). */
	int (*unknown_free)(const struct sample *s, bool pages, uint64_t key, void *userdata);
	void *userdata;
};

struct memory;

/* A new analysis with options o (copied; o->comm and o->event borrowed), or NULL without memory. */
struct memory *memory_new(const struct memory_options *o);

/* Free it. Accepts NULL; returns NULL. */
struct memory *memory_free(struct memory *m);
DEFINE_TRIVIAL_CLEANUP_FUNC(struct memory *, memory_free);

/*
 * Take one sample (borrowed; its fields as memory_fields names them).
 * Samples of other events only move the clock. Returns 0, or -ENOMEM
 * (no memory, or over the budget: budget_error() says how much).
 */
int memory_add(struct memory *m, const struct sample *s);

/*
 * The segment of the sample s (borrowed; its origin set), given before or
 * with its first sample, lost lost events of CPU cpu that its pages do not
 * place (the kernel dropped them when its buffer was full: the segment's
 * index counts them): what is live then, and everything allocated until a
 * later segment's samples come, is uncertain. Returns 0 or -ENOMEM.
 */
int memory_segment_loss(struct memory *m, const struct sample *s, unsigned int cpu,
			uint64_t lost);

/* What memory_check() found wrong with the input, for the caller's message. */
enum memory_verdict {
	MEMORY_OK,
	MEMORY_NO_ALLOCATIONS,		/* no allocation event at all */
	MEMORY_NO_SLAB_FREES,		/* slab allocations, but no kfree/kmem_cache_free */
	MEMORY_NO_PAGE_FREES,		/* page allocations, but no mm_page_free */
	MEMORY_NOTHING_SELECTED,	/* allocations, but none passed pid/comm/event */
	MEMORY_VERDICT_MAX
};

/* After the last sample: whether the input can be analysed. */
enum memory_verdict memory_check(const struct memory *m);

/*
 * After the last sample, once: tell the hook of every selected allocation still
 * live (MEMORY_LIVE). Returns 0, or the hook's negative return.
 */
int memory_end_live(struct memory *m);

/* Allocation events read (whether or not they passed the filters). */
uint64_t memory_allocations(const struct memory *m);

/* How memory_print() shows it. */
struct memory_view {
	bool json;
	size_t limit;		/* stacks per table; 0: 10 */
	unsigned int width;	/* text lines cut to this many columns, 0: not cut */
	double min_percent;	/* tree branches under this share are left out */
};

/*
 * Print everything to f (borrowed), as text tables or one JSON document
 * (doc/memory.md describes both). Call after the last sample. Returns 0
 * or -errno.
 */
int memory_print(struct memory *m, FILE *f, const struct memory_view *v);

/*
 * Add the stacks live at the peak, or at the at moment when there is one,
 * to fg, each weighted by its live bytes: the event name, then the frames
 * from the outermost. With a baseline, those live then are fg's baseline
 * and those live at the at moment (or at the end) its stacks: a
 * differential graph of the growth. Returns 0, or -ENOMEM.
 */
int memory_flamegraph(struct memory *m, struct flamegraph *fg);

/*
 * Write the curve of live bytes as a small SVG to f (borrowed): one point
 * per time step at the most live in it, the peak marked by the element of
 * id "peak" (attributes data-bytes, data-time). Returns 0 or -errno.
 */
int memory_write_svg(struct memory *m, FILE *f, const char *title);

#endif
