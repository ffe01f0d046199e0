/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The compiled form of an event's print format, shared by the compiler
 * (event-format.c) and the per-record printer (event-format-print.c).
 * A program is a list of items (literal text, or one conversion with its
 * argument); arguments are small trees of numeric expressions (fx) and of
 * string producers (fs) that mirror libtraceevent's tep_print_arg tree
 * with everything it looks up per record (fields, flag values, casts)
 * resolved in advance. Nothing here points into a tep handle.
 */
#ifndef STACKMAPD_EVENT_FORMAT_INTERNAL_H
#define STACKMAPD_EVENT_FORMAT_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <event-parse.h>

enum fx_kind { FX_CONST, FX_FIELD, FX_MASK, FX_OP, FX_COND, FX_INDEX };

enum fx_op {
	OP_NOT, OP_NE, OP_BNOT, OP_OR, OP_LOR, OP_AND, OP_LAND, OP_LT, OP_SHL, OP_LE,
	OP_GT, OP_SHR, OP_GE, OP_EQ, OP_SUB, OP_ADD, OP_DIV, OP_MOD, OP_MUL,
};

/* A numeric expression, evaluated in unsigned 64 bits as libtraceevent does. */
struct fx {
	enum fx_kind kind;
	enum fx_op op;
	uint32_t offset;	/* FIELD, INDEX: byte offset in the record */
	uint32_t size;		/* FIELD, INDEX: 1, 2, 4 or 8 (element size for INDEX) */
	uint64_t value;		/* CONST: the value; MASK: what a cast keeps */
	struct fx *a, *b, *c;	/* MASK: a; OP: a op b; COND: a ? b : c; INDEX: b */
};

enum fs_kind { FS_TEXT, FS_ARRAY, FS_DYNSTR, FS_FLAGS, FS_SYMBOL, FS_COND };

struct fs_flag {
	long long value;	/* as libtraceevent evaluates the flag's value text */
	char *str;		/* NULL only where it can never print */
};

/* Something printed by a %s conversion. */
struct fs {
	enum fs_kind kind;
	uint32_t offset;	/* ARRAY, DYNSTR: the field's offset */
	uint32_t size;		/* ARRAY: bytes (0: to the record's end); DYNSTR: 2 or 4 */
	bool relative;		/* DYNSTR: __rel_loc */
	char *text;		/* TEXT */
	struct fx *expr;	/* FLAGS, SYMBOL, COND */
	char *delim;		/* FLAGS, may be NULL */
	struct fs_flag *flags;	/* FLAGS, SYMBOL */
	size_t nr_flags;
	struct fs *then, *otherwise; /* COND */
};

enum fi_kind { FI_TEXT, FI_INT, FI_PTR, FI_FUNC, FI_STR };

/* A printf conversion as far as we reproduce it. */
struct fspec {
	bool minus, zero, hash;
	int width;		/* 0: none */
	int prec;		/* -1: none */
	int ls;			/* libtraceevent's length: -2 char ... 2 long long */
	char conv;		/* d i u x X o s p */
	bool func_offset;	/* %pS/%pF: symbol+0xoff; %ps/%pf: symbol */
};

struct fitem {
	enum fi_kind kind;
	struct fspec spec;
	char *text;		/* TEXT */
	size_t len;
	struct fx *num;		/* INT, PTR, FUNC */
	struct fs *str;		/* STR */
};

struct fprog {
	struct fitem *items;
	size_t nr, cap;
};

/* A growing output buffer; the printer fails (ok = false) rather than truncate. */
struct fout {
	char *buf;
	size_t len, cap;
	bool ok;
};

/* Append to o: n bytes of s; val or a string of n bytes by printf's rules for sp. */
void fout_put(struct fout *o, const char *s, size_t n);
void fout_int(struct fout *o, const struct fspec *sp, uint64_t val);
void fout_str(struct fout *o, const struct fspec *sp, const char *s, size_t n);
/* Terminate o after its len (for trace_seq_puts()); false if anything failed to fit. */
bool fout_end(struct fout *o);

/*
 * The symbols %pS and %ps found for recent addresses of one handle (call
 * sites repeat): direct-mapped, name NULL where the handle knows none.
 * The names are the handle's resolver's, valid while its records print.
 */
#define FSYM_SLOTS 256
struct fsym {
	unsigned long long addr, start;
	const char *name;
	bool valid;
};

/*
 * Print one record with prog into out (appended, and terminated after its len). tep is
 * the record's handle, for symbol lookups, and syms (FSYM_SLOTS, or NULL)
 * its symbol cache. Returns false when the record
 * is one libtraceevent must print (see event_format_info()).
 */
bool fprog_run(const struct fprog *prog, struct tep_handle *tep, struct fsym *syms,
	       const void *data, size_t size, struct fout *out);

#endif
