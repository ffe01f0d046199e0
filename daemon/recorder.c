/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <fcntl.h>
#include <inttypes.h>
#include <sys/eventfd.h>
#include <sys/utsname.h>
#include <tracefs.h>

#include "archive.h"
#include "audit.h"
#include "config.h"
#include "generations.h"
#include "cpu_reader.h"
#include "ksyms.h"
#include "log.h"
#include "recorder-internal.h"
#include "tracing.h"
#include "transcode.h"
#include "util.h"

#define STACK_REF_EVENT_ID 65000
#define TRIGGER_POLL_USEC (250 * USEC_PER_MSEC)
#define DEDUP_MAX_STACKS (1u << 20)

static int on_trigger_timer(sd_event_source *s, uint64_t usec, void *userdata);
static void flight_trigger_save(struct recorder *rec);

static bool flight(const struct recorder *rec)
{
	return rec->cfg->record_mode == CONFIG_RECORD_FLIGHT;
}

static void files_free(struct recorder *rec)
{
	for (size_t i = 0; i < rec->nr_files; i++) {
		free(rec->files[i].name);
		free(rec->files[i].data);
	}
	free(rec->files);
	rec->files = NULL;
	rec->nr_files = 0;
}

static int collect_file(const char *name, const void *data, size_t len, void *userdata)
{
	struct recorder *rec = userdata;
	struct file_item *f;

	f = realloc(rec->files, (rec->nr_files + 1) * sizeof(*f));
	if (!f)
		return -ENOMEM;
	rec->files = f;
	f = &rec->files[rec->nr_files];
	f->name = strdup(name);
	f->data = malloc(len + 1);
	if (!f->name || !f->data) {
		free(f->name);
		free(f->data);
		return -ENOMEM;
	}
	/* NUL-terminated too: formats are searched as text */
	memcpy(f->data, data, len);
	((char *)f->data)[len] = '\0';
	f->len = len;
	rec->nr_files++;
	return 0;
}

int recorder_new(const struct config *c, struct recorder **ret, char **ret_error)
{
	struct recorder *rec;
	int r;

	rec = calloc(1, sizeof(*rec));
	if (!rec)
		return -ENOMEM;
	rec->cfg = c;
	rec->notify_fd = -1;
	rec->state = RECORDER_STOPPED;
	r = tracing_open(NULL, c, &rec->tracing);
	if (r < 0) {
		(void)strprintf(ret_error, "cannot open tracefs: %s", strerror(-r));
		recorder_free(rec);
		return r;
	}
	r = tracing_validate(rec->tracing, ret_error);
	if (r < 0) {
		recorder_free(rec);
		return r;
	}
	*ret = rec;
	return 0;
}

/* ---- segment head and tail ---- */

static int write_meta(struct recorder *rec, struct archive_segment *seg)
{
	_cleanup_free_ char *clock = tracing_clock(rec->tracing);
	struct buf m = { 0 };
	int r;

	r = buf_printf(&m,
		       "format_version=%d\nproducer=stackmapd %s\nboot_id=%s\n"
		       "kernel_release=%s\nkernel_version=%s\nhostname=%s\nmachine=%s\n"
		       "page_size=%u\nnr_cpus=%u\nclock=%s\nbyte_order=%s\nlong_size=%zu\n"
		       "instance=%s\nrecording_id=%s\nsegment_seq=%" PRIu64 "\n"
		       "opened_usec=%" PRIu64 "\nstack_mode=%s\nstack_ref_event_id=%d\n"
		       "stack_id_event_id=%d\nkernel_stack_event_id=%d\nprint_event_id=%d\n",
		       SEGMENT_VERSION, PACKAGE_VERSION, rec->boot_id ? rec->boot_id : "",
		       rec->uts.release, rec->uts.version, rec->hostname, rec->uts.machine,
		       rec->layout.page_size, rec->nr_cpus, clock ? clock : "local",
		       __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__ ? "little" : "big", sizeof(long),
		       tracing_instance_name(rec->tracing), rec->recording_id, seg->seq,
		       seg->opened_realtime_usec, rec->gens ? "stackmap" : "full",
		       rec->layout.stack_ref_id,
		       MAX(rec->layout.stack_id_id, 0), rec->layout.kernel_stack_id,
		       rec->layout.print_id);
	if (r == 0) {
		r = buf_printf(&m, "online_cpus=");
		for (unsigned i = 0; r == 0 && i < rec->nr_readers; i++)
			r = buf_printf(&m, "%s%d", i ? "," : "", cpu_reader_cpu(rec->readers[i]));
		if (r == 0)
			r = buf_printf(&m, "\n");
	}
	if (r == 0)
		r = segment_writer_append(seg->writer, SEGMENT_REC_META, SEGMENT_NO_CPU, m.data,
					  m.len, 0, NULL);
	buf_done(&m);
	return r;
}

