/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Values in the configuration file and in messages about it: sizes
 * ("64M"), durations ("10min"), booleans, names of systems, events and
 * instances, and the small string helpers the parser shares. Sizes and
 * durations are printed back in the largest unit that divides them, so
 * that a message quotes a limit the way a user would write it.
 */
#include <ctype.h>
#include <inttypes.h>
#include <strings.h>

#include "config.h"
#include "config-internal.h"
#include "util.h"

bool config_is_blank(char ch)
{
	return ch == ' ' || ch == '\t' || ch == '\r' || ch == '\n' || ch == '\f' || ch == '\v';
}

const char *config_skip_blank(const char *p)
{
	while (*p && config_is_blank(*p))
		p++;
	return p;
}

int config_replace_string(char **field, const char *value)
{
	char *copy = NULL;

	if (value) {
		copy = strdup(value);
		if (!copy)
			return -ENOMEM;
	}
	free(*field);
	*field = copy;
	return 0;
}

/* "64M", "1G", "512K" or plain bytes: the largest unit that divides exactly. */
const char *config_format_size(uint64_t v, char buf[static 32])
{
	static const char units[] = "KMGT";
	int u = -1;

	while (v != 0 && v % 1024 == 0 && u < 3) {
		v /= 1024;
		u++;
	}
	if (u < 0)
		(void)snprintf(buf, 32, "%" PRIu64, v);
	else
		(void)snprintf(buf, 32, "%" PRIu64 "%c", v, units[u]);
	return buf;
}

static const struct {
	const char *name;
	uint64_t usec;
} duration_units[] = {
	{ "d", DAY }, { "h", HOUR }, { "min", MINUTE }, { "s", SEC }, { "ms", MSEC }, { "us", 1 },
};

/* "10s", "1d", "500ms": the largest unit that divides exactly. */
const char *config_format_duration(uint64_t usec, char buf[static 32])
{
	if (usec == 0) {
		(void)snprintf(buf, 32, "0");
		return buf;
	}
	for (size_t i = 0; i < ARRAY_SIZE(duration_units); i++)
		if (usec % duration_units[i].usec == 0) {
			(void)snprintf(buf, 32, "%" PRIu64 "%s", usec / duration_units[i].usec,
				       duration_units[i].name);
			break;
		}
	return buf;
}

int config_append_word(char **list, const char *sep, const char *word)
{
	char *n = NULL;

	if (strprintf(&n, "%s%s%s", *list ?: "", *list ? sep : "", word) < 0)
		return -ENOMEM;
	free(*list);
	*list = n;
	return 0;
}

/* Names of systems, events and instances as tracefs spells them. */
bool config_valid_name(const char *s, size_t len, const char *extra)
{
	if (len == 0)
		return false;
	for (size_t i = 0; i < len; i++)
		if (!isalnum((unsigned char)s[i]) && s[i] != '_' && !(extra && strchr(extra, s[i])))
			return false;
	return true;
}

/* Decimal digits at *p (all of them are consumed, also on overflow). */
int config_parse_number(const char **p, uint64_t *ret)
{
	bool overflow = false;
	uint64_t v = 0;

	if (!isdigit((unsigned char)**p))
		return -EINVAL;
	for (; isdigit((unsigned char)**p); (*p)++) {
		unsigned d = (unsigned)(**p - '0');

		if (v > (UINT64_MAX - d) / 10)
			overflow = true;
		else
			v = v * 10 + d;
	}
	if (overflow)
		return -ERANGE;
	*ret = v;
	return 0;
}

int config_parse_size(const char *s, uint64_t *ret)
{
	const char *p = s;
	unsigned shift = 0;
	uint64_t v;
	int r;

	r = config_parse_number(&p, &v);
	if (r < 0)
		return r;
	switch (*p) {
	case 'K': case 'k': shift = 10; p++; break;
	case 'M': case 'm': shift = 20; p++; break;
	case 'G': case 'g': shift = 30; p++; break;
	case 'T': case 't': shift = 40; p++; break;
	default: break;
	}
	if (*p == 'B')
		p++;
	if (*p)
		return -EINVAL;
	if (shift && v > (UINT64_MAX >> shift))
		return -ERANGE;
	*ret = v << shift;
	return 0;
}

int config_parse_duration(const char *s, uint64_t *ret_usec)
{
	const char *p = s;
	uint64_t v;
	int r;

	r = config_parse_number(&p, &v);
	if (r < 0)
		return r;
	if (*p == '\0') {
		/* A bare number has no unit; only 0 means the same in every unit. */
		if (v != 0)
			return -EINVAL;
		*ret_usec = 0;
		return 0;
	}
	for (size_t i = 0; i < ARRAY_SIZE(duration_units); i++)
		if (streq(p, duration_units[i].name)) {
			if (v > UINT64_MAX / duration_units[i].usec)
				return -ERANGE;
			*ret_usec = v * duration_units[i].usec;
			return 0;
		}
	return -EINVAL;
}

int config_parse_bool(const char *s, bool *ret)
{
	static const char *const yes[] = { "yes", "true", "on", "1" };
	static const char *const no[] = { "no", "false", "off", "0" };

	for (size_t i = 0; i < ARRAY_SIZE(yes); i++) {
		if (strcasecmp(s, yes[i]) == 0) {
			*ret = true;
			return 0;
		}
		if (strcasecmp(s, no[i]) == 0) {
			*ret = false;
			return 0;
		}
	}
	return -EINVAL;
}

void config_strv_free(char **v)
{
	for (size_t i = 0; v && v[i]; i++)
		free(v[i]);
	free(v);
}

/* Split at blanks; no quoting (a hook that needs more is a script). */
int config_split_words(const char *s, char ***ret)
{
	char **v = NULL;
	size_t n = 0, cap = 0;

	for (const char *p = config_skip_blank(s); *p; p = config_skip_blank(p)) {
		size_t len = strcspn(p, " \t");

		/* the words and the NULL that ends them */
		if (GREEDY_REALLOC(v, cap, n + 2) < 0) {
			config_strv_free(v);
			return -ENOMEM;
		}
		v[n] = strndup(p, len);
		v[n + 1] = NULL;
		if (!v[n]) {
			config_strv_free(v);
			return -ENOMEM;
		}
		n++;
		p += len;
	}
	*ret = v;
	return 0;
}
