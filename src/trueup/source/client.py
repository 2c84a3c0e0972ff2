"""A follower's HTTPS client: the pinned certificate, a bearer credential, bounded reads.

The standard library's ``http.client`` and ``ssl``, not httpx: ``trueup
sync`` against an unchanged source is one request, and the whole process
must stay quick. The certificate is not checked against any authority but
pinned: the sha256 of the one the source presented at enrollment, compared
before a byte of the request is sent.
"""

from __future__ import annotations

import hashlib
import http.client
import json
import ssl
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from trueup.source import FollowerRefused, SourceUnreachable

TIMEOUT = 15.0
MAX_REVISION_BYTES = 64 * 1024 * 1024
CHUNK = 256 * 1024


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
        parts = urlsplit(endpoint)
        if parts.scheme != "https" or not parts.hostname:
            raise SourceUnreachable(f"{endpoint!r} is not an https:// endpoint")
        self.endpoint = endpoint
        self.host = parts.hostname
        self.port = parts.port or 443
        self.tls_pin = tls_pin
        self.credential = credential
        self._conn: http.client.HTTPSConnection | None = None
        #: Bytes received, bodies and headers' worth: what a sync cost the wire.
        self.received = 0

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def _connection(self) -> http.client.HTTPSConnection:
        if self._conn is not None:
            return self._conn
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        context.minimum_version = ssl.TLSVersion.TLSv1_2
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE  # pinned below instead: a self-signed certificate
        conn = http.client.HTTPSConnection(self.host, self.port, timeout=TIMEOUT, context=context)
        try:
            conn.connect()
        except OSError as exc:
            raise self._unreachable(exc) from None
        assert isinstance(conn.sock, ssl.SSLSocket)
        der = conn.sock.getpeercert(binary_form=True) or b""
        presented = "sha256:" + hashlib.sha256(der).hexdigest()
        if presented != self.tls_pin:
            conn.close()
            raise SourceUnreachable(
                f"{self.endpoint} presented a TLS certificate ({presented}) other than the "
                f"source's pinned one ({self.tls_pin}); nothing was sent or changed",
                hint="if the source really made new keys, enroll again: trueup follow INVITE "
                "--name NAME; otherwise something is in the way of the connection",
            )
        self._conn = conn
        return conn

    def _unreachable(self, exc: BaseException) -> SourceUnreachable:
        return SourceUnreachable(
            f"cannot reach the source at {self.endpoint}: {exc}; nothing was changed",
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
        sent = dict(headers or {})
        if self.credential:
            sent["Authorization"] = f"Bearer {self.credential}"
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            sent["Content-Type"] = "application/json"
        conn = self._connection()
        try:
            conn.request(method, path, data, sent)
            answer = conn.getresponse()
            content = _bounded(answer, limit)
        except (OSError, http.client.HTTPException) as exc:
            self.close()
            raise self._unreachable(exc) from None
        received = {k.lower(): v for k, v in answer.getheaders()}
        self.received += len(content) + sum(len(k) + len(v) + 4 for k, v in received.items())
        response = Response(answer.status, received, content)
        _refused(response)
        return response

    def download(self, path: str, into: Path, size: int) -> int:
        """Append ``path``'s body to ``into`` from where it stops (``Range``); bytes received.

        A connection cut midway leaves what arrived in ``into`` for the next
        attempt to resume from; the caller checks the digest once it is whole.
        """
        have = into.stat().st_size if into.exists() else 0
        headers = {"Range": f"bytes={have}-"} if have else {}
        if self.credential:
            headers["Authorization"] = f"Bearer {self.credential}"
        conn = self._connection()
        got = 0
        try:
            conn.request("GET", path, headers=headers)
            answer = conn.getresponse()
            if answer.status not in (200, 206):
                response = Response(answer.status, {}, _bounded(answer, 65536))
                _refused(response)
                raise SourceUnreachable(f"the source answered {answer.status} for {path}")
            mode = "ab" if answer.status == 206 else "wb"
            with open(into, mode) as handle:
                while chunk := answer.read(CHUNK):
                    got += len(chunk)
                    if got + (have if mode == "ab" else 0) > size:
                        raise SourceUnreachable(f"{path} is larger than the revision says")
                    handle.write(chunk)
            if answer.length not in (None, 0):
                raise http.client.IncompleteRead(b"", answer.length)
        except (OSError, http.client.HTTPException) as exc:
            self.close()
            raise self._unreachable(exc) from None
        finally:
            self.received += got
        return got


def _bounded(answer: http.client.HTTPResponse, limit: int) -> bytes:
    content = answer.read(limit + 1)
    if len(content) > limit:
        raise SourceUnreachable(f"the source sent more than {limit} bytes")
    return content


def _refused(response: Response) -> None:
    """A 401 or 403 is the source refusing this follower (exit 5); a 5xx is transport."""
    if response.status in (401, 403):
        reason = _reason(response)
        raise FollowerRefused(
            f"the source refused this follower: {reason}",
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
