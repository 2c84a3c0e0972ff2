"""A follower trusts only what its source signed, over the connection it pinned.

Every fault here is real: HTTPS on loopback, a man in the middle with its own
certificate, rows altered in the source's store behind its triggers, a
source killed mid-download. In each case the follower's root is untouched
and it says why, with the exit code the README gives.
"""

from __future__ import annotations

import base64
import hashlib
import json
import socket
import sqlite3
import ssl
import threading
import time
from pathlib import Path

import pytest
from fleet import Machine, invite, serving
from world import World

from trueup.source.keys import _self_signed

PROFILE = """
[profile]
id = "team"
name = "Team"

[[resource]]
id = "rules"
kind = "file"
target = "AGENTS.md"
source = "files/AGENTS.md"

[[resource]]
id = "big"
kind = "file"
target = "big.bin"
source = "files/big.bin"
"""
BIG = bytes(range(256)) * 16384  # 4 MiB: many chunks, so a kill lands mid-download


@pytest.fixture
def source(world: World) -> str:
    world.write("files/AGENTS.md", "rules\n")
    (world.profiles / "files/big.bin").write_bytes(BIG)
    profile = str(world.write("team.toml", PROFILE))
    assert world.run("source", "init").code == 0
    assert world.run("source", "publish", profile).code == 0
    return profile


def tamper(world: World, *statements: str) -> None:
    """Change the source's store as someone with the file (not trueup) could."""
    db = sqlite3.connect(world.data / "state.db", isolation_level=None)
    try:
        for table in ("source_revisions", "source_blobs"):
            for verb in ("update", "delete"):
                db.execute(f"DROP TRIGGER IF EXISTS {table}_immutable_{verb}")
        for statement in statements:
            db.execute(statement)
    finally:
        db.close()


def port_of(machine: Machine) -> str:
    """The port the follower enrolled at: a restarted source listens there again."""
    endpoint = json.loads((machine.data / "follow/follower.json").read_text())["endpoint"]
    return str(endpoint.rsplit(":", 1)[1])


def untouched(machine: Machine) -> bool:
    return not any(machine.root.iterdir())


def test_a_man_in_the_middle_with_another_certificate_gets_nothing(
    world: World, source: str, tmp_path: Path
) -> None:
    laptop = Machine(world, "laptop")
    with serving(world):
        assert laptop.follow(invite(world)).code == 0
    with Impostor(tmp_path) as (port, received):
        membership = laptop.data / "follow/follower.json"
        pinned = json.loads(membership.read_text())
        membership.write_text(json.dumps({**pinned, "endpoint": f"https://127.0.0.1:{port}"}))
        refused = laptop.sync("--apply", "--no-input")
    assert refused.code == 6, refused.out + refused.err
    assert "other than the source's pinned one" in refused.err
    assert received == [b""]  # the handshake, then not a byte: no credential was sent
    assert untouched(laptop)


def test_an_invitation_whose_signing_key_is_not_the_sources_keeps_nothing(
    world: World, source: str
) -> None:
    laptop = Machine(world, "laptop")
    with serving(world):
        invitation = invite(world)
        raw = invitation.removeprefix("trueup-invite:")
        fields = json.loads(base64.urlsafe_b64decode(raw + "=" * (-len(raw) % 4)))
        fields["signing"] = "sha256:" + "0" * 64
        forged = "trueup-invite:" + base64.urlsafe_b64encode(json.dumps(fields).encode()).decode()
        refused = laptop.follow(forged)
    assert refused.code == 6 and "signs with another key" in refused.err
    assert not (laptop.data / "follow/follower.json").exists()


def test_an_invitation_is_single_use_and_expires(world: World, source: str) -> None:
    one, two, late = Machine(world, "one"), Machine(world, "two"), Machine(world, "late")
    with serving(world):
        invitation = invite(world)
        assert one.follow(invitation).code == 0
        used = two.follow(invitation)
        assert used.code == 5 and "used already" in used.err
        short = invite(world, "--expires", "1s")
        time.sleep(1.5)
        expired = late.follow(short)
        assert expired.code == 5 and "expired" in expired.err
    assert world.run("source", "invite", "--expires", "25h").code == 2
    assert world.run("source", "invite", "--group", "nobody").code == 2
    assert Machine(world, "x").follow("not an invitation").code == 2


def test_a_tampered_blob_never_reaches_the_cache_or_the_root(world: World, source: str) -> None:
    laptop = Machine(world, "laptop")
    digest = hashlib.sha256(b"rules\n").hexdigest()
    tamper(world, f"UPDATE source_blobs SET data = X'6576696c0a' WHERE digest = '{digest}'")
    with serving(world):
        assert laptop.follow(invite(world)).code == 0
        refused = laptop.sync("--apply", "--no-input")
    assert refused.code == 6, refused.out + refused.err
    assert "other content than the signed revision names" in refused.err
    assert not (laptop.data / "follow/blobs" / digest).exists()
    assert untouched(laptop)


