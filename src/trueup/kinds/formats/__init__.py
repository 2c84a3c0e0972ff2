"""Comment-preserving editing of config files, one module per format.

A declaration owns a few keys inside a file the user also edits by hand (a Codex
``config.toml``, a Claude ``settings.json``, ...). Rewriting such a file from a
parsed dict would destroy comments, ordering and formatting the user cares about,
so every format here edits its document in place: only the keys that are set or
deleted change, and a document that was not edited is returned byte for byte.

This module holds what the formats share: key paths, errors, the
:class:`ConfigDocument` protocol, value helpers and the :func:`load` factory.
The format modules import from here, never the other way round (``load`` imports
them lazily), so there is no import cycle.
"""

from __future__ import annotations

import datetime as _dt
import itertools
import math
import re
import reprlib
from abc import ABC, abstractmethod
from collections.abc import Iterable, Mapping
from enum import Enum
from typing import Final, Protocol, cast

__all__ = [
    "FORMATS",
    "MAX_KEY_DEPTH",
    "MISSING",
    "BaseDocument",
    "ConfigDocument",
    "ConfigError",
    "KeyPath",
    "KeyPathError",
    "Missing",
    "UnsupportedValueError",
    "canonical_value",
    "check_key_paths",
    "flatten",
    "format_for_path",
    "format_key_path",
    "load",
    "normalize_value",
    "parse_key_path",
    "same_value",
]

KeyPath = tuple[str, ...]
"""A parsed dotted path: ``"sandbox.mode"`` is ``("sandbox", "mode")``."""

FORMATS: Final = ("toml", "json", "yaml")

_EXTENSIONS: Final = {
    ".toml": "toml",
    ".json": "json",
    ".jsonc": "json",
    ".yaml": "yaml",
    ".yml": "yaml",
}

MAX_KEY_DEPTH: Final = 64
"""The most segments a declared key path may have. Config files are a few levels
deep; a path far deeper is a mistake, and every format library nests (and
recurses) once per level, so past a few hundred it would crash instead of
editing the file."""

RESERVED_SEGMENTS: Final = frozenset({"__proto__", "constructor", "prototype"})
"""Segments refused in declared paths: they are prototype-pollution vectors for the
JavaScript tools (Claude Code, VS Code) that read these files."""


class Missing(Enum):
    """Type of :data:`MISSING`; an enum so ``value is MISSING`` narrows for mypy."""

    MISSING = "MISSING"

    def __repr__(self) -> str:
        return "MISSING"


MISSING: Final = Missing.MISSING
"""What :meth:`ConfigDocument.get` returns for an absent key (``None`` is a value)."""


class KeyPathError(ValueError):
    """A key path that is malformed, unsafe, or cannot be used in this document."""


class ConfigError(ValueError):
    """A document that cannot be parsed (or has no mapping at its top level).

    The message names the origin and, when the parser gives one, the 1-based line
    and column, so a user can jump straight to the problem.
    """

    def __init__(
        self, reason: str, *, origin: str, line: int | None = None, column: int | None = None
    ) -> None:
        where = origin
        if line is not None:
            where += f":{line}"
            if column is not None:
                where += f":{column}"
        super().__init__(f"{where}: {reason}")
        self.reason = reason
        self.origin = origin
        self.line = line
        self.column = column


class UnsupportedValueError(ValueError):
    """A value the target format cannot represent (``None`` in TOML, NaN in JSON...)."""


class ConfigDocument(Protocol):
    """One config file, editable without disturbing what it does not touch."""

    def get(self, path: KeyPath) -> object:
        """The plain value at ``path`` (``()`` is the whole document), or MISSING."""
        ...

    def set(self, path: KeyPath, value: object) -> None:
        """Set ``path`` to ``value``, creating intermediate tables as needed."""
        ...

    def delete(self, path: KeyPath) -> None:
        """Remove ``path``; a no-op when absent. Emptied parents are kept."""
        ...

    def to_text(self) -> str:
        """The document as text; identical to the input when nothing changed."""
        ...

    def keys_flat(self) -> dict[str, object]:
        """Every leaf as ``dotted.path -> plain value`` (lists and ``{}`` are leaves)."""
        ...


# --- key paths -------------------------------------------------------------------


def _check_segment(segment: str, dotted: str) -> None:
    if segment == "":
        raise KeyPathError(f"key path {dotted!r} has an empty segment")
    if "\x00" in segment:
        raise KeyPathError(f"key path {dotted!r} contains a NUL character")
    if segment in RESERVED_SEGMENTS:
        raise KeyPathError(
            f"key path {dotted!r} uses the reserved segment {segment!r} "
            "(refused: it can pollute JavaScript object prototypes)"
        )


