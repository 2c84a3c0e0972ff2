"""``trueup doctor``: is this machine healthy, and if not, what next?"""

from __future__ import annotations

import click

from trueup.cli.common import json_option, run_command, state_option
from trueup.cli.output import Output
from trueup.errors import ExitCode

_STYLE = {"healthy": "green", "degraded": "yellow", "unhealthy": "bold red"}


@click.command("doctor")
@click.option(
    "--timeout",
    type=click.FloatRange(min=0.1),
    default=10.0,
    show_default=True,
    help="Seconds each probe may take.",
)
@state_option
@json_option
def doctor(timeout: float, state: str | None, json_out: bool) -> None:
    """Probe runtime, state store, keyring, source, scheduler, package managers and agents.

    Exit 0 when nothing is unhealthy (degraded parts are listed with their next
    step), 3 when something is: a person must act.
    """
    out = Output("doctor", json_out)

    def body() -> int:
        from trueup.doctor import diagnose
        from trueup.settings import Settings

        report = diagnose(Settings.from_env(state=state), timeout)
        code = int(ExitCode.HUMAN_ACTION if report.status == "unhealthy" else ExitCode.OK)
        if json_out:
            out.envelope(report.status, code, f"this machine is {report.status}", report.to_json())
            return code
        from rich.markup import escape
        from rich.table import Table

        table = Table("check", "status", "what", "next step")
        for check in report.checks:
            style = _STYLE[check.status]
            table.add_row(
                check.name,
                f"[{style}]{check.status}[/]",
                escape(check.summary),
                escape(check.next_step),
            )
        out.console.print(table)
        out.print(f"this machine is {report.status}")
        return code

    run_command(out, body)
