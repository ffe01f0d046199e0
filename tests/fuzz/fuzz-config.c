/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Fuzz target: the configuration parser (config_load_string, then the
 * cross-key checks and the boot command line built from a valid config),
 * without tracefs.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t len)
{
	struct config c;
	char *text, *err = NULL, *cmdline = NULL;

	text = malloc(len + 1);
	if (!text)
		return 0;
	memcpy(text, data, len);
	text[len] = '\0';
	if (config_init(&c) < 0) {
		free(text);
		return 0;
	}
	if (config_load_string(&c, "fuzz.conf", text, &err) >= 0) {
		free(err);
		err = NULL;
		if (config_check(&c, &err) >= 0 && config_boot_cmdline(&c, &cmdline) >= 0)
			free(cmdline);
	}
	free(err);
	config_done(&c);
	free(text);
	return 0;
}
