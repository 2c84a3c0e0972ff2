"""Human renderings of plans, run results and status, made for people."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from trueup.model import ActionType, Outcome, Plan
from trueup.redact import redact

if TYPE_CHECKING:
    from rich.console import Console, RenderableType

    from trueup.execute.executor import RunResult

_STYLE = {
    ActionType.NO_OP: "dim",
    ActionType.WRITE_FILE: "green",
    ActionType.WRITE_CONFIG: "green",
    ActionType.MIRROR_DIRECTORY: "green",
    ActionType.REMOVE_RESOURCE: "red",
    ActionType.VERIFY_ONLY: "cyan",
    ActionType.HUMAN_ACTION: "yellow",
    ActionType.DRIFT_CONFLICT: "bold magenta",
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
    for line in redact(diff).splitlines(keepends=True):
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


def plan_summary(plan: Plan) -> str:
    counts = Counter(a.type for a in plan.actions)
    parts = [f"{counts[t]} {t.value}" for t in ActionType if counts[t]]
    return ", ".join(parts) or "nothing declared"


def render_plan(
    console: Console, plan: Plan, preview: Callable[[Any], str] | None, show_noop: bool = False
) -> None:
    from rich.markup import escape
    from rich.table import Table

    console.print(
        f"[bold]Plan[/] for {escape(plan.target.name)} ({escape(plan.target.kind)} "
        f"{escape(plan.target.id)}) on {escape(plan.target.location)}  [dim]{plan.digest[:16]}[/]"
    )
    shown = [a for a in plan.actions if show_noop or a.type is not ActionType.NO_OP]
    if shown:
        table = Table(show_header=True, header_style="bold", box=None, pad_edge=False)
        table.add_column("resource")
        table.add_column("kind", style="dim")
        table.add_column("action")
        table.add_column("what")
        for action in shown[:MAX_ROWS]:
            style = _STYLE[action.type]
            flags = " [red](destroys)[/]" if action.destroys else ""
            flags += " [yellow](migrates)[/]" if action.migrates else ""
            table.add_row(
                escape(action.resource_id),
                action.kind,
                f"[{style}]{action.type.value}[/]",
                escape(redact(action.summary)) + flags,
            )
        console.print(table)
        if len(shown) > MAX_ROWS:
            console.print(f"[dim]… {len(shown) - MAX_ROWS} more actions (use --json for all)[/]")
    if preview is not None:
        _render_diffs(console, plan, preview)
    if all(a.type is ActionType.NO_OP for a in plan.actions):
        console.print(f"\n[green]converged[/]: nothing to change ({len(plan.actions)} up to date)")
    else:
        console.print(f"\n{plan_summary(plan)}")
    drift = plan.by_type(ActionType.DRIFT_CONFLICT)
    dropped = [a for a in drift if a.payload.get("dropped")]
    by_hand = [a for a in drift if a.payload.get("by_hand") and not a.payload.get("dropped")]
    if len(dropped) + len(by_hand) < len(drift):
        console.print(
            "[magenta]Drift is never overwritten. To keep the local version, leave it (or "
            "declare the keys as overlay); to take the declared version, rerun with "
            "--overwrite RESOURCE.[/]"
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


def _render_diffs(console: Console, plan: Plan, preview: Callable[[Any], str]) -> None:
    """Each change's diff, until their lines exceed ``MAX_DIFF_LINES``."""
    from rich.markup import escape

    lines = 0
    for shown, action in enumerate(plan.changes):
        if lines >= MAX_DIFF_LINES:
            console.print(
                f"\n[dim]… diffs of {len(plan.changes) - shown} more changes not shown "
                "(trueup plan --json has every action)[/]"
            )
            return
        diff = preview(action)
        if diff:
            lines += diff.count("\n")
            console.print(f"\n[bold]{escape(action.resource_id)}[/] ({action.type.value})")
            console.print(diff_text(diff), end="")


def render_result(console: Console, result: RunResult) -> None:
    from rich.markup import escape
    from rich.table import Table

    failed = [r for r in result.results if r.status in ("failed", "restored", "skipped")]
    if failed:
        table = Table(box=None, show_header=True, header_style="bold")
        table.add_column("resource")
        table.add_column("status")
        table.add_column("detail")
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
