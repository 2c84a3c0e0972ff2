"""The complete Cloudflare fake state (zones, DNS, email routing)."""

from __future__ import annotations

from trueup.testing.cloudflare.dns import DnsMixin
from trueup.testing.cloudflare.email import EmailMixin


class CloudflareState(DnsMixin, EmailMixin):
    """Account, zones, DNS records and Email Routing of one fake Cloudflare.

    Seed with `add_zone` (returns the zone id) and read `account_id`; confirm
    destination addresses with `verify_address`.
    """
