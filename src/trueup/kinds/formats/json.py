"""JSON documents edited surgically, as text.

Re-serialising a JSON file with :mod:`json` would reformat every line the user
wrote. Instead a small tokenizer records where each member and value sits in the
text; an edit replaces just that span (or inserts a member after the last one,
or cuts one out with its comma) and formats new text like its neighbours:
same indentation unit, same ``":"`` spacing, same line endings. Values are still
read and written with the stdlib, so strings and numbers are exactly standard.

Plain JSON only: comments (JSONC) are a parse error.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import NoReturn

from trueup.kinds.formats import (
    MISSING,
    BaseDocument,
    ConfigError,
    KeyPath,
    KeyPathError,
    UnsupportedValueError,
    format_key_path,
)

__all__ = ["JsonDocument"]

_WHITESPACE = " \t\r\n"
_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?")
_LITERALS = ("true", "false", "null")
_BOM = "\ufeff"


@dataclass(frozen=True, slots=True)
class _Member:
    key: str
    start: int  # offset of the key's opening quote
    key_end: int  # just past the key's closing quote
    value: _Node


@dataclass(frozen=True, slots=True)
class _Node:
    start: int
    end: int  # exclusive
    members: tuple[_Member, ...] | None = None  # set for objects only

    def find(self, key: str) -> _Member | None:
        """The member JSON readers would use: the last one with that key."""
        found = None
        for member in self.members or ():
            if member.key == key:
                found = member
        return found


class _Scanner:
    """Span-recording recursive-descent scanner for text ``json`` has accepted."""

    def __init__(self, text: str, origin: str) -> None:
        self.text = text
        self.origin = origin

    def fail(self, pos: int, reason: str) -> NoReturn:
        line = self.text.count("\n", 0, pos) + 1
        column = pos - (self.text.rfind("\n", 0, pos) + 1) + 1
        raise ConfigError(reason, origin=self.origin, line=line, column=column)

    def skip(self, pos: int) -> int:
        while pos < len(self.text) and self.text[pos] in _WHITESPACE:
            pos += 1
        return pos

    def string_end(self, pos: int) -> int:
        """Offset just past the string whose opening quote is at ``pos``."""
        text = self.text
        i = pos + 1
        while i < len(text):
            ch = text[i]
            if ch == "\\":
                i += 2
            elif ch == '"':
                return i + 1
            else:
                i += 1
        self.fail(pos, "unterminated string")

    def value(self, pos: int) -> _Node:
        text = self.text
        if pos >= len(text):
            self.fail(pos, "expected a value")
        ch = text[pos]
        if ch == "{":
            return self.object(pos)
        if ch == "[":
            return self.array(pos)
        if ch == '"':
            return _Node(pos, self.string_end(pos))
        for literal in _LITERALS:
            if text.startswith(literal, pos):
                return _Node(pos, pos + len(literal))
        match = _NUMBER.match(text, pos)
        if match is None or match.end() == pos:
            self.fail(pos, "expected a value")
        return _Node(pos, match.end())

    def object(self, start: int) -> _Node:
        text = self.text
        members: list[_Member] = []
        pos = self.skip(start + 1)
        if pos < len(text) and text[pos] == "}":
            return _Node(start, pos + 1, ())
        while True:
            if pos >= len(text) or text[pos] != '"':
                self.fail(pos, "expected a string key")
            key_end = self.string_end(pos)
            key = json.loads(text[pos:key_end])
            colon = self.skip(key_end)
            if colon >= len(text) or text[colon] != ":":
                self.fail(colon, "expected ':'")
            value = self.value(self.skip(colon + 1))
            members.append(_Member(key, pos, key_end, value))
            pos = self.skip(value.end)
            if pos < len(text) and text[pos] == ",":
                pos = self.skip(pos + 1)
                continue
            if pos < len(text) and text[pos] == "}":
                return _Node(start, pos + 1, tuple(members))
            self.fail(pos, "expected ',' or '}'")

    def array(self, start: int) -> _Node:
        text = self.text
        pos = self.skip(start + 1)
        if pos < len(text) and text[pos] == "]":
            return _Node(start, pos + 1)
        while True:
            item = self.value(pos)
            pos = self.skip(item.end)
            if pos < len(text) and text[pos] == ",":
                pos = self.skip(pos + 1)
                continue
            if pos < len(text) and text[pos] == "]":
                return _Node(start, pos + 1)
            self.fail(pos, "expected ',' or ']'")


def _reject_constant(name: str) -> object:
    raise ValueError(f"{name} is not valid JSON")


def _parse(text: str, origin: str) -> _Node | None:
    """Validate ``text`` and return its root object's spans (``None`` if blank)."""
    body_start = 1 if text.startswith(_BOM) else 0
    if text[body_start:].strip(_WHITESPACE) == "":
        return None
    try:
        json.loads(text[body_start:], parse_constant=_reject_constant)
    except json.JSONDecodeError as exc:
        raise ConfigError(
            f"invalid JSON: {exc.msg}", origin=origin, line=exc.lineno, column=exc.colno
        ) from None
    except ValueError as exc:
        # NaN/Infinity: the scanner rejects them too, and knows where they are.
        locator = _Scanner(text, origin)
        locator.value(locator.skip(body_start))
        raise ConfigError(f"invalid JSON: {exc}", origin=origin) from None
    except RecursionError:
        raise ConfigError("invalid JSON: nested too deeply", origin=origin) from None
    scanner = _Scanner(text, origin)
    start = scanner.skip(body_start)
    if text[start] != "{":
        scanner.fail(start, "the top level of a JSON config file must be an object")
    try:
        return scanner.object(start)
    except RecursionError:
        raise ConfigError("JSON nested too deeply", origin=origin) from None


