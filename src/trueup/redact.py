"""Known secret values never leave the process in clear.

Every message, log line and JSON document the CLI emits passes through
``redact``. Secrets become known when trueup reads them (a provider token, a
client secret) and, conservatively, from environment variables whose names
say they hold one.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Iterable
from typing import Any
from urllib.parse import parse_qsl, unquote, urlsplit

from trueup.errors import UsageError

MAX_MESSAGE = 2048
PLACEHOLDER = "[REDACTED]"
_SECRET_WORDS = ("token", "secret", "password", "passwd", "api_key", "private_key", "credential")
_SECRET_NAME = re.compile("|".join(_SECRET_WORDS), re.I)
_known: set[str] = set()
_env_loaded = False
#: Declared secret values by their sealed spelling (``seal``), for this process only.
_sealed: dict[str, str] = {}
SEALED = "sealed:sha256:"


def register_secret(value: str | None) -> None:
    """Remember a value to scrub; very short values would scrub ordinary words.

    Its escaped spellings too: a secret holding a quote, a backslash or a
    non-ASCII letter reaches a JSON envelope, or the diff of a JSON, TOML or
    YAML file, spelt differently (``\"``, ``\\``, ``\u00eb``).
    """
    if value and len(value) >= 6:
        _known.add(value)
        for ascii_only in (True, False):
            _known.add(json.dumps(value, ensure_ascii=ascii_only)[1:-1])


def register_url(url: str) -> None:
    """Remember the password a URL carries (``user:pw@``, ``?password=``), as
    written and as decoded, so no message quoting the URL shows it."""
    try:
        parts = urlsplit(url)
        found = [parts.password or ""]
    except ValueError:  # not a URL at all: nothing to find
        return
    found += [v for k, v in parse_qsl(parts.query) if k.lower() == "password"]
    for password in found:
        register_secret(password)
        register_secret(unquote(password))


def redact_url(url: str) -> str:
    """A URL fit for messages: any password replaced (``user:pw@`` or ``?password=``)."""
    url = re.sub(r"(://[^:/@]+):[^@]*@", rf"\1:{PLACEHOLDER}@", url)
    return re.sub(r"([?&]password=)[^&#]*", rf"\1{PLACEHOLDER}", url, flags=re.IGNORECASE)


def looks_secret(name: str) -> bool:
    """Whether a variable's name says it holds a secret (API_TOKEN, DB_PASSWORD...)."""
    return _SECRET_NAME.search(name) is not None


def any_looks_secret(names: Iterable[str]) -> bool:
    """Whether any of ``names`` may look secret (``looks_secret``), in a few passes over
    them all: a large config file's hundreds of thousands of keys mostly hold none.

    Names beyond ASCII answer yes, to be asked one by one: the regex folds case
    in ways ``lower`` does not (the Kelvin sign is a ``k`` to it).
    """
    joined = "\n".join(names)
    if not joined.isascii():
        return True
    lowered = joined.lower()
    return any(word in lowered for word in _SECRET_WORDS)


def seal(value: str) -> str:
    """A secret's stand-in for plans, output and the state store: its digest.

    Two equal values seal alike, so a declared secret and the live one still
    compare; the value itself stays in this process (``unseal``), for the one
    call that must send it.
    """
    register_secret(value)
    sealed = SEALED + hashlib.sha256(value.encode()).hexdigest()
    _sealed[sealed] = value
    return sealed


def unseal(value: Any) -> Any:
    """The value a sealed stand-in was made from; anything else as it is."""
    if not (isinstance(value, str) and value.startswith(SEALED)):
        return value
    if value not in _sealed:
        raise UsageError(
            "a secret this plan refers to is not in the declaration any more",
            hint="compute the plan again from the declaration",
        )
    return _sealed[value]


def _load_env() -> None:
    global _env_loaded
    if not _env_loaded:
        _env_loaded = True
        for name, value in os.environ.items():
            if looks_secret(name):
                register_secret(value)


def redact(text: str, limit: int | None = None) -> str:
    """Scrub known secrets; with ``limit``, cap the length (messages, not documents)."""
    _load_env()
    for secret in sorted(_known, key=len, reverse=True):
        if secret in text:
            text = text.replace(secret, PLACEHOLDER)
    if limit is not None and len(text) > limit:
        text = text[: limit - 1] + "…"
    return text


def redact_message(text: str) -> str:
    return redact(text, MAX_MESSAGE)
