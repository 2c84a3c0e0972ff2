"""``trueup``: the command line. Thin by design: parse, call the engine, render."""

import os
import shlex
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

from trueup import __version__
from trueup.cli.common import (
    PATH,
    ask_consent_here,
    engine_for,
    json_option,
    max_bytes_option,
    missing_root,
    no_input_option,
    out_option,
    overwrite_option,
    queue_option,
    root_option,
    root_or_home,
    run_app,
    run_command,
    show_unchanged_option,
    state_option,
    yes_option,
)
from trueup.cli.output import Output, confirmation_hint
from trueup.cli.registry import LazyGroup
from trueup.errors import ExitCode

if TYPE_CHECKING:
    from trueup.engine import Engine
    from trueup.execute.executor import RunResult
    from trueup.model import Plan
    from trueup.targets.profile import Prepared

#: The exit codes, as the README lists them: scripts branch on them.
EXIT_CODES = "\n".join(
    [
        "\b",  # click: print these lines as they are, not rewrapped into a paragraph
        "Exit codes:",
        "  0  converged, success",
        "  1  internal error (a bug in trueup)",
        "  2  usage or configuration (nothing was changed)",
        "  3  a person must act (status: changes pending; a name to type)",
        "  4  drift, conflict, stale plan, or the target is locked by another run",
        "  5  not authorised",
        "  6  transport: a provider or the state store cannot be reached, opened or used",
        "  7  apply or verification failed, or the run was interrupted (trueup recover)",
    ]
)


def _version(ctx: click.Context, _param: click.Parameter, value: bool) -> None:
    """Show the version; with --json as every command's envelope, for scripts that check it.

    ``--json`` is eager and this is not, so click has read it before this
    callback runs, in whichever order the two were typed.
    """
    if not value:
        return
    message = f"trueup {__version__}"
    if ctx.params.get("json_out"):
        Output("trueup", json_mode=True).report(message, {"version": __version__})
    else:
        print(message)  # plain print: the quickest command need not load rich
    ctx.exit()


@click.group(
    "trueup",
    cls=LazyGroup,  # the command groups of cli/registry.py, imported when they run
    epilog=EXIT_CODES,
    no_args_is_help=True,
    context_settings={"max_content_width": 100},  # wide terminals: up to 100 columns, not 80
)
@click.option(
    "--version", is_flag=True, expose_value=False, callback=_version, help="Show the version."
)
@click.option(
    "--json",
    "json_out",
    is_flag=True,
    is_eager=True,
    help="With --version: print a versioned JSON envelope.",
)
@click.option(
    "--actor",
    help="Act as this service identity (service:NAME), e.g. in CI; default: your OS user.",
)
def app(json_out: bool, actor: str | None) -> None:
    """Make reality match a declaration, safely: plan, apply behind gates, verify, record."""
    if json_out:  # accepted here for --version alone; a command would silently ignore it
        raise click.UsageError("--json goes after the command, e.g. trueup status --json")
    if actor:
        os.environ["TRUEUP_ACTOR"] = actor