def parse_key_path(dotted: str) -> KeyPath:
    """Parse ``a."b.c".d`` into ``("a", "b.c", "d")``.

    Double quotes let a segment contain dots (or anything else); inside quotes
    ``\\"`` and ``\\\\`` escape a quote and a backslash. Unquoted segments may not
    start or end with whitespace, which is almost always a typo (quote it if meant).
    """
    if not isinstance(dotted, str):
        raise KeyPathError(f"key path must be a string, not {type(dotted).__name__}")
    if dotted == "":
        raise KeyPathError("key path is empty")
    segments: list[str] = []
    i, n = 0, len(dotted)
    while True:
        if i < n and dotted[i] == '"':
            chars: list[str] = []
            i += 1
            while True:
                if i >= n:
                    raise KeyPathError(f"key path {dotted!r} has an unterminated quote")
                ch = dotted[i]
                if ch == "\\":
                    if i + 1 >= n or dotted[i + 1] not in '"\\':
                        raise KeyPathError(
                            f'key path {dotted!r}: only \\" and \\\\ may be escaped in quotes'
                        )
                    chars.append(dotted[i + 1])
                    i += 2
                elif ch == '"':
                    i += 1
                    break
                else:
                    chars.append(ch)
                    i += 1
            segment = "".join(chars)
            if i < n and dotted[i] != ".":
                raise KeyPathError(
                    f"key path {dotted!r}: expected '.' after a quoted segment at offset {i}"
                )
        else:
            end = dotted.find(".", i)
            end = n if end == -1 else end
            segment = dotted[i:end]
            if '"' in segment:
                raise KeyPathError(
                    f"key path {dotted!r}: a quote may only open a segment (quote the whole "
                    "segment)"
                )
            if segment != segment.strip():
                raise KeyPathError(
                    f"key path {dotted!r}: segment {segment!r} starts or ends with whitespace "
                    "(quote it if that is intended)"
                )
            i = end
        _check_segment(segment, dotted)
        segments.append(segment)
        if i >= n:
            return tuple(segments)
        i += 1  # the dot
        if i >= n:
            raise KeyPathError(f"key path {dotted!r} has an empty segment")


_NEEDS_QUOTES = re.compile(r'\A\Z|\A\s|\s\Z|[."\\]')


def _segment_needs_quotes(segment: str) -> bool:
    """Empty, padded with whitespace, or holding a dot, quote or backslash (letters and
    digits alone, then one regex search: ``keys_flat`` of a large file asks this for
    every key)."""
    return not segment.isalnum() and _NEEDS_QUOTES.search(segment) is not None


def format_key_path(path: KeyPath) -> str:
    """The inverse of :func:`parse_key_path`: quote only the segments that need it."""
    parts = []
    for segment in path:
        if _segment_needs_quotes(segment):
            escaped = segment.replace("\\", "\\\\").replace('"', '\\"')
            parts.append(f'"{escaped}"')
        else:
            parts.append(segment)
    return ".".join(parts)


def paths_overlap(left: str, right: str) -> bool:
    """Whether two dotted key paths are the same key or one is inside the other."""
    a, b = parse_key_path(left), parse_key_path(right)
    shorter = min(len(a), len(b))
    return a[:shorter] == b[:shorter]


def check_key_paths(paths: Iterable[str]) -> None:
    """Check a declaration's key paths as a set.

    Besides each path being valid, no two may be the same key or overlap (``a``
    and ``a.b``): one would silently overwrite the other, and which one wins would
    depend on the order they are applied in. None may be deeper than
    :data:`MAX_KEY_DEPTH`.
    """
    parsed: dict[KeyPath, str] = {}
    for dotted in paths:
        path = parse_key_path(dotted)
        if len(path) > MAX_KEY_DEPTH:
            raise KeyPathError(
                f"key path {reprlib.repr(dotted)} has {len(path)} segments; "
                f"at most {MAX_KEY_DEPTH} are allowed"
            )
        if path in parsed:
            raise KeyPathError(
                f"key paths {parsed[path]!r} and {dotted!r} name the same key (duplicate)"
            )
        parsed[path] = dotted
    ordered = sorted(parsed)
    # In sorted order a path is immediately followed by the paths it is a prefix of.
    for shorter, longer in itertools.pairwise(ordered):
        if longer[: len(shorter)] == shorter:
            raise KeyPathError(
                f"key paths {parsed[shorter]!r} and {parsed[longer]!r} overlap: "
                "one is inside the other"
            )


