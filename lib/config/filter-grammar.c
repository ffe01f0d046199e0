/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The kernel's event filter grammar (Documentation/trace/events.rst),
 * checked without tracefs: the structure of an expression always and,
 * given the event's parsed format, its field names, the operators each
 * kind of field allows and the kind of value it is compared with. The
 * kernel checks a filter only when it is written to tracefs, too late for
 * "the config is valid"; this file is what the config parser and the
 * daemon's checks against the running kernel both use.
 *
 * libtraceevent's own filter parser (tep_filter_add_filter_str) is not
 * used on purpose: version 1.7 crashes on incomplete expressions ("x >",
 * "x > 1 &&"), double-frees or leaks on valid ones ("node == -1 || ...",
 * "!(x == 1)"), accepts broken ones ("x > 1 y"; unknown fields become
 * FALSE; numbers compared with strings) and rejects newer kernel syntax
 * (field.function, CPUS{...}). A config value must not be able to crash
 * the daemon.
 */
#include <ctype.h>
#include <stdarg.h>

#include <event-parse.h>

#include "filter-grammar.h"
#include "util.h"

enum tok {
	TOK_END,
	TOK_LPAREN,
	TOK_RPAREN,
	TOK_AND,
	TOK_OR,
	TOK_NOT,
	TOK_OP,
	TOK_FIELD,
	TOK_NUMBER,
	TOK_STRING,
	TOK_CPUS,
};

struct lexer {
	const char *p;
	enum tok tok;
	const char *start;		/* current token */
	int len;
	struct tep_event *event;	/* borrowed; NULL: field names are not checked */
	char *msg;
};

static int lex_fail(struct lexer *l, const char *fmt, ...) _printf_(2, 3);
static int lex_fail(struct lexer *l, const char *fmt, ...)
{
	va_list ap;
	int r;

	va_start(ap, fmt);
	r = vstrprintf(&l->msg, fmt, ap);
	va_end(ap);
	if (r < 0)
		return r;
	return -EINVAL;
}

static bool is_ident(char ch, bool first)
{
	return isalpha((unsigned char)ch) || ch == '_' || (!first && isdigit((unsigned char)ch));
}

/* A decimal or hex number, maybe negative, at p. */
static int lex_number(struct lexer *l, const char *p)
{
	const char *q = p + (*p == '-');

	if (q[0] == '0' && (q[1] == 'x' || q[1] == 'X') && isxdigit((unsigned char)q[2])) {
		for (q += 2; isxdigit((unsigned char)*q); q++)
			;
	} else {
		while (isdigit((unsigned char)*q))
			q++;
	}
	if (is_ident(*q, false)) {
		while (is_ident(*q, false))
			q++;
		return lex_fail(l, "'%.*s' is not a number", (int)(q - p), p);
	}
	l->tok = TOK_NUMBER;
	l->len = (int)(q - p);
	return 0;
}

/* A field name (maybe with a ".suffix"), or a cpumask value CPUS{0-3,8}, at p. */
static int lex_word(struct lexer *l, const char *p)
{
	const char *q = p;

	while (is_ident(*q, false))
		q++;
	if (q - p == 4 && startswith(p, "CPUS") && *q == '{') {
		const char *end = strchr(q, '}');

		if (!end)
			return lex_fail(l, "missing '}' in %s", p);
		l->tok = TOK_CPUS;
		l->len = (int)(end - p + 1);
		return 0;
	}
	if (*q == '.' && is_ident(q[1], true))
		for (q++; is_ident(*q, false); q++)
			;
	l->tok = TOK_FIELD;
	l->len = (int)(q - p);
	return 0;
}

