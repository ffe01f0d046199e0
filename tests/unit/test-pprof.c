/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * pprof export: the known sample stream gives a gzipped profile that
 * decodes back (zlib, protobuf-c) to the expected sample types, counts,
 * functions and labels, and that `go tool pprof -top` reads with the
 * expected functions and counts (skipped without go, failing with CI=true).
 */
#include <fcntl.h>
#include <sys/wait.h>

#include <zlib.h>

#include "helpers.h"
#include "pprof.h"
#include "profile.pb-c.h"
#include "sample-stream.h"

static const char *str(const Perftools__Profiles__Profile *p, int64_t i)
{
	return i >= 0 && (size_t)i < p->n_string_table ? p->string_table[i] : "(bad index)";
}

/* Sum of the value of sample type `type` over samples whose innermost function is name. */
static int64_t flat(const Perftools__Profiles__Profile *p, const char *type, const char *name)
{
	size_t t;
	int64_t sum = 0;

	for (t = 0; t < p->n_sample_type; t++)
		if (streq(str(p, p->sample_type[t]->type), type))
			break;
	if (t == p->n_sample_type)
		return -1;
	for (size_t i = 0; i < p->n_sample; i++) {
		const Perftools__Profiles__Sample *s = p->sample[i];
		const Perftools__Profiles__Location *l;
		const Perftools__Profiles__Function *f;

		if (!s->n_location_id || s->n_value != p->n_sample_type)
			continue;
		l = p->location[s->location_id[0] - 1];
		f = p->function[l->line[0]->function_id - 1];
		if (streq(str(p, f->name), name))
			sum += s->value[t];
	}
	return sum;
}

static void check_decoded(const char *path)
{
	uint8_t data[65536];
	gzFile gz = gzopen(path, "rb");
	int n = gz ? gzread(gz, data, sizeof(data)) : -1;
	Perftools__Profiles__Profile *p;
	bool labels = false;

	if (gz)
		gzclose(gz);
	CHECK(n > 0);
	p = perftools__profiles__profile__unpack(NULL, (size_t)(n > 0 ? n : 0), data);
	CHECK(p);
	if (!p)
		return;
	CHECK(p->n_string_table > 0 && streq(p->string_table[0], ""));
	CHECK(p->n_sample_type == 3);
	CHECK(streq(str(p, p->default_sample_type), "kmalloc"));
	CHECK_MSG(flat(p, "kmalloc", "__kmalloc") == 6, "%" PRId64, flat(p, "kmalloc", "__kmalloc"));
	CHECK(flat(p, "sched_switch", "__schedule") == 2);
	CHECK(flat(p, "kmalloc", "__schedule") == 0);
	CHECK(flat(p, "irq_handler_entry", "__kmalloc") == 0);
	/* identical samples are merged: 3 kmalloc stacks x tasks + 2 sched + 1 irq */
	CHECK_MSG(p->n_sample == 6, "%zu", p->n_sample);
	/* __kmalloc has two addresses: two locations, one function */
	CHECK(p->n_location == 8 && p->n_function == 7);
	for (size_t i = 0; i < p->n_sample; i++) {
		const Perftools__Profiles__Sample *s = p->sample[i];

		if (s->n_label == 3 && streq(str(p, s->label[0]->key), "comm") &&
		    streq(str(p, s->label[0]->str), "cat") && s->label[1]->num == 200 &&
		    streq(str(p, s->label[2]->key), "cpu") && s->label[2]->num == 1)
			labels = true;
	}
	CHECK(labels);
	/* numeric labels carry a unit, or pprof drops the value 0 (CPU 0, pid 0) */
	for (size_t i = 0; i < p->n_sample; i++)
		for (size_t j = 1; j < p->sample[i]->n_label; j++)
			CHECK(p->sample[i]->label[j]->num_unit != 0);
	perftools__profiles__profile__free_unpacked(p, NULL);
}

/* Run go tool pprof -top on path; its output (allocated) or NULL if go is missing. */
static char *pprof_top(const char *path, const char *index)
{
	_cleanup_free_ char *cmd = NULL;
	char *out = NULL;
	size_t len = 0, n;
	char chunk[4096];
	FILE *f;

	if (strprintf(&cmd, "HOME=${HOME:-/tmp} go tool pprof -top -sample_index=%s '%s' 2>&1",
		      index, path) < 0)
		return NULL;
	f = popen(cmd, "r");
	if (!f)
		return NULL;
	while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0) {
		char *o = realloc(out, len + n + 1);

		if (!o)
			break;
		out = o;
		memcpy(out + len, chunk, n);
		len += n;
		out[len] = '\0';
	}
	CHECK(pclose(f) == 0);
	return out;
}

/* A line of text that matches "flat flat% sum% cum cum% name" with these values. */
static bool has_row(const char *text, int flat_v, int cum_v, const char *name)
{
	for (const char *l = text; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
		char fname[128];
		int a, b;

		if (sscanf(l, " %d %*f%% %*f%% %d %*f%% %127s", &a, &b, fname) == 3 && a == flat_v &&
		    b == cum_v && streq(fname, name))
			return true;
	}
	return false;
}

static void check_go_pprof(const char *path)
{
	_cleanup_free_ char *top = NULL, *sched = NULL;

	if (!test_have_tool("go", "the go tool pprof check"))
		return;
	top = pprof_top(path, "kmalloc");
	CHECK_MSG(top, "go tool pprof gave no output");
	if (!top)
		return;
	CHECK_MSG(strstr(top, "Showing nodes accounting for 6, 100% of 6 total"), "%s", top);
	CHECK_MSG(has_row(top, 6, 6, "__kmalloc"), "%s", top);
	CHECK_MSG(has_row(top, 0, 6, "entry_SYSCALL_64"), "%s", top);
	CHECK_MSG(has_row(top, 0, 3, "do_sys_open"), "%s", top);
	CHECK_MSG(has_row(top, 0, 2, "seq_read"), "%s", top);
	CHECK_MSG(has_row(top, 0, 1, "0xffffffffc0001234"), "%s", top);
	sched = pprof_top(path, "sched_switch");
	CHECK_MSG(sched && has_row(sched, 2, 2, "__schedule"), "%s", sched);
}

int main(void)
{
	_cleanup_(pprof_freep) struct pprof *p = pprof_new();
	_cleanup_free_ char *dir = test_tmpdir(), *path = NULL;
	int fd;

	CHECK(p);
	for (size_t i = 0; i < ARRAY_SIZE(test_samples); i++)
		CHECK(pprof_add(p, &test_samples[i]) == 0);
	pprof_set_time(p, UINT64_C(1764547200) * 1000000000, 7000);
	CHECK(strprintf(&path, "%s/profile.pb.gz", dir) == 0);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	CHECK(fd >= 0);
	CHECK(pprof_write(p, fd) == 0);
	close(fd);

	check_decoded(path);
	check_go_pprof(path);
	if (!getenv("PPROF_KEEP"))
		test_rmtree(dir);
	else
		fprintf(stderr, "kept %s\n", path);
	return tests_done("test-pprof");
}
