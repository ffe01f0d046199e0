/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Stack map module: parsing the kernel's exports (real captures from the
 * stackmap test kernel in tests/data/stackmap, and generated ones in both
 * byte orders), generations, detection of resets made by someone else,
 * the reset steps, per-segment tables (checked by resolving ids with the
 * stack table the reader uses) and the reset policy. A temporary directory
 * plays tracefs.
 */
#include <fcntl.h>
#include <inttypes.h>
#include <stdint.h>

#include "config.h"
#include "helpers.h"
#include "segment.h"
#include "stackmap-internal.h"
#include "stackmap.h"
#include "stacktab-resolve.h"
#include "stacktab.h"
#include "util.h"

/* a window whose markers' CPUs are not known */
#define WIN(b, e) ((struct stackmap_window){ .begin_ts = (b), .end_ts = (e), \
	.begin_cpu = SEGMENT_NO_CPU, .end_cpu = SEGMENT_NO_CPU })

#define GUARD_USEC 1
#define GUARD_NS (GUARD_USEC * 1000)

static char *srcdir;

/* ---- fixture tree ---- */

static void put_file(const char *dir, const char *name, const void *data, size_t len)
{
	char path[4096];
	int fd;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0 || write_all(fd, data, len) < 0) {
		perror(path);
		exit(99);
	}
	close(fd);
}

static void put_str(const char *dir, const char *name, const char *s)
{
	put_file(dir, name, s, strlen(s));
}

static void rm_file(const char *dir, const char *name)
{
	char path[4096];

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	(void)unlink(path);
}

static char *get_str(const char *dir, const char *name)
{
	char path[4096], *s = NULL;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	if (read_file(path, &s, NULL) < 0)
		return NULL;
	return s;
}

static char *new_tree(void)
{
	char *d = test_tmpdir(), path[4096];

	snprintf(path, sizeof(path), "%s/options", d);
	if (mkdir(path, 0755) < 0) {
		perror(path);
		exit(99);
	}
	put_str(d, "options/stackmap", "1\n");
	return d;
}

/* A map for generated fixtures: id -> frames. */
struct fstack {
	uint32_t id;
	uint32_t refs;
	uint32_t nr;
	uint64_t ips[4];
};

static const char *sym_of(uint64_t ip, char *out, size_t size)
{
	if (ip == 0x7fffffff)
		snprintf(out, size, "[FTRACE TRAMPOLINE]");
	else
		snprintf(out, size, "fn_%" PRIx64 "+0x10/0x40", ip);
	return out;
}

static void put_text_map(const char *dir, const struct fstack *v, size_t n)
{
	struct buf b = {};
	char s[64];

	for (size_t i = 0; i < n; i++) {
		buf_printf(&b, "stack_id %u [ref %u, depth %u]\n", v[i].id, v[i].refs, v[i].nr);
		for (uint32_t k = 0; k < v[i].nr; k++)
			buf_printf(&b, "  [%u] %s\n", k, sym_of(v[i].ips[k], s, sizeof(s)));
		buf_printf(&b, "\n");
	}
	put_file(dir, "stack_map", b.data ? (const char *)b.data : "", b.len);
	buf_done(&b);
}

static void put32(struct buf *b, uint32_t v, bool be)
{
	if (be)
		v = __builtin_bswap32(v);
	buf_append(b, &v, sizeof(v));
}

static void put64(struct buf *b, uint64_t v, bool be)
{
	if (be)
		v = __builtin_bswap64(v);
	buf_append(b, &v, sizeof(v));
}

static void make_bin(struct buf *b, const struct fstack *v, size_t n, bool be)
{
	put32(b, 0x46534D42, be);
	put32(b, 1, be);
	put32(b, (uint32_t)n, be);
	put32(b, 0, be);
	for (size_t i = 0; i < n; i++) {
		put32(b, v[i].id, be);
		put32(b, v[i].nr, be);
		put32(b, v[i].refs, be);
		put32(b, 0, be);
		for (uint32_t k = 0; k < v[i].nr; k++)
			put64(b, v[i].ips[k], be);
	}
}

static void put_bin_map(const char *dir, const struct fstack *v, size_t n, bool be)
{
	struct buf b = {};

	make_bin(&b, v, n, be);
	put_file(dir, "stack_map_bin", b.data, b.len);
	buf_done(&b);
}

static void put_stat(const char *dir, uint64_t entries, uint64_t cap, uint64_t successes,
		     uint64_t drops)
{
	char s[512];

	snprintf(s, sizeof(s),
		 "entries:      %" PRIu64 " / %" PRIu64 "\ntable_size:   %" PRIu64
		 "\nsuccesses:    %" PRIu64 "\ndrops:        %" PRIu64 "\nsuccess_rate: %u%%\n",
		 entries, cap, cap * 2, successes, drops,
		 successes + drops ? (unsigned)(successes * 100 / (successes + drops)) : 0);
	put_str(dir, "stack_map_stat", s);
}

/* Write all three exports for map v. */
static void put_map(const char *dir, const struct fstack *v, size_t n, uint64_t successes)
{
	put_text_map(dir, v, n);
	put_bin_map(dir, v, n, false);
	put_stat(dir, n, 1024, successes, 0);
}

static void test_config(struct config *c)
{
	memset(c, 0, sizeof(*c));
	c->reset_guard_usec = GUARD_USEC;
}

/* ---- reading segment tables back ---- */

struct tables {
	struct buf stacks, gens, addrs;
	int nr_gens;
	struct stacktab *tab;
};

static void tables_done(struct tables *t)
{
	buf_done(&t->stacks);
	buf_done(&t->gens);
	buf_done(&t->addrs);
	t->tab = stacktab_free(t->tab);
}

static void set_bit(uint64_t *bm, uint32_t id)
{
	bm[id / 64] |= UINT64_C(1) << (id % 64);
}

/* Build the tables and load them into a stack table as a reader would. */
static int get_tables(struct stackmap *sm, const uint64_t *bm, size_t nbits, uint32_t first,
		      uint32_t last, uint64_t min_ts, uint64_t max_ts, struct tables *t)
{
	int r;

	memset(t, 0, sizeof(*t));
	r = stackmap_segment_tables(sm, bm, nbits, first, last, min_ts, max_ts, &t->stacks,
				    &t->gens, &t->addrs);
	if (r < 0)
		return r;
	t->nr_gens = r;
	t->tab = stacktab_new();
	if (!t->tab)
		return -ENOMEM;
	if (t->stacks.len && stacktab_add_stacks(t->tab, t->stacks.data, t->stacks.len) < 0)
		return -EBADMSG;
	if (t->gens.len != (size_t)r * SEGMENT_GENERATION_SIZE)
		return -EBADMSG;
	for (int i = 0; i < r; i++) {
		struct segment_generation g;

		if (segment_generation_decode(t->gens.data + i * SEGMENT_GENERATION_SIZE,
					      SEGMENT_GENERATION_SIZE, &g) < 0)
			return -EBADMSG;
		if (stacktab_add_generation(t->tab, SEGMENT_NO_CPU, &g) < 0)
			return -ENOMEM;
	}
	return 0;
}

static struct segment_generation table_gen(const struct tables *t, int i)
{
	struct segment_generation g = {};

	(void)segment_generation_decode(t->gens.data + i * SEGMENT_GENERATION_SIZE,
					SEGMENT_GENERATION_SIZE, &g);
	return g;
}

/* Resolve id at ts; returns the first frame (address) or 0 when unresolved. */
static uint64_t resolve(struct tables *t, uint64_t ts, uint32_t id)
{
	const struct stack_entry *e;

	if (stacktab_resolve(t->tab, 0, ts, STACKTAB_KERNEL_ID, id, &e, NULL) != 1)
		return 0;
	if (e->flags & SEGMENT_STACK_F_TEXT)
		return 1;
	return e->nr ? e->ips[0] : 0;
}

struct lookup {
	uint32_t gen, id;
	bool found;
	struct stack_entry e;
	char first[128];
	uint64_t ips[64];
	char text[64][128];
};

