/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Runs a compiled event format (event-format-internal.h) on one record:
 * evaluates the expressions as libtraceevent 1.7 does (unsigned 64-bit
 * arithmetic, fields read zero-extended, casts as masks) and writes the
 * conversions with our own digit code, following glibc's printf rules for
 * the flags, widths and precisions the compiler lets through. A record
 * libtraceevent would read out of bounds is handed back to the caller.
 */
#include <stdlib.h>
#include <string.h>

#include "event-format-internal.h"
#include "util.h"

struct run {
	const uint8_t *data;
	size_t size;
	struct tep_handle *tep;
	struct fsym *syms;
	struct fout *out;
	bool bad;		/* the record needs libtraceevent */
};

static uint64_t read_num(struct run *r, uint64_t offset, uint32_t size)
{
	uint16_t v16;
	uint32_t v32;
	uint64_t v64;

	if (offset > r->size || size > r->size - offset) {
		r->bad = true;
		return 0;
	}
	switch (size) {
	case 1:
		return r->data[offset];
	case 2:
		memcpy(&v16, r->data + offset, 2);
		return v16;
	case 4:
		memcpy(&v32, r->data + offset, 4);
		return v32;
	default:
		memcpy(&v64, r->data + offset, 8);
		return v64;
	}
}

static uint64_t eval_op(enum fx_op op, uint64_t l, uint64_t r)
{
	switch (op) {
	case OP_NOT:	return !r;
	case OP_NE:	return l != r;
	case OP_BNOT:	return ~r;
	case OP_OR:	return l | r;
	case OP_LOR:	return l || r;
	case OP_AND:	return l & r;
	case OP_LAND:	return l && r;
	case OP_LT:	return l < r;
	case OP_SHL:	return l << (r & 63);	/* as x86-64 executes it */
	case OP_LE:	return l <= r;
	case OP_GT:	return l > r;
	case OP_SHR:	return l >> (r & 63);
	case OP_GE:	return l >= r;
	case OP_EQ:	return l == r;
	case OP_SUB:	return l - r;
	case OP_ADD:	return l + r;
	case OP_DIV:	return l / r;		/* the compiler allows only constant divisors != 0 */
	case OP_MOD:	return l % r;
	case OP_MUL:	return l * r;
	}
	return 0;
}

static uint64_t eval(struct run *r, const struct fx *x)
{
	switch (x->kind) {
	case FX_CONST:
		return x->value;
	case FX_FIELD:
		return read_num(r, x->offset, x->size);
	case FX_MASK:
		return eval(r, x->a) & x->value;
	case FX_OP:
		return eval_op(x->op, eval(r, x->a), eval(r, x->b));
	case FX_COND:
		return eval(r, x->a) ? eval(r, x->b) : eval(r, x->c);
	case FX_INDEX:
		return read_num(r, x->offset + eval(r, x->b) * x->size, x->size);
	}
	return 0;
}

static char *reserve(struct fout *o, size_t n)
{
	if (o->len + n <= o->cap)
		return o->buf + o->len;
	if (GREEDY_REALLOC(o->buf, o->cap, MAX(o->len + n, (size_t)256)) < 0) {
		o->ok = false;
		return NULL;
	}
	return o->buf + o->len;
}

void fout_put(struct fout *o, const char *s, size_t n)
{
	char *p = reserve(o, n);

	if (!p)
		return;
	memcpy(p, s, n);
	o->len += n;
}

static void pad(struct fout *o, char c, size_t n)
{
	char *p = reserve(o, n);

	if (!p)
		return;
	memset(p, c, n);
	o->len += n;
}

/* Digits of v in base, into the end of buf; returns where they start. */
static char *digits(char *end, uint64_t v, unsigned base, bool upper)
{
	const char *set = upper ? "0123456789ABCDEF" : "0123456789abcdef";

	do {
		*--end = set[v % base];
		v /= base;
	} while (v);
	return end;
}

/* "0x" and v in lower-case hex, as "0x%llx" prints it. */
static void put_hex(struct fout *o, uint64_t v)
{
	char buf[24], *end = buf + sizeof(buf), *p = digits(end, v, 16, false);

	*--p = 'x';
	*--p = '0';
	fout_put(o, p, end - p);
}

