"""``trueup grant`` and ``trueup token``: who may plan or apply what, and service tokens."""

from collections.abc import Callable
from typing import Any, TypeVar

import click
from rich.markup import escape

from trueup.cli.command import group
from trueup.cli.common import engine_for, json_option, run_command, state_option
from trueup.cli.output import Output

F = TypeVar("F", bound=Callable[..., Any])

grant_app = group("grant", "Grants: who may plan, apply or administer which targets.")
token_app = group("token", "Service tokens (TRUEUP_TOKEN); only their hashes are stored.")

service_argument = click.argument("service", help="service:NAME")
_TARGETS = "Target keys it covers, e.g. 'profile:workstation@*' or 'org:acme*'."


def grant_arguments(command: F) -> F:
    """ACTOR PERMISSION TARGET, --state and --json: a grant as added and as removed."""
    command = state_option(json_option(command))
    command = click.argument("target", help=_TARGETS)(command)
    command = click.argument("permission", help="plan, apply (implies plan) or admin.")(command)
    return click.argument("actor", help="user:NAME or service:NAME (bare NAME: a user).")(command)


@grant_app.command("add")
@grant_arguments
def grant_add(actor: str, permission: str, target: str, state: str | None, json_out: bool) -> None:
    """Allow ACTOR to PERMISSION on targets matching TARGET (the first grant turns checks on)."""
    out = Output("grant add", json_out)

    def body() -> int:
        from trueup import authz

        engine = engine_for(state)
        grant = engine.access(
            "grant.added",
            lambda: authz.add_grant(engine.store, engine.actor, actor, permission, target),
            {"actor": actor, "permission": permission, "target": target},
        )
        out.report(f"{grant.actor} may {grant.permission} {grant.target_glob}", grant.to_json())
        return 0

    run_command(out, body)


@grant_app.command("list")
@state_option
@json_option
def grant_list(state: str | None, json_out: bool) -> None:
    """Every grant (with none, everyone is admin: a single-user machine)."""
    out = Output("grant list", json_out)

    def body() -> int:
        from trueup import authz

        engine = engine_for(state)
        engine.access("grants.read", lambda: authz.require_admin(engine.store, engine.actor), {})
        grants = authz.grants(engine.store)
        if json_out:
            out.envelope("ok", 0, f"{len(grants)} grants", [g.to_json() for g in grants])
            return 0
        if not grants:
            out.print("no grants: authorization is off and everyone is admin")
        for g in grants:
            out.print(escape(f"{g.actor}  {g.permission}  {g.target_glob}  (by {g.created_by})"))
        return 0

    run_command(out, body)


@grant_app.command("remove")
@grant_arguments
def grant_remove(
    actor: str, permission: str, target: str, state: str | None, json_out: bool
) -> None:
    """Remove one grant, exactly as it was added."""
    out = Output("grant remove", json_out)

    def body() -> int:
        from trueup import authz

        engine = engine_for(state)
        engine.access(
            "grant.removed",
            lambda: authz.remove_grant(engine.store, engine.actor, actor, permission, target),
            {"actor": actor, "permission": permission, "target": target},
        )
        out.report(f"removed: {actor} {permission} {target}", None)
        return 0

    run_command(out, body)


@token_app.command("create")
@service_argument
@state_option
@json_option
def token_create(service: str, state: str | None, json_out: bool) -> None:
    """Issue a token for a service (replacing any earlier one); it is shown once."""
    out = Output("token create", json_out)

    def body() -> int:
        import sys

        from trueup import authz

        engine = engine_for(state)
        token = engine.access(
            "token.created",
            lambda: authz.create_token(engine.store, engine.actor, service),
            {"service": service},
        )
        # Shown exactly once, on stdout: handing it over is the point of this command.
        if json_out:
            out.envelope("ok", 0, f"token for {service}", {"token": token})
        else:
            sys.stdout.write(token + "\n")
            sys.stderr.write("store it as TRUEUP_TOKEN for that service; it is not shown again\n")
        return 0

    run_command(out, body)


@token_app.command("revoke")
@service_argument
@state_option
@json_option
def token_revoke(service: str, state: str | None, json_out: bool) -> None:
    """Revoke a service's token: requests with it are refused from now on."""
    out = Output("token revoke", json_out)

    def body() -> int:
        from trueup import authz

        engine = engine_for(state)
        found = engine.access(
            "token.revoked",
            lambda: authz.revoke_token(engine.store, engine.actor, service),
            {"service": service},
        )
        message = f"token of {service} revoked" if found else f"{service} had no token"
        out.report(message, {"revoked": found})
        return 0

    run_command(out, body)