static int lex_next(struct lexer *l)
{
	const char *p = l->p;
	static const char *const two[] = { "&&", "||", "==", "!=", "<=", ">=" };
	int r;

	while (*p == ' ' || *p == '\t')
		p++;
	l->start = p;
	l->len = 0;
	if (!*p) {
		l->tok = TOK_END;
		l->p = p;
		return 0;
	}
	for (size_t i = 0; i < ARRAY_SIZE(two); i++)
		if (startswith(p, two[i])) {
			l->tok = i == 0 ? TOK_AND : i == 1 ? TOK_OR : TOK_OP;
			l->len = 2;
			goto done;
		}
	l->len = 1;
	switch (*p) {
	case '(':
		l->tok = TOK_LPAREN;
		goto done;
	case ')':
		l->tok = TOK_RPAREN;
		goto done;
	case '!':
		l->tok = TOK_NOT;
		goto done;
	case '<': case '>': case '&': case '~':
		l->tok = TOK_OP;
		goto done;
	case '=':
		return lex_fail(l, "'=' is not an operator (use ==)");
	case '|':
		return lex_fail(l, "'|' is not an operator (use ||)");
	case '"': case '\'': {
		const char *end = strchr(p + 1, *p);

		if (!end)
			return lex_fail(l, "unterminated string %s", p);
		l->tok = TOK_STRING;
		l->len = (int)(end - p + 1);
		goto done;
	}
	default:
		break;
	}
	if (isdigit((unsigned char)*p) || (*p == '-' && isdigit((unsigned char)p[1])))
		r = lex_number(l, p);
	else if (is_ident(*p, true))
		r = lex_word(l, p);
	else
		r = lex_fail(l, "unexpected '%c' in '%s'", *p, p);
	if (r < 0)
		return r;
done:
	l->p = p + l->len;
	return 0;
}

enum field_kind {
	FIELD_UNKNOWN,		/* no format to look at */
	FIELD_NUMBER,
	FIELD_TEXT,
	FIELD_FUNCTION,		/* field.function: an address within the named function */
};

/* Fields the kernel adds to every event for filtering. */
static const struct {
	const char *name;
	enum field_kind kind;
} generic_fields[] = {
	{ "CPU", FIELD_NUMBER }, { "cpu", FIELD_NUMBER }, { "common_cpu", FIELD_NUMBER },
	{ "COMM", FIELD_TEXT }, { "comm", FIELD_TEXT }, { "common_comm", FIELD_TEXT },
};

static int list_fields(struct tep_event *e, char **ret)
{
	char *list = NULL;

	for (struct tep_format_field *f = e->format.fields; f; f = f->next) {
		char *n = NULL;

		if (strprintf(&n, "%s%s%s", list ?: "", list ? ", " : "", f->name) < 0) {
			free(list);
			return -ENOMEM;
		}
		free(list);
		list = n;
	}
	*ret = list;
	return 0;
}

/* The field named by the current token: it must exist when we have the format. */
static int check_field(struct lexer *l, enum field_kind *ret_kind)
{
	_cleanup_free_ char *name = strndup(l->start, (size_t)l->len), *fields = NULL;
	struct tep_format_field *f;
	bool function = false;
	char *dot;

	if (!name)
		return -ENOMEM;
	dot = strchr(name, '.');
	if (dot) {
		if (!streq(dot + 1, "function"))
			return lex_fail(l, "unknown suffix '%s' in '%s' (only .function is known)",
					dot, name);
		*dot = '\0';
		function = true;
	}
	*ret_kind = function ? FIELD_FUNCTION : FIELD_UNKNOWN;
	if (!l->event)
		return 0;
	for (size_t i = 0; i < ARRAY_SIZE(generic_fields); i++)
		if (streq(name, generic_fields[i].name)) {
			if (!function)
				*ret_kind = generic_fields[i].kind;
			return 0;
		}
	f = tep_find_any_field(l->event, name);
	if (f) {
		if (!function)
			*ret_kind = f->flags & TEP_FIELD_IS_STRING ? FIELD_TEXT : FIELD_NUMBER;
		return 0;
	}
	if (list_fields(l->event, &fields) < 0)
		return -ENOMEM;
	return lex_fail(l, "'%s' is not a field of %s:%s (fields: %s)", name, l->event->system,
			l->event->name, fields ?: "none");
}

/* The operators the kernel allows for each kind of field (Documentation/trace/events.rst). */
static int check_operator(struct lexer *l, enum field_kind kind, const char *field, int field_len)
{
	static const char *const numeric[] = { "==", "!=", "<", "<=", ">", ">=", "&" };
	static const char *const text[] = { "==", "!=", "~" };
	const char *const *ops = kind == FIELD_TEXT ? text : numeric;
	size_t n = kind == FIELD_TEXT ? ARRAY_SIZE(text) : kind == FIELD_FUNCTION ? 2 :
		ARRAY_SIZE(numeric);

	if (kind == FIELD_UNKNOWN && l->len == 1 && *l->start == '~')
		return 0;
	for (size_t i = 0; i < n; i++)
		if ((int)strlen(ops[i]) == l->len && strncmp(ops[i], l->start, (size_t)l->len) == 0)
			return 0;
	return lex_fail(l, "'%.*s' cannot compare %s field '%.*s' (use %s)", l->len, l->start,
			kind == FIELD_TEXT ? "the text" : "the numeric", field_len, field,
			kind == FIELD_TEXT ? "==, != or ~" : kind == FIELD_FUNCTION ? "== or !=" :
			"==, !=, <, <=, >, >= or &");
}

