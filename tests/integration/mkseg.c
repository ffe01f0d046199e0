/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * mkseg: record a command's kernel events into one segment, without the
 * daemon, for tests that compare stackmapctl's decoding with trace-cmd.
 *
 *   mkseg [-o DIR] [-O DIR] [-r RAWDIR] [-e SYS:EVENT]... [-k SYS:EVENT]... [-n NAME]
 *         [-b KB] [-p] -- COMMAND...
 *
 *   -o  write the pages as they are into a segment in DIR
 *   -O  write them transcoded into a segment in DIR: kernel_stack entries
 *       replaced by stack_ref entries and a stack table, as the daemon does
 *   -r  write every CPU's raw pages to RAWDIR/cpuN.raw (trace-cmd restore input)
 *   -e  enable an event            -k  enable an event with a stacktrace trigger
 *   -n  instance name (default: a random one)
 *   -b  per-CPU buffer size in KiB (default 8192)
 *   -p  only the events of COMMAND and the tasks it starts (set_event_pid, event-fork)
 *
 * Works in an instance of its own that it removes again, also when the
 * command fails; reads the pages after the command has finished. Prints the
 * path of each segment. Needs root and tracefs.
 */
#include <fcntl.h>
#include <stdarg.h>
#include <signal.h>
#include <sys/utsname.h>
#include <sys/wait.h>

#include <tracefs.h>

#include "buf.h"
#include "segment.h"
#include "stacktab.h"
#include "transcode.h"
#include "util.h"

#define MAX_EVENTS 16
#define PAGES_PER_RECORD 64
#define STACK_REF_ID 30000

struct event_arg {
	char sys[64];
	char name[64];
	bool stack;
};

static struct tracefs_instance *inst;
static struct event_arg events[MAX_EVENTS];
static int nr_events;

static bool trigger_path(char *buf, size_t len, const struct event_arg *e)
{
	return snprintf(buf, len, "events/%s/%s/trigger", e->sys, e->name) < (int)len;
}

static void cleanup(void)
{
	char path[256];

	if (!inst)
		return;
	(void)tracefs_trace_off(inst);
	for (int i = 0; i < nr_events; i++) {
		(void)tracefs_event_disable(inst, events[i].sys, events[i].name);
		if (events[i].stack && trigger_path(path, sizeof(path), &events[i]))
			(void)tracefs_instance_file_write(inst, path, "!stacktrace");
	}
	(void)tracefs_instance_destroy(inst);
	tracefs_instance_free(inst);
	inst = NULL;
}

static void on_signal(int sig)
{
	cleanup();
	_exit(128 + sig);
}

static void die(const char *fmt, ...) __attribute__((noreturn, format(printf, 1, 2)));
static void die(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fprintf(stderr, "mkseg: ");
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	cleanup();
	exit(1);
}

/* A tracefs file of our instance, or of the top level (read only) if the instance has none. */
static char *read_tracefs(const char *file, int *ret_len)
{
	char *s = tracefs_instance_file_read(inst, file, ret_len);

	if (!s)
		s = tracefs_instance_file_read(NULL, file, ret_len);
	return s;
}

static void add_file(struct segment_writer *w, const char *name, const char *tracefs_file)
{
	_cleanup_free_ char *s = NULL;
	int len = 0;

	s = read_tracefs(tracefs_file, &len);
	if (!s || len <= 0)
		die("cannot read '%s'", tracefs_file);
	if (segment_writer_append_file(w, name, s, (size_t)len, 1) < 0)
		die("cannot write FILE %s", name);
}

static int format_id(const char *sys, const char *name)
{
	_cleanup_free_ char *s = NULL, *file = NULL;
	const char *p;

	if (strprintf(&file, "events/%s/%s/format", sys, name) < 0)
		die("out of memory");
	s = read_tracefs(file, NULL);
	p = s ? strstr(s, "\nID: ") : NULL;
	return p ? atoi(p + 5) : -1;
}

static void add_format(struct segment_writer *w, const char *sys, const char *name)
{
	_cleanup_free_ char *file = NULL;

	if (strprintf(&file, "events/%s/%s/format", sys, name) < 0)
		die("out of memory");
	add_file(w, file, file);
}

