/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Compiles an event's parsed print format (event->print_fmt: the format
 * text and libtraceevent's tep_print_arg tree) into the program that
 * event-format-print.c runs per record, and keeps the programs in a cache
 * keyed by handle and event. The compiler accepts only what it reproduces
 * exactly as libtraceevent 1.7 prints it: literal text with its escapes;
 * %d %i %u %x %X %o with the h, hh, l, ll, L and z lengths, the '-', '0' and
 * (for hex) '#' flags, widths and precisions; %s
 * of atoms, char arrays, __get_str(), __print_flags(), __print_symbolic()
 * and ?:; %p, %pS, %ps, %pF, %pf; numeric arguments built from fields,
 * array elements, constants, casts, arithmetic, comparison, logical and ?:
 * operators. Anything else leaves the event type to libtraceevent.
 * The start of a report line (COMM-PID [CPU] TIME:) is written by the same
 * printf rules.
 */
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "event-format.h"
#include "event-format-internal.h"
#include "hashtab.h"
#include "util.h"

/* Handles with programs held at once; more come one after another as a report reads segments. */
#define TEP_SLOTS 4

struct entry {
	const struct tep_event *event;
	struct fprog *prog;		/* NULL: libtraceevent prints this type */
};

struct tep_slot {
	struct tep_handle *tep;		/* referenced (tep_ref) while the slot holds it */
	unsigned long long used;
	struct entry *entries;		/* in the order first seen */
	size_t nr, cap;
	struct hashtab index;		/* event pointer -> index in entries + 1 */
	struct fsym *syms;		/* FSYM_SLOTS, or NULL */
};

struct event_format_cache {
	struct tep_slot slots[TEP_SLOTS];
	unsigned long long tick;
	const struct tep_event *last_event;	/* a hit on the previous lookup */
	struct fprog *last_prog;
	struct tep_slot *last_slot;
	struct fout out;
	struct event_format_stats stats;
};

struct compiler {
	struct tep_event *event;
	bool fail;			/* a shape we do not reproduce, or no memory */
};

static struct fx *fx_free(struct fx *x)
{
	if (!x)
		return NULL;
	fx_free(x->a);
	fx_free(x->b);
	fx_free(x->c);
	free(x);
	return NULL;
}

static struct fs *fs_free(struct fs *f)
{
	if (!f)
		return NULL;
	free(f->text);
	fx_free(f->expr);
	free(f->delim);
	for (size_t i = 0; i < f->nr_flags; i++)
		free(f->flags[i].str);
	free(f->flags);
	fs_free(f->then);
	fs_free(f->otherwise);
	free(f);
	return NULL;
}

static struct fprog *fprog_free(struct fprog *p)
{
	if (!p)
		return NULL;
	for (size_t i = 0; i < p->nr; i++) {
		free(p->items[i].text);
		fx_free(p->items[i].num);
		fs_free(p->items[i].str);
	}
	free(p->items);
	free(p);
	return NULL;
}

static void *node(struct compiler *cc, size_t size)
{
	void *p = calloc(1, size);

	if (!p)
		cc->fail = true;
	return p;
}

static char *dup_str(struct compiler *cc, const char *s)
{
	char *p = s ? strdup(s) : NULL;

	if (s && !p)
		cc->fail = true;
	return p;
}

/* What libtraceevent's cast of a value to type keeps of it (it never sign-extends). */
static uint64_t cast_mask(const char *type)
{
	static const struct {
		const char *name;
		uint64_t mask;
	} types[] = {
		{ "u8", 0xff }, { "u16", 0xffff }, { "u32", 0xffffffff },
		{ "s8", 0xff }, { "s16", 0xffff }, { "s32", 0xffffffff },
	};
	size_t len = strlen(type);

	if (len < 2 || type[len - 1] == '*' || !strncmp(type, "struct", 6))
		return ~0ULL;
	for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++)
		if (!strcmp(type, types[i].name))
			return types[i].mask;
	if (!strncmp(type, "unsigned ", 9))
		type += 9;
	if (!strcmp(type, "char"))
		return 0xff;
	if (!strcmp(type, "short"))
		return 0xffff;
	if (!strcmp(type, "int"))
		return 0xffffffff;
	return ~0ULL;
}