static int lookup_cb(const struct stack_entry *e, void *userdata)
{
	struct lookup *l = userdata;

	if (e->generation != l->gen || e->id != l->id)
		return 0;
	l->found = true;
	l->e = *e;
	if (e->nr && (e->flags & SEGMENT_STACK_F_TEXT))
		snprintf(l->first, sizeof(l->first), "%s", e->text[0]);
	for (uint16_t i = 0; i < e->nr && i < 64; i++) {
		if (e->flags & SEGMENT_STACK_F_TEXT)
			snprintf(l->text[i], sizeof(l->text[i]), "%s", e->text[i]);
		else
			l->ips[i] = e->ips[i];
	}
	/* The entry's pointers are only valid during the call. */
	l->e.ips = NULL;
	l->e.text = NULL;
	return 0;
}

static bool find_entry(const struct tables *t, uint32_t gen, uint32_t id, struct lookup *l)
{
	memset(l, 0, sizeof(*l));
	l->gen = gen;
	l->id = id;
	(void)stacktab_decode(t->stacks.data, t->stacks.len, lookup_cb, l);
	return l->found;
}

/* ---- real captures ---- */

struct ksym {
	uint64_t addr;
	char name[128];
};

static struct ksym *load_kallsyms(const char *path, size_t *ret_n)
{
	_cleanup_free_ char *text = NULL;
	struct ksym *v = NULL;
	size_t n = 0, cap = 0;
	char *line, *save = NULL;

	if (read_file(path, &text, NULL) < 0)
		return NULL;
	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		struct ksym k;
		char type;

		if (sscanf(line, "%" SCNx64 " %c %127s", &k.addr, &type, k.name) != 3)
			continue;
		if (n == cap) {
			cap = cap ? cap * 2 : 256;
			v = realloc(v, cap * sizeof(*v));
			if (!v)
				exit(99);
		}
		v[n++] = k;
	}
	*ret_n = n;
	return v;
}

/* "sym+0xoff" for an address, as %pS prints it (without the /size). */
static bool symbolize(const struct ksym *v, size_t n, uint64_t ip, char *out, size_t size)
{
	const struct ksym *best = NULL;

	for (size_t i = 0; i < n; i++)
		if (v[i].addr <= ip && (!best || v[i].addr > best->addr))
			best = &v[i];
	if (!best)
		return false;
	snprintf(out, size, "%s+0x%" PRIx64, best->name, ip - best->addr);
	return true;
}

static void copy_fixture(const char *dir, const char *name)
{
	char path[4096], *data = NULL;
	size_t len;

	snprintf(path, sizeof(path), "%s/tests/data/stackmap/%s", srcdir, name);
	if (read_file(path, &data, &len) < 0) {
		fprintf(stderr, "cannot read %s\n", path);
		exit(99);
	}
	put_file(dir, name, data, len);
	free(data);
}

/*
 * The captures from the test kernel: the binary and text exports list the
 * same ids and depths, every binary address symbolizes (with the captured
 * kallsyms lines) to the frame the text export prints, and every id seen
 * in the captured trace is in the map.
 */
