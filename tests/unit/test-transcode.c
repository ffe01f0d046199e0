/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The transcoder against real pages (tests/data/pages, captured with
 * tests/data/capture-pages.sh): libtraceevent's kbuffer must read the same
 * events with the same timestamps from the original and the transcoded
 * page, every kernel_stack replaced by a stack_ref naming the same stack.
 * Then garbage and truncated pages: never a crash, never a wrong page.
 */
#include <inttypes.h>

#include <event-parse.h>
#include <kbuffer.h>

#include "helpers.h"
#include "transcode.h"
#include "util.h"

#define PAGE 4096
#define MAX_EV 2048

struct ev {
	unsigned long long ts;
	uint16_t type;
	const uint8_t *data;
	int size;
};

static int format_id(const char *name)
{
	_cleanup_free_ char *f = test_page_data(name, NULL);
	const char *p = strstr(f, "\nID: ");

	return p ? atoi(p + 5) : -1;
}

static int read_events(struct kbuffer *kb, const uint8_t *page, struct ev *evs)
{
	static uint8_t copy[8][PAGE];
	static int slot;
	unsigned long long ts;
	uint8_t *pg = copy[slot++ % 8];
	void *d;
	int n = 0;

	memcpy(pg, page, PAGE);
	if (kbuffer_load_subbuffer(kb, pg) < 0)
		return -1;
	for (d = kbuffer_read_event(kb, &ts); d && n < MAX_EV; d = kbuffer_next_event(kb, &ts)) {
		evs[n].ts = ts;
		memcpy(&evs[n].type, d, 2);
		evs[n].data = d;
		evs[n].size = kbuffer_event_size(kb);
		n++;
	}
	return n;
}

static struct dstack *find_ref(struct transcoder *t, uint32_t id)
{
	for (size_t i = 0; i < t->nr_refs; i++)
		if (t->refs[i]->id == id)
			return t->refs[i];
	return NULL;
}

/*
 * Every page of the capture, transcoded: kbuffer reads the same events with
 * the same timestamps, every kernel_stack replaced by a stack_ref naming
 * the same stack. With stack_time = event a stack may instead carry the
 * time of the event before it. Returns the stack entries seen; *nr_folded
 * counts those whose time moved.
 */
static size_t check_pages(struct transcoder *t, const struct page_layout *l, struct kbuffer *kb,
			  const char *raw, size_t rawlen, size_t *nr_folded)
{
	static struct ev orig[MAX_EV], conv[MAX_EV];
	size_t stacks_seen = 0, pages = 0, folded = 0;
	uint64_t raw_bytes = 0, out_bytes = 0;

	for (size_t off = 0; off + PAGE <= rawlen; off += PAGE) {
		const uint8_t *page = (const uint8_t *)raw + off;
		struct page_summary sum;
		struct buf out = { 0 };
		uint8_t padded[PAGE];
		int n1, n2;

		CHECK(transcoder_page(t, page, PAGE, &out, &sum) == 0);
		CHECK(!sum.parse_error);
		CHECK(out.len <= PAGE);
		pages++;
		raw_bytes += 16 + (get_le64(page + 8) & PAGE_COMMIT_MASK);
		out_bytes += out.len;
		memset(padded, 0, sizeof(padded));
		memcpy(padded, out.data, MIN(out.len, sizeof(padded)));

		n1 = read_events(kb, page, orig);
		n2 = read_events(kb, padded, conv);
		CHECK_MSG(n1 == n2, "page %zu: %d events before, %d after", off / PAGE, n1, n2);
		CHECK((uint64_t)n1 == sum.events);
		for (int i = 0; i < n1 && i < n2; i++) {
			if (orig[i].type == l->kernel_stack_id && t->stack_time_event && i > 0 &&
			    conv[i].ts == orig[i - 1].ts)
				folded += conv[i].ts != orig[i].ts;
			else
				CHECK_MSG(orig[i].ts == conv[i].ts, "page %zu event %d: ts %llu != %llu",
					  off / PAGE, i, orig[i].ts, conv[i].ts);
			if (orig[i].type == l->kernel_stack_id) {
				uint32_t id, nr;
				int32_t size;
				struct dstack *s;

				CHECK(conv[i].type == l->stack_ref_id);
				memcpy(&id, conv[i].data + 8, 4);
				memcpy(&nr, conv[i].data + 12, 4);
				memcpy(&size, orig[i].data + 8, 4);
				s = find_ref(t, id);
				CHECK(s != NULL);
				CHECK((int32_t)nr == size);
				if (s) {
					CHECK(s->nr == nr);
					CHECK(memcmp(s->ips, orig[i].data + 16, 8u * nr) == 0);
				}
				stacks_seen++;
			} else {
				CHECK(conv[i].type == orig[i].type);
				CHECK(orig[i].size == conv[i].size);
				CHECK(memcmp(orig[i].data, conv[i].data, (size_t)orig[i].size) == 0);
			}
		}
		if (n1 > 0) {
			CHECK(sum.first_ts == orig[0].ts);
			CHECK(sum.last_ts == orig[n1 - 1].ts);
		}
		buf_done(&out);
		transcoder_reset_refs(t);
	}
	fprintf(stderr, "%zu pages, %zu stacks, %" PRIu64 " -> %" PRIu64 " bytes, %zu stack times moved\n",
		pages, stacks_seen, raw_bytes, out_bytes, folded);
	*nr_folded = folded;
	return stacks_seen;
}

