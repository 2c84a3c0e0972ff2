"""``trueup source serve``: revisions and blobs over HTTPS to enrolled followers.

Every route but enrollment needs a follower's bearer credential (the store
keeps its sha256). A follower receives the newest revision's manifest and
only its groups' entries, with an ETag, so an unchanged source costs it one
small request and a 304, and a changed one sends only what changed since the
share the follower holds. Blobs are served by digest with ``Range``, so a cut
download resumes. Bodies are bounded both ways. Revisions and blobs never
change, so each process keeps what it read of them in memory; followers
(revocation must bite at once) are read on every request.
"""

from __future__ import annotations

import asyncio
import base64
import json
import queue
import secrets
import socket
import ssl
import threading
from collections import OrderedDict
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from trueup.crashpoints import reach
from trueup.source.admin import new_follower_id
from trueup.source.keys import SourceKeys
from trueup.source.store import Follower, NewReport, SourceStore
from trueup.source.wire import Revision, cut, delta, share_tag, tag_seq
from trueup.state.store import Store

MAX_ENROLL_BYTES = 4096
MAX_REPORT_BYTES = 256 * 1024
#: Blobs kept in memory per process: followers of one revision ask for the same few.
BLOB_CACHE_BYTES = 64 * 1024 * 1024
CHUNK = 64 * 1024
LOOPBACK = ("127.0.0.1", "::1", "localhost")


class _TooLarge(Exception):
    pass


@dataclass(frozen=True)
class _Cut:
    """A follower's share of a revision, its ETag, and the whole of it as sent."""

    revision: Revision
    tag: str
    body: bytes


class _ReportWriter:
    """Reports written by a thread of their own, as many per commit as have arrived.

    A commit waits for the disk; one per report would keep every other
    follower waiting behind it. A report is answered once it is stored.
    """

    def __init__(self, state_url: str) -> None:
        self.state_url = state_url
        self.queue: queue.SimpleQueue[_Pending] = queue.SimpleQueue()
        self.thread: threading.Thread | None = None

    async def write(self, report: NewReport) -> None:
        loop = asyncio.get_running_loop()
        done: asyncio.Future[None] = loop.create_future()
        self.queue.put((report, loop, done))
        if self.thread is None:
            self.thread = threading.Thread(target=self._run, name="trueup-reports", daemon=True)
            self.thread.start()
        await done

    def _run(self) -> None:
        rows = SourceStore(Store.open(self.state_url))
        while True:
            batch = [self.queue.get()]
            while not self.queue.empty():
                batch.append(self.queue.get())
            try:
                rows.add_reports([report for report, _, _ in batch])
                failure: BaseException | None = None
            except Exception as exc:  # the requests waiting say so; the writer goes on
                failure = exc
            for _, loop, done in batch:
                loop.call_soon_threadsafe(_settle, done, failure)


_Pending = tuple[NewReport, asyncio.AbstractEventLoop, "asyncio.Future[None]"]


def _settle(done: asyncio.Future[None], failure: BaseException | None) -> None:
    if done.done():
        return
    if failure is None:
        done.set_result(None)
    else:
        done.set_exception(failure)


def _encode(document: dict[str, Any]) -> bytes:
    return json.dumps(document, sort_keys=True, separators=(",", ":")).encode()


