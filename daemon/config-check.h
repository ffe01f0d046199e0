/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * What only the running kernel can tell about a parsed configuration:
 * do its events exist, do its filters fit the events' formats, does the
 * kernel offer its clock and, with stackmap = on, a stack map. One
 * checker for "stackmapd --check", startup and reload.
 */
#ifndef STACKMAPD_CONFIG_CHECK_H
#define STACKMAPD_CONFIG_CHECK_H

struct config;

/*
 * Check c (parsed and checked by config_load() and config_check()) against
 * the tracefs tree at tracing_dir (e.g. "/sys/kernel/tracing", or a
 * fixture tree in tests), reading only. instance_dir is the directory of
 * the instance that will record, or NULL when it does not exist yet (as
 * with --check, which must not create it): then what only the instance can
 * tell is not checked. Returns 0, or -EINVAL with *ret_error
 * ("PATH:LINE: KEY: what is wrong", the line being where the key was set;
 * caller frees) if ret_error is not NULL, or -ENOMEM.
 */
int config_check_tracefs(const struct config *c, const char *tracing_dir,
			 const char *instance_dir, char **ret_error);

/*
 * Check a filter expression for the event system:event against the
 * kernel's filter grammar (lib/config/filter-grammar.c): its structure always;
 * with tracing_dir also the field names of events/SYSTEM/EVENT/format
 * (parsed with libtraceevent), the operators each kind of field allows
 * and the kind of value it is compared with. Returns 0; -EINVAL with
 * *ret_error ("what is wrong", caller frees) if ret_error is not NULL;
 * -ENOMEM.
 */
int config_check_filter(const char *tracing_dir, const char *system, const char *event,
			const char *expr, char **ret_error);

#endif