static int segment_begin(void *userdata, struct archive_segment *seg)
{
	struct recorder *rec = userdata;
	int level = rec->cfg->compression_level;
	int r;

	r = write_meta(rec, seg);
	if (r < 0)
		return r;
	if (rec->gens)
		generations_segment_begin(rec->gens, seg);
	if (rec->cfg->text) {
		r = segment_writer_append_file(seg->writer, "config", rec->cfg->text,
					       strlen(rec->cfg->text), level);
		if (r < 0)
			return r;
	}
	for (size_t i = 0; i < rec->nr_files; i++) {
		r = segment_writer_append_file(seg->writer, rec->files[i].name, rec->files[i].data,
					       rec->files[i].len, level);
		if (r < 0)
			return r;
	}
	return 0;
}

static int append_file_to(const char *name, const void *data, size_t len, void *userdata)
{
	struct segment_writer *w = userdata;

	return segment_writer_append_file(w, name, data, len, 1);
}

static int write_cpu_stats(struct recorder *rec, struct archive_segment *seg)
{
	struct buf s = { 0 };
	int r = 0;

	for (unsigned i = 0; r == 0 && i < rec->nr_readers; i++) {
		int cpu = cpu_reader_cpu(rec->readers[i]);
		struct tracing_cpu_stats now = { 0 }, *base = &rec->kstats_base[cpu];
		struct cpu_reader_stats rs;
		uint64_t kernel_lost, overrun, on_pages;

		if (tracing_cpu_stats(rec->tracing, cpu, &now) < 0)
			continue;
		cpu_reader_get_stats(rec->readers[i], &rs);
		/*
		 * Dropped events (buffer full, no overwrite) appear on no page.
		 * Overwritten ones (overwrite: the flight recorder) are counted
		 * in the header of the next page read, already in the index:
		 * only what the pages did not count is added.
		 */
		kernel_lost = now.dropped - MIN(now.dropped, base->dropped);
		overrun = now.overrun - MIN(now.overrun, base->overrun);
		on_pages = (unsigned)cpu < seg->nr_cpus ? seg->cpus[cpu].lost_events : 0;
		if (overrun > on_pages)
			kernel_lost += overrun - on_pages;
		if ((unsigned)cpu < seg->nr_cpus)
			seg->cpus[cpu].lost_events += kernel_lost;
		buf_reset(&s);
		r = buf_printf(&s,
			       "entries=%" PRIu64 "\noverrun=%" PRIu64 "\ncommit_overrun=%" PRIu64
			       "\ndropped=%" PRIu64 "\nread_events=%" PRIu64
			       "\nlost_events=%" PRIu64 "\npages=%" PRIu64 "\nbytes=%" PRIu64
			       "\nparse_errors=%" PRIu64 "\n",
			       now.entries, now.overrun, now.commit_overrun, now.dropped,
			       now.read_events, rs.lost_events + kernel_lost, rs.pages, rs.raw_bytes,
			       rs.parse_errors);
		if (r == 0)
			r = segment_writer_append(seg->writer, SEGMENT_REC_STATS, (uint32_t)cpu,
						  s.data, s.len, 0, NULL);
		*base = now;
	}
	buf_done(&s);
	return r;
}

static int segment_end(void *userdata, struct archive_segment *seg)
{
	struct recorder *rec = userdata;
	struct buf syms = { 0 };
	int r;

	r = tracing_collect_tasks(rec->tracing, append_file_to, seg->writer);
	if (r < 0)
		return r;
	if (rec->gens) {
		r = generations_segment_end(rec->gens, seg);
		if (r < 0)
			return r;
	}
	if (rec->ksyms && seg->addrs.len) {
		r = ksyms_subset(rec->ksyms, (const uint64_t *)seg->addrs.data, seg->addrs.len / 8,
				 &syms);
		if (r >= 0 && syms.len)
			r = segment_writer_append_file(seg->writer, "kallsyms", syms.data, syms.len,
						       rec->cfg->compression_level);
		buf_done(&syms);
		if (r < 0)
			return r;
	}
	if (rec->gens) {
		uint64_t refs = 0, unresolved = 0;

		/* exactly what a reader of this segment will not resolve */
		r = audit_unresolved(segment_writer_path(seg->writer), &rec->layout, &refs,
				     &unresolved);
		if (r < 0)
			log_errno(LOG_WARNING, r, "cannot count the unresolved stack ids of '%s', continuing",
				  segment_writer_path(seg->writer));
		seg->unresolved = unresolved;
		rec->unresolved += unresolved;
		if (unresolved)
			log_notice("%" PRIu64 " of %" PRIu64 " stack ids in '%s' cannot be resolved "
				   "(reset windows)", unresolved, refs, segment_writer_path(seg->writer));
	}
	r = write_cpu_stats(rec, seg);
	if (r < 0 || !rec->gens)
		return r;
	r = generations_stats(rec->gens, &syms);
	if (r == 0)
		r = segment_writer_append(seg->writer, SEGMENT_REC_STATS, SEGMENT_NO_CPU, syms.data,
					  syms.len, 0, NULL);
	buf_done(&syms);
	return r;
}

