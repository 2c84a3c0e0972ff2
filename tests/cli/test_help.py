"""``trueup --help``: what a newcomer reads first, exit codes included."""

from __future__ import annotations

from world import World


def test_help_lists_every_exit_code(world: World) -> None:
    shown = world.run("--help", env={"COLUMNS": "80"})
    assert shown.code == 0, shown.err
    text = shown.out[shown.out.index("Exit codes:") :]
    lines = [line.strip() for line in text.splitlines()]
    for code in range(8):
        assert any(line.startswith(f"{code}  ") for line in lines), (code, text)
    assert "locked by another run" in text and "not authorised" in text
    as_json = world.run("--help", "--json").json
    assert "Exit codes:" in as_json["data"]["help"]
