#!/usr/bin/env python3
"""The least any Python program must do to copy a tree with trueup's guarantees.

No framework, no declarations, no plan, no output: only the work the issue
asks of every apply, written as directly as Python allows, so the bench can
say how much of trueup's time is the language and the guarantees rather than
trueup. Per file it reads and hashes the source, looks at the target, journals
the action pending, then per batch of 2,048: journals the batch running (one
row), writes the files (a folder that does not exist yet under a temp name,
with its files under their own names; into an existing one as temp files),
flushes them (syncfs), renames the new folders and the temp files into place,
flushes the folders, reads each target back and hashes it (verification), and
records the batch's evidence (one row) and an applied row per file, with
SQLite in WAL mode, ``synchronous=FULL``: as trueup does, with nothing else.

Usage: ``floor.py SOURCE DEST STATE_DB`` (DEST must not exist yet).
"""

from __future__ import annotations

import ctypes
import hashlib
import json
import os
import sqlite3
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from typing import TypeVar

BATCH = 2048
T = TypeVar("T")
LIBC = ctypes.CDLL(None, use_errno=True)


def on_fd(path: str, flags: int, use: Callable[[int], T]) -> T:
    fd = os.open(path, flags)
    try:
        return use(fd)
    finally:
        os.close(fd)


def read(path: str) -> bytes:
    return on_fd(path, os.O_RDONLY, lambda fd: os.read(fd, os.fstat(fd).st_size))


@contextmanager
def transaction(db: sqlite3.Connection) -> Iterator[None]:
    """One commit (one WAL fsync) for everything inside, as trueup's journal does."""
    db.execute("BEGIN IMMEDIATE")
    yield
    db.execute("COMMIT")


def sources(src: str) -> list[str]:
    found = []
    for folder, _dirs, files in os.walk(src):
        prefix = folder[len(src) :].lstrip("/")
        found += [f"{prefix}/{name}" if prefix else name for name in files]
    return sorted(found)


def main(src: str, dst: str, state: str) -> None:
    db = sqlite3.connect(state, isolation_level=None)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA synchronous=FULL")
    with transaction(db):
        db.execute("CREATE TABLE journal (seq INTEGER PRIMARY KEY, rel TEXT, status TEXT)")
        db.execute("CREATE TABLE batches (first INTEGER PRIMARY KEY, status TEXT, ev TEXT)")
        db.execute("CREATE TABLE applied (rel TEXT PRIMARY KEY, digest TEXT)")
    rels = sources(src)
    contents = [read(os.path.join(src, rel)) for rel in rels]
    digests = [hashlib.sha256(data).hexdigest() for data in contents]
    for rel in rels:
        with suppress(FileNotFoundError):
            os.lstat(os.path.join(dst, rel))
    with transaction(db):
        db.executemany("INSERT INTO journal VALUES (?, ?, 'pending')", list(enumerate(rels)))
    os.makedirs(dst)
    for first in range(0, len(rels), BATCH):
        seqs = range(first, min(first + BATCH, len(rels)))
        with transaction(db):
            db.execute("INSERT INTO batches VALUES (?, 'running', NULL)", (first,))
        staged, new, folders = [], {}, {dst}
        for seq in seqs:
            final = os.path.join(dst, rels[seq])
            folder = os.path.dirname(final)
            if folder not in new and not os.path.isdir(folder):  # one level deep, as here
                new[folder] = os.path.join(os.path.dirname(folder), f".{first}-{len(new)}.tmp")
                os.mkdir(new[folder])
            if folder in new:
                temp = os.path.join(new[folder], os.path.basename(final))
            else:
                temp = os.path.join(folder, f".{seq}.tmp")
                staged.append((temp, final))
            folders.add(folder)
            fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
            os.write(fd, contents[seq])
            os.close(fd)
        on_fd(dst, os.O_RDONLY, LIBC.syncfs)
        for folder, temp in new.items():
            os.rename(temp, folder)
        for temp, final in staged:
            os.replace(temp, final)
        for folder in sorted(folders):
            on_fd(folder, os.O_RDONLY | os.O_DIRECTORY, os.fsync)
        evidence = []
        for seq in seqs:
            final = os.path.join(dst, rels[seq])
            os.lstat(final)
            seen = hashlib.sha256(read(final)).hexdigest()
            if seen != digests[seq]:
                raise SystemExit(f"verification of {rels[seq]} failed")
            evidence.append({"digest": seen})
        with transaction(db):
            db.execute(
                "UPDATE batches SET status = 'succeeded', ev = ? WHERE first = ?",
                (json.dumps(evidence), first),
            )
            db.executemany(
                "INSERT INTO applied VALUES (?, ?)", [(rels[s], digests[s]) for s in seqs]
            )
    db.close()


if __name__ == "__main__":
    if len(sys.argv) != 4:
        raise SystemExit(__doc__)
    main(*sys.argv[1:])