@dataclass(frozen=True, slots=True)
class _Style:
    """How the file is laid out, so inserted text looks like the user's own."""

    newline: str
    indent: str
    colon: str
    comma: str  # between members of a single-line object

    @classmethod
    def detect(cls, text: str, root: _Node | None) -> _Style:
        newline = "\r\n" if "\r\n" in text else "\n"
        indents = [
            line[: len(line) - len(line.lstrip(" \t"))]
            for line in text.splitlines()
            if line.strip(_WHITESPACE)
        ]
        indents = [indent for indent in indents if indent]
        if any(indent.startswith("\t") for indent in indents):
            indent = "\t"
        elif indents:
            indent = " " * min(len(indent) for indent in indents)
        else:
            indent = "  "
        colon, comma = ": ", ", "
        first = _first_member(root)
        if first is not None:
            gap = text[first.key_end : first.value.start]
            if "\n" not in gap:
                colon = gap
                comma = ", " if colon.endswith(" ") else ","
        return cls(newline, indent, colon, comma)


def _first_member(node: _Node | None) -> _Member | None:
    if node is None or not node.members:
        return None
    return node.members[0]


class JsonDocument(BaseDocument):
    """A JSON object file; see the module docstring for the editing approach."""

    def __init__(self, text: str, origin: str) -> None:
        super().__init__(text, origin)
        self._text = text
        self._tree = _parse(text, origin)

    # reading ----------------------------------------------------------------------

    def _root(self) -> dict[str, object]:
        if self._tree is None:
            return {}
        value = json.loads(self._span(self._tree))
        assert isinstance(value, dict)
        return value

    def _node(self, path: KeyPath) -> _Node | None:
        node = self._tree
        for segment in path:
            member = node.find(segment) if node is not None else None
            if member is None:
                return None
            node = member.value
        return node

    def _lookup(self, path: KeyPath) -> object:
        node = self._node(path)
        return MISSING if node is None else json.loads(self._span(node))

    def _span(self, node: _Node) -> str:
        return self._text[node.start : node.end]

    # writing ----------------------------------------------------------------------

    def _check_value(self, value: object) -> None:
        try:
            json.dumps(value, allow_nan=False)
        except (TypeError, ValueError) as exc:
            raise UnsupportedValueError(f"JSON cannot store this value: {exc}") from None

    def _render(self) -> str:
        return self._text

    def _commit(self, text: str) -> None:
        """Adopt edited text, but only if it still parses: never corrupt a file."""
        try:
            tree = _parse(text, self.origin)
        except ConfigError as exc:  # pragma: no cover - a bug in this module
            raise RuntimeError(f"internal error: edit produced invalid JSON ({exc})") from exc
        self._text, self._tree = text, tree

    def _splice(self, start: int, end: int, replacement: str) -> None:
        self._commit(self._text[:start] + replacement + self._text[end:])

    def _replace(self, path: KeyPath, value: object) -> None:
        if self._tree is None:
            self._create(path, value)
            return
        style = _Style.detect(self._text, self._tree)
        parent = self._tree
        for depth, segment in enumerate(path):
            member = parent.find(segment)
            if member is None:
                nested: object = value
                for inner in reversed(path[depth + 1 :]):
                    nested = {inner: nested}
                self._insert(parent, segment, nested, style)
                return
            if depth == len(path) - 1:
                old = self._span(member.value)
                # A one-line `[80, 100]` stays on one line; `[]`, `{}` and scalars
                # grow into the layout of the surrounding object.
                inline = old[0] in "[{" and old[1:-1].strip(_WHITESPACE) != "" and "\n" not in old
                multiline = self._is_multiline(parent) and not inline
                dumped = self._dump(value, style, multiline, self._line_indent(member.start))
                self._splice(member.value.start, member.value.end, dumped)
                return
            if member.value.members is None:  # pragma: no cover - BaseDocument checks
                raise KeyPathError(f"{format_key_path(path[: depth + 1])} is not an object")
            parent = member.value

    def _create(self, path: KeyPath, value: object) -> None:
        """Write a whole new document (the file was empty)."""
        nested: object = value
        for segment in reversed(path):
            nested = {segment: nested}
        bom = _BOM if self._text.startswith(_BOM) else ""
        style = _Style.detect(self._text, None)
        self._commit(bom + self._dump(nested, style, True, "") + style.newline)

    def _insert(self, obj: _Node, key: str, value: object, style: _Style) -> None:
        """Add a member at the end of ``obj``, formatted like its siblings."""
        assert obj.members is not None
        key_text = json.dumps(key, ensure_ascii=False) + style.colon
        if obj.members:
            last = obj.members[-1]
            if self._is_multiline(obj):
                indent = self._line_indent(last.start)
                text = f",{style.newline}{indent}{key_text}{self._dump(value, style, True, indent)}"
            else:
                previous = obj.members[-2].value.end if len(obj.members) > 1 else None
                comma = self._text[previous : last.start] if previous is not None else style.comma
                text = f"{comma}{key_text}{self._dump(value, style, False, '')}"
            self._splice(last.value.end, last.value.end, text)
            return
        if obj is self._tree or self._is_multiline(self._tree):
            outer = self._line_indent(obj.start)
            indent = outer + style.indent
            inner = (
                f"{style.newline}{indent}{key_text}{self._dump(value, style, True, indent)}"
                f"{style.newline}{outer}"
            )
        else:
            inner = key_text + self._dump(value, style, False, "")
        self._splice(obj.start + 1, obj.end - 1, inner)

    def _remove(self, path: KeyPath) -> None:
        # Repeat so that duplicate keys (legal, last one wins) all go away.
        while True:
            parent = self._node(path[:-1])
            if parent is None or parent.members is None:
                return
            indexes = [i for i, m in enumerate(parent.members) if m.key == path[-1]]
            if not indexes:
                return
            index, members = indexes[-1], parent.members
            if len(members) == 1:
                self._splice(parent.start + 1, parent.end - 1, "")
            elif index < len(members) - 1:
                self._splice(members[index].start, members[index + 1].start, "")
            else:
                self._splice(members[index - 1].value.end, members[index].value.end, "")

    # layout helpers ---------------------------------------------------------------

    def _is_multiline(self, node: _Node | None) -> bool:
        if node is None:
            return True
        return "\n" in self._text[node.start : node.end]

    def _line_indent(self, pos: int) -> str:
        """The leading whitespace of the line that contains ``pos``."""
        line_start = self._text.rfind("\n", 0, pos) + 1
        line = self._text[line_start:pos]
        return line[: len(line) - len(line.lstrip(" \t"))]

    @staticmethod
    def _dump(value: object, style: _Style, multiline: bool, indent: str) -> str:
        if not multiline:
            return json.dumps(
                value, ensure_ascii=False, allow_nan=False, separators=(style.comma, style.colon)
            )
        text = json.dumps(
            value,
            ensure_ascii=False,
            allow_nan=False,
            indent=style.indent,
            separators=(",", style.colon),
        )
        # Raw newlines only occur between tokens (strings escape theirs).
        return text.replace("\n", style.newline + indent)
