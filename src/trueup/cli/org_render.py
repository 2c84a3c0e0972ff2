"""Human renderings of org plans, apply results and status.

An org step is shown with what it does (create, update, delete, re-key...),
its flags (destroys, migrates), and for updates and drift the fields with
their live and declared values side by side. Unmanaged items are listed
after the steps: shown, never changed.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Any

from trueup.cli.render import MAX_ROWS, action_row, overwrite_command, print_columns
from trueup.errors import ExitCode
from trueup.model import ActionType, Outcome, Plan, plan_status
from trueup.redact import redact
from trueup.targets.org_records import unmet

if TYPE_CHECKING:
    from rich.console import Console
    from rich.text import Text

    from trueup.cli.output import Output
    from trueup.model import Action
    from trueup.org.engine import OrgApplied, OrgEngine, OrgPrepared

_STEP = {
    "create": "green",
    "update": "yellow",
    "delete": "red",
    "forget": "dim",
    "set-key": "yellow",
    "rotate-secret": "yellow",
}


def _text(value: Any) -> str:
    if value is None:
        return "—"
    if isinstance(value, str):
        return value
    return json.dumps(value, sort_keys=True, ensure_ascii=False)


def _step(action: Action) -> tuple[str, str]:
    if action.type is ActionType.DRIFT_CONFLICT:
        return "drift", "bold magenta"
    if action.type is ActionType.HUMAN_ACTION:
        return "needs a person", "yellow"
    if action.type is ActionType.NO_OP:
        return "none", "dim"
    op = str(action.payload.get("op", action.type.value))
    return op, _STEP.get(op, "cyan")


def org_summary(plan: Plan, unmanaged: int) -> str:
    counts = Counter(_step(a)[0] for a in plan.actions)
    parts = [f"{n} {word}" for word, n in sorted(counts.items())]
    return ", ".join(parts or ["nothing declared"]) + f"; {unmanaged} unmanaged"


def render_org_plan(
    console: Console,
    prepared: OrgPrepared,
    plan: Plan,
    show_noop: bool,
    confirmed: bool = False,
) -> None:
    """The org's plan; ``confirmed``: the name was typed already, so no hint to type it."""
    from rich.markup import escape
    from rich.text import Text

    target = plan.target
    console.print(
        f"[bold]Plan[/] for {escape(target.name)} (org {escape(target.id)}, "
        f"{escape(target.location)})  [dim]{plan.digest[:16]}[/]"
    )
    shown = [a for a in plan.actions if show_noop or a.type is not ActionType.NO_OP]
    rows = [action_row(a, *_step(a)) for a in shown[:MAX_ROWS]]
    print_columns(console, ("resource", "kind", "step", "what"), rows)
    if len(shown) > MAX_ROWS:
        console.print(f"[dim]… {len(shown) - MAX_ROWS} more steps (use --json for all)[/]")
    _render_fields(console, plan)
    if prepared.unmanaged:
        console.print(
            f"\n[bold]Unmanaged[/] ({len(prepared.unmanaged)}): live in the org's scope, not "
            "declared; shown, never changed"
        )
        for item in prepared.unmanaged[:MAX_ROWS]:
            line = Text("  ")
            line.append(item.provider, style="cyan")
            line.append("  " + redact(item.description))
            console.print(line)
    console.print(Text("\n" + org_summary(plan, len(prepared.unmanaged))))
    drifted = [a.resource_id for a in plan.by_type(ActionType.DRIFT_CONFLICT)]
    if drifted:
        console.print(
            "[magenta]Drift is never overwritten: to keep the live value, declare it; to take "
            f"the declared one, run: {escape(overwrite_command(plan, drifted))}[/]"
        )
    risky = [a for a in plan.actions if a.destroys or a.migrates]
    if risky and not confirmed:
        console.print(
            f"[red]{len(risky)} step(s) destroy or migrate data: apply needs "
            f"--confirm {escape(repr(target.name))} (the org's name, typed exactly).[/]"
        )


def _render_fields(console: Console, plan: Plan) -> None:
    """Live and declared values, side by side, for every update and drift."""
    from rich.table import Table
    from rich.text import Text

    detailed = [
        a
        for a in plan.actions
        if a.payload.get("live") is not None
        and isinstance(a.payload.get("declared"), dict)
        and a.type in (ActionType.DRIFT_CONFLICT, ActionType.WRITE_CONFIG)
    ]
    for action in detailed[:MAX_ROWS]:
        live, declared = action.payload["live"], action.payload["declared"]
        fields = action.payload.get("fields") or sorted(
            k for k in set(live) | set(declared) if live.get(k) != declared.get(k)
        )
        label = "drift" if action.type is ActionType.DRIFT_CONFLICT else "change"
        console.print(Text("\n" + action.resource_id, style="bold"), Text(f"({label})"))
        table = Table(box=None, show_header=True, header_style="bold", pad_edge=False)
        table.add_column("field", overflow="fold")
        table.add_column("live", style="red", overflow="fold")
        table.add_column("declared", style="green", overflow="fold")
        for name in fields:
            table.add_row(
                Text(name),
                Text(redact(_text(live.get(name)))),
                Text(redact(_text(declared.get(name)))),
            )
        console.print(table)


