"""One place that writes to the terminal: human text via rich, or a JSON envelope.

Every command's ``--json`` output is the same versioned envelope, and every
string that leaves passes through redaction.
"""

from __future__ import annotations

import json
import os
import shlex
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NoReturn, TypeVar

from trueup.errors import ExitCode, TrueupError
from trueup.redact import redact, redact_message

T = TypeVar("T")

if TYPE_CHECKING:
    from rich.console import Console

ENVELOPE_SCHEMA = "trueup.cli/1"
#: What a shell reports for a writer killed by SIGPIPE (128 + 13): the
#: conventional end of ``trueup plan | head``, and not 1, which means a bug.
CLOSED_PIPE_EXIT = 141


def rerun_with(*extra: str) -> str:
    """This very command again with ``extra`` arguments, quoted, ready to paste."""
    return shlex.join(["trueup", *sys.argv[1:], *extra])


def rerun_confirmed(name: str) -> str:
    """This very command again with ``--confirm NAME``, in place of any name typed before."""
    args: list[str] = []
    skip = False
    for arg in sys.argv[1:]:
        if skip or arg == "--confirm":
            skip = not skip
            continue
        if not arg.startswith("--confirm="):
            args.append(arg)
    return shlex.join(["trueup", *args, "--confirm", name])


@contextmanager
def confirmation_hint(name: str, no_input: bool) -> Iterator[None]:
    """A refused confirmation names the whole command to run.

    ``no_input``: the run may not ask and no name was given (a timer, CI), so
    nobody could have typed it: a person's to do (exit 3), not a mistake (2).
    """
    from trueup.execute.gates import ConfirmationRequired, unattended

    try:
        yield
    except ConfirmationRequired as refused:
        command = rerun_confirmed(name)
        if no_input:
            raise unattended(refused, command) from None
        refused.hint = f"type the target's name to confirm: {command}"
        raise


def stdout_closed() -> NoReturn:
    """End quietly once the reader of stdout has gone (``| head``).

    Nothing is left to say to anyone; stdout is pointed at /dev/null so that
    flushing it at exit does not fail once more (the Python docs' note on SIGPIPE).
    """
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    raise SystemExit(CLOSED_PIPE_EXIT)


@dataclass
class Output:
    command: str
    json_mode: bool = False
    _console: Console | None = field(default=None, repr=False)
    _err: Console | None = field(default=None, repr=False)

    @property
    def console(self) -> Console:
        if self._console is None:
            from rich.console import Console

            self._console = Console(highlight=False, soft_wrap=True)
            self._console.on_broken_pipe = stdout_closed  # type: ignore[method-assign]
        return self._console

    @property
    def err(self) -> Console:
        if self._err is None:
            from rich.console import Console

            self._err = Console(stderr=True, highlight=False, soft_wrap=True)
        return self._err

    def envelope(self, status: str, code: int, message: str, data: Any) -> None:
        document = {
            "schema": ENVELOPE_SCHEMA,
            "command": self.command,
            "status": status,
            "exitCode": int(code),
            "message": redact_message(message),
            "data": data,
        }
        # Indented for a person at a terminal; compact when piped, where the C
        # encoder writes a big plan much faster.
        indent = 2 if sys.stdout.isatty() else None
        text = json.dumps(document, indent=indent, sort_keys=True, default=str)
        sys.stdout.write(redact(text) + "\n")

    def report(self, message: str, data: Any, status: str = "ok", code: int = 0) -> None:
        """A command's one-line outcome: the message for people, or an envelope."""
        if self.json_mode:
            self.envelope(status, code, message, data)
        else:  # plain words: a glob's [ab] is not markup
            self.console.print(_scrub(message), markup=False)

    def finished(self, outcome: str, code: int, show: Callable[[], None]) -> int:
        """Show a run that has ended; its outcome's exit code, even if Ctrl-C cuts ``show``.

        The run is over and recorded by then: a Ctrl-C while its result prints
        stops the printing, and exiting as a cancellation ("nothing was
        changed") would misreport what happened.
        """
        try:
            show()
        except KeyboardInterrupt:
            self.err.print(
                f"output cut short; the run had already ended: {outcome} (trueup status shows it)",
                markup=False,
            )
        return code

    def print(self, *parts: Any) -> None:
        if not self.json_mode:
            self.console.print(*(_scrub(p) for p in parts))

    def confirm(self, question: str) -> bool:
        """Ask yes/no on stderr: stdout carries only the plan, or the JSON envelope."""
        import click

        return click.confirm(question, default=False, err=True)

    def ask(self, question: str) -> str:
        """Ask for a typed answer on stderr (as ``confirm``); empty when none is given."""
        import click

        answer: str = click.prompt(question, default="", show_default=False, err=True)
        return answer

    def error(self, error: TrueupError) -> int:
        code = int(error.exit_code)
        if self.json_mode:
            data = {"hint": error.hint, "detail": error.data}
            self.envelope("error", code, error.message, data)
        else:
            from rich.markup import escape

            message, hint = (visible(redact_message(t)) for t in (error.message, error.hint or ""))
            self.err.print(f"[bold red]error:[/] {escape(message)}")
            if hint:
                self.err.print(f"[dim]next:[/] {escape(hint)}")
        return code

    def internal(self, exc: BaseException) -> int:
        message = f"internal error: {type(exc).__name__}: {exc}"
        if self.json_mode:
            self.envelope("error", ExitCode.INTERNAL, message, None)
        else:
            from rich.markup import escape

            self.err.print(f"[bold red]{escape(visible(redact_message(message)))}[/]")
            self.err.print(
                "[dim]this is a bug in trueup; rerun with TRUEUP_DEBUG=1 for a traceback[/]"
            )
        return int(ExitCode.INTERNAL)


def _scrub(part: Any) -> Any:
    return visible(redact(part)) if isinstance(part, str) else part


# Control characters from files and names are shown, never sent: an ESC in a
# file's content must not clear a reviewer's screen or retitle their window.
_CONTROLS = [*range(0x20), 0x7F, *range(0x80, 0xA0)]
_VISIBLE = {c: f"\\x{c:02x}" for c in _CONTROLS if c not in (0x09, 0x0A)} | {0x0D: "\\r"}


def visible(text: str) -> str:
    """``text`` with control characters (newlines and tabs aside) spelt out."""
    return text.translate(_VISIBLE)


def first_visible(
    fetch: Callable[[int, int], list[T]], keep: Callable[[T], bool], limit: int
) -> list[T]:
    """The newest ``limit`` rows the actor may see, paging past the ones it may not.

    Limiting before filtering would show an actor nothing when the newest rows
    are all about targets it may not read.
    """
    found: list[T] = []
    offset, page = 0, max(limit, 100)
    while len(found) < limit:
        rows = fetch(offset, page)
        found += [row for row in rows if keep(row)]
        if len(rows) < page:
            break
        offset += page
    return found[:limit]
