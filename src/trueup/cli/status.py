"""``trueup status``: what the store knows, or a live check of one profile."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from trueup.cli.output import Output, visible
from trueup.errors import ExitCode
from trueup.execute.gates import locked_error, replan_command, target_command
from trueup.model import Action, ActionType, Outcome, outcome_of, plan_status
from trueup.redact import redact

if TYPE_CHECKING:
    from trueup.engine import Engine
    from trueup.state.store import RunInfo

_WORD = {
    ActionType.NO_OP: "converged",
    ActionType.DRIFT_CONFLICT: "drift",
    ActionType.HUMAN_ACTION: "needs a person",
    ActionType.BLOCKED: "blocked",
}


def show_status(out: Output, engine: Engine, file: Path | None, root: Path | None) -> int:
    if file is not None and root is not None:
        return _live(out, engine, file, root)
    return _recorded(out, engine)


def _live(out: Output, engine: Engine, file: Path, root: Path) -> int:
    prepared = engine.prepare(file, root)
    holder = engine.store.holder(prepared.target.key)
    if holder is not None:  # what is live is another run's half-way state
        raise locked_error(holder, prepared.target)
    plan = prepared.plan
    rows = [
        {
            "resource": a.resource_id,
            "kind": a.kind,
            "status": _WORD.get(a.type, "pending change"),
            "detail": a.summary,
            # A drifted folder's files, each added, removed or modified.
            **({"files": a.payload["changed"]} if "changed" in a.payload else {}),
        }
        for a in plan.actions
    ]
    word = plan_status(plan.actions)
    pending = sum(1 for a in plan.actions if a.type.applies)
    code = pending_exit_code(plan.actions)
    if out.json_mode:
        message = status_message(word, plan.actions, pending)
        out.envelope(word, code, message, {"resources": rows, "pending": pending})
        return int(code)
    from rich.markup import escape
    from rich.text import Text

    from trueup.cli.render import overwritable_drift, print_rows, render_diffs

    columns = ("resource", "kind", "status", "detail")
    print_rows(
        out.console,
        columns,
        [tuple(Text(visible(redact(str(row[c])))) for c in columns) for row in rows],
    )
    render_diffs(
        out.console, overwritable_drift(plan.actions), lambda a: engine.preview(prepared, a)
    )
    again = f"; next: {target_command('apply', 'profile', str(file), str(root))}" if pending else ""
    out.print(f"{word}; {pending} pending change(s){escape(again)}")
    return int(code)


def pending_exit_code(actions: tuple[Action, ...]) -> ExitCode:
    """A live status's exit code: its outcome's, and 3 while changes are pending.

    ``converged`` (0) would tell a script there is nothing to do; applying is
    a person's (or a timer's) next step, which is what 3 means.
    """
    outcome = outcome_of(actions)
    if plan_status(actions) == "changes-pending":
        return ExitCode.HUMAN_ACTION
    return outcome.exit_code


def status_message(word: str, actions: tuple[Action, ...], pending: int) -> str:
    """The envelope's one-line ``message``: never empty, and naming the drift first."""
    drift = [a for a in actions if a.type is ActionType.DRIFT_CONFLICT]
    if drift:
        first = drift[0]
        more = f" (and {len(drift) - 1} more)" if len(drift) > 1 else ""
        return f"drift: {first.resource_id}: {first.summary.removeprefix('drift: ')}{more}"
    human = [a for a in actions if a.type is ActionType.HUMAN_ACTION]
    if human:
        return f"needs a person: {human[0].resource_id}: {human[0].summary}"
    if pending:
        return f"{pending} pending change(s)"
    return word


# A target's last run that ended in a way a person must look at. Drift is not
# here: every plan refreshes the target's drift records, which say it now.
_LAST_RUN = {
    Outcome.FAILED.value: (Outcome.FAILED, "failed"),
    Outcome.INTERRUPTED.value: (Outcome.INTERRUPTED, "was stopped part-way"),
    "abandoned": (Outcome.INTERRUPTED, "was abandoned part-way"),
    Outcome.HUMAN_ACTION_REQUIRED.value: (Outcome.HUMAN_ACTION_REQUIRED, "needs a person"),
}
_WORST_FIRST = [Outcome.FAILED, Outcome.INTERRUPTED, Outcome.DRIFT, Outcome.HUMAN_ACTION_REQUIRED]


def last_run_outcome(value: str | None) -> Outcome | None:
    """The outcome a target's last run leaves for a person to look at, if any."""
    found = _LAST_RUN.get(str(value))
    return found[0] if found else None


def worst_of(found: set[Outcome | None]) -> Outcome:
    """What a person must look at first: a failed run before drift before the rest."""
    return next((o for o in _WORST_FIRST if o in found), Outcome.CONVERGED)


