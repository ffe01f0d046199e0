/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <fcntl.h>
#include <grp.h>
#include <inttypes.h>
#include <stdarg.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include <systemd/sd-event.h>

#include "ctl.h"
#include "log.h"

#ifndef SO_PEERGROUPS
#define SO_PEERGROUPS 59		/* Linux 4.13 */
#endif

#define CTL_PACKET_MIN 4096		/* smallest chunk when the socket refuses CTL_PACKET_MAX */
#define ACCEPT_RETRY_USEC (100 * USEC_PER_MSEC)

enum client_state {
	CLIENT_READING,			/* waiting for a request; timer armed */
	CLIENT_PENDING,			/* a handler owns the request; no timer */
	CLIENT_WRITING,			/* a reply is queued; timer armed */
};

struct ctl_request;

struct ctl_client {
	struct ctl *ctl;
	struct ctl_client *prev, *next;
	int fd;
	sd_event_source *io;
	sd_event_source *timer;
	enum client_state state;
	struct ucred cred;
	struct ctl_request *req;	/* CLIENT_PENDING: the request a handler owns */
	char *out;			/* CLIENT_WRITING: reply text */
	size_t out_len;
	size_t out_off;
	size_t chunk;			/* bytes per packet */
	bool close_after_write;		/* an error reply: close once sent */
	bool dispatching;		/* inside one of our callbacks: free later */
	bool closed;			/* fd and sources released, unlinked */
};

struct ctl_request {
	struct ctl_client *client;	/* NULL once the client (or the ctl) has gone */
	bool in_handler;		/* the handler runs: its caller frees */
	bool replied;
	struct ucred cred;
	struct ctl_command cmd;
};

struct ctl {
	sd_event *event;
	sd_event_source *listen_io;
	sd_event_source *retry;		/* re-enables accept after EMFILE */
	int fd;
	char *path;
	dev_t dev;			/* identity of our socket file, to unlink only ours */
	ino_t ino;
	bool has_group;
	gid_t gid;
	char *group;
	const struct ctl_handlers *handlers;
	void *userdata;
	struct ctl_client *clients;
	unsigned nr_clients;
	char rbuf[CTL_REQUEST_MAX + 1];
};

static void client_flush(struct ctl_client *cl);

/* ---- clients ---- */

static void client_release(struct ctl_client *cl)
{
	struct ctl *c = cl->ctl;

	if (cl->closed)
		return;
	cl->closed = true;
	if (cl->req) {
		cl->req->client = NULL;
		cl->req = NULL;
	}
	if (cl->prev)
		cl->prev->next = cl->next;
	else
		c->clients = cl->next;
	if (cl->next)
		cl->next->prev = cl->prev;
	c->nr_clients--;
	cl->io = sd_event_source_disable_unref(cl->io);
	cl->timer = sd_event_source_disable_unref(cl->timer);
	closep(&cl->fd);
	cl->fd = -1;
	free(cl->out);
	cl->out = NULL;
}

/* Close and free the client, or only close it while one of its callbacks runs. */
static void client_free(struct ctl_client *cl)
{
	client_release(cl);
	if (!cl->dispatching)
		free(cl);
}

/*
 * Read and drop whatever the client already sent, then close: closing an
 * AF_UNIX socket with unread data makes the peer's next recv() fail with
 * ECONNRESET before it sees our (queued) reply.
 */
static void drain(int fd)
{
	char b[256];

	while (recv(fd, b, sizeof(b), MSG_DONTWAIT) > 0)
		;
}

/* Close the client after its last reply (see drain()). */
static void client_finish(struct ctl_client *cl)
{
	if (!cl->closed) {
		cl->io = sd_event_source_disable_unref(cl->io);
		drain(cl->fd);
	}
	client_free(cl);
}

static int client_arm_timer(struct ctl_client *cl)
{
	int r;

	r = sd_event_source_set_time_relative(cl->timer, CTL_CLIENT_TIMEOUT_USEC);
	if (r >= 0)
		r = sd_event_source_set_enabled(cl->timer, SD_EVENT_ONESHOT);
	return r;
}