static void segment_finished(void *userdata, const char *path, const struct archive_segment *seg)
{
	struct recorder *rec = userdata;
	uint64_t events = 0, lost = 0;
	char f_path[4200], f_lost[64];
	const char *fields[] = { f_path, f_lost, NULL };

	for (unsigned i = 0; i < seg->nr_cpus; i++) {
		events += seg->cpus[i].events;
		lost += seg->cpus[i].lost_events;
	}
	(void)snprintf(f_path, sizeof(f_path), "SEGMENT=%s", path);
	(void)snprintf(f_lost, sizeof(f_lost), "LOST_EVENTS=%" PRIu64, lost);
	log_struct(lost ? LOG_WARNING : LOG_INFO, fields,
		   "finished segment '%s': %" PRIu64 " events, %" PRIu64 " lost, %" PRIu64
		   " daemon stacks",
		   path, events, lost, seg->dstacks);
	if (rec->on_segment)
		rec->on_segment(rec->userdata, path);
}

static const struct archive_hooks hooks = {
	.begin = segment_begin,
	.end = segment_end,
	.finished = segment_finished,
};

/* ---- flush barriers ---- */

struct flush_op *recorder_flush_all(struct recorder *rec, const struct segment_generation *boundary,
				    void (*cont)(struct recorder *, struct flush_op *),
				    recorder_done_fn done, void *userdata)
{
	struct flush_op *op = calloc(1, sizeof(*op));

	if (!op)
		return NULL;
	op->tokens = calloc(rec->nr_readers ? rec->nr_readers : 1, sizeof(*op->tokens));
	if (!op->tokens) {
		free(op);
		return NULL;
	}
	op->cont = cont;
	op->done = done;
	op->userdata = userdata;
	op->next = rec->ops;
	rec->ops = op;
	for (unsigned i = 0; i < rec->nr_readers; i++)
		op->tokens[i] = cpu_reader_request_flush(rec->readers[i], boundary);
	return op;
}

static void flush_op_free(struct flush_op *op)
{
	free(op->tokens);
	free(op);
}

static void process_ops(struct recorder *rec)
{
	struct flush_op **pp = &rec->ops;

	while (*pp) {
		struct flush_op *op = *pp;
		bool all = true;

		for (unsigned i = 0; i < rec->nr_readers && all; i++)
			all = cpu_reader_flushed(rec->readers[i], op->tokens[i]);
		if (!all) {
			pp = &op->next;
			continue;
		}
		*pp = op->next;
		op->cont(rec, op);
		flush_op_free(op);
		/* cont may have added operations: start over */
		pp = &rec->ops;
	}
}

static int on_notify(sd_event_source *s, int fd, uint32_t revents, void *userdata)
{
	struct recorder *rec = userdata;
	uint64_t v;

	(void)!read(fd, &v, sizeof(v));
	for (unsigned i = 0; i < rec->nr_readers; i++) {
		struct page_marker m[16];

		size_t n;

		while ((n = cpu_reader_take_markers(rec->readers[i], m, ARRAY_SIZE(m))) > 0)
			for (size_t k = 0; k < n && rec->gens; k++)
				generations_marker(rec->gens, &m[k]);
	}
	process_ops(rec);
	return 0;
}

int recorder_rotate_now(struct recorder *rec, const char *why, char **ret_path)
{
	int r = archive_rotate(rec->archive, false, ret_path);

	if (r < 0)
		return log_errno(LOG_ERR, r, "cannot finish the segment (%s), continuing in it", why);
	return 0;
}

static int on_rotate_request(sd_event_source *s, int fd, uint32_t revents, void *userdata)
{
	struct recorder *rec = userdata;

	/* a reset in progress ends with a rotation of its own */
	if (archive_take_rotate_request(rec->archive) && rec->state == RECORDER_RECORDING &&
	    !(rec->gens && generations_busy(rec->gens)))
		(void)recorder_rotate_now(rec, "size or age", NULL);
	return 0;
}

static void arm_age_timer(struct recorder *rec)
{
	uint64_t left = archive_age_left(rec->archive);

	if (left == UINT64_MAX) {
		(void)sd_event_source_set_enabled(rec->age_timer, SD_EVENT_OFF);
		return;
	}
	(void)sd_event_source_set_time_relative(rec->age_timer, MAX(left, USEC_PER_SEC / 10));
	(void)sd_event_source_set_enabled(rec->age_timer, SD_EVENT_ONESHOT);
}

