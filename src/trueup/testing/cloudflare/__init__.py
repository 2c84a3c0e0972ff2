"""Fake Cloudflare v4 API: zones, DNS records, Email Routing."""

from trueup.testing.cloudflare.app import DEFAULT_TOKEN, PROFILE, create_app
from trueup.testing.cloudflare.base import API_PREFIX
from trueup.testing.cloudflare.state import CloudflareState

__all__ = ["API_PREFIX", "DEFAULT_TOKEN", "PROFILE", "CloudflareState", "create_app"]
