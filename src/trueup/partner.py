"""A second process that does half of the kernel's work of committing many files.

Creating, renaming and reading back thousands of small files is mostly
system calls, and a first apply spends more of its time there than in
Python while the machine's other core idles. Python threads do not help:
every system call hands the GIL over, and taking it back waits for the other
thread's switch interval (measured: two threads are slower than one). So a
``WritableFS`` with a partner hands it the temp files to create as they are
staged (it creates them while the executor goes on staging, copying a
source's bytes itself, refused unless they still hold the planned digest, so
they never cross the pipe), half of the renames at commit, half of what was
committed to read back and hash for verification, and the flush of the
folders while the executor verifies; two processes take ~0.55 s where one
takes ~0.85 s (10,000 files of 200 B - 4 KB).

The partner acts only on what it is asked, on temp names the parent chose
and staged before asking (so ``WritableFS.discard`` and a recovery's sweep
know them). It dies with its parent (PR_SET_PDEATHSIG on Linux, else at the
end of its input), and ignores Ctrl-C, which the parent handles: a parent
that stops while the partner works kills it (``abort``) and waits for it
before it discards or restores anything, so nothing happens behind a restore.

A partner that does not start is never used (this process does its share);
one that stops during a run fails the run, which is then restored like any
failed run, and applying again starts another.
"""

from __future__ import annotations

import atexit
import collections
import contextlib
import hashlib
import os
import select
import signal
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from trueup.errors import ApplyFailedError
from trueup.fsops import (
    child_command,
    cores,
    create_temp,
    frame,
    next_frame,
    put_frame,
    read_still,
    rename_exclusive,
    syncfs_all,
    take_frame,
    widen_pipe,
    witness,
    write_all,
)

if TYPE_CHECKING:
    import subprocess

#: Files a ``WritableFS`` stages before a partner pays for its start (~15 ms).
START_AFTER = 128
#: Temp files handed over in one request: small enough that the partner starts
#: at once, big enough that a request is not mostly overhead.
HAND_FILES = 64
#: Create requests it may hold unanswered: past that, the parent creates files itself.
BACKLOG = 2

#: Why a request failed, beside its error: a target appeared where the plan saw
#: nothing (an exclusive rename found something there), or a source to copy no
#: longer holds the bytes the plan was computed from.
APPEARED, CHANGED = "appeared", "changed"
# How the partner reports the first failure of a request: (errno, strerror, path,
# "" or one of the reasons above).
Failure = tuple[int, str, bytes, str] | None
#: A temp file's content: its bytes, or where to copy them from (source, the sha256
#: they must have, the file-size limit, and the stat under which the parent's stat
#: cache vouches for that sha256, if it does), so they need not cross the pipe.
Content = bytes | tuple[bytes, str, int, tuple[int, int, int, int] | None]


class PartnerGone(ApplyFailedError):
    """The partner stopped during a run: what it was doing is unknown."""

    def __init__(self) -> None:
        super().__init__(
            "trueup's second process, which writes files with it, stopped unexpectedly",
            hint="apply again (a machine short of memory may have stopped it)",
        )