static int on_age_timer(sd_event_source *s, uint64_t usec, void *userdata)
{
	struct recorder *rec = userdata;

	if (rec->state == RECORDER_RECORDING && archive_rotation_due(rec->archive) &&
	    !(rec->gens && generations_busy(rec->gens)))
		(void)recorder_rotate_now(rec, "age", NULL);
	arm_age_timer(rec);
	return 0;
}

static void flushed_periodic(struct recorder *rec, struct flush_op *op)
{
}

static int on_flush_timer(sd_event_source *s, uint64_t usec, void *userdata)
{
	struct recorder *rec = userdata;

	/* bound what a power cut can lose: partial pages go to the archive too */
	if (rec->state == RECORDER_RECORDING && !flight(rec)) {
		(void)recorder_flush_all(rec, NULL, flushed_periodic, NULL, NULL);
		if (rec->gens)
			generations_tick(rec->gens);
	}
	(void)sd_event_source_set_time_relative(s, rec->cfg->snapshot_interval_usec);
	return 0;
}

/* ---- start and stop ---- */

/*
 * Reading pages allocates and schedules: left in, the recorder would record
 * itself (tens of thousands of events a second on an idle machine).
 */
static void exclude_self(struct recorder *rec)
{
	int pids[1 + 256];
	size_t n = 0;
	int r;

	pids[n++] = getpid();
	for (unsigned i = 0; i < rec->nr_readers && n < ARRAY_SIZE(pids); i++)
		if (cpu_reader_tid(rec->readers[i]))
			pids[n++] = cpu_reader_tid(rec->readers[i]);
	r = tracing_exclude_pids(rec->tracing, pids, n);
	if (r < 0 && r != -EOPNOTSUPP)
		log_errno(LOG_WARNING, r, "cannot exclude the recorder's own tasks, continuing");
}

/* The kernel stack map, where the config wants it and the kernel has it. */
static int setup_stackmap(struct recorder *rec)
{
	const struct config *c = rec->cfg;
	int r;

	if (c->stackmap == CONFIG_STACKMAP_OFF || (c->instance && *c->instance))
		return 0;
	r = generations_new(rec, &rec->gens);
	if (r == -EOPNOTSUPP && c->stackmap == CONFIG_STACKMAP_AUTO) {
		log_info("this kernel has no stack map: recording full stacks");
		return 0;
	}
	if (r < 0)
		return log_errno(LOG_ERR, r, "cannot use the kernel stack map");
	log_info("using the kernel stack map: stacks are stored once per segment");
	return 0;
}

static int setup_layout(struct recorder *rec)
{
	_cleanup_free_ char *hp = NULL, *path = NULL;
	int r, id;

	if (strprintf(&path, "%s/events/header_page", tracing_dir(rec->tracing)) < 0)
		return -ENOMEM;
	r = read_file(path, &hp, NULL);
	if (r < 0)
		return r;
	rec->layout.page_size = (unsigned)tracing_page_size(rec->tracing);
	rec->layout.kernel_stack_id = tracing_event_id(rec->tracing, "ftrace", "kernel_stack");
	rec->layout.stack_id_id = tracing_event_id(rec->tracing, "ftrace", "stack_id");
	rec->layout.print_id = tracing_event_id(rec->tracing, "ftrace", "print");
	if (page_layout_parse(hp, &rec->layout) < 0) {
		/* an unknown page layout: store pages as read, without transcoding */
		log_warn("unknown ring-buffer page layout, storing pages unchanged");
		rec->layout.commit_offset = 8;
		rec->layout.commit_size = sizeof(long);
		rec->layout.data_offset = 8 + sizeof(long);
		rec->layout.stack_ref_id = -1;
		return 0;
	}
	/* an id no format stored in the segment uses */
	id = STACK_REF_EVENT_ID;
	for (bool clash = true; clash; ) {
		clash = false;
		for (size_t i = 0; i < rec->nr_files; i++) {
			const char *p = strstr(rec->files[i].data, "\nID: ");

			if (startswith(rec->files[i].name, "events/") && p && atoi(p + 5) == id) {
				id--;
				clash = true;
			}
		}
	}
	rec->layout.stack_ref_id = id;
	return 0;
}

static int add_stack_ref_format(struct recorder *rec)
{
	struct buf f = { 0 };
	int r;

	if (rec->layout.stack_ref_id < 0)
		return 0;
	r = page_layout_stack_ref_format(rec->layout.stack_ref_id, &f);
	if (r == 0)
		r = collect_file("events/stackmapd/stack_ref/format", f.data, f.len, rec);
	buf_done(&f);
	return r;
}

