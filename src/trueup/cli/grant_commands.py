"""``trueup grant`` and ``trueup token``: who may plan or apply what, and service tokens."""

from typing import Annotated

import typer
from rich.markup import escape

from trueup.cli.common import JsonOpt, StateOpt, engine_for, run_command
from trueup.cli.output import Output

grant_app: typer.Typer = typer.Typer(
    help="Grants: who may plan, apply or administer which targets.", no_args_is_help=True
)
token_app: typer.Typer = typer.Typer(
    help="Service tokens (TRUEUP_TOKEN); only their hashes are stored.", no_args_is_help=True
)

ActorArg = Annotated[str, typer.Argument(help="user:NAME or service:NAME (bare NAME: a user).")]
PermissionArg = Annotated[str, typer.Argument(help="plan, apply (implies plan) or admin.")]
GlobArg = Annotated[
    str, typer.Argument(help="Target keys it covers, e.g. 'profile:workstation@*' or 'org:acme*'.")
]
ServiceArg = Annotated[str, typer.Argument(help="service:NAME")]


@grant_app.command("add")
def grant_add(
    actor: ActorArg,
    permission: PermissionArg,
    target: GlobArg,
    state: StateOpt = None,
    json_out: JsonOpt = False,
) -> None:
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
def grant_list(state: StateOpt = None, json_out: JsonOpt = False) -> None:
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
def grant_remove(
    actor: ActorArg,
    permission: PermissionArg,
    target: GlobArg,
    state: StateOpt = None,
    json_out: JsonOpt = False,
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
def token_create(
    service: ServiceArg,
    state: StateOpt = None,
    json_out: JsonOpt = False,
) -> None:
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
def token_revoke(
    service: ServiceArg,
    state: StateOpt = None,
    json_out: JsonOpt = False,
) -> None:
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
