#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Check the task files of finished segments (doc/segment-format.md).

check-task-files.py SEGMENT...
Each finished segment holds saved_cmdlines and saved_tgids twice: the head
copy, then at its end only lines that the head copy does not have. Prints
per segment the bytes of each copy; exits 1 on the first violation.
"""
import struct
import subprocess
import sys

REC_MAGIC = 0x43524D53
REC_FILE = 2
NAMES = ("saved_cmdlines", "saved_tgids")


def task_files(path):
    data = open(path, "rb").read()
    pos, found = 16, {n: [] for n in NAMES}
    while pos + 32 <= len(data):
        magic, rtype, flags, _cpu, stored, _raw = struct.unpack_from("<IHHIII", data, pos)
        if magic != REC_MAGIC:
            break
        payload = data[pos + 32:pos + 32 + stored]
        pos += 32 + stored
        if rtype != REC_FILE:
            continue
        if flags & 1:
            payload = subprocess.run(["zstd", "-dcq"], input=payload, capture_output=True,
                                     check=True).stdout
        name, _, content = payload.partition(b"\0")
        if name.decode() in found:
            found[name.decode()].append(content)
    return found


def lines(text):
    return set(l for l in text.split(b"\n") if l)


def main():
    for path in sys.argv[1:]:
        sizes = []
        for name, copies in task_files(path).items():
            if len(copies) != 2:
                sys.exit(f"{path}: {len(copies)} copies of {name}, not 2")
            head, end = copies
            shared = lines(head) & lines(end)
            if shared:
                sys.exit(f"{path}: the end copy of {name} repeats {len(shared)} lines of the "
                         f"head copy, e.g. {sorted(shared)[0]!r}")
            sizes.append(f"{name} {len(head)} + {len(end)}")
        print(f"{path}: {', '.join(sizes)} bytes")


main()
