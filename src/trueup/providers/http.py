"""The one HTTP layer every provider client goes through.

Why one layer: trueup journals a remote call before it makes it and records
what the provider returned right after, so no client may hide extra writes
or retry differently from the others. Here, and only here:

- every request has a timeout (connect, read, write, pool);
- transient failures (429, 5xx, connection errors) are retried a bounded
  number of times with exponential backoff and full jitter, and a
  ``Retry-After`` header is honoured (up to a cap);
- a write that may already have happened (a 5xx or a broken connection after
  the request was sent) is only replayed when the caller says replaying is
  safe; otherwise ``AmbiguousWrite`` lets the caller look the object up by
  name before trying again, so a retry never duplicates anything;
- a ``Retry-After`` pauses every thread sending to that provider, not only
  the one that was told (one ``Pause`` per provider client): concurrent steps
  would otherwise keep hitting a limit the provider already said was reached;
- every attempt is counted (the benchmark and the tests read the counters);
- the bearer token is registered with redaction before the first request,
  and no request or response body is ever logged.

Observation gets a read-only view of the same client (``reader()``): it can
GET and search, and a write attempt is a bug that raises at once.
"""

from __future__ import annotations

import functools
import random
import ssl
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from email.utils import parsedate_to_datetime
from typing import Any, Literal, TypeVar

import httpx

from trueup import __version__
from trueup.errors import ExitCode, TrueupError
from trueup.redact import redact_message, register_secret

T = TypeVar("T")
R = TypeVar("R")

Replay = Literal["safe", "unsent-only"]
_READ_METHODS = frozenset({"GET", "HEAD"})
_TELL_AFTER = 5.0  # seconds of waiting worth a line on stderr
_RETRY_STATUSES = frozenset({408, 429})  # and every 5xx (Cloudflare's own 52x included)


class ProviderError(TrueupError):
    """A provider refused a request; ``codes`` are its own error codes or keys."""

    def __init__(
        self,
        provider: str,
        method: str,
        path: str,
        status: int | None,
        message: str,
        codes: Iterable[int | str] = (),
    ) -> None:
        shown = f"{provider}: {method} {path}: " + (f"HTTP {status}: " if status else "")
        super().__init__(redact_message(shown + message), hint=_hint(provider, status))
        self.provider = provider
        self.status = status
        self.detail = message
        self.codes = tuple(codes)
        self.exit_code = ExitCode.AUTH if status in (401, 403) else ExitCode.TRANSPORT

    def has(self, code: int | str) -> bool:
        return any(code == c or (isinstance(c, str) and str(code) in c) for c in self.codes)


def _hint(provider: str, status: int | None) -> str:
    """The next step after ``provider`` answered ``status`` (or nothing)."""
    variable = f"TRUEUP_{provider.upper()}"
    if status in (401, 403):
        return f"check the {provider} token ({variable}_TOKEN) and what it may do"
    if status is not None and 400 <= status < 500 and status not in _RETRY_STATUSES:
        return f"{provider} refused the request as sent: its message above says why"
    return (
        f"check that {variable}_URL is {provider}'s API and that it answers, then run the "
        "same command again (an apply resumes where it stopped)"
    )


class UnreadableAnswer(TrueupError):
    """A provider answered with data its client cannot read (a proxy's page, another API)."""

    exit_code = ExitCode.TRANSPORT


def answer(
    response: httpx.Response, provider: str, expect: type | tuple[type, ...] = (dict, list)
) -> Any:
    """The JSON body of a provider's answer, refused unless it has the ``expect``ed shape.

    A proxy's HTML page served with a 200, or a list where an object belongs,
    is the provider's failure (exit 6, naming the request), never an internal
    error of trueup's.
    """
    request = response.request
    try:
        body = response.json()
    except ValueError:
        raise ProviderError(
            provider,
            request.method,
            request.url.path,
            response.status_code,
            f"the answer is not JSON (it starts {response.text[:40]!r})",
        ) from None
    if not isinstance(body, expect):
        raise ProviderError(
            provider,
            request.method,
            request.url.path,
            response.status_code,
            f"the answer is a JSON {type(body).__name__}, not what this API answers there",
        )
    return body


def misread(exc: BaseException) -> UnreadableAnswer | None:
    """``exc`` (a KeyError, TypeError...) as the provider's answer it came from reading,
    when it was raised in a provider's client code; ``None`` for anything else, which
    stays the bug it is."""
    tb = exc.__traceback__
    place = ""
    while tb is not None:  # the innermost frame of trueup's own code
        name = tb.tb_frame.f_code.co_filename.replace("\\", "/")
        if "/trueup/" in name:
            place = name
        tb = tb.tb_next
    parts = place.split("/")
    if "providers" not in parts[:-1] or parts[-2] == "providers":
        return None
    provider = parts[-2]
    return UnreadableAnswer(
        f"{provider} answered with data trueup cannot read ({type(exc).__name__}: {exc})",
        hint=f"check that trueup is pointed at {provider}'s API (not a proxy or another "
        "service), then plan again",
    )


