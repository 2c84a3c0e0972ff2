"""Source files read and hashed by a second process while this one validates.

A first apply of thousands of file resources spends a fifth of its time
reading and hashing their sources one by one, while the machine's other core
idles. Once a profile's source list is known, a small child process (the
standard library only, ~10 ms to start) reads and hashes them in parallel
with validation: all but the first third, from the last, while the parent
reads from the first and never waits (``ReadAhead.ready``). Its results
enter the stat cache by the rule the
parent's own reads follow (``StatCache.learn``): a result is used only for a
file whose stat is still the one it was read with, and not racy, so a source
edited meanwhile is simply read again. The child only reads, and anything it
fails at (a link, a folder, a vanished or oversized file, the child itself
dying) is left to the parent's ordinary reads.

An apply of a big profile starts its child before the CLI is even imported
(``start_early``, from cli/launch.py): given the profile, the child parses it
itself and reads every source it declares, a tenth of a second ahead of the
parent, which takes it over when it loads that profile (``take_early``).

The child runs ``serve`` in a bare interpreter (fsops.child_command): it
takes the request on stdin and answers in length-prefixed frames on stdout,
so the parent's memory stays one frame deep.
"""

from __future__ import annotations

import atexit
import contextlib
import hashlib
import marshal
import os
import select
import sys
import threading
import time
from collections.abc import Iterator
from typing import IO, TYPE_CHECKING, Any

from trueup.fsops import (
    DEFAULT_MAX_FILE_BYTES,
    child_command,
    cores,
    frame,
    read_still,
    take_frame,
    widen_pipe,
)

if TYPE_CHECKING:
    import subprocess

    from trueup.fs import StatCache

#: Fewer sources than this are read faster than a process starts.
MIN_FILES = 256
_FRAME_FILES = 256


# Started for a profile before the CLI was imported, by its absolute path.
_early: dict[str, ReadAhead] = {}


class ReadAhead:
    """One child reading ``paths``; ``drain`` hands what it read to a stat cache."""

    def __init__(self, process: subprocess.Popen[bytes], paths: list[str] | None) -> None:
        self._process: subprocess.Popen[bytes] | None = process
        #: What it was asked to read: a miss elsewhere does not wait for it.
        #: ``None``: every source of a profile (``start_early``).
        self.paths = None if paths is None else frozenset(paths)

    @classmethod
    def start(cls, paths: list[str], max_file_bytes: int) -> ReadAhead | None:
        """A running read-ahead, or ``None`` where it would not pay (few files, one core)."""
        if len(paths) < MIN_FILES:
            return None
        return cls._spawn(paths, max_file_bytes)

    def wanted(self, path: str) -> bool:
        """Whether it was asked to read ``path`` (as far as this process knows)."""
        return self.paths is None or path in self.paths

    @classmethod
    def _spawn(cls, paths: list[str] | str, max_file_bytes: int) -> ReadAhead | None:
        """A child reading ``paths``, or the sources the profile at that path declares."""
        if len(cores()) < 2:
            return None
        import subprocess

        try:
            process = subprocess.Popen(
                child_command("readahead", "serve"),
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
            )
        except OSError:
            return None
        # The answer, a digest a file (1.5 MB for 10,000), comes all at once at the end.
        assert process.stdout is not None
        widen_pipe(process.stdout.fileno())
        # Written by a thread: the request outgrows the pipe, and the child takes
        # it only once started, which this process need not wait for.
        request = marshal.dumps((paths, max_file_bytes))
        threading.Thread(target=_hand, args=(process.stdin, request), daemon=True).start()
        ahead = cls(process, None if isinstance(paths, str) else paths)
        # Should nobody need it (a refused apply), it still ends with this process.
        atexit.register(ahead.close)
        return ahead

    def ready(self, timeout: float = 0) -> bool:
        """Whether the child has read everything (it answers only then), waiting at most
        ``timeout`` seconds; a child that died is ready too, with nothing to give."""
        process = self._process
        if process is None or process.stdout is None:
            return True
        readable, _, _ = select.select([process.stdout], [], [], timeout)
        return bool(readable)

    def drain(self, cache: StatCache) -> None:
        """Wait for the child and learn everything it read; once, then this is spent."""
        process, self._process = self._process, None
        if process is None:
            return
        assert process.stdout is not None
        try:
            for path, key, digest, read_ns in _records(process.stdout):
                cache.learn(path, key, digest, None, read_ns)
        except (OSError, ValueError, EOFError, TypeError):
            pass  # what was learned stands; the parent reads the rest itself
        finally:
            self._stop(process)

    def close(self) -> None:
        """Stop the child unread (the run ended or failed before it was needed)."""
        process, self._process = self._process, None
        if process is not None:
            self._stop(process)

    @staticmethod
    def _stop(process: subprocess.Popen[bytes]) -> None:
        if process.poll() is None:
            process.kill()
        process.wait()
        if process.stdout is not None:
            process.stdout.close()