# --- values ----------------------------------------------------------------------


def normalize_value(value: object) -> object:
    """Turn a caller's value into the plain shapes the formats accept.

    Mappings become dicts (string keys only: every format here needs them),
    tuples become lists, and int/str/float subclasses become the builtin types so
    that no format library sees a foreign wrapper. Anything else is refused early,
    before a document is half edited.
    """
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return float(value)
    if isinstance(value, str):
        return str(value)
    if isinstance(value, _dt.date | _dt.time):
        return value
    if isinstance(value, Mapping):
        result: dict[str, object] = {}
        for key, item in value.items():
            if not isinstance(key, str):
                raise UnsupportedValueError(f"mapping keys must be strings, not {key!r}")
            result[str(key)] = normalize_value(item)
        return result
    if isinstance(value, list | tuple):
        return [normalize_value(item) for item in value]
    raise UnsupportedValueError(f"cannot store a {type(value).__name__} in a config file")


def canonical_value(value: object) -> object:
    """Plain-Python normal form used for digests and comparisons.

    Equal configuration must digest equally whichever format it came from, so
    tuples become lists, mapping keys are sorted, subclasses become builtins and
    dates/times become ISO 8601 strings (JSON has no date type).
    """
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return float(value)
    if isinstance(value, str):
        return str(value)
    if isinstance(value, _dt.date | _dt.time):
        return value.isoformat()
    if isinstance(value, Mapping):
        items = [(str(key), canonical_value(item)) for key, item in value.items()]
        return dict(sorted(items))
    if isinstance(value, list | tuple):
        return [canonical_value(item) for item in value]
    raise TypeError(f"no canonical form for a {type(value).__name__}")


def same_value(left: object, right: object) -> bool:
    """Equality that also compares types: ``True``, ``1`` and ``1.0`` all differ.

    Used to make ``set`` of an already-present value a byte-for-byte no-op, which
    plain ``==`` would get wrong (``1 == True``, and rewriting ``1`` as ``true``
    is a real change).
    """
    if isinstance(left, bool) or isinstance(right, bool):
        return type(left) is type(right) and left == right
    if isinstance(left, Mapping) and isinstance(right, Mapping):
        return left.keys() == right.keys() and all(same_value(left[k], right[k]) for k in left)
    if isinstance(left, list | tuple) and isinstance(right, list | tuple):
        return len(left) == len(right) and all(
            same_value(a, b) for a, b in zip(left, right, strict=True)
        )
    if isinstance(left, float) and isinstance(right, float):
        return left == right or (math.isnan(left) and math.isnan(right))
    for kind in (int, float, str):
        if isinstance(left, kind) or isinstance(right, kind):
            return isinstance(left, kind) and isinstance(right, kind) and left == right
    return type(left) is type(right) and left == right


def flatten(value: Mapping[str, object], prefix: KeyPath = ()) -> dict[str, object]:
    """Every leaf of a nested mapping as ``dotted path -> value``.

    Lists are leaves (they are replaced whole), and so is an empty mapping, so a
    declared ``{}`` is still visible.
    """
    flat: dict[str, object] = {}
    _flatten_into(flat, value, format_key_path(prefix) + "." if prefix else "")
    return flat


def _flatten_into(flat: dict[str, object], value: Mapping[str, object], spelt: str) -> None:
    """``flatten`` below the dotted prefix ``spelt``: each key is spelt once, not
    the whole path again per leaf (a large file has hundreds of thousands)."""
    for key, item in value.items():
        path = spelt + (key if key.isalnum() else format_key_path((key,)))
        # A plain dict is told at once; anything else but a scalar or a list is asked
        # whether it is a Mapping (the slower check, for each of a large file's leaves).
        nested = type(item) is dict or (type(item) not in _LEAVES and isinstance(item, Mapping))
        if nested and item:
            _flatten_into(flat, cast(Mapping[str, object], item), path + ".")
        else:
            flat[path] = item


_LEAVES = frozenset({str, int, float, bool, list, type(None)})


def _describe(value: object) -> str:
    names = {bool: "a boolean", int: "an integer", float: "a number", str: "a string"}
    if value is None:
        return "null"
    if isinstance(value, list):
        return "a list"
    return names.get(type(value), f"a {type(value).__name__}")


# --- shared document behaviour ---------------------------------------------------


