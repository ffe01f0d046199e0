/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * stackmapctl subcommands. Each takes argv from the subcommand name on
 * (argv[0] = "report", ...) and returns the process exit status.
 */
#ifndef STACKMAPCTL_COMMANDS_H
#define STACKMAPCTL_COMMANDS_H

/* offline: client/cmd-info.c, cmd-verify.c, cmd-stacks.c */
int cmd_info(int argc, char **argv);
int cmd_verify(int argc, char **argv);
int cmd_stacks(int argc, char **argv);

/* offline: client/cmd-report.c */
int cmd_report(int argc, char **argv);
int cmd_folded(int argc, char **argv);

/* control: client/cmd-control.c */
int cmd_status(int argc, char **argv);
int cmd_snapshot(int argc, char **argv);
int cmd_rotate(int argc, char **argv);
int cmd_reset(int argc, char **argv);
int cmd_list(int argc, char **argv);
int cmd_reload(int argc, char **argv);
/*
 * Ask the daemon (the socket of $STACKMAPD_SOCKET, else of config, else
 * the default) to hand what its readers hold to the live segment, and wait
 * for it, at most two seconds. 0 when it did, -EAGAIN when it did not.
 * Says nothing when no daemon is there or it may not be asked (a copy of
 * an archive, a reader without the right); a daemon that refuses or does
 * not answer in time is warned about, once until the reason changes.
 */
int ctl_flush_quietly(const char *config);

/* config: client/cmd-bootcmdline.c */
int cmd_boot_cmdline(int argc, char **argv);

/* client/stackmapctl.c: help [COMMAND], and a command's one-line description (or NULL) */
int cmd_help(int argc, char **argv);
const char *stackmapctl_command_help(const char *name);

#endif
