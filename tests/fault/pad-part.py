#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Make an unfinished segment end just before a page boundary.

pad-part.py PART GOOD_BYTES RECORDS [PAGE]
Cuts PART to GOOD_BYTES (the end of its last valid record, as
`stackmapctl verify --json` reports it, RECORDS records) and appends one
valid NOTE record (doc/segment-format.md) so that the file ends 8 bytes
before a PAGE (default 4096) boundary: then nothing more can be appended
to it on a full file system without a new page, as when a crash leaves a
segment whose last page is full.
"""
import struct
import sys

POLY = 0x82F63B78
TABLE = []
for i in range(256):
    c = i
    for _ in range(8):
        c = (c >> 1) ^ POLY if c & 1 else c >> 1
    TABLE.append(c)


def crc32c(data, crc=0):
    crc ^= 0xFFFFFFFF
    for b in data:
        crc = TABLE[(crc ^ b) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


path, good, records = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
page = int(sys.argv[4]) if len(sys.argv) > 4 else 4096
room = page - good % page - 8
if room < 33:
    room += page
payload = (b"padding: this segment's last page is full " * (room // 40 + 1))[: room - 32]
hdr = struct.pack("<IHHIIII", 0x43524D53, 7, 0, 0xFFFFFFFF, len(payload), len(payload), records)
hdr += struct.pack("<I", crc32c(payload))
hdr += struct.pack("<I", crc32c(hdr))
with open(path, "r+b") as f:
    f.truncate(good)
    f.seek(good)
    f.write(hdr + payload)
