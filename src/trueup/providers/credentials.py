"""Provider endpoints and tokens: from the environment, else the OS keyring.

A token is registered with redaction the moment it is read, so no message,
log line or JSON document can carry it afterwards; it is never stored.
"""

from __future__ import annotations

import ipaddress
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from trueup.errors import UsageError
from trueup.redact import redact_url, register_secret, register_url

KEYRING_SERVICE = "trueup"

#: Default base URLs; Coolify and ZITADEL are self-hosted, so they have none.
DEFAULT_URLS: Mapping[str, str | None] = {
    "cloudflare": "https://api.cloudflare.com/client/v4",
    "coolify": None,
    "zitadel": None,
}
#: API prefixes appended to a base URL that does not already end with them.
PREFIXES: Mapping[str, str] = {"cloudflare": "/client/v4", "coolify": "/api/v1", "zitadel": ""}


@dataclass(frozen=True)
class Endpoint:
    """Where one provider answers, and with which token (never printed)."""

    provider: str
    url: str
    token: str = field(repr=False)
    account: str | None = None


def endpoint(
    provider: str, env: Mapping[str, str] | None = None, insecure_http: bool = False
) -> Endpoint:
    """Read ``TRUEUP_<PROVIDER>_{TOKEN,URL}`` (and the Cloudflare account id).

    A plain ``http://`` URL would send the token and every secret value in the
    clear: refused unless it is loopback or the operator says so
    (``--insecure-http``, or ``TRUEUP_INSECURE_HTTP=1`` for any command).
    """
    env = os.environ if env is None else env
    upper = provider.upper()
    token = env.get(f"TRUEUP_{upper}_TOKEN") or _keyring_token(provider)
    if not token:
        raise UsageError(
            f"no {provider} token: set TRUEUP_{upper}_TOKEN",
            hint=f"or store it in the OS keyring: keyring set {KEYRING_SERVICE} {provider}-token",
        )
    register_secret(token)
    url = env.get(f"TRUEUP_{upper}_URL") or DEFAULT_URLS[provider]
    if not url:
        raise UsageError(f"no {provider} URL: set TRUEUP_{upper}_URL to your instance's address")
    register_url(url)
    insecure_http = insecure_http or env.get("TRUEUP_INSECURE_HTTP", "") in ("1", "true")
    if not insecure_http:
        refuse_plain_http(url, f"TRUEUP_{upper}_URL")
    url = url.rstrip("/")
    prefix = PREFIXES[provider]
    if prefix and not url.endswith(prefix):
        url += prefix
    account = None
    if provider == "cloudflare":
        account = env.get("TRUEUP_CLOUDFLARE_ACCOUNT") or env.get("TRUEUP_CLOUDFLARE_ACCOUNT_ID")
    return Endpoint(provider, url, token, account or None)


def refuse_plain_http(url: str, where: str) -> None:
    """Refuse an ``http://`` URL to anything but this host (``UsageError``, exit 2)."""
    try:
        parts = urlsplit(url)
        host = (parts.hostname or "").lower()
    except ValueError:
        return  # not a URL: the client says so when it is used
    if parts.scheme.lower() != "http" or _loopback(host):
        return
    raise UsageError(
        f"{where} is {redact_url(url)}: plain http:// would send the token and secret "
        "values unencrypted",
        hint="use https://, or pass --insecure-http (TRUEUP_INSECURE_HTTP=1) "
        "if that network is trusted",
    )


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _keyring_token(provider: str) -> str | None:
    try:
        import keyring

        value = keyring.get_password(KEYRING_SERVICE, f"{provider}-token")
    except Exception:  # no backend, a locked keyring: same as "not stored"
        return None
    return value or None