/* An entry of a synthetic page at p: header (type_len from len, delta) and payload. */
static uint8_t *put_entry(uint8_t *p, uint32_t delta, const void *payload, size_t len)
{
	put_le32(p, delta << 5 | (uint32_t)(len / 4));
	memcpy(p + 4, payload, len);
	return p + 4 + len;
}

/*
 * stack_time = event at the edges: the delta a stack gives up goes to the
 * next event, to a time extend, or back to the stack when the next event's
 * 27-bit delta cannot take it or the next entry is padding; a stack at the
 * end of the page keeps none. Every event's time stays exact.
 */
static void fold_edges(struct transcoder *t, const struct page_layout *l, struct kbuffer *kb)
{
	static const struct {
		uint32_t after;		/* delta of what follows the stack */
		int kind;		/* 0 event, 1 time extend, 2 padding, 3 nothing */
		bool moved;		/* the stack takes its event's time */
	} cases[] = {
		{ 100, 0, true }, { (1u << 27) - 10, 0, false }, { 5, 1, true }, { 0, 2, false },
		{ 0, 3, true },
	};
	static struct ev orig[MAX_EV], conv[MAX_EV];

	t->stack_time_event = true;
	for (size_t c = 0; c < ARRAY_SIZE(cases); c++) {
		uint8_t page[PAGE] = { 0 }, ev[12] = { 0 }, st[32] = { 0 }, *p = page + 16;
		uint16_t type = (uint16_t)l->print_id;
		struct page_summary sum;
		struct buf out = { 0 };
		uint8_t padded[PAGE] = { 0 };
		uint64_t base = 1000000;
		int n1, n2;

		put_le64(page, base);
		memcpy(ev, &type, 2);
		p = put_entry(p, 7, ev, sizeof(ev));
		type = (uint16_t)l->kernel_stack_id;
		memcpy(st, &type, 2);
		put_le32(st + 8, 2);
		put_le64(st + 16, 0xffffffff81000000ULL + c);
		put_le64(st + 24, 0xffffffff81000100ULL);
		p = put_entry(p, 300, st, sizeof(st));
		if (cases[c].kind == 0) {
			type = (uint16_t)l->print_id;
			memcpy(ev, &type, 2);
			p = put_entry(p, cases[c].after, ev, sizeof(ev));
		} else if (cases[c].kind == 1) {
			put_le32(p, cases[c].after << 5 | PAGE_TYPE_TIME_EXTEND);
			put_le32(p + 4, 3);
			p += 8;
			p = put_entry(p, 9, ev, sizeof(ev));
		} else if (cases[c].kind == 2) {
			put_le32(p, 2u << 5 | PAGE_TYPE_PADDING);	/* a discarded event */
			put_le32(p + 4, 12);
			p += 16;
		}
		put_le64(page + 8, (uint64_t)(p - page - 16));
		CHECK_MSG(transcoder_page(t, page, PAGE, &out, &sum) == 0 && !sum.parse_error,
			  "case %zu", c);
		memcpy(padded, out.data, MIN(out.len, sizeof(padded)));
		n1 = read_events(kb, page, orig);
		n2 = read_events(kb, padded, conv);
		CHECK_MSG(n1 == n2 && n1 >= 2, "case %zu: %d events before, %d after", c, n1, n2);
		for (int i = 0; i < n1 && i < n2; i++) {
			uint64_t want = i == 1 && cases[c].moved ? orig[0].ts : orig[i].ts;

			CHECK_MSG(conv[i].ts == want, "case %zu entry %d: ts %llu, want %llu", c, i,
				  conv[i].ts, (unsigned long long)want);
		}
		buf_done(&out);
		transcoder_reset_refs(t);
	}
	t->stack_time_event = false;
}

