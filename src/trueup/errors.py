"""Errors a user can act on, each with the exit code the CLI reports.

Anything that is not a ``TrueupError`` is a bug and exits 1; these never print
a traceback.
"""

from __future__ import annotations

import errno
import os
from collections.abc import Iterator
from contextlib import contextmanager
from enum import IntEnum


class ExitCode(IntEnum):
    """Exit codes shared by every command (machine-sync.md, "CLI conventions")."""

    OK = 0
    INTERNAL = 1
    USAGE = 2
    HUMAN_ACTION = 3
    CONFLICT = 4
    AUTH = 5
    TRANSPORT = 6
    FAILED = 7


class TrueupError(Exception):
    """A failure with a message for people and a stable exit code."""

    exit_code: ExitCode = ExitCode.INTERNAL

    def __init__(self, message: str, *, hint: str | None = None, data: object = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint
        self.data = data


class UsageError(TrueupError):
    """Bad input: a declaration, an argument, a saved plan. Nothing was changed."""

    exit_code = ExitCode.USAGE


class ConflictError(TrueupError):
    """The world moved (stale plan) or someone else holds the target's lock."""

    exit_code = ExitCode.CONFLICT


class NotAuthorizedError(TrueupError):
    exit_code = ExitCode.AUTH


class ApplyFailedError(TrueupError):
    exit_code = ExitCode.FAILED


def os_problem(exc: OSError) -> str:
    """What the OS refused, naming the path: 'PATH: Permission denied'.

    A path too long for the file system is named by its length and its ends:
    printed whole it would be thousands of characters and cut off anyway.
    """
    reason = exc.strerror or str(exc)
    if exc.filename is None:
        return reason
    name = os.fsdecode(exc.filename)
    if exc.errno == errno.ENAMETOOLONG:
        shown = name if len(name) <= 120 else f"{name[:60]}…{name[-40:]}"
        return f"a path of {len(name)} characters is too long for the file system ({shown})"
    return f"{name}: {reason}"


@contextmanager
def user_paths(where: str, hint: str | None = None) -> Iterator[None]:
    """Report an OS refusal to read a path the user named as a usage error at ``where``.

    Only for reading inputs the user chose (a declaration, its sources, the
    targets it names): a permission, a file where a folder should be or a name
    too long is theirs to fix, and nothing was changed. An ``OSError`` anywhere
    else is left alone, so a bug still reads as one.
    """
    try:
        yield
    except OSError as exc:
        problem = os_problem(exc)
        named = exc.filename is not None and os.path.abspath(exc.filename) == os.path.abspath(where)
        raise UsageError(problem if named else f"{where}: {problem}", hint=hint) from None
