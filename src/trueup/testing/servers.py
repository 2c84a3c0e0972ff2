"""Run the three fakes over real HTTP on loopback.

`FakeProviders` starts one uvicorn server per provider, each on its own
ephemeral port in its own daemon thread, and waits until all are listening;
leaving the ``with`` block shuts them down cleanly. Tests get base URLs,
tokens, the state objects (for seeding and assertions), the `Faults` and
the request logs. ``python -m trueup.testing.servers`` serves the same
fakes until SIGINT/SIGTERM for manual runs and other-language clients.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from types import FrameType, TracebackType
from typing import Any, Generic, Self, TypeVar

import uvicorn
from starlette.applications import Starlette

from trueup.testing import cloudflare, coolify, zitadel
from trueup.testing.faults import Faults
from trueup.testing.requestlog import RequestLog

T = TypeVar("T")
PROVIDERS = ("cloudflare", "coolify", "zitadel")


@dataclass(frozen=True)
class ProviderMap(Generic[T]):
    """One value per provider, by attribute (``.cloudflare``) or key (``["cloudflare"]``)."""

    cloudflare: T
    coolify: T
    zitadel: T

    def __getitem__(self, name: str) -> T:
        if name not in PROVIDERS:
            raise KeyError(name)
        value: T = getattr(self, name)
        return value

    def items(self) -> Iterator[tuple[str, T]]:
        for name in PROVIDERS:
            yield name, self[name]

    def as_dict(self) -> dict[str, T]:
        return dict(self.items())


class _Server:
    """One uvicorn server on a pre-bound socket, run in a daemon thread."""

    def __init__(self, name: str, app: Starlette, host: str, port: int) -> None:
        self.name = name
        # proto=IPPROTO_TCP matters: asyncio only sets TCP_NODELAY on sockets that
        # say so, and without it every response stalls on the peer's delayed ACK.
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        self.socket = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
        self.socket.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.socket.bind((host, port))
        self.host = host
        self.port: int = self.socket.getsockname()[1]
        config = uvicorn.Config(
            app,
            log_config=None,
            log_level="warning",
            access_log=False,
            lifespan="off",
            http="h11",
            loop="asyncio",
            timeout_graceful_shutdown=2,
        )
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(
            target=self.server.run,
            kwargs={"sockets": [self.socket]},
            name=f"trueup-fake-{name}",
            daemon=True,
        )

    @property
    def origin(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"

    def start(self) -> None:
        self.thread.start()

    def wait_started(self, deadline: float) -> None:
        while not self.server.started:
            if not self.thread.is_alive():
                raise RuntimeError(f"fake {self.name} server failed to start")
            if time.monotonic() > deadline:
                raise TimeoutError(f"fake {self.name} server did not start in time")
            time.sleep(0.005)

    def request_stop(self) -> None:
        self.server.should_exit = True

    def join(self, timeout: float) -> None:
        if self.thread.is_alive():
            self.thread.join(timeout)
        self.socket.close()


class FakeProviders:
    """Fake Cloudflare, Coolify and ZITADEL servers on 127.0.0.1.

    ::

        with FakeProviders() as fakes:
            zone_id = fakes.cloudflare.add_zone("acme.test")
            httpx.get(f"{fakes.cloudflare_url}/zones/{zone_id}",
                      headers={"Authorization": f"Bearer {fakes.tokens.cloudflare}"})

    ``faults`` is one `Faults` (copied for each provider) or a mapping by
    provider name; ``state_dir`` keeps ``<provider>.json`` files so state
    survives restarts; ``port_base`` 0 means ephemeral ports, otherwise
    Cloudflare, Coolify and ZITADEL listen on N, N+1 and N+2.
    """

    def __init__(
        self,
        *,
        tokens: Mapping[str, str] | None = None,
        faults: Faults | Mapping[str, Faults] | None = None,
        state_dir: str | os.PathLike[str] | None = None,
        host: str = "127.0.0.1",
        port_base: int = 0,
        startup_timeout: float = 10.0,
    ) -> None:
        given = dict(tokens or {})
        unknown = set(given) - set(PROVIDERS)
        if unknown:
            raise ValueError(f"unknown provider(s) in tokens: {', '.join(sorted(unknown))}")
        self.tokens = ProviderMap(
            cloudflare=given.get("cloudflare", cloudflare.DEFAULT_TOKEN),
            coolify=given.get("coolify", coolify.DEFAULT_TOKEN),
            zitadel=given.get("zitadel", zitadel.DEFAULT_TOKEN),
        )
        self.faults = ProviderMap(
            cloudflare=_faults_for("cloudflare", faults),
            coolify=_faults_for("coolify", faults),
            zitadel=_faults_for("zitadel", faults),
        )
        self.request_log = ProviderMap(
            cloudflare=RequestLog("cloudflare"),
            coolify=RequestLog("coolify"),
            zitadel=RequestLog("zitadel"),
        )
        directory = Path(state_dir) if state_dir is not None else None
        self.state_dir = directory
        self.cloudflare = cloudflare.CloudflareState(_file(directory, "cloudflare"))
        self.coolify = coolify.CoolifyState(_file(directory, "coolify"))
        self.zitadel = zitadel.ZitadelState(_file(directory, "zitadel"))
        self.host = host
        self.port_base = port_base
        self.startup_timeout = startup_timeout
        self._servers: dict[str, _Server] = {}

    # -- lifecycle -----------------------------------------------------------------------

    def start(self) -> Self:
        """Bind, start and wait for all three servers (idempotent)."""
        if self._servers:
            return self
        apps = {
            "cloudflare": cloudflare.create_app(
                self.cloudflare,
                token=self.tokens.cloudflare,
                faults=self.faults.cloudflare,
                log=self.request_log.cloudflare,
            ),
            "coolify": coolify.create_app(
                self.coolify,
                token=self.tokens.coolify,
                faults=self.faults.coolify,
                log=self.request_log.coolify,
            ),
            "zitadel": zitadel.create_app(
                self.zitadel,
                token=self.tokens.zitadel,
                faults=self.faults.zitadel,
                log=self.request_log.zitadel,
            ),
        }
        try:
            for offset, name in enumerate(PROVIDERS):
                port = self.port_base + offset if self.port_base else 0
                self._servers[name] = _Server(name, apps[name], self.host, port)
            for server in self._servers.values():
                server.start()
            deadline = time.monotonic() + self.startup_timeout
            for server in self._servers.values():
                server.wait_started(deadline)
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self, timeout: float = 5.0) -> None:
        """Ask every server to exit, then wait for the threads (idempotent)."""
        servers = list(self._servers.values())
        self._servers = {}
        for server in servers:
            server.request_stop()
        for server in servers:
            server.join(timeout)

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    @property
    def running(self) -> bool:
        return bool(self._servers)

    # -- addresses -----------------------------------------------------------------------

    def origin(self, provider: str) -> str:
        """``http://127.0.0.1:<port>`` of one provider (its ``/_fake`` lives here)."""
        if provider not in self._servers:
            raise RuntimeError("FakeProviders is not running (use it as a context manager)")
        return self._servers[provider].origin

    @property
    def cloudflare_url(self) -> str:
        """Base URL including ``/client/v4`` (what the Cloudflare SDK calls ``base_url``)."""
        return self.origin("cloudflare") + cloudflare.API_PREFIX

    @property
    def coolify_url(self) -> str:
        """Base URL including ``/api/v1``."""
        return self.origin("coolify") + coolify.API_PREFIX

    @property
    def zitadel_url(self) -> str:
        """The instance origin; endpoints live under ``/management/v1`` and ``/v2``."""
        return self.origin("zitadel")

    @property
    def urls(self) -> ProviderMap[str]:
        return ProviderMap(self.cloudflare_url, self.coolify_url, self.zitadel_url)

    def env(self, *, account: bool = False) -> dict[str, str]:
        """The ``TRUEUP_*`` variables that point trueup at these fakes (URL and token of each).

        ``account`` adds ``TRUEUP_CLOUDFLARE_ACCOUNT``, the fake Cloudflare account's id.
        """
        cloudflare_account = (
            {"TRUEUP_CLOUDFLARE_ACCOUNT": self.cloudflare.account_id} if account else {}
        )
        return {
            "TRUEUP_CLOUDFLARE_URL": self.cloudflare_url,
            "TRUEUP_CLOUDFLARE_TOKEN": self.tokens.cloudflare,
            **cloudflare_account,
            "TRUEUP_COOLIFY_URL": self.coolify_url,
            "TRUEUP_COOLIFY_TOKEN": self.tokens.coolify,
            "TRUEUP_ZITADEL_URL": self.zitadel_url,
            "TRUEUP_ZITADEL_TOKEN": self.tokens.zitadel,
        }

    # -- conveniences --------------------------------------------------------------------

    def reset(self) -> None:
        """Empty every state (fresh seeds), restore construction faults, clear logs."""
        for store in (self.cloudflare, self.coolify, self.zitadel):
            store.reset()
        for _, faults in self.faults.items():
            faults.reset()
        for _, log in self.request_log.items():
            log.clear()

    def describe(self) -> dict[str, Any]:
        """What ``main`` prints: URLs, tokens, control endpoints and seeded ids."""
        return {
            "cloudflare_url": self.cloudflare_url,
            "coolify_url": self.coolify_url,
            "zitadel_url": self.zitadel_url,
            "tokens": self.tokens.as_dict(),
            "control": {name: f"{self.origin(name)}/_fake" for name in PROVIDERS},
            "cloudflare_account_id": self.cloudflare.account_id,
            "coolify_server_uuid": self.coolify.server_uuid,
            "zitadel_default_org_id": self.zitadel.default_org_id,
            "state_dir": str(self.state_dir) if self.state_dir else None,
        }