static void read_host_identity(struct recorder *rec)
{
	char *id = NULL;
	uint8_t rnd[16];
	int fd;

	(void)uname(&rec->uts);
	if (gethostname(rec->hostname, sizeof(rec->hostname) - 1) < 0)
		strcpy(rec->hostname, "unknown");
	if (read_file("/proc/sys/kernel/random/boot_id", &id, NULL) == 0) {
		id[strcspn(id, "\n")] = '\0';
		rec->boot_id = id;
	}
	memset(rnd, 0, sizeof(rnd));
	fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		(void)!read(fd, rnd, sizeof(rnd));
		close(fd);
	}
	for (size_t i = 0; i < sizeof(rnd); i++)
		(void)snprintf(rec->recording_id + 2 * i, 3, "%02x", rnd[i] ^ (uint8_t)(getpid() >> (i % 4)));
}

static struct rotation_policy policy_of(const struct config *c)
{
	struct rotation_policy p = {
		.segment_size = c->segment_size,
		.segment_age_usec = c->segment_age_usec,
		.max_size = c->max_size,
		.max_segments = c->max_segments,
		.keep_free_percent = c->keep_free_percent,
	};

	return p;
}

static int open_readers(struct recorder *rec)
{
	int n = tracing_nr_cpus(rec->tracing);

	if (n <= 0)
		return -ENODEV;
	rec->nr_cpus = (unsigned)n;
	rec->readers = calloc(rec->nr_cpus, sizeof(*rec->readers));
	rec->kstats_base = calloc(rec->nr_cpus, sizeof(*rec->kstats_base));
	rec->rate_events = calloc(rec->nr_cpus, sizeof(*rec->rate_events));
	rec->cpu_status = calloc(rec->nr_cpus, sizeof(*rec->cpu_status));
	if (!rec->readers || !rec->kstats_base || !rec->rate_events || !rec->cpu_status)
		return -ENOMEM;
	for (int cpu = 0; cpu < n; cpu++) {
		struct cpu_reader_params p = {
			.instance = tracing_instance(rec->tracing),
			.cpu = cpu,
			.layout = &rec->layout,
			.dedup = rec->layout.stack_ref_id >= 0 ? rec->dedup : NULL,
			.archive = rec->archive,
			.frame_size = rec->cfg->frame_size,
			.compression_level = rec->cfg->compression_level,
			.notify_fd = rec->notify_fd,
		};
		int r;

		if (!tracing_cpu_online(rec->tracing, cpu))
			continue;
		r = cpu_reader_new(&p, &rec->readers[rec->nr_readers]);
		if (r < 0)
			return log_errno(LOG_ERR, r, "cannot open the ring buffer of CPU %d", cpu);
		rec->nr_readers++;
	}
	return 0;
}

static int add_sources(struct recorder *rec)
{
	int r;

	r = sd_event_add_io(rec->event, &rec->notify_src, rec->notify_fd, EPOLLIN, on_notify, rec);
	if (r < 0)
		return r;
	r = sd_event_add_io(rec->event, &rec->rotate_src, archive_rotate_fd(rec->archive), EPOLLIN,
			    on_rotate_request, rec);
	if (r < 0)
		return r;
	r = sd_event_add_time_relative(rec->event, &rec->age_timer, CLOCK_MONOTONIC, USEC_PER_SEC, 0,
				       on_age_timer, rec);
	if (r < 0)
		return r;
	arm_age_timer(rec);
	r = sd_event_add_time_relative(rec->event, &rec->flush_timer, CLOCK_MONOTONIC,
				       rec->cfg->snapshot_interval_usec, 0, on_flush_timer, rec);
	if (r < 0)
		return r;
	r = sd_event_source_set_enabled(rec->flush_timer, SD_EVENT_ON);
	if (r < 0 || !flight(rec) || !rec->cfg->flight_trigger)
		return r;
	r = sd_event_add_time_relative(rec->event, &rec->trigger_timer, CLOCK_MONOTONIC,
				       TRIGGER_POLL_USEC, 0, on_trigger_timer, rec);
	if (r < 0)
		return r;
	return sd_event_source_set_enabled(rec->trigger_timer, SD_EVENT_ON);
}

/* Close the readers and put tracing back as it was. */
static void release_tracing(struct recorder *rec)
{
	/* an instance cannot be removed while its trace_pipe_raw files are open */
	for (unsigned i = 0; i < rec->nr_readers; i++)
		rec->readers[i] = cpu_reader_free(rec->readers[i]);
	rec->nr_readers = 0;
	generations_restore(rec->gens);
	tracing_restore(rec->tracing);
	rec->state = RECORDER_STOPPED;
}