def test_a_tampered_signature_is_refused(world: World, source: str) -> None:
    laptop = Machine(world, "laptop")
    forged = base64.b64encode(b"\x00" * 64).decode()
    tamper(world, f"UPDATE source_revisions SET signature = '{forged}'")
    with serving(world):
        assert laptop.follow(invite(world)).code == 0
        refused = laptop.sync("--apply", "--no-input")
    assert refused.code == 6 and "signature does not hold" in refused.err
    assert untouched(laptop)


def test_a_replayed_older_revision_is_refused(world: World, source: str) -> None:
    laptop = Machine(world, "laptop")
    world.write("files/AGENTS.md", "rules, second edition\n")
    assert world.run("source", "publish", source).code == 0
    with serving(world):
        assert laptop.follow(invite(world)).code == 0
        assert laptop.sync("--apply", "--no-input").code == 0
    tamper(world, "DELETE FROM source_revisions WHERE seq = 2")  # rev 1 is validly signed
    with serving(world, "--port", port_of(laptop)):
        refused = laptop.sync("--apply", "--no-input", "--recheck")
    assert refused.code == 6 and "replayed or rolled-back revision" in refused.err
    assert (laptop.root / "AGENTS.md").read_text() == "rules, second edition\n"


def test_a_source_killed_mid_download_is_resumed_with_range(world: World, source: str) -> None:
    laptop = Machine(world, "laptop")
    with serving(world):
        assert laptop.follow(invite(world)).code == 0
    port = port_of(laptop)
    crash = {"TRUEUP_CRASH_AT": "blob-half-sent"}
    with serving(world, "--port", port, env=crash) as (process, _):
        cut = laptop.sync("--apply", "--no-input")
        process.wait(timeout=10)
    assert cut.code == 6, cut.out + cut.err
    assert "cannot reach the source" in cut.err and untouched(laptop)
    partial = list((laptop.data / "follow/blobs/partial").iterdir())
    assert len(partial) == 1 and 0 < partial[0].stat().st_size < len(BIG)
    kept = partial[0].stat().st_size
    with serving(world, "--port", port):
        resumed = laptop.sync("--apply", "--no-input", "--json")
    assert resumed.code == 0, resumed.out + resumed.err
    assert resumed.json["data"]["received"] < len(BIG) - kept + 64 * 1024
    assert (laptop.root / "big.bin").read_bytes() == BIG


def test_an_unreachable_source_touches_nothing(world: World, source: str) -> None:
    laptop = Machine(world, "laptop")
    with serving(world):
        assert laptop.follow(invite(world)).code == 0
    gone = laptop.sync("--apply", "--no-input")
    assert gone.code == 6 and "cannot reach the source" in gone.err
    assert "trueup source serve" in gone.err and untouched(laptop)


def test_a_machine_that_follows_nothing_is_told_how(world: World) -> None:
    lonely = Machine(world, "lonely")
    lonely.root.mkdir(parents=True)
    refused = lonely.sync()
    assert refused.code == 2 and "follows no source" in refused.err
    assert "trueup follow INVITE --name NAME" in refused.err


class Impostor:
    """A TLS server with a certificate of its own on loopback; records what it is sent."""

    def __init__(self, folder: Path) -> None:
        key, cert = _self_signed(["127.0.0.1"])
        (folder / "evil.key").write_bytes(key)
        (folder / "evil.crt").write_bytes(cert)
        self.context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self.context.load_cert_chain(folder / "evil.crt", folder / "evil.key")
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.received: list[bytes] = []
        self.thread = threading.Thread(target=self._serve, daemon=True)

    def _serve(self) -> None:
        conn, _ = self.listener.accept()
        with self.context.wrap_socket(conn, server_side=True) as tls:
            tls.settimeout(10)
            try:
                self.received.append(tls.recv(65536))
            except (OSError, ssl.SSLError):
                self.received.append(b"")

    def __enter__(self) -> tuple[int, list[bytes]]:
        self.thread.start()
        return self.listener.getsockname()[1], self.received

    def __exit__(self, *exc: object) -> None:
        self.thread.join(timeout=10)
        self.listener.close()


def test_refusals_say_what_to_do_and_change_nothing(world: World, source: str) -> None:
    laptop = Machine(world, "laptop")
    assert world.run("source", "revoke", "nobody").code == 2
    assert world.run("source", "status", "nobody").code == 2
    with serving(world):
        assert laptop.follow(invite(world)).code == 0
        planned = laptop.sync("--json")  # a plan: nothing changes, the source hears of it
        assert planned.code == 0 and planned.json["status"] == "changes-pending"
        assert untouched(laptop)
        unasked = laptop.sync("--apply")  # no terminal to ask on, no --yes
        assert unasked.code == 2 and "--yes" in unasked.err and untouched(laptop)
        fleet = world.run("source", "status", "--json").json["data"]
        assert [(r["follower"]["name"], r["outcome"]) for r in fleet] == [
            ("laptop", "changes-pending")
        ]