def _faults_for(name: str, faults: Faults | Mapping[str, Faults] | None) -> Faults:
    if faults is None:
        return Faults()
    if isinstance(faults, Faults):
        return faults.copy()
    unknown = set(faults) - set(PROVIDERS)
    if unknown:
        raise ValueError(f"unknown provider(s) in faults: {', '.join(sorted(unknown))}")
    return faults.get(name) or Faults()


def _file(directory: Path | None, name: str) -> Path | None:
    return directory / f"{name}.json" if directory is not None else None


@contextmanager
def _shutdown_signals() -> Iterator[Callable[[], None]]:
    """Yield a function that blocks until SIGINT or SIGTERM arrives.

    On POSIX the signals are blocked before the server threads exist (they
    inherit the mask) and collected with ``sigwait`` in this thread, so
    shutdown starts at once; elsewhere a flag set by a handler is polled.
    """
    signals = {signal.SIGINT, signal.SIGTERM}
    if hasattr(signal, "pthread_sigmask"):
        previous_mask = signal.pthread_sigmask(signal.SIG_BLOCK, signals)

        def wait_blocked() -> None:
            signal.sigwait(signals)

        try:
            yield wait_blocked
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, previous_mask)
        return
    stop = threading.Event()

    def on_signal(signum: int, frame: FrameType | None) -> None:
        stop.set()

    def wait_polling() -> None:
        while not stop.wait(0.2):
            pass

    previous = {sig: signal.signal(sig, on_signal) for sig in signals}
    try:
        yield wait_polling
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def main(argv: Sequence[str] | None = None) -> int:
    """Serve all three fakes until SIGINT/SIGTERM; print one JSON line describing them."""
    parser = argparse.ArgumentParser(
        prog="python -m trueup.testing.servers",
        description="Serve fake Cloudflare, Coolify and ZITADEL APIs on loopback.",
    )
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument(
        "--port-base",
        type=int,
        default=0,
        help="Cloudflare on N, Coolify on N+1, ZITADEL on N+2 (0: ephemeral ports)",
    )
    parser.add_argument("--state-dir", default=None, help="persist state as JSON files here")
    parser.add_argument("--zone", action="append", default=[], help="seed a Cloudflare zone")
    for name in PROVIDERS:
        parser.add_argument(f"--{name}-token", default=None, help=f"bearer token for {name}")
    args = parser.parse_args(argv)
    tokens = {
        name: getattr(args, f"{name}_token") for name in PROVIDERS if getattr(args, f"{name}_token")
    }

    fakes = FakeProviders(
        tokens=tokens, state_dir=args.state_dir, host=args.host, port_base=args.port_base
    )
    with _shutdown_signals() as wait_for_signal, fakes:
        for zone in args.zone:
            fakes.cloudflare.add_zone(zone)
        print(json.dumps(fakes.describe()), flush=True)
        wait_for_signal()
    return 0


if __name__ == "__main__":
    sys.exit(main())
