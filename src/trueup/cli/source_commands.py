"""``trueup source``: one machine publishes signed revisions that many machines follow."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Optional

import typer

from trueup.cli.common import JsonOpt, StateOpt, engine_for, run_command
from trueup.cli.output import Output

if TYPE_CHECKING:
    from trueup.source.admin import SourceAdmin

source_app: typer.Typer = typer.Typer(
    help="Be the source many machines follow: keys, signed revisions, invitations, the fleet.",
    no_args_is_help=True,
)

HostOpt = Annotated[
    Optional[str],  # noqa: UP045
    typer.Option("--host", help="Address to listen on (default 127.0.0.1: loopback only)."),
]
PortOpt = Annotated[
    Optional[int],  # noqa: UP045
    typer.Option("--port", min=1, max=65535, help="Port to listen on (default 8443)."),
]


def _admin(state: str | None) -> SourceAdmin:
    from trueup.source.admin import SourceAdmin

    return SourceAdmin(engine_for(state))


@source_app.command("init")
def init(
    host: Annotated[
        Optional[list[str]],  # noqa: UP045
        typer.Option("--host", help="A name or address followers reach it by (repeatable)."),
    ] = None,
    state: StateOpt = None,
    json_out: JsonOpt = False,
) -> None:
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
def publish(
    file: Annotated[Path, typer.Argument(help="Profile file (TOML, JSON or YAML).")],
    note: Annotated[
        Optional[str],  # noqa: UP045
        typer.Option("--note", help="Why: shown in the revisions list."),
    ] = None,
    state: StateOpt = None,
    json_out: JsonOpt = False,
) -> None:
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
def revisions(state: StateOpt = None, json_out: JsonOpt = False) -> None:
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
def show(
    revision: Annotated[
        Optional[str],  # noqa: UP045
        typer.Argument(help="Sequence number or id (default: the newest)."),
    ] = None,
    state: StateOpt = None,
    json_out: JsonOpt = False,
) -> None:
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


def _table(out: Output, columns: list[str], rows: list[list[Any]]) -> None:
    from rich.table import Table

    table = Table(*columns, box=None, pad_edge=False)
    for row in rows:
        table.add_row(*(str(cell) for cell in row))
    out.console.print(table)
