"""Declared secrets: references resolved in process, values sealed everywhere else.

A declaration may give a value as a reference (``{ env = "NAME" }``,
``{ credential = "keyring:service/name" }``) or mark it secret. Either way the
value is sealed (``redact.seal``) the moment it is loaded: resources, plans,
journals, applied records and caches then hold its digest, and the one write
that must put it somewhere (a config file, a provider call) unseals it there.
A reference that cannot be resolved is the person's to fix, so it is a
``UsageError`` that says how, never a traceback.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from trueup.errors import UsageError
from trueup.redact import PLACEHOLDER, SEALED, looks_secret, register_secret, seal, unseal

#: The one-entry tables that stand for a value kept elsewhere.
REFERENCE_KEYS = ("env", "credential")
KEYRING = "keyring:"
#: A secret shorter than this is not searched for in text: it would match ordinary words.
_SHORTEST_SCRUBBED = 6


def is_reference(value: Any) -> bool:
    """Whether ``value`` is a reference table: exactly one of ``env``/``credential``."""
    if not isinstance(value, Mapping) or len(value) != 1:
        return False
    (key, name), *_ = value.items()
    return key in REFERENCE_KEYS and isinstance(name, str)


def resolve_reference(
    reference: Mapping[str, str], environ: Mapping[str, str] | None = None
) -> str:
    """The value a reference stands for, registered with redaction before it is returned."""
    ((key, name),) = reference.items()
    value = _from_env(name, environ) if key == "env" else _from_keyring(name)
    register_secret(value)
    return value


def _from_env(name: str, environ: Mapping[str, str] | None) -> str:
    value = (os.environ if environ is None else environ).get(name)
    if value is None:
        raise UsageError(
            f"{{ env = {name!r} }}: the environment variable {name} is not set",
            hint=f"export {name} in the environment trueup runs in, then run it again",
        )
    return value


def _from_keyring(spec: str) -> str:
    service, _, name = spec.removeprefix(KEYRING).partition("/")
    if not spec.startswith(KEYRING) or not service or not name:
        raise UsageError(
            f'{{ credential = {spec!r} }}: a credential reference is spelt "keyring:SERVICE/NAME"',
        )
    try:
        import keyring

        value = keyring.get_password(service, name)
    except Exception as exc:  # no backend, a locked keyring: the person's to fix
        raise UsageError(
            f"{{ credential = {spec!r} }}: the OS keyring could not be read ({type(exc).__name__})",
            hint="unlock or configure a keyring backend, or give the value as { env = ... }",
        ) from None
    if value is None:
        raise UsageError(
            f"{{ credential = {spec!r} }}: no such credential in the OS keyring",
            hint=f"store it first: keyring set {service} {name}",
        )
    return str(value)


def sealed_leaves(value: Any, secret: bool, environ: Mapping[str, str] | None = None) -> Any:
    """A declared ``value`` with references resolved and secret strings sealed.

    A string is secret when ``secret`` says so or any table name above it looks
    secret (``looks_secret``); a reference is secret whatever its name.
    """
    if is_reference(value):
        return seal(resolve_reference(value, environ))
    if isinstance(value, Mapping):
        return {k: sealed_leaves(v, secret or looks_secret(k), environ) for k, v in value.items()}
    if isinstance(value, list):
        return [sealed_leaves(v, secret, environ) for v in value]
    return seal(value) if secret and isinstance(value, str) else value


def sealed_strings(value: Any, secret: bool) -> Any:
    """A live ``value`` sealed as its declared counterpart is (no reference is resolved:
    a live table that looks like one is only a table)."""
    if isinstance(value, Mapping):
        return {k: sealed_strings(v, secret or looks_secret(str(k))) for k, v in value.items()}
    if isinstance(value, list):
        return [sealed_strings(v, secret) for v in value]
    return seal(value) if secret and isinstance(value, str) else value


def holds_literal(value: Any, secret: bool) -> bool:
    """Whether a declared ``value`` spells out a secret string (not a reference to one):
    a declaration holding one is never cached."""
    if is_reference(value):
        return False
    if isinstance(value, Mapping):
        return any(holds_literal(v, secret or looks_secret(k)) for k, v in value.items())
    if isinstance(value, list):
        return any(holds_literal(v, secret) for v in value)
    return secret and isinstance(value, str)


def unsealed_leaves(value: Any) -> Any:
    """``value`` as it is written to its target: every sealed string opened."""
    if isinstance(value, str):
        return unseal(value)
    if isinstance(value, Mapping):
        return {k: unsealed_leaves(v) for k, v in value.items()}
    if isinstance(value, list):
        return [unsealed_leaves(v) for v in value]
    return value


def holds_sealed(value: Any) -> bool:
    """Whether a sealed string is anywhere in ``value``."""
    if isinstance(value, str):
        return value.startswith(SEALED)
    if isinstance(value, Mapping):
        return any(holds_sealed(v) for v in value.values())
    if isinstance(value, list):
        return any(holds_sealed(v) for v in value)
    return False


def holds_reference(value: Any) -> bool:
    """Whether a reference table is anywhere in ``value``."""
    if is_reference(value):
        return True
    if isinstance(value, Mapping):
        return any(holds_reference(v) for v in value.values())
    if isinstance(value, list):
        return any(holds_reference(v) for v in value)
    return False


def mask(text: str, secrets: list[str]) -> str:
    """``text`` for people: each secret in it replaced by the placeholder.

    Redaction scrubs only secrets long enough not to match ordinary words; a
    diff that would show a shorter one is not shown at all.
    """
    for secret in sorted(secrets, key=len, reverse=True):
        if not secret or secret not in text:
            continue
        if len(secret) < _SHORTEST_SCRUBBED:
            return f"(not shown: it would show a secret value, {PLACEHOLDER})\n"
        text = text.replace(secret, PLACEHOLDER)
    return text


def opened(values: list[Any]) -> list[str]:
    """The secret strings sealed anywhere in ``values``, opened (for ``mask``)."""
    found: list[str] = []
    # A loop over a stack, not a call per value: ``values`` may hold every value of
    # a large config file.
    todo = list(values)
    while todo:
        value = todo.pop()
        if isinstance(value, str):
            if value.startswith(SEALED):
                found.append(str(unseal(value)))
        elif isinstance(value, list):
            todo.extend(value)
        elif isinstance(value, int | float | None):  # before the slower Mapping check
            continue
        elif isinstance(value, Mapping):
            todo.extend(value.values())
    return found