/* The value of a flag or symbol as libtraceevent reads its text: a number or a known name. */
static long long flag_value(const char *text)
{
	static const struct {
		const char *name;
		long long value;
	} known[] = {
		{ "HI_SOFTIRQ", 0 }, { "TIMER_SOFTIRQ", 1 }, { "NET_TX_SOFTIRQ", 2 },
		{ "NET_RX_SOFTIRQ", 3 }, { "BLOCK_SOFTIRQ", 4 }, { "IRQ_POLL_SOFTIRQ", 5 },
		{ "TASKLET_SOFTIRQ", 6 }, { "SCHED_SOFTIRQ", 7 }, { "HRTIMER_SOFTIRQ", 8 },
		{ "RCU_SOFTIRQ", 9 }, { "HRTIMER_NORESTART", 0 }, { "HRTIMER_RESTART", 1 },
	};

	if (isdigit((unsigned char)text[0]))
		return (long long)strtoull(text, NULL, 0);
	for (size_t i = 0; i < sizeof(known) / sizeof(known[0]); i++)
		if (!strcmp(known[i].name, text))
			return known[i].value;
	return -1;
}

static struct tep_format_field *arg_field(struct compiler *cc, struct tep_format_field *field,
					  const char *name)
{
	if (!field && name)
		field = tep_find_any_field(cc->event, name);
	if (!field)
		cc->fail = true;
	return field;
}

static bool op_code(const char *op, enum fx_op *ret)
{
	static const char *const ops[] = {
		[OP_NOT] = "!", [OP_NE] = "!=", [OP_BNOT] = "~", [OP_OR] = "|", [OP_LOR] = "||",
		[OP_AND] = "&", [OP_LAND] = "&&", [OP_LT] = "<", [OP_SHL] = "<<", [OP_LE] = "<=",
		[OP_GT] = ">", [OP_SHR] = ">>", [OP_GE] = ">=", [OP_EQ] = "==", [OP_SUB] = "-",
		[OP_ADD] = "+", [OP_DIV] = "/", [OP_MOD] = "%", [OP_MUL] = "*",
	};

	for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); i++)
		if (!strcmp(op, ops[i])) {
			*ret = i;
			return true;
		}
	return false;
}

static struct fx *compile_num(struct compiler *cc, struct tep_print_arg *arg);

/* REC->array[index]: libtraceevent reads one element of a fixed array. */
static struct fx *compile_index(struct compiler *cc, struct tep_print_arg *arg, struct fx *x)
{
	struct tep_print_arg *larg = arg->op.left;
	struct tep_format_field *field;

	if (!larg || larg->type != TEP_PRINT_FIELD) {
		cc->fail = true;
		return x;
	}
	field = arg_field(cc, larg->field.field, larg->field.name);
	if (!field)
		return x;
	if (!(field->flags & TEP_FIELD_IS_ARRAY) || (field->elementsize != 1 &&
	    field->elementsize != 2 && field->elementsize != 4 && field->elementsize != 8)) {
		cc->fail = true;
		return x;
	}
	x->kind = FX_INDEX;
	x->offset = field->offset;
	x->size = field->elementsize;
	x->b = compile_num(cc, arg->op.right);
	return x;
}

static struct fx *compile_op(struct compiler *cc, struct tep_print_arg *arg, struct fx *x)
{
	struct tep_print_arg *right = arg->op.right;

	if (!strcmp(arg->op.op, "["))
		return compile_index(cc, arg, x);
	if (!strcmp(arg->op.op, "?")) {
		if (!right || right->type != TEP_PRINT_OP || strcmp(right->op.op, ":")) {
			cc->fail = true;
			return x;
		}
		x->kind = FX_COND;
		x->a = compile_num(cc, arg->op.left);
		x->b = compile_num(cc, right->op.left);
		x->c = compile_num(cc, right->op.right);
		return x;
	}
	x->kind = FX_OP;
	if (!op_code(arg->op.op, &x->op)) {
		cc->fail = true;
		return x;
	}
	x->a = compile_num(cc, arg->op.left);
	x->b = compile_num(cc, right);
	/* libtraceevent would divide by zero: only constant divisors */
	if ((x->op == OP_DIV || x->op == OP_MOD) && x->b && (x->b->kind != FX_CONST || !x->b->value))
		cc->fail = true;
	return x;
}

