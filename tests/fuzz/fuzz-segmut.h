/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A structure-aware mutator for segment inputs: most mutations of a
 * segment only break a CRC, and the reader rightly stops there. This one
 * picks a record, mutates its payload after decompression (recompressing
 * it), or mutates the whole file, and then rewrites every record's
 * lengths, CRCs and sequence number and the footer CRC, so that the
 * mutated content reaches the parsers behind the CRC checks. It also
 * repeats records (up to 256 copies: FILE, CLOCK, GENERATION, STACKS or
 * frames), pads a compressed payload with zeros (4 KiB to 16 MiB, most
 * of them small: what it holds then costs a reader MiBs), deletes
 * records, and changes a header's type, cpu or COLUMNS flag.
 */
#ifndef STACKMAPD_FUZZ_SEGMUT_H
#define STACKMAPD_FUZZ_SEGMUT_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

#include "crc32c.h"

size_t LLVMFuzzerMutate(uint8_t *data, size_t size, size_t max_size);

static uint32_t segmut_le32(const uint8_t *p)
{
	return p[0] | p[1] << 8 | p[2] << 16 | (uint32_t)p[3] << 24;
}

static void segmut_put32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

/* Fix CRCs and sequence numbers of every well-framed record; returns the record count. */
static unsigned segmut_fix(uint8_t *d, size_t len)
{
	size_t off = 16;
	unsigned n = 0;

	if (len < 16)
		return 0;
	segmut_put32(d + 12, crc32c(0, d, 12));
	while (len - off >= 32 && segmut_le32(d + off) == 0x43524D53u) {
		uint32_t stored = segmut_le32(d + off + 12);

		if (stored > len - off - 32)
			break;
		segmut_put32(d + off + 20, n++);
		segmut_put32(d + off + 24, crc32c(0, d + off + 32, stored));
		segmut_put32(d + off + 28, crc32c(0, d + off, 28));
		off += 32 + stored;
	}
	if (len - off == 24)
		segmut_put32(d + off + 8, crc32c(0, d + off, 8));
	return n;
}

/*
 * Mutate record k's payload (decompressed if needed), or with grow_to,
 * pad a compressed payload with zeros to grow_to bytes: a few hundred
 * stored bytes that a reader must hold as MiBs. Returns the new file length.
 */
static size_t segmut_record(uint8_t *d, size_t len, size_t max, unsigned k, size_t grow_to)
{
	size_t off = 16, raw_len, cap, z, nlen;
	uint8_t *raw;
	uint32_t stored;
	unsigned n = 0;

	while (len - off >= 32 && segmut_le32(d + off) == 0x43524D53u) {
		stored = segmut_le32(d + off + 12);
		if (stored > len - off - 32)
			return len;
		if (n++ == k)
			break;
		off += 32 + stored;
	}
	if (len - off < 32 || n != k + 1)
		return len;
	raw_len = segmut_le32(d + off + 16);
	if (raw_len > (1u << 20) || stored > (1u << 20))
		return len;
	if (grow_to && (!(d[off + 6] & 1) || grow_to <= raw_len))
		return len;
	/* an uncompressed payload is copied whole, whatever its raw length says */
	cap = (raw_len > stored ? raw_len : stored) * 2 + 64;
	if (cap < grow_to)
		cap = grow_to;
	raw = malloc(cap);
	if (!raw)
		return len;
	if (d[off + 6] & 1) {
		z = ZSTD_decompress(raw, cap, d + off + 32, stored);
		if (ZSTD_isError(z)) {
			free(raw);
			return len;
		}
	} else {
		z = stored;
		memcpy(raw, d + off + 32, z);
	}
	if (grow_to) {
		memset(raw + z, 0, grow_to - z);
		z = grow_to;
	} else {
		z = LLVMFuzzerMutate(raw, z, cap);
	}
	{
		size_t bound = ZSTD_compressBound(z);
		uint8_t *out = malloc(bound > z ? bound : z);
		size_t slen;

		if (!out) {
			free(raw);
			return len;
		}
		if (d[off + 6] & 1) {
			slen = ZSTD_compress(out, bound, raw, z, 1);
			if (ZSTD_isError(slen)) {
				free(out);
				free(raw);
				return len;
			}
		} else {
			memcpy(out, raw, z);
			slen = z;
		}
		nlen = len - stored + slen;
		if (nlen <= max) {
			memmove(d + off + 32 + slen, d + off + 32 + stored, len - off - 32 - stored);
			memcpy(d + off + 32, out, slen);
			segmut_put32(d + off + 12, (uint32_t)slen);
			segmut_put32(d + off + 16, (uint32_t)z);
			/* the footer's INDEX offset moves with the data */
			if (nlen >= 24 && !memcmp(d + nlen - 8, "SMAPEND", 8)) {
				uint64_t io;

				memcpy(&io, d + nlen - 24, 8);
				if (io > off) {
					io = io + slen - stored;
					memcpy(d + nlen - 24, &io, 8);
				}
			}
			len = nlen;
		}
		free(out);
	}
	free(raw);
	return len;
}

