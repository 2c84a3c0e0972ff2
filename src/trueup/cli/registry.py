"""The commands ``trueup`` loads only when they run: a table, and the click group reading it.

Every command module imported at start-up costs every command its import, so
``trueup plan`` would pay for the org clients and the fake servers. A row here
names the command, where it lives and its help line; ``trueup --help`` reads
the line from the row, so listing the commands imports none of them. Adding
a command group is adding a row.
"""

import difflib
import importlib
from typing import Any, NamedTuple

import click

from trueup.cli.command import Group


class LazyCommand(NamedTuple):
    """Where a command lives (``module:attr``, a click command or group) and the line
    ``trueup --help`` shows for it."""

    target: str
    help: str


LAZY_COMMANDS: dict[str, LazyCommand] = {
    "worker": LazyCommand(
        "trueup.cli.job_commands:worker",
        "Run queued applies until stopped; start one or more per host, on any number of hosts.",
    ),
    "state": LazyCommand("trueup.cli.state_commands:state_app", "The state store: migrations."),
    "audit": LazyCommand(
        "trueup.cli.audit_commands:app", "The audit log: who planned and applied what."
    ),
    "grant": LazyCommand(
        "trueup.cli.grant_commands:grant_app",
        "Grants: who may plan, apply or administer which targets.",
    ),
    "token": LazyCommand(
        "trueup.cli.grant_commands:token_app",
        "Service tokens (TRUEUP_TOKEN); only their hashes are stored.",
    ),
    "jobs": LazyCommand(
        "trueup.cli.job_commands:jobs_app", "Queued applies: list them, resume a failed one."
    ),
    "org": LazyCommand(
        "trueup.cli.org:org_app",
        "Orgs across ZITADEL, Cloudflare and Coolify: plan, apply, status.",
    ),
    "schedule": LazyCommand(
        "trueup.cli.schedule_commands:schedule_app",
        "Run trueup on a schedule: systemd timer, launchd agent or Task Scheduler task.",
    ),
    "doctor": LazyCommand(
        "trueup.cli.doctor_commands:doctor",
        "Probe runtime, state store, keyring, source, scheduler, package managers and agents.",
    ),
    "fakes": LazyCommand(
        "trueup.cli.fakes:fakes_app", "Fake Cloudflare, Coolify and ZITADEL servers."
    ),
    "source": LazyCommand(
        "trueup.cli.source_commands:source_app",
        "Be the source many machines follow: keys, signed revisions, invitations, the fleet.",
    ),
    "follow": LazyCommand(
        "trueup.cli.follow_commands:follow",
        "Enroll with a source: pin its certificate and signing key, keep the credential.",
    ),
    "sync": LazyCommand(
        "trueup.cli.follow_commands:sync",
        "Fetch the newest revision for this machine, verify it, plan it, and with --apply "
        "apply it.",
    ),
}


def load(name: str) -> click.Command:
    """The click command a row names, its module imported now."""
    module, _, attr = LAZY_COMMANDS[name].target.partition(":")
    found: Any = getattr(importlib.import_module(module), attr)
    if not isinstance(found, click.Command) or found.name != name:
        raise TypeError(f"{LAZY_COMMANDS[name].target} is not the click command {name!r}")
    return found


class LazyGroup(Group):
    """The ``trueup`` group: its own commands, then the table's, imported on use.

    Listing (help, completion of names) gets a placeholder carrying the row's
    help line; resolving a command to run it, or to ask for its own help or
    completions, loads the real one.
    """

    def list_commands(self, ctx: click.Context) -> list[str]:
        return [*super().list_commands(ctx), *(n for n in LAZY_COMMANDS if n not in self.commands)]

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name in self.commands or cmd_name not in LAZY_COMMANDS:
            return super().get_command(ctx, cmd_name)
        line = LAZY_COMMANDS[cmd_name].help
        return click.Command(cmd_name, help=line, short_help=line)

    def resolve_command(
        self, ctx: click.Context, args: list[str]
    ) -> tuple[str | None, click.Command | None, list[str]]:
        if args and args[0] in LAZY_COMMANDS and args[0] not in self.commands:
            self.add_command(load(args[0]))
        try:
            return super().resolve_command(ctx, args)
        except click.UsageError:
            if not args or args[0].startswith("-"):
                raise  # an option, not a command name
            # Said afresh: click would suggest only among the commands loaded.
            close = difflib.get_close_matches(args[0], self.list_commands(ctx))
            offered = f" Did you mean {', '.join(repr(name) for name in close)}?" if close else ""
            raise click.UsageError(f"No such command {args[0]!r}.{offered}", ctx) from None
