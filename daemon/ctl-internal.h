/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The control server's state, shared by ctl.c (the socket, peer checks,
 * accepting) and ctl-client.c (each client's request, reply and timer)
 * and by nothing else. Everything runs on the loop's thread.
 */
#ifndef STACKMAPD_CTL_INTERNAL_H
#define STACKMAPD_CTL_INTERNAL_H

#include <sys/socket.h>
#include <systemd/sd-event.h>

#include "ctl.h"
#include "log.h"

enum client_state {
	CLIENT_READING,			/* waiting for a request; timer armed */
	CLIENT_PENDING,			/* a handler owns the request; timer armed */
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
	uint64_t idle_since;		/* CLOCK_MONOTONIC µs: entered CLIENT_READING */
	uint64_t requests;		/* complete requests received */
	struct ucred cred;
	struct ctl_request *req;	/* CLIENT_PENDING: the request a handler owns */
	char *out;			/* CLIENT_WRITING: reply text (counted in ctl->queued) */
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
	size_t queued;			/* bytes of every client's out */
	struct ctl_stats stats;
	/* one per kind of trouble, so that one kind cannot hide another */
	struct log_ratelimit rl_denied, rl_evicted, rl_refused, rl_idle, rl_reply;
	char rbuf[CTL_REQUEST_MAX + 1];
};

/*
 * Serve a new connection fd (owned by the client from then on, on
 * success) from the peer cred on c's loop. Returns 0 or -errno (fd not
 * taken: the caller rejects and closes it).
 */
int ctl_client_new(struct ctl *c, int fd, const struct ucred *cred);

/*
 * The client to evict for a new one, or NULL: among the clients waiting
 * for a request with none queued unread on their socket, the one
 * connected longest of those that never sent a request, else the one
 * waiting longest. Borrowed from c.
 */
struct ctl_client *ctl_client_idlest(struct ctl *c);

/* Tell an idle client it makes room for a new one (EBUSY), then close and free it. */
void ctl_client_evict(struct ctl_client *cl);

/* Close the client (now, or once its callback returns) and unlink it from its ctl. */
void ctl_client_free(struct ctl_client *cl);

/*
 * Read and drop whatever the peer already sent, so that closing fd does
 * not turn its queued reply into ECONNRESET.
 */
void ctl_drain_fd(int fd);

#endif
