/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Control commands: send one request to the running daemon over its
 * control socket and print the reply (doc/control-protocol.md).
 *
 * Exit status: 0 the daemon did it; 1 it reported an error, or no usable
 * reply came in time; 2 usage; 69 (EX_UNAVAILABLE) the daemon is not
 * running; 77 (EX_NOPERM) permission denied.
 */
#include <assert.h>
#include <ctype.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sysexits.h>

#include "capture.h"
#include "commands.h"
#include "config.h"
#include "ctl-proto.h"
#include "log.h"

#define TIMEOUT_SEC 10
#define FLUSH_TIMEOUT_SEC 2	/* top --follow waits no longer than that for a flush */
#define TIMEOUT_SNAPSHOT_SEC 60		/* every CPU's buffer is flushed first */
#define BUSY_RETRY_MSEC 100

struct options {
	bool json;
	unsigned timeout_sec;
	const char *config;		/* take the socket path from this file */
};

struct reply {
	char *text;			/* the JSON text as received */
	size_t len;
	struct json_value *v;
	bool timed_out;			/* no complete reply before the deadline */
};

static void reply_done(struct reply *r)
{
	free(r->text);
	json_value_free(r->v);
	*r = (struct reply){ 0 };
}

/*
 * The socket to use: $STACKMAPD_SOCKET (--socket), else [control] socket
 * in the daemon's configuration file (--config, see config_socket_path()),
 * else the default. *ret is allocated. Returns 0 or an exit status after
 * saying why.
 */
static int socket_path(const struct options *o, char **ret)
{
	const char *env = getenv("STACKMAPD_SOCKET");
	char *path = NULL;
	int r;

	if (env && *env)
		path = strdup(env);
	else if (!o->config)
		path = strdup(CTL_SOCKET_DEFAULT);
	else {
		r = config_socket_path(o->config, &path);
		if (r < 0 && r != -ENOMEM) {
			log_err("cannot read '%s'", o->config);
			return 1;
		}
	}
	if (!path) {
		log_err("out of memory");
		return 1;
	}
	*ret = path;
	return 0;
}

static int parse_options(int argc, char **argv, unsigned default_timeout, struct options *o)
{
	static const struct option options[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "timeout", required_argument, NULL, 't' },
		{ "config", required_argument, NULL, 'c' },
		{ "help", no_argument, NULL, 'h' },
		{}
	};
	const char *desc;
	char *end;
	int c;

	*o = (struct options){ .timeout_sec = default_timeout };
	optind = 1;
	while ((c = getopt_long(argc, argv, "c:h", options, NULL)) >= 0) {
		switch (c) {
		case 'j':
			o->json = true;
			break;
		case 'c':
			o->config = optarg;
			break;
		case 't':
			errno = 0;
			unsigned long t = strtoul(optarg, &end, 10);
			if (errno || *end || t == 0 || t > 86400) {
				log_err("invalid --timeout '%s' (seconds, 1-86400)", optarg);
				return 2;
			}
			o->timeout_sec = (unsigned)t;
			break;
		case 'h':
			desc = stackmapctl_command_help(argv[0]) ?: "";
			printf("Usage: stackmapctl [--socket PATH] %s [--json] [--timeout SEC] [-c CONFIG]\n"
			       "%c%s.\n"
			       "  --json            print the daemon's reply as one JSON object\n"
			       "  --timeout SEC     wait at most SEC seconds for the reply (default %u)\n"
			       "  -c, --config FILE find the control socket in this configuration file\n"
			       "  --socket PATH     (before the command) the control socket itself\n"
			       "Exit status: 0 done; 1 the daemon reported an error, or no usable reply\n"
			       "came in time; 2 usage; 69 the daemon is not running; 77 permission denied.\n",
			       argv[0], toupper((unsigned char)*desc), desc + (*desc != '\0'),
			       default_timeout);
			return 0;
		default:
			return 2;
		}
	}
	if (optind < argc) {
		log_err("%s: unexpected argument '%s'", argv[0], argv[optind]);
		return 2;
	}
	return -1;
}

