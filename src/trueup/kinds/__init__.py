"""Resource kinds, each one module behind the seam in ``trueup.kinds.base``."""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from trueup.kinds.base import Kind

# Kind name -> "module:Class". Modules load on first use, so a plan that only
# touches files never imports the config editors or a provider's client.
REGISTRY: dict[str, str] = {
    "file": "trueup.kinds.file:FileKind",
    "directory": "trueup.kinds.directory:DirectoryKind",
    "skill": "trueup.kinds.skill:SkillKind",
    "config": "trueup.kinds.config:ConfigKind",
}

_loaded: dict[str, Kind] = {}


def get(name: str) -> Kind:
    kind = _loaded.get(name)
    if kind is None:
        module, _, cls = REGISTRY[name].partition(":")
        kind = getattr(import_module(module), cls)()
        _loaded[name] = kind
    return kind


def names() -> list[str]:
    return sorted(REGISTRY)
