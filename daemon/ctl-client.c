/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * One client of the control socket: reading one request at a time into
 * the ctl's buffer, answering "ping", handing other commands to the
 * handler, queuing the reply (split into packets the socket accepts,
 * within CTL_QUEUED_MAX for all clients) and closing after an error reply,
 * CTL_IDLE_TIMEOUT_USEC without a request or CTL_REPLY_TIMEOUT_USEC
 * without reading the reply; evicting the client idle longest when a new
 * one needs its place; the requests a handler owns until it replies
 * with ctl_reply*(); and the server's figures for status. ctl.c calls
 * down here; nothing here calls ctl.c.
 */
#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <sys/epoll.h>

#include "ctl-internal.h"
#include "log.h"

#define CTL_PACKET_MIN 4096		/* smallest chunk when the socket refuses CTL_PACKET_MAX */

static void client_flush(struct ctl_client *cl);

static void client_out_free(struct ctl_client *cl)
{
	if (cl->out)
		cl->ctl->queued -= cl->out_len;
	free(cl->out);
	cl->out = NULL;
	cl->out_len = cl->out_off = 0;
}

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
	client_out_free(cl);
}

/* Close and free the client, or only close it while one of its callbacks runs. */
void ctl_client_free(struct ctl_client *cl)
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
void ctl_drain_fd(int fd)
{
	char b[256];

	while (recv(fd, b, sizeof(b), MSG_DONTWAIT) > 0)
		;
}

/* Close the client after its last reply (see ctl_drain_fd()). */
static void client_finish(struct ctl_client *cl)
{
	if (!cl->closed) {
		cl->io = sd_event_source_disable_unref(cl->io);
		ctl_drain_fd(cl->fd);
	}
	ctl_client_free(cl);
}

static int client_arm_timer(struct ctl_client *cl)
{
	int r;

	r = sd_event_source_set_time_relative(cl->timer,
					      cl->state == CLIENT_READING ? CTL_IDLE_TIMEOUT_USEC :
					      cl->state == CLIENT_PENDING ? CTL_HANDLER_TIMEOUT_USEC :
					      CTL_REPLY_TIMEOUT_USEC);
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
	if (state == CLIENT_READING)
		cl->idle_since = now_usec(CLOCK_MONOTONIC);
	r = sd_event_source_set_io_events(cl->io, events[state]);
	if (r >= 0)
		r = client_arm_timer(cl);
	if (r < 0) {
		log_errno(LOG_WARNING, r, "control: cannot watch client (pid %d), closing it",
			  (int)cl->cred.pid);
		ctl_client_free(cl);
	}
}

/* Queue text (ownership taken) as the client's reply and start sending it. */
static void client_queue(struct ctl_client *cl, char *text, size_t len, bool close_after)
{
	client_out_free(cl);
	cl->out = text;
	cl->out_len = len;
	cl->out_off = 0;
	cl->ctl->queued += len;
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
			ctl_client_free(cl);
			return;
		}
		cl->out_off += (size_t)k;
	}
	client_out_free(cl);
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
		/*
		 * Replies wait in our memory until their clients read them:
		 * bound the total, so that many clients asking for long replies
		 * and never reading them cannot grow the daemon without limit.
		 */
		if (text && cl->ctl->queued + len > CTL_QUEUED_MAX) {
			free(text);
			client_queue_error(cl, -EBUSY, "server busy: too many replies waiting to be read, try again");
		} else {
			client_queue(cl, text, len, false);
		}
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

	assert(req);
	assert(w);

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

	assert(req);
	assert(fmt);

	va_start(ap, fmt);
	(void)vstrprintf(&msg, fmt, ap);
	va_end(ap);
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
			ctl_client_free(cl);
		return r;
	}
	request_done(req, text, strlen(text));
	return 0;
}

const char *ctl_request_command(const struct ctl_request *req)
{
	assert(req);
	return req->cmd.command;
}

bool ctl_request_connected(const struct ctl_request *req)
{
	assert(req);
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
		ctl_client_free(cl);
		return;
	}
	if (n == 0) {
		ctl_client_free(cl);	/* hung up (or sent an empty packet: same thing on SEQPACKET) */
		return;
	}
	if (mh.msg_flags & MSG_TRUNC)
		n = CTL_REQUEST_MAX + 1;
	r = ctl_command_parse(c->rbuf, (size_t)n, &cmd, &why);
	if (r < 0) {
		c->stats.bad_requests++;
		log_debug("control: bad request from uid %u pid %d: %s", (unsigned)cl->cred.uid,
			  (int)cl->cred.pid, why);
		client_queue_error(cl, r, why);
		return;
	}
	cl->requests++;
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
		ctl_client_free(cl);	/* a pending request stays valid, its reply is dropped */
	cl->dispatching = false;
	if (cl->closed)
		free(cl);
	return 0;
}