static void client_set_state(struct ctl_client *cl, enum client_state state)
{
	static const uint32_t events[] = {
		[CLIENT_READING] = EPOLLIN,
		/* Only notice a hang-up while a handler works on the request. */
		[CLIENT_PENDING] = EPOLLRDHUP,
		[CLIENT_WRITING] = EPOLLOUT,
	};
	int r;

	cl->state = state;
	r = sd_event_source_set_io_events(cl->io, events[state]);
	if (r >= 0)
		r = state == CLIENT_PENDING ? sd_event_source_set_enabled(cl->timer, SD_EVENT_OFF)
					    : client_arm_timer(cl);
	if (r < 0) {
		log_errno(LOG_WARNING, r, "control: cannot watch client (pid %d), closing it",
			  (int)cl->cred.pid);
		client_free(cl);
	}
}

/* Queue text (ownership taken) as the client's reply and start sending it. */
static void client_queue(struct ctl_client *cl, char *text, size_t len, bool close_after)
{
	free(cl->out);
	cl->out = text;
	cl->out_len = len;
	cl->out_off = 0;
	cl->close_after_write = close_after;
	client_flush(cl);
}

static void client_queue_error(struct ctl_client *cl, int error, const char *message)
{
	char *text = NULL;

	if (ctl_reply_format_error(error, message, &text) < 0) {
		client_finish(cl);
		return;
	}
	client_queue(cl, text, strlen(text), true);
}

/*
 * Send the queued reply in packets of cl->chunk bytes; a reply longer than
 * one packet is reassembled by the client (it reads until the JSON object
 * is complete). Stops at EAGAIN and continues on EPOLLOUT.
 */
static void client_flush(struct ctl_client *cl)
{
	while (cl->out_off < cl->out_len) {
		size_t n = MIN(cl->out_len - cl->out_off, cl->chunk);
		ssize_t k = send(cl->fd, cl->out + cl->out_off, n, MSG_DONTWAIT | MSG_NOSIGNAL);

		if (k < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN) {
				if (cl->state != CLIENT_WRITING)
					client_set_state(cl, CLIENT_WRITING);
				return;
			}
			/* The socket's send buffer is smaller than a packet (small wmem_default). */
			if (errno == EMSGSIZE && cl->chunk > CTL_PACKET_MIN) {
				cl->chunk /= 2;
				continue;
			}
			log_debug("control: client pid %d gone before its reply was sent: %s",
				  (int)cl->cred.pid, strerror(errno));
			client_free(cl);
			return;
		}
		cl->out_off += (size_t)k;
	}
	free(cl->out);
	cl->out = NULL;
	if (cl->close_after_write)
		client_finish(cl);
	else
		client_set_state(cl, CLIENT_READING);
}

/* ---- requests ---- */

static struct ctl_request *request_free(struct ctl_request *req)
{
	if (req && req->client)
		req->client->req = NULL;
	free(req);
	return NULL;
}

/* Send text (ownership taken) as req's reply and free req, unless its handler still runs. */
static void request_done(struct ctl_request *req, char *text, size_t len)
{
	struct ctl_client *cl = req->client;

	req->replied = true;
	if (cl) {
		cl->req = NULL;
		req->client = NULL;
		client_queue(cl, text, len, false);
	} else {
		free(text);
	}
	if (!req->in_handler)
		free(req);
}

int ctl_reply(struct ctl_request *req, struct json_writer *w)
{
	char *text = NULL;
	size_t len;
	int r;

	if (w->depth == 1 && w->in_object[1])
		json_object_close(w);
	r = json_writer_finish(w, &text, &len);
	if (r < 0) {
		json_writer_done(w);
		(void)ctl_reply_error(req, r, r == -E2BIG ? "reply too large" : "cannot build reply: %s",
				      strerror(-r));
		return r;
	}
	request_done(req, text, len);
	return 0;
}

int ctl_reply_error(struct ctl_request *req, int error, const char *fmt, ...)
{
	_cleanup_free_ char *msg = NULL;
	char *text = NULL;
	va_list ap;
	int r;

	va_start(ap, fmt);
	r = vasprintf(&msg, fmt, ap);
	va_end(ap);
	if (r < 0)
		msg = NULL;
	r = ctl_reply_format_error(error, msg ? msg : "error", &text);
	if (r < 0) {
		/* Nothing to send: drop the client rather than leave it waiting. */
		struct ctl_client *cl = req->client;

		if (cl) {
			cl->req = NULL;
			req->client = NULL;
		}
		request_done(req, NULL, 0);
		if (cl)
			client_free(cl);
		return r;
	}
	request_done(req, text, strlen(text));
	return 0;
}

