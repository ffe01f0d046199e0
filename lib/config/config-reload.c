/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Reload: which keys differ between the running configuration and a new
 * one in a way that needs a tracing restart (the "restart" column of the
 * key table), and keeping the running values of those keys in the new
 * configuration, so that the configuration in force always says what
 * actually runs. Events, their stack traces and their filters compare as
 * sets: the same events in another order are the same capture.
 */
#include "config.h"
#include "config-internal.h"
#include "util.h"

static bool strings_equal(const char *a, const char *b)
{
	return (!a && !b) || (a && b && streq(a, b));
}

/* Each event of a with want() true is in b with the same value, and the counts match. */
static bool events_same(const struct config *a, const struct config *b, int what)
{
	unsigned na = 0, nb = 0;

	for (unsigned i = 0; i < b->nr_events; i++)
		nb += what == 0 || (what == 1 && b->events[i].stacktrace) ||
		      (what == 2 && b->events[i].filter);
	for (unsigned i = 0; i < a->nr_events; i++) {
		const struct config_event *e = &a->events[i];
		int j;

		if ((what == 1 && !e->stacktrace) || (what == 2 && !e->filter))
			continue;
		na++;
		j = config_find_event(b, e->system, e->name);
		if (j < 0 || (what == 1 && !b->events[j].stacktrace) ||
		    (what == 2 && !strings_equal(e->filter, b->events[j].filter)))
			return false;
	}
	return na == nb;
}

static bool field_equal(const struct config_key *k, const struct config *a,
			const struct config *b)
{
	const char *pa = (const char *)a + k->offset, *pb = (const char *)b + k->offset;

	switch (k->type) {
	case FIELD_STRING:
		return strings_equal(*(char *const *)pa, *(char *const *)pb);
	case FIELD_U64:
		return *(const uint64_t *)pa == *(const uint64_t *)pb;
	case FIELD_UNSIGNED:
		return *(const unsigned *)pa == *(const unsigned *)pb;
	case FIELD_INT:
	case FIELD_ENUM:
		return *(const int *)pa == *(const int *)pb;
	case FIELD_BOOL:
		return *(const bool *)pa == *(const bool *)pb;
	case FIELD_DEFERRED:
		if (k == &config_keys[CONFIG_KEY_EVENTS])
			return events_same(a, b, 0);
		return a->stacktrace_all == b->stacktrace_all && events_same(a, b, 1);
	}
	return false;
}

bool config_needs_restart(const struct config *old, const struct config *new, char **ret_keys)
{
	_cleanup_free_ char *list = NULL;
	bool differ = false, complete = true;

	for (size_t i = 0; i < config_nr_keys; i++) {
		_cleanup_free_ char *key = NULL;

		if (config_keys[i].restart && !field_equal(&config_keys[i], old, new)) {
			differ = true;
			if (strprintf(&key, "%s.%s", config_keys[i].section, config_keys[i].name) < 0 ||
			    config_append_word(&list, ", ", key) < 0)
				complete = false;
		}
		/* Filters are keys of their own ("filter.SYSTEM:EVENT") next to events. */
		if (i == CONFIG_KEY_STACKTRACE && !events_same(old, new, 2)) {
			differ = true;
			if (config_append_word(&list, ", ", "trace.filter") < 0)
				complete = false;
		}
	}
	if (differ && ret_keys)
		*ret_keys = complete ? steal_ptr(list) : NULL;
	return differ;
}

#define SWAP(type, a, b)                  \
	do {                              \
		type tmp_ = *(type *)(a); \
		*(type *)(a) = *(type *)(b); \
		*(type *)(b) = tmp_;      \
	} while (0)

void config_keep_running(struct config *next, struct config *running)
{
	for (size_t i = 0; i < config_nr_keys; i++) {
		char *pa = (char *)next + config_keys[i].offset, *pb = (char *)running + config_keys[i].offset;

		if (!config_keys[i].restart)
			continue;
		SWAP(unsigned, &next->key_lines[i], &running->key_lines[i]);
		switch (config_keys[i].type) {
		case FIELD_STRING:
			SWAP(char *, pa, pb);
			break;
		case FIELD_U64:
			SWAP(uint64_t, pa, pb);
			break;
		case FIELD_UNSIGNED:
			SWAP(unsigned, pa, pb);
			break;
		case FIELD_INT:
		case FIELD_ENUM:
			SWAP(int, pa, pb);
			break;
		case FIELD_BOOL:
			SWAP(bool, pa, pb);
			break;
		case FIELD_DEFERRED:
			/* events, their filters and stack traces move together, once */
			if (i == CONFIG_KEY_EVENTS) {
				SWAP(struct config_event *, &next->events, &running->events);
				SWAP(unsigned, &next->nr_events, &running->nr_events);
				SWAP(bool, &next->stacktrace_all, &running->stacktrace_all);
			}
			break;
		}
	}
}
