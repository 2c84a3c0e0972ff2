"""TOML documents edited with tomlkit, which keeps comments and layout.

tomlkit already round-trips a file exactly and edits values in place (keeping a
value's trailing comment). This module adds what a human would do differently
from tomlkit's defaults: a new key goes right after its table's last entry (not
after the comment that introduces the next table), a new ``[table]`` is
separated by a blank line, a replaced string keeps its quoting style when it
can, inline tables are rewritten in their own style (tomlkit's in-place edits
leave them oddly spaced), and a table emptied by a delete keeps existing.
"""

from __future__ import annotations

import copy
import re
from collections.abc import MutableMapping

import tomlkit
from tomlkit.container import Container, OutOfOrderTableProxy
from tomlkit.exceptions import ParseError, TOMLKitError
from tomlkit.items import (
    AoT,
    Array,
    Comment,
    InlineTable,
    Item,
    Key,
    Null,
    String,
    StringType,
    Table,
    Whitespace,
)

from trueup.kinds.formats import (
    MISSING,
    BaseDocument,
    ConfigError,
    KeyPath,
    UnsupportedValueError,
    same_value,
)

__all__ = ["TomlDocument"]

_INT64 = range(-(2**63), 2**63)
_LOCATION = re.compile(r" at line \d+ col \d+$")
_CONTROL = re.compile(r"[\x00-\x08\x0a-\x1f\x7f]")

_Mapping = Container | Table | InlineTable | OutOfOrderTableProxy


