"""Short styled lines written without rich, by rich's rules for a terminal.

The answer people get most is a converged ``trueup plan``: two lines. Loading
rich's console to print them cost that whole command about a fifth of its
instructions (bench/README.md), so lines made only of bold, dim and a colour
are written here. Whether to style them follows rich, so both kinds of line
look alike: ``TTY_COMPATIBLE``, then ``FORCE_COLOR``, then whether stdout is a
terminal; none on a dumb terminal; ``NO_COLOR`` drops colours, not bold or dim.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import TextIO

#: (text, style) parts of a line; a style is words of ``_SGR``, or "" for none.
Part = tuple[str, str]

_SGR = {"bold": "1", "dim": "2", "red": "31", "green": "32", "yellow": "33", "magenta": "35"}
_COLOURS = frozenset({"red", "green", "yellow", "magenta"})


def is_terminal(stream: TextIO) -> bool:
    """rich's ``Console.is_terminal`` for ``stream``."""
    compatible = os.environ.get("TTY_COMPATIBLE", "")
    if compatible in ("0", "1"):
        return compatible == "1"
    forced = os.environ.get("FORCE_COLOR")
    if forced is not None:
        return forced != ""
    try:
        return stream.isatty()
    except ValueError:  # closed
        return False


def styled_line(parts: Iterable[Part], stream: TextIO) -> str:
    """The parts as one line, with the escape codes ``stream`` should get."""
    dumb = os.environ.get("TERM", "").strip().lower() in ("dumb", "unknown")
    if dumb or not is_terminal(stream):
        return "".join(text for text, _ in parts)
    plain_colours = os.environ.get("NO_COLOR", "") != ""
    line = []
    for text, style in parts:
        words = [w for w in style.split() if not (plain_colours and w in _COLOURS)]
        codes = ";".join(_SGR[w] for w in words)
        line.append(f"\x1b[{codes}m{text}\x1b[0m" if codes and text else text)
    return "".join(line)
