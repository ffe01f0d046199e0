#!/usr/bin/env python3
# Keep the /proc/kallsyms lines that contain an address of stack_map_bin:
#   kallsyms-subset.py stack_map_bin kallsyms.full > kallsyms
import bisect
import struct
import sys

MAGIC = 0x46534D42
TRAMPOLINE = 0x7FFFFFFF


def bin_addresses(path):
    data = open(path, 'rb').read()
    for order in '<>':
        if struct.unpack_from(order + 'I', data, 0)[0] == MAGIC:
            break
    else:
        sys.exit('%s: bad magic' % path)
    _, version, nr, _ = struct.unpack_from(order + '4I', data, 0)
    if version != 1:
        sys.exit('%s: version %d' % (path, version))
    off, addrs = 16, set()
    for _ in range(nr):
        _, depth, _, _ = struct.unpack_from(order + '4I', data, off)
        off += 16
        addrs.update(struct.unpack_from(order + '%dQ' % depth, data, off))
        off += 8 * depth
    addrs.discard(TRAMPOLINE)
    return addrs


def main():
    addrs = bin_addresses(sys.argv[1])
    syms = []
    for line in open(sys.argv[2]):
        f = line.split()
        if len(f) >= 3 and f[1] in 'tTwW':
            syms.append((int(f[0], 16), line))
    syms.sort()
    keys = [s[0] for s in syms]
    keep = set()
    for a in addrs:
        i = bisect.bisect_right(keys, a) - 1
        if i >= 0:
            keep.add(i)
            if i + 1 < len(syms):
                keep.add(i + 1)	# the next symbol bounds the function's size
    sys.stdout.writelines(syms[i][1] for i in sorted(keep))


main()
