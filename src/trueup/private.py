"""Files and folders of trueup's own that only their owner may read.

The data folder holds the state store (applied records, the journal, the
audit log), copies of files trueup replaced (rollback material, which may be
anybody's private notes or keys) and caches of validated profiles. On a
machine other people use, none of that is theirs to read: every folder
trueup makes for it is 0700 and every file 0600, whatever the umask, which
only ever takes bits away and may take the owner's too.
"""

from __future__ import annotations

import contextlib
import os
import stat
from pathlib import Path

FOLDER_MODE = 0o700
FILE_MODE = 0o600
#: SQLite's companions of a store file, made with the store file's own mode.
SQLITE_COMPANIONS = ("-wal", "-shm", "-journal")

_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_WRITE = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | _CLOEXEC


def make_folders(path: Path | str) -> None:
    """``mkdir -p path``, each folder made 0700; folders already there are left as they are
    (a ``TRUEUP_DATA`` somebody chose keeps the mode they gave it)."""
    missing: list[str] = []
    folder = os.path.abspath(path)
    while not os.path.isdir(folder):
        missing.append(folder)
        parent = os.path.dirname(folder)
        if parent == folder:
            break
        folder = parent
    for folder in reversed(missing):
        try:
            os.mkdir(folder, FOLDER_MODE)
        except FileExistsError:
            if os.path.isdir(folder):
                continue  # made meanwhile by another trueup
            raise
        os.chmod(folder, FOLDER_MODE)


def write_file(path: Path | str, data: bytes, mode: int = FILE_MODE) -> None:
    """Write ``data`` to ``path`` with exactly ``mode`` (0600 at most for what trueup keeps).

    An existing file keeps its own mode through ``open``, a new one loses the
    umask's bits: ``fchmod`` makes both ``mode``.
    """
    fd = os.open(path, _WRITE, mode)
    try:
        os.fchmod(fd, mode)
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
    finally:
        os.close(fd)


def private_store_file(path: Path | str) -> None:
    """Make a SQLite store file 0600 before SQLite opens it, and its -wal and -shm with it.

    SQLite creates the companions with the store file's own mode, so the store
    file is made here first (empty, which SQLite takes as a new database). One
    made by an older trueup loses the bits of group and others, and nothing
    else: a store made read-only on purpose stays read-only. A file this user
    may not change is left to SQLite, which says what is wrong with it.
    """
    spelt = os.fspath(path)
    try:
        fd = os.open(spelt, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _CLOEXEC, FILE_MODE)
    except OSError:
        pass  # there already (narrowed below), or this user may not make it
    else:
        with contextlib.suppress(OSError):
            os.fchmod(fd, FILE_MODE)
        os.close(fd)
    for name in (spelt, *(spelt + suffix for suffix in SQLITE_COMPANIONS)):
        with contextlib.suppress(OSError):
            mode = stat.S_IMODE(os.stat(name).st_mode)
            if mode & 0o077:
                os.chmod(name, mode & ~0o077)


def copy_mode(source_mode: int) -> int:
    """The mode of trueup's copy of a file of ``source_mode``: never more than the file's
    own, nor more than its owner's read and write (0644 -> 0600, 0400 -> 0400)."""
    return source_mode & FILE_MODE
