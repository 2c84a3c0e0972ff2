"""``trueup org``: plan, apply and status of an org across its providers.

Thin like the rest of the CLI: parse, call `trueup.org.engine`, render. The
provider modules (and httpx) are imported only when one of these commands
runs, so ``trueup --help`` and the machine commands stay fast.
"""

import shlex
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from trueup.cli.command import group
from trueup.cli.common import (
    PATH,
    ask_consent_here,
    engine_for,
    json_option,
    no_input_option,
    out_option,
    overwrite_option,
    queue_option,
    run_command,
    show_unchanged_option,
    state_option,
    yes_option,
)
from trueup.cli.output import Output, confirmation_hint
from trueup.errors import ExitCode

if TYPE_CHECKING:
    from trueup.model import Plan
    from trueup.org.engine import OrgEngine, OrgPrepared

org_app = group("org", "Orgs across ZITADEL, Cloudflare and Coolify: plan, apply, status.")

insecure_http_option = click.option(
    "--insecure-http",
    is_flag=True,
    help="Allow plain http:// provider URLs beyond this host (tokens and secret "
    "values then cross the network unencrypted).",
)


def _org_engine(state: str | None, insecure_http: bool = False) -> "OrgEngine":
    from trueup.org import engine  # providers load only when an org command runs

    base = engine_for(state)
    return engine.OrgEngine(base.settings, base, insecure_http=insecure_http)


def _plan_json(prepared: "OrgPrepared", plan: "Plan") -> dict[str, Any]:
    from trueup.cli.org_render import org_summary

    return {
        "digest": plan.digest,
        "summary": org_summary(plan, len(prepared.unmanaged)),
        "plan": plan.body(),
        "unmanaged": [u.to_json() for u in prepared.unmanaged],
    }


@org_app.command("plan")
@click.argument("file", help="Org file (TOML, JSON or YAML).", type=PATH)
@out_option
@overwrite_option
@show_unchanged_option
@insecure_http_option
@state_option
@json_option
def org_plan(
    file: Path,
    out_file: Path | None,
    overwrite: tuple[str, ...],
    show_unchanged: bool,
    insecure_http: bool,
    state: str | None,
    json_out: bool,
) -> None:
    """Read the org's scope at every provider and show what would change. Changes nothing."""
    out = Output("org plan", json_out)

    def body() -> int:
        from trueup.cli.org_render import render_org_plan
        from trueup.cli.status import status_message
        from trueup.model import outcome_of, plan_status
        from trueup.saved_plans import save_plan

        engine = _org_engine(state, insecure_http)
        try:
            prepared = engine.plan(file, overwrite or ())
            plan = prepared.plan
            if out_file is not None:
                save_plan(plan, out_file)
            outcome = outcome_of(plan.actions)
            if json_out:
                status = plan_status(plan.actions)
                message = status_message(status, plan.actions, len(plan.changes))
                out.envelope(status, outcome.exit_code, message, _plan_json(prepared, plan))
            else:
                render_org_plan(out.console, prepared, plan, show_unchanged)
                if out_file is not None:
                    from rich.markup import escape

                    again = shlex.join(["trueup", "org", "apply", str(out_file)])
                    out.print(escape(f"saved to {out_file}; apply it with: {again}"))
            return int(outcome.exit_code)
        finally:
            engine.close()

    run_command(out, body)


@org_app.command("apply")
@click.argument("file", help="Org file, or a plan saved with org plan -o.", type=PATH)
@click.option(
    "--confirm",
    help="The org's display name, typed exactly: needed for steps that "
    "destroy or migrate data (--yes never counts for those).",
)
@yes_option
@no_input_option("for CI")
@overwrite_option
@queue_option
@insecure_http_option
@state_option
@json_option
def org_apply(
    file: Path,
    confirm: str | None,
    yes: bool,
    no_input: bool,
    overwrite: tuple[str, ...],
    queue: bool,
    insecure_http: bool,
    state: str | None,
    json_out: bool,
) -> None:
    """Show the plan, then apply it behind the gates (authorization, staleness, confirmation)."""
    out = Output("org apply", json_out)

    def body() -> int:
        from trueup.cli.org_render import render_org_plan, render_org_result
        from trueup.pipeline import open_saved

        engine = _org_engine(state, insecure_http)
        try:
            saved = open_saved(engine.base, file, "org")
            prepared, expected = engine.pipeline.prepare_apply(file, overwrite or (), saved)
            if not json_out:
                render_org_plan(out.console, prepared, expected, False, confirm is not None)
            consent = ask_consent_here(
                expected, out, typed=confirm, yes=yes, no_input=no_input, noun="org"
            )
            typed = consent.typed
            if consent.declined:
                data = {**_plan_json(prepared, expected), "apply": None}
                out.report("nothing was changed", data, "declined")
                return int(ExitCode.OK)
            with confirmation_hint(expected.target.name, no_input and typed is None):
                if queue and expected.changes:
                    from trueup.execute.queued_org import enqueue_org_apply

                    engine.check_fresh(expected, prepared)
                    run_id = enqueue_org_apply(engine, prepared, typed)
                    message = f"queued as run {run_id}; a worker applies it (trueup worker)"
                    data = {**_plan_json(prepared, expected), "run": run_id}
                    out.report(message, data, "queued")
                    return int(ExitCode.OK)
                result = engine.apply(prepared, expected, typed, consent.paused)

            def show() -> None:
                if json_out:
                    data = {**_plan_json(prepared, expected), "apply": result.to_json()}
                    out.envelope(
                        result.outcome.value, result.outcome.exit_code, result.message, data
                    )
                else:
                    render_org_result(out.console, result)

            return out.finished(result.outcome.value, int(result.outcome.exit_code), show)
        finally:
            engine.close()

    run_command(out, body)


@org_app.command("status")
@click.argument(
    "file",
    help="Check this org live (otherwise: what the state store recorded).",
    type=PATH,
    required=False,
)
@insecure_http_option
@state_option
@json_option
def org_status(file: Path | None, insecure_http: bool, state: str | None, json_out: bool) -> None:
    """Converged? Drifted? Unmanaged? Which declared fields are not true yet?"""
    out = Output("org status", json_out)

    def body() -> int:
        from trueup.cli.org_render import show_live_status, show_recorded_status

        engine = _org_engine(state, insecure_http)
        try:
            if file is not None:
                return show_live_status(out, engine, file)
            return show_recorded_status(out, engine)
        finally:
            engine.close()

    run_command(out, body)
