"""The source's routes: credentials, shares with ETags, blobs with Range, bounded bodies."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from trueup.engine import Engine
from trueup.source.admin import SourceAdmin
from trueup.source.server import MAX_ENROLL_BYTES, MAX_REPORT_BYTES, SourceApp
from trueup.source.store import SourceStore

PROFILE = """
[profile]
id = "team"
name = "Team"
groups = ["laptops", "servers"]

[[resource]]
id = "notes"
kind = "file"
target = "notes.md"
source = "notes.md"
groups = ["laptops"]

[[resource]]
id = "ops"
kind = "file"
target = "ops.md"
content = "ops"
groups = ["servers"]
"""


class AppClient:
    """Requests straight into the ASGI app (TLS is the fault scenarios' business)."""

    def __init__(self, app: Any) -> None:
        self.app = app

    def request(self, method: str, url: str, **kwargs: Any) -> httpx.Response:
        async def send() -> httpx.Response:
            transport = httpx.ASGITransport(app=self.app)
            async with httpx.AsyncClient(transport=transport, base_url="https://source") as client:
                return await client.request(method, url, **kwargs)

        return asyncio.run(send())

    def get(self, url: str, **kwargs: Any) -> httpx.Response:
        return self.request("GET", url, **kwargs)

    def post(self, url: str, **kwargs: Any) -> httpx.Response:
        return self.request("POST", url, **kwargs)


@pytest.fixture
def source(engine: Engine, tmp_path: Path) -> Iterator[tuple[SourceAdmin, AppClient]]:
    admin = SourceAdmin(engine)
    admin.init(["127.0.0.1"])
    (tmp_path / "notes.md").write_text("0123456789")
    (tmp_path / "team.toml").write_text(PROFILE)
    admin.publish(tmp_path / "team.toml", None)
    app = SourceApp(engine.settings.state_url, admin.keys)
    yield admin, AppClient(app.app)


def enroll(admin: SourceAdmin, client: AppClient, name: str, group: str) -> dict[str, str]:
    invitation, _ = admin.invite("https://source", [group], 60)
    code = _code(invitation)
    answer = client.post("/v1/enroll", json={"code": code, "name": name})
    assert answer.status_code == 200, answer.text
    return {"Authorization": f"Bearer {answer.json()['credential']}"}


def _code(invitation: str) -> str:
    from trueup.source.enrollment import read_invitation

    return str(read_invitation(invitation)["code"])


def test_every_route_but_enrollment_needs_a_credential(
    source: tuple[SourceAdmin, AppClient],
) -> None:
    _, client = source
    assert client.get("/v1/revision").status_code == 401
    assert client.get("/v1/revision", headers={"Authorization": "Bearer nope"}).status_code == 401
    assert client.get("/v1/blobs/" + "0" * 64).status_code == 401
    assert client.post("/v1/reports", json={}).status_code == 401


def test_a_follower_gets_its_share_and_a_304_while_it_is_unchanged(
    source: tuple[SourceAdmin, AppClient],
) -> None:
    admin, client = source
    laptop = enroll(admin, client, "laptop", "laptops")
    server = enroll(admin, client, "server", "servers")
    first = client.get("/v1/revision", headers=laptop)
    assert [e["resource"]["id"] for e in first.json()["entries"]] == ["notes"]
    assert [
        e["resource"]["id"] for e in client.get("/v1/revision", headers=server).json()["entries"]
    ] == ["ops"]
    again = client.get("/v1/revision", headers={**laptop, "If-None-Match": first.headers["etag"]})
    assert again.status_code == 304 and again.content == b""


def test_head_asks_whether_a_share_is_current_and_carries_no_body(
    source: tuple[SourceAdmin, AppClient],
) -> None:
    admin, client = source
    laptop = enroll(admin, client, "laptop", "laptops")
    tag = client.get("/v1/revision", headers=laptop).headers["etag"]
    current = client.request("HEAD", "/v1/revision", headers={**laptop, "If-None-Match": tag})
    assert current.status_code == 304 and current.content == b""
    stale = client.request("HEAD", "/v1/revision", headers={**laptop, "If-None-Match": '"0-x"'})
    assert stale.status_code == 200 and stale.content == b""
    assert stale.headers["etag"] == tag
    assert client.request("HEAD", "/v1/revision").status_code == 401


def test_blobs_resume_with_range(source: tuple[SourceAdmin, AppClient]) -> None:
    admin, client = source
    laptop = enroll(admin, client, "laptop", "laptops")
    entry = client.get("/v1/revision", headers=laptop).json()["entries"][0]
    digest = entry["files"]["notes.md"][1]
    whole = client.get(f"/v1/blobs/{digest}", headers=laptop)
    assert whole.status_code == 200 and whole.content == b"0123456789"
    rest = client.get(f"/v1/blobs/{digest}", headers={**laptop, "Range": "bytes=6-"})
    assert rest.status_code == 206 and rest.content == b"6789"
    assert rest.headers["content-range"] == "bytes 6-9/10"
    beyond = client.get(f"/v1/blobs/{digest}", headers={**laptop, "Range": "bytes=10-"})
    assert beyond.status_code == 416
    assert client.get("/v1/blobs/" + "0" * 64, headers=laptop).status_code == 404


def test_bodies_are_bounded_and_shaped(source: tuple[SourceAdmin, AppClient]) -> None:
    admin, client = source
    too_big = client.post("/v1/enroll", content=b"x" * (MAX_ENROLL_BYTES + 1))
    assert too_big.status_code == 413
    assert client.post("/v1/enroll", json=["no"]).status_code == 400
    laptop = enroll(admin, client, "laptop", "laptops")
    huge = {"revision": "r", "seq": 1, "outcome": "drift", "message": "x" * MAX_REPORT_BYTES}
    assert client.post("/v1/reports", json=huge, headers=laptop).status_code == 413
    assert client.post("/v1/reports", json={"seq": 1}, headers=laptop).status_code == 400
    taken = client.post(
        "/v1/enroll", json={"code": _code(admin.invite("https://s", [], 60)[0]), "name": "laptop"}
    )
    assert taken.status_code == 409 and "enrolled already" in taken.json()["error"]


def test_a_revoked_follower_is_refused_at_its_next_request(
    source: tuple[SourceAdmin, AppClient],
) -> None:
    admin, client = source
    laptop = enroll(admin, client, "laptop", "laptops")
    assert client.get("/v1/revision", headers=laptop).status_code == 200
    admin.revoke("laptop")
    refused = client.get("/v1/revision", headers=laptop)
    assert refused.status_code == 403 and "revoked" in refused.json()["error"]


def test_reports_are_kept_per_follower(source: tuple[SourceAdmin, AppClient]) -> None:
    admin, client = source
    laptop = enroll(admin, client, "laptop", "laptops")
    report = {"revision": "team:x", "seq": 1, "outcome": "drift", "drift": [{"rid": "notes"}]}
    assert client.post("/v1/reports", json=report, headers=laptop).status_code == 204
    [fleet] = SourceStore(admin.session.store).fleet()
    assert (fleet.outcome, fleet.seq, fleet.detail["drift"]) == ("drift", 1, [{"rid": "notes"}])


def test_a_follower_holding_an_older_share_receives_only_what_changed(
    source: tuple[SourceAdmin, AppClient], tmp_path: Path
) -> None:
    admin, client = source
    laptop = enroll(admin, client, "laptop", "laptops")
    first = client.get("/v1/revision", headers=laptop)
    (tmp_path / "notes.md").write_text("edited")
    admin.publish(tmp_path / "team.toml", None)
    change = client.get("/v1/revision", headers={**laptop, "If-None-Match": first.headers["etag"]})
    body = change.json()
    assert body["base"] == first.json()["manifest"]["id"] and "entries" not in body
    assert [e["resource"]["id"] for e in body["changed"]] == ["notes"]
    stranger = client.get("/v1/revision", headers={**laptop, "If-None-Match": '"1-forged"'})
    assert "entries" in stranger.json()  # an ETag naming no share it held: the whole share
