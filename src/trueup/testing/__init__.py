"""Fake provider servers for tests: Cloudflare, Coolify and ZITADEL over real HTTP.

``FakeProviders`` runs all three on loopback; ``Faults`` switches latency,
rate limits, server errors and dropped connections on and off. The
per-provider app factories and state classes live in the subpackages
(`trueup.testing.cloudflare`, `.coolify`, `.zitadel`).

`FakeProviders` is imported lazily so ``python -m trueup.testing.servers``
does not find its own module already imported by the package.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from trueup.testing.faults import Faults
from trueup.testing.requestlog import LoggedRequest, RequestLog

if TYPE_CHECKING:
    from trueup.testing.servers import FakeProviders, ProviderMap

__all__ = ["FakeProviders", "Faults", "LoggedRequest", "ProviderMap", "RequestLog"]


def __getattr__(name: str) -> Any:
    if name in ("FakeProviders", "ProviderMap"):
        from trueup.testing import servers

        return getattr(servers, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
