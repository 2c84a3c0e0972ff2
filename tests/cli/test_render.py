"""Human plan output stays readable (and quick) however large the plan is."""

from __future__ import annotations

import io

from rich.console import Console

from trueup.cli.render import MAX_DIFF_LINES, MAX_ROWS, render_plan
from trueup.model import Action, ActionType, Plan, Target


def big_plan(count: int) -> Plan:
    actions = tuple(
        Action(f"f{i:04d}", "file", ActionType.WRITE_FILE, "create file") for i in range(count)
    )
    return Plan(Target("profile", "p", "P", "/root"), "/p.toml", "d" * 64, {}, actions)


def render(plan: Plan, lines_per_diff: int) -> str:
    console = Console(file=io.StringIO(), width=120, no_color=True)
    diff = "".join(f"+line {n}\n" for n in range(lines_per_diff))
    render_plan(console, plan, lambda action: diff)
    output = console.file.getvalue()  # type: ignore[attr-defined]
    assert isinstance(output, str)
    return output


def test_diffs_stop_at_a_line_budget_and_say_how_many_were_left_out() -> None:
    output = render(big_plan(300), lines_per_diff=40)
    shown = MAX_DIFF_LINES // 40
    assert output.count("+line 39") == shown
    assert f"… diffs of {300 - shown} more changes not shown" in output
    assert f"… {300 - MAX_ROWS} more actions (use --json for all)" in output


def test_a_small_plan_shows_every_diff_and_every_row() -> None:
    output = render(big_plan(5), lines_per_diff=3)
    assert output.count("+line 2") == 5
    assert "not shown" not in output and "more actions" not in output


def test_plan_rows_line_up_in_columns_under_their_header() -> None:
    actions = (
        Action("a", "file", ActionType.WRITE_FILE, "create file"),
        Action("wide-名前", "config", ActionType.REMOVE_RESOURCE, "remove file", destroys=True),
    )
    plan = Plan(Target("profile", "p", "P", "/root"), "/p.toml", "d" * 64, {}, actions)
    lines = render(plan, lines_per_diff=0).splitlines()
    header = next(n for n, line in enumerate(lines) if line.startswith("resource"))
    rows = lines[header : header + 3]
    # Every column starts at the same terminal cell on every line (名前 is two cells wide).
    from rich.cells import cell_len

    kind_at = cell_len(rows[0][: rows[0].index("kind")])
    assert cell_len(rows[1][: rows[1].index("file")]) == kind_at
    assert cell_len(rows[2][: rows[2].index("config")]) == kind_at
    action_at = cell_len(rows[0][: rows[0].index("action")])
    assert cell_len(rows[2][: rows[2].index("remove-resource")]) == action_at
    what_at = cell_len(rows[0][: rows[0].index("what")])
    assert cell_len(rows[1][: rows[1].index("create file")]) == what_at
    assert cell_len(rows[2][: rows[2].index("remove file")]) == what_at
    assert rows[2].endswith("remove file (destroys)")


def test_control_characters_from_files_and_names_are_shown_not_sent() -> None:
    action = Action("a", "file", ActionType.WRITE_FILE, "create t\x1b]0;title")
    plan = Plan(Target("profile", "p", "P\x1b[2J", "/root"), "/p.toml", "d" * 64, {}, (action,))
    console = Console(file=io.StringIO(), width=120, no_color=True)
    render_plan(console, plan, lambda _: "+++ t\x1b]0;title (declared)\n+hi\x1b[2J\tend\r\n")
    output = console.file.getvalue()  # type: ignore[attr-defined]
    assert "\x1b" not in output
    assert "create t\\x1b]0;title" in output and "P\\x1b[2J" in output
    assert "+hi\\x1b[2J" in output and "end\\r\n" in output, "newlines stay, CR is spelt out"
