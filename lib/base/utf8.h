/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* UTF-8 decoding and encoding (RFC 3629), shared by the JSON code and the control protocol. */
#ifndef STACKMAPD_UTF8_H
#define STACKMAPD_UTF8_H

#include <stddef.h>
#include <stdint.h>

/*
 * Decode one UTF-8 sequence at s (n >= 1 bytes available). Returns its
 * length (1-4) and the code point in *ret_cp, or 0 for an invalid
 * sequence: truncated, overlong, a surrogate, or above U+10FFFF.
 */
size_t utf8_decode(const unsigned char *s, size_t n, uint32_t *ret_cp);

/* Encode code point cp (at most U+10FFFF) into out (4 bytes of room). Returns the length. */
size_t utf8_encode(uint32_t cp, char *out);

#endif
