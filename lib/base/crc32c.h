/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* CRC-32C (Castagnoli), the checksum of every segment prologue, record and footer. */
#ifndef STACKMAPD_CRC32C_H
#define STACKMAPD_CRC32C_H

#include <stddef.h>
#include <stdint.h>

/*
 * CRC-32C (Castagnoli), as used by the segment format. Start with crc = 0;
 * pass the previous result to continue over several buffers.
 */
uint32_t crc32c(uint32_t crc, const void *buf, size_t len);

#endif