/* A numeric argument, as eval_num_arg() computes it. */
static struct fx *compile_num(struct compiler *cc, struct tep_print_arg *arg)
{
	struct tep_format_field *field;
	struct fx *x, *item;

	if (!arg || cc->fail) {
		cc->fail = true;
		return NULL;
	}
	x = node(cc, sizeof(*x));
	if (!x)
		return NULL;
	switch (arg->type) {
	case TEP_PRINT_NULL:
		x->kind = FX_CONST;
		return x;
	case TEP_PRINT_ATOM:
		x->kind = FX_CONST;
		x->value = strtoull(arg->atom.atom, NULL, 0);
		/* a name would be looked up among the kernel's functions */
		if (!x->value && !isdigit((unsigned char)arg->atom.atom[0]))
			cc->fail = true;
		return x;
	case TEP_PRINT_FIELD:
		field = arg_field(cc, arg->field.field, arg->field.name);
		if (!field)
			return x;
		if (field->size != 1 && field->size != 2 && field->size != 4 && field->size != 8)
			cc->fail = true;
		x->kind = FX_FIELD;
		x->offset = field->offset;
		x->size = field->size;
		return x;
	case TEP_PRINT_TYPE:
		item = compile_num(cc, arg->typecast.item);
		x->kind = FX_MASK;
		x->value = cast_mask(arg->typecast.type);
		x->a = item;
		return x;
	case TEP_PRINT_OP:
		return compile_op(cc, arg, x);
	default:
		cc->fail = true;
		return x;
	}
}

/* The flags or symbols of __print_flags() and __print_symbolic(). */
static void compile_flag_list(struct compiler *cc, struct fs *f, struct tep_print_flag_sym *list,
			      bool is_flags)
{
	size_t n = 0;

	for (struct tep_print_flag_sym *s = list; s; s = s->next)
		n++;
	f->flags = n ? calloc(n, sizeof(*f->flags)) : NULL;
	if (n && !f->flags) {
		cc->fail = true;
		return;
	}
	for (struct tep_print_flag_sym *s = list; s && !cc->fail; s = s->next) {
		struct fs_flag *fl = &f->flags[f->nr_flags++];

		if (!s->value) {
			cc->fail = true;
			break;
		}
		fl->value = flag_value(s->value);
		fl->str = dup_str(cc, s->str);
		/* a flag of value 0 never prints; anything else needs its text */
		if (!s->str && (!is_flags || fl->value))
			cc->fail = true;
	}
}

static struct fs *compile_str(struct compiler *cc, struct tep_print_arg *arg);

static void compile_str_field(struct compiler *cc, struct tep_print_arg *arg, struct fs *f)
{
	struct tep_format_field *field = arg_field(cc, arg->field.field, arg->field.name);

	if (!field)
		return;
	/* a long-sized scalar prints as a pointer or a printk format: not ours */
	if (!(field->flags & TEP_FIELD_IS_ARRAY) &&
	    field->size == tep_get_long_size(cc->event->tep))
		cc->fail = true;
	f->kind = FS_ARRAY;
	f->offset = field->offset;
	f->size = field->size;
}

/* A %s argument, as print_str_arg() prints it. */
static struct fs *compile_str(struct compiler *cc, struct tep_print_arg *arg)
{
	struct tep_format_field *field;
	struct tep_print_arg *right;
	struct fs *f;

