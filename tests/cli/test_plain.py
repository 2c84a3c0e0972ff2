"""Lines styled without rich follow rich's rules, so both kinds of line look alike."""

from __future__ import annotations

import io

import pytest
from rich.console import Console

from trueup.cli.plain import styled_line

PARTS = [("Plan", "bold"), (" for P  ", ""), ("converged", "green"), ("digest", "dim")]


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def as_rich(stream: io.StringIO) -> str:
    """What rich writes for the same parts to ``stream``, under the same environment."""
    from rich.text import Text

    console = Console(file=stream, highlight=False, soft_wrap=True, color_system="standard")
    if not console.is_terminal or console.is_dumb_terminal:
        console = Console(file=stream, highlight=False, soft_wrap=True)
    console.print(Text.assemble(*PARTS), end="")
    return stream.getvalue()


@pytest.mark.parametrize(
    ("env", "terminal", "expected"),
    [
        ({}, False, "Plan for P  convergeddigest"),
        ({}, True, "\x1b[1mPlan\x1b[0m for P  \x1b[32mconverged\x1b[0m\x1b[2mdigest\x1b[0m"),
        ({"NO_COLOR": "1"}, True, "\x1b[1mPlan\x1b[0m for P  converged\x1b[2mdigest\x1b[0m"),
        ({"TERM": "dumb"}, True, "Plan for P  convergeddigest"),
        (
            {"FORCE_COLOR": "1"},
            False,
            "\x1b[1mPlan\x1b[0m for P  \x1b[32mconverged\x1b[0m\x1b[2mdigest\x1b[0m",
        ),
        ({"FORCE_COLOR": ""}, True, "Plan for P  convergeddigest"),
        ({"TTY_COMPATIBLE": "0", "FORCE_COLOR": "1"}, True, "Plan for P  convergeddigest"),
    ],
)
def test_styles_follow_the_terminal_and_the_environment_as_rich_does(
    monkeypatch: pytest.MonkeyPatch, env: dict[str, str], terminal: bool, expected: str
) -> None:
    for name in ("NO_COLOR", "FORCE_COLOR", "TTY_COMPATIBLE", "TERM", "COLORTERM"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    stream = Terminal() if terminal else io.StringIO()
    assert styled_line(PARTS, stream) == expected
    assert as_rich(Terminal() if terminal else io.StringIO()) == expected
