/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The running kernel's symbols for segments that carry none (ksyms.h): a
 * segment gets its kallsyms subset only when the daemon finishes it, so
 * the one being written, or one cut short by a crash, has none. Such a
 * segment may borrow /proc/kallsyms, but only when it was recorded in the
 * current boot (its META boot_id is /proc/sys/kernel/random/boot_id):
 * after a reboot, KASLR and other modules place everything elsewhere, and
 * its addresses stay numbers. Each file is read at most once per process,
 * kallsyms only when a segment of this boot asks for it.
 */
#include <pthread.h>
#include <string.h>

#include "ksyms.h"
#include "util.h"

static pthread_mutex_t live_lock = PTHREAD_MUTEX_INITIALIZER;
static const char *boot_id_path = "/proc/sys/kernel/random/boot_id";
static const char *kallsyms_path = "/proc/kallsyms";
static bool boot_tried, syms_tried;
static char *live_boot;			/* this boot's id, NULL if unknown */
static struct ksyms *live;		/* NULL if unreadable or hidden (kptr_restrict) */

static void forget(void)
{
	boot_tried = syms_tried = false;
	free(live_boot);
	live_boot = NULL;
	live = ksyms_free(live);
}

static void load_boot(void)
{
	boot_tried = true;
	if (read_file(boot_id_path, &live_boot, NULL) < 0)
		return;
	live_boot[strcspn(live_boot, "\r\n")] = '\0';	/* the file ends its line, META does not */
}

/* Only for a segment of this boot: reading kallsyms costs tens of milliseconds. */
static void load_syms(void)
{
	syms_tried = true;
	if (ksyms_load(kallsyms_path, &live) < 0 || !ksyms_usable(live))
		live = ksyms_free(live);
}

const struct ksyms *ksyms_live_for_boot(const char *boot_id)
{
	const struct ksyms *ks = NULL;

	if (!boot_id || !*boot_id)
		return NULL;
	(void)pthread_mutex_lock(&live_lock);
	if (!boot_tried)
		load_boot();
	if (live_boot && streq(live_boot, boot_id)) {
		if (!syms_tried)
			load_syms();
		ks = live;
	}
	(void)pthread_mutex_unlock(&live_lock);
	return ks;
}

void ksyms_live_set_source(const char *boot_id_file, const char *kallsyms_file)
{
	(void)pthread_mutex_lock(&live_lock);
	forget();
	boot_id_path = boot_id_file;
	kallsyms_path = kallsyms_file;
	(void)pthread_mutex_unlock(&live_lock);
}
