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

int main(void)
{
	static struct ev orig[MAX_EV], conv[MAX_EV];
	_cleanup_free_ char *hp = NULL, *raw = NULL;
	struct page_layout l = { 0 };
	struct stackdedup *dd;
	struct transcoder t;
	struct tep_handle *tep;
	struct kbuffer *kb;
	size_t hlen, rawlen, stacks_seen = 0, pages = 0;
	uint64_t raw_bytes = 0, out_bytes = 0;

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

	for (size_t off = 0; off + PAGE <= rawlen; off += PAGE) {
		const uint8_t *page = (const uint8_t *)raw + off;
		struct page_summary sum;
		struct buf out = { 0 };
		uint8_t padded[PAGE];
		int n1, n2;

		CHECK(transcoder_page(&t, page, PAGE, &out, &sum) == 0);
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
			CHECK_MSG(orig[i].ts == conv[i].ts, "page %zu event %d: ts %llu != %llu",
				  off / PAGE, i, orig[i].ts, conv[i].ts);
			if (orig[i].type == l.kernel_stack_id) {
				uint32_t id, nr;
				int32_t size;
				struct dstack *s;

				CHECK(conv[i].type == l.stack_ref_id);
				memcpy(&id, conv[i].data + 8, 4);
				memcpy(&nr, conv[i].data + 12, 4);
				memcpy(&size, orig[i].data + 8, 4);
				s = find_ref(&t, id);
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
		transcoder_reset_refs(&t);
	}
	CHECK(stacks_seen > 0);
	/* the same stacks repeat: far fewer distinct stacks than stack entries */
	CHECK(stackdedup_count(dd) < stacks_seen);
	fprintf(stderr, "%zu pages, %zu stacks -> %zu distinct, %" PRIu64 " -> %" PRIu64 " bytes\n",
		pages, stacks_seen, stackdedup_count(dd), raw_bytes, out_bytes);

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