static void parse_event(const char *arg, bool stack)
{
	const char *colon = strchr(arg, ':');
	struct event_arg *e = &events[nr_events];

	if (nr_events >= MAX_EVENTS || !colon || (size_t)(colon - arg) >= sizeof(e->sys) ||
	    strlen(colon + 1) >= sizeof(e->name))
		die("bad event '%s'", arg);
	memcpy(e->sys, arg, (size_t)(colon - arg));
	e->sys[colon - arg] = 0;
	strcpy(e->name, colon + 1);
	e->stack = stack;
	nr_events++;
}

/*
 * Run argv with tracing on; with only_child, only the events of the
 * command and of the tasks it forks (set_event_pid and event-fork, set
 * before the command starts).
 */
static void run(char **argv, bool only_child)
{
	int go[2], status;
	pid_t pid;
	char c = 0;

	if (pipe2(go, O_CLOEXEC) < 0)
		die("pipe: %m");
	pid = fork();
	if (pid < 0)
		die("fork: %m");
	if (pid == 0) {
		if (read(go[0], &c, 1) != 1)
			_exit(127);
		execvp(argv[0], argv);
		_exit(127);
	}
	if (only_child) {
		char p[32];

		(void)snprintf(p, sizeof(p), "%d", (int)pid);
		if (tracefs_instance_file_write(inst, "set_event_pid", p) < 0 ||
		    tracefs_option_enable(inst, TRACEFS_OPTION_EVENT_FORK) < 0)
			die("cannot follow pid %d", (int)pid);
	}
	if (tracefs_trace_on(inst) < 0)
		die("cannot turn tracing on");
	if (write(go[1], &c, 1) != 1)
		die("cannot start '%s': %m", argv[0]);
	close(go[0]);
	close(go[1]);
	if (waitpid(pid, &status, 0) < 0)
		die("waitpid: %m");
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		die("'%s' failed", argv[0]);
}

/* One segment being written: the pages as read, or transcoded as the daemon does. */
struct output {
	const char *dir;
	bool transcode;
	struct segment_writer *w;
	struct buf pages;		/* of the PAGES record being built */
	unsigned nr_pages;
	struct page_layout layout;
	struct stackdedup *dedup;
	struct transcoder tc;
};

static void output_open(struct output *o, const char *instance, int page_size, int ncpus)
{
	_cleanup_free_ char *clock = tracefs_get_clock(inst), *hp = NULL;
	struct buf meta = {};
	struct utsname uts;

	(void)uname(&uts);
	if (segment_writer_open(o->dir, "00000001-mkseg", &o->w) < 0)
		die("cannot create a segment in '%s': %m", o->dir);
	if (buf_printf(&meta,
		       "format_version=1\nproducer=mkseg\nkernel_release=%s\nmachine=%s\n"
		       "page_size=%d\nnr_cpus=%d\nclock=%s\nbyte_order=%s\nlong_size=%zu\n"
		       "instance=%s\nsegment_seq=1\nstack_mode=full\nkernel_stack_event_id=%d\n"
		       "stack_id_event_id=0\nprint_event_id=%d\nstack_ref_event_id=%d\n",
		       uts.release, uts.machine, page_size, ncpus, clock ? clock : "local",
		       __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__ ? "little" : "big", sizeof(long),
		       instance, format_id("ftrace", "kernel_stack"), format_id("ftrace", "print"),
		       o->transcode ? STACK_REF_ID : 0) < 0 ||
	    segment_writer_append(o->w, SEGMENT_REC_META, SEGMENT_NO_CPU, meta.data, meta.len, 0,
				  NULL) < 0)
		die("cannot write META");
	buf_done(&meta);
	add_file(o->w, "header_page", "events/header_page");
	add_file(o->w, "header_event", "events/header_event");
	add_format(o->w, "ftrace", "kernel_stack");
	add_format(o->w, "ftrace", "print");
	for (int i = 0; i < nr_events; i++)
		add_format(o->w, events[i].sys, events[i].name);
	if (!o->transcode)
		return;

	hp = read_tracefs("events/header_page", NULL);
	if (!hp || page_layout_parse(hp, &o->layout) < 0)
		die("cannot parse header_page");
	o->layout.page_size = (unsigned)page_size;
	o->layout.kernel_stack_id = format_id("ftrace", "kernel_stack");
	o->layout.stack_id_id = -1;
	o->layout.print_id = format_id("ftrace", "print");
	o->layout.stack_ref_id = STACK_REF_ID;
	o->dedup = stackdedup_new(1 << 20);
	if (!o->dedup || transcoder_init(&o->tc, &o->layout, o->dedup) < 0)
		die("out of memory");
	buf_reset(&meta);
	if (page_layout_stack_ref_format(STACK_REF_ID, &meta) < 0 ||
	    segment_writer_append_file(o->w, "events/stackmapd/stack_ref/format", meta.data,
				       meta.len, 0) < 0)
		die("cannot write the stack_ref format");
	buf_done(&meta);
}