int recorder_start(struct recorder *rec, sd_event *e,
		   void (*on_segment)(void *userdata, const char *path), void *userdata)
{
	_cleanup_free_ char *clock = NULL;
	struct archive_params ap = {
		.directory = rec->cfg->directory,
		.compression_level = rec->cfg->compression_level,
		.sync = rec->cfg->sync,
		.policy = policy_of(rec->cfg),
		.hooks = &hooks,
		.userdata = rec,
	};
	bool had_data;
	int r;

	rec->state = RECORDER_STARTING;
	rec->event = sd_event_ref(e);
	rec->on_segment = on_segment;
	rec->userdata = userdata;
	read_host_identity(rec);

	r = tracing_collect_files(rec->tracing, collect_file, rec);
	if (r < 0)
		return log_errno(LOG_ERR, r, "cannot read the event formats");
	r = setup_layout(rec);
	if (r < 0)
		return log_errno(LOG_ERR, r, "cannot read the ring-buffer page format");
	r = add_stack_ref_format(rec);
	if (r < 0)
		return log_errno(LOG_ERR, r, "out of memory");
	r = ksyms_load("/proc/kallsyms", &rec->ksyms);
	if (r < 0 || !ksyms_usable(rec->ksyms)) {
		log_warn("kernel addresses are hidden (kptr_restrict) or /proc/kallsyms is unreadable: "
			 "stacks are stored without symbols, continuing");
		rec->ksyms = ksyms_free(rec->ksyms);
	}
	rec->dedup = stackdedup_new(DEDUP_MAX_STACKS);
	rec->notify_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (!rec->dedup || rec->notify_fd < 0)
		return log_errno(LOG_ERR, -ENOMEM, "out of memory");

	r = tracing_nr_cpus(rec->tracing);
	ap.nr_cpus = r > 0 ? (unsigned)r : 1;
	r = archive_open(&ap, &rec->archive);
	if (r < 0)
		return log_errno(LOG_ERR, r, "cannot open the archive directory '%s'", rec->cfg->directory);
	r = open_readers(rec);
	if (r < 0)
		return r;
	/* before the first segment opens, so that its head says which stacks it holds */
	r = setup_stackmap(rec);
	if (r < 0)
		goto fail_tracing;
	if (flight(rec))
		goto configure;
	r = archive_start(rec->archive);
	if (r < 0)
		return log_errno(LOG_ERR, r, "cannot start a segment in '%s'", rec->cfg->directory);

	/* Boot capture may have filled the buffer: keep it before anything can clear it. */
	had_data = tracing_buffer_has_data(rec->tracing);
	if (had_data) {
		for (unsigned i = 0; i < rec->nr_readers; i++) {
			r = cpu_reader_drain(rec->readers[i]);
			if (r < 0)
				log_errno(LOG_WARNING, r, "cannot drain CPU %d, continuing",
					  cpu_reader_cpu(rec->readers[i]));
		}
		log_info("kept the events the ring buffer held at start");
		clock = tracing_clock(rec->tracing);
		if (rec->cfg->clock && clock && !streq(clock, rec->cfg->clock)) {
			/* timestamps of one segment must share a clock */
			r = archive_rotate(rec->archive, false, NULL);
			if (r < 0)
				return log_errno(LOG_ERR, r, "cannot finish the segment of drained events");
		}
	}
configure:
	r = tracing_setup_buffer(rec->tracing);
	if (r < 0)
		goto fail_tracing;
	r = tracing_setup_events(rec->tracing);
	if (r < 0)
		goto fail_tracing;

	/* kernel drop counters are reported per segment, from here on */
	for (unsigned i = 0; i < rec->nr_readers; i++) {
		int cpu = cpu_reader_cpu(rec->readers[i]);

		(void)tracing_cpu_stats(rec->tracing, cpu, &rec->kstats_base[cpu]);
	}
	/* the flight recorder reads only when asked to: the buffer is the recording */
	for (unsigned i = 0; i < rec->nr_readers && !flight(rec); i++) {
		r = cpu_reader_start(rec->readers[i]);
		if (r < 0) {
			log_errno(LOG_ERR, r, "cannot start the reader of CPU %d",
				  cpu_reader_cpu(rec->readers[i]));
			goto fail_tracing;
		}
	}
	exclude_self(rec);
	r = add_sources(rec);
	if (r < 0) {
		log_errno(LOG_ERR, r, "cannot set up the event loop");
		goto fail_tracing;
	}
	rec->rate_usec = now_usec(CLOCK_MONOTONIC);
	rec->state = RECORDER_RECORDING;
	log_info("%s %u CPUs of instance '%s' into '%s'",
		 flight(rec) ? "flight recorder on" : "recording", rec->nr_readers,
		 tracing_instance_name(rec->tracing), rec->cfg->directory);
	return 0;

fail_tracing:
	if (r < 0)
		log_errno(LOG_ERR, r, "cannot configure tracing");
	release_tracing(rec);
	return r;
}

