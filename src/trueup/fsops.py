"""File-system steps below the file systems of fs/: creating a temp file, an
exclusive rename, and flushing what was written to the disk.

The standard library only: a leaf under everything that writes.
"""

from __future__ import annotations

import ctypes
import errno
import functools
import os
import sys
from collections.abc import Callable, Iterable
from typing import AnyStr

O_CLOEXEC = getattr(os, "O_CLOEXEC", 0)


_AT_FDCWD = -100
_RENAME_NOREPLACE = 1
# EPERM: some seccomp sandboxes answer an unknown system call with it.
_NOREPLACE_UNSUPPORTED = {errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP, errno.EPERM}


def write_all(fd: int, data: bytes) -> None:
    written = os.write(fd, data)  # all of it, but for a signal or a full disk
    if written < len(data):
        view = memoryview(data)[written:]
        while view:
            view = view[os.write(fd, view) :]


def create_temp(
    temp: str | bytes,
    data: bytes,
    mode: int,
    owner: tuple[int, int] | None,
    dir_fd: int | None = None,
) -> None:
    """A new file at ``temp`` holding ``data``; never opens one that is already there.

    Created private (0600) and given its mode only once written and owned,
    so bytes meant for a private file are never readable by others, even for
    a moment. The mode is always set explicitly: a folder's default ACL
    overrides the umask, and a chown clears setuid and setgid bits.
    """
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | O_CLOEXEC, 0o600, dir_fd=dir_fd)
    try:
        write_all(fd, data)
        if owner is not None:
            os.fchown(fd, *owner)
        os.fchmod(fd, mode)
    finally:
        os.close(fd)


def rename_exclusive(
    temp: str | bytes,
    final: str | bytes,
    src_dir_fd: int | None = None,
    dst_dir_fd: int | None = None,
) -> None:
    """Rename ``temp`` to ``final`` only if nothing is at ``final``, atomically.

    renameat2(RENAME_NOREPLACE) makes "still absent" and "now ours" one step,
    so a file that appeared after the plan is never replaced, however late it
    came. Where the kernel or file system lacks it, a look right before the
    rename is the best left (a window of microseconds, not of the whole run).
    Raises ``FileExistsError`` when something is at ``final``.
    """
    rename2 = _renameat2()
    if rename2 is not None:
        src = _AT_FDCWD if src_dir_fd is None else src_dir_fd
        dst = _AT_FDCWD if dst_dir_fd is None else dst_dir_fd
        if rename2(src, os.fsencode(temp), dst, os.fsencode(final), _RENAME_NOREPLACE) == 0:
            return
        err = ctypes.get_errno()
        if err not in _NOREPLACE_UNSUPPORTED:
            raise (FileExistsError if err == errno.EEXIST else OSError)(
                err, os.strerror(err), final
            )
    try:
        os.lstat(final, dir_fd=dst_dir_fd)
    except FileNotFoundError:
        os.rename(temp, final, src_dir_fd=src_dir_fd, dst_dir_fd=dst_dir_fd)
        return
    raise FileExistsError(errno.EEXIST, os.strerror(errno.EEXIST), final)


@functools.cache
def _renameat2() -> Callable[..., int] | None:
    if not sys.platform.startswith("linux"):
        return None
    function = getattr(ctypes.CDLL(None, use_errno=True), "renameat2", None)
    if function is None:  # a C library older than glibc 2.28
        return None
    function.argtypes = [
        ctypes.c_int,
        ctypes.c_char_p,
        ctypes.c_int,
        ctypes.c_char_p,
        ctypes.c_uint,
    ]
    function.restype = ctypes.c_int
    return function  # type: ignore[no-any-return]


def witness(st: os.stat_result) -> tuple[int, int, int, int, int]:
    """fs.witness_of's spelling: the type and the stat key."""
    return (st.st_mode, st.st_size, st.st_mtime_ns, st.st_ino, st.st_ctime_ns)


POSIX_PATHS = os.sep == "/" and os.altsep is None


def parent_of(path: str) -> str:
    """``os.path.dirname`` of a normal path (no "//", no trailing "/"), in one string
    step where paths are POSIX: it runs a few times per file of a 10,000-file apply."""
    if not POSIX_PATHS:
        return os.path.dirname(path)
    head, sep, _ = path.rpartition("/")
    return head or sep


def name_of(path: str) -> str:
    """``os.path.basename`` of a normal path, in one string step where paths are POSIX
    (as ``parent_of``): it runs once per file a batch stages in a folder it makes."""
    if not POSIX_PATHS:
        return os.path.basename(path)
    return path.rpartition("/")[2]


#: The file-size limit unless a command is given another (``--max-file-bytes``).
DEFAULT_MAX_FILE_BYTES = 16 * 1024 * 1024


def _fsync_dir(folder: str) -> None:
    try:
        fd = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


SYNCFS_BATCH = 16


def sync_paths(files: list[str], folders: list[str]) -> None:
    """Flush files, then the folders whose entries name them."""
    sync_files(files)
    sync_dirs(folders)


def sync_files(paths: list[str]) -> None:
    """Flush file contents: one syncfs per file system for a large batch, fsync each for a few.

    Every path is a file trueup created, so it lives on its folder's file system.
    """
    if len(paths) >= SYNCFS_BATCH and syncfs_all({os.path.dirname(p) or "." for p in paths}):
        return
    for path in paths:
        if os.path.islink(path):
            continue
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def sync_dirs(folders: Iterable[str]) -> None:
    """Flush folder entries: one syncfs per file system for many, fsync each for a few."""
    folders = sorted(set(folders))
    if len(folders) >= SYNCFS_BATCH and syncfs_all(folders):
        return
    for folder in folders:
        _fsync_dir(folder)


def file_systems(folders: Iterable[AnyStr]) -> list[AnyStr]:
    """One existing folder per file system among ``folders`` (a vanished one is skipped).

    A tree may cross mount points: a syncfs of the file system holding the
    first path would leave the others' writes in memory.
    """
    found: dict[int, AnyStr] = {}
    for folder in folders:
        try:
            found.setdefault(os.stat(folder).st_dev, folder)
        except OSError:
            continue
    return list(found.values())


def syncfs_all(folders: Iterable[AnyStr]) -> bool:
    """syncfs(2) on every file system holding one of ``folders``; False where unavailable."""
    return all(_syncfs(folder) for folder in file_systems(folders))


def _syncfs(folder: str | bytes) -> bool:
    """syncfs(2) on the file system holding ``folder``; False where unavailable."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return False
    try:
        return syncfs_fd(fd)
    finally:
        os.close(fd)


def syncfs_fd(fd: int) -> bool:
    """syncfs(2) on the file system holding the open ``fd``; False where unavailable."""
    if not sys.platform.startswith("linux"):
        return False
    return bool(ctypes.CDLL(None, use_errno=True).syncfs(fd) == 0)