static void test_real_capture(void)
{
	_cleanup_free_ char *dir = new_tree(), *ids_text = NULL, *path = NULL;
	uint64_t bm[(1u << 11) / 64] = {};
	struct stackmap *sm_bin = NULL, *sm_text = NULL;
	struct stackmap_stats st;
	struct tables tb, tt;
	struct config c;
	struct ksym *syms;
	size_t nsyms = 0, checked_frames = 0, trampolines = 0;
	uint32_t nr_ids = 0;
	char *line, *save = NULL;

	test_config(&c);
	copy_fixture(dir, "stack_map");
	copy_fixture(dir, "stack_map_bin");
	copy_fixture(dir, "stack_map_stat");

	CHECK(stackmap_new(dir, &c, &sm_bin) == 0);
	CHECK(stackmap_start(sm_bin, NULL) == 0);
	stackmap_get_stats(sm_bin, &st);
	CHECK(st.have_bin && st.have_stat);
	CHECK(st.entries == 262 && st.capacity == 1024 && st.table_size == 2048);
	CHECK(st.successes == 516724 && st.drops == 0 && st.success_rate == 100);
	CHECK(st.text_snapshots == 0 && st.generation == 1);
	CHECK(st.stored_stacks == 262);

	/* The same map read through the text export only. */
	rm_file(dir, "stack_map_bin");
	CHECK(stackmap_new(dir, &c, &sm_text) == 0);
	CHECK(stackmap_start(sm_text, NULL) == 0);
	stackmap_get_stats(sm_text, &st);
	CHECK(!st.have_bin && st.text_snapshots == 1 && st.stored_stacks == 262);

	for (uint32_t i = 0; i < 2048; i++)
		set_bit(bm, i);
	CHECK(get_tables(sm_bin, bm, 2048, 1, 1, 0, UINT64_MAX, &tb) == 0);
	CHECK(get_tables(sm_text, bm, 2048, 1, 1, 0, UINT64_MAX, &tt) == 0);
	CHECK(tb.nr_gens == 1 && tt.nr_gens == 1);
	CHECK(stacktab_size(tb.tab) == 2048 && stacktab_size(tt.tab) == 2048);
	/* Addresses for the kallsyms subset: sorted, unique, no trampoline marker. */
	CHECK(tb.addrs.len > 0 && tt.addrs.len == 0);
	for (size_t i = 1; i < tb.addrs.len / 8; i++) {
		uint64_t a, b;

		memcpy(&a, tb.addrs.data + (i - 1) * 8, 8);
		memcpy(&b, tb.addrs.data + i * 8, 8);
		CHECK(a < b && b != 0x7fffffff);
	}

	CHECK(strprintf(&path, "%s/tests/data/stackmap/kallsyms", srcdir) == 0);
	syms = load_kallsyms(path, &nsyms);
	CHECK(syms && nsyms > 100);
	for (uint32_t id = 0; id < 2048 && syms; id++) {
		struct lookup lb, lt;

		CHECK(find_entry(&tb, 1, id, &lb) && find_entry(&tt, 1, id, &lt));
		CHECK(lb.e.flags == lt.e.flags || (lt.e.flags & SEGMENT_STACK_F_TEXT));
		if (lb.e.flags & SEGMENT_STACK_F_ABSENT) {
			CHECK(lt.e.flags & SEGMENT_STACK_F_ABSENT);
			continue;
		}
		nr_ids++;
		CHECK(lt.e.flags == SEGMENT_STACK_F_TEXT);
		CHECK(lb.e.nr == lt.e.nr && lb.e.refs == lt.e.refs);
		for (uint16_t k = 0; k < lb.e.nr && k < lt.e.nr; k++) {
			char want[160];
			const char *got = lt.text[k];

			if (lb.ips[k] == 0x7fffffff) {
				CHECK(streq(got, "[FTRACE TRAMPOLINE]"));
				trampolines++;
				continue;
			}
			CHECK(symbolize(syms, nsyms, lb.ips[k], want, sizeof(want)));
			CHECK_MSG(strncmp(got, want, strlen(want)) == 0 && got[strlen(want)] == '/',
				  "id %u frame %u: text '%s', binary '%s'", id, k, got, want);
			checked_frames++;
		}
	}
	CHECK(nr_ids == 262);
	CHECK(checked_frames > 2000);
	CHECK(trampolines > 0);
	free(syms);

	/* Every id in the captured trace is in the map. */
	free(path);
	path = NULL;
	CHECK(strprintf(&path, "%s/tests/data/stackmap/trace-ids", srcdir) == 0);
	CHECK(read_file(path, &ids_text, NULL) == 0);
	for (line = strtok_r(ids_text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		unsigned count, id;
		struct lookup l;

		if (sscanf(line, "%u <stack_id %u>", &count, &id) != 2)
			continue;
		CHECK(find_entry(&tb, 1, id, &l) && !(l.e.flags & SEGMENT_STACK_F_ABSENT));
		CHECK(resolve(&tb, 12345, id) != 0);
	}

	tables_done(&tb);
	tables_done(&tt);
	stackmap_free(sm_bin);
	stackmap_free(sm_text);
	test_rmtree(dir);
}

/* ---- generated maps ---- */

static const struct fstack map_a[] = {
	{ .id = 3, .refs = 5, .nr = 3, .ips = { 0xa1, 0xa2, 0xa3 } },
	{ .id = 17, .refs = 1, .nr = 2, .ips = { 0xb1, 0x7fffffff } },
	{ .id = 100, .refs = 9, .nr = 4, .ips = { 0xc1, 0xc2, 0xc3, 0xc4 } },
};

/* map_a plus one new id: what the map looks like a little later. */
static const struct fstack map_a2[] = {
	{ .id = 3, .refs = 6, .nr = 3, .ips = { 0xa1, 0xa2, 0xa3 } },
	{ .id = 17, .refs = 1, .nr = 2, .ips = { 0xb1, 0x7fffffff } },
	{ .id = 64, .refs = 1, .nr = 1, .ips = { 0xd1 } },
	{ .id = 100, .refs = 9, .nr = 4, .ips = { 0xc1, 0xc2, 0xc3, 0xc4 } },
};

/* After a reset: 3 kept its stack, 17 now names another one, 100 is gone. */
static const struct fstack map_b[] = {
	{ .id = 3, .refs = 1, .nr = 3, .ips = { 0xa1, 0xa2, 0xa3 } },
	{ .id = 17, .refs = 2, .nr = 2, .ips = { 0xe1, 0xe2 } },
	{ .id = 200, .refs = 1, .nr = 1, .ips = { 0xf1 } },
};

/* Both byte orders and the text export give the same table. */
static void test_byte_orders(void)
{
	struct buf out[3] = {};
	uint64_t bm[4] = {};
	struct config c;

	test_config(&c);
	set_bit(bm, 3);
	set_bit(bm, 17);
	set_bit(bm, 100);
	set_bit(bm, 101);
	for (int v = 0; v < 3; v++) {
		_cleanup_free_ char *dir = new_tree();
		struct stackmap *sm = NULL;
		struct buf gens = {};
		struct stackmap_stats st;

		put_text_map(dir, map_a, ARRAY_SIZE(map_a));
		if (v < 2)
			put_bin_map(dir, map_a, ARRAY_SIZE(map_a), v == 1);
		CHECK(stackmap_new(dir, &c, &sm) == 0);
		CHECK(stackmap_start(sm, NULL) == 0);
		stackmap_get_stats(sm, &st);
		CHECK(st.entries == 3 && !st.have_stat && st.capacity == 0);
		CHECK(st.text_snapshots == (v == 2));
		CHECK(stackmap_segment_tables(sm, bm, 256, 1, 1, 0, 0, &out[v], &gens, NULL) == 1);
		buf_done(&gens);
		stackmap_free(sm);
		test_rmtree(dir);
	}
	CHECK(out[0].len == out[1].len && memcmp(out[0].data, out[1].data, out[0].len) == 0);
	CHECK(out[2].len > out[0].len);	/* text frames */
	for (int v = 0; v < 3; v++)
		buf_done(&out[v]);
}

/* Broken exports are refused, a broken binary export falls back to text for good. */
static void test_malformed(void)
{
	static const char *const bad_text[] = {
		"stack_id 3 [ref 1, depth 2]\n  [0] a+0x1/0x2\n\n",		/* short */
		"stack_id 3 [ref 1, depth 1]\n  [1] a+0x1/0x2\n\n",		/* index */
		"stack_id 3 [ref 1, depth 1]\n  [0] a+0x1/0x2\n  [1] b\n\n",	/* long */
		"stack_id x [ref 1, depth 1]\n  [0] a+0x1/0x2\n\n",
		"stack_id 3 [ref 1, depth 1]\n  [0] a\n\nstack_id 3 [ref 1, depth 1]\n  [0] a\n\n",
		"stack_id 999999999 [ref 1, depth 1]\n  [0] a\n\n",		/* id too large */
		"stack_id 3 [ref 1, depth 0]\n\n",
	};
	struct config c;

	test_config(&c);
	for (size_t i = 0; i < ARRAY_SIZE(bad_text); i++) {
		_cleanup_free_ char *dir = new_tree();
		struct stackmap *sm = NULL;

		put_str(dir, "stack_map", bad_text[i]);
		CHECK(stackmap_new(dir, &c, &sm) == 0);
		CHECK_MSG(stackmap_start(sm, NULL) == -EBADMSG, "case %zu", i);
		stackmap_free(sm);
		test_rmtree(dir);
	}

	/* Binary images cut or corrupted anywhere: text takes over. */
	{
		struct buf b = {};

		make_bin(&b, map_a, ARRAY_SIZE(map_a), false);
		for (size_t cut = 0; cut < b.len; cut += 3) {
			_cleanup_free_ char *dir = new_tree();
			struct stackmap *sm = NULL;
			struct stackmap_stats st;

			put_text_map(dir, map_a, ARRAY_SIZE(map_a));
			put_file(dir, "stack_map_bin", b.data, cut);
			CHECK(stackmap_new(dir, &c, &sm) == 0);
			CHECK(stackmap_start(sm, NULL) == 0);
			stackmap_get_stats(sm, &st);
			CHECK_MSG(!st.have_bin && st.text_snapshots == 1 && st.entries == 3,
				  "cut at %zu", cut);
			stackmap_free(sm);
			test_rmtree(dir);
		}
		/* Unknown version. */
		{
			_cleanup_free_ char *dir = new_tree();
			struct stackmap *sm = NULL;
			struct stackmap_stats st;

			b.data[4] = 2;
			put_text_map(dir, map_a, ARRAY_SIZE(map_a));
			put_file(dir, "stack_map_bin", b.data, b.len);
			CHECK(stackmap_new(dir, &c, &sm) == 0);
			CHECK(stackmap_start(sm, NULL) == 0);
			stackmap_get_stats(sm, &st);
			CHECK(!st.have_bin && st.text_snapshots == 1);
			stackmap_free(sm);
			test_rmtree(dir);
		}
		buf_done(&b);
	}

	/* No stack_map at all: no stack map support. */
	{
		_cleanup_free_ char *dir = new_tree();
		struct stackmap *sm = NULL;

		CHECK(stackmap_new(dir, &c, &sm) == -EOPNOTSUPP);
		CHECK(sm == NULL);
		test_rmtree(dir);
	}
}

/*
 * Resets made by someone else: an id that vanished, an id whose frames
 * changed, the successes counter going down, options/stackmap off and on.
 * The new generation's window starts at the marker of the last snapshot
 * that still matched.
 */
static void test_external(void)
{
	struct fstack changed[ARRAY_SIZE(map_a2)];
	struct segment_generation g;
	struct config c;

	test_config(&c);
	memcpy(changed, map_a2, sizeof(changed));
	changed[2].ips[0] = 0xdead;

	for (int how = 0; how < 4; how++) {
		_cleanup_free_ char *dir = new_tree();
		struct stackmap *sm = NULL;
		struct stackmap_stats st;
		int r;

		put_map(dir, map_a, ARRAY_SIZE(map_a), 100);
		CHECK(stackmap_new(dir, &c, &sm) == 0);
		CHECK(stackmap_start(sm, &g) == 0);
		CHECK(g.generation == 1 && g.kind == SEGMENT_GEN_ADOPTED && g.window_end == 0);

		/* Snapshot 1: the map grew, consistent. */
		CHECK(stackmap_marker_seen(sm, "stackmapd: snap 1\n", 18, 1000) == 1);
		put_map(dir, map_a2, ARRAY_SIZE(map_a2), 150);
		CHECK(stackmap_snapshot(sm, 1) == 0);
		/* Snapshot 2 (same content) is consistent too. */
		CHECK(stackmap_marker_seen(sm, "stackmapd: snap 2", 17, 2000) == 1);
		CHECK(stackmap_snapshot(sm, 2) == 0);
		CHECK(stackmap_marker_seen(sm, "stackmapd: snapx", 16, 2500) == 0);
		CHECK(stackmap_marker_seen(sm, "stackmapd: gen 2 begin", 22, 2600) == 0);

		switch (how) {
		case 0:		/* vanished */
			put_map(dir, map_a, 2, 10);
			break;
		case 1:		/* changed frames */
			put_map(dir, changed, ARRAY_SIZE(changed), 200);
			break;
		case 2:		/* same content, counters went down */
			put_map(dir, map_a2, ARRAY_SIZE(map_a2), 20);
			break;
		case 3:		/* switched off: not yet a reset */
			put_str(dir, "options/stackmap", "0\n");
			CHECK(stackmap_snapshot(sm, 3) == STACKMAP_SNAP_DISABLED);
			put_str(dir, "options/stackmap", "1\n");
			break;
		}
		CHECK(stackmap_marker_seen(sm, "stackmapd: snap 4", 17, 4000) == 1);
		r = stackmap_snapshot(sm, 4);
		CHECK_MSG(r == STACKMAP_SNAP_EXTERNAL, "case %d: %d", how, r);
		/* Until the next generation begins, snapshots and resets wait. */
		CHECK(stackmap_snapshot(sm, 5) == -EBUSY);
		CHECK(stackmap_snapshot_final(sm) == -EBUSY);
		CHECK(stackmap_begin_generation(sm, SEGMENT_GEN_RESET_EXTERNAL, &WIN(0, 0), &g) == -EINVAL);
		/* CPUs given or not, an external reset's window is all guard */
		CHECK(stackmap_begin_generation(sm, SEGMENT_GEN_RESET_EXTERNAL,
						&(struct stackmap_window){ .end_ts = 4100, .end_cpu = 0,
									   .begin_cpu = 0 }, &g) == 0);
		CHECK(g.generation == 2 && g.prev_generation == 1);
		CHECK(g.kind == SEGMENT_GEN_RESET_EXTERNAL);
		CHECK(g.begin_cpu == SEGMENT_NO_CPU && g.end_cpu == SEGMENT_NO_CPU);
		/* Snapshot 2 (ts 2000) was the last one that matched generation 1. */
		CHECK_MSG(g.window_begin == 2000 - GUARD_NS && g.window_end == 4100 + GUARD_NS,
			  "case %d: [%" PRIu64 ", %" PRIu64 "]", how, g.window_begin,
			  g.window_end);
		stackmap_get_stats(sm, &st);
		CHECK(st.resets_external == 1 && st.resets_own == 0 && st.generation == 2);
		CHECK(stackmap_generation(sm) == 2);
		/* Back to normal. */
		CHECK(stackmap_snapshot(sm, 6) == 0);
		stackmap_free(sm);
		test_rmtree(dir);
	}
}

/*
 * A lossless reset, then an external one, then tables: the reader resolves
 * every id by the window rules and never to the wrong stack.
 */
static void test_generations_and_tables(void)
{
	_cleanup_free_ char *dir = new_tree();
	struct segment_generation g;
	struct stackmap *sm = NULL;
	struct stackmap_stats st;
	uint64_t bm[4] = {};
	struct tables t;
	struct lookup l;
	struct config c;
	char *s;

	test_config(&c);
	put_map(dir, map_a, ARRAY_SIZE(map_a), 100);
	CHECK(stackmap_new(dir, &c, &sm) == 0);
	CHECK(stackmap_snapshot(sm, 1) == -EPERM);
	CHECK(stackmap_start(sm, NULL) == 0);
	CHECK(stackmap_start(sm, NULL) == -EPERM);
	CHECK(stackmap_write_reset(sm) == -EPERM);
	CHECK(stackmap_begin_generation(sm, SEGMENT_GEN_RESET_LOSSLESS, &WIN(1, 2), NULL) == -EPERM);

	/* Generation 1 grows to map_a2, then a lossless reset at ts [10000, 10500]. */
	put_map(dir, map_a2, ARRAY_SIZE(map_a2), 150);
	CHECK(stackmap_snapshot_final(sm) == 0);
	CHECK(stackmap_write_reset(sm) == 0);
	s = get_str(dir, "stack_map");
	CHECK(s && s[0] == '0');
	free(s);
	CHECK(stackmap_snapshot(sm, 7) == -EBUSY);
	put_map(dir, map_b, 1, 1);	/* the new map: id 3 only, so far */
	CHECK(stackmap_begin_generation(sm, SEGMENT_GEN_RESET_LOSSLESS,
					&(struct stackmap_window){ .begin_ts = 10000, .end_ts = 10500,
								   .begin_cpu = 1, .end_cpu = 0 },
					&g) == 0);
	CHECK(g.generation == 2 && g.prev_generation == 1 && g.kind == SEGMENT_GEN_RESET_LOSSLESS);
	CHECK(g.window_begin == 10000 - GUARD_NS && g.window_end == 10500 + GUARD_NS);
	/* where the markers were read goes with the window, and the guard it was widened by */
	CHECK(g.begin_cpu == 1 && g.end_cpu == 0 && g.guard == GUARD_NS);
	put_map(dir, map_b, ARRAY_SIZE(map_b), 5);
	CHECK(stackmap_snapshot(sm, 8) == 0);

	/* Then somebody else resets it; the marker of snapshot 8 was at 20000. */
	CHECK(stackmap_marker_seen(sm, "stackmapd: snap 8", 17, 20000) == 1);
	put_map(dir, map_a, 1, 1);
	CHECK(stackmap_snapshot(sm, 9) == STACKMAP_SNAP_EXTERNAL);

	/*
	 * A segment finished before the new generation begins: the new map is
	 * declared with an open window, so its ids never resolve to the old map.
	 */
	set_bit(bm, 3);
	set_bit(bm, 17);
	CHECK(get_tables(sm, bm, 256, 2, 2, 15000, 26000, &t) == 0);
	CHECK(t.nr_gens == 2);
	g = table_gen(&t, 1);
	CHECK(g.generation == 3 && g.prev_generation == 2 && g.window_end == UINT64_MAX &&
	      g.window_begin == 20000 - GUARD_NS && g.kind == SEGMENT_GEN_RESET_EXTERNAL);
	CHECK(resolve(&t, 15000, 17) == 0xe1);
	CHECK(resolve(&t, 25000, 17) == 0xe1);	/* absent from the new map */
	CHECK(resolve(&t, 25000, 3) == 0xa1);	/* the same in both */
	tables_done(&t);
	memset(bm, 0, sizeof(bm));

	CHECK(stackmap_begin_generation(sm, SEGMENT_GEN_RESET_EXTERNAL, &WIN(0, 30000), &g) == 0);
	CHECK(g.generation == 3 && g.window_begin == 20000 - GUARD_NS &&
	      g.window_end == 30000 + GUARD_NS);
	stackmap_get_stats(sm, &st);
	CHECK(st.resets_own == 1 && st.resets_external == 1);
	/* Stacks identical across generations are stored once. */
	CHECK(st.stored_stacks == 4 + 2);

	set_bit(bm, 3);
	set_bit(bm, 17);
	set_bit(bm, 64);
	set_bit(bm, 100);
	set_bit(bm, 200);

	/* A segment spanning everything. */
	CHECK(get_tables(sm, bm, 256, 1, 3, 1, 40000, &t) == 0);
	CHECK(t.nr_gens == 3 && stacktab_size(t.tab) == 15);
	CHECK(find_entry(&t, 1, 64, &l) && l.e.nr == 1 && l.ips[0] == 0xd1);
	CHECK(find_entry(&t, 2, 100, &l) && (l.e.flags & SEGMENT_STACK_F_ABSENT));
	CHECK(find_entry(&t, 3, 17, &l) && (l.e.flags & SEGMENT_STACK_F_ABSENT));
	/* Generation 1 before the reset window. */
	CHECK(resolve(&t, 5000, 17) == 0xb1);
	CHECK(resolve(&t, 5000, 100) == 0xc1);
	/* Inside the window: 3 is the same in both, 100 proven absent from 2, 17 differs. */
	CHECK(resolve(&t, 10200, 3) == 0xa1);
	CHECK(resolve(&t, 10200, 100) == 0xc1);
	CHECK(resolve(&t, 10200, 17) == 0);
	/* Generation 2. */
	CHECK(resolve(&t, 15000, 17) == 0xe1);
	CHECK(resolve(&t, 15000, 200) == 0xf1);
	CHECK(resolve(&t, 15000, 100) == 0);
	/* The external window: 200 is absent from 3, so it resolves to 2. */
	CHECK(resolve(&t, 25000, 200) == 0xf1);
	CHECK(resolve(&t, 25000, 3) == 0xa1);
	/* Generation 3. */
	CHECK(resolve(&t, 35000, 3) == 0xa1);
	CHECK(resolve(&t, 35000, 200) == 0);
	/* The recorder also writes each window when its generation begins: still one window. */
	for (int i = 0; i < t.nr_gens; i++) {
		struct segment_generation w = table_gen(&t, i);

		CHECK(stacktab_add_generation(t.tab, SEGMENT_NO_CPU, &w) == 0);
	}
	CHECK(resolve(&t, 10200, 3) == 0xa1);
	CHECK(resolve(&t, 25000, 200) == 0xf1);
	tables_done(&t);

	/* Selection: generation range only (no timestamps) ... */
	CHECK(get_tables(sm, bm, 256, 3, 3, 1, 0, &t) == 0);
	CHECK(t.nr_gens == 1 && table_gen(&t, 0).generation == 3);
	tables_done(&t);
	/* ... or lifetimes: events at 12000-16000 lie in generation 2 only ... */
	CHECK(get_tables(sm, bm, 256, 2, 2, 12000, 16000, &t) == 0);
	CHECK(t.nr_gens == 1 && table_gen(&t, 0).generation == 2);
	tables_done(&t);
	/* ... events of generation 1 read late (in a segment of generation 3) ... */
	CHECK(get_tables(sm, bm, 256, 3, 3, 9000, 31000, &t) == 0);
	CHECK(t.nr_gens == 3);
	CHECK(resolve(&t, 9000, 100) == 0xc1);
	tables_done(&t);
	/* ... a window edge: generation 1 lives until generation 2's window ends. */
	CHECK(get_tables(sm, bm, 256, 2, 3, 10500 + GUARD_NS, 40000, &t) == 0);
	CHECK(t.nr_gens == 3);
	tables_done(&t);
	CHECK(get_tables(sm, bm, 256, 2, 3, 10501 + GUARD_NS, 40000, &t) == 0);
	CHECK(t.nr_gens == 2 && table_gen(&t, 0).generation == 2);
	tables_done(&t);

	/* Released generations keep their window but no entries: never wrong. */
	CHECK(stackmap_release_before(sm, 2) == 1);
	CHECK(stackmap_release_before(sm, 2) == 0);
	CHECK(get_tables(sm, bm, 256, 1, 3, 1, 40000, &t) == 0);
	CHECK(t.nr_gens == 3 && stacktab_size(t.tab) == 10);
	CHECK(resolve(&t, 5000, 17) == 0);
	CHECK(resolve(&t, 10200, 100) == 0);
	tables_done(&t);

	stackmap_free(sm);
	test_rmtree(dir);
}

/*
 * The final snapshot shows the map was already reset by someone else: no
 * second reset, and the next generation is EXTERNAL with the wider window.
 */
static void test_final_finds_external(void)
{
	_cleanup_free_ char *dir = new_tree();
	struct segment_generation g;
	struct stackmap *sm = NULL;
	struct config c;
	char *s;

	test_config(&c);
	put_map(dir, map_a, ARRAY_SIZE(map_a), 100);
	CHECK(stackmap_new(dir, &c, &sm) == 0);
	CHECK(stackmap_start(sm, NULL) == 0);
	CHECK(stackmap_marker_seen(sm, "stackmapd: snap 1", 17, 5000) == 1);
	CHECK(stackmap_snapshot(sm, 1) == 0);
	put_map(dir, map_b, ARRAY_SIZE(map_b), 3);
	CHECK(stackmap_snapshot_final(sm) == STACKMAP_SNAP_EXTERNAL);
	CHECK(stackmap_write_reset(sm) == 1);
	s = get_str(dir, "stack_map");
	CHECK(s && startswith(s, "stack_id"));	/* not written */
	free(s);
	CHECK(stackmap_begin_generation(sm, SEGMENT_GEN_RESET_LOSSLESS, &WIN(9000, 10000), &g) == 0);
	CHECK(g.kind == SEGMENT_GEN_RESET_EXTERNAL && g.window_begin == 5000 - GUARD_NS &&
	      g.window_end == 10000 + GUARD_NS);

	/* Reset between the final snapshot and the write: found by the last look. */
	CHECK(stackmap_marker_seen(sm, "stackmapd: snap 2", 17, 20000) == 1);
	CHECK(stackmap_snapshot(sm, 2) == 0);
	CHECK(stackmap_snapshot_final(sm) == 0);
	put_map(dir, map_a, 1, 1);
	CHECK(stackmap_write_reset(sm) == 1);
	s = get_str(dir, "stack_map");
	CHECK(s && startswith(s, "stack_id"));
	free(s);
	CHECK(stackmap_begin_generation(sm, SEGMENT_GEN_RESET_LOSSLESS, &WIN(29000, 30000), &g) == 0);
	CHECK(g.kind == SEGMENT_GEN_RESET_EXTERNAL && g.generation == 3 &&
	      g.window_begin == 20000 - GUARD_NS);

	/* Ids assigned after the final snapshot are read before the map is cleared. */
	put_map(dir, map_a2, ARRAY_SIZE(map_a2), 50);
	CHECK(stackmap_snapshot(sm, 3) == 0);
	CHECK(stackmap_snapshot_final(sm) == 0);
	{
		struct fstack more[ARRAY_SIZE(map_a2) + 1];
		uint64_t bm[4] = {};
		struct tables t;
		struct lookup l;

		memcpy(more, map_a2, sizeof(map_a2));
		more[ARRAY_SIZE(map_a2)] = (struct fstack){ .id = 150, .refs = 1, .nr = 1,
							    .ips = { 0x150 } };
		put_map(dir, more, ARRAY_SIZE(more), 60);
		CHECK(stackmap_write_reset(sm) == 0);
		put_map(dir, map_b, 1, 1);
		CHECK(stackmap_begin_generation(sm, SEGMENT_GEN_RESET_LOSSLESS, &WIN(39000, 40000),
						&g) == 0);
		set_bit(bm, 150);
		CHECK(get_tables(sm, bm, 256, 3, 3, 0, 0, &t) == 0);
		CHECK(find_entry(&t, 3, 150, &l) && l.e.nr == 1 && l.ips[0] == 0x150);
		tables_done(&t);
	}
	stackmap_free(sm);
	test_rmtree(dir);
}

/*
 * The look before a reset is taken when the binary export is opened, and
 * read after the reset: ids assigned before the open are in the old
 * generation, ids assigned after it are not (they stay unresolved), and
 * a reset by someone else that the look shows makes the next generation
 * EXTERNAL. The kernel's snapshot at open is played by replacing the file
 * while it is open.
 */
static void test_last_look_at_open(void)
{
	_cleanup_free_ char *dir = new_tree();
	const struct fstack other = { .id = 3, .refs = 1, .nr = 1, .ips = { 0x99 } };
	struct fstack more[ARRAY_SIZE(map_a2) + 2];
	struct segment_generation g;
	struct stackmap *sm = NULL;
	uint64_t bm[4] = {};
	struct tables t;
	struct lookup l;
	struct config c;
	char *s;

	test_config(&c);
	memcpy(more, map_a2, sizeof(map_a2));
	more[ARRAY_SIZE(map_a2)] = (struct fstack){ .id = 150, .refs = 1, .nr = 1, .ips = { 0x150 } };
	more[ARRAY_SIZE(map_a2) + 1] = (struct fstack){ .id = 151, .refs = 1, .nr = 1,
							.ips = { 0x151 } };
	put_map(dir, map_a2, ARRAY_SIZE(map_a2), 50);
	CHECK(stackmap_new(dir, &c, &sm) == 0);
	CHECK(stackmap_open_last_look(sm) == 0);	/* not before the final snapshot */
	CHECK(stackmap_start(sm, NULL) == 0);
	CHECK(stackmap_marker_seen(sm, "stackmapd: snap 1", 17, 5000) == 1);
	CHECK(stackmap_snapshot(sm, 1) == 0);
	CHECK(stackmap_snapshot_final(sm) == 0);
	put_map(dir, more, ARRAY_SIZE(more) - 1, 60);		/* 150 assigned */
	CHECK(stackmap_open_last_look(sm) == 1);
	rm_file(dir, "stack_map_bin");
	put_map(dir, more, ARRAY_SIZE(more), 61);		/* 151 after the look */
	CHECK(stackmap_write_reset(sm) == 0);
	s = get_str(dir, "stack_map");
	CHECK(s && s[0] == '0');
	free(s);
	put_map(dir, map_b, 1, 1);
	CHECK(stackmap_merge_last_look(sm) == 0);
	CHECK(stackmap_merge_last_look(sm) == 0);	/* once */
	CHECK(stackmap_begin_generation(sm, SEGMENT_GEN_RESET_LOSSLESS, &WIN(9000, 10000), &g) == 0);
	CHECK(g.kind == SEGMENT_GEN_RESET_LOSSLESS && g.generation == 2);
	set_bit(bm, 150);
	set_bit(bm, 151);
	CHECK(get_tables(sm, bm, 256, 1, 2, 0, 0, &t) == 0);
	CHECK(find_entry(&t, 1, 150, &l) && l.e.nr == 1 && l.ips[0] == 0x150);
	CHECK(!find_entry(&t, 1, 151, &l) || (l.e.flags & SEGMENT_STACK_F_ABSENT));
	tables_done(&t);

	/* Somebody else resets the map after the final snapshot: seen in the look. */
	CHECK(stackmap_marker_seen(sm, "stackmapd: snap 2", 17, 20000) == 1);
	CHECK(stackmap_snapshot(sm, 2) == 0);
	CHECK(stackmap_snapshot_final(sm) == 0);
	put_map(dir, &other, 1, 1);		/* 3 is another stack now */
	CHECK(stackmap_open_last_look(sm) == 1);
	CHECK(stackmap_write_reset(sm) == 0);
	CHECK(stackmap_merge_last_look(sm) == STACKMAP_SNAP_EXTERNAL);
	put_map(dir, map_b, 3, 3);
	CHECK(stackmap_begin_generation(sm, SEGMENT_GEN_RESET_LOSSLESS, &WIN(29000, 30000), &g) == 0);
	CHECK(g.kind == SEGMENT_GEN_RESET_EXTERNAL && g.generation == 3 &&
	      g.window_begin == 20000 - GUARD_NS);

	/* A write that fails leaves the generation going on, the look closed. */
	CHECK(stackmap_snapshot_final(sm) == 0);
	CHECK(stackmap_open_last_look(sm) == 1);
	rm_file(dir, "stack_map");
	CHECK(stackmap_write_reset(sm) < 0);
	CHECK(stackmap_merge_last_look(sm) == 0);
	CHECK(stackmap_generation(sm) == 3);
	stackmap_free(sm);
	test_rmtree(dir);
}

/*
 * Segments that end while a reset is made but its generation has not
 * begun (the daemon stops, or rotates on request, before the markers are
 * read back): the new map is read again at the segment's end, so an id
 * it gained after the reset was found never passes for the old map's.
 */
static void test_unbegun_reset(void)
{
	_cleanup_free_ char *dir = new_tree();
	struct stackmap *sm = NULL;
	uint64_t bm[4] = {};
	struct tables t;
	struct config c;

	test_config(&c);
	set_bit(bm, 3);
	set_bit(bm, 17);

	/* Somebody else resets the map after snapshot 1 (marker at 10000). */
	put_map(dir, map_a, ARRAY_SIZE(map_a), 100);
	CHECK(stackmap_new(dir, &c, &sm) == 0);
	CHECK(stackmap_start(sm, NULL) == 0);
	CHECK(stackmap_snapshot(sm, 1) == 0);
	CHECK(stackmap_marker_seen(sm, "stackmapd: snap 1", 17, 10000) == 1);
	CHECK(stackmap_refresh_pending(sm) == 0);	/* nothing to do */
	put_map(dir, map_b, 1, 1);
	CHECK(stackmap_snapshot(sm, 2) == STACKMAP_SNAP_EXTERNAL);
	/* Then the new map gives 17 to another stack, and an event uses it. */
	put_map(dir, map_b, 2, 2);
	CHECK(stackmap_refresh_pending(sm) == 0);
	CHECK(get_tables(sm, bm, 256, 1, 1, 5000, 30000, &t) == 0);
	CHECK(t.nr_gens == 2);
	CHECK(resolve(&t, 5000, 17) == 0xb1);
	CHECK(resolve(&t, 20000, 17) == 0);	/* in both maps, not the same: unresolved */
	CHECK(resolve(&t, 20000, 3) == 0xa1);
	tables_done(&t);

	/* Reset once more: the content kept proves nothing, no entry is written. */
	put_map(dir, map_a, 1, 1);
	CHECK(stackmap_refresh_pending(sm) == -ESTALE);
	CHECK(stackmap_refresh_pending(sm) == 0);
	CHECK(get_tables(sm, bm, 256, 1, 1, 5000, 30000, &t) == 0);
	CHECK(t.nr_gens == 2);
	CHECK(resolve(&t, 5000, 17) == 0xb1);
	CHECK(resolve(&t, 20000, 3) == 0 && resolve(&t, 20000, 17) == 0);
	tables_done(&t);
	stackmap_free(sm);
	test_rmtree(dir);

	/* Our own reset, written, its generation not begun. */
	free(dir);
	dir = new_tree();
	put_map(dir, map_a, ARRAY_SIZE(map_a), 100);
	CHECK(stackmap_new(dir, &c, &sm) == 0);
	CHECK(stackmap_start(sm, NULL) == 0);
	CHECK(stackmap_snapshot(sm, 1) == 0);
	CHECK(stackmap_marker_seen(sm, "stackmapd: snap 1", 17, 10000) == 1);
	CHECK(stackmap_snapshot_final(sm) == 0);
	CHECK(stackmap_write_reset(sm) == 0);
	put_map(dir, map_b, 2, 2);
	CHECK(stackmap_refresh_pending(sm) == 0);
	CHECK(get_tables(sm, bm, 256, 1, 1, 5000, 30000, &t) == 0);
	CHECK(t.nr_gens == 2);
	CHECK(resolve(&t, 5000, 17) == 0xb1);
	CHECK(resolve(&t, 20000, 17) == 0);
	CHECK(resolve(&t, 20000, 3) == 0xa1);
	tables_done(&t);
	stackmap_free(sm);
	test_rmtree(dir);
}

/*
 * A generation whose marker after the reset was never read back: its
 * window is open, and the next reset found behind the daemon's back can
 * be dated only from what is known of it (its window's begin), never from
 * the marker that did not come. No window is ever inverted.
 */
static void test_unseen_begin_marker(void)
{
	_cleanup_free_ char *dir = new_tree();
	struct segment_generation g2, g3, g4;
	struct stackmap *sm = NULL;
	struct config c;

	test_config(&c);
	put_map(dir, map_a, ARRAY_SIZE(map_a), 100);
	CHECK(stackmap_new(dir, &c, &sm) == 0);
	CHECK(stackmap_start(sm, NULL) == 0);
	CHECK(stackmap_marker_seen(sm, "stackmapd: snap 1", 17, 100000) == 1);
	CHECK(stackmap_snapshot(sm, 1) == 0);
	CHECK(stackmap_snapshot_final(sm) == 0);
	CHECK(stackmap_write_reset(sm) == 0);
	put_map(dir, map_b, 1, 1);
	/* what generations.c asks for when neither marker was read back */
	CHECK(stackmap_begin_generation(sm, SEGMENT_GEN_RESET_EXTERNAL, &WIN(0, UINT64_MAX - 1), &g2) == 0);
	CHECK(g2.generation == 2 && g2.window_begin == 100000 - GUARD_NS &&
	      g2.window_end == UINT64_MAX);

	/* somebody else resets it; its first snapshot was the last that matched */
	put_map(dir, map_a + 1, 1, 1);		/* id 3 vanished */
	CHECK(stackmap_snapshot(sm, 2) == STACKMAP_SNAP_EXTERNAL);
	CHECK(stackmap_begin_generation(sm, SEGMENT_GEN_RESET_EXTERNAL, &WIN(0, 300000), &g3) == 0);
	CHECK_MSG(g3.generation == 3 && g3.window_begin <= g2.window_begin &&
		  g3.window_end == 300000 + GUARD_NS,
		  "[%" PRIu64 ", %" PRIu64 "]", g3.window_begin, g3.window_end);

	/* the last matching snapshot's marker came back later than the one after the reset */
	CHECK(stackmap_marker_seen(sm, "stackmapd: snap 3", 17, 500000) == 1);
	CHECK(stackmap_snapshot(sm, 3) == 0);
	put_map(dir, map_b + 1, 1, 2);		/* id 17 names another stack */
	CHECK(stackmap_snapshot(sm, 4) == STACKMAP_SNAP_EXTERNAL);
	CHECK(stackmap_begin_generation(sm, SEGMENT_GEN_RESET_EXTERNAL, &WIN(0, 400000), &g4) == 0);
	CHECK_MSG(g4.generation == 4 && g4.window_begin <= g3.window_begin &&
		  g4.window_end == 400000 + GUARD_NS,
		  "[%" PRIu64 ", %" PRIu64 "]", g4.window_begin, g4.window_end);
	stackmap_free(sm);
	test_rmtree(dir);
}

/* Text-only kernel (no stack_map_stat, no stack_map_bin): text entries, growth, resets. */
static void test_text_only(void)
{
	_cleanup_free_ char *dir = new_tree();
	struct segment_generation g;
	struct stackmap *sm = NULL;
	struct stackmap_stats st;
	uint64_t bm[2] = {};
	struct tables t;
	struct lookup l;
	struct config c;

	test_config(&c);
	c.reset_fill_percent = 1;	/* needs the stat file: never applies */
	c.reset_drops = 1;
	put_text_map(dir, map_a, ARRAY_SIZE(map_a));
	CHECK(stackmap_new(dir, &c, &sm) == 0);
	CHECK(stackmap_start(sm, NULL) == 0);
	put_text_map(dir, map_a2, ARRAY_SIZE(map_a2));
	CHECK(stackmap_snapshot(sm, 1) == 0);
	stackmap_get_stats(sm, &st);
	CHECK(!st.have_stat && !st.have_bin && st.entries == 4 && st.text_snapshots == 2);
	CHECK(stackmap_reset_due(sm, now_usec(CLOCK_MONOTONIC) + 3600 * USEC_PER_SEC) ==
	      STACKMAP_RESET_NONE);
	set_bit(bm, 17);
	set_bit(bm, 64);
	CHECK(get_tables(sm, bm, 128, 1, 1, 0, 0, &t) == 0);
	CHECK(find_entry(&t, 1, 17, &l) && l.e.flags == SEGMENT_STACK_F_TEXT && l.e.nr == 2);
	CHECK(streq(l.first, "fn_b1+0x10/0x40"));
	CHECK(find_entry(&t, 1, 64, &l) && l.e.nr == 1);
	CHECK(t.addrs.len == 0);
	tables_done(&t);

	/* A change of frames is seen in text as well. */
	put_text_map(dir, map_b, ARRAY_SIZE(map_b));
	CHECK(stackmap_snapshot(sm, 2) == STACKMAP_SNAP_EXTERNAL);
	CHECK(stackmap_begin_generation(sm, SEGMENT_GEN_RESET_EXTERNAL, &WIN(0, 100), &g) == 0);
	/* No snapshot marker seen: the window starts where generation 1 did. */
	CHECK(g.window_begin == 0);
	stackmap_free(sm);
	test_rmtree(dir);
}

/* Reset policy: fill, drops since the generation began, interval; strict reset steps. */
static void test_policy(void)
{
	_cleanup_free_ char *dir = new_tree();
	struct segment_generation g;
	struct stackmap *sm = NULL;
	struct stackmap_stats st;
	struct config c;
	struct buf b = {};
	uint64_t now;

	test_config(&c);
	c.reset_fill_percent = 50;
	c.reset_drops = 10;
	c.reset_interval_usec = 60 * USEC_PER_SEC;
	put_map(dir, map_a, ARRAY_SIZE(map_a), 100);
	put_stat(dir, 3, 1024, 100, 4);
	CHECK(stackmap_new(dir, &c, &sm) == 0);
	CHECK(stackmap_start(sm, NULL) == 0);
	now = now_usec(CLOCK_MONOTONIC);
	CHECK(stackmap_reset_due(sm, now) == STACKMAP_RESET_NONE);
	CHECK(stackmap_reset_due(sm, now + 61 * USEC_PER_SEC) == STACKMAP_RESET_INTERVAL);

	put_stat(dir, 3, 1024, 120, 13);	/* 9 more drops: not yet */
	CHECK(stackmap_snapshot(sm, 1) == 0);
	CHECK(stackmap_reset_due(sm, now) == STACKMAP_RESET_NONE);
	put_stat(dir, 3, 1024, 130, 14);
	CHECK(stackmap_snapshot(sm, 2) == 0);
	CHECK(stackmap_reset_due(sm, now) == STACKMAP_RESET_DROPS);
	put_stat(dir, 512, 1024, 140, 4 + 9);
	CHECK(stackmap_snapshot(sm, 3) == 0);
	CHECK(stackmap_reset_due(sm, now) == STACKMAP_RESET_FILL);
	CHECK(streq(stackmap_reset_reason_to_string(STACKMAP_RESET_FILL), "fill"));

	/* Strict steps; a reset in progress is never "due" again. */
	CHECK(stackmap_snapshot_final(sm) == 0);
	CHECK(stackmap_reset_due(sm, now) == STACKMAP_RESET_NONE);
	CHECK(stackmap_write_reset(sm) == 0);
	put_map(dir, map_b, ARRAY_SIZE(map_b), 1);
	CHECK(stackmap_begin_generation(sm, SEGMENT_GEN_RESET_STRICT, &WIN(100, 50), &g) == -EINVAL);
	CHECK(stackmap_begin_generation(sm, SEGMENT_GEN_ADOPTED, &WIN(50, 100), &g) == -EINVAL);
	CHECK(stackmap_begin_generation(sm, SEGMENT_GEN_RESET_STRICT, &WIN(50000, 90000), &g) == 0);
	CHECK(g.kind == SEGMENT_GEN_RESET_STRICT && g.generation == 2);
	CHECK(g.window_begin == 50000 && g.window_end == 90000);	/* no guard */
	CHECK(g.begin_cpu == SEGMENT_NO_CPU && g.end_cpu == SEGMENT_NO_CPU && !g.guard);
	/* Counters start again with the new map. */
	CHECK(stackmap_reset_due(sm, now_usec(CLOCK_MONOTONIC)) == STACKMAP_RESET_NONE);
	stackmap_get_stats(sm, &st);
	CHECK(st.resets_own == 1 && st.entries == 3 && st.drops == 0);

	CHECK(stackmap_stats_format(sm, &b) == 0);
	CHECK(b.data && strstr((const char *)b.data, "stackmap_entries=3\n"));
	CHECK(strstr((const char *)b.data, "stackmap_capacity=1024\n"));
	CHECK(strstr((const char *)b.data, "generation=2\n"));
	CHECK(strstr((const char *)b.data, "stackmap_resets=1\n"));
	buf_done(&b);

	/* Options: adopted when on, switched on and restored when off. */
	CHECK(stackmap_enable(sm) == 0);
	CHECK(stackmap_restore(sm) == 0);
	{
		char *v = get_str(dir, "options/stackmap");

		CHECK(v && v[0] == '1');
		free(v);
	}
	stackmap_free(sm);

	put_str(dir, "options/stackmap", "0\n");
	CHECK(stackmap_new(dir, &c, &sm) == 0);
	CHECK(stackmap_enable(sm) == 0);
	{
		char *v = get_str(dir, "options/stackmap");

		CHECK(v && v[0] == '1');
		free(v);
	}
	CHECK(stackmap_restore(sm) == 0);
	{
		char *v = get_str(dir, "options/stackmap");

		CHECK(v && v[0] == '0');
		free(v);
	}
	stackmap_free(sm);

	c.keep_tracing = true;
	CHECK(stackmap_new(dir, &c, &sm) == 0);
	CHECK(stackmap_enable(sm) == 0);
	CHECK(stackmap_restore(sm) == 0);
	{
		char *v = get_str(dir, "options/stackmap");

		CHECK(v && v[0] == '1');
		free(v);
	}
	stackmap_free(sm);

	rm_file(dir, "options/stackmap");
	CHECK(stackmap_new(dir, &c, &sm) == 0);
	CHECK(stackmap_enable(sm) == -EOPNOTSUPP);
	stackmap_free(sm);
	test_rmtree(dir);
}

/* Generation records past the kept limit lose their content, not their window. */
static void test_many_generations(void)
{
	_cleanup_free_ char *dir = new_tree();
	struct stackmap *sm = NULL;
	struct stackmap_stats st;
	uint64_t bm[2] = {};
	struct tables t;
	struct config c;
	const uint32_t n = STACKMAP_MAX_KEPT_GENERATIONS + 20;

	test_config(&c);
	put_map(dir, map_a, ARRAY_SIZE(map_a), 1);
	CHECK(stackmap_new(dir, &c, &sm) == 0);
	CHECK(stackmap_start(sm, NULL) == 0);
	for (uint32_t i = 0; i < n; i++) {
		CHECK(stackmap_snapshot_final(sm) == 0);
		CHECK(stackmap_write_reset(sm) == 0);
		put_map(dir, i % 2 ? map_a : map_b, 3, 1);
		CHECK(stackmap_begin_generation(sm, SEGMENT_GEN_RESET_LOSSLESS,
						&WIN(1000 * i + 100, 1000 * i + 200), NULL) == 0);
	}
	stackmap_get_stats(sm, &st);
	CHECK(st.generation == n + 1 && st.resets_own == n);
	/*
	 * Id 3 has the same stack in map_a and map_b: stored once for all
	 * generations; ids 17, 100 and 200 change and are stored per generation.
	 */
	CHECK(st.stored_stacks <= 2 * STACKMAP_MAX_KEPT_GENERATIONS + 1);
	set_bit(bm, 3);
	CHECK(get_tables(sm, bm, 128, 1, n + 1, 0, UINT64_MAX, &t) == 0);
	CHECK(t.nr_gens == (int)n + 1);
	CHECK(stacktab_size(t.tab) == STACKMAP_MAX_KEPT_GENERATIONS);
	tables_done(&t);
	stackmap_free(sm);
	test_rmtree(dir);
}

/* Marker lines count only with this run's key: a forged one is refused. */
static void test_marker_key(void)
{
	char key[STACKMAP_MARKER_KEY_LEN + 1], other[STACKMAP_MARKER_KEY_LEN + 1];
	char line[128];
	size_t len = 0;

	CHECK(stackmap_marker_key_new(key) == 0);
	CHECK(strlen(key) == STACKMAP_MARKER_KEY_LEN);
	CHECK(stackmap_marker_key_new(other) == 0);
	CHECK(!streq(key, other));

	(void)snprintf(line, sizeof(line), "stackmapd: gen 3 begin %s\n", key);
	CHECK(stackmap_marker_unkey(line, strlen(line), key, &len) == 1);
	CHECK(len == strlen("stackmapd: gen 3 begin"));
	CHECK(strncmp(line, "stackmapd: gen 3 begin", len) == 0);

	/* forged: no key, another key, the key without its space, a truncated key */
	len = 7;
	CHECK(stackmap_marker_unkey("stackmapd: gen 3 begin", 22, key, &len) == 0);
	(void)snprintf(line, sizeof(line), "stackmapd: gen 3 begin %s", other);
	CHECK(stackmap_marker_unkey(line, strlen(line), key, &len) == 0);
	(void)snprintf(line, sizeof(line), "stackmapd: gen 3 begin%s", key);
	CHECK(stackmap_marker_unkey(line, strlen(line), key, &len) == 0);
	(void)snprintf(line, sizeof(line), "stackmapd: gen 3 begin %.*s", STACKMAP_MARKER_KEY_LEN - 1, key);
	CHECK(stackmap_marker_unkey(line, strlen(line), key, &len) == 0);
	CHECK(stackmap_marker_unkey(key, strlen(key), key, &len) == 0);
	CHECK(len == 7);
}

/*
 * stack_map says EBUSY while another reset runs. A plain file cannot, so
 * the write of the reset is replaced: busy for busy_left calls, then done.
 */
static int busy_left, busy_calls;

static int busy_write(int fd)
{
	busy_calls++;
	if (busy_left > 0) {
		busy_left--;
		return -EBUSY;
	}
	return write_all(fd, "0", 1);
}

static void test_reset_busy(void)
{
	_cleanup_free_ char *dir = new_tree();
	struct stackmap *sm = NULL;
	struct stackmap_stats st;
	struct config c;
	struct buf b = {};

	test_config(&c);
	put_map(dir, map_a, ARRAY_SIZE(map_a), 100);
	CHECK(stackmap_new(dir, &c, &sm) == 0);
	CHECK(stackmap_start(sm, NULL) == 0);
	sm->write_reset = busy_write;

	/* busy through every retry: given up, counted, the generation goes on */
	busy_left = 1000;
	busy_calls = 0;
	CHECK(stackmap_snapshot_final(sm) == 0);
	CHECK(stackmap_write_reset(sm) == -EBUSY);
	CHECK_MSG(busy_calls > 1, "%d", busy_calls);
	stackmap_get_stats(sm, &st);
	CHECK(st.reset_busy == 1 && st.resets_own == 0 && st.generation == 1);
	CHECK(stackmap_stats_format(sm, &b) == 0);
	CHECK(b.data && strstr((const char *)b.data, "\nstackmap_reset_busy=1\n"));
	buf_done(&b);
	CHECK(stackmap_snapshot(sm, 1) == 0);

	/* busy twice, then free: the reset is made and nothing more is counted */
	busy_left = 2;
	busy_calls = 0;
	CHECK(stackmap_snapshot_final(sm) == 0);
	CHECK(stackmap_write_reset(sm) == 0);
	CHECK(busy_calls == 3);
	stackmap_get_stats(sm, &st);
	CHECK(st.reset_busy == 1);
	stackmap_free(sm);
	test_rmtree(dir);
}

int main(void)
{
	const char *s = getenv("top_srcdir");

	srcdir = strdup(s ? s : ".");
	test_real_capture();
	test_byte_orders();
	test_malformed();
	test_external();
	test_generations_and_tables();
	test_final_finds_external();
	test_last_look_at_open();
	test_unbegun_reset();
	test_unseen_begin_marker();
	test_text_only();
	test_policy();
	test_many_generations();
	test_marker_key();
	test_reset_busy();
	free(srcdir);
	return tests_done("test-stackmap");
}