/* Connect to the daemon. Returns 0 with *ret_fd, or an exit status after saying why. */
static int connect_daemon(const char *path, int *ret_fd)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	_cleanup_close_ int fd = -1;

	if (strlen(path) >= sizeof(sa.sun_path)) {
		log_err("socket path '%s' is too long", path);
		return 1;
	}
	strcpy(sa.sun_path, path);
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		log_errno(LOG_ERR, -errno, "cannot create a socket");
		return 1;
	}
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		switch (errno) {
		case ENOENT:
		case ENOTDIR:
			log_err("stackmapd is not running (no socket at %s)", path);
			return EX_UNAVAILABLE;
		case ECONNREFUSED:
			log_err("stackmapd is not running (stale socket at %s)", path);
			return EX_UNAVAILABLE;
		case EACCES:
		case EPERM:
			log_err("permission denied: cannot connect to %s (root or a member of the "
				"[control] group is needed)", path);
			return EX_NOPERM;
		default:
			log_errno(LOG_ERR, -errno, "cannot connect to %s", path);
			return 1;
		}
	}
	*ret_fd = steal_fd(&fd);
	return 0;
}

static int64_t msec_left(uint64_t deadline)
{
	uint64_t now = now_usec(CLOCK_MONOTONIC);

	return now >= deadline ? 0 : (int64_t)((deadline - now + 999) / 1000);
}

/*
 * Receive one reply: packets are concatenated until they hold a complete
 * JSON object (a long reply spans several packets). Returns 0 or an exit
 * status after saying why.
 */
static int receive(int fd, uint64_t deadline, unsigned timeout_sec, struct reply *ret)
{
	_cleanup_free_ char *text = NULL;
	size_t len = 0;
	bool reset_seen = false;

	text = malloc(CTL_REPLY_MAX + CTL_PACKET_MAX + 1);
	if (!text) {
		log_err("out of memory");
		return 1;
	}
	for (;;) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		struct iovec iov = { .iov_base = text + len, .iov_len = CTL_PACKET_MAX };
		struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
		int64_t left = msec_left(deadline);
		ssize_t n;
		int k;

		if (left == 0) {
			log_err("no reply from stackmapd within %u s", timeout_sec);
			ret->timed_out = true;
			return 1;
		}
		k = poll(&p, 1, (int)MIN(left, INT32_MAX));
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0) {
			log_errno(LOG_ERR, -errno, "poll");
			return 1;
		}
		if (k == 0)
			continue;
		n = recvmsg(fd, &mh, MSG_DONTWAIT);
		if (n < 0) {
			if (errno == EINTR || errno == EAGAIN)
				continue;
			/*
			 * A daemon that refuses us closes right after its reply;
			 * if our request was still unread the socket reports
			 * ECONNRESET once, and the reply is queued behind it.
			 */
			if (errno == ECONNRESET && !reset_seen) {
				reset_seen = true;
				continue;
			}
			log_errno(LOG_ERR, -errno, "cannot read the reply from stackmapd");
			return 1;
		}
		if (n == 0) {
			log_err("stackmapd closed the connection without a complete reply");
			return 1;
		}
		if (mh.msg_flags & MSG_TRUNC) {
			log_err("bad reply from stackmapd: packet larger than %d bytes", CTL_PACKET_MAX);
			return 1;
		}
		len += (size_t)n;
		k = json_scan_complete(text, len);
		if (k < 0) {
			log_err("bad reply from stackmapd: not a JSON object");
			return 1;
		}
		if (k > 0) {
			len = (size_t)k;
			break;
		}
		if (len > CTL_REPLY_MAX) {
			log_err("bad reply from stackmapd: longer than %d bytes", CTL_REPLY_MAX);
			return 1;
		}
	}
	text[len] = '\0';
	if (json_parse(text, len, &ret->v) < 0 || ret->v->type != JSON_OBJECT) {
		json_value_free(ret->v);
		ret->v = NULL;
		log_err("bad reply from stackmapd: invalid JSON");
		return 1;
	}
	ret->len = len;
	ret->text = steal_ptr(text);
	return 0;
}

static bool reply_is(const struct reply *r, const char *errno_name)
{
	const char *e = json_get_string(r->v, "errno");

	return e && streq(e, errno_name);
}

