/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The control protocol's wire format, shared by the daemon and stackmapctl
 * (doc/control-protocol.md is the specification):
 *
 *   - requests: one text packet, "COMMAND key=value ...", parsed and
 *     formatted by ctl_command_parse() / ctl_command_format();
 *   - replies: one JSON object, built with the JSON writer (json_writer_*,
 *     json.h) and read back by the client with the JSON reader (json_parse()).
 *
 * Nothing here does I/O or logs.
 */
#ifndef STACKMAPD_CTL_PROTO_H
#define STACKMAPD_CTL_PROTO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "buf.h"
#include "json.h"

#define CTL_PROTO_VERSION 1
#define CTL_REQUEST_MAX 4096			/* bytes in a request packet */
#define CTL_REPLY_MAX JSON_TEXT_MAX_DEFAULT	/* bytes of JSON text in a reply */
#define CTL_PACKET_MAX (64 * 1024)		/* a longer reply spans several packets */
#define CTL_ARGS_MAX 16				/* key=value arguments in a request */
#define CTL_WORD_MAX 32				/* length of a command word or a key */

/* Default socket path; the daemon's [control] socket key overrides it. */
#define CTL_SOCKET_DEFAULT RUNSTATEDIR "/stackmapd/control"

struct ctl_arg {
	const char *key;
	const char *value;			/* decoded, may be "" */
};

struct ctl_args {
	unsigned n;
	struct ctl_arg v[CTL_ARGS_MAX];
};

/* A parsed request. Every pointer points into text[], so the struct can be copied only whole. */
struct ctl_command {
	const char *command;
	struct ctl_args args;
	char text[CTL_REQUEST_MAX + 1];
};

/*
 * Parse one request packet of len bytes (not NUL-terminated, may contain
 * anything). On success fills *ret (pointers into ret->text) and returns 0.
 * On failure returns -EMSGSIZE (longer than CTL_REQUEST_MAX), -ENODATA
 * (empty or only blanks), -E2BIG (more than CTL_ARGS_MAX arguments) or
 * -EBADMSG (NUL byte, invalid UTF-8, control character, bad word, key or
 * quoting, duplicate key), and, if ret_error is not NULL, stores a static
 * English description in *ret_error. *ret is unspecified on failure.
 */
int ctl_command_parse(const void *data, size_t len, struct ctl_command *ret, const char **ret_error);

/*
 * Value of argument key in args, or NULL when absent. The string is
 * borrowed from the struct ctl_command that args belongs to.
 */
const char *ctl_args_get(const struct ctl_args *args, const char *key);

/*
 * Append the request "command key=value ..." to b (values are quoted when
 * they need it, so that ctl_command_parse() returns them unchanged). args
 * may be NULL. Returns 0, -EINVAL (bad command word, key, or a value that
 * cannot be sent: invalid UTF-8 or control characters), -EMSGSIZE (longer
 * than CTL_REQUEST_MAX) or -ENOMEM. b is unchanged on failure.
 */
int ctl_command_format(struct buf *b, const char *command, const struct ctl_args *args);

/*
 * Start a reply: open the top-level object and write "version" and "ok".
 * Add the command's fields, then json_object_close() and
 * json_writer_finish() (the daemon's ctl_reply() does both).
 */
void ctl_reply_begin(struct json_writer *w, bool ok);

/*
 * Build a complete error reply {"version":1,"ok":false,"error":message,
 * "errno":"ENAME"} (error: a negative or positive errno, 0 to omit "errno").
 * *ret_text is allocated (caller frees). Returns 0 or -ENOMEM.
 */
int ctl_reply_format_error(int error, const char *message, char **ret_text);

#endif
