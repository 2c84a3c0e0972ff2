"""Errors a user can act on, each with the exit code the CLI reports.

Anything that is not a ``TrueupError`` is a bug and exits 1; these never print
a traceback.
"""

from __future__ import annotations

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