static int on_client_timeout(sd_event_source *s, uint64_t usec, void *userdata)
{
	struct ctl_client *cl = userdata;
	struct ctl *c = cl->ctl;
	char msg[64];

	cl->dispatching = true;
	if (cl->state == CLIENT_READING) {
		c->stats.idle_timeouts++;
		(void)log_ratelimit_errno(&c->rl_idle, LOG_NOTICE, -ETIMEDOUT,
					  "control: client pid %d sent no request within %u s, closing it (%" PRIu64 " so far)",
					  (int)cl->cred.pid, (unsigned)(CTL_IDLE_TIMEOUT_USEC / USEC_PER_SEC),
					  c->stats.idle_timeouts);
		(void)snprintf(msg, sizeof(msg), "timeout: no request within %u s",
			       (unsigned)(CTL_IDLE_TIMEOUT_USEC / USEC_PER_SEC));
		client_queue_error(cl, -ETIMEDOUT, msg);
	} else if (cl->state == CLIENT_PENDING) {
		/* the handler waits on something that may never come: the client does not */
		c->stats.handler_timeouts++;
		(void)log_ratelimit_errno(&c->rl_reply, LOG_WARNING, -ETIMEDOUT,
					  "control: '%s' from pid %d got no reply within %u s, answering "
					  "with an error (%" PRIu64 " so far)",
					  cl->req ? cl->req->cmd.command : "?", (int)cl->cred.pid,
					  (unsigned)(CTL_HANDLER_TIMEOUT_USEC / USEC_PER_SEC),
					  c->stats.handler_timeouts);
		if (cl->req) {
			/* the request stays the handler's; its reply is dropped */
			cl->req->client = NULL;
			cl->req = NULL;
		}
		(void)snprintf(msg, sizeof(msg), "timeout: no reply within %u s",
			       (unsigned)(CTL_HANDLER_TIMEOUT_USEC / USEC_PER_SEC));
		client_queue_error(cl, -ETIMEDOUT, msg);
	} else {
		c->stats.reply_timeouts++;
		(void)log_ratelimit_errno(&c->rl_reply, LOG_NOTICE, -ETIMEDOUT,
					  "control: client pid %d did not read its reply within %u s, closing it (%" PRIu64 " so far)",
					  (int)cl->cred.pid, (unsigned)(CTL_REPLY_TIMEOUT_USEC / USEC_PER_SEC),
					  c->stats.reply_timeouts);
		ctl_client_free(cl);
	}
	cl->dispatching = false;
	if (cl->closed)
		free(cl);
	return 0;
}

/* Whether a is a better victim than b (NULL: none yet). */
static bool more_idle(const struct ctl_client *a, const struct ctl_client *b)
{
	if (!b)
		return true;
	/* A client that never asked anything goes before one that has been served. */
	if ((a->requests == 0) != (b->requests == 0))
		return a->requests == 0;
	return a->idle_since < b->idle_since;
}

struct ctl_client *ctl_client_idlest(struct ctl *c)
{
	struct ctl_client *best = NULL;
	char b;

	for (struct ctl_client *cl = c->clients; cl; cl = cl->next) {
		if (cl->state != CLIENT_READING || cl->dispatching || !more_idle(cl, best))
			continue;
		/* A request already queued on the socket is not idleness: it is next in line. */
		if (recv(cl->fd, &b, 1, MSG_PEEK | MSG_DONTWAIT) > 0)
			continue;
		best = cl;
	}
	return best;
}

void ctl_client_evict(struct ctl_client *cl)
{
	_cleanup_free_ char *text = NULL;

	if (ctl_reply_format_error(-EBUSY, "closed to make room for a new client (this one was idle longest)",
				   &text) == 0)
		(void)send(cl->fd, text, strlen(text), MSG_DONTWAIT | MSG_NOSIGNAL);
	client_finish(cl);
}

void ctl_get_stats(const struct ctl *c, struct ctl_stats *ret)
{
	assert(c);
	assert(ret);
	*ret = c->stats;
	ret->clients = c->nr_clients;
}

void ctl_request_add_stats(const struct ctl_request *req, struct json_writer *w)
{
	struct ctl_stats st;

	assert(req);
	assert(w);

	if (!req->client)
		return;
	ctl_get_stats(req->client->ctl, &st);
	json_object_open(w, "control");
	json_add_uint(w, "clients", st.clients);
	json_add_uint(w, "max_clients", CTL_CLIENTS_MAX);
	json_add_uint(w, "accepted", st.accepted);
	json_add_uint(w, "denied", st.denied);
	json_add_uint(w, "refused", st.refused);
	json_add_uint(w, "evicted", st.evicted);
	json_add_uint(w, "idle_timeouts", st.idle_timeouts);
	json_add_uint(w, "reply_timeouts", st.reply_timeouts);
	json_add_uint(w, "handler_timeouts", st.handler_timeouts);
	json_add_uint(w, "bad_requests", st.bad_requests);
	json_object_close(w);
}

int ctl_client_new(struct ctl *c, int fd, const struct ucred *cred)
{
	struct ctl_client *cl;
	int r;

	cl = calloc(1, sizeof(*cl));
	if (!cl)
		return -ENOMEM;
	*cl = (struct ctl_client){ .ctl = c, .fd = fd, .cred = *cred, .chunk = CTL_PACKET_MAX,
				   .idle_since = now_usec(CLOCK_MONOTONIC) };
	r = sd_event_add_io(c->event, &cl->io, fd, EPOLLIN, on_client_io, cl);
	if (r >= 0)
		r = sd_event_add_time_relative(c->event, &cl->timer, CLOCK_MONOTONIC,
					       CTL_IDLE_TIMEOUT_USEC, 100 * USEC_PER_MSEC,
					       on_client_timeout, cl);
	if (r < 0) {
		sd_event_source_disable_unref(cl->io);
		free(cl);
		return r;
	}
	cl->next = c->clients;
	if (c->clients)
		c->clients->prev = cl;
	c->clients = cl;
	c->nr_clients++;
	cl->state = CLIENT_READING;
	return 0;
}
