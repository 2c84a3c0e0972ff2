"""``trueup state migrate``: bring the state store's schema to what this trueup needs."""

import sys

import click

from trueup.cli.command import group
from trueup.cli.common import json_option, run_command, state_option
from trueup.cli.output import Output
from trueup.errors import UsageError

state_app = group("state", "The state store: migrations.")


@state_app.command("migrate")
@state_option
@click.option(
    "--sql",
    metavar="DIALECT",
    help="Print the DDL (sqlite or postgresql) for a DBA instead of running it.",
)
@json_option
def state_migrate(state: str | None, sql: str | None, json_out: bool) -> None:
    """Upgrade the state store's schema to what this trueup needs."""
    out = Output("state migrate", json_out)

    def body() -> int:
        from trueup.redact import redact_url
        from trueup.settings import Settings
        from trueup.state.schema import migrate, migration_sql

        if sql is not None:
            if sql not in ("sqlite", "postgresql"):
                raise UsageError(f"--sql takes sqlite or postgresql, not {sql!r}")
            ddl = migration_sql(sql)
            if out.json_mode:
                out.envelope("ok", 0, f"the {sql} DDL of the state store", {"sql": ddl})
            else:
                sys.stdout.write(ddl)
            return 0
        settings = Settings.from_env(state=state)
        settings.open_data()  # a fresh TRUEUP_DATA is made here as by every other command
        url = settings.state_url
        revision = migrate(url)
        message = f"{redact_url(url)} is at schema {revision}"
        out.report(message, {"revision": revision})
        return 0

    run_command(out, body)