	if (!arg || cc->fail) {
		cc->fail = true;
		return NULL;
	}
	f = node(cc, sizeof(*f));
	if (!f)
		return NULL;
	switch (arg->type) {
	case TEP_PRINT_ATOM:
		f->kind = FS_TEXT;
		f->text = dup_str(cc, arg->atom.atom);
		break;
	case TEP_PRINT_FIELD:
		compile_str_field(cc, arg, f);
		break;
	case TEP_PRINT_STRING:
		field = arg_field(cc, arg->string.field, arg->string.string);
		if (field && field->size != 2 && field->size != 4)
			cc->fail = true;
		if (!field)
			break;
		f->kind = FS_DYNSTR;
		f->offset = field->offset;
		f->size = field->size;
		f->relative = field->flags & TEP_FIELD_IS_RELATIVE;
		break;
	case TEP_PRINT_FLAGS:
		f->kind = FS_FLAGS;
		f->expr = compile_num(cc, arg->flags.field);
		f->delim = dup_str(cc, arg->flags.delim);
		compile_flag_list(cc, f, arg->flags.flags, true);
		break;
	case TEP_PRINT_SYMBOL:
		f->kind = FS_SYMBOL;
		f->expr = compile_num(cc, arg->symbol.field);
		compile_flag_list(cc, f, arg->symbol.symbols, false);
		break;
	case TEP_PRINT_OP:
		right = arg->op.right;
		if (strcmp(arg->op.op, "?") || !right || right->type != TEP_PRINT_OP ||
		    strcmp(right->op.op, ":")) {
			cc->fail = true;
			break;
		}
		f->kind = FS_COND;
		f->expr = compile_num(cc, arg->op.left);
		f->then = compile_str(cc, right->op.left);
		f->otherwise = compile_str(cc, right->op.right);
		break;
	default:
		cc->fail = true;
		break;
	}
	return f;
}

/*
 * One conversion at fmt ('%'), in printf's grammar restricted to what
 * libtraceevent's own scan of the format also accepts. Returns its length,
 * or 0 when it is not one we reproduce.
 */
static size_t parse_spec(const char *fmt, struct fspec *sp)
{
	const char *p = fmt + 1;

	*sp = (struct fspec){ .prec = -1 };
	for (;; p++) {
		if (*p == '-')
			sp->minus = true;
		else if (*p == '0')
			sp->zero = true;
		else if (*p == '#')
			sp->hash = true;
		else
			break;
	}
	/* libtraceevent 1.7 passes '*' arguments to printf in its own way */
	if (*p == '*')
		return 0;
	for (; isdigit((unsigned char)*p) && sp->width < 10000; p++)
		sp->width = sp->width * 10 + (*p - '0');
	if (*p == '.') {
		sp->prec = 0;
		if (*++p == '*')
			return 0;
		for (; isdigit((unsigned char)*p) && sp->prec < 10000; p++)
			sp->prec = sp->prec * 10 + (*p - '0');
	}
	if (p[0] == 'h' && p[1] == 'h')
		sp->ls = -2, p += 2;
	else if (p[0] == 'l' && p[1] == 'l')
		sp->ls = 2, p += 2;
	else if (*p == 'L')	/* glibc: as ll for integers */
		sp->ls = 2, p++;
	else if (*p == 'h')
		sp->ls = -1, p++;
	else if (*p == 'l' || *p == 'z')
		sp->ls = 1, p++;
	sp->conv = *p++;
	if (!strchr("diuxXosp", sp->conv) || !sp->conv || p - fmt > 28)
		return 0;
	/* printf leaves these undefined; glibc's choice is not worth reproducing */
	if (sp->hash && sp->conv != 'x' && sp->conv != 'X' && sp->conv != 'p')
		return 0;
	if (sp->conv == 's' && (sp->zero || sp->ls))
		return 0;
	if (sp->conv == 'p') {
		if (*p && strchr("MmIiUh", *p))
			return 0;	/* MAC, IP, UUID and hex-dump pointers */
		if (*p && strchr("SsFf", *p)) {
			sp->func_offset = *p == 'S' || *p == 'F';
			sp->conv = 'f';
			p++;
		}
	}
	return p - fmt;
}

static struct fitem *add_item(struct compiler *cc, struct fprog *p, enum fi_kind kind)
{
	if (cc->fail)
		return NULL;
	if (GREEDY_REALLOC(p->items, p->cap, p->nr + 1) < 0) {
		cc->fail = true;
		return NULL;
	}
	p->items[p->nr] = (struct fitem){ .kind = kind };
	return &p->items[p->nr++];
}

