/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * bench/transcode: what the transcoder (daemon/transcode.c) costs per
 * kernel stack entry when stacks miss the reader's cache, the case that
 * exercises the shared stack table and the per-frame sets of references.
 * Builds synthetic pages full of kernel_stack entries drawn from a pool of
 * distinct stacks, transcodes them frame by frame (the references are
 * forgotten after each frame, as the reader does), and prints the CPU time
 * per stack entry, best of the repetitions.
 *
 *   transcode [-s STACKS] [-p PAGES_PER_FRAME] [-f FRAMES] [-r REPS]
 *
 * Defaults: 20000 distinct 12-frame stacks (the reader's cache holds
 * 4096), 64 pages of 4 KiB per frame (frame_size = 256K), 1250 frames,
 * 5 repetitions.
 */
#include <getopt.h>
#include <time.h>

#include "transcode.h"
#include "util.h"

#define PAGE 4096
#define FRAMES_PER_STACK 12
#define KERNEL_STACK_ID 10

/* Append one data entry (payload of len bytes, a multiple of 4, at most 112) at p. */
static uint8_t *put_entry(uint8_t *p, uint32_t delta, const void *payload, size_t len)
{
	put_le32(p, delta << 5 | (uint32_t)(len / 4));
	memcpy(p + 4, payload, len);
	return p + 4 + len;
}

/* A page of kernel_stack entries, stacks picked by *seed from nr_stacks. Returns the entries. */
static size_t make_page(uint8_t page[PAGE], uint64_t *seed, size_t nr_stacks)
{
	uint8_t st[16 + 8 * FRAMES_PER_STACK] = { 0 }, *p = page + 16;
	uint16_t type = KERNEL_STACK_ID;
	size_t n = 0;

	memset(page, 0, PAGE);
	put_le64(page, 1000);
	memcpy(st, &type, 2);
	put_le32(st + 8, FRAMES_PER_STACK);
	while (p + 4 + sizeof(st) <= page + PAGE) {
		uint64_t k;

		*seed = *seed * 6364136223846793005ULL + 1442695040888963407ULL;
		k = (*seed >> 33) % nr_stacks;
		for (int i = 0; i < FRAMES_PER_STACK; i++)
			put_le64(st + 16 + 8 * i, 0xffffffff81000000ULL + k * 64 + (uint64_t)i);
		p = put_entry(p, 10, st, sizeof(st));
		n++;
	}
	put_le64(page + 8, (uint64_t)(p - page - 16));
	return n;
}

static double cpu_ns(void)
{
	struct timespec ts;

	(void)clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

int main(int argc, char **argv)
{
	struct page_layout l = {
		.commit_offset = 8, .commit_size = 8, .data_offset = 16, .page_size = PAGE,
		.kernel_stack_id = KERNEL_STACK_ID, .print_id = KERNEL_STACK_ID + 1,
		.stack_id_id = -1, .stack_ref_id = 65000,
	};
	size_t nr_stacks = 20000, pages = 64, frames = 1250, reps = 5;
	_cleanup_(buf_done) struct buf out = { 0 };
	struct stackdedup *dd;
	struct transcoder t;
	double best = 0;
	int c;

	while ((c = getopt(argc, argv, "s:p:f:r:")) > 0) {
		size_t v = (size_t)strtoul(optarg, NULL, 10);

		if (v == 0) {
			fprintf(stderr, "%s: -%c wants a positive number\n", argv[0], c);
			return 2;
		}
		if (c == 's')
			nr_stacks = v;
		else if (c == 'p')
			pages = v;
		else if (c == 'f')
			frames = v;
		else if (c == 'r')
			reps = v;
		else
			return 2;
	}
	dd = stackdedup_new(SIZE_MAX);
	if (!dd || transcoder_init(&t, &l, dd) < 0) {
		fprintf(stderr, "%s: out of memory\n", argv[0]);
		return 1;
	}
	for (size_t rep = 0; rep < reps; rep++) {
		uint64_t seed = 1, entries = 0;
		double start = cpu_ns(), ns;

		for (size_t f = 0; f < frames; f++) {
			for (size_t pg = 0; pg < pages; pg++) {
				uint8_t page[PAGE];
				struct page_summary sum;

				entries += make_page(page, &seed, nr_stacks);
				buf_reset(&out);
				if (transcoder_page(&t, page, PAGE, &out, &sum) < 0) {
					fprintf(stderr, "%s: out of memory\n", argv[0]);
					return 1;
				}
			}
			transcoder_reset_refs(&t);
		}
		ns = (cpu_ns() - start) / (double)entries;
		if (rep == 0 || ns < best)
			best = ns;
	}
	printf("%zu distinct stacks, %zu pages per frame: %.1f ns per stack entry (page building included)\n",
	       stackdedup_count(dd), pages, best);
	transcoder_done(&t);
	stackdedup_free(dd);
	return 0;
}