class BaseDocument(ABC):
    """The format-independent half of a :class:`ConfigDocument`.

    Subclasses provide the primitives (read the tree, replace one value, delete
    one key, render); this class adds the rules every format must follow the same
    way: the no-op check for unchanged values, the refusal to walk through a
    scalar, and merging a mapping into an existing table key by key so that the
    comments inside that table survive.
    """

    def __init__(self, text: str, origin: str) -> None:
        self.origin = origin
        self._original = text
        self._dirty = False

    # primitives -------------------------------------------------------------------

    @abstractmethod
    def _root(self) -> dict[str, object]:
        """The whole document as plain values."""

    @abstractmethod
    def _lookup(self, path: KeyPath) -> object:
        """The plain value at a non-empty path, or MISSING."""

    @abstractmethod
    def _replace(self, path: KeyPath, value: object) -> None:
        """Store ``value`` at ``path`` whatever is there; parents are tables or missing."""

    @abstractmethod
    def _remove(self, path: KeyPath) -> None:
        """Delete the key at ``path``, which exists."""

    @abstractmethod
    def _render(self) -> str:
        """The current document text (only called after an edit)."""

    def _check_value(self, value: object) -> None:  # noqa: B027 - optional hook
        """Refuse values the format cannot represent; the default accepts all."""

    def shared_by(self, path: KeyPath) -> str | None:
        """What else a write at ``path`` would change (a YAML anchor), or ``None``."""
        return None

    def inherited(self, path: KeyPath) -> bool:
        """Whether the value at ``path`` comes from elsewhere (a YAML merge key)."""
        return False

    def kept_whole(self) -> dict[str, str]:
        """Mappings that a key set or removed inside would change beyond that key, by
        dotted path, each with the reason (a YAML anchor other keys share, a flow
        mapping written over several lines): those edits are a person's."""
        return {}

    # the protocol -----------------------------------------------------------------

    def get(self, path: KeyPath) -> object:
        if not path:
            return self._root()
        return self._lookup(tuple(path))

    def set(self, path: KeyPath, value: object) -> None:
        path = self._checked(path)
        value = normalize_value(value)
        self._check_value(value)
        current = self._lookup(path)
        if same_value(current, value):
            return
        self._require_tables(path)
        if isinstance(current, dict) and isinstance(value, dict):
            for key in list(current):
                if key not in value:
                    self.delete((*path, key))
            for key, item in value.items():
                self.set((*path, key), item)
            return
        self._replace(path, value)
        self._dirty = True

    def delete(self, path: KeyPath) -> None:
        path = self._checked(path)
        if self._lookup(path) is MISSING:
            return
        self._remove(path)
        self._dirty = True

    def to_text(self) -> str:
        return self._render() if self._dirty else self._original

    def keys_flat(self) -> dict[str, object]:
        return flatten(self._root())

    # helpers ----------------------------------------------------------------------

    def _checked(self, path: KeyPath) -> KeyPath:
        path = tuple(path)
        if not path:
            raise KeyPathError("cannot set or delete the whole document (empty key path)")
        for segment in path:
            if not isinstance(segment, str):
                raise KeyPathError(f"key path segments must be strings, not {segment!r}")
        return path

    def _require_tables(self, path: KeyPath) -> None:
        """Refuse to replace a scalar parent: that would silently drop user data."""
        for depth in range(1, len(path)):
            parent = self._lookup(path[:depth])
            if parent is MISSING:
                return
            if not isinstance(parent, dict):
                raise KeyPathError(
                    f"cannot set {format_key_path(path)}: {format_key_path(path[:depth])} "
                    f"holds {_describe(parent)}, not a table"
                )


# --- factory ---------------------------------------------------------------------


def format_for_path(path: str) -> str | None:
    """The format of a file, judged by its extension (case-insensitive)."""
    name = path.replace("\\", "/").rsplit("/", 1)[-1].lower()
    dot = name.rfind(".")
    if dot <= 0:
        return None
    return _EXTENSIONS.get(name[dot:])


def load(format: str, text: str, *, origin: str) -> ConfigDocument:
    """Parse ``text`` as ``format``; empty text is an empty document.

    ``origin`` (usually the file path) is only used in error messages.
    """
    if format == "toml":
        from trueup.kinds.formats.toml import TomlDocument

        return TomlDocument(text, origin)
    if format == "json":
        from trueup.kinds.formats.json import JsonDocument

        return JsonDocument(text, origin)
    if format == "yaml":
        from trueup.kinds.formats.yaml import YamlDocument

        return YamlDocument(text, origin)
    raise ValueError(f"unknown config format {format!r}; expected one of {', '.join(FORMATS)}")