const char *ctl_request_command(const struct ctl_request *req)
{
	return req->cmd.command;
}

bool ctl_request_connected(const struct ctl_request *req)
{
	return req->client != NULL;
}

static void reply_ping(struct ctl_client *cl)
{
	struct json_writer w;
	char *text = NULL;
	size_t len;

	json_writer_init(&w, 0);
	ctl_reply_begin(&w, true);
	json_add_string(&w, "server", PACKAGE_NAME " " PACKAGE_VERSION);
	json_add_int(&w, "pid", getpid());
	json_object_close(&w);
	if (json_writer_finish(&w, &text, &len) < 0)
		client_finish(cl);
	else
		client_queue(cl, text, len, false);
	json_writer_done(&w);
}

static void dispatch(struct ctl_client *cl, const struct ctl_command *cmd)
{
	struct ctl *c = cl->ctl;
	struct ctl_request *req;
	int r = -EOPNOTSUPP;

	if (streq(cmd->command, "ping")) {
		reply_ping(cl);
		return;
	}
	req = malloc(sizeof(*req));
	if (!req) {
		client_queue_error(cl, -ENOMEM, "out of memory");
		return;
	}
	*req = (struct ctl_request){ .client = cl, .cred = cl->cred, .in_handler = true };
	memcpy(&req->cmd, cmd, sizeof(*cmd));
	/* cmd's pointers point into cmd->text: rebase them onto the copy. */
	req->cmd.command = req->cmd.text + (cmd->command - cmd->text);
	for (unsigned i = 0; i < cmd->args.n; i++) {
		req->cmd.args.v[i].key = req->cmd.text + (cmd->args.v[i].key - cmd->text);
		req->cmd.args.v[i].value = req->cmd.text + (cmd->args.v[i].value - cmd->text);
	}
	cl->req = req;
	client_set_state(cl, CLIENT_PENDING);
	if (cl->closed) {
		request_free(req);
		return;
	}
	log_debug("control: '%s' from uid %u pid %d", req->cmd.command, (unsigned)req->cred.uid,
		  (int)req->cred.pid);
	if (c->handlers && c->handlers->request)
		r = c->handlers->request(c->userdata, req, req->cmd.command, &req->cmd.args);
	req->in_handler = false;
	if (req->replied) {
		free(req);
		return;
	}
	if (r >= 0)
		return;		/* the handler replies later */
	if (r == -EOPNOTSUPP)
		(void)ctl_reply_error(req, r, "unknown command '%s'", req->cmd.command);
	else if (r == -EINVAL)
		(void)ctl_reply_error(req, r, "invalid argument for '%s'", req->cmd.command);
	else
		(void)ctl_reply_error(req, r, "'%s' failed: %s", req->cmd.command, strerror(-r));
}

