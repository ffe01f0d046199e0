/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Reading and writing fixed-size integers at any address in a given byte
 * order: little-endian for everything we store (segments, wire formats,
 * trace.dat), big-endian only for what a big-endian kernel wrote. The one
 * set of these for the whole tree: no other code puts bytes together into
 * an integer or swaps them (tests/check-base.sh); what is in the host's
 * own order (the kernel's pages as read) is copied with memcpy(). buf.h
 * includes it.
 */
#ifndef STACKMAPD_BYTEORDER_H
#define STACKMAPD_BYTEORDER_H

#include <stdint.h>

static inline uint16_t get_le16(const void *p)
{
	const uint8_t *b = p;

	return (uint16_t)(b[0] | b[1] << 8);
}

static inline uint32_t get_le32(const void *p)
{
	const uint8_t *b = p;

	return (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
}

static inline uint64_t get_le64(const void *p)
{
	return (uint64_t)get_le32(p) | (uint64_t)get_le32((const uint8_t *)p + 4) << 32;
}

static inline uint16_t get_be16(const void *p)
{
	const uint8_t *b = p;

	return (uint16_t)(b[0] << 8 | b[1]);
}

static inline uint32_t get_be32(const void *p)
{
	const uint8_t *b = p;

	return (uint32_t)b[0] << 24 | (uint32_t)b[1] << 16 | (uint32_t)b[2] << 8 | (uint32_t)b[3];
}

static inline uint64_t get_be64(const void *p)
{
	return (uint64_t)get_be32(p) << 32 | (uint64_t)get_be32((const uint8_t *)p + 4);
}

static inline void put_le16(void *p, uint16_t v)
{
	uint8_t *b = p;

	b[0] = (uint8_t)v;
	b[1] = (uint8_t)(v >> 8);
}

static inline void put_le32(void *p, uint32_t v)
{
	uint8_t *b = p;

	b[0] = (uint8_t)v;
	b[1] = (uint8_t)(v >> 8);
	b[2] = (uint8_t)(v >> 16);
	b[3] = (uint8_t)(v >> 24);
}

static inline void put_le64(void *p, uint64_t v)
{
	put_le32(p, (uint32_t)v);
	put_le32((uint8_t *)p + 4, (uint32_t)(v >> 32));
}

#endif