class AmbiguousWrite(ProviderError):
    """A write was sent but its fate is unknown (5xx or a broken connection)."""


ErrorParser = Callable[[httpx.Response], tuple[str, list[int | str]]]


def json_object(response: httpx.Response) -> dict[str, Any] | None:
    """The body of an error response when it is a JSON object, else None."""
    try:
        body = response.json()
    except ValueError:
        return None
    return body if isinstance(body, dict) else None


def plain_error(response: httpx.Response) -> tuple[str, list[int | str]]:
    """Fallback parser: ``message`` of a JSON body, else the status phrase."""
    body = json_object(response)
    if body is not None and isinstance(body.get("message"), str):
        return body["message"], []
    return response.reason_phrase or "error", []


def gone_is_none(call: Callable[..., R], *args: Any) -> R | None:
    """``call(*args)``, or None when the provider answers 404 (the object is gone)."""
    try:
        return call(*args)
    except ProviderError as exc:
        if exc.status == 404:
            return None
        raise


@dataclass(frozen=True)
class RetryPolicy:
    """Bounded retries: ``attempts`` in all, backoff ``base * 2**n`` capped, full jitter."""

    attempts: int = 6
    base: float = 0.05
    cap: float = 5.0
    #: Cloudflare's window is 5 minutes: a Retry-After of up to that is waited out.
    max_retry_after: float = 300.0

    def delay(self, attempt: int, retry_after: float | None, rng: random.Random) -> float:
        jittered = rng.uniform(0, min(self.cap, self.base * (2**attempt)))
        if retry_after is not None:
            return max(retry_after, jittered)
        return jittered


@dataclass
class RequestStats:
    """What a client sent: attempts, retries and final statuses (thread-safe)."""

    requests: int = 0
    retries: int = 0
    statuses: Counter[str] = field(default_factory=Counter)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def count(self, status: str, retry: bool) -> None:
        with self._lock:
            self.requests += 1
            self.statuses[status] += 1
            if retry:
                self.retries += 1

    def to_json(self) -> dict[str, Any]:
        with self._lock:
            return {
                "requests": self.requests,
                "retries": self.retries,
                "statuses": dict(self.statuses),
            }


class Pause:
    """Until when a provider asked not to be sent anything (``Retry-After``); thread-safe.

    Shared by a provider's client and its readers, so every concurrent step
    sending to that provider waits, not only the one that was told.
    """

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self.until = 0.0
        self._lock = threading.Lock()

    def hold(self, seconds: float) -> float:
        """Nothing more is sent for ``seconds`` from now; the moment the pause ends."""
        with self._lock:
            self.until = max(self.until, self._clock() + seconds)
            return self.until

    def remaining(self, covered: float) -> float:
        """What is left to wait of a pause that ends after ``covered`` (waited out already)."""
        with self._lock:
            if self.until <= covered:
                return 0.0
            return max(0.0, self.until - self._clock())


DEFAULT_TIMEOUT = httpx.Timeout(30.0, connect=10.0)