static void client_read(struct ctl_client *cl)
{
	struct ctl *c = cl->ctl;
	struct iovec iov = { .iov_base = c->rbuf, .iov_len = sizeof(c->rbuf) };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
	struct ctl_command cmd;
	const char *why = "bad request";
	ssize_t n;
	int r;

	n = recvmsg(cl->fd, &mh, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
	if (n < 0) {
		if (errno == EAGAIN || errno == EINTR)
			return;
		client_free(cl);
		return;
	}
	if (n == 0) {
		client_free(cl);	/* hung up (or sent an empty packet: same thing on SEQPACKET) */
		return;
	}
	if (mh.msg_flags & MSG_TRUNC)
		n = CTL_REQUEST_MAX + 1;
	r = ctl_command_parse(c->rbuf, (size_t)n, &cmd, &why);
	if (r < 0) {
		log_debug("control: bad request from uid %u pid %d: %s", (unsigned)cl->cred.uid,
			  (int)cl->cred.pid, why);
		client_queue_error(cl, r, why);
		return;
	}
	dispatch(cl, &cmd);
}

static int on_client_io(sd_event_source *s, int fd, uint32_t revents, void *userdata)
{
	struct ctl_client *cl = userdata;

	cl->dispatching = true;
	if (cl->state == CLIENT_READING && (revents & (EPOLLIN | EPOLLHUP | EPOLLERR)))
		client_read(cl);
	else if (cl->state == CLIENT_WRITING && (revents & EPOLLOUT))
		client_flush(cl);
	else if (revents & (EPOLLHUP | EPOLLRDHUP | EPOLLERR))
		client_free(cl);	/* a pending request stays valid, its reply is dropped */
	cl->dispatching = false;
	if (cl->closed)
		free(cl);
	return 0;
}

static int on_client_timeout(sd_event_source *s, uint64_t usec, void *userdata)
{
	struct ctl_client *cl = userdata;

	cl->dispatching = true;
	if (cl->state == CLIENT_READING) {
		log_debug("control: client pid %d sent no complete request in time, closing",
			  (int)cl->cred.pid);
		client_queue_error(cl, -ETIMEDOUT, "timeout: no complete request within 5 s");
	} else {
		log_debug("control: client pid %d does not read its reply, closing", (int)cl->cred.pid);
		client_free(cl);
	}
	cl->dispatching = false;
	if (cl->closed)
		free(cl);
	return 0;
}

/* ---- peers ---- */

static bool gid_in(const gid_t *list, size_t n, gid_t gid)
{
	for (size_t i = 0; i < n; i++)
		if (list[i] == gid)
			return true;
	return false;
}

/*
 * Supplementary groups from /proc/PID/status, for kernels without
 * SO_PEERGROUPS (before 4.13). The Uid: line must still match the peer's
 * uid, so that a recycled pid cannot lend its groups.
 */
static int proc_in_group(const struct ucred *cred, gid_t gid)
{
	_cleanup_free_ char *status = NULL;
	char path[64];
	const char *p;
	unsigned uid;
	int r;

	(void)snprintf(path, sizeof(path), "/proc/%d/status", (int)cred->pid);
	r = read_file(path, &status, NULL);
	if (r < 0)
		return r;
	p = strstr(status, "\nUid:");
	if (!p || sscanf(p + 5, "%u", &uid) != 1 || uid != cred->uid)
		return -ESRCH;
	p = strstr(status, "\nGroups:");
	if (!p)
		return 0;
	p += 8;
	while (*p && *p != '\n') {
		char *end;
		unsigned long g = strtoul(p, &end, 10);

		if (end == p)
			p++;
		else if (g == gid)
			return 1;
		else
			p = end;
	}
	return 0;
}

/* 1 if the peer on fd is in group gid (primary or supplementary), 0 if not, or -errno. */
static int peer_in_group(int fd, const struct ucred *cred, gid_t gid)
{
	gid_t small[64];
	_cleanup_free_ gid_t *big = NULL;
	socklen_t len = sizeof(small);

	if (cred->gid == gid)
		return 1;
	if (getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, small, &len) == 0)
		return gid_in(small, len / sizeof(gid_t), gid);
	if (errno == ERANGE) {
		big = malloc(len);
		if (!big)
			return -ENOMEM;
		if (getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, big, &len) < 0)
			return -errno;
		return gid_in(big, len / sizeof(gid_t), gid);
	}
	if (errno != ENOPROTOOPT)
		return -errno;
	return proc_in_group(cred, gid);
}

/* Best effort: tell a refused peer why, then close it. */
static void reject(int fd, int error, const char *message)
{
	_cleanup_free_ char *text = NULL;

	if (ctl_reply_format_error(error, message, &text) == 0)
		(void)send(fd, text, strlen(text), MSG_DONTWAIT | MSG_NOSIGNAL);
	drain(fd);
	(void)close(fd);
}

static int on_retry_accept(sd_event_source *s, uint64_t usec, void *userdata)
{
	struct ctl *c = userdata;

	(void)sd_event_source_set_enabled(c->listen_io, SD_EVENT_ON);
	return 0;
}