class SourceApp:
    """The routes over one store; one per ``source serve`` process."""

    def __init__(self, state_url: str, keys: SourceKeys) -> None:
        self.state_url = state_url
        self._store: Store | None = None
        self.public_key = base64.b64encode(keys.public_key()).decode("ascii")
        self._revisions: dict[str, Revision] = {}
        self._cuts: dict[tuple[str, tuple[str, ...]], _Cut] = {}
        self._deltas: dict[tuple[str, str], bytes] = {}
        self._blobs: OrderedDict[str, bytes] = OrderedDict()
        self._blob_bytes = 0
        self.reports = _ReportWriter(state_url)
        self.app = Starlette(
            routes=[
                Route("/v1/enroll", self.enroll, methods=["POST"]),
                Route("/v1/revision", self.revision, methods=["GET", "HEAD"]),
                Route("/v1/blobs/{digest}", self.blob, methods=["GET"]),
                Route("/v1/reports", self.report, methods=["POST"]),
            ]
        )

    @property
    def rows(self) -> SourceStore:
        if self._store is None:  # opened on the event loop's thread, which serves every request
            self._store = Store.open(self.state_url)
        return SourceStore(self._store)

    # -- routes -------------------------------------------------------------
    async def enroll(self, request: Request) -> Response:
        try:
            body = await _json(request, MAX_ENROLL_BYTES)
            code, name = str(body["code"]), str(body["name"])
        except _TooLarge:
            return _error(413, "request too large")
        except (KeyError, TypeError, ValueError):
            return _error(400, "expected JSON with code and name")
        if not name or len(name) > 128:
            return _error(400, "a follower's name is 1 to 128 characters")
        credential = secrets.token_urlsafe(32)
        try:
            follower = self.rows.enroll(code, name, new_follower_id(), credential)
        except LookupError as exc:
            return _error(403, str(exc))
        except ValueError as exc:
            return _error(409, str(exc))
        return JSONResponse(
            {
                "follower": follower.id,
                "name": follower.name,
                "groups": list(follower.groups),
                "credential": credential,
                "key": self.public_key,
            }
        )

    async def revision(self, request: Request) -> Response:
        follower = self._follower(request)
        if isinstance(follower, Response):
            return follower
        newest = self.rows.newest()
        if newest is None:
            return _error(404, "no revision published yet")
        current = self._cut(newest[1], follower.groups)
        held = request.headers.get("if-none-match", "")
        if held == current.tag:
            return Response(status_code=304, headers={"ETag": current.tag})
        if request.method == "HEAD":  # is my share current? (trueup sync on a timer)
            return Response(status_code=200, headers={"ETag": current.tag})
        body = self._delta(held, current, follower.groups) or current.body
        return Response(body, media_type="application/json", headers={"ETag": current.tag})

    async def blob(self, request: Request) -> Response:
        follower = self._follower(request)
        if isinstance(follower, Response):
            return follower
        digest = request.path_params["digest"]
        data = self._blob(digest)
        if data is None:
            return _error(404, f"no blob {digest}")
        start = _range_start(request.headers.get("range"), len(data))
        if start is None:
            return _error(416, "unsatisfiable range")
        headers = {"Accept-Ranges": "bytes", "Content-Length": str(len(data) - start)}
        status = 200
        if start:
            status = 206
            headers["Content-Range"] = f"bytes {start}-{len(data) - 1}/{len(data)}"
        return StreamingResponse(_chunks(data, start), status, headers)

    async def report(self, request: Request) -> Response:
        follower = self._follower(request)
        if isinstance(follower, Response):
            return follower
        try:
            body = await _json(request, MAX_REPORT_BYTES)
            detail = {
                "drift": list(body.get("drift", [])),
                "human": list(body.get("human", [])),
                "message": str(body.get("message") or "")[:1000],
            }
            report = NewReport(
                follower.id,
                str(body["revision"]),
                int(body["seq"]),
                str(body["outcome"])[:32],
                detail,
            )
        except _TooLarge:
            return _error(413, "report too large")
        except (KeyError, TypeError, ValueError):
            return _error(400, "expected JSON with revision, seq and outcome")
        await self.reports.write(report)
        return Response(status_code=204)

    # -- helpers ------------------------------------------------------------
    def _follower(self, request: Request) -> Follower | Response:
        header = request.headers.get("authorization", "")
        scheme, _, credential = header.partition(" ")
        if scheme.lower() != "bearer" or not credential:
            return _error(401, "a follower credential is required")
        follower = self.rows.follower_by_credential(credential.strip())
        if follower is None:
            return _error(401, "unknown follower credential")
        if follower.revoked_at is not None:
            return _error(403, f"follower {follower.name!r} was revoked at {follower.revoked_at}")
        return follower

    def _revision(self, which: str | int) -> Revision | None:
        """A revision by id or sequence number; never changed once read, so kept."""
        found = self._revisions.get(str(which))
        if found is None:
            found = self.rows.revision(which)
            if found is not None:
                self._revisions[str(which)] = self._revisions[found.id] = found
        return found

    def _cut(self, revision_id: str, groups: tuple[str, ...]) -> _Cut:
        key = (revision_id, tuple(sorted(groups)))
        found = self._cuts.get(key)
        if found is None:
            whole = self._revision(revision_id)
            assert whole is not None  # the newest one, and revisions are never deleted
            revision = cut(whole, groups)
            body = _encode({**revision.to_json(), "key": self.public_key})
            found = self._cuts[key] = _Cut(revision, share_tag(revision), body)
        return found

    def _delta(self, held: str, current: _Cut, groups: tuple[str, ...]) -> bytes | None:
        """Only what changed since the share the follower holds, if the ETag names one."""
        seq = tag_seq(held)
        if seq is None or not 0 < seq < current.revision.seq:
            return None
        key = (held, current.tag)
        if key not in self._deltas:
            older = self._revision(seq)
            if older is None:
                return None
            base = self._cut(older.id, groups)
            if base.tag != held:
                return None
            self._deltas[key] = _encode(
                {**delta(base.revision, current.revision), "key": self.public_key}
            )
        return self._deltas[key]

    def _blob(self, digest: str) -> bytes | None:
        data = self._blobs.get(digest)
        if data is not None:
            self._blobs.move_to_end(digest)
            return data
        data = self.rows.blob(digest)
        if data is None:
            return None
        self._blobs[digest] = data
        self._blob_bytes += len(data)
        while self._blob_bytes > BLOB_CACHE_BYTES and len(self._blobs) > 1:
            _, dropped = self._blobs.popitem(last=False)
            self._blob_bytes -= len(dropped)
        return data


