"""Which ``trueup sync`` command lines are answered before click loads: the plain ones.

A timer runs ``trueup sync --apply --no-input`` every few minutes; when the
source has no news the answer costs one HEAD request and as little start-up
as Python allows (tests/scenarios/test_many_machines.py runs it). Any other
command line goes to the full command, which parses it and names mistakes.
"""

from __future__ import annotations

import pytest

from trueup.cli.unchanged_sync import sync_options


@pytest.mark.parametrize(
    ("args", "options"),
    [
        ([], {}),
        (["--apply", "--no-input"], {"--apply": True, "--no-input": True}),
        (["-y", "--json"], {"-y": True, "--json": True}),
        (["--root", "/r", "--state=sqlite:///s.db"], {"--root": "/r", "--state": "sqlite:///s.db"}),
        (["--root=/r", "--apply"], {"--root": "/r", "--apply": True}),
    ],
)
def test_the_plain_forms_of_sync_are_read_here(
    args: list[str], options: dict[str, str | bool]
) -> None:
    assert sync_options(args) == options


@pytest.mark.parametrize(
    "args",
    [
        ["--help"],
        ["--recheck"],
        ["--apply", "extra"],
        ["--root"],  # no value: click names the mistake
        ["--root", ""],
        ["--root", "/a", "--root", "/b"],  # click's last-wins is click's to apply
        ["--nosuch"],
        ["--root", "/a", "--"],
    ],
)
def test_any_other_command_line_goes_to_the_full_command(args: list[str]) -> None:
    assert sync_options(args) is None
