"""``trueup state migrate``: bring the state store's schema to what this trueup needs."""

import sys
from typing import Annotated, Optional

import typer

from trueup.cli.common import JsonOpt, StateOpt, run_command
from trueup.cli.output import Output
from trueup.errors import UsageError

state_app = typer.Typer(help="The state store: migrations.", no_args_is_help=True)


@state_app.command("migrate")
def state_migrate(
    state: StateOpt = None,
    sql: Annotated[
        Optional[str],  # noqa: UP045
        typer.Option(
            "--sql",
            metavar="DIALECT",
            help="Print the DDL (sqlite or postgresql) for a DBA instead of running it.",
        ),
    ] = None,
    json_out: JsonOpt = False,
) -> None:
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