class Partner:
    """The parent's handle on one partner process; requests are answered in order."""

    def __init__(self, process: subprocess.Popen[bytes]) -> None:
        assert process.stdin is not None and process.stdout is not None
        self._process: subprocess.Popen[bytes] | None = process
        self._requests = process.stdin.fileno()
        self._replies = process.stdout.fileno()
        self._buffer = bytearray()
        # What it was asked, oldest first, and the answers taken so far.
        self._asked: collections.deque[str] = collections.deque(["hello"])
        # Bytes asked behind the oldest unanswered read-back (see ``submit``).
        self._behind_digest = 0
        self._answered: list[tuple[str, Any]] = []
        #: Bytes one request may hold, and all requests queued behind an unanswered
        #: read-back (``submit``): a quarter of the pipe, so several fit in it.
        self.request_bytes = widen_pipe(self._requests) // 4

    @classmethod
    def start(cls) -> Partner | None:
        """A starting partner, or ``None`` where it cannot pay (one core), cannot be
        tied to this process's life (only Linux kills it with its parent), or start."""
        if len(cores()) < 2 or not sys.platform.startswith("linux"):
            return None
        import subprocess

        try:
            process = subprocess.Popen(
                child_command("partner", "serve"),
                bufsize=0,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
            )
        except OSError:
            return None
        partner = cls(process)
        atexit.register(partner.abort)
        return partner

    @property
    def up(self) -> bool:
        """Whether it has started (it says so first) and not been stopped."""
        return self._process is not None and not (self._asked and self._asked[0] == "hello")

    def ready(self) -> bool:
        """Whether it is up, looking without waiting; until then the parent does the
        work itself, and one that died starting is stopped, never ready."""
        if self._process is not None and not self.up:
            try:
                self._pump(wait=False)
            except PartnerGone:
                return False
        return self.up

    @property
    def busy(self) -> bool:
        return bool(self._asked or self._answered)

    def backlog(self) -> int:
        """Requests it has not answered yet, looking without waiting."""
        self._pump(wait=False)
        return len(self._asked)

    def submit(self, op: str, items: Any) -> None:
        """Ask for ``op``; its answer is taken, in order, by ``answers``.

        A read-back's answer may outgrow the pipe, and a partner blocked
        writing it reads no more requests: behind one, only a few small
        requests (which the pipe holds whatever happens) are sent before it
        is taken.
        """
        if self._process is None:
            raise PartnerGone
        request = frame((op, items))
        if "digest" in self._asked:
            self._behind_digest += len(request)
            if self._behind_digest > self.request_bytes:
                self._pump(wait=True)
        if "digest" not in self._asked:
            self._behind_digest = 0
        # Asked before it is written: should a signal stop the write, the request
        # (or half of it) is already this process's to stop the partner for.
        self._asked.append(op)
        try:
            write_all(self._requests, request)
        except OSError:
            self.abort()
            raise PartnerGone from None
        except BaseException:
            self.abort()
            raise

    def answers(self, until: str | None = None) -> list[tuple[str, Any]]:
        """The answers it owes, waited for, with the request each answers: all of them,
        or (``until``) those up to the oldest request of that kind still unanswered,
        and none waited for when it is answered already."""
        if until is None or until in self._asked:
            self._pump(wait=True, until=until)
        else:
            self._pump(wait=False)
        found, self._answered = self._answered, []
        return [(op, answer) for op, answer in found if op != "hello"]

    def _pump(self, wait: bool, until: str | None = None) -> None:
        """Take the answers that have come; with ``wait``, every one it owes (or up to
        the first answer to an ``until`` request)."""
        while self._asked:
            whole, value = next_frame(self._buffer)
            if whole:
                op = self._asked.popleft()
                self._answered.append((op, value))
                if op == until:
                    return
                continue
            if not wait and not select.select([self._replies], [], [], 0)[0]:
                return
            try:
                chunk = os.read(self._replies, 1 << 16)
            except OSError:
                chunk = b""
            if not chunk:
                self.abort()
                raise PartnerGone
            self._buffer += chunk

    def abort(self) -> None:
        """Stop it at once: once this returns, it does nothing more, whatever it was doing."""
        process, self._process = self._process, None
        self._asked.clear()
        self._answered = []
        if process is None:
            return
        atexit.unregister(self.abort)  # a worker runs many applies: none piles up here
        if process.poll() is None:
            process.kill()
        process.wait()
        for stream in (process.stdin, process.stdout):
            if stream is not None:
                with contextlib.suppress(OSError):
                    stream.close()


# -- the partner's side ---------------------------------------------------------
# Paths travel as bytes, as the parent's file system encoding spells them: the
# partner's bare interpreter may decode names otherwise (no PYTHONUTF8 under -I).
def _create(items: list[tuple[bytes, Content, int, tuple[int, int] | None]]) -> Failure:
    for temp, content, mode, owner in items:
        if isinstance(content, tuple):
            source, digest, max_file_bytes, vouched = content
            held = read_still(source, max_file_bytes)
            # Still the stat its digest was recorded under: the bytes hashed then (the
            # stat cache's rule, which the plan itself trusted), not hashed again.
            if held is None or (
                witness(held[0])[1:] != vouched and hashlib.sha256(held[1]).hexdigest() != digest
            ):
                return (0, "changed after the plan was computed", source, CHANGED)
            content = held[1]
        try:
            create_temp(temp, content, mode, owner)
        except OSError as exc:
            return _failure(exc, temp)
    return None


def _rename(items: list[tuple[bytes, bytes, bool]]) -> Failure:
    for temp, final, exclusive in items:
        try:
            if exclusive:
                rename_exclusive(temp, final)
            else:
                os.replace(temp, final)
        except FileExistsError as exc:
            return _failure(exc, final, APPEARED if exclusive else "")
        except OSError as exc:
            return _failure(exc, final)
    return None


def _digest(
    request: tuple[list[bytes], int],
) -> list[tuple[bytes, tuple[int, int, int, int, int], str]]:
    paths, max_file_bytes = request
    found = []
    for path in paths:
        held = read_still(path, max_file_bytes)
        if held is not None:
            st, data = held
            found.append((path, witness(st), hashlib.sha256(data).hexdigest()))
    return found


def _syncfs(folders: list[bytes]) -> Failure:
    """One syncfs per file system (the parent sends one folder of each)."""
    if syncfs_all(folders):
        return None
    return (0, "syncfs is not available", b"", "")  # the parent flushes the folders


def _failure(exc: OSError, path: bytes, why: str = "") -> Failure:
    return (exc.errno or 0, exc.strerror or str(exc), path, why)


_OPS: dict[str, Callable[[Any], Any]] = {
    "create": _create,
    "rename": _rename,
    "digest": _digest,
    "syncfs": _syncfs,
}


def serve() -> None:
    """The partner's whole life: answer requests until the parent closes the pipe."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _die_with_parent()
    requests, answers = sys.stdin.buffer, sys.stdout.buffer
    put_frame(answers, "hello")
    answers.flush()
    while True:
        try:
            op, items = take_frame(requests)
        except EOFError:
            return
        put_frame(answers, _OPS[op](items))
        answers.flush()


def _die_with_parent() -> None:
    if sys.platform.startswith("linux"):
        import ctypes

        pr_set_pdeathsig = 1
        ctypes.CDLL(None).prctl(pr_set_pdeathsig, signal.SIGKILL)
