/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The control socket itself: creating it (directory, stale socket, mode
 * and group), checking each peer (root, or a member of the configured
 * group, by SO_PEERCRED, SO_PEERGROUPS or /proc), accepting without
 * blocking (at CTL_CLIENTS_MAX evicting the client idle longest, or
 * refusing when none is idle; pausing on EMFILE), counting and logging
 * (rate-limited) the clients refused, and closing. Each accepted client is served by ctl-client.c.
 */
#include <assert.h>
#include <fcntl.h>
#include <grp.h>
#include <inttypes.h>
#include <stdarg.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include <systemd/sd-event.h>

#include "ctl-internal.h"
#include "log.h"

#ifndef SO_PEERGROUPS
#define SO_PEERGROUPS 59		/* Linux 4.13 */
#endif

#define ACCEPT_RETRY_USEC (100 * USEC_PER_MSEC)
/*
 * Connections accepted per wakeup. A flood of connections must not keep
 * the loop in accept() while the clients already in hold requests: those
 * are served first (the listening socket also has a lower priority than
 * the clients), and only then are more accepted.
 */
#define ACCEPT_BATCH 16

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
	ctl_drain_fd(fd);
	(void)close(fd);
}

static int on_retry_accept(sd_event_source *s, uint64_t usec, void *userdata)
{
	struct ctl *c = userdata;

	(void)sd_event_source_set_enabled(c->listen_io, SD_EVENT_ON);
	return 0;
}

/* 0 if the peer may use the socket; else -EACCES after refusing it (fd closed). */
static int check_peer(struct ctl *c, int fd, const struct ucred *cred)
{
	char msg[160];
	int r;

	if (cred->uid == 0)
		return 0;
	r = c->has_group ? peer_in_group(fd, cred, c->gid) : 0;
	if (r > 0)
		return 0;
	if (c->has_group)
		(void)snprintf(msg, sizeof(msg),
			       "permission denied: uid %u is neither root nor in group '%s'",
			       (unsigned)cred->uid, c->group);
	else
		(void)snprintf(msg, sizeof(msg),
			       "permission denied: uid %u is not root (no [control] group is configured)",
			       (unsigned)cred->uid);
	c->stats.denied++;
	(void)log_ratelimit_errno(&c->rl_denied, LOG_NOTICE, r < 0 ? r : -EACCES,
				  "control: refused uid %u pid %d (%" PRIu64 " refused so far)",
				  (unsigned)cred->uid, (int)cred->pid, c->stats.denied);
	reject(fd, -EACCES, msg);
	return -EACCES;
}

/*
 * At the cap, close the client idle longest to make room: a client that
 * holds a connection without asking anything must not lock out one that
 * does. Only when every client is busy is the new one refused.
 * Returns 0 if there is room now, -EBUSY after refusing fd.
 */
static int make_room(struct ctl *c, int fd, const struct ucred *cred)
{
	struct ctl_client *victim;
	char msg[160];

	if (c->nr_clients < CTL_CLIENTS_MAX)
		return 0;
	victim = ctl_client_idlest(c);
	if (victim) {
		c->stats.evicted++;
		(void)log_ratelimit_errno(&c->rl_evicted, LOG_NOTICE, -EBUSY,
					  "control: %u clients connected, closed idle client pid %d for pid %d (%" PRIu64 " evicted so far)",
					  c->nr_clients, (int)victim->cred.pid, (int)cred->pid,
					  c->stats.evicted);
		ctl_client_evict(victim);
		return 0;
	}
	c->stats.refused++;
	(void)log_ratelimit_errno(&c->rl_refused, LOG_NOTICE, -EBUSY,
				  "control: refused pid %d, %u clients connected and none idle (%" PRIu64 " refused so far)",
				  (int)cred->pid, c->nr_clients, c->stats.refused);
	(void)snprintf(msg, sizeof(msg), "too many clients (%u), try again", c->nr_clients);
	reject(fd, -EBUSY, msg);
	return -EBUSY;
}

static void accept_one(struct ctl *c, int fd)
{
	struct ucred cred;
	socklen_t len = sizeof(cred);
	int r;

	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0) {
		(void)close(fd);
		return;
	}
	if (check_peer(c, fd, &cred) < 0 || make_room(c, fd, &cred) < 0)
		return;
	r = ctl_client_new(c, fd, &cred);
	if (r < 0) {
		log_errno(LOG_WARNING, r, "control: cannot watch a new client, closing it");
		reject(fd, r, r == -ENOMEM ? "out of memory" : "server error");
		return;
	}
	c->stats.accepted++;
}

static int on_listen_io(sd_event_source *s, int lfd, uint32_t revents, void *userdata)
{
	struct ctl *c = userdata;
	int r;

	for (unsigned n = 0; n < ACCEPT_BATCH; n++) {
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
	return 0;		/* more may wait: the socket is still readable, we come back */
}

/* ---- the socket ---- */

static int resolve_group(const char *group, gid_t *ret)
{
	_cleanup_free_ char *buf = NULL;
	struct group grp, *res = NULL;
	size_t size = 0;
	char *end;
	int r;

	errno = 0;
	unsigned long g = strtoul(group, &end, 10);
	if (*group && !*end && errno == 0 && g < (gid_t)-1) {
		*ret = (gid_t)g;
		return 0;
	}
	for (;;) {
		/* getgrnam_r() wants more room: twice as much, up to 1 MiB */
		if (GREEDY_REALLOC(buf, size, MAX(size + 1, (size_t)1024)) < 0)
			return -ENOMEM;
		r = getgrnam_r(group, &grp, buf, size, &res);
		if (r != ERANGE || size > 1024 * 1024)
			break;
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

	assert(c);

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

	assert(h);
	assert(ret);

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
	c->rl_denied = (struct log_ratelimit)LOG_RATELIMIT_INIT;
	c->rl_evicted = (struct log_ratelimit)LOG_RATELIMIT_INIT;
	c->rl_refused = (struct log_ratelimit)LOG_RATELIMIT_INIT;
	c->rl_idle = (struct log_ratelimit)LOG_RATELIMIT_INIT;
	c->rl_reply = (struct log_ratelimit)LOG_RATELIMIT_INIT;
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
	if (r >= 0)
		r = sd_event_source_set_priority(c->listen_io, SD_EVENT_PRIORITY_NORMAL + 1);
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
		ctl_client_free(c->clients);
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
