"""JSON documents edited surgically, as text.

Re-serialising a JSON file with :mod:`json` would reformat every line the user
wrote. Instead a small tokenizer records where each member and value sits in the
text; an edit replaces just that span (or inserts a member after the last one,
or cuts one out with its comma) and formats new text like its neighbours:
same indentation unit, same ``":"`` spacing, same line endings. Values are still
read and written with the stdlib, so strings and numbers are exactly standard.

JSON with comments (JSONC: ``//`` and ``/* */`` comments, trailing commas, as in
VS Code, Cursor and Zed settings, ``tsconfig.json`` and ``devcontainer.json``) is
recognised by its content: a file strict JSON refuses is read again with its
comments and trailing commas blanked out (replaced by spaces, so every offset
still points into the user's text), and accepted if that parses. Edits go to the
user's text, so the comments stay; inserted and removed members follow the
file's own line layout and keep a trailing comma where the file uses them.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, NoReturn

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
_SPACES = re.compile(r"[ \t\r\n]*")
_STRING = re.compile(r'"(?:[^"\\]|\\.)*"', re.DOTALL)
# A string, a comment, or a comma that only a `]` or `}` follows: what JSONC adds.
_JSONC_TOKEN = re.compile(
    r'(?P<s>"(?:[^"\\\n]|\\.)*")|(?P<c>//[^\n]*|/\*.*?\*/)|(?P<t>,(?=[ \t\r\n]*[\]}]))',
    re.DOTALL,
)
_CONSTANT = re.compile(r'"(?:[^"\\]|\\.)*"|(?P<constant>-?Infinity|NaN)', re.DOTALL)
_INDENT = re.compile(r"^[ \t]+(?=[^ \t\r\n])", re.MULTILINE)
_SPACES_ON_LINE = re.compile(r"[ \t]*,?[ \t]*")
_TRAILING_COMMA = re.compile(r",[ \t\r\n]*[\]}]")


def _blank(match: re.Match[str]) -> str:
    """Spaces in place of a comment or trailing comma, keeping its line breaks."""
    if match.lastgroup == "s":
        return match.group()
    return re.sub(r"[^\r\n]", " ", match.group())


def without_comments(text: str) -> str:
    """``text`` with its JSONC comments and trailing commas blanked, same length.

    Plain JSON (no ``/`` and no comma before a closing bracket) comes back as is
    without a per-token pass, which keeps large plain files fast.
    """
    if "/" not in text and _TRAILING_COMMA.search(text) is None:
        return text
    blanked = _JSONC_TOKEN.sub(_blank, text)
    # A comment between a comma and the bracket hid it from the lookahead.
    return _JSONC_TOKEN.sub(_blank, blanked) if blanked != text else text


@dataclass(slots=True)
class _Member:
    key: str
    start: int  # offset of the key's opening quote
    key_end: int  # just past the key's closing quote
    value: _Node

    def moved(self, delta: int) -> None:
        """Its offsets (and its value's, scanned or not) ``delta`` characters on."""
        self.start += delta
        self.key_end += delta
        self.value.moved(delta)


class _Node:
    """A value's span; an object's members are scanned when first asked for.

    Only the objects on the path of a read or an edit are ever scanned: the
    values beside them are skipped whole by :mod:`json`'s C scanner, so a large
    file costs one C-speed pass, not a Python loop over every character.
    """

    __slots__ = ("_members", "_scanner", "end", "start")

    def __init__(self, start: int, end: int, scanner: _Scanner | None = None) -> None:
        self.start = start
        self.end = end
        self._scanner = scanner  # set for objects only
        self._members: tuple[_Member, ...] | None = None

    @property
    def members(self) -> tuple[_Member, ...] | None:
        """The object's members in order; ``None`` for anything but an object."""
        if self._scanner is None:
            return None
        if self._members is None:
            self._members = self._scanner.members(self.start)
        return self._members

    def moved(self, delta: int) -> None:
        self.start += delta
        self.end += delta
        for member in self._members or ():
            member.moved(delta)

    def respan(self, start: int, end: int, delta: int, scanner: _Scanner) -> None:
        """Follow an edit that replaced ``[start, end)``, inside this value, by text
        ``delta`` characters longer: offsets after it move, and what it touched is
        scanned again when next asked for (``_Scanner.text`` is the new text).

        The edits of a large file are each a small span: moving the offsets after
        them costs far less than scanning every member again.
        """
        if (self.start, self.end) == (start, end):  # the whole value replaced
            self.end += delta
            self._members = None
            self._scanner = scanner if scanner.text[start] == "{" else None
            return
        self.end += delta
        members = self._members
        if members is None:
            return
        for index, member in enumerate(members):
            value = member.value
            if value.start <= start and end <= value.end and not start == end == value.end:
                value.respan(start, end, delta, scanner)
                for after in members[index + 1 :]:
                    after.moved(delta)
                return
        self._members = None  # a member added or cut: scanned again when asked for

    def find(self, key: str) -> _Member | None:
        """The member JSON readers would use: the last one with that key."""
        found = None
        for member in self.members or ():
            if member.key == key:
                found = member
        return found


_DECODER = json.JSONDecoder()


class _Scanner:
    """Span-recording scanner for text ``json`` has accepted (so it needs no checks
    beyond finding where things are)."""

    def __init__(self, text: str, origin: str) -> None:
        self.text = text
        self.origin = origin

    def fail(self, pos: int, reason: str) -> NoReturn:
        line = self.text.count("\n", 0, pos) + 1
        column = pos - (self.text.rfind("\n", 0, pos) + 1) + 1
        raise ConfigError(reason, origin=self.origin, line=line, column=column)

    def skip(self, pos: int) -> int:
        match = _SPACES.match(self.text, pos)
        assert match is not None  # `*` always matches
        return match.end()

    def value(self, pos: int) -> _Node:
        text = self.text
        if pos >= len(text):
            self.fail(pos, "expected a value")
        ch = text[pos]
        if ch == '"':
            match = _STRING.match(text, pos)
            if match is None:
                self.fail(pos, "unterminated string")
            return _Node(pos, match.end())
        for literal in _LITERALS:
            if text.startswith(literal, pos):
                return _Node(pos, pos + len(literal))
        if ch in "{[":
            try:
                _, end = _DECODER.raw_decode(text, pos)
            except ValueError:
                self.fail(pos, "expected a value")
            return _Node(pos, end, self if ch == "{" else None)
        match = _NUMBER.match(text, pos)
        if match is None or match.end() == pos:
            self.fail(pos, "expected a value")
        return _Node(pos, match.end())

    def members(self, start: int) -> tuple[_Member, ...]:
        """The members of the object whose ``{`` is at ``start``."""
        text = self.text
        members: list[_Member] = []
        pos = self.skip(start + 1)
        if pos < len(text) and text[pos] == "}":
            return ()
        while True:
            if pos >= len(text) or text[pos] != '"':
                self.fail(pos, "expected a string key")
            key_node = self.value(pos)
            raw = text[pos + 1 : key_node.end - 1]
            key = json.loads(text[pos : key_node.end]) if "\\" in raw else raw
            colon = self.skip(key_node.end)
            if colon >= len(text) or text[colon] != ":":
                self.fail(colon, "expected ':'")
            value = self.value(self.skip(colon + 1))
            members.append(_Member(key, pos, key_node.end, value))
            pos = self.skip(value.end)
            if pos < len(text) and text[pos] == ",":
                pos = self.skip(pos + 1)
                continue
            if pos < len(text) and text[pos] == "}":
                return tuple(members)
            self.fail(pos, "expected ',' or '}'")


def _reject_constant(name: str) -> object:
    raise ValueError(f"{name} is not valid JSON")


def _parse(text: str, origin: str) -> tuple[str, _Node | None, dict[str, object]]:
    """Validate ``text``; return the text values are read from, its root's spans, and
    its values (read once here, to validate it).

    The text read from is ``text`` itself for plain JSON, and ``text`` with its
    comments and trailing commas blanked for JSONC (same offsets); the root is
    ``None`` for a blank file.
    """
    body_start = 1 if text.startswith(_BOM) else 0
    if text[body_start:].strip(_WHITESPACE) == "":
        return text, None, {}
    clean = text
    try:
        data = json.loads(text[body_start:], parse_constant=_reject_constant)
    except json.JSONDecodeError as exc:
        clean = without_comments(text)
        if clean == text:
            raise ConfigError(
                f"invalid JSON: {exc.msg}", origin=origin, line=exc.lineno, column=exc.colno
            ) from None
        data = _check_jsonc(clean, body_start, origin)
    except ValueError as exc:
        # NaN/Infinity: found outside strings, to say where they are.
        for match in _CONSTANT.finditer(text):
            if match.group("constant"):
                _Scanner(text, origin).fail(match.start(), f"invalid JSON: {exc}")
        raise ConfigError(f"invalid JSON: {exc}", origin=origin) from None
    except RecursionError:
        raise ConfigError("invalid JSON: nested too deeply", origin=origin) from None
    scanner = _Scanner(clean, origin)
    start = scanner.skip(body_start)
    if clean[start] != "{":
        scanner.fail(start, "the top level of a JSON config file must be an object")
    # Valid JSON, so the object ends where the text does, but for whitespace (and,
    # in JSONC, the comments blanked out): no second pass needed to find its end.
    return clean, _Node(start, len(clean.rstrip(_WHITESPACE)), scanner), data


def _check_jsonc(clean: str, body_start: int, origin: str) -> Any:
    """Refuse JSONC that is not JSON once its comments and trailing commas are gone;
    return its values."""
    try:
        return json.loads(clean[body_start:], parse_constant=_reject_constant)
    except json.JSONDecodeError as exc:
        raise ConfigError(
            f"invalid JSON (with comments): {exc.msg}",
            origin=origin,
            line=exc.lineno,
            column=exc.colno,
        ) from None
    except ValueError as exc:
        raise ConfigError(f"invalid JSON (with comments): {exc}", origin=origin) from None
    except RecursionError:
        raise ConfigError("invalid JSON: nested too deeply", origin=origin) from None


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
        indents = set(_INDENT.findall(text))  # C speed: files can be megabytes
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
        # The values as parsed, until the first edit (then read from the spans).
        self._data: dict[str, object] | None
        self._clean, self._tree, self._data = _parse(text, origin)
        self._style: _Style | None = None
        self._unchecked = False

    # reading ----------------------------------------------------------------------

    def _root(self) -> dict[str, object]:
        if self._tree is None:
            return {}
        value = self._data if self._data is not None else json.loads(self._span(self._tree))
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
        if self._data is not None:  # as parsed: no object scanned for its members
            found: object = self._data
            for segment in path:
                if not isinstance(found, dict) or segment not in found:
                    return MISSING
                found = found[segment]
            return found
        node = self._node(path)
        return MISSING if node is None else json.loads(self._span(node))

    def _span(self, node: _Node) -> str:
        """The value's text without comments (read with :mod:`json`)."""
        return self._clean[node.start : node.end]

    @property
    def _jsonc(self) -> bool:
        return self._clean is not self._text

    # writing ----------------------------------------------------------------------

    def _check_value(self, value: object) -> None:
        try:
            json.dumps(value, allow_nan=False)
        except (TypeError, ValueError) as exc:
            raise UnsupportedValueError(f"JSON cannot store this value: {exc}") from None

    def _render(self) -> str:
        if self._unchecked:  # edited by spans (_splice): still JSON, or a bug here
            self._commit(self._text)
        return self._text

    def _commit(self, text: str) -> None:
        """Adopt edited text, but only if it still parses: never corrupt a file."""
        try:
            clean, tree, data = _parse(text, self.origin)
        except ConfigError as exc:  # pragma: no cover - a bug in this module
            raise RuntimeError(f"internal error: edit produced invalid JSON ({exc})") from exc
        self._text, self._clean, self._tree, self._data = text, clean, tree, data
        self._style = None
        self._unchecked = False

    def _splice(self, start: int, end: int, replacement: str) -> None:
        text = self._text[:start] + replacement + self._text[end:]
        tree = self._tree
        if self._jsonc or tree is None or tree._scanner is None:
            self._commit(text)
            return
        # Plain JSON: the edit's own offsets are moved, not the file scanned again;
        # the text is checked once, when it is asked for (_render).
        tree._scanner.text = text
        tree.respan(start, end, len(replacement) - (end - start), tree._scanner)
        self._text = self._clean = text
        self._data = None
        self._unchecked = True

    def _replace(self, path: KeyPath, value: object) -> None:
        if self._tree is None:
            self._create(path, value)
            return
        if self._style is None:  # a pass over the whole text: once per document
            self._style = _Style.detect(self._clean, self._tree)
        style = self._style
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
            if (
                self._is_multiline(obj)
                and self._jsonc
                and self._insert_jsonc(last, key_text, value, style)
            ):
                return
            if self._is_multiline(obj):
                indent = self._line_indent(last.start)
                text = f",{style.newline}{indent}{key_text}{self._dump(value, style, True, indent)}"
            else:
                previous = obj.members[-2].value.end if len(obj.members) > 1 else None
                comma = self._text[previous : last.start] if previous is not None else style.comma
                text = f"{comma}{key_text}{self._dump(value, style, False, '')}"
            self._splice(last.value.end, last.value.end, text)
            return
        closing = self._text.rfind("\n", 0, obj.end - 1) + 1
        if self._jsonc and closing > obj.start and not self._text[closing : obj.end - 1].strip():
            # Only comments inside: the member goes below them, on its own line.
            indent = self._line_indent(obj.start) + style.indent
            dumped = self._dump(value, style, True, indent)
            self._splice(closing, closing, f"{indent}{key_text}{dumped}{style.newline}")
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

    def _line_end(self, member: _Member) -> tuple[int, bool] | None:
        """Where the line ``member`` ends on, and whether a comma follows it there.

        ``None`` unless the rest of its line is only a comma and a comment (in a
        JSONC file those belong to the member: ``"a": 1, // why``).
        """
        match = _SPACES_ON_LINE.match(self._clean, member.value.end)
        assert match is not None
        end = match.end()
        if end < len(self._clean) and self._clean[end] not in "\r\n":
            return None
        comma = self._text[member.value.end : end].lstrip(" \t").startswith(",")
        return end, comma

    def _insert_jsonc(self, last: _Member, key_text: str, value: object, style: _Style) -> bool:
        """Add a member on a line of its own after ``last``'s line, so a comment that
        ends that line stays with ``last``; a trailing comma style is kept."""
        found = self._line_end(last)
        if found is None:
            return False
        end, comma = found
        indent = self._line_indent(last.start)
        member = f"{style.newline}{indent}{key_text}{self._dump(value, style, True, indent)}"
        at = last.value.end
        if comma:
            self._splice(end, end, member + ",")
        else:
            self._commit(self._text[:at] + "," + self._text[at:end] + member + self._text[end:])
        return True

    def _remove_jsonc(self, members: tuple[_Member, ...], index: int) -> bool:
        """Cut a member's whole line(s), with the comment that ends its line, leaving the
        comments above and below it where they are."""
        member = members[index]
        line_start = self._text.rfind("\n", 0, member.start) + 1
        found = self._line_end(member)
        if found is None or self._clean[line_start : member.start].strip(" \t"):
            return False
        end, comma = found
        end += 2 if self._text.startswith("\r\n", end) else 1
        text = self._text[:line_start] + self._text[end:]
        if index == len(members) - 1 and index > 0 and not comma:
            # The new last member loses the comma that separated it from this one.
            at = self.skip_clean(members[index - 1].value.end)
            if self._clean[at] == ",":
                text = text[:at] + text[at + 1 :]
        self._commit(text)
        return True

    def skip_clean(self, pos: int) -> int:
        match = _SPACES.match(self._clean, pos)
        assert match is not None
        return match.end()

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
            if self._jsonc and self._remove_jsonc(members, index):
                continue
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
