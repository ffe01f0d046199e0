/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* stackmapctl subcommands that present or export archives (argv as in commands.h). */
#ifndef STACKMAPCTL_COMMANDS_EXPORT_H
#define STACKMAPCTL_COMMANDS_EXPORT_H

/* client/cmd-top.c */
int cmd_top(int argc, char **argv);

/* client/cmd-flamegraph.c */
int cmd_flamegraph(int argc, char **argv);

/* client/cmd-memory.c */
int cmd_memory(int argc, char **argv);

/* client/cmd-export.c */
int cmd_export(int argc, char **argv);

#endif