/* Send command once and read the reply. Returns 0 or an exit status after saying why. */
static int transact(const struct options *o, const char *command, const struct ctl_args *args,
		    uint64_t deadline, struct reply *ret)
{
	_cleanup_free_ char *path = NULL;
	_cleanup_close_ int fd = -1;
	struct buf req = { 0 };
	int r;

	r = socket_path(o, &path);
	if (r != 0)
		return r;

	r = ctl_command_format(&req, command, args);
	if (r < 0) {
		buf_done(&req);
		log_errno(LOG_ERR, r, "cannot build the request '%s'", command);
		return 1;
	}
	r = connect_daemon(path, &fd);
	if (r != 0) {
		buf_done(&req);
		return r;
	}
	/*
	 * A refused peer may find the socket already closed (EPIPE): the
	 * daemon's reply saying why is still queued for us.
	 */
	if (send(fd, req.data, req.len, MSG_NOSIGNAL) < 0 && errno != EPIPE && errno != ECONNRESET) {
		log_errno(LOG_ERR, -errno, "cannot send the request to stackmapd");
		buf_done(&req);
		return 1;
	}
	buf_done(&req);
	return receive(fd, deadline, o->timeout_sec, ret);
}

/*
 * Run one command: retry while the daemon is at its client limit, print
 * the reply verbatim with --json, report errors on stderr. Returns 0 with
 * *ret set when the daemon says ok, or an exit status.
 */
static int call(const struct options *o, const char *command, const struct ctl_args *args,
		struct reply *ret)
{
	uint64_t deadline = now_usec(CLOCK_MONOTONIC) + o->timeout_sec * USEC_PER_SEC;
	struct reply rep = { 0 };
	const char *err;
	int r;

	for (;;) {
		r = transact(o, command, args, deadline, &rep);
		if (r != 0)
			return r;
		if (json_get_bool(rep.v, "ok", false) || !reply_is(&rep, "EBUSY") ||
		    msec_left(deadline) <= BUSY_RETRY_MSEC)
			break;
		reply_done(&rep);
		(void)usleep(BUSY_RETRY_MSEC * 1000);
	}
	if (o->json)
		printf("%s\n", rep.text);
	if (json_get_bool(rep.v, "ok", false)) {
		*ret = rep;
		return 0;
	}
	err = json_get_string(rep.v, "error");
	log_err("%s", err ? err : "stackmapd reported an error");
	r = reply_is(&rep, "EACCES") || reply_is(&rep, "EPERM") ? EX_NOPERM : 1;
	reply_done(&rep);
	return r;
}

/* ---- human output ---- */

static void format_size(uint64_t bytes, char *out, size_t len)
{
	static const char *const units[] = { "B", "KiB", "MiB", "GiB", "TiB", "PiB" };
	double v = (double)bytes;
	unsigned u = 0;

	if (bytes < 1024) {
		(void)snprintf(out, len, "%" PRIu64 " B", bytes);
		return;
	}
	while (v >= 1024 && u + 1 < ARRAY_SIZE(units)) {
		v /= 1024;
		u++;
	}
	(void)snprintf(out, len, "%.1f %s", v, units[u]);
}

static bool is_bytes_key(const char *key)
{
	size_t n = key ? strlen(key) : 0;

	return key && (streq(key, "bytes") || (n > 6 && streq(key + n - 6, "_bytes")));
}

/* A scalar as text: integers as sent, other numbers with at most 2 decimals. */
static void format_scalar(const struct json_value *v, char *out, size_t len)
{
	switch (v->type) {
	case JSON_NULL:
		(void)snprintf(out, len, "-");
		break;
	case JSON_BOOL:
		(void)snprintf(out, len, "%s", v->boolean ? "yes" : "no");
		break;
	case JSON_NUMBER:
		if (v->is_integer || fabs(v->number) >= 1e15) {
			(void)snprintf(out, len, "%s", v->string);
		} else {
			char *p;

			(void)snprintf(out, len, "%.2f", v->number);
			p = out + strlen(out) - 1;
			while (p > out && *p == '0')
				*p-- = '\0';
			if (*p == '.')
				*p = '\0';
		}
		break;
	case JSON_STRING:
		(void)snprintf(out, len, "%s", v->string);
		break;
	default:
		(void)snprintf(out, len, "...");
	}
}

static bool is_scalar(const struct json_value *v)
{
	return v->type != JSON_ARRAY && v->type != JSON_OBJECT;
}

static bool is_table(const struct json_value *v)
{
	if (v->type != JSON_ARRAY || v->nr_items == 0)
		return false;
	for (size_t i = 0; i < v->nr_items; i++)
		if (v->items[i]->type != JSON_OBJECT)
			return false;
	return true;
}