/* Literal text up to the next conversion, with libtraceevent's escapes; returns its length. */
static size_t compile_text(struct compiler *cc, struct fprog *p, const char *fmt)
{
	struct fitem *it;
	const char *f = fmt;
	char *out;

	out = malloc(strlen(fmt) + 1);
	if (!out) {
		cc->fail = true;
		return 0;
	}
	it = add_item(cc, p, FI_TEXT);
	if (!it) {
		free(out);
		return 0;
	}
	it->text = out;
	while (*f && !(f[0] == '%' && f[1] != '%')) {
		if (f[0] == '%') {
			out[it->len++] = '%';
			f += 2;
		} else if (f[0] == '\\') {
			if (!f[1]) {
				cc->fail = true;
				break;
			}
			out[it->len++] = f[1] == 'n' ? '\n' : f[1] == 't' ? '\t' :
					 f[1] == 'r' ? '\r' : f[1];
			f += 2;
		} else {
			out[it->len++] = *f++;
		}
	}
	out[it->len] = '\0';
	return f - fmt;
}

/* One conversion and the argument(s) it takes; returns its length. */
static size_t compile_conv(struct compiler *cc, struct fprog *p, const char *fmt,
			   struct tep_print_arg **args)
{
	struct fspec sp;
	struct fitem *it;
	size_t len = parse_spec(fmt, &sp);

	if (!len) {
		cc->fail = true;
		return 0;
	}
	it = add_item(cc, p, sp.conv == 's' ? FI_STR : sp.conv == 'p' ? FI_PTR :
			     sp.conv == 'f' ? FI_FUNC : FI_INT);
	if (!it)
		return 0;
	it->spec = sp;
	if (!*args) {
		cc->fail = true;
		return 0;
	}
	if (it->kind == FI_STR)
		it->str = compile_str(cc, *args);
	else if ((*args)->type == TEP_PRINT_BSTRING)
		cc->fail = true;
	else
		it->num = compile_num(cc, *args);
	*args = (*args)->next;
	return len;
}

static bool host_big_endian(void)
{
	const uint16_t one = 1;

	return *(const uint8_t *)&one == 0;
}

/* The program for event, or NULL when libtraceevent must print it. */
static struct fprog *compile(struct tep_event *event)
{
	struct compiler cc = { .event = event };
	struct tep_print_arg *args = event->print_fmt.args;
	const char *fmt = event->print_fmt.format;
	struct fprog *p;

	if (!fmt || (event->flags & (TEP_EVENT_FL_FAILED | TEP_EVENT_FL_ISBPRINT |
				     TEP_EVENT_FL_PRINTRAW)) ||
	    (event->handler && !(event->flags & TEP_EVENT_FL_NOHANDLE)) ||
	    tep_is_file_bigendian(event->tep) != host_big_endian())
		return NULL;
	p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	while (*fmt && !cc.fail) {
		if (fmt[0] == '%' && fmt[1] != '%')
			fmt += compile_conv(&cc, p, fmt, &args);
		else
			fmt += compile_text(&cc, p, fmt);
	}
	if (cc.fail)
		return fprog_free(p);
	return p;
}

struct event_format_cache *event_format_cache_new(void)
{
	return calloc(1, sizeof(struct event_format_cache));
}

static void slot_clear(struct tep_slot *slot)
{
	for (size_t i = 0; i < slot->nr; i++)
		fprog_free(slot->entries[i].prog);
	free(slot->entries);
	hashtab_done(&slot->index);
	free(slot->syms);
	if (slot->tep)
		tep_unref(slot->tep);
	*slot = (struct tep_slot){};
}

struct event_format_cache *event_format_cache_free(struct event_format_cache *c)
{
	if (!c)
		return NULL;
	for (size_t i = 0; i < TEP_SLOTS; i++)
		slot_clear(&c->slots[i]);
	free(c->out.buf);
	free(c);
	return NULL;
}

/* The slot of tep, taking the least recently used one (and a reference) if it has none. */
static struct tep_slot *slot_of(struct event_format_cache *c, struct tep_handle *tep)
{
	struct tep_slot *lru = &c->slots[0];

	for (size_t i = 0; i < TEP_SLOTS; i++) {
		if (c->slots[i].tep == tep)
			return &c->slots[i];
		if (c->slots[i].used < lru->used)
			lru = &c->slots[i];
	}
	/* the last hit may belong to the slot we reuse */
	c->last_event = NULL;
	slot_clear(lru);
	tep_ref(tep);
	lru->tep = tep;
	/* without it symbols are looked up every time: slower, the same */
	lru->syms = calloc(FSYM_SLOTS, sizeof(*lru->syms));
	return lru;
}