/*
 * The stack_ref id: below every event format's id; and the same when the
 * layout is set up again after the daemon's own format was collected with
 * it (the sub-buffer size switched once the kept events were read): the
 * segments' stored format names that id, and the pages must use it too.
 */
static void test_stack_ref_id(void)
{
	struct named_text *files = NULL;
	size_t n = 0;
	struct buf f = { 0 };
	int id;

	CHECK(named_texts_append(&files, &n, "events/kmem/kmalloc/format", "name: kmalloc\nID: 400\n",
				 22) == 0);
	CHECK(page_layout_stack_ref_id(files, n, 65000) == 65000);
	/* another event with the preferred id (and the next): the first free one below */
	CHECK(named_texts_append(&files, &n, "events/x/y/format", "name: y\nID: 65000\n", 18) == 0);
	CHECK(named_texts_append(&files, &n, "events/x/z/format", "name: z\nID: 64999\n", 18) == 0);
	CHECK(named_texts_append(&files, &n, "header_page", "\nID: 64998\n", 11) == 0);
	id = page_layout_stack_ref_id(files, n, 65000);
	CHECK_MSG(id == 64998, "id %d", id);
	/* set up again with our own format collected: the same id */
	CHECK(page_layout_stack_ref_format(id, &f) == 0);
	CHECK(named_texts_append(&files, &n, STACK_REF_FORMAT_NAME, f.data, f.len) == 0);
	CHECK_MSG(page_layout_stack_ref_id(files, n, 65000) == id, "id %d, the stored format's %d",
		  page_layout_stack_ref_id(files, n, 65000), id);
	buf_done(&f);
	named_texts_free(&files, &n);

	/* the same without a clash: our format at 65000 keeps 65000 */
	CHECK(page_layout_stack_ref_format(65000, &f) == 0);
	CHECK(named_texts_append(&files, &n, STACK_REF_FORMAT_NAME, f.data, f.len) == 0);
	id = page_layout_stack_ref_id(files, n, 65000);
	CHECK_MSG(id == 65000, "a layout set up again moved stack_ref from 65000 to %d", id);
	buf_done(&f);
	named_texts_free(&files, &n);
}

