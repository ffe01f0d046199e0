/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The control socket: an AF_UNIX SOCK_SEQPACKET server on the daemon's
 * sd-event loop (doc/control-protocol.md). It accepts clients without
 * blocking, checks each peer (root, or a member of the configured group),
 * reads one request at a time per client, answers "ping" itself and hands
 * every other command to one handler, which replies now or later with
 * ctl_reply*(): snapshot, for one, replies only after every CPU reader has
 * flushed.
 *
 * Limits: CTL_CLIENTS_MAX connected clients (at the cap, the client idle
 * longest makes room for the new one; only when none is idle is the new
 * one refused), CTL_IDLE_TIMEOUT_USEC to send a request,
 * CTL_REPLY_TIMEOUT_USEC to read a reply, CTL_HANDLER_TIMEOUT_USEC for
 * the handler to reply (the client then gets an error, and the handler's
 * late reply is dropped), CTL_REQUEST_MAX bytes per
 * request, CTL_REPLY_MAX bytes per reply and CTL_QUEUED_MAX bytes of
 * replies waiting for all clients together. Malformed requests get an
 * error reply and the connection is closed; nothing a client does blocks
 * the loop. Refused, evicted and timed-out clients are counted
 * (ctl_get_stats()) and logged at most once a minute per kind.
 *
 * Everything runs on the loop's thread; nothing here is thread-safe.
 */
#ifndef STACKMAPD_CTL_H
#define STACKMAPD_CTL_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "ctl-proto.h"
#include "util.h"

struct sd_event;
struct ctl;
struct ctl_request;

#define CTL_CLIENTS_MAX 128
#define CTL_IDLE_TIMEOUT_USEC (2 * USEC_PER_SEC)	/* to send a request */
#define CTL_REPLY_TIMEOUT_USEC (5 * USEC_PER_SEC)	/* to read the whole reply */
#define CTL_HANDLER_TIMEOUT_USEC (30 * USEC_PER_SEC)	/* for a handler to reply */
#define CTL_QUEUED_MAX (16u << 20)			/* reply bytes waiting, all clients */

/* Counters since the server started (status "control" object). */
struct ctl_stats {
	unsigned clients;		/* connected now */
	uint64_t accepted;		/* connections served */
	uint64_t denied;		/* peers neither root nor in the group */
	uint64_t refused;		/* at the cap with no idle client to evict */
	uint64_t evicted;		/* idle clients closed to make room */
	uint64_t idle_timeouts;		/* no request within CTL_IDLE_TIMEOUT_USEC */
	uint64_t reply_timeouts;	/* reply not read within CTL_REPLY_TIMEOUT_USEC */
	uint64_t handler_timeouts;	/* no reply within CTL_HANDLER_TIMEOUT_USEC: error sent */
	uint64_t bad_requests;		/* malformed requests */
};

struct ctl_handlers {
	/*
	 * Called for each well-formed request from an authorised peer,
	 * except "ping". command and args are borrowed from req and stay
	 * valid until it is replied to.
	 *
	 * Return 0 to take the request: the handler must then call
	 * ctl_reply() or ctl_reply_error() exactly once,
	 * before returning or later from any other callback of the loop.
	 * Return a negative errno to have ctl reply with an error instead
	 * (-EOPNOTSUPP: "unknown command 'X'"; -EINVAL: "invalid argument
	 * for 'X'"; others: "'X' failed: <strerror>"); in that case the
	 * handler must not have replied. Replying before returning 0 is fine.
	 */
	int (*request)(void *userdata, struct ctl_request *req, const char *command,
		       const struct ctl_args *args);
};

/*
 * Create the control socket at path and serve it on loop e.
 *
 * Creates the socket's directory (mode 0755) if missing, refuses to start
 * (-EADDRINUSE) if another process is listening on path, removes a stale
 * socket left by a previous run, and refuses (-EEXIST) to replace a
 * file that is not a socket. The socket gets mode 0660 and group
 * ownership group when group is not NULL (group name or numeric gid;
 * -ENOENT if no such group), else mode 0600 (root only).
 *
 * e is referenced; h and userdata are borrowed and must outlive the ctl.
 * On success *ret owns the server (free with ctl_free()). Returns 0 or
 * -errno (-ENAMETOOLONG if path does not fit in sockaddr_un).
 */
int ctl_new(struct sd_event *e, const char *path, const char *group,
	    const struct ctl_handlers *h, void *userdata, struct ctl **ret);

/*
 * Close every client and the socket and remove the socket file. Requests
 * that a handler has taken stay valid: replying to them later sends
 * nothing and frees them. Accepts NULL; returns NULL.
 */
struct ctl *ctl_free(struct ctl *c);

/*
 * Change the group allowed besides root (NULL: root only), e.g. on reload:
 * the socket's mode and group follow, and new connections are checked
 * against it. Returns 0 or -errno (-ENOENT: no such group; then nothing
 * changed).
 */
int ctl_set_group(struct ctl *c, const char *group);

/*
 * Close the top-level object that ctl_reply_begin() opened in w (unless the
 * caller already did), finish w and reply with its text. If w latched an error, the client gets an error
 * reply ("reply too large" for -E2BIG) and that error is returned. w is
 * left empty (still to be freed with json_writer_done()). Frees req.
 */
int ctl_reply(struct ctl_request *req, struct json_writer *w);

/*
 * Reply {"version":1,"ok":false,"error":MESSAGE,"errno":"ENAME"}.
 * error is a negative (or positive) errno; 0 omits "errno". Clients map
 * EACCES/EPERM to "permission denied". Frees req. Returns 0 or -ENOMEM.
 */
int ctl_reply_error(struct ctl_request *req, int error, const char *fmt, ...) _printf_(3, 4);

/* Copy c's counters to *ret. */
void ctl_get_stats(const struct ctl *c, struct ctl_stats *ret);

/*
 * Add the server's counters as the object "control" to the reply w that
 * ctl_reply_begin() opened for req (nothing when req's client has gone:
 * the reply is dropped anyway).
 */
void ctl_request_add_stats(const struct ctl_request *req, struct json_writer *w);

/* The request's command word (borrowed from req). */
const char *ctl_request_command(const struct ctl_request *req);

/* False once the client has disconnected (its reply would be dropped). */
bool ctl_request_connected(const struct ctl_request *req);

#endif