@app.command()
@click.argument("file", help="Profile file (TOML, JSON or YAML).", type=PATH)
@root_option
@out_option
@overwrite_option
@show_unchanged_option
@state_option
@max_bytes_option
@json_option
def plan(
    file: Path,
    root: Path | None,
    out_file: Path | None,
    overwrite: tuple[str, ...],
    show_unchanged: bool,
    state: str | None,
    max_file_bytes: int | None,
    json_out: bool,
) -> None:
    """Show what would change, as a coloured diff. Changes nothing."""
    out = Output("plan", json_out)

    def body() -> int:
        from rich.markup import escape

        from trueup.cli.render import plan_json, render_plan
        from trueup.cli.status import status_message
        from trueup.execute.gates import locked_error
        from trueup.model import outcome_of, plan_status

        engine = engine_for(state, max_file_bytes)
        prepared = engine.plan(file, root_or_home(root), overwrite or ())
        the_plan = prepared.plan
        if out_file is not None:
            engine.save_plan(the_plan, out_file)
        outcome = outcome_of(the_plan.actions)
        holder = engine.store.holder(prepared.target.key)
        blocked = locked_error(holder, prepared.target) if holder is not None else None
        # A plan is no run, but one that cannot be applied yet says so in its code.
        code = ExitCode.CONFLICT if blocked is not None else outcome.exit_code
        if json_out:
            data = plan_json(the_plan)
            data["blocked"] = (
                {"message": blocked.message, "hint": blocked.hint} if blocked else None
            )
            word = plan_status(the_plan.actions)
            message = status_message(word, the_plan.actions, len(the_plan.changes))
            if blocked is not None:
                message = f"{blocked.message}; {message}"
            out.envelope(word, code, message, data)
        else:
            render_plan(
                out.console, the_plan, lambda a: engine.preview(prepared, a), show_unchanged
            )
            if blocked is not None:  # a plan is no run, but it cannot be applied yet
                why = f"{blocked.message}; {blocked.hint or ''}"
                out.print(f"[yellow]note:[/] {escape(why)}")
            if engine.store.read_only:
                out.print(
                    "[yellow]note:[/] the state store is read-only: this plan was not recorded "
                    "(stat cache, drift for status, audit), and apply cannot run until it "
                    "is writable"
                )
            if out_file is not None:
                from trueup.execute.gates import needs_confirmation

                typed = ["--confirm", the_plan.target.name]
                typed = typed if needs_confirmation(the_plan.actions) else []
                again = shlex.join(["trueup", "apply", str(out_file), *typed])
                out.print(escape(f"saved to {out_file}; apply it with: {again}"))
        return int(code)

    run_command(out, body)


@app.command()
@click.argument("file", help="Profile file, or a plan saved with plan -o.", type=PATH)
@root_option
@yes_option
@no_input_option()
@overwrite_option
@click.option(
    "--confirm",
    help="The target's name, typed exactly: needed for steps that destroy or migrate data.",
)
@queue_option
@state_option
@max_bytes_option
@json_option
def apply(
    file: Path,
    root: Path | None,
    yes: bool,
    no_input: bool,
    overwrite: tuple[str, ...],
    confirm: str | None,
    queue: bool,
    state: str | None,
    max_file_bytes: int | None,
    json_out: bool,
) -> None:
    """Show the plan, ask, apply it under the lock, verify every change, record it."""
    out = Output("apply", json_out)

    def body() -> int:
        from trueup.cli.render import plan_json, render_plan, render_result
        from trueup.model import outcome_of
        from trueup.pipeline import open_saved

        engine = engine_for(state, max_file_bytes)
        saved = open_saved(engine, file, "profile", root, overwrite or ())
        where = Path(saved.target.location) if saved is not None else root_or_home(root)
        missing_root(out, where, yes, sys.stdin.isatty() and not no_input)
        pipeline = engine.pipeline(where)
        prepared, expected = pipeline.prepare_apply(file, overwrite or (), saved)
        engine.refuse_if_locked(prepared.target, prepared.plan.digest)
        if not json_out:
            render_plan(
                out.console,
                expected,
                lambda a: engine.preview(prepared, a),
                confirmed=confirm is not None,
            )
        if not expected.changes:
            pipeline.apply(prepared, expected)
            outcome = outcome_of(expected.actions)
            if json_out:
                out.envelope(
                    outcome.value,
                    outcome.exit_code,
                    "nothing to change",
                    {"plan": plan_json(expected), "run": None},
                )
            else:
                out.print(f"nothing to change: {outcome.value}")
            return int(outcome.exit_code)
        consent = ask_consent_here(expected, out, typed=confirm, yes=yes, no_input=no_input)
        typed, paused = consent.typed, consent.paused
        if consent.declined:
            out.report(
                "nothing was changed", {"plan": plan_json(expected), "run": None}, "declined"
            )
            return int(ExitCode.OK)
        with confirmation_hint(expected.target.name, no_input and typed is None):
            if queue:
                from trueup.execute.queued_apply import enqueue_apply

                run_id = enqueue_apply(engine, prepared, typed)
                message = f"queued as run {run_id}; a worker applies it (trueup worker)"
                out.report(message, {"plan": plan_json(expected), "run": run_id}, "queued")
                return int(ExitCode.OK)
            result = _apply_with_progress(out, engine, prepared, expected, typed, paused)
        assert result is not None  # the plan changes something: a run did it

        def show() -> None:
            if json_out:
                data = {"plan": plan_json(expected), "run": result.to_json()}
                out.envelope(result.outcome.value, result.outcome.exit_code, result.message, data)
            else:
                render_result(out.console, result)

        return out.finished(result.outcome.value, int(result.outcome.exit_code), show)

    run_command(out, body)