def replan(run: dict[str, Any]) -> str:
    """The command that shows where a target stands now."""
    target = run["target"]
    return replan_command(target["kind"], run.get("declaration") or "FILE", target["location"])


def _recorded(out: Output, engine: Engine) -> int:
    store = engine.store
    readable = engine.may_see
    # The JSON envelope's rows, rendered below as they are printed with --json.
    targets: list[dict[str, Any]] = []
    for key in filter(readable, store.targets()):
        latest = store.last_run(key)
        targets.append(
            {
                "target": key,
                "resources": len(store.applied(key)),
                "drift": store.drift(key),
                "last_run": latest.to_json() if latest else None,
            }
        )
    runs = [r for r in store.blocked_runs() if readable(r.target.key)]
    blocked = [r.to_json() for r in runs]
    found = {last_run_outcome(t["last_run"]["outcome"]) for t in targets if t["last_run"]}
    if any(t["drift"] for t in targets):
        found.add(Outcome.DRIFT)
    worst = worst_of(found)
    waiting = any(
        (t["last_run"] or {}).get("job")
        and (t["last_run"] or {}).get("status") in ("queued", "running")
        for t in targets
    )
    status = (
        "blocked"
        if blocked
        else "nothing-applied"  # no record of anything: "converged" would claim a check
        if not any(t["resources"] or t["drift"] or t["last_run"] for t in targets)
        else "queued"  # a worker will apply it: not converged yet, nothing to do either
        if waiting and worst is Outcome.CONVERGED
        else worst.value
    )
    code = ExitCode.CONFLICT if blocked else worst.exit_code
    if out.json_mode:
        message = _recorded_message(status, targets, runs)
        out.envelope(status, code, message, {"targets": targets, "blocked_runs": blocked})
        return int(code)
    from rich.markup import escape

    if status == "nothing-applied":
        out.print("nothing applied yet. Start with: trueup plan PROFILE --root DIR")
        return int(code)
    from rich.text import Text

    from trueup.cli.render import print_rows

    table = []
    for t in targets:
        last = t["last_run"] or {}
        table.append(
            (
                Text(visible(redact(t["target"]))),
                Text(str(t["resources"])),
                Text(str(len(t["drift"])), style="magenta" if t["drift"] else ""),
                Text(_when(last.get("started_at"))),
                Text(visible(str(last.get("outcome") or last.get("status") or "-"))),
            )
        )
    print_rows(out.console, ("target", "resources", "drift", "last run (UTC)", "outcome"), table)
    for t in targets:
        last = t["last_run"] or {}
        for item in t["drift"]:
            out.print(
                f"[magenta]drift[/] {escape(t['target'])} {escape(item['resource'])}: "
                f"{escape(item['summary'])}"
            )
        if t["drift"] and last.get("declaration"):  # the plan shows it, and how to decide
            out.print(f"  next: {escape(replan(last))}")
        if str(last.get("outcome")) in _LAST_RUN and not any(
            b["id"] == last["id"] for b in blocked
        ):
            what = _LAST_RUN[str(last["outcome"])][1]
            out.print(
                f"[yellow]last run[/] {last['id']} on {escape(t['target'])} {what}: "
                f"{escape(str(last.get('message') or ''))}\n  next: {escape(replan(last))}"
            )
    print_blocked(out, runs)
    out.print(f"status: {status}")
    return int(code)


def _when(stamp: object) -> str:
    """An ISO timestamp to the second, as a person reads it (``-`` for none)."""
    return str(stamp)[:19].replace("T", " ") if stamp else "-"


def _recorded_message(status: str, targets: list[dict[str, Any]], runs: Sequence[RunInfo]) -> str:
    """The envelope's ``message``: what a person must look at first, never empty."""
    if runs:
        return f"blocked: run {runs[0].id} holds {runs[0].target.key} ({runs[0].status})"
    drift = [(t["target"], item) for t in targets for item in t["drift"]]
    if drift:
        target, item = drift[0]
        more = f" (and {len(drift) - 1} more)" if len(drift) > 1 else ""
        summary = str(item["summary"]).removeprefix("drift: ")
        return f"drift: {target} {item['resource']}: {summary}{more}"
    return status


def print_blocked(out: Output, runs: Sequence[RunInfo]) -> None:
    """A line per blocked run: its state, and what to do next, which depends on it
    (wait for a live one, recover or abandon a dead one)."""
    from rich.markup import escape

    alive = {True: ", still running", False: ", process gone", None: ", other host"}
    for run in runs:
        # Whether its process lives matters only while it says it is running.
        state = run.status + (alive[run.holder_alive] if run.status == "running" else "")
        out.print(
            f"[red]blocked[/] run {run.id} on {escape(run.target.name)} ({state}); "
            f"next: {escape(locked_error(run, run.target).hint or '')}"
        )