static int check_value(struct lexer *l, enum field_kind kind)
{
	switch (l->tok) {
	case TOK_NUMBER:
		if (kind == FIELD_TEXT)
			return lex_fail(l, "text fields compare with a quoted string, not %.*s",
					l->len, l->start);
		return 0;
	case TOK_STRING:
		if (kind == FIELD_NUMBER)
			return lex_fail(l, "numeric fields compare with a number, not %.*s", l->len,
					l->start);
		return 0;
	case TOK_CPUS:
		return 0;
	case TOK_FIELD:
		if (kind == FIELD_FUNCTION)
			return 0;	/* the function's name */
		return lex_fail(l, "expected a number or a quoted string at '%s'", l->start);
	case TOK_END:
		return lex_fail(l, "expression ends where a value was expected");
	default:
		return lex_fail(l, "expected a value at '%s'", l->start);
	}
}

static int parse_or(struct lexer *l);

/* condition := '!' condition | '(' or ')' | FIELD OP value */
static int parse_condition(struct lexer *l)
{
	enum field_kind kind = FIELD_UNKNOWN;
	const char *field;
	int r, field_len;

	switch (l->tok) {
	case TOK_NOT:
		r = lex_next(l);
		return r < 0 ? r : parse_condition(l);
	case TOK_LPAREN:
		r = lex_next(l);
		if (r < 0)
			return r;
		r = parse_or(l);
		if (r < 0)
			return r;
		if (l->tok != TOK_RPAREN)
			return l->tok == TOK_END ? lex_fail(l, "missing ')'") :
				lex_fail(l, "expected ')' at '%s'", l->start);
		return lex_next(l);
	case TOK_FIELD:
		break;
	case TOK_END:
		return lex_fail(l, "expression ends where a condition was expected");
	default:
		return lex_fail(l, "expected a field name at '%s'", l->start);
	}
	field = l->start;
	field_len = l->len;
	r = check_field(l, &kind);
	if (r < 0)
		return r;
	r = lex_next(l);
	if (r < 0)
		return r;
	if (l->tok != TOK_OP) {
		if (l->tok == TOK_END)
			return lex_fail(l, "expression ends after '%.*s' where an operator was "
					"expected", field_len, field);
		return lex_fail(l, "expected an operator after '%.*s' at '%s'", field_len, field,
				l->start);
	}
	r = check_operator(l, kind, field, field_len);
	if (r < 0)
		return r;
	r = lex_next(l);
	if (r < 0)
		return r;
	r = check_value(l, kind);
	if (r < 0)
		return r;
	return lex_next(l);
}

static int parse_and(struct lexer *l)
{
	int r = parse_condition(l);

	while (r >= 0 && l->tok == TOK_AND) {
		r = lex_next(l);
		if (r >= 0)
			r = parse_condition(l);
	}
	return r;
}

static int parse_or(struct lexer *l)
{
	int r = parse_and(l);

	while (r >= 0 && l->tok == TOK_OR) {
		r = lex_next(l);
		if (r >= 0)
			r = parse_and(l);
	}
	return r;
}

int filter_grammar_check(struct tep_event *event, const char *expr, char **ret_error)
{
	struct lexer l = { .p = expr, .event = event };
	int r;

	if (!*expr)
		r = lex_fail(&l, "empty filter (remove the line to record every hit)");
	else
		r = lex_next(&l);
	if (r >= 0)
		r = parse_or(&l);
	if (r >= 0 && l.tok != TOK_END)
		r = lex_fail(&l, "unexpected '%s' after a complete condition (join conditions "
			     "with && or ||)", l.start);
	if (r < 0 && ret_error)
		*ret_error = steal_ptr(l.msg);
	free(l.msg);
	return r < 0 ? r : 0;
}