def _apply_with_progress(
    out: Output,
    engine: "Engine",
    prepared: "Prepared",
    expected: "Plan",
    typed: str | None,
    paused: bool,
) -> "RunResult | None":
    total = len(expected.changes)
    if out.json_mode or total <= 40 or not out.console.is_terminal:
        return engine.apply(prepared, expected, confirmation=typed, paused=paused)
    from rich.progress import Progress

    with Progress(console=out.console, transient=True) as progress:
        task = progress.add_task("applying", total=total)
        return engine.apply(
            prepared,
            expected,
            lambda n: progress.advance(task, n),
            confirmation=typed,
            paused=paused,
        )


@app.command()
@click.argument(
    "file",
    help="Check this profile live (otherwise: what the state store knows).",
    type=PATH,
    required=False,
)
@root_option
@state_option
@json_option
def status(file: Path | None, root: Path | None, state: str | None, json_out: bool) -> None:
    """Converged? Drifted? What needs a person? What is blocked?"""
    out = Output("status", json_out)

    def body() -> int:
        from trueup.cli.status import show_status

        return show_status(out, engine_for(state), file, root_or_home(root) if file else None)

    run_command(out, body)


@app.command()
@click.argument("run_id", help="The unfinished run (default: the only one).", required=False)
@state_option
@json_option
def recover(run_id: str | None, state: str | None, json_out: bool) -> None:
    """Finish an interrupted or crashed run: restore what was in flight, redo, verify."""
    out = Output("recover", json_out)

    def body() -> int:
        from trueup.cli.render import render_result

        result = engine_for(state).recover(run_id)

        def show() -> None:
            if json_out:
                out.envelope(
                    result.outcome.value, result.outcome.exit_code, result.message, result.to_json()
                )
            else:
                render_result(out.console, result)

        return out.finished(result.outcome.value, int(result.outcome.exit_code), show)

    run_command(out, body)


@app.command()
@click.argument("run_id", help="The unfinished run (default: the only one).", required=False)
@state_option
@json_option
def abandon(run_id: str | None, state: str | None, json_out: bool) -> None:
    """Release an unfinished run's lock and leave every target exactly as it is now."""
    out = Output("abandon", json_out)

    def body() -> int:
        from trueup.cli.status import replan

        run = engine_for(state).abandon(run_id)
        shown = run.to_json()
        following = replan(shown)
        if json_out:
            out.envelope("abandoned", 0, f"run {run.id} abandoned", {**shown, "hint": following})
        else:
            out.print(
                f"run {run.id} abandoned; targets left as they are. Next, see where they "
                f"stand: {following}"
            )
        return 0

    run_command(out, body)


@app.command()
@click.argument(
    "what", help="Which schema: profile, org or doctor (its --json).", default="profile"
)
@json_option
def schema(what: str, json_out: bool) -> None:
    """Print the JSON Schema of a declaration file (for editors: the schema itself)."""
    out = Output("schema", json_out)

    def body() -> int:
        import json

        from trueup.declare.schema import schema_for

        document = schema_for(what)
        if json_out:
            out.envelope("ok", 0, f"JSON Schema of a {what} file", document)
        else:
            print(json.dumps(document, indent=2, sort_keys=True))
        return 0

    run_command(out, body)


def run() -> None:
    """The ``trueup`` command. With --json, a mistyped option answers with an envelope too."""
    run_app(app)
