#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""A file system that fails with EIO on demand, for the fault tests.

eiofs.py BACKING MOUNTPOINT SWITCH
Mounts a FUSE file system at MOUNTPOINT that passes every operation to the
directory BACKING. While the file SWITCH exists, every operation that
changes something (write, truncate, create, fsync, rename, unlink, mkdir)
fails with EIO, as on a disk that has gone bad; reads still work. Remove
SWITCH and the disk is healthy again. If SWITCH holds "max_write=N", only
writes of more than N bytes fail, with ENOSPC: a disk with a little room
left, where a small record still fits and a large one does not. Runs in the foreground until
unmounted (fusermount3 -u MOUNTPOINT).
"""
import errno
import os
import sys

from fusepy import FUSE, FuseOSError, Operations

backing, mountpoint, switch = sys.argv[1], sys.argv[2], sys.argv[3]


class EioFS(Operations):
    def _p(self, path):
        return os.path.join(backing, path.lstrip("/"))

    def _mode(self):
        """None (healthy), -1 (EIO on every change) or the largest write that works."""
        try:
            with open(switch) as f:
                text = f.read()
        except FileNotFoundError:
            return None
        if text.startswith("max_write="):
            return int(text.split("=", 1)[1])
        return -1

    def _check(self):
        if self._mode() == -1:
            raise FuseOSError(errno.EIO)

    def getattr(self, path, fh=None):
        st = os.lstat(self._p(path))
        return {k: getattr(st, k) for k in ("st_atime", "st_ctime", "st_gid", "st_mode",
                                             "st_mtime", "st_nlink", "st_size", "st_uid")}

    def readdir(self, path, fh):
        return [".", ".."] + os.listdir(self._p(path))

    def statfs(self, path):
        s = os.statvfs(self._p(path))
        return {k: getattr(s, k) for k in ("f_bavail", "f_bfree", "f_blocks", "f_bsize",
                                            "f_favail", "f_ffree", "f_files", "f_flag",
                                            "f_frsize", "f_namemax")}

    def access(self, path, mode):
        if not os.access(self._p(path), mode):
            raise FuseOSError(errno.EACCES)

    def chmod(self, path, mode):
        self._check()
        os.chmod(self._p(path), mode)

    def chown(self, path, uid, gid):
        self._check()
        os.chown(self._p(path), uid, gid)

    def mkdir(self, path, mode):
        self._check()
        os.mkdir(self._p(path), mode)

    def rmdir(self, path):
        self._check()
        os.rmdir(self._p(path))

    def unlink(self, path):
        self._check()
        os.unlink(self._p(path))

    def rename(self, old, new):
        self._check()
        os.rename(self._p(old), self._p(new))

    def utimens(self, path, times=None):
        os.utime(self._p(path), times)

    def open(self, path, flags):
        if flags & (os.O_WRONLY | os.O_RDWR):
            self._check()
        return os.open(self._p(path), flags)

    def create(self, path, mode, fi=None):
        self._check()
        return os.open(self._p(path), os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)

    def read(self, path, size, offset, fh):
        return os.pread(fh, size, offset)

    def write(self, path, data, offset, fh):
        mode = self._mode()
        if mode == -1:
            raise FuseOSError(errno.EIO)
        if mode is not None and len(data) > mode:
            raise FuseOSError(errno.ENOSPC)
        return os.pwrite(fh, data, offset)

    def truncate(self, path, length, fh=None):
        self._check()
        if fh is not None:
            os.ftruncate(fh, length)
        else:
            os.truncate(self._p(path), length)

    def flush(self, path, fh):
        return 0

    def release(self, path, fh):
        os.close(fh)
        return 0

    def fsync(self, path, datasync, fh):
        self._check()
        os.fsync(fh)
        return 0

    def fsyncdir(self, path, datasync, fh):
        self._check()
        return 0


if __name__ == "__main__":
    FUSE(EioFS(), mountpoint, foreground=True, allow_other=False, nothreads=False,
         default_permissions=False)