/* val cast as libtraceevent casts it for the length, then printed by printf's rules. */
void fout_int(struct fout *o, const struct fspec *sp, uint64_t val)
{
	static const unsigned bits[] = { 8, 16, 32, 64, 64 };
	unsigned nbits = bits[sp->ls + 2], base = 10;
	char buf[80], *end = buf + sizeof(buf), *p;
	const char *prefix = "";
	size_t nd, npre, total, fill;
	int zeros = 0;

	if (nbits < 64)
		val &= (1ULL << nbits) - 1;
	if (sp->conv == 'd' || sp->conv == 'i') {
		if (nbits < 64 && (val >> (nbits - 1)) & 1)
			val |= ~0ULL << nbits;
		if ((int64_t)val < 0) {
			prefix = "-";
			val = -val;
		}
	} else if (sp->conv == 'x' || sp->conv == 'X') {
		base = 16;
		if (sp->hash && val)
			prefix = sp->conv == 'x' ? "0x" : "0X";
	} else if (sp->conv == 'o') {
		base = 8;
	}
	if (sp->prec == 0 && val == 0)
		p = end;
	else
		p = digits(end, val, base, sp->conv == 'X');
	nd = end - p;
	if (sp->prec > 0 && (size_t)sp->prec > nd)
		zeros = sp->prec - nd;
	npre = strlen(prefix);
	total = npre + zeros + nd;
	fill = sp->width > 0 && (size_t)sp->width > total ? sp->width - total : 0;
	if (fill && !sp->minus) {
		if (sp->zero && sp->prec < 0)
			zeros += fill;
		else
			pad(o, ' ', fill);
	}
	fout_put(o, prefix, npre);
	pad(o, '0', zeros);
	fout_put(o, p, nd);
	if (fill && sp->minus)
		pad(o, ' ', fill);
}

/* A string through a %s conversion: precision cuts, width pads. */
void fout_str(struct fout *o, const struct fspec *sp, const char *s, size_t n)
{
	if (sp->prec >= 0 && (size_t)sp->prec < n)
		n = sp->prec;
	if (sp->width > 0 && (size_t)sp->width > n && !sp->minus)
		pad(o, ' ', sp->width - n);
	fout_put(o, s, n);
	if (sp->width > 0 && (size_t)sp->width > n && sp->minus)
		pad(o, ' ', sp->width - n);
}

/* A string of the record: up to its terminator, which must lie inside the record. */
static void put_record_str(struct run *r, const struct fspec *sp, uint64_t offset, uint64_t max)
{
	const char *s;
	const char *nul;

	if (offset > r->size || max > r->size - offset) {
		r->bad = true;
		return;
	}
	s = (const char *)r->data + offset;
	nul = memchr(s, '\0', max);
	if (nul) {
		fout_str(r->out, sp, s, nul - s);
		return;
	}
	/* libtraceevent copies the field and terminates it: all of it prints */
	fout_str(r->out, sp, s, max);
}

/* __get_str(): libtraceevent's rules for __data_loc and __rel_loc strings. */
static void put_dynstr(struct run *r, const struct fspec *sp, const struct fs *f)
{
	uint64_t v = read_num(r, f->offset, f->size);
	uint32_t o, len;
	const char *s, *nul;

	if (r->bad)
		return;
	o = v & 0xffff;
	if (o > r->size) {
		r->bad = true;	/* libtraceevent would print from the record's start */
		return;
	}
	len = f->size == 2 ? r->size - o : (v >> 16) & 0xffff;
	if ((uint64_t)o + len > r->size)
		len = 0;
	if (f->relative)
		o += f->offset + f->size;
	if (!len)
		return;
	if (o >= r->size) {
		r->bad = true;
		return;
	}
	s = (const char *)r->data + o;
	nul = memchr(s, '\0', r->size - o);
	if (!nul) {
		r->bad = true;	/* printf would read past the record */
		return;
	}
	fout_str(r->out, sp, s, nul - s);
}