static void accept_one(struct ctl *c, int fd)
{
	struct ucred cred;
	socklen_t len = sizeof(cred);
	struct ctl_client *cl;
	char msg[160];
	int r;

	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0) {
		(void)close(fd);
		return;
	}
	if (cred.uid != 0) {
		r = c->has_group ? peer_in_group(fd, &cred, c->gid) : 0;
		if (r <= 0) {
			if (c->has_group)
				(void)snprintf(msg, sizeof(msg),
					       "permission denied: uid %u is neither root nor in group '%s'",
					       (unsigned)cred.uid, c->group);
			else
				(void)snprintf(msg, sizeof(msg),
					       "permission denied: uid %u is not root (no [control] group is configured)",
					       (unsigned)cred.uid);
			log_notice("control: refused uid %u pid %d: %s", (unsigned)cred.uid, (int)cred.pid,
				   r < 0 ? strerror(-r) : "not authorised");
			reject(fd, -EACCES, msg);
			return;
		}
	}
	if (c->nr_clients >= CTL_CLIENTS_MAX) {
		log_debug("control: refused pid %d: %u clients connected", (int)cred.pid, c->nr_clients);
		(void)snprintf(msg, sizeof(msg), "too many clients (%u), try again", c->nr_clients);
		reject(fd, -EBUSY, msg);
		return;
	}

	cl = calloc(1, sizeof(*cl));
	if (!cl) {
		reject(fd, -ENOMEM, "out of memory");
		return;
	}
	*cl = (struct ctl_client){ .ctl = c, .fd = fd, .cred = cred, .chunk = CTL_PACKET_MAX };
	r = sd_event_add_io(c->event, &cl->io, fd, EPOLLIN, on_client_io, cl);
	if (r >= 0)
		r = sd_event_add_time_relative(c->event, &cl->timer, CLOCK_MONOTONIC,
					       CTL_CLIENT_TIMEOUT_USEC, 100 * USEC_PER_MSEC,
					       on_client_timeout, cl);
	if (r < 0) {
		log_errno(LOG_WARNING, r, "control: cannot watch a new client, closing it");
		sd_event_source_disable_unref(cl->io);
		free(cl);
		reject(fd, r, "server error");
		return;
	}
	cl->next = c->clients;
	if (c->clients)
		c->clients->prev = cl;
	c->clients = cl;
	c->nr_clients++;
	cl->state = CLIENT_READING;
}

static int on_listen_io(sd_event_source *s, int lfd, uint32_t revents, void *userdata)
{
	struct ctl *c = userdata;
	int r;

	for (;;) {
		int fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);

		if (fd >= 0) {
			accept_one(c, fd);
			continue;
		}
		if (errno == EINTR || errno == ECONNABORTED)
			continue;
		if (errno == EAGAIN)
			return 0;
		/*
		 * Out of fds or memory: the listening socket stays readable, so
		 * pause accepting instead of spinning, and try again shortly.
		 */
		r = -errno;
		log_errno(LOG_WARNING, r, "control: cannot accept a client, pausing 100 ms");
		(void)sd_event_source_set_enabled(c->listen_io, SD_EVENT_OFF);
		if (!c->retry)
			r = sd_event_add_time_relative(c->event, &c->retry, CLOCK_MONOTONIC,
						       ACCEPT_RETRY_USEC, 0, on_retry_accept, c);
		else
			r = sd_event_source_set_time_relative(c->retry, ACCEPT_RETRY_USEC);
		if (r >= 0)
			r = sd_event_source_set_enabled(c->retry, SD_EVENT_ONESHOT);
		if (r < 0)
			(void)sd_event_source_set_enabled(c->listen_io, SD_EVENT_ON);
		return 0;
	}
}

/* ---- the socket ---- */

static int resolve_group(const char *group, gid_t *ret)
{
	_cleanup_free_ char *buf = NULL;
	struct group grp, *res = NULL;
	size_t size = 1024;
	char *end;
	int r;

	errno = 0;
	unsigned long g = strtoul(group, &end, 10);
	if (*group && !*end && errno == 0 && g < (gid_t)-1) {
		*ret = (gid_t)g;
		return 0;
	}
	for (;;) {
		free(buf);
		buf = malloc(size);
		if (!buf)
			return -ENOMEM;
		r = getgrnam_r(group, &grp, buf, size, &res);
		if (r != ERANGE || size > 1024 * 1024)
			break;
		size *= 2;
	}
	if (r != 0)
		return -r;
	if (!res)
		return -ENOENT;
	*ret = grp.gr_gid;
	return 0;
}

/* mkdir -p of the directory that will hold path; new directories get mode 0755. */
static int mkdir_parents(const char *path)
{
	_cleanup_free_ char *dir = strdup(path);
	char *slash;

	if (!dir)
		return -ENOMEM;
	slash = strrchr(dir, '/');
	if (!slash || slash == dir)
		return 0;
	*slash = '\0';
	for (char *p = dir + 1; ; p++) {
		if (*p != '/' && *p != '\0')
			continue;
		char saved = *p;

		*p = '\0';
		if (mkdir(dir, 0755) < 0 && errno != EEXIST)
			return -errno;
		*p = saved;
		if (!saved)
			break;
	}
	return 0;
}