/* Offset of record k's header, and its length with the header, or 0 if there is none. */
static size_t segmut_find(const uint8_t *d, size_t len, unsigned k, size_t *ret_len)
{
	size_t off = 16;

	for (unsigned n = 0; len >= 16 && len - off >= 32 && segmut_le32(d + off) == 0x43524D53u;
	     n++) {
		uint32_t stored = segmut_le32(d + off + 12);

		if (stored > len - off - 32)
			return 0;
		if (n == k) {
			*ret_len = 32 + (size_t)stored;
			return off;
		}
		off += 32 + stored;
	}
	return 0;
}

/* Move the footer's INDEX offset by delta if it points at or after off. */
static void segmut_shift_footer(uint8_t *d, size_t len, size_t off, long long delta)
{
	uint64_t io;

	if (len < 24 || memcmp(d + len - 8, "SMAPEND", 8))
		return;
	memcpy(&io, d + len - 24, 8);
	if (io >= off) {
		io = (uint64_t)((long long)io + delta);
		memcpy(d + len - 24, &io, 8);
	}
}

/*
 * Insert copies of record j (1 to 2^(seed % 9) of them, as many as fit)
 * before record k: repeated FILE, CLOCK, GENERATION or STACKS records and
 * multiplied frames are what stalls or bloats a reader.
 */
static size_t segmut_repeat(uint8_t *d, size_t len, size_t max, unsigned j, unsigned k,
			    unsigned seed)
{
	size_t rlen, klen, src = segmut_find(d, len, j, &rlen), dst = segmut_find(d, len, k, &klen);
	size_t copies = (size_t)1 << (seed % 9), total;
	uint8_t *rec;

	if (!src || !dst || rlen > max)
		return len;
	copies = copies < (max - len) / rlen ? copies : (max - len) / rlen;
	if (!copies)
		return len;
	rec = malloc(rlen);
	if (!rec)
		return len;
	memcpy(rec, d + src, rlen);
	total = copies * rlen;
	memmove(d + dst + total, d + dst, len - dst);
	for (size_t i = 0; i < copies; i++)
		memcpy(d + dst + i * rlen, rec, rlen);
	free(rec);
	len += total;
	segmut_shift_footer(d, len, dst, (long long)total);
	return len;
}

/* Remove record k (never META). */
static size_t segmut_delete(uint8_t *d, size_t len, unsigned k)
{
	size_t rlen, off = k ? segmut_find(d, len, k, &rlen) : 0;

	if (!off)
		return len;
	memmove(d + off, d + off + rlen, len - off - rlen);
	len -= rlen;
	segmut_shift_footer(d, len, off + 1, -(long long)rlen);
	return len;
}

/* Give record k another type, cpu or flags (the header CRC is fixed after). */
static void segmut_header(uint8_t *d, size_t len, unsigned k, unsigned seed)
{
	size_t rlen, off = segmut_find(d, len, k, &rlen);

	if (!off)
		return;
	switch (seed % 3) {
	case 0:
		d[off + 4] = (uint8_t)(1 + seed / 3 % 9);	/* a type, known or not */
		d[off + 5] = 0;
		break;
	case 1:
		segmut_put32(d + off + 8, seed / 3 % 5 == 4 ? 0xffffffffu : seed / 3 % 5);
		break;
	default:
		d[off + 6] ^= 2;	/* COLUMNS */
		break;
	}
}

/*
 * How far op 8 pads: every padded byte costs a reader time and memory, so
 * most pads stay small and a large one comes one time in eight; repeats
 * (op 4, 5) multiply them up to the budget.
 */
static size_t segmut_pad_size(unsigned r)
{
	return r % 8 ? (size_t)1 << (12 + r / 8 % 6) : (size_t)1 << (18 + r / 8 % 7);
}

size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size, size_t max_size, unsigned int seed)
{
	unsigned n = segmut_fix(data, size);
	unsigned op = seed % 9, arg = seed / 9;

	if (n == 0 || op == 0)
		size = LLVMFuzzerMutate(data, size, max_size);
	else if (op <= 3)
		size = segmut_record(data, size, max_size, arg % n, 0);
	else if (op == 8)	/* 4 to 128 KiB; one time in eight 256 KiB to 16 MiB */
		size = segmut_record(data, size, max_size, arg % n, segmut_pad_size(arg / 61));
	else if (op == 4 || op == 5)
		size = segmut_repeat(data, size, max_size, arg % n, (arg / 61) % n, arg / 3721);
	else if (op == 6)
		size = segmut_delete(data, size, arg % n);
	else
		segmut_header(data, size, arg % n, arg / 61);
	segmut_fix(data, size);
	return size;
}

#endif
