"""Human renderings of plans, run results and status, made for people."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from trueup.cli.output import visible
from trueup.model import Action, ActionType, Outcome, Plan
from trueup.redact import redact

if TYPE_CHECKING:
    from rich.console import Console, RenderableType
    from rich.text import Text

    from trueup.execute.executor import RunResult

_STYLE = {
    ActionType.NO_OP: "dim",
    ActionType.WRITE_FILE: "green",
    ActionType.WRITE_CONFIG: "green",
    ActionType.MIRROR_DIRECTORY: "green",
    ActionType.INSTALL_TOOL: "green",
    ActionType.AGENT_TASK: "green",
    ActionType.REMOVE_RESOURCE: "red",
    ActionType.VERIFY_ONLY: "cyan",
    ActionType.HUMAN_ACTION: "yellow",
    ActionType.DRIFT_CONFLICT: "bold magenta",
    ActionType.BLOCKED: "yellow",
}
_OUTCOME_STYLE = {
    Outcome.CONVERGED: "bold green",
    Outcome.HUMAN_ACTION_REQUIRED: "bold yellow",
    Outcome.DRIFT: "bold magenta",
    Outcome.FAILED: "bold red",
    Outcome.INTERRUPTED: "bold red",
}
MAX_ROWS = 100
# Beyond this many lines, diffs stop helping a reviewer (who is better served by
# --json) and start costing more than the apply they precede.
MAX_DIFF_LINES = 400


def diff_text(diff: str) -> RenderableType:
    """A unified diff coloured line by line (rich honours NO_COLOR)."""
    from rich.text import Text

    text = Text()
    for line in visible(redact(diff)).splitlines(keepends=True):
        style = (
            "bold"
            if line.startswith(("+++", "---"))
            else "green"
            if line.startswith("+")
            else "red"
            if line.startswith("-")
            else "cyan"
            if line.startswith("@@")
            else ""
        )
        text.append(line, style=style)
    return text


def print_columns(console: Console, header: Sequence[str], rows: Sequence[Sequence[Text]]) -> None:
    """Rows in aligned columns under a bold header, like a box-less rich Table.

    Built as one Text: a Table measures and wraps every cell, which is slow
    for the hundred rows an apply of 10,000 files shows (bench/README.md).
    The last column is not padded, and a long line is left to the terminal.
    """
    from rich.cells import cell_len
    from rich.text import Text

    if not rows:
        return
    widths = [len(name) for name in header[:-1]]
    for row in rows:
        for i, cell in enumerate(row[:-1]):
            widths[i] = max(widths[i], cell_len(cell.plain))
    text = Text()
    for i, name in enumerate(header):
        text.append(name, style="bold")
        text.append(" " * (widths[i] - len(name) + 2) if i < len(widths) else "\n")
    for row in rows:
        for i, cell in enumerate(row):
            text.append_text(cell)
            text.append(" " * (widths[i] - cell_len(cell.plain) + 2) if i < len(widths) else "\n")
    console.print(text, end="", soft_wrap=True)


def print_rows(console: Console, header: Sequence[str], rows: Sequence[Sequence[Text]]) -> None:
    """Rows as aligned columns when they fit the terminal, else as a list.

    No cell is ever wrapped inside a column: where the columns would not fit
    (an 80-column terminal, long ids), each row becomes its first cell on a
    line of its own, then the other cells, labelled and indented, one a line.
    """
    from rich.cells import cell_len
    from rich.text import Text

    if not rows:
        return
    widths = [max([len(h), *(cell_len(r[i].plain) for r in rows)]) for i, h in enumerate(header)]
    if sum(widths) + 2 * (len(widths) - 1) <= console.width:
        print_columns(console, header, rows)
        return
    label = max(len(h) for h in header[1:])
    text = Text()
    for row in rows:
        text.append_text(row[0])
        text.stylize("bold", len(text) - len(row[0]))
        text.append("\n")
        for name, cell in zip(header[1:], row[1:], strict=True):
            text.append(f"  {name}:".ljust(label + 4), style="dim")
            text.append_text(cell)
            text.append("\n")
    console.print(text, end="", soft_wrap=True)


def action_row(action: Action, step: str, style: str) -> tuple[Text, ...]:
    """One plan row: resource, kind, the step in its colour, and what it does."""
    from rich.text import Text

    what = Text(visible(redact(action.summary)))
    if action.destroys:
        what.append(" (destroys)", style="red")
    if action.migrates:
        what.append(" (migrates)", style="yellow")
    return (Text(action.resource_id), Text(action.kind, style="dim"), Text(step, style), what)


def plan_json(the_plan: Plan) -> dict[str, Any]:
    """A plan in a command's JSON envelope: its identity, summary, body and confirmation."""
    from trueup.execute.gates import confirm_command, needs_confirmation

    risky = needs_confirmation(the_plan.actions)
    return {
        "digest": the_plan.digest,
        "summary": plan_summary(the_plan),
        "plan": the_plan.body(),
        # The apply that types the target's name, when a step destroys or migrates data.
        "confirm": confirm_command(the_plan) if risky else None,
    }


def plan_summary(plan: Plan) -> str:
    counts = Counter(a.type for a in plan.actions)
    parts = [f"{counts[t]} {t.value}" for t in ActionType if counts[t]]
    return ", ".join(parts) or "nothing declared"


