/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Event format files as a 6.18 x86-64 kernel writes them
 * (/sys/kernel/tracing/events/SYSTEM/EVENT/format), for tests that parse
 * them into a tep handle: the events a report most often meets.
 */
#ifndef STACKMAPD_TEST_EVENT_FORMATS_H
#define STACKMAPD_TEST_EVENT_FORMATS_H

#include "page-walk.h"

struct test_format {
	const char *system;
	const char *text;
};

static const struct test_format kernel_formats[] = {
	{ "kmem",
	  "name: kmem_cache_alloc\n"
	  "ID: 659\n"
	  "format:\n"
	  FTRACE_COMMON_FIELDS_FORMAT
	  "\n"
	  "\tfield:unsigned long call_site;\toffset:8;\tsize:8;\tsigned:0;\n"
	  "\tfield:const void * ptr;\toffset:16;\tsize:8;\tsigned:0;\n"
	  "\tfield:__data_loc char[] name;\toffset:24;\tsize:4;\tsigned:0;\n"
	  "\tfield:size_t bytes_req;\toffset:32;\tsize:8;\tsigned:0;\n"
	  "\tfield:size_t bytes_alloc;\toffset:40;\tsize:8;\tsigned:0;\n"
	  "\tfield:unsigned long gfp_flags;\toffset:48;\tsize:8;\tsigned:0;\n"
	  "\tfield:int node;\toffset:56;\tsize:4;\tsigned:1;\n"
	  "\tfield:bool accounted;\toffset:60;\tsize:1;\tsigned:0;\n"
	  "\n"
	  "print fmt: \"call_site=%pS ptr=%p name=%s bytes_req=%zu bytes_alloc=%zu gfp_flags=%s node=%d accounted=%s\", (void *)REC->call_site, REC->ptr, __get_str(name), REC->bytes_req, REC->bytes_alloc, (REC->gfp_flags) ? __print_flags(REC->gfp_flags, \"|\", {( unsigned long)(((((((( gfp_t)(((((1UL))) << (10))|((((1UL))) << (11)))) | (( gfp_t)((((1UL))) << (6))) | (( gfp_t)((((1UL))) << (7))) | (( gfp_t)((((1UL))) << (20)))) | (( gfp_t)((((1UL))) << (1)))) | (( gfp_t)((((1UL))) << (3))) | (( gfp_t)0)) | (( gfp_t)((((1UL))) << (18))) | (( gfp_t)((((1UL))) << (19))) | (( gfp_t)((((1UL))) << (13)))) & ~(( gfp_t)(((((1UL))) << (10))|((((1UL))) << (11))))) | (( gfp_t)((((1UL))) << (10)))), \"GFP_TRANSHUGE\"}, {( unsigned long)((((((( gfp_t)(((((1UL))) << (10))|((((1UL))) << (11)))) | (( gfp_t)((((1UL))) << (6))) | (( gfp_t)((((1UL))) << (7))) | (( gfp_t)((((1UL))) << (20)))) | (( gfp_t)((((1UL))) << (1)))) | (( gfp_t)((((1UL))) << (3))) | (( gfp_t)0)) | (( gfp_t)((((1UL))) << (18))) | (( gfp_t)((((1UL))) << (19))) | (( gfp_t)((((1UL))) << (13)))) & ~(( gfp_t)(((((1UL))) << (10))|((((1UL))) << (11))))), \"GFP_TRANSHUGE_LIGHT\"}, {( unsigned long)((((( gfp_t)(((((1UL))) << (10))|((((1UL))) << (11)))) | (( gfp_t)((((1UL))) << (6))) | (( gfp_t)((((1UL))) << (7))) | (( gfp_t)((((1UL))) << (20)))) | (( gfp_t)((((1UL))) << (1)))) | (( gfp_t)((((1UL))) << (3))) | (( gfp_t)0)), \"GFP_HIGHUSER_MOVABLE\"}, {( unsigned long)(((( gfp_t)(((((1UL))) << (10))|((((1UL))) << (11)))) | (( gfp_t)((((1UL))) << (6))) | (( gfp_t)((((1UL))) << (7))) | (( gfp_t)((((1UL))) << (20)))) | (( gfp_t)((((1UL))) << (1)))), \"GFP_HIGHUSER\"}, {( unsigned long)((( gfp_t)(((((1UL))) << (10))|((((1UL))) << (11)))) | (( gfp_t)((((1UL))) << (6))) | (( gfp_t)((((1UL))) << (7))) | (( gfp_t)((((1UL))) << (20)))), \"GFP_USER\"}, {( unsigned long)(((( gfp_t)(((((1UL))) << (10))|((((1UL))) << (11)))) | (( gfp_t)((((1UL))) << (6))) | (( gfp_t)((((1UL))) << (7)))) | (( gfp_t)((((1UL))) << (22)))), \"GFP_KERNEL_ACCOUNT\"}, {( unsigned long)((( gfp_t)(((((1UL))) << (10))|((((1UL))) << (11)))) | (( gfp_t)((((1UL))) << (6))) | (( gfp_t)((((1UL))) << (7)))), \"GFP_KERNEL\"}, {( unsigned long)((( gfp_t)(((((1UL))) << (10))|((((1UL))) << (11)))) | (( gfp_t)((((1UL))) << (6)))), \"GFP_NOFS\"}, {( unsigned long)((( gfp_t)((((1UL))) << (5)))|(( gfp_t)((((1UL))) << (11)))), \"GFP_ATOMIC\"}, {( unsigned long)((( gfp_t)(((((1UL))) << (10))|((((1UL))) << (11))))), \"GFP_NOIO\"}, {( unsigned long)((( gfp_t)((((1UL))) << (11))) | (( gfp_t)((((1UL))) << (13)))), \"GFP_NOWAIT\"}, {( unsigned long)(( gfp_t)((((1UL))) << (0))), \"GFP_DMA\"}, {( unsigned long)(( gfp_t)((((1UL))) << (2))), \"GFP_DMA32\"}, {( unsigned long)(( gfp_t)(((((1UL))) << (10))|((((1UL))) << (11)))), \"__GFP_RECLAIM\"}, {( unsigned long)(( gfp_t)((((1UL))) << (0))), \"__GFP_DMA\"}, {( unsigned long)(( gfp_t)((((1UL))) << (1))), \"__GFP_HIGHMEM\"}, {( unsigned long)(( gfp_t)((((1UL))) << (2))), \"__GFP_DMA32\"}, {( unsigned long)(( gfp_t)((((1UL))) << (3))), \"__GFP_MOVABLE\"}, {( unsigned long)(( gfp_t)((((1UL))) << (4))), \"__GFP_RECLAIMABLE\"}, {( unsigned long)(( gfp_t)((((1UL))) << (5))), \"__GFP_HIGH\"}, {( unsigned long)(( gfp_t)((((1UL))) << (6))), \"__GFP_IO\"}, {( unsigned long)(( gfp_t)((((1UL))) << (7))), \"__GFP_FS\"}, {( unsigned long)(( gfp_t)((((1UL))) << (8))), \"__GFP_ZERO\"}, {( unsigned long)(( gfp_t)((((1UL))) << (10))), \"__GFP_DIRECT_RECLAIM\"}, {( unsigned long)(( gfp_t)((((1UL))) << (11))), \"__GFP_KSWAPD_RECLAIM\"}, {( unsigned long)(( gfp_t)((((1UL))) << (12))), \"__GFP_WRITE\"}, {( unsigned long)(( gfp_t)((((1UL))) << (13))), \"__GFP_NOWARN\"}, {( unsigned long)(( gfp_t)((((1UL))) << (14))), \"__GFP_RETRY_MAYFAIL\"}, {( unsigned long)(( gfp_t)((((1UL))) << (15))), \"__GFP_NOFAIL\"}, {( unsigned long)(( gfp_t)((((1UL))) << (16))), \"__GFP_NORETRY\"}, {( unsigned long)(( gfp_t)((((1UL))) << (17))), \"__GFP_MEMALLOC\"}, {( unsigned long)(( gfp_t)((((1UL))) << (18))), \"__GFP_COMP\"}, {( unsigned long)(( gfp_t)((((1UL))) << (19))), \"__GFP_NOMEMALLOC\"}, {( unsigned long)(( gfp_t)((((1UL))) << (20))), \"__GFP_HARDWALL\"}, {( unsigned long)(( gfp_t)((((1UL))) << (21))), \"__GFP_THISNODE\"}, {( unsigned long)(( gfp_t)((((1UL))) << (22))), \"__GFP_ACCOUNT\"}, {( unsigned long)(( gfp_t)((((1UL))) << (23))), \"__GFP_ZEROTAGS\"}, {( unsigned long)(( gfp_t)((((1UL))) << (24))), \"__GFP_NO_OBJ_EXT\"}, { 0, ((void *)0) } ) : \"none\", REC->node, REC->accounted ? \"true\" : \"false\"\n"
	},
	{ "kmem",
	  "name: kmalloc\n"
	  "ID: 658\n"
	  "format:\n"
	  FTRACE_COMMON_FIELDS_FORMAT
	  "\n"
	  "\tfield:unsigned long call_site;\toffset:8;\tsize:8;\tsigned:0;\n"
	  "\tfield:const void * ptr;\toffset:16;\tsize:8;\tsigned:0;\n"
	  "\tfield:size_t bytes_req;\toffset:24;\tsize:8;\tsigned:0;\n"
	  "\tfield:size_t bytes_alloc;\toffset:32;\tsize:8;\tsigned:0;\n"
	  "\tfield:unsigned long gfp_flags;\toffset:40;\tsize:8;\tsigned:0;\n"
	  "\tfield:int node;\toffset:48;\tsize:4;\tsigned:1;\n"
	  "\n"
	  "print fmt: \"call_site=%pS ptr=%p bytes_req=%zu bytes_alloc=%zu gfp_flags=%s node=%d accounted=%s\", (void *)REC->call_site, REC->ptr, REC->bytes_req, REC->bytes_alloc, (REC->gfp_flags) ? __print_flags(REC->gfp_flags, \"|\", {( unsigned long)(((((((( gfp_t)(((((1UL))) << (10))|((((1UL))) << (11)))) | (( gfp_t)((((1UL))) << (6))) | (( gfp_t)((((1UL))) << (7))) | (( gfp_t)((((1UL))) << (20)))) | (( gfp_t)((((1UL))) << (1)))) | (( gfp_t)((((1UL))) << (3))) | (( gfp_t)0)) | (( gfp_t)((((1UL))) << (18))) | (( gfp_t)((((1UL))) << (19))) | (( gfp_t)((((1UL))) << (13)))) & ~(( gfp_t)(((((1UL))) << (10))|((((1UL))) << (11))))) | (( gfp_t)((((1UL))) << (10)))), \"GFP_TRANSHUGE\"}, {( unsigned long)((((((( gfp_t)(((((1UL))) << (10))|((((1UL))) << (11)))) | (( gfp_t)((((1UL))) << (6))) | (( gfp_t)((((1UL))) << (7))) | (( gfp_t)((((1UL))) << (20)))) | (( gfp_t)((((1UL))) << (1)))) | (( gfp_t)((((1UL))) << (3))) | (( gfp_t)0)) | (( gfp_t)((((1UL))) << (18))) | (( gfp_t)((((1UL))) << (19))) | (( gfp_t)((((1UL))) << (13)))) & ~(( gfp_t)(((((1UL))) << (10))|((((1UL))) << (11))))), \"GFP_TRANSHUGE_LIGHT\"}, {( unsigned long)((((( gfp_t)(((((1UL))) << (10))|((((1UL))) << (11)))) | (( gfp_t)((((1UL))) << (6))) | (( gfp_t)((((1UL))) << (7))) | (( gfp_t)((((1UL))) << (20)))) | (( gfp_t)((((1UL))) << (1)))) | (( gfp_t)((((1UL))) << (3))) | (( gfp_t)0)), \"GFP_HIGHUSER_MOVABLE\"}, {( unsigned long)(((( gfp_t)(((((1UL))) << (10))|((((1UL))) << (11)))) | (( gfp_t)((((1UL))) << (6))) | (( gfp_t)((((1UL))) << (7))) | (( gfp_t)((((1UL))) << (20)))) | (( gfp_t)((((1UL))) << (1)))), \"GFP_HIGHUSER\"}, {( unsigned long)((( gfp_t)(((((1UL))) << (10))|((((1UL))) << (11)))) | (( gfp_t)((((1UL))) << (6))) | (( gfp_t)((((1UL))) << (7))) | (( gfp_t)((((1UL))) << (20)))), \"GFP_USER\"}, {( unsigned long)(((( gfp_t)(((((1UL))) << (10))|((((1UL))) << (11)))) | (( gfp_t)((((1UL))) << (6))) | (( gfp_t)((((1UL))) << (7)))) | (( gfp_t)((((1UL))) << (22)))), \"GFP_KERNEL_ACCOUNT\"}, {( unsigned long)((( gfp_t)(((((1UL))) << (10))|((((1UL))) << (11)))) | (( gfp_t)((((1UL))) << (6))) | (( gfp_t)((((1UL))) << (7)))), \"GFP_KERNEL\"}, {( unsigned long)((( gfp_t)(((((1UL))) << (10))|((((1UL))) << (11)))) | (( gfp_t)((((1UL))) << (6)))), \"GFP_NOFS\"}, {( unsigned long)((( gfp_t)((((1UL))) << (5)))|(( gfp_t)((((1UL))) << (11)))), \"GFP_ATOMIC\"}, {( unsigned long)((( gfp_t)(((((1UL))) << (10))|((((1UL))) << (11))))), \"GFP_NOIO\"}, {( unsigned long)((( gfp_t)((((1UL))) << (11))) | (( gfp_t)((((1UL))) << (13)))), \"GFP_NOWAIT\"}, {( unsigned long)(( gfp_t)((((1UL))) << (0))), \"GFP_DMA\"}, {( unsigned long)(( gfp_t)((((1UL))) << (2))), \"GFP_DMA32\"}, {( unsigned long)(( gfp_t)(((((1UL))) << (10))|((((1UL))) << (11)))), \"__GFP_RECLAIM\"}, {( unsigned long)(( gfp_t)((((1UL))) << (0))), \"__GFP_DMA\"}, {( unsigned long)(( gfp_t)((((1UL))) << (1))), \"__GFP_HIGHMEM\"}, {( unsigned long)(( gfp_t)((((1UL))) << (2))), \"__GFP_DMA32\"}, {( unsigned long)(( gfp_t)((((1UL))) << (3))), \"__GFP_MOVABLE\"}, {( unsigned long)(( gfp_t)((((1UL))) << (4))), \"__GFP_RECLAIMABLE\"}, {( unsigned long)(( gfp_t)((((1UL))) << (5))), \"__GFP_HIGH\"}, {( unsigned long)(( gfp_t)((((1UL))) << (6))), \"__GFP_IO\"}, {( unsigned long)(( gfp_t)((((1UL))) << (7))), \"__GFP_FS\"}, {( unsigned long)(( gfp_t)((((1UL))) << (8))), \"__GFP_ZERO\"}, {( unsigned long)(( gfp_t)((((1UL))) << (10))), \"__GFP_DIRECT_RECLAIM\"}, {( unsigned long)(( gfp_t)((((1UL))) << (11))), \"__GFP_KSWAPD_RECLAIM\"}, {( unsigned long)(( gfp_t)((((1UL))) << (12))), \"__GFP_WRITE\"}, {( unsigned long)(( gfp_t)((((1UL))) << (13))), \"__GFP_NOWARN\"}, {( unsigned long)(( gfp_t)((((1UL))) << (14))), \"__GFP_RETRY_MAYFAIL\"}, {( unsigned long)(( gfp_t)((((1UL))) << (15))), \"__GFP_NOFAIL\"}, {( unsigned long)(( gfp_t)((((1UL))) << (16))), \"__GFP_NORETRY\"}, {( unsigned long)(( gfp_t)((((1UL))) << (17))), \"__GFP_MEMALLOC\"}, {( unsigned long)(( gfp_t)((((1UL))) << (18))), \"__GFP_COMP\"}, {( unsigned long)(( gfp_t)((((1UL))) << (19))), \"__GFP_NOMEMALLOC\"}, {( unsigned long)(( gfp_t)((((1UL))) << (20))), \"__GFP_HARDWALL\"}, {( unsigned long)(( gfp_t)((((1UL))) << (21))), \"__GFP_THISNODE\"}, {( unsigned long)(( gfp_t)((((1UL))) << (22))), \"__GFP_ACCOUNT\"}, {( unsigned long)(( gfp_t)((((1UL))) << (23))), \"__GFP_ZEROTAGS\"}, {( unsigned long)(( gfp_t)((((1UL))) << (24))), \"__GFP_NO_OBJ_EXT\"}, { 0, ((void *)0) } ) : \"none\", REC->node, (1 && (REC->gfp_flags & ( unsigned long)(( gfp_t)((((1UL))) << (22))))) ? \"true\" : \"false\"\n"
	},
	{ "kmem",
	  "name: kfree\n"
	  "ID: 657\n"
	  "format:\n"
	  FTRACE_COMMON_FIELDS_FORMAT
	  "\n"
	  "\tfield:unsigned long call_site;\toffset:8;\tsize:8;\tsigned:0;\n"
	  "\tfield:const void * ptr;\toffset:16;\tsize:8;\tsigned:0;\n"
	  "\n"
	  "print fmt: \"call_site=%pS ptr=%p\", (void *)REC->call_site, REC->ptr\n"
	},
	{ "kmem",
	  "name: kmem_cache_free\n"
	  "ID: 656\n"
	  "format:\n"
	  FTRACE_COMMON_FIELDS_FORMAT
	  "\n"
	  "\tfield:unsigned long call_site;\toffset:8;\tsize:8;\tsigned:0;\n"
	  "\tfield:const void * ptr;\toffset:16;\tsize:8;\tsigned:0;\n"
	  "\tfield:__data_loc char[] name;\toffset:24;\tsize:4;\tsigned:0;\n"
	  "\n"
	  "print fmt: \"call_site=%pS ptr=%p name=%s\", (void *)REC->call_site, REC->ptr, __get_str(name)\n"
	},
	{ "sched",
	  "name: sched_switch\n"
	  "ID: 372\n"
	  "format:\n"
	  FTRACE_COMMON_FIELDS_FORMAT
	  "\n"
	  "\tfield:char prev_comm[16];\toffset:8;\tsize:16;\tsigned:0;\n"
	  "\tfield:pid_t prev_pid;\toffset:24;\tsize:4;\tsigned:1;\n"
	  "\tfield:int prev_prio;\toffset:28;\tsize:4;\tsigned:1;\n"
	  "\tfield:long prev_state;\toffset:32;\tsize:8;\tsigned:1;\n"
	  "\tfield:char next_comm[16];\toffset:40;\tsize:16;\tsigned:0;\n"
	  "\tfield:pid_t next_pid;\toffset:56;\tsize:4;\tsigned:1;\n"
	  "\tfield:int next_prio;\toffset:60;\tsize:4;\tsigned:1;\n"
	  "\n"
	  "print fmt: \"prev_comm=%s prev_pid=%d prev_prio=%d prev_state=%s%s ==> next_comm=%s next_pid=%d next_prio=%d\", REC->prev_comm, REC->prev_pid, REC->prev_prio, (REC->prev_state & ((((0x00000000 | 0x00000001 | 0x00000002 | 0x00000004 | 0x00000008 | 0x00000010 | 0x00000020 | 0x00000040) + 1) << 1) - 1)) ? __print_flags(REC->prev_state & ((((0x00000000 | 0x00000001 | 0x00000002 | 0x00000004 | 0x00000008 | 0x00000010 | 0x00000020 | 0x00000040) + 1) << 1) - 1), \"|\", { 0x00000001, \"S\" }, { 0x00000002, \"D\" }, { 0x00000004, \"T\" }, { 0x00000008, \"t\" }, { 0x00000010, \"X\" }, { 0x00000020, \"Z\" }, { 0x00000040, \"P\" }, { 0x00000080, \"I\" }) : \"R\", REC->prev_state & (((0x00000000 | 0x00000001 | 0x00000002 | 0x00000004 | 0x00000008 | 0x00000010 | 0x00000020 | 0x00000040) + 1) << 1) ? \"+\" : \"\", REC->next_comm, REC->next_pid, REC->next_prio\n"
	},
	{ "sched",
	  "name: sched_wakeup\n"
	  "ID: 374\n"
	  "format:\n"
	  FTRACE_COMMON_FIELDS_FORMAT
	  "\n"
	  "\tfield:char comm[16];\toffset:8;\tsize:16;\tsigned:0;\n"
	  "\tfield:pid_t pid;\toffset:24;\tsize:4;\tsigned:1;\n"
	  "\tfield:int prio;\toffset:28;\tsize:4;\tsigned:1;\n"
	  "\tfield:int target_cpu;\toffset:32;\tsize:4;\tsigned:1;\n"
	  "\n"
	  "print fmt: \"comm=%s pid=%d prio=%d target_cpu=%03d\", REC->comm, REC->pid, REC->prio, REC->target_cpu\n"
	},
	{ "sched",
	  "name: sched_waking\n"
	  "ID: 375\n"
	  "format:\n"
	  FTRACE_COMMON_FIELDS_FORMAT
	  "\n"
	  "\tfield:char comm[16];\toffset:8;\tsize:16;\tsigned:0;\n"
	  "\tfield:pid_t pid;\toffset:24;\tsize:4;\tsigned:1;\n"
	  "\tfield:int prio;\toffset:28;\tsize:4;\tsigned:1;\n"
	  "\tfield:int target_cpu;\toffset:32;\tsize:4;\tsigned:1;\n"
	  "\n"
	  "print fmt: \"comm=%s pid=%d prio=%d target_cpu=%03d\", REC->comm, REC->pid, REC->prio, REC->target_cpu\n"
	},
	{ "irq",
	  "name: irq_handler_entry\n"
	  "ID: 225\n"
	  "format:\n"
	  FTRACE_COMMON_FIELDS_FORMAT
	  "\n"
	  "\tfield:int irq;\toffset:8;\tsize:4;\tsigned:1;\n"
	  "\tfield:__data_loc char[] name;\toffset:12;\tsize:4;\tsigned:0;\n"
	  "\n"
	  "print fmt: \"irq=%d name=%s\", REC->irq, __get_str(name)\n"
	},
	{ "irq",
	  "name: irq_handler_exit\n"
	  "ID: 224\n"
	  "format:\n"
	  FTRACE_COMMON_FIELDS_FORMAT
	  "\n"
	  "\tfield:int irq;\toffset:8;\tsize:4;\tsigned:1;\n"
	  "\tfield:int ret;\toffset:12;\tsize:4;\tsigned:1;\n"
	  "\n"
	  "print fmt: \"irq=%d ret=%s\", REC->irq, REC->ret ? \"handled\" : \"unhandled\"\n"
	},
	{ "irq",
	  "name: softirq_entry\n"
	  "ID: 223\n"
	  "format:\n"
	  FTRACE_COMMON_FIELDS_FORMAT
	  "\n"
	  "\tfield:unsigned int vec;\toffset:8;\tsize:4;\tsigned:0;\n"
	  "\n"
	  "print fmt: \"vec=%u [action=%s]\", REC->vec, __print_symbolic(REC->vec, { 0, \"HI\" }, { 1, \"TIMER\" }, { 2, \"NET_TX\" }, { 3, \"NET_RX\" }, { 4, \"BLOCK\" }, { 5, \"IRQ_POLL\" }, { 6, \"TASKLET\" }, { 7, \"SCHED\" }, { 8, \"HRTIMER\" }, { 9, \"RCU\" })\n"
	},
	{ "timer",
	  "name: hrtimer_start\n"
	  "ID: 460\n"
	  "format:\n"
	  FTRACE_COMMON_FIELDS_FORMAT
	  "\n"
	  "\tfield:void * hrtimer;\toffset:8;\tsize:8;\tsigned:0;\n"
	  "\tfield:void * function;\toffset:16;\tsize:8;\tsigned:0;\n"
	  "\tfield:s64 expires;\toffset:24;\tsize:8;\tsigned:1;\n"
	  "\tfield:s64 softexpires;\toffset:32;\tsize:8;\tsigned:1;\n"
	  "\tfield:enum hrtimer_mode mode;\toffset:40;\tsize:4;\tsigned:0;\n"
	  "\tfield:bool was_armed;\toffset:44;\tsize:1;\tsigned:0;\n"
	  "\n"
	  "print fmt: \"hrtimer=%p function=%ps expires=%llu softexpires=%llu mode=%s was_armed=%d\", REC->hrtimer, REC->function, (unsigned long long) REC->expires, (unsigned long long) REC->softexpires, __print_symbolic(REC->mode, { HRTIMER_MODE_ABS, \"ABS\" }, { HRTIMER_MODE_REL, \"REL\" }, { HRTIMER_MODE_ABS_PINNED, \"ABS|PINNED\" }, { HRTIMER_MODE_REL_PINNED, \"REL|PINNED\" }, { HRTIMER_MODE_ABS_SOFT, \"ABS|SOFT\" }, { HRTIMER_MODE_REL_SOFT, \"REL|SOFT\" }, { HRTIMER_MODE_ABS_PINNED_SOFT, \"ABS|PINNED|SOFT\" }, { HRTIMER_MODE_REL_PINNED_SOFT, \"REL|PINNED|SOFT\" }, { HRTIMER_MODE_ABS_HARD, \"ABS|HARD\" }, { HRTIMER_MODE_REL_HARD, \"REL|HARD\" }, { HRTIMER_MODE_ABS_PINNED_HARD, \"ABS|PINNED|HARD\" }, { HRTIMER_MODE_REL_PINNED_HARD, \"REL|PINNED|HARD\" }), REC->was_armed\n"
	},
	{ "timer",
	  "name: hrtimer_expire_entry\n"
	  "ID: 459\n"
	  "format:\n"
	  FTRACE_COMMON_FIELDS_FORMAT
	  "\n"
	  "\tfield:void * hrtimer;\toffset:8;\tsize:8;\tsigned:0;\n"
	  "\tfield:s64 now;\toffset:16;\tsize:8;\tsigned:1;\n"
	  "\tfield:void * function;\toffset:24;\tsize:8;\tsigned:0;\n"
	  "\n"
	  "print fmt: \"hrtimer=%p function=%ps now=%llu\", REC->hrtimer, REC->function, (unsigned long long) REC->now\n"
	},
	{ "timer",
	  "name: timer_start\n"
	  "ID: 466\n"
	  "format:\n"
	  FTRACE_COMMON_FIELDS_FORMAT
	  "\n"
	  "\tfield:void * timer;\toffset:8;\tsize:8;\tsigned:0;\n"
	  "\tfield:void * function;\toffset:16;\tsize:8;\tsigned:0;\n"
	  "\tfield:unsigned long expires;\toffset:24;\tsize:8;\tsigned:0;\n"
	  "\tfield:unsigned long bucket_expiry;\toffset:32;\tsize:8;\tsigned:0;\n"
	  "\tfield:unsigned long now;\toffset:40;\tsize:8;\tsigned:0;\n"
	  "\tfield:unsigned int flags;\toffset:48;\tsize:4;\tsigned:0;\n"
	  "\n"
	  "print fmt: \"timer=%p function=%ps expires=%lu [timeout=%ld] bucket_expiry=%lu cpu=%u idx=%u flags=%s\", REC->timer, REC->function, REC->expires, (long)REC->expires - REC->now, REC->bucket_expiry, REC->flags & 0x0003FFFF, REC->flags >> 22, __print_flags(REC->flags & (0x00040000 | 0x00080000 | 0x00100000 | 0x00200000), \"|\", { 0x00040000, \"M\" }, { 0x00080000, \"D\" }, { 0x00100000, \"P\" }, { 0x00200000, \"I\" })\n"
	},
	{ "timer",
	  "name: timer_expire_entry\n"
	  "ID: 465\n"
	  "format:\n"
	  FTRACE_COMMON_FIELDS_FORMAT
	  "\n"
	  "\tfield:void * timer;\toffset:8;\tsize:8;\tsigned:0;\n"
	  "\tfield:unsigned long now;\toffset:16;\tsize:8;\tsigned:0;\n"
	  "\tfield:void * function;\toffset:24;\tsize:8;\tsigned:0;\n"
	  "\tfield:unsigned long baseclk;\toffset:32;\tsize:8;\tsigned:0;\n"
	  "\n"
	  "print fmt: \"timer=%p function=%ps now=%lu baseclk=%lu\", REC->timer, REC->function, REC->now, REC->baseclk\n"
	},
	{ "raw_syscalls",
	  "name: sys_enter\n"
	  "ID: 443\n"
	  "format:\n"
	  FTRACE_COMMON_FIELDS_FORMAT
	  "\n"
	  "\tfield:long id;\toffset:8;\tsize:8;\tsigned:1;\n"
	  "\tfield:unsigned long args[6];\toffset:16;\tsize:48;\tsigned:0;\n"
	  "\n"
	  "print fmt: \"NR %ld (%lx, %lx, %lx, %lx, %lx, %lx)\", REC->id, REC->args[0], REC->args[1], REC->args[2], REC->args[3], REC->args[4], REC->args[5]\n"
	},
	{ "raw_syscalls",
	  "name: sys_exit\n"
	  "ID: 442\n"
	  "format:\n"
	  FTRACE_COMMON_FIELDS_FORMAT
	  "\n"
	  "\tfield:long id;\toffset:8;\tsize:8;\tsigned:1;\n"
	  "\tfield:long ret;\toffset:16;\tsize:8;\tsigned:1;\n"
	  "\n"
	  "print fmt: \"NR %ld = %ld\", REC->id, REC->ret\n"
	},
	{ "ftrace",
	  "name: print\n"
	  "ID: 5\n"
	  "format:\n"
	  FTRACE_COMMON_FIELDS_FORMAT
	  "\n"
	  "\tfield:unsigned long ip;\toffset:8;\tsize:8;\tsigned:0;\n"
	  "\tfield:char buf[];\toffset:16;\tsize:0;\tsigned:0;\n"
	  "\n"
	  "print fmt: \"%ps: %s\", (void *)REC->ip, REC->buf\n"
	},
};

#endif