def _plain(value: object) -> object:
    """tomlkit items as builtin values (``unwrap`` can leave str/int subclasses)."""
    if isinstance(value, Item | Container | OutOfOrderTableProxy):
        value = value.unwrap()
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return float(value)
    if isinstance(value, str):
        return str(value)
    if isinstance(value, dict):
        return {str(key): _plain(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_plain(item) for item in value]
    return value  # dates and times are already the datetime module's types


def _nest(path: KeyPath, value: object) -> object:
    for segment in reversed(path):
        value = {segment: value}
    return value


def _inline(value: object) -> Item:
    """An item that can live inside an inline table or array (no ``[headers]``)."""
    if isinstance(value, dict):
        table = tomlkit.inline_table()
        for key, item in value.items():
            table.append(key, _inline(item))
        return table
    if isinstance(value, list):
        array = tomlkit.array()
        for item in value:
            array.append(_inline(item))
        return array
    return tomlkit.item(value)


def _string(value: str, like: String) -> String:
    """A string item in ``like``'s quoting style when that style can hold ``value``."""
    literal = like.type in (StringType.SLL, StringType.MLL)
    multiline = like.type in (StringType.MLB, StringType.MLL) and "\n" in value
    if literal:
        forbidden = "'''" if multiline else "'"
        if forbidden in value or _CONTROL.search(value.replace("\n", "") if multiline else value):
            literal = False
    item = tomlkit.string(value, literal=literal, multiline=multiline)
    return _opened_like(item, like) if multiline else item


def _opened_like(item: String, like: String) -> String:
    """``item``, a multi-line string, opened as ``like`` is: delimiter then a line break.

    TOML drops a line break right after the opening quotes, so people start the
    text on the next line (``description =`` three quotes, then the paragraph); tomlkit
    writes the text right after the quotes. Same value, the person's layout.
    """
    before = like.as_string()
    raw = item.as_string()
    delimiter = raw[:3]
    for newline in ("\r\n", "\n"):
        if before[3:].startswith(newline) and not raw[3:].startswith(("\n", "\r\n")):
            reopened = tomlkit.parse(f"x = {delimiter}{newline}{raw[3:]}\n").item("x")
            if isinstance(reopened, String) and reopened.value == item.value:
                return reopened
    return item


def _sets_table(value: object) -> bool:
    return isinstance(value, dict) or (
        isinstance(value, list) and bool(value) and all(isinstance(v, dict) for v in value)
    )


_BARE_LF = re.compile(r"(?<!\r)\n")


def _ends_lf(line: str) -> bool:
    return line.endswith("\n") and not line.endswith("\r\n")


class TomlDocument(BaseDocument):
    """A TOML file; every table, comment and blank line survives edits."""

    def __init__(self, text: str, origin: str) -> None:
        super().__init__(text, origin)
        # Editors on Windows may start the file with a BOM, which tomlkit reads as a key.
        self._bom = "\ufeff" if text.startswith("\ufeff") else ""
        try:
            self._doc = tomlkit.parse(text[len(self._bom) :])
        except ParseError as exc:
            reason = _LOCATION.sub("", str(exc))
            raise ConfigError(
                f"invalid TOML: {reason}", origin=origin, line=exc.line, column=exc.col + 1
            ) from None
        except (TOMLKitError, ValueError) as exc:
            raise ConfigError(f"invalid TOML: {exc}", origin=origin) from None

    # reading ----------------------------------------------------------------------

    def _root(self) -> dict[str, object]:
        value = _plain(self._doc)
        assert isinstance(value, dict)
        return value

    def _item(self, path: KeyPath) -> object:
        node: object = self._doc
        for segment in path:
            if not isinstance(node, _Mapping) or segment not in node:
                return MISSING
            node = node[segment]
        return node

    def _lookup(self, path: KeyPath) -> object:
        node = self._item(path)
        return MISSING if node is MISSING else _plain(node)

    # writing ----------------------------------------------------------------------

    def _check_value(self, value: object) -> None:
        if value is None:
            raise UnsupportedValueError("TOML has no null value; delete the key instead")
        if isinstance(value, int) and not isinstance(value, bool) and value not in _INT64:
            raise UnsupportedValueError(f"TOML integers are 64-bit; {value} does not fit")
        if isinstance(value, dict):
            for item in value.values():
                self._check_value(item)
        elif isinstance(value, list):
            for item in value:
                self._check_value(item)

    def _render(self) -> str:
        text = self._doc.as_string()
        if "\r\n" in self._original and _BARE_LF.search(text):
            # tomlkit ends the lines it adds with LF; a CRLF file stays CRLF, unless
            # that would change a value (a multi-line string keeps its own breaks),
            # and a line that ended with LF in the file (a mixed file) still does.
            kept = {line for line in self._original.splitlines(keepends=True) if _ends_lf(line)}
            crlf = "".join(
                line[:-1] + "\r\n" if _ends_lf(line) and line not in kept else line
                for line in text.splitlines(keepends=True)
            )
            if tomlkit.parse(crlf).unwrap() == tomlkit.parse(text).unwrap():
                text = crlf
        return self._bom + text

    def _replace(self, path: KeyPath, value: object) -> None:
        parent: object = self._doc
        for depth, segment in enumerate(path):
            if isinstance(parent, InlineTable):
                self._edit_inline(path[:depth], path[depth:], value)
                return
            assert isinstance(parent, _Mapping)
            if depth == len(path) - 1 or segment not in parent:
                nested = _nest(path[depth + 1 :], value)
                self._put(parent, segment, nested, inline=self._dotted(path[:depth]))
                return
            parent = parent[segment]

    def _dotted(self, path: KeyPath) -> bool:
        """Whether the table at ``path`` is written with dotted keys (``a.b = 1``).

        A ``[header]`` inside such a table would land in the middle of its parent's
        plain keys and capture them, so new tables there are written inline.
        """
        for depth in range(len(path)):
            body = _body_of(self._item(path[:depth]))
            for key, _ in body or ():
                if key is not None and key.key == path[depth] and key.is_dotted():
                    return True
        return False

    def _remove(self, path: KeyPath) -> None:
        parent: object = self._doc
        for depth, segment in enumerate(path[:-1]):
            if isinstance(parent, InlineTable):
                self._edit_inline(path[:depth], path[depth:], MISSING)
                return
            assert isinstance(parent, _Mapping)
            parent = parent[segment]
        if isinstance(parent, InlineTable):
            self._edit_inline(path[:-1], path[-1:], MISSING)
            return
        assert isinstance(parent, _Mapping)
        body = _body_of(parent)
        root = parent is self._doc  # only there does _place add such a blank line
        separator = _separator_after(body, path[-1]) if body is not None and root else None
        index = _index_of(body, path[-1]) if body is not None else None
        next_intro = _next_intro(parent.get(path[-1]))
        del parent[path[-1]]
        if next_intro and body is not None and index is not None:
            # A deleted table's last lines introduce the next table: they stay, in its place.
            previous = next((e for _, e in reversed(body[:index]) if not isinstance(e, Null)), None)
            if isinstance(previous, Whitespace):  # already apart from what precedes it
                next_intro = next_intro.lstrip("\r\n")
            body[index] = (None, Whitespace(next_intro))
        if separator is not None and _last_entry(body or [], tables=False) is None:
            # The blank line put between a first key and the first table (or the
            # comment that introduces it) goes with the last such key.
            (body or [])[separator] = (None, Null())
        if isinstance(parent, Table) and parent and not parent.is_super_table():
            _implied_again(parent)
        if isinstance(parent, Table) and not parent and parent.is_super_table():
            # A header-less table (``[a.b]`` alone, or ``a.b = 1``) would vanish once
            # empty; give it a header so the table itself is kept.
            holder = self._item(path[:-2])
            assert isinstance(holder, MutableMapping)
            holder[path[-2]] = tomlkit.table()

    def _put(self, container: _Mapping, key: str, value: object, *, inline: bool) -> None:
        existing = container.get(key)
        item: Item
        if isinstance(existing, String) and isinstance(value, str):
            item = _string(value, existing)
        elif (
            inline
            or isinstance(existing, InlineTable | Array)
            or (isinstance(value, list) and not _sets_table(value))
        ):
            item = _inline(value)  # keep inline things inline
        else:
            item = tomlkit.item(value)
        if existing is None:
            _place(container, key, item)
        else:
            container[key] = item

    def _edit_inline(self, owner: KeyPath, rest: KeyPath, value: object) -> None:
        """Rewrite the inline table at ``owner`` with ``rest`` set (or deleted if MISSING).

        tomlkit's in-place edits of inline tables leave odd spacing (``{a = 1,b = 2}``),
        so the table is re-rendered instead, reusing the original text of every key
        and value that did not change (inline tables cannot hold comments).
        """
        plain = copy.deepcopy(self._lookup(owner))
        assert isinstance(plain, dict)
        target = plain
        for segment in rest[:-1]:
            target = target.setdefault(segment, {})
        if value is MISSING:
            target.pop(rest[-1], None)
        else:
            target[rest[-1]] = value
        original = self._item(owner)
        assert isinstance(original, InlineTable)
        parsed = tomlkit.parse(f"x = {_render_inline(original, plain)}")["x"]
        holder = self._item(owner[:-1])
        assert isinstance(holder, MutableMapping)
        holder[owner[-1]] = parsed


def _render_inline(original: InlineTable, value: dict[str, object]) -> str:
    """TOML text for inline table ``value``, styled and worded like ``original``."""
    parts: list[str] = []
    keys = {key.key: key for key, _ in original.value.body if key is not None}
    # New entries are spelt as the person spelt the others: ``{a=1,b=2}`` stays tight.
    sep = " = "
    if keys:
        first = next(iter(keys.values()))
        spelt = first.as_string()
        sep = spelt[len(spelt.rstrip()) :] + first.sep
    written = original.as_string()
    comma = "," if written.count(",") > 2 * written.count(", ") else ", "
    for name, item in value.items():
        key = keys.get(name)
        if key is None:
            parts.append(f"{tomlkit.key(name).as_string()}{sep}{_inline(item).as_string()}")
            continue
        old = original.value.item(name)  # indexing would unwrap booleans
        if isinstance(old, Table):
            # A dotted key inside the inline table (``a.b = 1``): its text is not
            # a value, so the key is written as a nested inline table instead.
            parts.append(f"{key.as_string().strip()} = {_inline(item).as_string()}")
            continue
        if isinstance(old, InlineTable) and isinstance(item, dict):
            text = _render_inline(old, item)
        elif isinstance(old, Item) and same_value(_plain(old), item):
            text = old.as_string()
        else:
            text = _inline(item).as_string()
        parts.append(f"{key.as_string()}{key.sep}{text}")
    if not parts:
        return "{}"
    pad = " " if original.as_string().startswith("{ ") else ""
    return "{" + pad + comma.join(parts) + pad + "}"


# --- placing new entries ------------------------------------------------------------
#
# tomlkit appends a new key after everything in its table, including the comment
# and blank lines that visually introduce the *next* table. A person inserts it
# right after the table's last entry instead (after any comment lines stuck to
# that entry, before the first blank line), and separates a new [table] from
# what precedes it with a blank line. That needs tomlkit's (long-stable) private
# ``_body``/``_insert_at``; when they are missing this falls back to appending.

_Body = list[tuple[Key | None, Item]]


def _body_of(item: object) -> _Body | None:
    inner = item.value if isinstance(item, Table) else item
    if isinstance(item, AoT):
        inner = item.body[-1].value if item.body else None
    body = getattr(inner, "_body", None) if isinstance(inner, Container) else None
    return body if isinstance(body, list) else None


def _is_table_entry(key: Key | None, item: Item) -> bool:
    """A ``[header]`` entry (dotted keys render inline, so they are not)."""
    return isinstance(item, Table | AoT) and key is not None and not key.is_dotted()


def _last_entry(body: _Body, tables: bool) -> int | None:
    last = None
    for index, (key, item) in enumerate(body):
        if key is None:
            continue
        if not tables and _is_table_entry(key, item):
            break
        last = index
    return last


def _heading(body: _Body) -> int | None:
    """Where the comment lines touching the first table start, if a comment touches it."""
    first = next((index for index, (key, _) in enumerate(body) if key is not None), None)
    if first is None:
        return None
    start = first
    while (
        start > 0 and body[start - 1][0] is None and not isinstance(body[start - 1][1], Whitespace)
    ):
        start -= 1
    return start if start < first else None


def _split_point(body: _Body, start: int) -> int:
    """Where trivia after ``body[start - 1]`` stops belonging to it: its first blank line
    (a Whitespace item, or a comment opened by a blank line _place gave it)."""
    index = start
    while index < len(body) and body[index][0] is None:
        item = body[index][1]
        if isinstance(item, Whitespace) or item.trivia.indent.startswith("\n"):
            return index
        index += 1
    return index


def _index_of(body: _Body, key: str) -> int | None:
    return next((i for i, (k, _) in enumerate(body) if k is not None and k.key == key), None)


def _next_intro(item: object) -> str:
    """The comment lines (with the blank lines around them) that end ``item``, a table,
    but belong to the next table: they follow its last entry after a blank line."""
    if not isinstance(item, Table):
        return ""
    body = _deepest_body(item)
    if not body:
        return ""
    kept = [(k, e) for k, e in body if not isinstance(e, Null)]  # deleted entries' places
    last = _last_entry(kept, tables=True)
    tail = [entry for _, entry in kept[_split_point(kept, 0 if last is None else last + 1) :]]
    if not any(isinstance(entry, Comment) for entry in tail):
        return ""
    return "".join(entry.as_string() for entry in tail)


def _implied_again(table: Table) -> None:
    """A table left holding only tables goes back to being implied by them (no header
    of its own): its header came with a key set in it, which is gone now."""
    body = _body_of(table)
    if body is None or not hasattr(table, "_is_super_table"):
        return
    keyed = [(key, item) for key, item in body if key is not None]
    if not keyed or not all(_is_table_entry(key, item) for key, item in keyed):
        return
    if any(not isinstance(item, Whitespace | Null) for key, item in body if key is None):
        return  # a comment of the person's sits under the header: it stays
    for index, (key, _) in enumerate(body):
        if key is None:
            body[index] = (None, Null())
    table._is_super_table = True


def _separator_after(body: _Body, key: str) -> int | None:
    """The one blank line between the entry ``key`` and a table, or a comment opening one."""
    index = _index_of(body, key)
    if index is None or _is_table_entry(*body[index]):
        return None
    # Entries deleted earlier stay in the body as empty Null placeholders.
    rest = [i for i in range(index + 1, len(body)) if not isinstance(body[i][1], Null)][:2]
    if len(rest) < 2:
        return None
    (gap_key, gap), (next_key, following) = body[rest[0]], body[rest[1]]
    if (
        gap_key is None
        and isinstance(gap, Whitespace)
        and gap.as_string() in ("\n", "\r\n")
        and (
            (next_key is None and isinstance(following, Comment))
            or _is_table_entry(next_key, following)
        )
    ):
        return rest[0]
    return None


def _deepest_body(item: Item) -> _Body | None:
    """The body rendered last inside ``item`` (where trailing blank lines end up)."""
    body = _body_of(item)
    while body:
        last = _last_entry(body, tables=True)
        if last is None or not _is_table_entry(*body[last]) or last != len(body) - 1:
            return body
        body = _body_of(body[last][1])
    return body


def _place(container: _Mapping, key: str, item: Item) -> None:
    body = _body_of(container)
    inner = container.value if isinstance(container, Table) else container
    is_table = isinstance(item, Table | AoT)
    last = _last_entry(body, tables=is_table) if body is not None else None
    heading = None if body is None or is_table or last is not None else _heading(body)
    if body is not None and heading is not None and isinstance(inner, Container):
        # The comment right above the first table introduces that table, so the key goes
        # before it, a blank line apart, rather than between the comment and its table.
        # The blank line opens the comment (not a trail on the key), so that _split_point
        # puts further keys after this one, not after the comment.
        comment = body[heading][1]
        comment.trivia.indent = "\n" + comment.trivia.indent
        inner._insert_at(heading, key, item)
        if container is not inner:
            dict.__setitem__(container, key, item)
        return
    if body is None or last is None or not isinstance(inner, Container):
        container[key] = item
        return
    index = _split_point(body, last + 1)
    if not is_table and index < len(body) and _is_table_entry(*body[index]):
        # Comment lines running into the next [table] with no blank line introduce it.
        index = last + 1
    moved: list[Item] = []
    if is_table and index == len(body) and _is_table_entry(*body[last]):
        # The blank/comment lines before the next table sit inside the previous one.
        previous = _deepest_body(body[last][1])
        if previous is not None:
            previous_last = _last_entry(previous, tables=True)
            cut = _split_point(previous, 0 if previous_last is None else previous_last + 1)
            moved = [entry for _, entry in previous[cut:]]
            del previous[cut:]
            before: object = previous[-1][1] if previous else None
        else:
            before = None
    else:
        before = body[index - 1][1]
    if (
        isinstance(before, Item)
        and not isinstance(before, Whitespace | Table | AoT)
        and "\n" not in before.trivia.trail
    ):
        before.trivia.trail += "\n"  # the file did not end with a newline
    if is_table:
        target: Item | None = item
        if isinstance(item, AoT):
            target = item.body[0] if item.body else None
        separated = before is None or isinstance(before, Whitespace)
        if target is not None and not separated and "\n" not in target.trivia.indent:
            target.trivia.indent = "\n" + target.trivia.indent
    if index >= len(body) or not hasattr(inner, "_insert_at"):
        container[key] = item
    else:
        if isinstance(item, Table | AoT) and item.name is None:
            item.name = key
        inner._insert_at(index, key, item)
        if container is not inner:
            # A table mirrors its container's entries in its own dict (as append does).
            dict.__setitem__(container, key, item)
    if moved:
        tail = _body_of(item) if isinstance(item, AoT) else _deepest_body(item)
        if tail is None:
            tail = body
        tail.extend((None, entry) for entry in moved)