static void output_flush(struct output *o, int cpu)
{
	if (!o->nr_pages)
		return;
	if (segment_writer_append(o->w, SEGMENT_REC_PAGES, (uint32_t)cpu, o->pages.data,
				  o->pages.len, 1, NULL) < 0)
		die("cannot write PAGES");
	buf_reset(&o->pages);
	o->nr_pages = 0;
}

static void output_page(struct output *o, int cpu, uint8_t *page, int page_size)
{
	if (o->transcode) {
		struct page_summary sum;

		if (transcoder_page(&o->tc, page, (size_t)page_size, &o->pages, &sum) < 0)
			die("out of memory");
	} else {
		struct page_format f = { sizeof(long), __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__,
					 (size_t)page_size };
		int len = page_walk_stored_len(&f, page, (size_t)page_size);

		if (len < 0 || buf_append(&o->pages, page, (size_t)len) < 0)
			die("bad page on CPU %d", cpu);
	}
	if (++o->nr_pages == PAGES_PER_RECORD)
		output_flush(o, cpu);
}

/* The FILEs that the pages need to be printed, and the stack table: at the end, like the daemon. */
static void output_finish(struct output *o)
{
	struct segment_index idx = {};
	_cleanup_free_ char *kallsyms = NULL, *path = NULL;
	struct buf stacks = {};
	size_t len;

	if (read_file("/proc/kallsyms", &kallsyms, &len) < 0 ||
	    segment_writer_append_file(o->w, "kallsyms", kallsyms, len, 1) < 0)
		die("cannot store /proc/kallsyms");
	add_file(o->w, "printk_formats", "printk_formats");
	add_file(o->w, "saved_cmdlines", "saved_cmdlines");
	if (o->transcode) {
		for (size_t i = 0; i < o->tc.nr_refs; i++) {
			struct stack_entry e = { .id = o->tc.refs[i]->id, .refs = 1,
						 .nr = o->tc.refs[i]->nr, .ips = o->tc.refs[i]->ips };

			if (stacktab_encode(&stacks, &e) < 0)
				die("out of memory");
		}
		if (stacks.len && segment_writer_append(o->w, SEGMENT_REC_STACKS, SEGMENT_NO_CPU,
							stacks.data, stacks.len, 1, NULL) < 0)
			die("cannot write STACKS");
		buf_done(&stacks);
		transcoder_done(&o->tc);
		stackdedup_free(o->dedup);
	}
	if (segment_writer_finish(o->w, &idx, false, &path) < 0)
		die("cannot finish the segment");
	printf("%s\n", path);
	buf_done(&o->pages);
}