def start_early(profile: str) -> ReadAhead | None:
    """Start reading the sources ``profile`` (an absolute path) declares, for the
    command about to load it; whatever nobody takes over ends with this process."""
    ahead = ReadAhead._spawn(profile, DEFAULT_MAX_FILE_BYTES)
    if ahead is not None:
        _early[profile] = ahead
    return ahead


def take_early(profile: str) -> ReadAhead | None:
    """The read-ahead started early for ``profile``, once."""
    return _early.pop(profile, None)


def stop_early() -> None:
    """Stop every early read-ahead nobody took over (this command loads another
    profile, or none)."""
    for ahead in _early.values():
        ahead.close()
    _early.clear()


def _hand(stream: IO[bytes] | None, request: bytes) -> None:
    assert stream is not None
    with contextlib.suppress(OSError):  # the child is gone: the parent reads the files itself
        stream.write(request)
        stream.close()


def _records(stream: IO[bytes]) -> Iterator[tuple[str, Any, str, int]]:
    while True:
        try:
            records = take_frame(stream)
        except EOFError:
            return
        yield from records  # marshal keeps each stat key a tuple


def _child(request: bytes, out: IO[bytes]) -> None:
    """Read everything, then answer: the parent is busy validating meanwhile, and a
    pipe holds 64 KiB, so writing as it goes would stall the reading at once. Frames
    are packed as they fill, so the answer then streams out as fast as it is taken."""
    paths, max_file_bytes = marshal.loads(request)
    if isinstance(paths, str):
        paths = _declared_in(paths)
        if len(paths) < MIN_FILES:
            return
    records: list[tuple[str, Any, str, int]] = []
    packed: list[bytes] = []
    # From the last: the parent, which reads for itself until this is ready, goes
    # from the first, so the two meet somewhere in between and little is read twice.
    for path in reversed(paths):
        found = read_still(path, max_file_bytes)
        if found is not None:
            st, data = found
            key = (st.st_size, st.st_mtime_ns, st.st_ino, st.st_ctime_ns)  # fs.stat_key
            records.append((path, key, hashlib.sha256(data).hexdigest(), time.time_ns()))
        if len(records) >= _FRAME_FILES:
            packed.append(frame(records))
            records = []
    if records:
        packed.append(frame(records))
    for blob in packed:
        out.write(blob)


def _declared_in(profile: str) -> list[str]:
    """The sources ``profile`` declares, as resolution spells them; none from a profile
    this bare interpreter cannot read (YAML needs ruamel), or that is not valid."""
    from pathlib import Path

    from trueup.declare.files import read_document
    from trueup.errors import UsageError
    from trueup.sources import document_sources

    try:
        document = read_document(Path(profile))
    except (UsageError, RecursionError):
        return []
    return document_sources(document, os.path.dirname(profile))


def serve() -> None:
    """The child's whole life (see the module's docstring)."""
    _child(sys.stdin.buffer.read(), sys.stdout.buffer)
    sys.stdout.buffer.flush()