static void put_flags(struct run *r, const struct fspec *sp, const struct fs *f)
{
	long long val = (long long)eval(r, f->expr);
	bool printed = false;

	for (size_t i = 0; i < f->nr_flags; i++) {
		long long fval = f->flags[i].value;

		if (!val && fval < 0) {
			fout_str(r->out, sp, f->flags[i].str, strlen(f->flags[i].str));
			break;
		}
		if (fval > 0 && (val & fval) == fval) {
			if (printed && f->delim)
				fout_put(r->out, f->delim, strlen(f->delim));
			fout_str(r->out, sp, f->flags[i].str, strlen(f->flags[i].str));
			printed = true;
			val &= ~fval;
		}
	}
	if (val) {
		if (printed && f->delim)
			fout_put(r->out, f->delim, strlen(f->delim));
		put_hex(r->out, (uint64_t)val);
	}
}

static void put_symbol(struct run *r, const struct fspec *sp, const struct fs *f)
{
	long long val = (long long)eval(r, f->expr);

	for (size_t i = 0; i < f->nr_flags; i++)
		if (val == f->flags[i].value) {
			fout_str(r->out, sp, f->flags[i].str, strlen(f->flags[i].str));
			return;
		}
	put_hex(r->out, (uint64_t)val);
}

static void run_str(struct run *r, const struct fspec *sp, const struct fs *f)
{
	switch (f->kind) {
	case FS_TEXT:
		fout_str(r->out, sp, f->text, strlen(f->text));
		break;
	case FS_ARRAY:
		put_record_str(r, sp, f->offset, f->size ? f->size : r->size - f->offset);
		break;
	case FS_DYNSTR:
		put_dynstr(r, sp, f);
		break;
	case FS_FLAGS:
		put_flags(r, sp, f);
		break;
	case FS_SYMBOL:
		put_symbol(r, sp, f);
		break;
	case FS_COND:
		run_str(r, sp, eval(r, f->expr) ? f->then : f->otherwise);
		break;
	}
}

/* The function around addr, through the handle's symbol cache. */
static struct fsym find_func(struct run *r, unsigned long long addr)
{
	struct fsym *e = NULL, f = { .addr = addr, .valid = true };

	if (r->syms) {
		e = &r->syms[(addr ^ addr >> 8 ^ addr >> 16) % FSYM_SLOTS];
		if (e->valid && e->addr == addr)
			return *e;
	}
	if (!tep_find_function_info(r->tep, addr, &f.name, &f.start, NULL))
		f.name = NULL;
	if (e)
		*e = f;
	return f;
}

/* %pS, %ps: the symbol (and offset), or the address where none is known. */
static void put_func(struct run *r, const struct fspec *sp, uint64_t val)
{
	struct fsym f = find_func(r, val);
	char buf[24], *end = buf + sizeof(buf), *p;

	if (!f.name) {
		put_hex(r->out, val);
		return;
	}
	fout_put(r->out, f.name, strlen(f.name));
	if (!sp->func_offset)
		return;
	p = digits(end, val - f.start, 16, false);
	*--p = 'x';
	*--p = '0';
	*--p = '+';
	fout_put(r->out, p, end - p);
}

static void run_item(struct run *r, const struct fitem *it)
{
	const struct fspec *sp = &it->spec;
	uint64_t v;

	switch (it->kind) {
	case FI_TEXT:
		fout_put(r->out, it->text, it->len);
		break;
	case FI_INT:
		fout_int(r->out, sp, eval(r, it->num));
		break;
	case FI_PTR:
		/* glibc's %p */
		v = eval(r, it->num);
		if (v)
			put_hex(r->out, v);
		else
			fout_put(r->out, "(nil)", 5);
		break;
	case FI_FUNC:
		put_func(r, sp, eval(r, it->num));
		break;
	case FI_STR:
		run_str(r, sp, it->str);
		break;
	}
}

bool fprog_run(const struct fprog *prog, struct tep_handle *tep, struct fsym *syms,
	       const void *data, size_t size, struct fout *out)
{
	struct run r = { .data = data, .size = size, .tep = tep, .syms = syms, .out = out };

	out->ok = true;
	for (size_t i = 0; i < prog->nr && !r.bad; i++)
		run_item(&r, &prog->items[i]);
	return !r.bad && fout_end(out);
}

bool fout_end(struct fout *o)
{
	/* terminated for trace_seq_puts(); no string we copy has a NUL inside */
	char *end = reserve(o, 1);

	if (end)
		*end = '\0';
	return o->ok;
}
