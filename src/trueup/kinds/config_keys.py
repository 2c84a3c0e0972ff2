"""Declared keys as a config file holds them, for planning and editing alike.

A key path is spelt one way (``spelt``), a value is known by its digest, and
a live file is read as the flat mapping of its dotted keys (``keys_flat``):
these helpers answer questions over that mapping.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from trueup.canonical import digest
from trueup.errors import UsageError
from trueup.kinds.formats import (
    MISSING,
    canonical_value,
    format_for_path,
    format_key_path,
    load,
    parse_key_path,
)
from trueup.model import Resource


def value_digest(value: object) -> str:
    return digest(canonical_value(value))


def keys_digest(values: Mapping[str, object]) -> str:
    return digest({k: canonical_value(v) for k, v in values.items()})


def config_format(resource: Resource) -> str:
    """The file's format: declared, or told by the target's name."""
    fmt = resource.spec.get("format") or format_for_path(resource.target)
    if fmt is None:
        raise UsageError(
            f"field 'target': cannot tell the format of {resource.target} from its name",
            hint='declare format = "toml", "json" or "yaml" for it',
        )
    return str(fmt)


def load_config(resource: Resource, text: str) -> Any:
    return load(config_format(resource), text, origin=resource.target)


def holds(keys: Iterable[str], table: str) -> bool:
    """Whether any of the dotted ``keys`` is ``table`` or lies inside it."""
    prefix = table + "."
    return any(k == table or k.startswith(prefix) for k in keys)


def inside(key: str, declared: str) -> bool:
    """Whether ``key`` lies within the value of the declared key ``declared``."""
    return spelt(key).startswith(spelt(declared) + ".")


def same(live: object, declared: object) -> bool:
    return value_digest(live) == value_digest(declared)


def spelt(key: str) -> str:
    """A declared key path as ``keys_flat`` spells it (quotes only where needed)."""
    return format_key_path(parse_key_path(key))


def owned_value(flat: Mapping[str, Any], declared_key: str, owned_digest: str) -> bool:
    """Whether the key is present and still holds the value trueup wrote."""
    value = live_value(flat, spelt(declared_key))
    return value is not MISSING and value_digest(value) == owned_digest


def live_value(flat: Mapping[str, Any], key: str) -> Any:
    """The live value of the spelt ``key``: a leaf, or the table its nested leaves make."""
    if key in flat:
        return flat[key]
    nested = {k[len(key) + 1 :]: v for k, v in flat.items() if k.startswith(key + ".")}
    return unflatten(nested) if nested else MISSING


def unflatten(flat: Mapping[str, Any]) -> dict[str, Any]:
    root: dict[str, Any] = {}
    for dotted, value in flat.items():
        node = root
        *parents, leaf = parse_key_path(dotted)
        for part in parents:
            node = node.setdefault(part, {})
        node[leaf] = value
    return root
