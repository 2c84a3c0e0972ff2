"""What every ``trueup`` command shares: its options, the session it acts in, its error boundary.

Kept apart from ``cli/main.py`` so subcommand modules (audit, grants, jobs,
org) import it without importing the app that registers them: no circle.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn, TypeVar

import click

from trueup.cli.output import Output, stdout_closed
from trueup.errors import ExitCode, TrueupError, UsageError

F = TypeVar("F", bound=Callable[..., Any])

if TYPE_CHECKING:
    from trueup.engine import Engine
    from trueup.model import Plan
    from trueup.pipeline import Consent

#: A path argument or option, as given (the command says whether it must exist).
PATH = click.Path(path_type=Path)

json_option = click.option(
    "--json", "json_out", is_flag=True, help="Print a versioned JSON envelope."
)
state_option = click.option(
    "--state", envvar="TRUEUP_STATE", help="State store URL (sqlite:///… or postgresql://…)."
)


def _folder(_ctx: click.Context, _param: click.Parameter, value: str | None) -> Path | None:
    """A path that must not be empty: ``--root ""`` (an unset ``$ROOT``) is a mistake.

    ``Path("")`` is the current directory, so converted it could no longer be told
    apart from ``--root .``, and apply would write wherever it was started.
    """
    if value is None:
        return None
    if not value:
        raise click.BadParameter("must name a folder, not be empty")
    return Path(value)


root_option = click.option(
    "--root",
    callback=_folder,
    metavar="PATH",
    help="Apply targets under this folder (default: your home).",
)
overwrite_option = click.option(
    "--overwrite", multiple=True, help="Take the declared version of this drifted resource."
)
# What both plans (a profile's and an org's) accept the same way.
out_option = click.option(
    "-o", "--out", "out_file", type=PATH, help="Save the plan to apply it later exactly."
)
show_unchanged_option = click.option(
    "--show-unchanged/--no-show-unchanged", default=False, help="List unchanged resources too."
)
# What every applying command (apply, org apply, sync, schedule) accepts the same way.
yes_option = click.option("--yes", "-y", is_flag=True, help="Apply without asking.")


def no_input_option(what: str = "for timers and CI") -> Callable[[F], F]:
    """``--no-input``: never prompt; ``what`` says who runs the command that way."""
    return click.option("--no-input", is_flag=True, help=f"Never prompt ({what}); implies --yes.")


queue_option = click.option(
    "--queue", is_flag=True, help="Queue the apply for a worker (trueup worker)."
)
max_bytes_option = click.option(
    "--max-file-bytes",
    type=click.IntRange(min=1),
    help="Largest file trueup will read (default 16 MiB).",
)


def engine_for(state: str | None, max_file_bytes: int | None = None) -> Engine:
    """The profile engine (and its session) a command acts through.

    Imported lazily: ``trueup --help`` need not load the engine.
    """
    from trueup.engine import Engine
    from trueup.settings import Settings

    engine = Engine(Settings.from_env(state=state, max_file_bytes=max_file_bytes))
    engine.claims_named = True  # a mistyped --actor is refused, not taken as a new service
    if os.environ.get("TRUEUP_TOKEN") or os.environ.get("TRUEUP_ACTOR"):
        # A token that is not (or no longer) known, or a service nothing names, is
        # refused at once, whatever the command would have read: not only once a
        # target is there to be guarded.
        _ = engine.actor
    return engine


def run_command(out: Output, body: Callable[[], int]) -> NoReturn:
    """Run a command body; user mistakes exit with their code and no traceback."""
    try:
        code = body()
        sys.stdout.flush()  # a reader gone (| head) is noticed here, not at exit
    except BrokenPipeError:
        stdout_closed()
    except TrueupError as exc:
        code = out.error(exc)
    except (KeyboardInterrupt, click.exceptions.Abort):  # Ctrl-C, or Ctrl-C/EOF at a prompt
        code = out.error(UsageError("cancelled; nothing was changed"))
    except Exception as exc:
        if os.environ.get("TRUEUP_DEBUG"):
            raise
        code = out.internal(exc)
    raise click.exceptions.Exit(code)


def missing_root(out: Output, root: Path, yes: bool, interactive: bool) -> None:
    """Make ``root`` when it does not exist and the person agrees; else exit 2 saying how.

    ``--yes`` makes it; on a terminal the person is asked; anything else (a
    timer, CI, a pipe) stops with nothing changed and the command that makes it.
    """
    import shlex

    from trueup.cli.output import rerun_with

    where = root.expanduser()
    if where.exists() or where.is_symlink():
        return  # not a folder, or a dangling link: the profile target says what is wrong
    asked = yes or (interactive and out.confirm(f"root {where} does not exist; create it?"))
    if not asked:
        raise UsageError(
            f"root {where} does not exist; nothing was changed",
            hint=f"create it with this apply: {rerun_with('--yes')}   "
            f"(or: mkdir -p {shlex.quote(str(where))})",
        )
    try:
        where.mkdir(parents=True)
    except OSError as exc:
        from trueup.errors import os_problem

        raise UsageError(f"root {where} cannot be created: {os_problem(exc)}") from None
    out.err.print(f"created root {where}", markup=False, highlight=False)


def ask_consent_here(
    plan: Plan,
    out: Output,
    *,
    typed: str | None,
    yes: bool,
    no_input: bool,
    noun: str = "target",
) -> Consent:
    """``ask_consent`` for a command typed at this process's stdin.

    Every applying command asks the same way: only when stdin is a terminal
    and ``--no-input`` is not given (``ask_consent`` never asks under
    ``--no-input`` anyway), and the hint on refusal is this command with --yes.
    """
    from trueup.cli.output import rerun_with
    from trueup.pipeline import ask_consent

    return ask_consent(
        plan,
        out,
        typed=typed,
        yes=yes,
        no_input=no_input,
        interactive=not no_input and sys.stdin.isatty(),
        noun=noun,
        with_yes=rerun_with("--yes"),
    )


def root_or_home(root: Path | None) -> Path:
    """``--root``, else the user's home: where a profile's targets live by default."""
    return root if root is not None else Path.home()


def run_app(app: click.Group) -> None:
    """Run ``app``. With --json, a mistyped option answers with an envelope too."""
    if "--json" not in sys.argv[1:]:
        app()
        return
    try:
        if "--help" in sys.argv[1:]:
            _help_envelope(app, sys.argv[1:])
            return
        code = app(standalone_mode=False)
    except click.ClickException as exc:
        # The command the mistake was made in, as click parsed it ("org plan").
        ctx = getattr(exc, "ctx", None)
        path = ctx.command_path.split()[1:] if ctx is not None else []
        Output(" ".join(path) or "trueup", json_mode=True).envelope(
            "error",
            exc.exit_code,
            exc.format_message(),
            {"hint": " ".join(["trueup", *path, "--help"])},
        )
        raise SystemExit(exc.exit_code) from None
    except click.exceptions.Abort:
        raise SystemExit(int(ExitCode.USAGE)) from None
    raise SystemExit(code if isinstance(code, int) else 0)


def _help_envelope(app: click.Group, args: list[str]) -> None:
    """``--help --json``: the help a person would read, as a versioned envelope."""
    import contextlib
    import io

    command: click.Command = app
    path: list[str] = []
    for arg in args:  # the command asked about: the subcommand names before anything else
        if not isinstance(command, click.Group):
            break
        asking = click.Context(command, resilient_parsing=True)
        _, sub, _ = command.resolve_command(asking, [arg])  # loads a lazy command
        if sub is None:
            break
        command = sub
        path.append(arg)
    rest = [arg for arg in args if arg != "--json"][len(path) :]
    text = io.StringIO()
    with contextlib.redirect_stdout(text), contextlib.suppress(click.exceptions.Exit):
        command.main(rest, " ".join(["trueup", *path]), standalone_mode=False)
    Output(" ".join(path) or "trueup", json_mode=True).envelope(
        "help", 0, command.get_short_help_str(limit=200), {"help": text.getvalue()}
    )
