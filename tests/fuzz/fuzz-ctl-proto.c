/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Fuzz target: the control protocol (lib/control/ctl-proto.h): request parsing
 * with a format/parse round trip, and the client's JSON reply reader and
 * reassembly scanner.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ctl-proto.h"

static void request(const uint8_t *data, size_t len)
{
	static struct ctl_command cmd, again;
	const char *err = NULL;
	struct buf b = {};
	int r;

	if (ctl_command_parse(data, len, &cmd, &err) < 0)
		return;
	(void)ctl_args_get(&cmd.args, "name");
	/*
	 * What was parsed formats back into a request that parses the same,
	 * unless quoting makes it longer than a request may be (an empty
	 * value becomes "", for one).
	 */
	r = ctl_command_format(&b, cmd.command, &cmd.args);
	if (r == -EMSGSIZE && len > CTL_REQUEST_MAX / 2) {
		buf_done(&b);
		return;
	}
	if (r < 0)
		abort();
	if (ctl_command_parse(b.data, b.len, &again, &err) < 0 ||
	    strcmp(cmd.command, again.command) != 0 || cmd.args.n != again.args.n)
		abort();
	for (unsigned i = 0; i < cmd.args.n; i++)
		if (strcmp(cmd.args.v[i].key, again.args.v[i].key) ||
		    strcmp(cmd.args.v[i].value, again.args.v[i].value))
			abort();
	buf_done(&b);
}

static void reply(const uint8_t *data, size_t len)
{
	struct json_value *v = NULL;

	(void)json_scan_complete((const char *)data, len);
	if (json_parse((const char *)data, len, &v) < 0)
		return;
	(void)json_get_string(v, "error");
	(void)json_get_bool(v, "ok", false);
	json_value_free(v);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t len)
{
	request(data, len);
	reply(data, len);
	return 0;
}
