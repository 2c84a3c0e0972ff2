"""A follower's HTTPS client: the pinned certificate, a bearer credential, bounded reads.

HTTP/1.1 over one ``ssl`` socket, written here rather than imported: ``trueup
sync`` against an unchanged source is one request, and ``http.client`` (with
the email parser it brings) or httpx would cost more to import than the
request takes. The certificate is not checked against any authority but
pinned: the sha256 of the one the source presented at enrollment, compared
before a byte of the request is sent.
"""

from __future__ import annotations

import hashlib
import json
import socket
import ssl
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from trueup.source import FollowerRefused, SourceUnreachable

TIMEOUT = 15.0
MAX_REVISION_BYTES = 64 * 1024 * 1024
MAX_HEADER_BYTES = 64 * 1024
CHUNK = 256 * 1024


class _Cut(OSError):
    """The connection ended before the message did."""


@dataclass
class Response:
    status: int
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


class SourceClient:
    """One keep-alive connection to a source, its certificate pinned."""

    def __init__(self, endpoint: str, tls_pin: str, credential: str | None = None) -> None:
        scheme, _, rest = endpoint.partition("://")
        host, _, port = rest.rstrip("/").rpartition(":")
        if scheme != "https" or not host or not port.isdigit():
            raise SourceUnreachable(f"{endpoint!r} is not an https://HOST:PORT endpoint")
        self.endpoint = endpoint
        self.host = host.strip("[]")
        self.port = int(port)
        self.tls_pin = tls_pin
        self.credential = credential
        self._sock: ssl.SSLSocket | None = None
        self._buffer = b""
        #: Bytes received, bodies and headers' worth: what a sync cost the wire.
        self.received = 0

    def close(self) -> None:
        if self._sock is not None:
            self._sock.close()
            self._sock = None
            self._buffer = b""

    def _connection(self) -> ssl.SSLSocket:
        if self._sock is not None:
            return self._sock
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        context.minimum_version = ssl.TLSVersion.TLSv1_2
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE  # pinned below instead: a self-signed certificate
        try:
            raw = socket.create_connection((self.host, self.port), timeout=TIMEOUT)
            raw.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            sock = context.wrap_socket(raw, server_hostname=self.host)
        except OSError as exc:
            raise self._unreachable(exc) from None
        der = sock.getpeercert(binary_form=True) or b""
        presented = "sha256:" + hashlib.sha256(der).hexdigest()
        if presented != self.tls_pin:
            sock.close()
            raise SourceUnreachable(
                f"{self.endpoint} presented a TLS certificate ({presented}) other than the "
                f"source's pinned one ({self.tls_pin}); nothing was sent or changed",
                hint="if the source really made new keys, enroll again: trueup follow INVITE "
                "--name NAME; otherwise something is in the way of the connection",
            )
        self._sock = sock
        return sock

    def _unreachable(self, exc: BaseException) -> SourceUnreachable:
        return SourceUnreachable(
            f"cannot reach the source at {self.endpoint}: {exc or type(exc).__name__}; "
            "nothing was changed",
            hint="check that `trueup source serve` runs there, then sync again",
        )

    def request(
        self,
        method: str,
        path: str,
        body: Any = None,
        headers: dict[str, str] | None = None,
        limit: int = MAX_REVISION_BYTES,
    ) -> Response:
        data = json.dumps(body).encode() if body is not None else b""
        sent = dict(headers or {})
        if body is not None:
            sent["Content-Type"] = "application/json"
        try:
            status, received = self._send(method, path, sent, data)
            # A HEAD answer's length is the GET's, but no body follows it.
            content = b"" if method == "HEAD" else b"".join(self._body(received, limit))
        except OSError as exc:
            self.close()
            raise self._unreachable(exc) from None
        response = Response(status, received, content)
        _refused(response)
        return response

    def download(self, path: str, into: Path, size: int) -> int:
        """Append ``path``'s body to ``into`` from where it stops (``Range``); bytes received.

        A connection cut midway leaves what arrived in ``into`` for the next
        attempt to resume from; the caller checks the digest once it is whole.
        """
        have = into.stat().st_size if into.exists() else 0
        headers = {"Range": f"bytes={have}-"} if have else {}
        got = 0
        try:
            status, received = self._send("GET", path, headers, b"")
            if status not in (200, 206):
                response = Response(status, received, b"".join(self._body(received, 65536)))
                _refused(response)
                raise SourceUnreachable(f"the source answered {status} for {path}")
            start = have if status == 206 else 0
            with open(into, "ab" if status == 206 else "wb") as handle:
                for chunk in self._body(received, size - start):
                    got += len(chunk)
                    handle.write(chunk)
        except OSError as exc:
            self.close()
            raise self._unreachable(exc) from None
        return got

    # -- HTTP/1.1, as much as a source speaks -----------------------------------
    def _send(
        self, method: str, path: str, headers: dict[str, str], data: bytes
    ) -> tuple[int, dict[str, str]]:
        sock = self._connection()
        lines = [f"{method} {path} HTTP/1.1", f"Host: {self.host}:{self.port}"]
        if self.credential:
            lines.append(f"Authorization: Bearer {self.credential}")
        lines += [f"{name}: {value}" for name, value in headers.items()]
        lines.append(f"Content-Length: {len(data)}")
        sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + data)
        head = self._until(b"\r\n\r\n", MAX_HEADER_BYTES)
        self.received += len(head)
        status_line, *fields = head.decode("latin-1").split("\r\n")
        try:
            status = int(status_line.split(" ", 2)[1])
        except (IndexError, ValueError):
            raise _Cut(f"not an HTTP response: {status_line[:80]!r}") from None
        received = {}
        for field in fields:
            name, _, value = field.partition(":")
            received[name.strip().lower()] = value.strip()
        return status, received

    def _body(self, headers: dict[str, str], limit: int) -> Iterator[bytes]:
        """The body's bytes as they arrive; more than ``limit`` is refused."""
        if headers.get("transfer-encoding", "").lower() == "chunked":
            yield from self._chunked(limit)
            return
        length = int(headers.get("content-length", "0"))
        if length > limit:
            raise SourceUnreachable(f"the source sent more than {limit} bytes")
        yield from self._exactly(length)

    def _chunked(self, limit: int) -> Iterator[bytes]:
        total = 0
        while True:
            size = int(self._until(b"\r\n", 1024).split(b";")[0], 16)
            if size == 0:
                self._until(b"\r\n", MAX_HEADER_BYTES)
                return
            total += size
            if total > limit:
                raise SourceUnreachable(f"the source sent more than {limit} bytes")
            yield from self._exactly(size)
            self._until(b"\r\n", 2)

    def _exactly(self, size: int) -> Iterator[bytes]:
        """The next ``size`` bytes, ``CHUNK`` at a time at most.

        Both framings (a content length, and each chunk of a chunked body)
        read a known count of bytes this way.
        """
        left = size
        while left:
            chunk = self._read(min(left, CHUNK))
            left -= len(chunk)
            yield chunk

    def _read(self, most: int) -> bytes:
        if not self._buffer:
            self._fill()
        chunk, self._buffer = self._buffer[:most], self._buffer[most:]
        self.received += len(chunk)
        return chunk

    def _until(self, mark: bytes, most: int) -> bytes:
        """Bytes up to and without ``mark`` (consumed)."""
        while (end := self._buffer.find(mark)) < 0:
            if len(self._buffer) > most:
                raise _Cut("a header line too long")
            self._fill()
        found, self._buffer = self._buffer[:end], self._buffer[end + len(mark) :]
        return found

    def _fill(self) -> None:
        assert self._sock is not None
        data = self._sock.recv(CHUNK)
        if not data:
            raise _Cut("the connection closed mid-response")
        self._buffer += data


def _refused(response: Response) -> None:
    """A 401 or 403 is the source refusing this follower (exit 5); a 5xx is transport."""
    if response.status in (401, 403):
        raise FollowerRefused(
            f"the source refused this follower: {_reason(response)}",
            hint="ask the source's operator for a new invitation, then: "
            "trueup follow INVITE --name NAME",
        )
    if response.status >= 500:
        raise SourceUnreachable(
            f"the source failed to answer: {response.status} {_reason(response)}"
        )


def _reason(response: Response) -> str:
    try:
        return str(response.json().get("error") or response.status)
    except (ValueError, AttributeError):
        return str(response.status)
