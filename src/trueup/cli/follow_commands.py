"""``trueup follow`` and ``trueup sync``: this machine follows a source.

``sync`` on an unchanged source is one HTTPS request, so this module keeps
the engine, rich and cryptography out of that path: they load once there is
something to plan.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from trueup.cli.common import (
    ask_consent_here,
    engine_for,
    json_option,
    no_input_option,
    root_option,
    root_or_home,
    run_command,
    state_option,
    yes_option,
)
from trueup.cli.output import Output, rerun_with
from trueup.cli.unchanged_sync import report_unchanged

if TYPE_CHECKING:
    from trueup.engine import Engine
    from trueup.source.sync import Fetched, FollowerSync


@click.command("follow")
@click.argument("invitation", help="The invitation `trueup source invite` printed.")
@click.option("--name", required=True, help="This machine's name at the source.")
@json_option
def follow(invitation: str, name: str, json_out: bool) -> None:
    """Enroll with a source: pin its certificate and signing key, keep the credential."""
    out = Output("follow", json_out)

    def body() -> int:
        from dataclasses import asdict

        from trueup.settings import Settings
        from trueup.source.enrollment import follow as enroll
        from trueup.source.follower import FollowerHome

        home = FollowerHome(Settings.from_env().data)
        membership = enroll(home, invitation, name)
        where = "the OS keyring" if membership.credential_in == "keyring" else "a 0600 file"
        out.report(
            f"following {membership.endpoint} as {membership.name} "
            f"(groups: {', '.join(membership.groups) or 'none'}); credential kept in {where}"
            "\nnext: trueup sync   (then: trueup sync --apply)",
            asdict(membership),
            "enrolled",
        )
        return 0

    run_command(out, body)


@click.command("sync")
@click.option("--apply", is_flag=True, help="Apply the plan (asks first).")
@yes_option
@no_input_option()
@click.option(
    "--recheck", is_flag=True, help="Plan even when the source is unchanged since it converged."
)
@root_option
@state_option
@json_option
def sync(
    apply: bool,
    yes: bool,
    no_input: bool,
    recheck: bool,
    root: Path | None,
    state: str | None,
    json_out: bool,
) -> None:
    """Fetch the newest revision for this machine, verify it, plan it, and with --apply apply it."""
    out = Output("sync", json_out)

    def body() -> int:
        from trueup.settings import Settings
        from trueup.source.sync import FollowerSync

        where = root_or_home(root)
        syncer = FollowerSync(Settings.from_env(state=state), where)
        try:
            fetched = syncer.fetch(recheck)
            if fetched is None:
                report_unchanged(out, syncer.known())
                return 0
            engine = engine_for(state)
            if not apply:
                return _plan(out, engine, syncer, fetched)
            from trueup.cli.common import missing_root

            missing_root(out, where, yes, sys.stdin.isatty() and not no_input)
            return _apply(out, engine, syncer, fetched, yes, no_input)
        finally:
            syncer.close()

    run_command(out, body)


def _fetched_json(fetched: Fetched) -> dict[str, Any]:
    return {
        "revision": fetched.revision.id,
        "seq": fetched.revision.seq,
        "resources": len(fetched.revision.entries),
        "blobs_downloaded": fetched.blobs,
        "received": fetched.received,
    }


def _plan(out: Output, engine: Engine, syncer: FollowerSync, fetched: Fetched) -> int:
    from trueup.cli.render import render_plan
    from trueup.model import outcome_of, plan_status
    from trueup.pipeline import Pipeline

    pipeline = Pipeline(engine, syncer.target(engine, fetched))
    prepared = pipeline.plan(fetched.profile)
    plan = prepared.plan
    syncer.report(fetched, plan, None)
    code = outcome_of(plan.actions).exit_code
    word = plan_status(plan.actions)
    data = {**_fetched_json(fetched), "plan": plan.body(), "report": syncer.report_problem}
    if out.json_mode:
        out.envelope(word, code, f"revision {fetched.revision.seq}: {word}", data)
        return int(code)
    _header(out, fetched)
    render_plan(out.console, plan, lambda a: engine.preview(prepared, a))
    if plan.changes:
        out.print(f"apply it with: {rerun_with('--apply')}")
    _report_note(out, syncer)
    return int(code)


def _apply(
    out: Output, engine: Engine, syncer: FollowerSync, fetched: Fetched, yes: bool, no_input: bool
) -> int:
    from trueup.cli.render import render_plan, render_result
    from trueup.model import outcome_of
    from trueup.pipeline import Pipeline

    pipeline = Pipeline(engine, syncer.target(engine, fetched))
    prepared, expected = pipeline.prepare_apply(fetched.profile)
    engine.refuse_if_locked(prepared.target, expected.digest)
    if not out.json_mode:
        _header(out, fetched)
        render_plan(out.console, expected, lambda a: engine.preview(prepared, a))
    consent = ask_consent_here(expected, out, typed=None, yes=yes, no_input=no_input)
    if consent.declined:
        syncer.report(fetched, expected, None)
        out.report("nothing was changed", _fetched_json(fetched), "declined")
        return 0
    result = pipeline.apply(prepared, expected, consent.typed, consent.paused)
    outcome = result.outcome if result is not None else outcome_of(expected.actions)
    data = {
        **_fetched_json(fetched),
        "run": result.to_json() if result else None,
        "report": syncer.report_problem,
    }
    if out.json_mode:
        message = result.message if result else "nothing to change"
        out.envelope(outcome.value, outcome.exit_code, message or outcome.value, data)
    elif result is None:
        out.print(f"nothing to change: {outcome.value}")
    else:
        render_result(out.console, result)
    _report_note(out, syncer)
    return int(outcome.exit_code)


def _header(out: Output, fetched: Fetched) -> None:
    out.print(
        f"revision {fetched.revision.seq} ({fetched.revision.id}): "
        f"{len(fetched.revision.entries)} resources for this machine, "
        f"{fetched.blobs} blobs downloaded"
    )


def _report_note(out: Output, syncer: FollowerSync) -> None:
    if syncer.report_problem:
        out.err.print(
            f"note: the outcome was not reported to the source ({syncer.report_problem}); "
            "the next sync reports again",
            markup=False,
        )