int main(void)
{
	_cleanup_free_ char *hp = NULL, *raw = NULL;
	struct page_layout l = { 0 };
	struct stackdedup *dd;
	struct transcoder t;
	struct tep_handle *tep;
	struct kbuffer *kb;
	size_t hlen, rawlen, stacks_seen, folded;

	test_stack_ref_id();
	hp = test_page_data("header_page", &hlen);
	raw = test_page_data("cpu0.raw", &rawlen);
	CHECK(page_layout_parse(hp, &l) == 0);
	CHECK(l.commit_offset == 8 && l.commit_size == 8 && l.data_offset == 16);
	l.page_size = PAGE;
	l.kernel_stack_id = format_id("ftrace/kernel_stack.format");
	l.print_id = format_id("ftrace/print.format");
	l.stack_id_id = -1;
	l.stack_ref_id = 65000;
	CHECK(l.kernel_stack_id > 0);

	tep = tep_alloc();
	CHECK(tep_parse_header_page(tep, hp, (unsigned long)hlen, sizeof(long)) == 0);
	kb = kbuffer_alloc(KBUFFER_LSIZE_8, KBUFFER_ENDIAN_LITTLE);
	CHECK(kb != NULL);

	dd = stackdedup_new(1000);
	CHECK(transcoder_init(&t, &l, dd) == 0);

	stacks_seen = check_pages(&t, &l, kb, raw, rawlen, &folded);
	CHECK(stacks_seen > 0 && folded == 0);
	/* the same stacks repeat: far fewer distinct stacks than stack entries */
	CHECK(stackdedup_count(dd) < stacks_seen);
	t.stack_time_event = true;
	CHECK(check_pages(&t, &l, kb, raw, rawlen, &folded) == stacks_seen);
	CHECK(folded > stacks_seen / 2);
	t.stack_time_event = false;
	fold_edges(&t, &l, kb);

	/* Garbage and truncated pages: no crash; output is either dropped or self-delimited. */
	srand(42);
	for (int round = 0; round < 2000; round++) {
		uint8_t page[PAGE];
		struct page_summary sum;
		struct buf out = { 0 };

		memcpy(page, raw, PAGE);
		if (round % 2) {
			for (int k = 0; k < 8; k++)
				page[16 + rand() % (PAGE - 16)] = (uint8_t)rand();
		} else {
			for (size_t k = 0; k < PAGE; k++)
				page[k] = (uint8_t)rand();
		}
		CHECK(transcoder_page(&t, page, (size_t)(16 + rand() % (PAGE - 16)), &out, &sum) == 0);
		if (out.len) {
			uint64_t cw = get_le64(out.data + 8);
			size_t want = 16 + (size_t)(cw & PAGE_COMMIT_MASK) +
				      ((cw & PAGE_MISSED_STORED) ? 8 : 0);

			CHECK_MSG(out.len == want, "round %d: %zu bytes out, commit says %zu", round,
				  out.len, want);
		}
		buf_done(&out);
		transcoder_reset_refs(&t);
	}

	/*
	 * A page the walker rejects (padding of length -4, which would stop
	 * kbuffer for ever) is counted and kept as the kernel wrote it, so
	 * that readers reject it the same way.
	 */
	{
		uint8_t page[PAGE];
		struct page_summary sum;
		struct buf out = { 0 };
		struct page_format f = page_layout_format(&l);
		uint64_t errors = t.parse_errors;
		size_t bad_off = 0;

		memcpy(page, raw, PAGE);
		put_le32(page + 16, 1u << 5 | PAGE_TYPE_PADDING);
		put_le32(page + 20, 0xfffffffc);
		CHECK(transcoder_page(&t, page, PAGE, &out, &sum) == 0);
		CHECK(sum.parse_error && sum.events == 0);
		CHECK(t.parse_errors == errors + 1);
		CHECK_MSG(out.len == 16 + (get_le64(page + 8) & PAGE_COMMIT_MASK) +
				     ((get_le64(page + 8) & PAGE_MISSED_STORED) ? 8 : 0) &&
			  memcmp(out.data, page, out.len) == 0, "%zu bytes out, commit word 0x%" PRIx64,
			  out.len, get_le64(page + 8));
		CHECK(page_walk_check(&f, out.data, out.len, &bad_off, NULL) == -EBADMSG &&
		      bad_off == 16);
		buf_done(&out);
		transcoder_reset_refs(&t);
	}

	transcoder_done(&t);
	stackdedup_free(dd);
	kbuffer_free(kb);
	tep_free(tep);
	return tests_done("test-transcode");
}
