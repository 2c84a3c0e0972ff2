"""``trueup source``: one machine publishes signed revisions that many machines follow."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from trueup.cli.command import group
from trueup.cli.common import PATH, engine_for, json_option, run_command, state_option
from trueup.cli.output import Output

if TYPE_CHECKING:
    from trueup.source.admin import SourceAdmin

source_app = group(
    "source", "Be the source many machines follow: keys, signed revisions, invitations, the fleet."
)


def _admin(state: str | None) -> SourceAdmin:
    from trueup.source.admin import SourceAdmin

    return SourceAdmin(engine_for(state))


@source_app.command("init")
@click.option("--host", multiple=True, help="A name or address followers reach it by (repeatable).")
@state_option
@json_option
def init(host: tuple[str, ...], state: str | None, json_out: bool) -> None:
    """Make the signing key and the TLS key and certificate (0600 files in the data folder)."""
    out = Output("source init", json_out)

    def body() -> int:
        hosts = list(dict.fromkeys(["127.0.0.1", "localhost", *(host or [])]))
        keys = _admin(state).init(hosts)
        data = {
            "folder": str(keys.folder),
            "signing": keys.signing_fingerprint(),
            "tls": keys.tls_fingerprint(),
            "hosts": hosts,
        }
        out.report(
            f"source keys made in {keys.folder}\n  signing {data['signing']}\n  tls     "
            f"{data['tls']}\nnext: trueup source publish PROFILE",
            data,
        )
        return 0

    run_command(out, body)


@source_app.command("publish")
@click.argument("file", help="Profile file (TOML, JSON or YAML).", type=PATH)
@click.option("--note", help="Why: shown in the revisions list.")
@state_option
@json_option
def publish(file: Path, note: str | None, state: str | None, json_out: bool) -> None:
    """Sign and store an immutable revision of the profile and every source file it reads."""
    out = Output("source publish", json_out)

    def body() -> int:
        published = _admin(state).publish(file, note)
        revision = published.revision
        data = {
            "id": revision.id,
            "seq": revision.seq,
            "resources": len(revision.entries),
            "new_blobs": published.new_blobs,
            "unchanged": published.unchanged,
        }
        if published.unchanged:
            message = f"unchanged: revision {revision.seq} already holds this profile"
        else:
            message = (
                f"published revision {revision.seq} ({revision.id}): "
                f"{len(revision.entries)} resources, {published.new_blobs} new blobs"
            )
        out.report(message, data, "unchanged" if published.unchanged else "published")
        return 0

    run_command(out, body)


@source_app.command("revisions")
@state_option
@json_option
def revisions(state: str | None, json_out: bool) -> None:
    """Every published revision, oldest first."""
    out = Output("source revisions", json_out)

    def body() -> int:
        from trueup.source.store import SourceStore

        listed = SourceStore(engine_for(state).store).revisions()
        if json_out:
            out.envelope("ok", 0, f"{len(listed)} revisions", listed)
            return 0
        if not listed:
            out.report("no revision published yet; next: trueup source publish PROFILE", [])
            return 0
        _table(
            out,
            ["seq", "id", "resources", "published", "by", "note"],
            [
                [
                    r["seq"],
                    r["id"],
                    r["resources"],
                    r["published_at"],
                    r["published_by"],
                    r["note"] or "",
                ]
                for r in listed
            ],
        )
        return 0

    run_command(out, body)


@source_app.command("show")
@click.argument("revision", help="Sequence number or id (default: the newest).", required=False)
@state_option
@json_option
def show(revision: str | None, state: str | None, json_out: bool) -> None:
    """One revision: its signed manifest and its resources with their groups."""
    out = Output("source show", json_out)

    def body() -> int:
        from trueup.errors import UsageError
        from trueup.source.store import SourceStore

        found = SourceStore(engine_for(state).store).revision(revision)
        if found is None:
            raise UsageError(
                f"no revision {revision!r}" if revision else "no revision published yet",
                hint="trueup source revisions",
            )
        if json_out:
            out.envelope("ok", 0, f"revision {found.seq}", found.to_json())
            return 0
        manifest = found.manifest
        out.report(
            f"revision {found.seq}: {found.id}\npublished {manifest['published_at']}"
            + (f"\nnote: {manifest['note']}" if manifest.get("note") else ""),
            None,
        )
        _table(
            out,
            ["resource", "kind", "target", "groups", "files"],
            [
                [
                    e["resource"]["id"],
                    e["resource"]["kind"],
                    e["resource"]["target"],
                    ", ".join(e["resource"].get("groups", [])) or "(all)",
                    len(e["files"]),
                ]
                for e in found.entries
            ],
        )
        return 0

    run_command(out, body)


@source_app.command("serve")
@click.option("--host", help="Address to listen on (default 127.0.0.1: loopback only).")
@click.option(
    "--port",
    type=click.IntRange(0, 65535),
    help="Port to listen on (default 8443; 0: any free one).",
)
@state_option
@json_option
def serve(host: str | None, port: int | None, state: str | None, json_out: bool) -> None:
    """Serve revisions to followers over HTTPS until stopped (Ctrl-C, SIGTERM)."""
    out = Output("source serve", json_out)

    def body() -> int:
        import sys

        from trueup.source.admin import keys_for
        from trueup.source.keys import DEFAULT_PORT
        from trueup.source.server import LOOPBACK, SourceApp, bind
        from trueup.source.server import serve as run_server

        engine = engine_for(state)
        keys = keys_for(engine).require()
        where = host or "127.0.0.1"
        sock = bind(where, DEFAULT_PORT if port is None else port)
        shown = f"[{where}]" if ":" in where else where
        endpoint = f"https://{shown}:{sock.getsockname()[1]}"
        _ = engine.store  # a store that cannot be opened stops it here, not at the first request
        keys.remember_endpoint(endpoint)
        out.report(f"serving on {endpoint}", {"endpoint": endpoint})
        if where not in LOOPBACK:
            out.err.print(f"note: listening on {where}, not only on this machine", markup=False)
        sys.stdout.flush()
        run_server(SourceApp(engine.settings.state_url, keys), keys, sock)
        return 0

    run_command(out, body)


@source_app.command("invite")
@click.option("--group", "groups", multiple=True, help="A group the follower joins (repeatable).")
@click.option(
    "--expires",
    default="15m",
    show_default=True,
    help="How long it may be used: 15m, 2h, at most 24h.",
)
@click.option("--endpoint", help="Where followers reach `source serve` (https://HOST:PORT).")
@state_option
@json_option
def invite(
    groups: tuple[str, ...],
    expires: str,
    endpoint: str | None,
    state: str | None,
    json_out: bool,
) -> None:
    """Print a single-use invitation: endpoint, both fingerprints, groups, expiry, a code."""
    out = Output("source invite", json_out)

    def body() -> int:
        seconds = _duration(expires)
        admin = _admin(state)
        text, until = admin.invite(endpoint or admin.keys.endpoint(), list(groups), seconds)
        if json_out:
            out.envelope("ok", 0, "invitation made", {"invitation": text, "expires": until})
        else:
            print(text)
            out.err.print(
                f"single use, valid {expires}; on the follower: trueup follow INVITATION "
                "--name NAME",
                markup=False,
            )
        return 0

    run_command(out, body)


@source_app.command("followers")
@state_option
@json_option
def followers(state: str | None, json_out: bool) -> None:
    """Every enrolled follower, its groups, and whether it was revoked."""
    out = Output("source followers", json_out)

    def body() -> int:
        found = _admin(state).rows.followers()
        if json_out:
            out.envelope("ok", 0, f"{len(found)} followers", [f.to_json() for f in found])
            return 0
        if not found:
            out.report("no follower yet; next: trueup source invite", [])
            return 0
        _table(
            out,
            ["name", "id", "groups", "enrolled", "revoked"],
            [
                [f.name, f.id, ", ".join(f.groups) or "-", f.enrolled_at, f.revoked_at or "-"]
                for f in found
            ],
        )
        return 0

    run_command(out, body)


@source_app.command("revoke")
@click.argument("follower", help="The follower's name or id.")
@state_option
@json_option
def revoke(follower: str, state: str | None, json_out: bool) -> None:
    """Revoke a follower: its next request is refused (it exits 5)."""
    out = Output("source revoke", json_out)

    def body() -> int:
        found = _admin(state).revoke(follower)
        out.report(f"follower {found.name} revoked", found.to_json(), "revoked")
        return 0

    run_command(out, body)


@source_app.command("status")
@click.argument(
    "follower", help="One follower's name or id (default: the whole fleet).", required=False
)
@state_option
@json_option
def status(follower: str | None, state: str | None, json_out: bool) -> None:
    """The fleet as followers last reported: revision, outcome, drift, when."""
    out = Output("source status", json_out)

    def body() -> int:
        reports = _admin(state).fleet(follower)
        if json_out:
            out.envelope("ok", 0, f"{len(reports)} followers", [r.to_json() for r in reports])
            return 0
        if not reports:
            out.report("no follower yet; next: trueup source invite", [])
            return 0
        _table(
            out,
            ["follower", "groups", "revision", "outcome", "drift", "reported"],
            [
                [
                    r.follower.name + (" (revoked)" if r.follower.revoked_at else ""),
                    ", ".join(r.follower.groups) or "-",
                    r.seq if r.seq is not None else "-",
                    r.outcome or "never synced",
                    ", ".join(d["rid"] for d in r.detail.get("drift", [])) or "-",
                    r.reported_at or "-",
                ]
                for r in reports
            ],
        )
        return 0

    run_command(out, body)


def _duration(text: str) -> int:
    """``15m``, ``2h``, ``90s``, ``1d`` as seconds; a usage error otherwise."""
    from trueup.errors import UsageError

    units = {"s": 1, "m": 60, "h": 3600, "d": 86400}
    number, unit = text[:-1], text[-1:]
    if unit not in units or not number.isdigit():
        raise UsageError(f"--expires {text!r}: expected a number and s, m, h or d, e.g. 15m")
    return int(number) * units[unit]


def _table(out: Output, columns: list[str], rows: list[list[Any]]) -> None:
    from rich.table import Table

    table = Table(*columns, box=None, pad_edge=False)
    for row in rows:
        table.add_row(*(str(cell) for cell in row))
    out.console.print(table)
