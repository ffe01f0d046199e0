/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * stackmapctl stacks: a segment's stack table and generation windows, as
 * the decoder loads them, symbolized, as text or JSON. Exit status 1 when
 * a segment could not be read or has problems (reported on stderr).
 */
#include <assert.h>
#include <getopt.h>
#include <inttypes.h>

#include "budget.h"
#include "cmd-common.h"
#include "commands.h"
#include "decode.h"
#include "log.h"
#include "selection.h"
#include "segment.h"
#include "stacktab-resolve.h"
#include "stacktab.h"
#include "util.h"

static const char *gen_kind_name(uint32_t kind)
{
	switch (kind) {
	case SEGMENT_GEN_ADOPTED:
		return "adopted";
	case SEGMENT_GEN_RESET_LOSSLESS:
		return "reset_lossless";
	case SEGMENT_GEN_RESET_STRICT:
		return "reset_strict";
	case SEGMENT_GEN_RESET_EXTERNAL:
		return "reset_external";
	default:
		return "unknown";
	}
}

struct stacks_out {
	const struct decoder_segment *seg;
	struct json_writer *json;	/* NULL: text */
};

static int print_generation(uint32_t cpu, const struct segment_generation *g, void *userdata)
{
	struct stacks_out *o = userdata;
	struct json_writer *w = o->json;

	if (!w) {
		printf("generation %" PRIu32 " (previous %" PRIu32 ") %s ", g->generation,
		       g->prev_generation, gen_kind_name(g->kind));
		if (cpu == SEGMENT_NO_CPU)
			printf("window %" PRIu64 ".%09" PRIu64 "-%" PRIu64 ".%09" PRIu64 "\n",
			       g->window_begin / 1000000000, g->window_begin % 1000000000,
			       g->window_end / 1000000000, g->window_end % 1000000000);
		else
			printf("cpu %" PRIu32 " boundary\n", cpu);
		return 0;
	}
	json_object_open(w, NULL);
	json_add_uint(w, "generation", g->generation);
	json_add_uint(w, "previous", g->prev_generation);
	json_add_string(w, "kind", gen_kind_name(g->kind));
	if (cpu == SEGMENT_NO_CPU) {
		json_add_null(w, "cpu");
		json_add_uint(w, "window_begin", g->window_begin);
		json_add_uint(w, "window_end", g->window_end);
	} else
		json_add_uint(w, "cpu", cpu);
	json_object_close(w);
	return 0;
}

static int print_stack(const struct stack_entry *e, bool conflict, void *userdata)
{
	struct stacks_out *o = userdata;
	struct json_writer *w = o->json;
	bool absent = e->flags & SEGMENT_STACK_F_ABSENT;
	char sym[512];

	if (!w) {
		printf("generation %" PRIu32 " id %" PRIu32, e->generation, e->id);
		if (absent)
			printf(" ABSENT\n");
		else
			printf(" refs %" PRIu32 " depth %u%s\n", e->refs, e->nr,
			       conflict ? " CONFLICT (another stack has the same id; not resolved)" :
					  "");
	} else {
		json_object_open(w, NULL);
		json_add_uint(w, "generation", e->generation);
		json_add_uint(w, "id", e->id);
		json_add_uint(w, "refs", e->refs);
		json_add_uint(w, "depth", e->nr);
		json_add_bool(w, "absent", absent);
		json_add_bool(w, "conflict", conflict);
		json_array_open(w, "frames");
	}
	for (uint16_t i = 0; i < e->nr; i++) {
		const char *f = sym;

		if (e->flags & SEGMENT_STACK_F_TEXT)
			f = e->text[i];
		else
			(void)decoder_segment_symbolize(o->seg, e->ips[i], true, sym, sizeof(sym));
		if (!w) {
			printf("  [%u] %s\n", i, f);
			continue;
		}
		json_object_open(w, NULL);
		if (!(e->flags & SEGMENT_STACK_F_TEXT)) {
			char addr[24];

			(void)snprintf(addr, sizeof(addr), "0x%" PRIx64, e->ips[i]);
			json_add_string(w, "address", addr);
		}
		json_add_string(w, "symbol", f);
		json_object_close(w);
	}
	if (w) {
		json_array_close(w);
		json_object_close(w);
	}
	return 0;
}

