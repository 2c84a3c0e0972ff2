"""``trueup audit list|verify``: read the audit log, and prove it was not rewritten.

Verification failure exits 7 (the same code as a failed verification of an
apply): the log is not what was written.
"""

import click

from trueup.cli.command import group
from trueup.cli.common import engine_for, json_option, run_command, state_option
from trueup.cli.output import Output, first_visible
from trueup.errors import ApplyFailedError, ExitCode, UsageError

app = group("audit", "The audit log: who planned and applied what.")


@app.command("list")
@click.option("--target", help="A target key, a glob over keys, or a target id.")
@click.option("--event", help="Only events starting with this, e.g. plan.applied.")
@click.option(
    "--limit",
    type=click.IntRange(1, 1_000_000),
    default=50,
    show_default=True,
    help="At most this many rows.",
)
@state_option
@json_option
def audit_list(
    target: str | None, event: str | None, limit: int, state: str | None, json_out: bool
) -> None:
    """The newest entries first."""
    out = Output("audit list", json_out)

    def body() -> int:
        from trueup import audit, authz

        engine = engine_for(state)
        entries = first_visible(
            lambda offset, page: audit.entries(engine.store, target, event, page, offset),
            lambda r: authz.allowed(engine.store, engine.actor, "plan", r.target_key),
            limit,
        )
        if json_out:
            out.envelope("ok", 0, f"{len(entries)} entries", [r.to_json() for r in entries])
            return 0
        if not entries:
            out.print("no audit entries")
            return 0
        from rich.text import Text

        from trueup.cli.output import visible
        from trueup.cli.render import print_columns
        from trueup.redact import redact

        def shown(text: str) -> str:
            return visible(redact(text))

        style = {"success": "green", "refused": "yellow", "failed": "red"}
        rows = []
        for r in entries:
            who = f"{'user' if r.actor['type'] == 'human' else 'service'}:{r.actor['id']}"
            target_text = Text(shown(r.target_key))
            if r.reason:
                target_text.append(f"  {shown(r.reason)}", style="dim")
            rows.append(
                (
                    Text(str(r.seq)),
                    Text(r.at[:19].replace("T", " ")),
                    Text(r.event),
                    Text(r.outcome, style=style.get(r.outcome, "")),
                    Text(shown(who)),
                    target_text,
                )
            )
        header = ("seq", "at (UTC)", "event", "outcome", "actor", "target")
        print_columns(out.console, header, rows)
        return 0

    run_command(out, body)


@app.command("verify")
@click.option(
    "--anchor",
    help="SEQ:HASH printed by an earlier verify and kept elsewhere: catches truncation.",
)
@state_option
@json_option
def audit_verify(anchor: str | None, state: str | None, json_out: bool) -> None:
    """Walk the whole hash chain; exit 7 if any row was edited, deleted or reordered."""
    out = Output("audit verify", json_out)

    def body() -> int:
        from trueup import audit, authz

        engine = engine_for(state)
        engine.access("audit.read", lambda: authz.require_admin(engine.store, engine.actor), {})
        pinned = _anchor(anchor) if anchor else None
        report = audit.verify(engine.store, pinned)
        head = f"{report.head_seq}:{report.head}"
        if not report.ok:
            error = ApplyFailedError(
                f"the audit log was tampered with: {'; '.join(report.problems[:10])}",
                hint="restore the audit table from a backup and find out who had write access",
                data=report.to_json(),
            )
            return out.error(error)
        message = f"audit log intact: {report.rows} entries; head {head}"
        if json_out:
            out.envelope("ok", ExitCode.OK, message, report.to_json())
        else:
            out.print(message)
            out.print("keep the head somewhere else and pass it back with --anchor")
        return 0

    run_command(out, body)


def _anchor(text: str) -> tuple[int, str]:
    seq, sep, digest = text.partition(":")
    if not sep or not seq.isdigit() or len(digest) != 64:
        raise UsageError(f"--anchor wants SEQ:HASH (as verify prints it), not {text!r}")
    return int(seq), digest
