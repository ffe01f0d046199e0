/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * pprof export, what profiles for continuous-profiling backends add
 * (pprof_set_pid_cpu_labels(), pprof_add_comment(), pprof_add_lost()):
 * the known sample stream without pid and cpu labels, with comments, a
 * start and a duration, and a "[lost events]" sample in every sample type
 * that leaves the default type alone; decoded back with zlib and
 * protobuf-c.
 */
#include <fcntl.h>

#include <zlib.h>

#include "helpers.h"
#include "pprof.h"
#include "profile.pb-c.h"
#include "sample-stream.h"

static const char *str(const Perftools__Profiles__Profile *p, int64_t i)
{
	return i >= 0 && (size_t)i < p->n_string_table ? p->string_table[i] : "(bad index)";
}

static Perftools__Profiles__Profile *write_and_read(struct pprof *pp, const char *dir)
{
	static uint8_t data[1 << 20];
	char path[4096];
	gzFile gz;
	int fd, n;

	(void)snprintf(path, sizeof(path), "%s/p.pb.gz", dir);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	CHECK(fd >= 0);
	CHECK(pprof_write(pp, fd) == 0);
	close(fd);
	gz = gzopen(path, "rb");
	n = gz ? gzread(gz, data, sizeof(data)) : -1;
	if (gz)
		gzclose(gz);
	CHECK(n > 0);
	return perftools__profiles__profile__unpack(NULL, (size_t)(n > 0 ? n : 0), data);
}

int main(void)
{
	static const struct sample_frame unresolved = { PPROF_UNRESOLVED_ADDR, "[unresolved stack]" };
	_cleanup_(pprof_freep) struct pprof *pp = pprof_new();
	Perftools__Profiles__Profile *p;
	char *dir = test_tmpdir();
	struct sample s;
	size_t lost_seen = 0;
	bool unresolved_seen = false;

	CHECK(pp);
	pprof_set_pid_cpu_labels(pp, false);
	for (size_t i = 0; i < ARRAY_SIZE(test_samples); i++)
		CHECK(pprof_add(pp, &test_samples[i]) == 0);
	s = test_samples[0];
	s.nr_frames = 1;
	s.frames = &unresolved;
	CHECK(pprof_add(pp, &s) == 0);
	/* more lost than any event type counts: the default type stays kmalloc */
	CHECK(pprof_add_lost(pp, 1000, 1) == 0);
	CHECK(pprof_add_comment(pp, "host=web-17") == 0);
	CHECK(pprof_add_comment(pp, "event=kmalloc") == 0);
	pprof_set_time(pp, UINT64_C(1764558720000000000), UINT64_C(60000000000));
	p = write_and_read(pp, dir);
	CHECK(p);
	if (!p)
		return tests_done("test-pprof-fleet");

	CHECK(p->time_nanos == INT64_C(1764558720000000000));
	CHECK(p->duration_nanos == INT64_C(60000000000));
	CHECK(p->n_comment == 2 && streq(str(p, p->comment[0]), "host=web-17") &&
	      streq(str(p, p->comment[1]), "event=kmalloc"));
	CHECK(streq(str(p, p->default_sample_type), "kmalloc"));
	for (size_t i = 0; i < p->n_sample; i++) {
		const Perftools__Profiles__Sample *x = p->sample[i];
		const Perftools__Profiles__Location *l;
		const char *fn;

		/* comm only */
		CHECK_MSG(x->n_label == 1 && streq(str(p, x->label[0]->key), "comm"), "%zu labels",
			  x->n_label);
		if (!x->n_location_id)
			continue;	/* an event without a stack */
		l = p->location[x->location_id[0] - 1];
		fn = str(p, p->function[l->line[0]->function_id - 1]->name);
		if (streq(fn, "[lost events]")) {
			int64_t sum = 0;

			lost_seen++;
			CHECK(x->n_location_id == 1 && l->address == PPROF_LOST_ADDR);
			for (size_t t = 0; t < x->n_value; t++)
				sum += x->value[t];
			CHECK(sum == 1000);
		}
		if (streq(fn, "[unresolved stack]")) {
			unresolved_seen = true;
			CHECK(l->address == PPROF_UNRESOLVED_ADDR);
		}
	}
	/* one in every sample type (event) the profile has */
	CHECK_MSG(lost_seen == p->n_sample_type, "%zu of %zu", lost_seen, p->n_sample_type);
	CHECK(unresolved_seen);
	perftools__profiles__profile__free_unpacked(p, NULL);
	test_rmtree(dir);
	free(dir);
	return tests_done("test-pprof-fleet");
}