static int stacks_one(const char *path, bool json)
{
	_cleanup_free_ char *msg = NULL;
	struct decoder_segment *seg = NULL;
	struct json_writer w;
	struct stacks_out o = { .json = json ? &w : NULL };
	const char *err;
	int r, ret = 0;

	r = decoder_segment_load(path, &seg, &msg);
	if (r < 0) {
		if (!msg && asprintf(&msg, "'%s': %s", path,
				     r == -ENOMEM && budget_error() ? budget_error() : strerror(-r)) < 0)
			msg = NULL;
		log_err("%s", msg ?: "out of memory");
		if (json) {
			json_writer_init(&w, SIZE_MAX);
			json_object_open(&w, NULL);
			json_add_string(&w, "path", path);
			json_array_open(&w, "errors");
			json_add_string(&w, NULL, msg);
			json_array_close(&w);
			json_array_open(&w, "generations");
			json_array_close(&w);
			json_array_open(&w, "stacks");
			json_array_close(&w);
			json_object_close(&w);
			(void)cmd_json_print(&w);
		}
		return 1;
	}
	o.seg = seg;
	for (size_t i = 0; (err = decoder_segment_error(seg, i)); i++) {
		log_err("%s", err);
		ret = 1;
	}
	if ((err = decoder_segment_unfinished(seg)))
		log_notice("%s", err);

	if (json) {
		json_writer_init(&w, SIZE_MAX);
		json_object_open(&w, NULL);
		json_add_string(&w, "path", path);
		json_array_open(&w, "errors");
		for (size_t i = 0; (err = decoder_segment_error(seg, i)); i++)
			json_add_string(&w, NULL, err);
		json_array_close(&w);
		json_array_open(&w, "generations");
	} else
		printf("# %s\n", path);

	r = stacktab_foreach_generation(decoder_segment_stacktab(seg), print_generation, &o);
	if (json) {
		json_array_close(&w);
		json_array_open(&w, "stacks");
	}
	if (r >= 0)
		r = stacktab_foreach(decoder_segment_stacktab(seg), print_stack, &o);
	if (json) {
		json_array_close(&w);
		json_object_close(&w);
		if (r >= 0)
			r = cmd_json_print(&w);
		else
			json_writer_done(&w);
	}
	decoder_segment_free(seg);
	if (r < 0) {
		log_errno(LOG_ERR, r, "cannot list the stacks of '%s'", path);
		return 1;
	}
	return ret;
}

int cmd_stacks(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ "memory-limit", required_argument, NULL, 'm' },
		{}
	};
	_cleanup_(selection_done) struct selection sel;
	bool json = false;
	struct progress bar;
	int c, r, ret = 0;

	assert(argv);

	selection_init(&sel);
	optind = 0;
	while ((c = getopt_long(argc, argv, "+hc:", opts, NULL)) >= 0) {
		switch (c) {
		case 'c':
			sel.config = optarg;
			break;
		case 'j':
			json = true;
			break;
		case 'm':
			sel.memory_limit = optarg;
			break;
		case 'h':
			printf("Usage: stackmapctl stacks [--json] [-c CONFIG] [--memory-limit SIZE] "
			       "[SEGMENT|DIRECTORY...]\n");
			return 0;
		default:
			fprintf(stderr, "Usage: stackmapctl stacks [--json] [-c CONFIG] [--memory-limit SIZE] "
					"[SEGMENT|DIRECTORY...]\n");
			return 2;
		}
	}
	r = selection_resolve(&sel, argc - optind, argv + optind);
	if (r < 0)
		return selection_resolve_status(r);
	cmd_progress_init(&bar, "stacks", sel.nr_paths, json);
	for (size_t i = 0; i < sel.nr_paths; i++) {
		if (!json && i > 0)
			printf("\n");
		ret |= stacks_one(sel.paths[i], json);
		progress_update(&bar, i + 1);
	}
	progress_done(&bar);
	if (fflush(stdout) != 0) {
		log_errno(LOG_ERR, -errno, "cannot write the stacks");
		return 1;
	}
	return ret;
}