static struct entry *slot_find(struct tep_slot *slot, const struct tep_event *event)
{
	uint64_t h = hash_u64((uintptr_t)event);
	struct hashtab_slot *s;

	hashtab_foreach_candidate(s, &slot->index, h)
		if (slot->entries[s->val - 1].event == event)
			return &slot->entries[s->val - 1];
	return NULL;
}

/* A new entry for event (not in the slot yet), without a program; NULL without memory. */
static struct entry *slot_add(struct tep_slot *slot, const struct tep_event *event)
{
	if (GREEDY_REALLOC(slot->entries, slot->cap, slot->nr + 1) < 0 ||
	    hashtab_add(&slot->index, hash_u64((uintptr_t)event), slot->nr + 1) < 0)
		return NULL;
	slot->entries[slot->nr] = (struct entry){ .event = event };
	return &slot->entries[slot->nr++];
}

/* The program of event (NULL: libtraceevent's), compiled on first use. */
static struct fprog *lookup(struct event_format_cache *c, struct tep_event *event)
{
	struct tep_slot *slot;
	struct entry *e;

	if (event == c->last_event)
		return c->last_prog;
	c->last_event = NULL;
	slot = slot_of(c, event->tep);
	slot->used = ++c->tick;
	e = slot_find(slot, event);
	if (!e) {
		e = slot_add(slot, event);
		if (!e)
			return NULL;
		e->prog = compile(event);
		if (e->prog)
			c->stats.types_fast++;
		else
			c->stats.types_fallback++;
	}
	c->last_event = event;
	c->last_prog = e->prog;
	c->last_slot = slot;
	return e->prog;
}

bool event_format_info(struct event_format_cache *c, struct trace_seq *s, struct tep_event *event,
		       struct tep_record *record)
{
	struct fprog *prog;

	if (event->handler && !(event->flags & TEP_EVENT_FL_NOHANDLE))
		goto fallback;
	prog = lookup(c, event);
	if (!prog || record->size < 0)
		goto fallback;
	c->out.len = 0;
	if (!fprog_run(prog, event->tep, c->last_slot->syms, record->data, record->size, &c->out))
		goto fallback;
	trace_seq_puts(s, c->out.buf);
	c->stats.records_fast++;
	return true;

fallback:
	c->stats.records_fallback++;
	return false;
}

/* "%16s-%-5d [%03d]" and " %6.1000d:", by the printf rules the compiled formats use. */
bool event_format_task_time(struct event_format_cache *c, struct trace_seq *s, const char *comm,
			    int pid, int cpu, bool with_time, unsigned long long ts_ns)
{
	static const struct fspec comm_sp = { .width = 16, .prec = -1, .conv = 's' };
	static const struct fspec pid_sp = { .minus = true, .width = 5, .prec = -1, .conv = 'd' };
	static const struct fspec cpu_sp = { .zero = true, .width = 3, .prec = -1, .conv = 'd' };
	static const struct fspec sec_sp = { .width = 5, .prec = -1, .ls = 2, .conv = 'u' };
	static const struct fspec usec_sp = { .zero = true, .width = 6, .prec = -1, .ls = 2,
					      .conv = 'u' };
	/* rounded to microseconds, wrapping at 2^64 ns, as libtraceevent does */
	unsigned long long us = (ts_ns + 500) / 1000;
	struct fout *o = &c->out;

	o->len = 0;
	o->ok = true;
	fout_str(o, &comm_sp, comm, strlen(comm));
	fout_put(o, "-", 1);
	fout_int(o, &pid_sp, (uint64_t)(int64_t)pid);
	fout_put(o, " [", 2);
	fout_int(o, &cpu_sp, (uint64_t)(int64_t)cpu);
	fout_put(o, "]", 1);
	if (with_time) {
		fout_put(o, " ", 1);
		fout_int(o, &sec_sp, us / 1000000);
		fout_put(o, ".", 1);
		fout_int(o, &usec_sp, us % 1000000);
		fout_put(o, ":", 1);
	}
	if (!fout_end(o))
		return false;
	trace_seq_puts(s, o->buf);
	return true;
}

void event_format_stats(const struct event_format_cache *c, struct event_format_stats *ret)
{
	*ret = c->stats;
}