class HttpClient:
    """A provider's base URL and token, with the retry and counting rules above."""

    def __init__(
        self,
        provider: str,
        base_url: str,
        token: str,
        *,
        headers: Mapping[str, str] | None = None,
        timeout: httpx.Timeout = DEFAULT_TIMEOUT,
        policy: RetryPolicy | None = None,
        parse_error: ErrorParser = plain_error,
        max_connections: int = 32,
        sleep: Callable[[float], None] = time.sleep,
        read_only: bool = False,
        _shared: httpx.Client | None = None,
        _stats: RequestStats | None = None,
        _pause: Pause | None = None,
    ) -> None:
        register_secret(token)
        self.provider = provider
        self.base_url = base_url.rstrip("/")
        self.policy = policy or RetryPolicy()
        self.parse_error = parse_error
        self.read_only = read_only
        self.stats = _stats if _stats is not None else RequestStats()
        self.pause = _pause or Pause()
        self._sleep = sleep
        self._rng = random.Random()
        self._token = token
        self._headers = dict(headers or {})
        self._max_connections = max_connections
        self._timeout = timeout
        self._client = _shared or httpx.Client(
            base_url=self.base_url,
            headers={
                "Authorization": f"Bearer {token}",
                "Accept": "application/json",
                "User-Agent": f"trueup/{__version__}",
                **self._headers,
            },
            timeout=timeout,
            limits=httpx.Limits(
                max_connections=max_connections, max_keepalive_connections=max_connections
            ),
            verify=tls_context() if self.base_url.startswith("https:") else False,
        )

    def reader(self) -> HttpClient:
        """The same connection pool and counters, unable to write."""
        return HttpClient(
            self.provider,
            self.base_url,
            self._token,
            timeout=self._timeout,
            policy=self.policy,
            parse_error=self.parse_error,
            sleep=self._sleep,
            read_only=True,
            _shared=self._client,
            _stats=self.stats,
            _pause=self.pause,
        )

    def close(self) -> None:
        self._client.close()

    # -- requests -----------------------------------------------------------------
    def get(self, path: str, params: Mapping[str, Any] | None = None, **kw: Any) -> Any:
        return answer(self.request("GET", path, params=params, **kw), self.provider)

    def request(
        self,
        method: str,
        path: str,
        *,
        params: Mapping[str, Any] | None = None,
        json: Any = None,
        headers: Mapping[str, str] | None = None,
        replay: Replay = "safe",
        missing_ok: bool = False,
    ) -> httpx.Response:
        """Send with retries; a 4xx raises ``ProviderError`` (404 returns when ``missing_ok``)."""
        method = method.upper()
        if self.read_only and method not in _READ_METHODS and not path.endswith("/_search"):
            raise RuntimeError(f"observation tried to write: {method} {path}")
        attempts = max(1, self.policy.attempts)
        covered = 0.0  # the end of the last pause this thread waited out itself
        for attempt in range(attempts):
            last = attempt == attempts - 1
            retry_after: float | None = None
            if (held := self.pause.remaining(covered)) > 0:  # another thread was told to wait
                self._sleep(held)
            try:
                response = self._client.request(
                    method, path, params=params, json=json, headers=headers
                )
            except (httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout) as exc:
                # Never reached the server: replaying is always safe.
                self.stats.count("unsent", attempt > 0)
                if last:
                    raise self._transport(method, path, exc) from None
            except httpx.TransportError as exc:
                self.stats.count("broken", attempt > 0)
                if replay != "safe" and method not in _READ_METHODS:
                    raise AmbiguousWrite(
                        self.provider, method, path, None, f"connection broke: {exc}"
                    ) from None
                if last:
                    raise self._transport(method, path, exc) from None
            else:
                status = response.status_code
                self.stats.count(str(status), attempt > 0)
                if status < 400 or (status == 404 and missing_ok):
                    return response
                if status not in _RETRY_STATUSES and status < 500:
                    raise self._error(method, path, response)
                if status >= 500 and replay != "safe" and method not in _READ_METHODS:
                    raise self._error(method, path, response, AmbiguousWrite)
                if last:
                    raise self._error(method, path, response)
                retry_after = _retry_after(response)
                if retry_after is not None and retry_after > self.policy.max_retry_after:
                    raise self._error(method, path, response)
                if retry_after:
                    covered = self.pause.hold(retry_after)
            delay = self.policy.delay(attempt, retry_after, self._rng)
            if delay >= _TELL_AFTER:  # a long silence would look like a hang
                print(
                    f"trueup: {self.provider} asks to wait {delay:.0f} s before retrying "
                    f"{method} {path} (rate limited); waiting",
                    file=sys.stderr,
                    flush=True,
                )
            self._sleep(delay)
        raise AssertionError("unreachable")  # pragma: no cover

    def _error(
        self,
        method: str,
        path: str,
        response: httpx.Response,
        cls: type[ProviderError] = ProviderError,
    ) -> ProviderError:
        message, codes = self.parse_error(response)
        return cls(self.provider, method, path, response.status_code, message, codes)

    def _transport(self, method: str, path: str, exc: Exception) -> ProviderError:
        return ProviderError(
            self.provider,
            method,
            path,
            None,
            f"cannot reach {self.base_url}: {type(exc).__name__}: {exc}",
        )


@functools.cache
def tls_context() -> ssl.SSLContext:
    """One verifying TLS context per process: the CA store is loaded once, not per client.

    A plain-http base URL (a fake on loopback) gets none: it never speaks TLS,
    since clients only ever request paths under their own base URL.
    """
    return ssl.create_default_context()


def _retry_after(response: httpx.Response) -> float | None:
    raw = response.headers.get("retry-after")
    if raw is None:
        return None
    try:
        return max(0.0, float(raw))
    except ValueError:
        pass
    try:
        moment = parsedate_to_datetime(raw)
    except (TypeError, ValueError):
        return None
    return max(0.0, moment.timestamp() - time.time())


def fan_out(function: Callable[[T], R], items: Iterable[T], max_workers: int = 32) -> list[R]:
    """Call ``function`` on every item concurrently; results in input order.

    Reads of one provider's scope are independent, so they overlap their
    network latency; the first exception propagates once all have finished.
    """
    todo = list(items)
    if len(todo) <= 1:
        return [function(item) for item in todo]
    with ThreadPoolExecutor(max_workers=min(max_workers, len(todo))) as pool:
        return list(pool.map(function, todo))