int main(int argc, char **argv)
{
	struct output outs[2] = { { .transcode = false }, { .transcode = true } };
	const char *rawdir = NULL, *name = NULL;
	_cleanup_free_ char *random_name = NULL;
	long buffer_kb = 8192;
	bool only_child = false;
	int ncpus, opt, page_size;

	while ((opt = getopt(argc, argv, "+o:O:e:k:r:n:b:p")) >= 0) {
		switch (opt) {
		case 'o':
			outs[0].dir = optarg;
			break;
		case 'O':
			outs[1].dir = optarg;
			break;
		case 'e':
		case 'k':
			parse_event(optarg, opt == 'k');
			break;
		case 'r':
			rawdir = optarg;
			break;
		case 'n':
			name = optarg;
			break;
		case 'b':
			buffer_kb = atol(optarg);
			break;
		case 'p':
			only_child = true;
			break;
		default:
			return 2;
		}
	}
	if ((!outs[0].dir && !outs[1].dir && !rawdir) || optind >= argc || !nr_events) {
		fprintf(stderr, "usage: mkseg [-o DIR] [-O DIR] [-r RAWDIR] [-e|-k SYS:EVENT]... "
				"[-n NAME] [-b KB] [-p] -- COMMAND...\n");
		return 2;
	}

	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	if (!name) {
		srandom((unsigned)(getpid() ^ now_usec(CLOCK_MONOTONIC)));
		if (strprintf(&random_name, "smmkseg_%d_%ld", getpid(), random() % 100000) < 0)
			die("out of memory");
		name = random_name;
	}
	inst = tracefs_instance_create(name);
	if (!inst)
		die("cannot create instance %s: %m", name);
	(void)tracefs_trace_off(inst);
	if (tracefs_instance_set_buffer_size(inst, (size_t)buffer_kb, -1) < 0)
		die("cannot size the buffer");
	for (int i = 0; i < nr_events; i++) {
		if (tracefs_event_enable(inst, events[i].sys, events[i].name) < 0)
			die("cannot enable %s:%s", events[i].sys, events[i].name);
		if (events[i].stack) {
			char trig[256];

			if (!trigger_path(trig, sizeof(trig), &events[i]) ||
			    tracefs_instance_file_write(inst, trig, "stacktrace") < 0)
				die("cannot add a stacktrace trigger to %s:%s", events[i].sys,
				    events[i].name);
		}
	}
	run(argv + optind, only_child);
	(void)tracefs_trace_off(inst);

	ncpus = (int)sysconf(_SC_NPROCESSORS_CONF);
	{
		struct tracefs_cpu *t = tracefs_cpu_open(inst, 0, true);

		if (!t)
			die("cannot open CPU 0 pages");
		page_size = tracefs_cpu_read_size(t);
		tracefs_cpu_close(t);
	}
	for (int i = 0; i < 2; i++)
		if (outs[i].dir)
			output_open(&outs[i], name, page_size, ncpus);

	for (int cpu = 0; cpu < ncpus; cpu++) {
		struct tracefs_cpu *t = tracefs_cpu_open(inst, cpu, true);
		_cleanup_free_ uint8_t *page = NULL;
		_cleanup_close_ int rawfd = -1;
		int n;

		if (!t)
			continue;
		page = malloc((size_t)page_size);
		if (!page)
			die("out of memory");
		if (rawdir) {
			char p[4096];

			if (snprintf(p, sizeof(p), "%s/cpu%d.raw", rawdir, cpu) >= (int)sizeof(p))
				die("'%s' is too long", rawdir);
			rawfd = open(p, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
			if (rawfd < 0)
				die("cannot create '%s': %m", p);
		}
		for (;;) {
			/* whole pages first, then what is left in the partly filled one */
			n = tracefs_cpu_read(t, page, true);
			if (n <= 0)
				n = tracefs_cpu_flush(t, page);
			if (n <= 0)
				break;
			if (n < page_size)
				memset(page + n, 0, (size_t)(page_size - n));
			if (rawfd >= 0 && write_all(rawfd, page, (size_t)page_size) < 0)
				die("cannot write raw pages");
			for (int i = 0; i < 2; i++)
				if (outs[i].dir)
					output_page(&outs[i], cpu, page, page_size);
		}
		for (int i = 0; i < 2; i++)
			if (outs[i].dir)
				output_flush(&outs[i], cpu);
		tracefs_cpu_close(t);
	}
	for (int i = 0; i < 2; i++)
		if (outs[i].dir)
			output_finish(&outs[i]);
	cleanup();
	return 0;
}