/* The items of an array of scalars as "a, b, c" ("-" when empty). */
static void join_scalars(const struct json_value *v, char *out, size_t len)
{
	size_t o = 0;

	(void)snprintf(out, len, "-");
	for (size_t k = 0; k < v->nr_items && o < len - 1; k++) {
		char s[256];

		format_scalar(v->items[k], s, sizeof(s));
		o += (size_t)snprintf(out + o, len - o, "%s%s", k ? ", " : "", s);
	}
}

struct line {
	char *key;
	char *value;
};

struct lines {
	struct line *v;
	size_t n, cap;
	const struct json_value *tables[16];
	size_t nr_tables;
};

static void lines_add(struct lines *l, const char *prefix, const char *key, const char *value)
{
	struct line *n;

	if (GREEDY_REALLOC(l->v, l->cap, l->n + 1) < 0)
		return;
	n = l->v;
	if (strprintf(&n[l->n].key, "%s%s%s", prefix, *prefix ? "." : "", key) < 0)
		return;
	n[l->n].value = strdup(value);
	if (!n[l->n].value) {
		free(n[l->n].key);
		return;
	}
	l->n++;
}

/* Flatten obj into "prefix.key: value" lines; arrays of objects become tables. */
static void collect(struct lines *l, const char *prefix, const struct json_value *obj)
{
	for (size_t i = 0; i < obj->nr_items; i++) {
		const struct json_value *v = obj->items[i];
		char value[4096];

		if (!*prefix && (streq(v->key, "version") || streq(v->key, "ok")))
			continue;
		if (is_scalar(v)) {
			format_scalar(v, value, sizeof(value));
			if (is_bytes_key(v->key) && v->is_integer && v->integer >= 1024) {
				char h[32];

				format_size((uint64_t)v->integer, h, sizeof(h));
				(void)snprintf(value + strlen(value), sizeof(value) - strlen(value),
					       " (%s)", h);
			}
			lines_add(l, prefix, v->key, value);
		} else if (v->type == JSON_OBJECT) {
			_cleanup_free_ char *p = NULL;

			if (strprintf(&p, "%s%s%s", prefix, *prefix ? "." : "", v->key) == 0)
				collect(l, p, v);
		} else if (is_table(v)) {
			if (l->nr_tables < ARRAY_SIZE(l->tables))
				l->tables[l->nr_tables++] = v;
		} else {
			join_scalars(v, value, sizeof(value));
			lines_add(l, prefix, v->key, value);
		}
	}
}

static bool numeric_column(const struct json_value *rows, const char *col)
{
	for (size_t i = 0; i < rows->nr_items; i++) {
		const struct json_value *c = json_get(rows->items[i], col);

		if (c && c->type != JSON_NULL)
			return c->type == JSON_NUMBER;
	}
	return false;
}

/* Columns: every key of the rows, in order of first appearance. */
static void print_table(const struct json_value *rows)
{
	const char *cols[32];
	size_t nr_cols = 0, width[32];
	char cell[256];

	for (size_t i = 0; i < rows->nr_items; i++)
		for (size_t k = 0; k < rows->items[i]->nr_items; k++) {
			const struct json_value *c = rows->items[i]->items[k];
			size_t j;

			if (!is_scalar(c))
				continue;
			for (j = 0; j < nr_cols && !streq(cols[j], c->key); j++)
				;
			if (j == nr_cols && nr_cols < ARRAY_SIZE(cols))
				cols[nr_cols++] = c->key;
		}
	for (size_t j = 0; j < nr_cols; j++) {
		width[j] = strlen(cols[j]);
		for (size_t i = 0; i < rows->nr_items; i++) {
			const struct json_value *c = json_get(rows->items[i], cols[j]);

			if (!c)
				continue;
			if (is_bytes_key(cols[j]) && c->is_integer)
				format_size((uint64_t)c->integer, cell, sizeof(cell));
			else
				format_scalar(c, cell, sizeof(cell));
			width[j] = MAX(width[j], strlen(cell));
		}
	}
	for (size_t j = 0; j < nr_cols; j++) {
		char head[64];
		size_t k;

		/* Headers line up with their cells: numbers are right-aligned. */
		for (k = 0; cols[j][k] && k < sizeof(head) - 1; k++)
			head[k] = (char)(cols[j][k] >= 'a' && cols[j][k] <= 'z' ? cols[j][k] - 'a' + 'A'
										 : cols[j][k]);
		head[k] = '\0';
		if (numeric_column(rows, cols[j]))
			printf("%*s", (int)width[j], head);
		else
			printf("%-*s", j + 1 < nr_cols ? (int)width[j] : 0, head);
		if (j + 1 < nr_cols)
			printf("  ");
	}
	putchar('\n');
	for (size_t i = 0; i < rows->nr_items; i++) {
		for (size_t j = 0; j < nr_cols; j++) {
			const struct json_value *c = json_get(rows->items[i], cols[j]);
			bool right = c && c->type == JSON_NUMBER;

			if (!c)
				(void)snprintf(cell, sizeof(cell), "-");
			else if (is_bytes_key(cols[j]) && c->is_integer)
				format_size((uint64_t)c->integer, cell, sizeof(cell));
			else
				format_scalar(c, cell, sizeof(cell));
			if (right)
				printf("%*s", (int)width[j], cell);
			else
				printf("%-*s", j + 1 < nr_cols ? (int)width[j] : 0, cell);
			if (j + 1 < nr_cols)
				printf("  ");
		}
		putchar('\n');
	}
}