def render_plan(
    console: Console,
    plan: Plan,
    preview: Callable[[Action], str] | None,
    show_noop: bool = False,
    confirmed: bool = False,
) -> None:
    """A plan for people; ``confirmed``: the name was typed (--confirm), so no hint to type it."""
    from rich.markup import escape

    console.print(
        f"[bold]Plan[/] for {escape(visible(plan.target.name))} ({escape(plan.target.kind)} "
        f"{escape(plan.target.id)}) on {escape(visible(plan.target.location))}  "
        f"[dim]{plan.digest[:16]}[/]"
    )
    shown = [a for a in plan.actions if show_noop or a.type is not ActionType.NO_OP]
    rows = [action_row(a, a.type.value, _STYLE[a.type]) for a in shown[:MAX_ROWS]]
    print_columns(console, ("resource", "kind", "action", "what"), rows)
    if len(shown) > MAX_ROWS:
        console.print(f"[dim]… {len(shown) - MAX_ROWS} more actions (use --json for all)[/]")
    drift = plan.by_type(ActionType.DRIFT_CONFLICT)
    overwritable = overwritable_drift(plan.actions)
    if preview is not None:
        render_diffs(console, [*plan.changes, *overwritable], preview)
    if all(a.type is ActionType.NO_OP for a in plan.actions):
        console.print(f"\n[green]converged[/]: nothing to change ({len(plan.actions)} up to date)")
    else:
        console.print(f"\n{plan_summary(plan)}")
    dropped = [a for a in drift if a.payload.get("dropped")]
    by_hand = [a for a in drift if a.payload.get("by_hand") and not a.payload.get("dropped")]
    if overwritable:
        ids = [a.resource_id for a in overwritable]
        console.print(
            "[magenta]Drift is never overwritten. To keep the local version, leave it (or "
            "declare the keys as overlay); to take the declared version, run: "
            f"{escape(overwrite_command(plan, ids))}[/]"
        )
    if by_hand:
        console.print(
            "[magenta]Drift that --overwrite cannot take over (its detail says why) needs a "
            "person: fix it by hand, then plan again.[/]"
        )
    if dropped:
        console.print(
            "[magenta]A resource no longer declared but changed since trueup wrote it is left "
            "as it is: delete it by hand (trueup then forgets it), or declare it again.[/]"
        )
    risky = [a.resource_id for a in plan.actions if a.destroys or a.migrates]
    if risky and not confirmed:
        from trueup.execute.gates import confirm_command

        console.print(
            f"[red]{len(risky)} step(s) destroy or migrate data ({escape(', '.join(risky[:5]))}"
            f"{' …' if len(risky) > 5 else ''}): --yes alone never applies them; a person "
            f"types the target's name: {escape(visible(confirm_command(plan)))}[/]"
        )


def overwritable_drift(actions: Sequence[Action]) -> list[Action]:
    """The drift ``--overwrite`` can take over: neither fixed by hand nor no longer declared."""
    return [
        a
        for a in actions
        if a.type is ActionType.DRIFT_CONFLICT
        and not a.payload.get("by_hand")
        and not a.payload.get("dropped")
    ]


def overwrite_command(plan: Plan, ids: Sequence[str]) -> str:
    """The apply that takes the declared version of the drifted ``ids``, ready to paste."""
    from trueup.execute.gates import target_command

    overwrite = [arg for rid in ids for arg in ("--overwrite", rid)]
    return target_command("apply", plan.target.kind, plan.source, plan.target.location, *overwrite)


def render_diffs(
    console: Console, actions: Sequence[Action], preview: Callable[[Action], str]
) -> None:
    """Each action's diff, until their lines exceed ``MAX_DIFF_LINES``: a change's, or
    for drift the live work that ``--overwrite`` would discard."""
    from rich.markup import escape

    lines = 0
    for shown, action in enumerate(actions):
        if lines >= MAX_DIFF_LINES:
            console.print(
                f"\n[dim]… diffs of {len(actions) - shown} more changes not shown "
                "(trueup plan --json has every action)[/]"
            )
            return
        diff = preview(action)
        if diff:
            lines += diff.count("\n")
            what = (
                f"drift: what --overwrite {action.resource_id} would discard"
                if action.type is ActionType.DRIFT_CONFLICT
                else action.type.value
            )
            console.print(f"\n[bold]{escape(action.resource_id)}[/] ({escape(what)})")
            console.print(diff_text(diff), end="")


def render_result(console: Console, result: RunResult) -> None:
    from rich.markup import escape
    from rich.table import Table

    failed = [r for r in result.results if r.status in ("failed", "restored", "skipped")]
    if failed:
        table = Table(box=None, show_header=True, header_style="bold")
        table.add_column("resource", overflow="fold")
        table.add_column("status", overflow="fold")
        table.add_column("detail", overflow="fold")
        for item in failed[:MAX_ROWS]:
            table.add_row(
                escape(item.action.resource_id), item.status, escape(redact(item.message))
            )
        console.print(table)
    succeeded = sum(1 for r in result.results if r.status == "succeeded")
    style = _OUTCOME_STYLE[result.outcome]
    console.print(
        f"[{style}]{result.outcome.value}[/]: {succeeded} action(s) applied and verified"
        f" (run {result.run_id})"
        + (f"; {escape(redact(result.message))}" if result.message else "")
    )
    if result.outcome is Outcome.INTERRUPTED:
        console.print(
            f"next: trueup recover {result.run_id}   (or: trueup abandon {result.run_id})"
        )