/* Refuse if someone listens on path; remove a stale socket; refuse to replace other files. */
static int remove_stale(const char *path, const struct sockaddr_un *sa, socklen_t salen)
{
	_cleanup_close_ int fd = -1;
	struct stat st;

	if (lstat(path, &st) < 0)
		return errno == ENOENT ? 0 : -errno;
	if (!S_ISSOCK(st.st_mode))
		return -EEXIST;
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -errno;
	if (connect(fd, (const struct sockaddr *)sa, salen) == 0 || errno == EAGAIN)
		return -EADDRINUSE;
	if (unlink(path) < 0 && errno != ENOENT)
		return -errno;
	return 0;
}

static int apply_group(struct ctl *c, bool has_group, gid_t gid)
{
	if (chmod(c->path, has_group ? 0660 : 0600) < 0)
		return -errno;
	if (has_group && chown(c->path, (uid_t)-1, gid) < 0)
		return -errno;
	return 0;
}

int ctl_set_group(struct ctl *c, const char *group)
{
	_cleanup_free_ char *name = NULL;
	gid_t gid = 0;
	int r;

	if (group) {
		r = resolve_group(group, &gid);
		if (r < 0)
			return r;
		name = strdup(group);
		if (!name)
			return -ENOMEM;
	}
	r = apply_group(c, !!group, gid);
	if (r < 0)
		return r;
	free(c->group);
	c->group = steal_ptr(name);
	c->has_group = !!group;
	c->gid = gid;
	return 0;
}

int ctl_new(struct sd_event *e, const char *path, const char *group,
	    const struct ctl_handlers *h, void *userdata, struct ctl **ret)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	socklen_t salen;
	struct ctl *c;
	struct stat st;
	gid_t gid = 0;
	int r;

	if (!path || !*path)
		return -EINVAL;
	if (strlen(path) >= sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	memcpy(sa.sun_path, path, strlen(path) + 1);
	salen = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + strlen(path) + 1);
	if (group) {
		r = resolve_group(group, &gid);
		if (r < 0)
			return r;
	}

	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->fd = -1;
	c->event = sd_event_ref(e);
	c->handlers = h;
	c->userdata = userdata;
	c->path = strdup(path);
	c->group = group ? strdup(group) : NULL;
	c->has_group = !!group;
	c->gid = gid;
	if (!c->path || (group && !c->group)) {
		r = -ENOMEM;
		goto fail;
	}

	r = mkdir_parents(path);
	if (r < 0)
		goto fail;
	r = remove_stale(path, &sa, salen);
	if (r < 0)
		goto fail;
	c->fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (c->fd < 0) {
		r = -errno;
		goto fail;
	}
	if (bind(c->fd, (struct sockaddr *)&sa, salen) < 0) {
		r = -errno;
		goto fail;
	}
	if (lstat(path, &st) == 0) {
		c->dev = st.st_dev;
		c->ino = st.st_ino;
	}
	/*
	 * Set mode and group before listen(): until then connect() is refused,
	 * so nobody can slip in while the socket still has the umask's mode.
	 */
	r = apply_group(c, c->has_group, gid);
	if (r < 0)
		goto fail;
	if (listen(c->fd, SOMAXCONN) < 0) {
		r = -errno;
		goto fail;
	}
	r = sd_event_add_io(e, &c->listen_io, c->fd, EPOLLIN, on_listen_io, c);
	if (r < 0)
		goto fail;
	*ret = c;
	return 0;
fail:
	ctl_free(c);
	return r;
}

struct ctl *ctl_free(struct ctl *c)
{
	struct stat st;

	if (!c)
		return NULL;
	while (c->clients)
		client_free(c->clients);
	c->listen_io = sd_event_source_disable_unref(c->listen_io);
	c->retry = sd_event_source_disable_unref(c->retry);
	if (c->fd >= 0) {
		/* Remove the socket file only if it is still ours. */
		if (c->ino && lstat(c->path, &st) == 0 && st.st_dev == c->dev && st.st_ino == c->ino)
			(void)unlink(c->path);
		(void)close(c->fd);
	}
	sd_event_unref(c->event);
	free(c->path);
	free(c->group);
	free(c);
	return NULL;
}