void recorder_stop(struct recorder *rec)
{
	int r;

	if (rec->state != RECORDER_RECORDING && rec->state != RECORDER_STARTING)
		return;
	rec->state = RECORDER_STOPPING;
	/* a trigger that fired since the last poll is saved too (before tracing_on means "stopped by us") */
	if (flight(rec) && tracing_flight_triggered(rec->tracing))
		flight_trigger_save(rec);
	/*
	 * Stop the producers first, or the final flush races new events and
	 * leaves a tail in the buffer; with keep_tracing, the next start drains it.
	 */
	if (!rec->cfg->keep_tracing)
		(void)tracing_set_on(rec->tracing, false);
	/* readers flush what the buffer holds, hand over their last frame and exit */
	for (unsigned i = 0; i < rec->nr_readers; i++)
		cpu_reader_stop(rec->readers[i]);
	while (rec->ops) {
		struct flush_op *op = rec->ops;

		rec->ops = op->next;
		if (op->done)
			op->done(op->userdata, -ECANCELED, NULL);
		flush_op_free(op);
	}
	r = archive_is_open(rec->archive) ? archive_rotate(rec->archive, true, NULL) : 0;
	if (r < 0)
		log_errno(LOG_ERR, r, "cannot finish the last segment; it is recovered at the next start");
	release_tracing(rec);
}

/* ---- requests ---- */

static void finish_after_flush(struct recorder *rec, struct flush_op *op)
{
	_cleanup_free_ char *path = NULL;
	int r;

	r = archive_rotate(rec->archive, false, &path);
	arm_age_timer(rec);
	if (op->done)
		op->done(op->userdata, r, path);
}

/* Flight recorder: drain the buffer into the open segment and finish it. */
static int flight_save(struct recorder *rec, recorder_done_fn done, void *userdata)
{
	_cleanup_free_ char *path = NULL;
	int r;

	for (unsigned i = 0; i < rec->nr_readers; i++) {
		r = cpu_reader_drain(rec->readers[i]);
		if (r < 0)
			log_errno(LOG_WARNING, r, "cannot read the buffer of CPU %d, continuing",
				  cpu_reader_cpu(rec->readers[i]));
	}
	r = archive_close(rec->archive, &path);
	if (done)
		done(userdata, r, path);
	return r;
}

/* Flight recorder: save what the buffer holds now into one segment. */
static int flight_capture(struct recorder *rec, recorder_done_fn done, void *userdata)
{
	int r;

	r = archive_start(rec->archive);
	if (r < 0)
		return r;
	(void)flight_save(rec, done, userdata);
	return 0;
}

/* The trigger event stopped the buffer: save it, as a snapshot would. */
static void flight_trigger_save(struct recorder *rec)
{
	_cleanup_free_ char *note = NULL;
	int r;

	log_info("flight trigger '%s' fired, saving the buffer", rec->cfg->flight_trigger);
	r = archive_start(rec->archive);
	if (r >= 0 && strprintf(&note, "saved by the flight trigger %s",
				rec->cfg->flight_trigger) == 0)
		(void)archive_append_record(rec->archive, SEGMENT_REC_NOTE, SEGMENT_NO_CPU, note,
					    strlen(note));
	if (r >= 0)
		r = flight_save(rec, NULL, NULL);
	if (r < 0)
		log_errno(LOG_ERR, r, "cannot save the flight buffer, continuing");
}

static int on_trigger_timer(sd_event_source *s, uint64_t usec, void *userdata)
{
	struct recorder *rec = userdata;
	int r;

	if (rec->state == RECORDER_RECORDING && tracing_flight_triggered(rec->tracing)) {
		flight_trigger_save(rec);
		/* arm it again */
		r = tracing_set_on(rec->tracing, true);
		if (r < 0)
			log_errno(LOG_ERR, r, "cannot restart tracing after the flight trigger");
	}
	return sd_event_source_set_time_relative(s, TRIGGER_POLL_USEC);
}

int recorder_snapshot(struct recorder *rec, recorder_done_fn done, void *userdata)
{
	if (rec->state != RECORDER_RECORDING)
		return -EAGAIN;
	if (flight(rec))
		return flight_capture(rec, done, userdata);
	if (!recorder_flush_all(rec, NULL, finish_after_flush, done, userdata))
		return -ENOMEM;
	return 0;
}

int recorder_reset(struct recorder *rec, recorder_done_fn done, void *userdata)
{
	if (!rec->gens)
		return -EOPNOTSUPP;
	if (rec->state != RECORDER_RECORDING)
		return -EAGAIN;
	return generations_reset(rec->gens, done, userdata);
}