def render_org_result(console: Console, result: OrgApplied) -> None:
    if result.run is not None:
        from trueup.cli.render import render_result

        render_result(console, result.run)
    else:
        console.print(f"nothing to change: {result.outcome.value}")
    for field in result.state.failed_fields[:MAX_ROWS]:
        console.print(_line("waiting", "yellow", unmet(field)))
    if result.outcome is Outcome.FAILED:
        console.print("next: fix the cause, then apply again: completed steps are not repeated")


def _line(label: str, style: str, text: str) -> Text:
    """A labelled line; ids like ``dns:…`` are never read as markup or emoji codes."""
    from rich.text import Text

    line = Text(label + " ", style=style)
    line.append(redact(text), style="default")
    return line


def show_live_status(out: Output, engine: OrgEngine, file: Path) -> int:
    from rich.markup import escape

    from trueup.cli.status import pending_exit_code, status_message
    from trueup.org.state import load_state

    prepared = engine.prepare(file)
    plan = prepared.plan
    recorded = load_state(engine.store, prepared.target.key)
    pending = len(plan.changes)
    rows = [
        {"resource": a.resource_id, "kind": a.kind, "step": _step(a)[0], "detail": a.summary}
        for a in plan.actions
    ]
    data = {
        "resources": rows,
        "pending": pending,
        "unmanaged": [u.to_json() for u in prepared.unmanaged],
        "state": recorded.to_json() if recorded else None,
    }
    status = plan_status(plan.actions)  # "converged" only when nothing is left to apply
    code = pending_exit_code(plan.actions)  # as `trueup status`: 3 while changes are pending
    if out.json_mode:
        out.envelope(status, code, status_message(status, plan.actions, pending), data)
        return int(code)
    render_org_plan(out.console, prepared, plan, show_noop=False)
    if recorded is not None and recorded.last_applied:
        out.print(f"last applied {escape(recorded.last_applied['at'])}")
    out.print(f"{status}; {pending} pending change(s)")
    return int(code)


def show_recorded_status(out: Output, engine: OrgEngine) -> int:
    from rich.markup import escape
    from rich.table import Table

    from trueup.cli.status import last_run_outcome, print_blocked, worst_of

    states = engine.status()
    runs = engine.blocked_runs()
    blocked = [r.to_json() for r in runs]
    # The org's state, and its last run (one that failed on a transport error
    # never got to update the state): as `trueup status` reads them.
    found = {last_run_outcome(s.outcome) for _, s in states}
    for key, _ in states:
        run = engine.store.last_run(key)
        found.add(last_run_outcome(run.outcome) if run else None)
    if any(s.failed_fields for _, s in states):
        found.add(Outcome.HUMAN_ACTION_REQUIRED)
    if any(engine.store.drift(key) for key, _ in states):
        found.add(Outcome.DRIFT)
    code = ExitCode.CONFLICT if blocked else worst_of(found).exit_code  # as `trueup status`
    if out.json_mode:
        orgs = [
            {"target": key, **state.to_json(), "drift": engine.store.drift(key)}
            for key, state in states
        ]
        out.envelope(
            "ok" if code == ExitCode.OK else "attention",
            code,
            "",
            {"orgs": orgs, "blocked_runs": blocked},
        )
        return int(code)
    if not states and not blocked:
        out.print("no org applied yet. Start with: trueup org plan ORG.toml")
        return int(code)
    table = Table(box=None, header_style="bold")
    for column in ("org", "last applied", "outcome", "waiting", "drift"):
        table.add_column(column, overflow="fold")  # ids and keys whole, never cut short
    for key, state in states:
        table.add_row(
            escape(key),
            escape(state.last_applied["at"] if state.last_applied else "-"),
            escape(state.outcome or "-"),
            str(len(state.failed_fields)),
            str(len(engine.store.drift(key))),
        )
    out.print(table)
    for _, state in states:
        for field in state.failed_fields:
            out.print(_line("waiting", "yellow", f"{state.org_id}: {unmet(field)}"))
    print_blocked(out, runs)
    return int(code)