/* Every field but version/ok as aligned "key: value" lines, then the tables. */
static void print_fields(const struct json_value *v)
{
	struct lines l = { 0 };
	size_t w = 0;

	collect(&l, "", v);
	for (size_t i = 0; i < l.n; i++)
		w = MAX(w, strlen(l.v[i].key));
	for (size_t i = 0; i < l.n; i++) {
		printf("%s:%*s %s\n", l.v[i].key, (int)(w - strlen(l.v[i].key)), "", l.v[i].value);
		free(l.v[i].key);
		free(l.v[i].value);
	}
	free(l.v);
	for (size_t i = 0; i < l.nr_tables; i++) {
		if (l.n || i)
			putchar('\n');
		print_table(l.tables[i]);
	}
}

int ctl_flush_quietly(const char *config)
{
	static char *said;		/* the last reason given, said once until it changes */
	struct options o = { .timeout_sec = FLUSH_TIMEOUT_SEC, .config = config };
	struct reply rep = { 0 };
	_cleanup_free_ char *why = NULL;
	int level = log_get_max_level(), r;

	/* a reader of a copy, or without the right to ask, reads what is there */
	log_set_max_level(-1);
	r = transact(&o, "flush", NULL, now_usec(CLOCK_MONOTONIC) + FLUSH_TIMEOUT_SEC * USEC_PER_SEC,
		     &rep);
	log_set_max_level(level);
	/*
	 * A daemon that is there but does not flush is said, though: the
	 * refresh then ends at the daemon's last periodic flush.
	 */
	if (r == 0 && !json_get_bool(rep.v, "ok", false)) {
		const char *err = json_get_string(rep.v, "error");

		if (asprintf(&why, "stackmapd did not flush (%s)", err ? err : "no reason given") < 0)
			why = NULL;
		r = 1;
	} else if (r != 0 && rep.timed_out) {
		if (asprintf(&why, "stackmapd did not answer the flush request within %u s",
			     FLUSH_TIMEOUT_SEC) < 0)
			why = NULL;
	}
	reply_done(&rep);
	if (why && (!said || !streq(said, why))) {
		log_warn("%s: what it recorded since its last periodic flush is not shown", why);
		free(said);
		said = steal_ptr(why);
	}
	return r == 0 ? 0 : -EAGAIN;
}

/* ---- commands ---- */

static int simple(int argc, char **argv, const char *command, unsigned timeout,
		  void (*print)(const struct json_value *v))
{
	struct options o;
	struct reply rep = { 0 };
	int r;

	assert(argv);

	r = parse_options(argc, argv, timeout, &o);
	if (r >= 0)
		return r;
	r = call(&o, command, NULL, &rep);
	if (r == 0 && !o.json && print)
		print(rep.v);
	reply_done(&rep);
	return r;
}

static void print_path(const struct json_value *v)
{
	const char *p = json_get_string(v, "path");

	if (p)
		printf("%s\n", p);
}

int cmd_status(int argc, char **argv)
{
	return simple(argc, argv, "status", TIMEOUT_SEC, print_fields);
}

