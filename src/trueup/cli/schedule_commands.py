"""``trueup schedule``: run trueup by itself, with the platform's own scheduler.

``set`` installs the files (schedules/native.py) through the pipeline, as the
generated profile of schedules/installer.py, then asks the running scheduler
to read them; ``status`` plans that profile again; ``remove`` applies it empty.
"""

from __future__ import annotations

import os
import shlex
import shutil
import sys
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from trueup.cli.command import group
from trueup.cli.common import (
    PATH,
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
from trueup.cli.output import Output
from trueup.errors import ExitCode, UsageError

if TYPE_CHECKING:
    from trueup.engine import Engine
    from trueup.schedules.installer import Installed, ScheduleFiles

schedule_app = group(
    "schedule", "Run trueup on a schedule: systemd timer, launchd agent or Task Scheduler task."
)

overwrite_all_option = click.option(
    "--overwrite", is_flag=True, help="Replace scheduler files edited by hand (drift)."
)


@schedule_app.command("set")
@click.argument("when", help="daily@HH:MM, weekly:DAY[,DAY]@HH:MM (Mon..Sun) or every:N[m|h].")
@click.option(
    "--profile",
    type=PATH,
    help="The profile the job applies; default: `trueup sync --apply` from the source "
    "this machine follows.",
)
@click.option("--timezone", help="An IANA timezone (systemd timers only).")
@root_option
@click.option(
    "--platform",
    help="linux (systemd), macos (launchd) or windows (Task Scheduler); default: this one.",
)
@overwrite_all_option
@yes_option
@no_input_option("for scripts")
@state_option
@json_option
def schedule_set(
    when: str,
    profile: Path | None,
    timezone: str | None,
    root: Path | None,
    platform: str | None,
    overwrite: bool,
    yes: bool,
    no_input: bool,
    state: str | None,
    json_out: bool,
) -> None:
    """Install (or change) the schedule that runs trueup with --no-input."""
    out = Output("schedule set", json_out)

    def body() -> int:
        from trueup.schedules.installer import Installed, ScheduleFiles, refuse_unknown_platform
        from trueup.schedules.native import native_files
        from trueup.schedules.spec import parse_schedule

        where = root_or_home(root).expanduser()
        system = platform or this_platform()
        refuse_unknown_platform(system)
        schedule = parse_schedule(when, timezone)
        engine = engine_for(state)
        argv = _job_command(profile, where, engine.settings.data)
        files = native_files(system, schedule, argv, _job_env())
        store = ScheduleFiles(engine.settings.data)
        installed = Installed(system, schedule.text, argv)
        return _install(out, engine, store, where, installed, files, overwrite, yes, no_input)

    run_command(out, body)


@schedule_app.command("status")
@root_option
@state_option
@json_option
def schedule_status(root: Path | None, state: str | None, json_out: bool) -> None:
    """not-installed, current, drifted (edited by hand) or disabled."""
    out = Output("schedule status", json_out)

    def body() -> int:
        from trueup.schedules.installer import ScheduleFiles

        engine = engine_for(state)
        found = status_here(engine, ScheduleFiles(engine.settings.data), root_or_home(root))
        message = found.state + (f": {found.installed.schedule}" if found.installed else "")
        fine = found.state in ("current", "not-installed")
        code = int(ExitCode.OK if fine else ExitCode.HUMAN_ACTION)
        out.report(message, found.to_json(), found.state, code)
        for reason in found.reasons:
            out.print(f"  {reason}")
        if not fine and found.installed:
            out.print(f"to put it back: trueup schedule set {found.installed.schedule} --overwrite")
        return code

    run_command(out, body)


@schedule_app.command("remove")
@root_option
@overwrite_all_option
@yes_option
@no_input_option("for scripts")
@state_option
@json_option
def schedule_remove(
    root: Path | None,
    overwrite: bool,
    yes: bool,
    no_input: bool,
    state: str | None,
    json_out: bool,
) -> None:
    """Remove the schedule's files (only if unmodified, unless --overwrite)."""
    out = Output("schedule remove", json_out)

    def body() -> int:
        from trueup.schedules.installer import ScheduleFiles

        engine = engine_for(state)
        store = ScheduleFiles(engine.settings.data)
        if store.installed() is None:
            out.report("no schedule is installed; nothing was changed", None, "not-installed")
            return 0
        where = root_or_home(root).expanduser()
        return _install(out, engine, store, where, None, [], overwrite, yes, no_input)

    run_command(out, body)


def this_platform() -> str:
    from trueup.kinds.tool import this_platform as platform_here

    return platform_here()


def status_here(engine: Engine, store: ScheduleFiles, root: Path) -> Any:
    """The schedule's state, from its profile planned again on ``root``."""
    from trueup.schedules.installer import status_of

    installed = store.installed()
    if installed is None or not store.profile.exists():
        return status_of(None, (), set(), {})
    prepared = engine.prepare(store.profile, root.expanduser())
    absent = {rid for rid, seen in prepared.observed.items() if seen.state == "absent"}
    targets = {rid: prepared.root / r.target for rid, r in prepared.resources.items()}
    return status_of(installed, prepared.plan.actions, absent, targets)


def _install(
    out: Output,
    engine: Engine,
    store: ScheduleFiles,
    where: Path,
    installed: Installed | None,
    files: list[Any],
    overwrite: bool,
    yes: bool,
    no_input: bool,
) -> int:
    """Apply the profile ``files`` make (none: the schedule's removal), then tell the
    running scheduler."""
    from trueup.cli.render import plan_json, render_plan, render_result

    if not where.is_dir():
        raise UsageError(f"root {where} is not a folder", hint=f"create it: mkdir -p {where}")
    pending = store.stage(files)
    try:
        pipeline = engine.pipeline(where)
        force = _all_ids(engine, pending, where) if overwrite else ()
        prepared, expected = pipeline.prepare_apply(pending, force, None)
        if not out.json_mode:
            render_plan(out.console, expected, lambda a: engine.preview(prepared, a))
        consent = ask_consent_here(expected, out, typed=None, yes=yes, no_input=no_input)
        if consent.declined:
            out.report("nothing was changed", {"plan": plan_json(expected)}, "declined")
            return 0
        result = engine.apply(prepared, expected, confirmation=None, paused=consent.paused)
    except BaseException:
        store.discard()
        raise
    from trueup.model import Outcome, outcome_of

    outcome = result.outcome if result is not None else outcome_of(expected.actions)
    if outcome is not Outcome.CONVERGED:
        store.discard()
        if result is not None and not out.json_mode:
            render_result(out.console, result)
        message = result.message if result is not None and result.message else outcome.value
        if outcome is Outcome.DRIFT:
            message += (
                "; scheduler files were edited by hand: rerun with --overwrite to replace them"
            )
        failed = {"plan": plan_json(expected), "run": result.to_json() if result else None}
        if out.json_mode:
            out.envelope(outcome.value, outcome.exit_code, message, failed)
        else:
            out.print(message)
        return int(outcome.exit_code)
    previous = store.installed()
    store.commit(installed)
    steps = _tell_scheduler(installed or previous, where, removing=installed is None)
    data = {
        "schedule": asdict(installed) if installed else None,
        "run": result.to_json() if result else None,
        "scheduler": steps,
    }
    message = (
        f"schedule {installed.schedule} installed for {installed.platform}"
        if installed
        else "schedule removed"
    )
    out.report(message, data)
    for step in steps:
        out.print(f"  {step['command']}: {step['result']}")
    return 0


def _all_ids(engine: Engine, pending: Path, where: Path) -> list[str]:
    """Every id of the schedule's profile: declared now, or applied before."""
    prepared = engine.prepare(pending, where)
    return sorted(set(prepared.resources) | set(prepared.applied))


def _tell_scheduler(
    installed: Installed | None, where: Path, removing: bool
) -> list[dict[str, str]]:
    """Ask the running scheduler to read the files: best effort, each step reported.

    Only on the platform the files are for, and where its tool is: otherwise the
    step is reported with the command to run there.
    """
    from trueup.process import locate, run
    from trueup.schedules.native import activation, deactivation, native_paths

    if installed is None:
        return []
    paths = [str(where / p) for p in native_paths(installed.platform)]
    commands = (deactivation if removing else activation)(installed.platform, paths)
    steps = []
    for argv in commands:
        shown = shlex.join(argv)
        if os.path.realpath(where) != os.path.realpath(Path.home()):
            reason = f"not run: the files are under {where}, not in your home"
            steps.append({"command": shown, "result": reason})
            continue
        if installed.platform != this_platform() or locate(argv[0]) is None:
            steps.append(
                {
                    "command": shown,
                    "result": f"not run here: run it on the {installed.platform} machine",
                }
            )
            continue
        done = run(argv, timeout=30, max_output=4096)
        result = (
            "done"
            if done.ok
            else f"failed ({done.problem or f'exit {done.exit_code}'}): run it yourself"
        )
        steps.append({"command": shown, "result": result})
    return steps


def _job_command(profile: Path | None, root: Path, data: Path) -> list[str]:
    """What the scheduler runs: this trueup, applying ``profile`` on ``root`` with no
    input; without one, syncing from the source this machine follows."""
    from trueup.source.follower import FollowerHome

    where = ["--root", os.path.realpath(root), "--no-input"]
    if profile is not None:
        if not profile.is_file():
            raise UsageError(f"--profile {profile}: no such file")
        return [_trueup_executable(), "apply", os.path.abspath(profile), *where]
    if not FollowerHome(data).enrolled():
        raise UsageError(
            "this machine follows no source, so there is nothing to sync: give --profile FILE, "
            "the profile the job applies",
            hint="e.g. trueup schedule set daily@09:00 --profile ~/setup/workstation.toml",
        )
    return [_trueup_executable(), "sync", "--apply", *where]


def _trueup_executable() -> str:
    here = os.path.abspath(sys.argv[0])
    if os.path.basename(here).startswith("trueup") and os.access(here, os.X_OK):
        return here
    return shutil.which("trueup") or here


def _job_env() -> dict[str, str]:
    """The settings the job needs to find the same state: the data folder, if chosen.

    ``TRUEUP_STATE`` is not copied: its URL may hold a password, and the files a
    scheduler reads are no place for one.
    """
    data = os.environ.get("TRUEUP_DATA")
    return {"TRUEUP_DATA": os.path.abspath(data)} if data else {}