async def _chunks(data: bytes, start: int) -> AsyncIterator[bytes]:
    view = memoryview(data)
    for offset in range(start, len(data), CHUNK):
        yield bytes(view[offset : offset + CHUNK])
        if offset >= len(data) // 2 > 0:  # a test kills the source here: a cut download
            reach("blob-half-sent")


def _range_start(header: str | None, size: int) -> int | None:
    """The first byte of ``Range: bytes=N-`` (the only form followers send), else 0."""
    if not header:
        return 0
    unit, _, spec = header.partition("=")
    first, dash, last = spec.strip().partition("-")
    if unit.strip() != "bytes" or not dash or last or not first.isdigit():
        return 0  # a range we do not serve: the whole blob, as RFC 9110 allows
    start = int(first)
    return start if start < size else None


async def _json(request: Request, limit: int) -> dict[str, Any]:
    declared = request.headers.get("content-length")
    if declared is not None and int(declared) > limit:
        raise _TooLarge
    body = b""
    async for chunk in request.stream():
        body += chunk
        if len(body) > limit:
            raise _TooLarge
    value = json.loads(body)
    if not isinstance(value, dict):
        raise ValueError("not an object")
    return value


def _error(status: int, message: str) -> JSONResponse:
    return JSONResponse({"error": message}, status_code=status)


def bind(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    return sock


def serve(app: SourceApp, keys: SourceKeys, sock: socket.socket) -> None:
    """Serve until SIGINT or SIGTERM, TLS 1.2 at least, with the source's certificate."""
    import uvicorn

    config = uvicorn.Config(
        app.app,
        ssl_keyfile=str(keys.tls_key),
        ssl_certfile=str(keys.tls_cert),
        log_config=None,
        log_level="warning",
        access_log=False,
        lifespan="off",
        http="h11",
        loop="asyncio",
        timeout_graceful_shutdown=2,
        limit_concurrency=1000,
        # A follower's sync is a few requests in a row; a fleet syncing at once on a
        # busy host must not find its connection closed between two of them.
        timeout_keep_alive=30,
    )
    config.load()
    assert config.ssl is not None
    config.ssl.minimum_version = ssl.TLSVersion.TLSv1_2
    uvicorn.Server(config).run(sockets=[sock])
