/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Control commands: turn a request from the control socket into one
 * recorder call and its JSON reply (doc/control-protocol.md).
 */
#ifndef STACKMAPD_CTL_COMMANDS_H
#define STACKMAPD_CTL_COMMANDS_H

#include "ctl.h"

struct config;
struct hook;
struct recorder;

struct commands {
	struct recorder *rec;				/* borrowed */
	const struct config *const *cfg;		/* borrowed: where main keeps the config in force */
	const struct hook *hook;			/* borrowed; NULL: none */
	/*
	 * Reload the configuration: 0, or -EINVAL with *ret_error set
	 * ("FILE:LINE: ..."); *ret_restart lists keys that need a restart
	 * (NULL if none). Both are allocated.
	 */
	int (*reload)(void *userdata, char **ret_error, char **ret_restart);
	void *userdata;
};

/* The ctl handler: userdata is a struct commands. */
int commands_request(void *userdata, struct ctl_request *req, const char *command,
		     const struct ctl_args *args);

#endif
