"""The sample org ("acme") the org tests plan and apply against the fakes."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from trueup.testing.servers import FakeProviders

ACME_ORG = """
[org]
id = "acme"
name = "Acme Inc"
domain = "acme.test"

[[identity.project]]
name = "portal"
roles = ["admin", "member"]
apps = [{ name = "portal-web", redirect_uris = ["https://portal.acme.test/callback"] }]

[[dns]]
type = "A"
name = "portal"
content = "203.0.113.10"

[mail]
level = "forward"
routes = [{ address = "hello@acme.test", forward_to = ["founders@example.com"] }]

[[app]]
name = "portal"
image = "ghcr.io/acme/portal:1.4.2"
domains = ["https://portal.acme.test"]
env = { LOG_LEVEL = "info" }

[chat]
image = "ghcr.io/acme/chat:2.1"
"""


def seed_acme(fakes: FakeProviders) -> None:
    """Reset the fakes to hold what acme needs but cannot create: its zone, a confirmed address."""
    fakes.reset()
    fakes.cloudflare.add_zone("acme.test")
    fakes.cloudflare.add_address("founders@example.com", verified=True)
