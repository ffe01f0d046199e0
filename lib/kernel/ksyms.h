/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Kernel text symbols in the /proc/kallsyms text format
 * ("ffffffff81000000 T _stext" and "ffffffffc0a01000 t foo\t[mod]"):
 * parse, look up the function that contains an address, format it like the
 * kernel's %pS, and cut the subset of lines a segment needs.
 *
 * Only text symbols (types t, T, w, W) are kept. A symbol extends up to the
 * next higher text address or end mark (a line "ADDR ? .end"), so the last symbol has no known size and addresses at or
 * after it do not resolve; ksyms_subset() therefore also emits, after each
 * symbol it selects, the end of it: the next symbol if that is selected
 * too, otherwise a line "ADDR ? .end" that places nothing. An address in a
 * gap of a subset thus resolves to no symbol rather than to the one below.
 *
 * Printing with libtraceevent: give the tep_handle a function resolver
 * (tep_set_function_resolver()) that calls ksyms_lookup(); its own table
 * (tep_parse_kallsyms()) would stretch a symbol over a subset's gaps.
 */
#ifndef STACKMAPD_KSYMS_H
#define STACKMAPD_KSYMS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util.h"

struct buf;
struct ksyms;

/*
 * Parse kallsyms text (len bytes, need not be NUL-terminated). Lines that
 * are not text symbols are skipped; a malformed line gives -EINVAL.
 * On success *ret owns the table (free with ksyms_free()); it keeps no
 * pointer into text. Returns 0 or -errno.
 */
int ksyms_parse(const char *text, size_t len, struct ksyms **ret);

/* Read and parse a file such as "/proc/kallsyms". Returns 0 or -errno. */
int ksyms_load(const char *path, struct ksyms **ret);

/* Free the table (NULL is fine). Returns NULL. */
struct ksyms *ksyms_free(struct ksyms *ks);
DEFINE_TRIVIAL_CLEANUP_FUNC(struct ksyms *, ksyms_free);

/* Number of distinct text symbols kept (end marks not counted). */
size_t ksyms_count(const struct ksyms *ks);

/*
 * False when every address is 0: the reader was not allowed to see them
 * (kptr_restrict), or there are no text symbols at all.
 */
bool ksyms_usable(const struct ksyms *ks);

/*
 * Name of the text symbol containing addr, or NULL if none does (before
 * the first symbol, at or after the last one, or a table that is not
 * usable). On success the optional outputs receive the offset of addr in
 * the symbol, the symbol size (next symbol start - start) and the module
 * name (NULL for the core kernel). Returned strings are borrowed from ks.
 * No allocation; safe to call from several threads at once.
 */
const char *ksyms_lookup(const struct ksyms *ks, uint64_t addr, uint64_t *ret_offset,
			 uint64_t *ret_size, const char **ret_module);

/*
 * Format addr like the kernel's %pS: "func+0x12/0x80", with " [module]"
 * appended for module symbols, or "0xffffffff81234567" when no symbol
 * contains it. ks may be NULL. buf always ends up NUL-terminated (if len
 * > 0). Returns the length of the text, or -ENOBUFS if it did not fit (buf
 * then holds a truncated string).
 */
int ksyms_format(const struct ksyms *ks, uint64_t addr, char *buf, size_t len);

/*
 * Address of the core-kernel text symbol called name, or 0 if there is
 * none (or the table is not usable). A linear search: for a few names
 * per segment, not per event.
 */
uint64_t ksyms_address_of(const struct ksyms *ks, const char *name);

/*
 * Append to out, in kallsyms text format and sorted by address, the line
 * of the symbol containing each of the n addresses and where it ends: the
 * next symbol's line if that is selected too, else "ADDR ? .end" (so that
 * sizes come out the same when the subset is parsed again, and addresses
 * between selected symbols resolve to none). Each address appears once;
 * addresses that do not resolve are skipped. Returns the number of lines appended or -ENOMEM.
 */
int ksyms_subset(const struct ksyms *ks, const uint64_t *addrs, size_t n, struct buf *out);

/*
 * ksyms_subset() for addresses recorded by a previous boot whose kernel
 * text lay delta bytes below this one's (last_boot_info's text delta, a
 * crash capture): each address is placed at address + delta in ks, and
 * each line is written at its address - delta, so that the subset places
 * the recorded addresses as they are. Returns as ksyms_subset().
 */
int ksyms_subset_moved(const struct ksyms *ks, const uint64_t *addrs, size_t n, int64_t delta,
		       struct buf *out);

/*
 * The running kernel's symbols (/proc/kallsyms, read once and kept until
 * the process ends), for a segment recorded in this boot that carries no
 * kallsyms subset: returned only when boot_id (from the segment's META)
 * is this machine's current boot id (/proc/sys/kernel/random/boot_id).
 * NULL for another boot, an empty boot_id, or when the table is
 * unreadable or hidden (kptr_restrict). Borrowed; thread-safe.
 */
const struct ksyms *ksyms_live_for_boot(const char *boot_id);

/*
 * Read the current boot id and the symbols from these files (borrowed;
 * they must stay valid) instead of /proc, forgetting what was read: for
 * tests. Not while a table returned before is still in use.
 */
void ksyms_live_set_source(const char *boot_id_file, const char *kallsyms_file);

#endif