int cmd_snapshot(int argc, char **argv)
{
	return simple(argc, argv, "snapshot", TIMEOUT_SNAPSHOT_SEC, print_path);
}

int cmd_rotate(int argc, char **argv)
{
	return simple(argc, argv, "rotate", TIMEOUT_SNAPSHOT_SEC, print_path);
}

int cmd_reset(int argc, char **argv)
{
	return simple(argc, argv, "reset", TIMEOUT_SNAPSHOT_SEC, print_fields);
}

static void format_ts(const struct json_value *v, char *out, size_t len)
{
	if (!v || v->type != JSON_NUMBER || !v->is_integer) {
		(void)snprintf(out, len, "-");
		return;
	}
	(void)snprintf(out, len, "%" PRId64 ".%06" PRId64, v->integer / 1000000000,
		       (v->integer % 1000000000) / 1000);
}

static void print_list(const struct json_value *v)
{
	const struct json_value *segs = json_get(v, "segments");
	size_t wpath = strlen("SEGMENT"), n = segs && segs->type == JSON_ARRAY ? segs->nr_items : 0;
	uint64_t total = 0;
	char size[32];

	for (size_t i = 0; i < n; i++) {
		const char *p = json_get_string(segs->items[i], "path");

		wpath = MAX(wpath, p ? strlen(p) : 1);
	}
	if (n)
		printf("%-*s  %10s  %18s  %18s  %10s  %s\n", (int)wpath, "SEGMENT", "SIZE",
		       "FIRST (s)", "LAST (s)", "SPAN (s)", "COMPLETE");
	for (size_t i = 0; i < n; i++) {
		const struct json_value *s = segs->items[i];
		const struct json_value *b = json_get(s, "bytes");
		const struct json_value *f = json_get(s, "first_ts");
		const struct json_value *l = json_get(s, "last_ts");
		const struct json_value *c = json_get(s, "complete");
		const char *p = json_get_string(s, "path");
		char first[32], last[32], span[32], capture[512];

		if (b && b->is_integer) {
			format_size((uint64_t)b->integer, size, sizeof(size));
			total += (uint64_t)b->integer;
		} else {
			(void)snprintf(size, sizeof(size), "-");
		}
		format_ts(f, first, sizeof(first));
		format_ts(l, last, sizeof(last));
		if (f && l && f->is_integer && l->is_integer && l->integer >= f->integer)
			(void)snprintf(span, sizeof(span), "%.3f",
				       (double)(l->integer - f->integer) / 1e9);
		else
			(void)snprintf(span, sizeof(span), "-");
		printf("%-*s  %10s  %18s  %18s  %10s  %s\n", (int)wpath, p ? p : "-", size, first, last,
		       span, !c || c->type != JSON_BOOL ? "-" : c->boolean ? "yes" : "no");
		/* the daemon's archive is on this machine: say what a crash capture is */
		if (p && capture_describe_file(p, capture, sizeof(capture)) > 0)
			printf("  crash capture: %s\n", capture);
	}
	format_size(total, size, sizeof(size));
	printf("%zu segment%s, %s%s\n", n, n == 1 ? "" : "s", size,
	       json_get_bool(v, "truncated", false) ? " (list truncated: more are on disk)" : "");
}

int cmd_list(int argc, char **argv)
{
	return simple(argc, argv, "list", TIMEOUT_SEC, print_list);
}

int cmd_reload(int argc, char **argv)
{
	struct options o;
	struct reply rep = { 0 };
	const struct json_value *keys;
	int r;

	assert(argv);

	r = parse_options(argc, argv, TIMEOUT_SEC, &o);
	if (r >= 0)
		return r;
	r = call(&o, "reload", NULL, &rep);
	if (r != 0)
		return r;
	keys = json_get(rep.v, "restart_needed");
	if (!o.json && keys && ((keys->type == JSON_ARRAY && keys->nr_items) ||
				(keys->type == JSON_STRING && *keys->string))) {
		char list[4096];

		if (keys->type == JSON_ARRAY)
			join_scalars(keys, list, sizeof(list));
		else
			(void)snprintf(list, sizeof(list), "%s", keys->string);
		log_warn("reloaded; these settings take effect only after a restart: %s", list);
	}
	reply_done(&rep);
	return 0;
}
