/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * What the recorder puts in each segment besides the readers' frames: the
 * head (META, the config, the event formats and page layout collected once
 * at start, the stack-map generation in force) and the tail (tasks, the
 * stack-map tables, the kallsyms subset, the count of unresolved stack
 * ids, per-CPU and stack-map STATS), given to the archive as its hooks;
 * and the host and kernel facts the head names.
 */
#include <fcntl.h>
#include <inttypes.h>

#include "archive.h"
#include "stack-audit.h"
#include "config.h"
#include "cpu-reader.h"
#include "crash-buffer.h"
#include "generations.h"
#include "ksyms.h"
#include "log.h"
#include "recorder-internal.h"
#include "tracing.h"
#include "util.h"

#define STACK_REF_EVENT_ID 65000

void recorder_files_free(struct recorder *rec)
{
	rec->task_lines = task_lines_free(rec->task_lines);
	named_texts_free(&rec->files, &rec->nr_files);
}

int recorder_collect_file(const char *name, const void *data, size_t len, void *userdata)
{
	struct recorder *rec = userdata;

	/* NUL-terminated too: formats are searched as text */
	return named_texts_append(&rec->files, &rec->nr_files, name, data, len);
}

/* A crash capture's head names the boot and kernel that recorded it. */
static const char *meta_boot_id(const struct recorder *rec)
{
	if (rec->capture)
		return rec->capture->boot_id;
	return rec->boot_id ?: "";
}

static const char *meta_release(const struct recorder *rec)
{
	if (rec->capture && rec->capture->kernel_release)
		return rec->capture->kernel_release;
	return rec->uts.release;
}

static const char *meta_version(const struct recorder *rec)
{
	if (rec->capture && rec->capture->kernel_version)
		return rec->capture->kernel_version;
	return rec->uts.version;
}

/*
 * A FILE record, unless readers that decode events would refuse it
 * (SEGMENT_MAX_DECODE_RECORD): then it is left out with a warning, so
 * that the segment stays readable whole.
 */
static int append_file(struct segment_writer *w, const char *name, const void *data, size_t len,
		       int level)
{
	if (len + strlen(name) + 1 > SEGMENT_MAX_DECODE_RECORD) {
		log_warn("'%s' is %zu bytes, more than readers accept in a record (%u): left out of "
			 "'%s', continuing", name, len, SEGMENT_MAX_DECODE_RECORD,
			 segment_writer_path(w));
		return 0;
	}
	return segment_writer_append_file(w, name, data, len, level);
}

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
		       SEGMENT_VERSION, PACKAGE_VERSION, meta_boot_id(rec),
		       meta_release(rec), meta_version(rec), rec->hostname, rec->uts.machine,
		       rec->capture ? rec->capture->page_size : rec->layout.page_size, rec->nr_cpus,
		       clock ? clock : "local",
		       __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__ ? "little" : "big", sizeof(long),
		       rec->capture ? CONFIG_CRASH_INSTANCE : tracing_instance_name(rec->tracing),
		       rec->recording_id, seg->seq,
		       seg->opened_realtime_usec, rec->gens && !rec->capture ? "stackmap" : "full",
		       rec->layout.stack_ref_id,
		       MAX(rec->layout.stack_id_id, 0), rec->layout.kernel_stack_id,
		       rec->layout.print_id);
	if (r == 0 && rec->capture)
		r = recorder_crash_meta(rec, &m);
	if (r == 0) {
		r = buf_printf(&m, "online_cpus=");
		for (unsigned i = 0; r == 0 && !rec->capture && i < rec->nr_readers; i++)
			r = buf_printf(&m, "%s%d", i ? "," : "", cpu_reader_cpu(rec->readers[i]));
		/* a crash capture has readers of its own: the CPUs it reads */
		for (unsigned cpu = 0, n = 0; r == 0 && rec->capture && cpu < rec->nr_cpus; cpu++)
			if (tracing_cpu_online(rec->tracing, (int)cpu))
				r = buf_printf(&m, "%s%u", n++ ? "," : "", cpu);
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
	if (rec->capture) {
		r = recorder_crash_segment_begin(rec, seg);
		if (r < 0)
			return r;
		goto files;
	}
	/* read back into this segment, it pairs its first events with the wall clock */
	recorder_clock_sample(rec);
	recorder_flush_soon(rec);
	if (rec->gens)
		generations_segment_begin(rec->gens, seg);
files:
	if (rec->cfg->text) {
		r = append_file(seg->writer, "config", rec->cfg->text, strlen(rec->cfg->text),
				level);
		if (r < 0)
			return r;
	}
	for (size_t i = 0; i < rec->nr_files; i++) {
		/* this boot's task names are not the previous boot's: a capture has none */
		if (rec->capture && task_lines_is_task_file(rec->files[i].name))
			continue;
		r = append_file(seg->writer, rec->files[i].name, rec->files[i].data,
				rec->files[i].len, level);
		if (r < 0)
			return r;
	}
	return 0;
}