int recorder_reload(struct recorder *rec, const struct config *c)
{
	struct rotation_policy p = policy_of(c);

	rec->cfg = c;
	archive_set_policy(rec->archive, &p, c->sync, c->compression_level);
	if (rec->gens)
		generations_set_config(rec->gens, c);
	if (rec->flush_timer)
		(void)sd_event_source_set_time_relative(rec->flush_timer, c->snapshot_interval_usec);
	if (rec->archive) {
		arm_age_timer(rec);
		archive_enforce_retention(rec->archive);
	}
	return 0;
}

/* ---- status ---- */

void recorder_get_status(struct recorder *rec, struct recorder_status *ret)
{
	struct archive_status as = { 0 };
	uint64_t now = now_usec(CLOCK_MONOTONIC);
	double dt = rec->rate_usec && now > rec->rate_usec ? (double)(now - rec->rate_usec) / 1e6 : 0;

	memset(ret, 0, sizeof(*ret));
	ret->state = rec->state;
	ret->instance = tracing_instance_name(rec->tracing);
	ret->map_success_rate = -1;
	ret->unresolved = rec->unresolved;
	ret->dedup_stacks = rec->dedup ? stackdedup_count(rec->dedup) : 0;
	ret->nr_cpus = rec->nr_readers;
	ret->cpus = rec->cpu_status;
	for (unsigned i = 0; i < rec->nr_readers; i++) {
		struct cpu_reader_stats rs;
		struct tracing_cpu_stats ks = { 0 };
		struct recorder_cpu_status *c = &rec->cpu_status[i];
		int cpu = cpu_reader_cpu(rec->readers[i]);

		cpu_reader_get_stats(rec->readers[i], &rs);
		(void)tracing_cpu_stats(rec->tracing, cpu, &ks);
		c->cpu = cpu;
		c->events = rs.events;
		c->pages = rs.pages;
		c->raw_bytes = rs.raw_bytes;
		c->stored_bytes = rs.stored_bytes;
		/* overwritten events are counted by the kernel and on the pages read after them */
		c->lost_events = MAX(rs.lost_events, ks.overrun) + ks.dropped;
		if (dt >= 1.0) {
			c->events_per_s = (double)(rs.events - rec->rate_events[i]) / dt;
			rec->rate_events[i] = rs.events;
		}
	}
	if (dt >= 1.0)
		rec->rate_usec = now;
	if (rec->gens)
		generations_status(rec->gens, ret);
	if (rec->archive) {
		archive_get_status(rec->archive, &as, &ret->segment_path);
		ret->directory = archive_directory(rec->archive);
	}
	ret->segment_bytes = as.current_bytes;
	ret->segment_age_usec = as.current_age_usec;
	ret->archive_bytes = as.bytes;
	ret->archive_max_bytes = rec->cfg->max_size;
	ret->archive_segments = as.segments;
	ret->write_errors = as.write_errors;
}

int recorder_summary(struct recorder *rec, char *buf, size_t len)
{
	struct recorder_status st;
	uint64_t events = 0, lost = 0;
	double rate = 0;

	recorder_get_status(rec, &st);
	for (unsigned i = 0; i < st.nr_cpus; i++) {
		events += st.cpus[i].events;
		lost += st.cpus[i].lost_events;
		rate += st.cpus[i].events_per_s;
	}
	free(st.segment_path);
	return snprintf(buf, len,
			"recording %u CPUs: %" PRIu64 " events (%.0f/s), %" PRIu64
			" lost, archive %" PRIu64 " MiB in %" PRIu64 " segments",
			st.nr_cpus, events, rate, lost, st.archive_bytes >> 20,
			st.archive_segments + 1);
}

int recorder_foreach_segment(struct recorder *rec,
			     int (*cb)(const char *path, uint64_t bytes, void *userdata),
			     void *userdata)
{
	return archive_foreach(rec->archive, cb, userdata);
}

enum recorder_state recorder_state(const struct recorder *rec)
{
	return rec->state;
}

struct recorder *recorder_free(struct recorder *rec)
{
	if (!rec)
		return NULL;
	recorder_stop(rec);
	for (unsigned i = 0; i < rec->nr_readers; i++)
		cpu_reader_free(rec->readers[i]);
	free(rec->readers);
	sd_event_source_disable_unref(rec->notify_src);
	sd_event_source_disable_unref(rec->rotate_src);
	sd_event_source_disable_unref(rec->age_timer);
	sd_event_source_disable_unref(rec->flush_timer);
	sd_event_source_disable_unref(rec->trigger_timer);
	sd_event_unref(rec->event);
	generations_free(rec->gens);
	archive_free(rec->archive);
	stackdedup_free(rec->dedup);
	ksyms_free(rec->ksyms);
	tracing_free(rec->tracing);
	files_free(rec);
	free(rec->kstats_base);
	free(rec->rate_events);
	free(rec->cpu_status);
	free(rec->boot_id);
	if (rec->notify_fd >= 0)
		close(rec->notify_fd);
	free(rec);
	return NULL;
}
