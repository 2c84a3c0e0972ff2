"""The click group every ``trueup`` command group is: help that never cuts a line short.

click shortens each command's line in a group's ``--help`` to what fits
beside the name (``Fetch the newest revision for this machine, verify...``);
a person choosing a command should read its whole line, wrapped.
"""

from __future__ import annotations

import click


class Group(click.Group):
    """A ``trueup`` command group: its commands' whole help lines, wrapped, never cut."""

    group_class = type  # a group's own groups are of this class too

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        rows = []
        for name in self.list_commands(ctx):
            command = self.get_command(ctx, name)
            if command is not None and not command.hidden:
                rows.append((name, command.get_short_help_str(limit=1000)))
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)


def group(name: str, help: str) -> Group:
    """A command group of ``trueup`` (``trueup org``, ``trueup source``...): help when bare."""
    return Group(name, help=help, no_args_is_help=True)