/* A task file at a segment's end: only its lines that the head copy does not have. */
struct task_file_to {
	const struct task_lines *head;
	struct segment_writer *w;
};

static int append_task_file(const char *name, const void *data, size_t len, void *userdata)
{
	const struct task_file_to *to = userdata;
	struct buf changed = { 0 };
	int r;

	r = task_lines_changed(to->head, name, data, len, &changed);
	if (r >= 0)
		r = append_file(to->w, name, changed.data ? (const void *)changed.data : "",
				changed.len, 1);
	buf_done(&changed);
	return r;
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

/* The kallsyms subset for the stacks the segment holds and the functions events name. */
static int write_symbols(struct recorder *rec, struct archive_segment *seg)
{
	/*
	 * Besides the stacks' frames, the functions that print events name:
	 * a trace_marker line is a print event whose ip is in
	 * tracing_mark_write(), the daemon's own markers included.
	 */
	static const char *const event_functions[] = { "tracing_mark_write",
						       "tracing_mark_raw_write" };
	struct buf syms = { 0 };
	int r;

	for (size_t i = 0; i < ARRAY_SIZE(event_functions); i++) {
		uint64_t a = ksyms_address_of(rec->ksyms, event_functions[i]);

		if (a && buf_append(&seg->addrs, &a, sizeof(a)) < 0)
			return -ENOMEM;
	}
	r = ksyms_subset(rec->ksyms, (const uint64_t *)seg->addrs.data, seg->addrs.len / 8, &syms);
	if (r >= 0 && syms.len)
		r = append_file(seg->writer, "kallsyms", syms.data, syms.len, rec->cfg->compression_level);
	buf_done(&syms);
	return r;
}

/* Count what a reader of this segment will not resolve, for its index. */
static void count_unresolved(struct recorder *rec, struct archive_segment *seg)
{
	uint64_t refs = 0, unresolved = 0;
	int r;

	r = stack_audit_unresolved(segment_writer_path(seg->writer), &rec->layout, &refs, &unresolved);
	if (r < 0)
		log_errno(LOG_WARNING, r, "cannot count the unresolved stack ids of '%s', continuing",
			  segment_writer_path(seg->writer));
	seg->unresolved = unresolved;
	rec->unresolved += unresolved;
	if (unresolved)
		log_notice("%" PRIu64 " of %" PRIu64 " stack ids in '%s' cannot be resolved "
			   "(reset windows)", unresolved, refs, segment_writer_path(seg->writer));
}

static int write_gen_stats(struct recorder *rec, struct archive_segment *seg)
{
	struct buf s = { 0 };
	int r;

	r = generations_stats(rec->gens, &s);
	if (r == 0)
		r = segment_writer_append(seg->writer, SEGMENT_REC_STATS, SEGMENT_NO_CPU, s.data,
					  s.len, 0, NULL);
	buf_done(&s);
	return r;
}

/*
 * The segment's tail. What resolves its stack ids (the stack-map tables,
 * the kallsyms subset) goes first: on a full disk, whatever fits should be
 * what makes the events readable. A record that fails does not stop the
 * ones after it (a smaller one may still fit); if the tables or symbols
 * are missing, the index says so (TABLES_MISSING) and a NOTE says what
 * failed, so that no reader takes the segment for a complete one.
 */
static int segment_end(void *userdata, struct archive_segment *seg)
{
	struct recorder *rec = userdata;
	const char *missing[4];
	size_t nr_missing = 0;
	bool tables_missing = false;
	int r, first = 0;

	/* no tasks, stack-map tables or stats of this boot in the previous one's */
	if (rec->capture)
		return recorder_crash_segment_end(rec, seg);
	if (rec->gens) {
		r = generations_segment_end(rec->gens, seg);
		if (r < 0) {
			first = first ? first : r;
			missing[nr_missing++] = "stack tables";
			tables_missing = true;
		}
	}
	if (rec->ksyms) {
		r = write_symbols(rec, seg);
		if (r < 0) {
			first = first ? first : r;
			missing[nr_missing++] = "kallsyms";
			tables_missing = true;
		}
	}
	if (rec->gens && !tables_missing)
		count_unresolved(rec, seg);
	r = tracing_collect_tasks(rec->tracing, append_task_file,
				  &(struct task_file_to){ rec->task_lines, seg->writer });
	if (r < 0) {
		first = first ? first : r;
		missing[nr_missing++] = "task names";
	}
	r = write_cpu_stats(rec, seg);
	if (r >= 0 && rec->gens)
		r = write_gen_stats(rec, seg);
	if (r < 0) {
		first = first ? first : r;
		missing[nr_missing++] = "statistics";
	}
	if (tables_missing)
		seg->index_flags |= SEGMENT_INDEX_F_TABLES_MISSING;
	if (nr_missing) {
		_cleanup_free_ char *note = NULL;
		struct buf list = { 0 };

		for (size_t i = 0; i < nr_missing; i++)
			(void)buf_printf(&list, "%s%s", i ? ", " : "", missing[i]);
		if (strprintf(&note, "the end of this segment could not all be written (%s): "
			      "missing %s%s", strerror(-first), list.data ? (char *)list.data : "",
			      tables_missing ? "; its stack ids may be unresolved" : "") == 0)
			(void)segment_writer_append(seg->writer, SEGMENT_REC_NOTE, SEGMENT_NO_CPU,
						    note, strlen(note), 0, NULL);
		buf_done(&list);
	}
	return first;
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
	/* a loss is always a full ring buffer: say what keeps the events */
	log_struct(lost ? LOG_WARNING : LOG_INFO, fields,
		   "finished segment '%s': %" PRIu64 " events, %" PRIu64 " lost, %" PRIu64
		   " daemon stacks%s",
		   path, events, lost, seg->dstacks,
		   lost ? "; lost events: the ring buffer filled before it was read, "
			  "a larger [trace] buffer_size keeps them (doc/configuration.md)" : "");
	if (rec->on_segment)
		rec->on_segment(rec->userdata, path);
}

static void segment_recovered(void *userdata, const char *path)
{
	struct recorder *rec = userdata;

	if (rec->on_segment)
		rec->on_segment(rec->userdata, path);
}

int recorder_setup_layout(struct recorder *rec)
{
	_cleanup_free_ char *hp = NULL, *path = NULL;
	int r;

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
	rec->layout.stack_ref_id = page_layout_stack_ref_id(rec->files, rec->nr_files,
							     STACK_REF_EVENT_ID);
	return 0;
}

int recorder_add_stack_ref_format(struct recorder *rec)
{
	struct buf f = { 0 };
	int r;

	if (rec->layout.stack_ref_id < 0)
		return 0;
	r = page_layout_stack_ref_format(rec->layout.stack_ref_id, &f);
	if (r == 0)
		r = recorder_collect_file(STACK_REF_FORMAT_NAME, f.data, f.len, rec);
	buf_done(&f);
	return r;
}

void recorder_read_host_identity(struct recorder *rec)
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

const struct archive_hooks recorder_archive_hooks = {
	.begin = segment_begin,
	.end = segment_end,
	.finished = segment_finished,
	.recovered = segment_recovered,
};

