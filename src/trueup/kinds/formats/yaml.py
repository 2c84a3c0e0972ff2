"""YAML documents edited with ruamel.yaml's round-trip mode.

ruamel keeps comments, key order and quoting, but it re-emits the whole file and
it files each comment under the value *before* it. Three things here compensate:

* the emitter is configured like the file (indentation detected from the text,
  quotes preserved, no line wrapping);
* comment lines that visually introduce the next key move with it when a key is
  appended after them or deleted before them, so they stay where they were;
* after an edit, lines ruamel merely re-spelled (and ``---`` markers it dropped)
  are restored from the original text, also where it spelled a value on another
  number of lines (a flow list over several lines joined into one); the result
  is re-parsed and used only if it holds exactly the edited data, otherwise
  ruamel's own output is used.
"""

from __future__ import annotations

import datetime as _dt
import difflib
import io
import itertools
import re
from collections import defaultdict
from collections.abc import Iterable
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedMap, CommentedSeq, TaggedScalar
from ruamel.yaml.error import CommentMark, MarkedYAMLError, YAMLError
from ruamel.yaml.scalarbool import ScalarBoolean
from ruamel.yaml.scalarstring import (
    DoubleQuotedScalarString,
    FoldedScalarString,
    LiteralScalarString,
    SingleQuotedScalarString,
)
from ruamel.yaml.tokens import CommentToken

from trueup.kinds.formats import (
    MISSING,
    BaseDocument,
    ConfigError,
    KeyPath,
    KeyPathError,
    Missing,
    format_key_path,
    same_value,
)

__all__ = ["YamlDocument"]

# Plain scalars a YAML 1.1 reader (PyYAML) would not read back as strings:
# booleans like `on`/`no`, and sexagesimal numbers like `22:22` (ports!).
_YAML11_SPECIAL = re.compile(
    r"(?i:y|yes|n|no|on|off|true|false|null|~)|[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+(?:\.[0-9_]*)?"
)
_BOM = "\ufeff"
_LINE_BREAKS = re.compile("[\x85\u2028\u2029]")
# What every scalar style can hold as is (YAML printable, minus NEL/LS/PS/BOM/CR).
_SAFE = re.compile(
    "[\t\n\x20-\x7e\xa0-\u2027\u202a-\ud7ff\ue000-\ufefe\uff00-\ufffd\U00010000-\U0010ffff]*"
)
_OPENS_BLOCK = re.compile(r"(?P<lead>(?:-\s+)*)[^#\s-][^#]*?:\s*(?:#.*)?")
_BLOCK_SCALAR = re.compile(r".*(?::|-)\s+[|>][0-9+-]*\s*(?:#.*)?")


# --- layout ----------------------------------------------------------------------


def _content_lines(text: str) -> list[tuple[int, str]]:
    """(indent, content) of the structural lines: no blanks, comments or scalar bodies."""
    lines: list[tuple[int, str]] = []
    scalar_indent: int | None = None
    for raw in text.splitlines():
        content = raw.lstrip(" ")
        indent = len(raw) - len(content)
        if not content.strip() or content.startswith("#"):
            continue
        if scalar_indent is not None:
            if indent > scalar_indent:
                continue
            scalar_indent = None
        if content.startswith(("---", "...", "%")):
            continue
        lines.append((indent, content.rstrip()))
        if _BLOCK_SCALAR.fullmatch(content.rstrip()):
            scalar_indent = indent
    return lines


def _detect_indent(text: str) -> tuple[int, int, int]:
    """(mapping, sequence, offset) as ruamel's ``YAML.indent`` wants them.

    Taken from the first nested mapping and the first block sequence, so new
    nested keys line up with the user's (2 and 4 spaces, dashes flush or indented).
    """
    mapping: int | None = None
    offset: int | None = None
    lines = _content_lines(text)
    for (indent, content), (next_indent, next_content) in itertools.pairwise(lines):
        match = _OPENS_BLOCK.fullmatch(content)
        if match is None:
            continue
        key_column = indent + len(match.group("lead"))
        if next_content == "-" or next_content.startswith("- "):
            if offset is None and next_indent >= key_column:
                offset = next_indent - key_column
        elif mapping is None and next_indent > key_column:
            mapping = next_indent - key_column
        if mapping is not None and offset is not None:
            break
    mapping = mapping or 2
    offset = mapping if offset is None else offset
    return mapping, offset + 2, offset


class _ExponentFloat(float):
    """A float Python spells with an exponent and no point (``1e+16``)."""


def _represent_exponent(representer: Any, value: _ExponentFloat) -> Any:
    # YAML 1.1 (PyYAML) reads 1e+16 as a string: it needs a point in the mantissa.
    mantissa, _, exponent = repr(float(value)).partition("e")
    return representer.represent_scalar("tag:yaml.org,2002:float", f"{mantissa}.0e{exponent}")


def _make_yaml(text: str) -> YAML:
    yaml = YAML(typ="rt")
    yaml.representer.add_representer(_ExponentFloat, _represent_exponent)
    yaml.preserve_quotes = True
    yaml.width = 2**31 - 1  # never re-wrap long lines
    mapping, sequence, offset = _detect_indent(text)
    yaml.indent(mapping=mapping, sequence=sequence, offset=offset)
    return yaml


# --- values ----------------------------------------------------------------------


def _key_text(key: object) -> str:
    if isinstance(key, bool):
        return "true" if key else "false"
    if key is None:
        return "null"
    return str(key)


# Values an alias-free file can hold are fewer than its characters: any limit
# at least that large is only reached through aliases (and never below this).
LEAST_EXPANSION = 100_000


def expanded_size(root: object, limit: int) -> int:
    """How many values ``root`` holds once every alias is expanded, counting up to ``limit``.

    Reading a document means expanding it (``_plain``): nested aliases make that
    exponential in the file's size, so it is measured first, once per distinct
    node, and the count stops as soon as it passes ``limit``.
    """
    sizes: dict[int, int] = {}

    def size(node: object) -> int:
        if isinstance(node, dict):
            children: Iterable[object] = (*node.keys(), *node.values())
        elif isinstance(node, list | tuple | set | frozenset):
            children = node
        else:
            return 1
        known = sizes.get(id(node))
        if known is not None:
            return known
        total = 1
        for child in children:
            total += size(child)
            if total > limit:
                break
        sizes[id(node)] = total
        return total

    return size(root)


def alias_bomb(data: object, size: int) -> str | None:
    """Why ``data``, read from ``size`` characters (or bytes), must not be used, if
    its aliases make it huge.

    Shared with declaration files: a YAML profile is expanded as it is validated.
    """
    limit = max(LEAST_EXPANSION, size)
    if expanded_size(data, limit) <= limit:
        return None
    return (
        f"its aliases expand to more than {limit} values, far more than the file spells "
        "out (a 'billion laughs' document): trueup does not read it"
    )


def _plain(value: object) -> object:
    """ruamel's round-trip types (ScalarFloat, CommentedMap, ...) as builtins."""
    if value is None:
        return None
    if isinstance(value, bool | ScalarBoolean):
        return bool(value)
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return float(value)
    if isinstance(value, str):
        return str(value)
    if isinstance(value, dict):
        return {_key_text(key): _plain(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(item) for item in value]
    if isinstance(value, set | frozenset):
        return sorted((_plain(item) for item in value), key=repr)
    if isinstance(value, _dt.datetime):
        return _dt.datetime(
            value.year,
            value.month,
            value.day,
            value.hour,
            value.minute,
            value.second,
            value.microsecond,
            value.tzinfo,
        )
    if isinstance(value, _dt.date):
        return _dt.date(value.year, value.month, value.day)
    if isinstance(value, TaggedScalar):
        return str(value.value)
    return str(value)


def _string(value: str, like: object) -> object:
    """``value`` in the quoting style of the string it replaces, when that is safe.

    ruamel re-applies the old value's style to a plain ``str`` assigned over it,
    so the style is always chosen explicitly here. Characters a style cannot hold
    (non-printables, NEL/LS/PS which ruamel writes raw and then reads back as line
    breaks) force double quotes; YAML 1.1 look-alikes (``yes``, ``22:22``) are
    quoted so PyYAML-based readers do not turn them into booleans or numbers.
    """
    if isinstance(like, DoubleQuotedScalarString) or not _SAFE.fullmatch(value):
        return DoubleQuotedScalarString(value)
    if isinstance(like, SingleQuotedScalarString):
        if "\n" in value:
            return DoubleQuotedScalarString(value)
        return SingleQuotedScalarString(value)
    if isinstance(like, FoldedScalarString):
        return _folded_like(value, like)
    if isinstance(like, LiteralScalarString):
        return type(like)(value)
    if _YAML11_SPECIAL.fullmatch(value):
        return SingleQuotedScalarString(value)
    return value


def _folded_like(value: str, like: FoldedScalarString) -> FoldedScalarString:
    """``value`` as a folded scalar (``>``) broken over lines as wide as ``like``'s.

    ruamel writes a new folded scalar on one line; a person's ``>-`` paragraph
    stays a paragraph when its text changes. Folds go only at single spaces
    between words of a line (where YAML folding reads them back as spaces).
    """
    folded: FoldedScalarString = FoldedScalarString(value)
    old = str(like)
    cuts = [0, *getattr(like, "fold_pos", []), len(old)]
    width = max((b - a for a, b in itertools.pairwise(cuts)), default=0)
    if len(cuts) < 3 or width <= 0:
        return folded
    positions: list[int] = []
    start = 0
    for line in value.split("\n"):
        if line.startswith((" ", "\t")):  # a more-indented line is never folded
            start += len(line) + 1
            continue
        line_start, last_space = start, None
        for offset, char in enumerate(line):
            at = start + offset
            if (
                char == " "
                and 0 < offset < len(line) - 1
                and line[offset - 1] != " "
                and line[offset + 1] != " "
            ):
                if at - line_start > width and last_space is not None:
                    positions.append(last_space)
                    line_start = last_space + 1
                last_space = at
        if (
            start + len(line) - line_start > width
            and last_space is not None
            and last_space > line_start
        ):
            positions.append(last_space)
        start += len(line) + 1
    folded.fold_pos = positions  # type: ignore[attr-defined]  # set by ruamel when read
    return folded


def _key_node(key: str) -> object:
    """A new key, quoted where a value would be (``yes`` as a key is a boolean to PyYAML)."""
    if _LINE_BREAKS.search(key) or _YAML11_SPECIAL.fullmatch(key):
        return _string(key, None)
    return key


def _to_node(value: object, like: object = None) -> object:
    if isinstance(value, dict):
        mapping = CommentedMap()
        if not value:
            mapping.fa.set_flow_style()
        for key, item in value.items():
            mapping[_key_node(key)] = _to_node(item)
        return mapping
    if isinstance(value, list):
        sequence = CommentedSeq(_to_node(item) for item in value)
        if not value or (isinstance(like, CommentedSeq) and like.fa.flow_style()):
            sequence.fa.set_flow_style()  # `tags: [a, b]` stays on one line
        return sequence
    if isinstance(value, str):
        return _string(value, like)
    if type(value) is float and "e" in repr(value) and "." not in repr(value):
        return _ExponentFloat(value)
    return value


def _nest(path: KeyPath, value: object) -> object:
    for segment in reversed(path):
        value = {segment: value}
    return value


# --- comments --------------------------------------------------------------------
#
# ruamel attaches the text after a value (its end-of-line comment plus any comment
# and blank lines before the next key) to that value: ``ca.items[key][2]`` in a
# mapping, ``ca.items[index][0]`` in a sequence. The first line of that token ends
# the value's own line; the rest belongs, visually, to whatever comes next.

_Holder = tuple[Any, Any]  # (CommentedMap or CommentedSeq, key or index)


def _own_keys(mapping: CommentedMap) -> list[Any]:
    own = getattr(mapping, "_ok", None)  # keys not pulled in by a `<<:` merge
    return [key for key in mapping if own is None or key in own]


def _is_block(value: object) -> bool:
    return (
        isinstance(value, CommentedMap | CommentedSeq)
        and len(value) > 0
        and not value.fa.flow_style()
        and value.anchor.value is None
    )


def _deepest_last(container: Any, key: Any) -> _Holder:
    """The holder of the comment token that ends the text of ``container[key]``."""
    value = container[key]
    while _is_block(value):
        if isinstance(value, CommentedMap):
            keys = _own_keys(value)
            if not keys:
                break
            container, key = value, keys[-1]
        else:
            container, key = value, len(value) - 1
        value = container[key]
    return container, key


def _slot(container: Any) -> int:
    return 2 if isinstance(container, CommentedMap) else 0


def _token(holder: _Holder) -> CommentToken | None:
    """The comment token after ``holder``'s value, if it is that value's own.

    An alias of an anchored scalar (``name: *p``) is handed the very token that
    follows its anchor (``port: &p http``, then a blank line): that text is the
    anchor's, so editing around the alias must neither move nor change it.
    """
    container, key = holder
    entry = container.ca.items.get(key)
    token = entry[_slot(container)] if entry else None
    if not isinstance(token, CommentToken):
        return None
    token_line = getattr(token.start_mark, "line", None)
    return None if token_line is not None and token_line < _line_of(holder) else token


def _line_of(holder: _Holder) -> int:
    """The 0-based line ``holder``'s key or item starts on in the file (-1 if new)."""
    container, key = holder
    try:
        if isinstance(container, CommentedMap):
            return int(container.lc.key(key)[0])
        return int(container.lc.item(key)[0])
    except (KeyError, IndexError, TypeError):
        return -1


def _set_token(holder: _Holder, token: CommentToken | None) -> None:
    container, key = holder
    entry = container.ca.items.setdefault(key, [None, None, None, None])
    entry[_slot(container)] = token


def _detach_tail(container: Any, key: Any, column: int | None = None) -> str:
    """Cut the comment/blank lines after ``container[key]``'s last line, and return them.

    With ``column`` (where the keys of a mapping getting a new last key start),
    the comments that belong to ``container[key]`` stay with it: those indented
    deeper than ``column`` (``resources: {}`` then ``  # limits:``, commented-out
    options) and those at ``column`` that touch it with no blank line between.
    Only what follows them (what introduced the next key, or ends the file)
    moves below the new key.
    """
    holder = _deepest_last(container, key)
    token = _token(holder)
    if token is None:
        return ""
    block = isinstance(holder[0][holder[1]], LiteralScalarString | FoldedScalarString)
    if block:
        # A block scalar's last line ends its value: every line of the token follows it.
        first, rest = "", str(token.value)
    else:
        first, newline, rest = str(token.value).partition("\n")
        if not newline or not rest:
            return ""
        first += newline
    kept, rest = _own_comments(rest, column) if column is not None else ("", rest)
    if not first + kept:
        _set_token(holder, None)
    else:
        token.value = first + kept
    return rest


def _claim_end_comments(root: CommentedMap, key: Any, column: int) -> None:
    """Give the last key the comments after it that ruamel filed as the document's end.

    ruamel keeps the comment lines after a top-level flow value (``resources: {}``
    then ``  # limits:``) as end-of-document comments, which it writes after a
    key added at the end: the new key would capture them. Those that belong to
    the last key (:func:`_own_comments`) are put right after it instead.
    """
    end = getattr(root.ca, "end", None)
    if not end:
        return
    spelled = []
    for token in end:
        if not isinstance(token, CommentToken):
            return
        indent = getattr(token.start_mark, "column", 0) if str(token.value).strip() else 0
        spelled.append(" " * indent + str(token.value))
    kept, _ = _own_comments("".join(spelled), column)
    count = len(kept.splitlines())
    taken = 0
    while taken < len(end) and count > 0:
        count -= len(str(end[taken].value).splitlines()) or 1
        taken += 1
    if not taken:
        return
    _append_tail(_deepest_last(root, key), "".join(spelled[:taken]))
    del end[:taken]


def _own_comments(tail: str, column: int) -> tuple[str, str]:
    """Split ``tail`` into the comment lines that belong to the value before it, and
    the rest (see :func:`_detach_tail`)."""
    lines = tail.splitlines(keepends=True)
    keep, blank = 0, False
    for index, line in enumerate(lines):
        content = line.strip()
        if not content:
            blank = True
            continue
        indent = len(line) - len(line.lstrip(" "))
        if not content.startswith("#") or indent < column or (indent == column and blank):
            break
        keep = index + 1
    return "".join(lines[:keep]), "".join(lines[keep:])


def _append_tail(holder: _Holder, tail: str, *, collapse: bool = False) -> None:
    """Append ``tail`` to the text after ``holder``'s value.

    With ``collapse`` (used when a key between them was deleted), blank lines that
    would now double up are merged, as a person deleting a block would do.
    """
    token = _token(holder)
    existing = "\n" if token is None else str(token.value)
    if collapse and existing.endswith("\n\n"):
        tail = tail.lstrip("\n")
    if not tail:
        return
    if token is None:
        _set_token(holder, CommentToken(existing + tail, CommentMark(0), None))
    else:
        token.value = existing + tail


def _attach_tail(container: Any, key: Any, tail: str, *, collapse: bool = False) -> None:
    """Put ``tail`` back after the last line of ``container[key]``."""
    if tail:
        _append_tail(_deepest_last(container, key), tail, collapse=collapse)


def _tidy(container: CommentedMap, key: Any) -> None:
    """Drop a comment-less line-end token from a key that now holds a block collection.

    (It would emit an empty line between ``key:`` and the first nested line.)
    """
    token = _token((container, key))
    if token is not None and _is_block(container[key]) and "#" not in str(token.value):
        _set_token((container, key), None)


# --- restoring untouched lines ---------------------------------------------------
#
# ruamel re-spells some values on a different number of lines than the file has
# them (a flow list over several lines becomes one line, a plain scalar folded over
# lines is joined, ``!!binary x`` becomes a block scalar). Such a value is a
# *group*: its ruamel lines stand for a run of original lines as a whole. The
# nodes both parses share (every key of a block mapping, every item of a block
# sequence) pin ruamel's lines to the file's, so a group never spans two nodes
# and an edit to one key cannot drag its re-spelled neighbour along.


def _node_lines(
    baseline: object, original: object, pairs: list[tuple[int, int]], seen: set[int]
) -> None:
    """Append (ruamel's line, the file's line) of each node below two parses of one text.

    Flow collections are not entered: their items share lines in one spelling and
    not in the other, so they are no anchor; the collection is one group. A node
    is entered once: aliases repeat it, and nested aliases of aliases would make
    the walk exponential in the file's size ("billion laughs").
    """
    if id(original) in seen:
        return
    seen.add(id(original))
    if isinstance(original, CommentedMap) and isinstance(baseline, CommentedMap):
        if original.fa.flow_style():
            return
        keys = list(zip(_own_keys(baseline), _own_keys(original), strict=False))
        for baseline_key, original_key in keys:
            pairs.append((baseline.lc.key(baseline_key)[0], original.lc.key(original_key)[0]))
            _node_lines(baseline[baseline_key], original[original_key], pairs, seen)
    elif isinstance(original, CommentedSeq) and isinstance(baseline, CommentedSeq):
        if original.fa.flow_style():
            return
        for index in range(min(len(baseline), len(original))):
            pairs.append((baseline.lc.item(index)[0], original.lc.item(index)[0]))
            _node_lines(baseline[index], original[index], pairs, seen)


def _anchors(baseline: object, original: object) -> list[tuple[int, int]]:
    """Lines known to be the same node in ruamel's rendering and the file, in order.

    Only pairs increasing on both sides are kept (an alias repeats its anchor's
    lines), so they cut both texts into matching segments.
    """
    pairs: list[tuple[int, int]] = []
    _node_lines(baseline, original, pairs, set())
    kept: list[tuple[int, int]] = []
    for line_b, line_o in pairs:
        if not kept or (line_b > kept[-1][0] and line_o > kept[-1][1]):
            kept.append((line_b, line_o))
    return kept


def _align(
    b: list[str], o: list[str], anchors: list[tuple[int, int]]
) -> list[tuple[str, int, int, int, int]]:
    """Opcodes turning ruamel's lines ``b`` into the file's lines ``o``.

    Lines are compared whitespace-collapsed (`key:   value` matches `key: value`),
    and only within the segments the anchors cut, so a difference never reaches
    across a node that both texts hold.
    """
    normal_b = [" ".join(line.split()) for line in b]
    normal_o = [" ".join(line.split()) for line in o]
    bounds = [(0, 0), *anchors, (len(b), len(o))]
    opcodes: list[tuple[str, int, int, int, int]] = []
    for (b0, o0), (b1, o1) in itertools.pairwise(bounds):
        matcher = difflib.SequenceMatcher(None, normal_b[b0:b1], normal_o[o0:o1], autojunk=False)
        opcodes.extend(
            (tag, b0 + i1, b0 + i2, o0 + j1, o0 + j2)
            for tag, i1, i2, j1, j2 in matcher.get_opcodes()
        )
    return opcodes


def _restore(original: str, baseline: str, edited: str, anchors: list[tuple[int, int]]) -> str:
    """Apply the baseline→edited line diff to ``original`` instead of to ``baseline``.

    ``baseline`` is ruamel's rendering of the unedited file. Where it differs from
    the original, ruamel re-spelled something (spacing, indentation, a dropped
    ``---``, a value on another number of lines); the original's lines are used
    wherever the edit did not touch them (a re-spelled group only when it left all
    of it alone), and the lines the edit wrote are indented like the original
    lines around them (ruamel indents every block alike, a file need not).
    """
    o = original.splitlines(keepends=True)
    b = baseline.splitlines(keepends=True)
    e = edited.splitlines(keepends=True)
    to_original: dict[int, int] = {}
    groups: dict[int, tuple[int, int, int]] = {}  # first line -> (end, original's lines)
    group_of: dict[int, int] = {}  # ruamel line -> first line of its group
    extra: defaultdict[int, list[str]] = defaultdict(list)  # original-only lines
    for tag, i1, i2, j1, j2 in _align(b, o, anchors):
        if tag == "equal" or (tag == "replace" and i2 - i1 == j2 - j1):
            to_original.update((i1 + k, j1 + k) for k in range(i2 - i1))
        elif tag == "insert":
            extra[i1].extend(o[j1:j2])
        else:
            groups[i1] = (i2, j1, j2)
            group_of.update((i, i1) for i in range(i1, i2))
    # The file's line for each ruamel line: its own, or its group's first one.
    counterpart = dict(to_original)
    counterpart.update((i, j1) for i, (_, j1, j2) in groups.items() if j2 > j1)
    shifts = [
        (_indent(b[i]), _indent(o[counterpart[i]])) if i in counterpart and _shaped(b[i]) else None
        for i in range(len(b))
    ]
    matcher = difflib.SequenceMatcher(None, b, e, autojunk=False)
    opcodes = matcher.get_opcodes()
    untouched = {i for tag, i1, i2, _, _ in opcodes if tag == "equal" for i in range(i1, i2)}
    out: list[str] = []
    # (ruamel's indent, the output's indent) of each structural line written so far.
    before: list[tuple[int, int]] = []
    for tag, i1, i2, j1, j2 in opcodes:
        for i in range(i1, i2):
            out.extend(extra.pop(i, []))
            if tag != "equal":
                continue
            first = group_of.get(i)
            if first is not None and untouched.issuperset(range(first, groups[first][0])):
                if i == first:  # the whole group once, as the file spells it
                    out.extend(o[groups[first][1] : groups[first][2]])
                    shift = shifts[i]
                    if shift is not None:
                        before.append(shift)
                continue
            out.append(o[to_original[i]] if i in to_original else b[i])
            if _shaped(b[i]):
                before.append(shifts[i] or (_indent(b[i]), _indent(b[i])))
        if tag == "equal":
            continue
        # Lines replaced by the edit say how their replacements are indented.
        near = before + [shift for shift in shifts[i1:i2] if shift is not None]
        after = [shift for shift in shifts[i2:] if shift is not None]
        for line in e[j1:j2]:
            moved = _reindent(line, near, after)
            out.append(moved)
            if _shaped(line):
                near.append((_indent(line), _indent(moved)))
                before.append((_indent(line), _indent(moved)))
    for i in sorted(extra):
        out.extend(extra[i])
    return "".join(out)


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" "))


def _shaped(line: str) -> bool:
    """Whether a line's indentation carries structure (not blank, not a comment)."""
    content = line.strip()
    return bool(content) and not content.startswith("#")


def _reindent(line: str, near: list[tuple[int, int]], after: list[tuple[int, int]]) -> str:
    """Indent a line ruamel wrote like its sibling in the original, else like its parent."""
    if not line.strip():
        return line
    depth = _indent(line)
    sibling = parent = None
    for spelled, kept in reversed(near):
        if spelled <= depth:
            if spelled == depth:
                sibling = kept
            else:
                parent = kept + depth - spelled
            break
    if sibling is None:  # the first of its block: a sibling below may tell
        for spelled, kept in after:
            if spelled <= depth:
                sibling = kept if spelled == depth else None
                break
    target = sibling if sibling is not None else parent if parent is not None else depth
    return " " * max(target, 0) + line[depth:]


# --- the document ----------------------------------------------------------------


class YamlDocument(BaseDocument):
    """A YAML file whose top level is a mapping (or empty).

    A large file (:data:`SECTIONS_FROM`) is a :class:`_SectionedYamlDocument` when
    the C parser can cut it into top-level sections: see there.
    """

    def __new__(cls, text: str, origin: str, *, indent_from: str | None = None) -> YamlDocument:
        if cls is YamlDocument and indent_from is None and len(text) >= SECTIONS_FROM:
            scan = _scan(text[1:] if text.startswith(_BOM) else text, origin)
            if scan is not None:
                document = object.__new__(_SectionedYamlDocument)
                document._scan = scan
                return document
        return object.__new__(cls)

    def __init__(self, text: str, origin: str, *, indent_from: str | None = None) -> None:
        super().__init__(text, origin)
        # ruamel drops a byte-order mark; it is put back in front of any edit.
        self._bom = _BOM if text.startswith(_BOM) else ""
        text = text[len(self._bom) :]
        # A section of a larger file is indented like the whole file.
        self._yaml = _make_yaml(text if indent_from is None else indent_from)
        # A file with no keys (empty, or comments only): kept as it was above the
        # first new key, and given back as it was once no key is left.
        self._head: str | None = None
        data = self._parse(text)
        if data is None:
            if all(
                not line.strip() or line.lstrip().startswith(("#", "---"))
                for line in text.splitlines()
            ):
                self._head = text
            data = CommentedMap()
        if not isinstance(data, CommentedMap):
            raise ConfigError(
                "the top level of a YAML config file must be a mapping", origin=origin
            )
        too_many = alias_bomb(data, len(text))
        if too_many:
            raise ConfigError(too_many, origin=origin)
        self._data: CommentedMap = data

    def _parse(self, text: str) -> object:
        try:
            return self._yaml.load(text)
        except MarkedYAMLError as exc:
            mark = exc.problem_mark or exc.context_mark
            reason = " ".join(str(part) for part in (exc.context, exc.problem) if part)
            raise ConfigError(
                f"invalid YAML: {reason or exc}",
                origin=self.origin,
                line=mark.line + 1 if mark is not None else None,
                column=mark.column + 1 if mark is not None else None,
            ) from None
        except YAMLError as exc:
            raise ConfigError(f"invalid YAML: {exc}", origin=self.origin) from None

    # reading ----------------------------------------------------------------------

    def _root(self) -> dict[str, object]:
        value = _plain(self._data)
        assert isinstance(value, dict)
        return value

    @staticmethod
    def _key(mapping: object, segment: str) -> Any:
        """The actual key in ``mapping`` spelled ``segment`` (YAML keys need not be str)."""
        if not isinstance(mapping, CommentedMap):
            return MISSING
        if segment in mapping:
            return segment
        for key in mapping:
            if not isinstance(key, str) and _key_text(key) == segment:
                return key
        return MISSING

    def _node(self, path: KeyPath) -> object:
        """The node at ``path`` as ruamel holds it, or MISSING."""
        node: object = self._data
        for segment in path:
            key = self._key(node, segment)
            if key is MISSING:
                return MISSING
            assert isinstance(node, CommentedMap)
            node = node[key]
        return node

    def _lookup(self, path: KeyPath) -> object:
        node = self._node(path)
        return MISSING if node is MISSING else _plain(node)

    def inherited(self, path: KeyPath) -> bool:
        parent = self._node(path[:-1])
        if not isinstance(parent, CommentedMap):
            return False
        key = self._key(parent, path[-1])
        return key is not MISSING and key not in _own_keys(parent)

    def shared_by(self, path: KeyPath) -> str | None:
        """The anchor of a mapping a write at ``path`` would go into, if any.

        Every alias of an anchored mapping is the same node: setting a key in
        it (through ``work: *defaults``, say) changes every key that shares it.
        """
        node: object = self._data
        for segment in path[:-1]:
            key = self._key(node, segment)
            if key is MISSING:
                return None
            assert isinstance(node, CommentedMap)
            node = node[key]
            anchor = getattr(getattr(node, "anchor", None), "value", None)
            if anchor is not None:
                return f"&{anchor}"
        return None

    def kept_whole(self) -> dict[str, str]:
        found: dict[str, str] = {}
        seen: set[int] = set()

        def walk(node: object, path: KeyPath) -> None:
            if not isinstance(node, CommentedMap) or id(node) in seen:
                return  # an alias repeats a node already walked
            seen.add(id(node))
            anchor = getattr(getattr(node, "anchor", None), "value", None)
            if anchor is not None and path:
                found[format_key_path(path)] = (
                    f"it is inside the YAML anchor &{anchor}, which other keys share "
                    "(the edit would change them too)"
                )
            elif path and node.fa.flow_style() and _spans_lines(node):
                found[format_key_path(path)] = (
                    f"{format_key_path(path)} is a flow mapping written over several lines, "
                    "which trueup would rewrite on one line (losing its comments)"
                )
            for key in _own_keys(node):
                walk(node[key], (*path, _key_text(key)))

        walk(self._data, ())
        return found

    # writing ----------------------------------------------------------------------

    def _unshared(self, path: KeyPath, verb: str) -> None:
        """Refuse an edit through an anchor: planned as a person's step, never done silently."""
        shared = self.shared_by(path)
        if shared is not None:
            raise KeyPathError(
                f"cannot {verb} {format_key_path(path)}: it is inside the YAML anchor {shared}, "
                "which other keys share"
            )

    def _replace(self, path: KeyPath, value: object) -> None:
        self._unshared(path, "set")
        parent = self._data
        for depth, segment in enumerate(path):
            key = self._key(parent, segment)
            if key is MISSING:
                if not parent and parent.fa.flow_style():
                    parent.fa.set_block_style()  # `x: {}` grows into a block mapping
                keys = _own_keys(parent)
                column = _key_column(parent, keys[-1]) if keys else None
                if keys and column is not None and parent is self._data:
                    _claim_end_comments(parent, keys[-1], column)
                tail = _detach_tail(parent, keys[-1], column) if keys else ""
                parent[_key_node(segment)] = _to_node(_nest(path[depth + 1 :], value))
                _attach_tail(parent, segment, tail)
                return
            if depth == len(path) - 1:
                tail = _detach_tail(parent, key)
                parent[key] = _to_node(value, like=parent[key])
                _tidy(parent, key)
                _attach_tail(parent, key, tail)
                return
            parent = parent[key]

    def _remove(self, path: KeyPath) -> None:
        self._unshared(path, "remove")
        grandparent: CommentedMap | None = None
        parent = self._data
        for segment in path[:-1]:
            grandparent, parent = parent, parent[self._key(parent, segment)]
        key = self._key(parent, path[-1])
        if isinstance(key, Missing):  # pragma: no cover - BaseDocument checks
            return
        keys = _own_keys(parent)
        if key not in keys:
            raise KeyPathError(
                f"cannot delete {format_key_path(path)}: it comes from a YAML merge key (<<)"
            )
        index = keys.index(key)
        tail = _detach_tail(parent, key)
        del parent[key]
        if not parent:
            parent.fa.set_flow_style()  # now `{}`: comments must follow it, not precede it
        if not tail:
            return
        if index > 0:
            _attach_tail(parent, keys[index - 1], tail, collapse=True)
        elif grandparent is not None:
            # The lines came right after `parent_key:`; that is where they stay.
            holder = (grandparent, self._key(grandparent, path[-2]))
            _append_tail(holder, tail, collapse=True)
        else:
            comment = parent.ca.comment
            if not comment:
                comment = parent.ca.comment = [None, []]
            if comment[1] is None:
                comment[1] = []
            comment[1].append(CommentToken(tail, CommentMark(0), None))

    def _dump(self, data: object) -> str:
        stream = io.StringIO()
        self._yaml.dump(data, stream)
        return stream.getvalue()

    def _render(self) -> str:
        text = self._render_body()
        if not self._data:  # no key left: no "{}" either, only the comments there were
            text = "".join(line for line in text.splitlines(keepends=True) if line.strip() != "{}")
        return self._bom + self._without_new_end(text)

    def _without_new_end(self, text: str) -> str:
        """Drop the ``...`` ruamel ends a document with after a kept block scalar (``|+``).

        The marker only spells out where the scalar's blank lines stop; a file
        that never had one means the same without it, and gaining one would
        change a line the person wrote nothing on.
        """
        lines = text.splitlines(keepends=True)
        if not lines or lines[-1].strip() != "..." or _ends_document(self._original):
            return text
        shorter = "".join(lines[:-1])
        try:
            same = same_value(_plain(self._yaml.load(shorter)), _plain(self._data))
        except YAMLError:
            return text
        return shorter if same else text

    def _render_body(self) -> str:
        edited = self._dump(self._data)
        original = self._original[len(self._bom) :]
        if self._head is not None:
            if not self._data:
                return self._head
            head = self._head if not self._head or self._head.endswith("\n") else self._head + "\n"
            return head + edited
        newline = "\r\n" if "\r\n" in original else "\n"
        # Comments read from a CRLF file keep their "\r": one newline per line first.
        edited = _with_newline(edited, newline)
        if not original.endswith("\n"):
            original += newline
        unedited = self._parse(original)
        baseline = _with_newline(self._dump(unedited), newline)
        if baseline == original:
            return edited
        restored = _restore(original, baseline, edited, _anchors(self._parse(baseline), unedited))
        try:
            if same_value(_plain(self._yaml.load(restored)), _plain(self._data)):
                return restored
        except YAMLError:
            pass
        return edited


def _ends_document(text: str) -> bool:
    """Whether the file's last line with anything on it is a ``...`` document end."""
    lines = [line for line in text.splitlines() if line.strip()]
    return bool(lines) and lines[-1].strip() == "..."


def _spans_lines(node: CommentedMap) -> bool:
    """Whether a mapping read from the file goes on past the line it starts on."""
    start = getattr(node.lc, "line", None)
    if start is None:
        return False
    lines = node.lc.data or {}  # none for a tagged flow mapping (`!Custom {a: 1}`)
    return any(node.lc.key(key)[0] != start for key in node if key in lines)


def _key_column(mapping: CommentedMap, key: Any) -> int | None:
    """The column ``key`` starts at in the file (``None`` for a key added since)."""
    try:
        return int(mapping.lc.key(key)[1])
    except (KeyError, IndexError, TypeError):
        return None


def _with_newline(text: str, newline: str) -> str:
    return text.replace("\r\n", "\n").replace("\n", newline)


# --- large files -----------------------------------------------------------------
#
# ruamel's round trip is pure Python: about 3.5 s to read a 1 MB file and 2 s to
# write it, several times per plan. A large file is read by ruamel's C parser
# instead (libyaml through ruamel.yaml.clib, resolved by ruamel's own YAML 1.2
# rules), once per text in a process, and cut at its top-level keys. Only the
# sections an operation is about go through the round trip, as a small document of
# their own, and an edited section's text is spliced back between the untouched
# ones. Sections joined by an anchor and its aliases are always taken together, so
# each small document means what those lines mean in the whole file.

SECTIONS_FROM = 128 * 1024  # characters; smaller files take the whole round trip
_SCANS: dict[str, _Scan | None] = {}  # the last few texts read: one plan reads a file often
_SCANS_KEPT = 4
_NOT_LINE_BREAKS = re.compile("\r(?!\n)|[\x85\u2028\u2029]")


class _Scan:
    """What the C parser found in a large file: values and top-level sections."""

    def __init__(self, text: str, data: dict[str, object], keys: list[str], lines: list[int]):
        self.data = data  # the whole document as plain values
        self.keys = keys  # each section's top-level key as a key path spells it, in order
        self.raw = list(data)  # ... and as the file spells it (``1``, ``null``)
        self.index = {key: number for number, key in enumerate(keys)}
        offsets = [0, *(match.end() for match in re.finditer("\n", text))]
        starts = [offsets[line] for line in lines]
        self.head = text[: starts[0]]  # comments, `---`: never edited
        self.texts = [text[a:b] for a, b in itertools.pairwise([*starts, len(text)])]
        self.spans: list[tuple[int, int]] = [(n, n) for n in range(len(keys))]
        self.candidates: set[int] = set()  # sections kept_whole may report something in

    def join(self, first: int, second: int) -> None:
        """Sections ``first`` and ``second`` share an anchor: they go together."""
        lo = min(self.spans[first][0], self.spans[second][0])
        hi = max(self.spans[first][1], self.spans[second][1])
        for number in range(lo, hi + 1):
            self.spans[number] = (lo, hi)

    def hull(self, lo: int, hi: int) -> tuple[int, int]:
        """The sections from ``lo`` to ``hi`` and every section an anchor joins them to."""
        while True:
            new_lo = min(self.spans[n][0] for n in range(lo, hi + 1))
            new_hi = max(self.spans[n][1] for n in range(lo, hi + 1))
            if (new_lo, new_hi) == (lo, hi):
                return lo, hi
            lo, hi = new_lo, new_hi


def _scan(text: str, origin: str) -> _Scan | None:
    """The file read by the C parser, or ``None`` when it must take the whole round trip.

    That is when the C parser is missing or reads it differently (an error ruamel
    reports better), and for shapes a section cannot stand for: directives, several
    documents, a top level that is not a block mapping of plain keys starting
    lines at column 0, a merge key at the top level, line breaks other than
    ``\\n`` and ``\\r\\n``.
    """
    if text in _SCANS:
        return _SCANS[text]
    try:
        scan = _read_sections(text)
    except ConfigError:
        raise
    except Exception:  # any doubt: the round trip decides, and reports
        scan = None
    while len(_SCANS) >= _SCANS_KEPT:
        del _SCANS[next(iter(_SCANS))]
    _SCANS[text] = scan
    if scan is not None:
        too_many = alias_bomb(scan.data, len(text))
        if too_many:
            raise ConfigError(too_many, origin=origin)
    return scan


def clear_cache() -> None:
    """Forget the large files read so far (a bench measures a fresh process)."""
    _SCANS.clear()


def _fast_yaml() -> YAML | None:
    from ruamel.yaml.main import CParser  # type: ignore[attr-defined]

    if CParser is None:
        return None
    yaml = YAML(typ="safe", pure=False)
    # Tags ruamel keeps as they are: their values, as the round trip reads them.
    yaml.constructor.add_constructor(None, _construct_tagged)
    yaml.constructor.add_constructor("tag:yaml.org,2002:omap", _construct_omap)
    for tag in ("set", "pairs"):
        yaml.constructor.add_constructor(f"tag:yaml.org,2002:{tag}", _refuse)
    return yaml


def _construct_tagged(constructor: Any, node: Any) -> object:
    from ruamel.yaml.nodes import MappingNode, SequenceNode

    if isinstance(node, MappingNode):
        return constructor.construct_mapping(node, deep=True)
    if isinstance(node, SequenceNode):
        return constructor.construct_sequence(node, deep=True)
    return str(constructor.construct_scalar(node))


def _construct_omap(constructor: Any, node: Any) -> object:
    steps = constructor.construct_yaml_omap(node)
    omap = next(steps)
    for _ in steps:  # the second step fills it
        pass
    return dict(omap)


def _refuse(constructor: Any, node: Any) -> object:
    """A tag the round trip reads its own way (``!!set`` as text): it decides."""
    raise ValueError(f"{node.tag} is read by the round trip")


def _read_sections(text: str) -> _Scan | None:
    from ruamel.yaml.events import (
        AliasEvent,
        CollectionEndEvent,
        CollectionStartEvent,
        DocumentStartEvent,
        MappingEndEvent,
        MappingStartEvent,
        NodeEvent,
        ScalarEvent,
    )

    yaml = _fast_yaml()
    if yaml is None or _NOT_LINE_BREAKS.search(text):
        return None
    lines: list[int] = []
    anchors: dict[str, int] = {}
    flows: list[tuple[int, int] | None] = []  # per open collection: (its line, section)
    anchored_to: list[tuple[int, int]] = []
    candidates: set[int] = set()
    documents = depth = 0
    at_key = False
    for event in yaml.parse(text):
        if isinstance(event, DocumentStartEvent):
            documents += 1
            if documents > 1 or getattr(event, "version", None) or getattr(event, "tags", None):
                return None
            continue
        if not isinstance(event, NodeEvent | CollectionEndEvent):
            continue
        section = len(lines) - 1
        if isinstance(event, NodeEvent) and depth == 1:
            at_key = not at_key
            if at_key:
                mark = event.start_mark
                if (
                    not isinstance(event, ScalarEvent)
                    or event.anchor is not None
                    or event.tag is not None
                    or mark.column != 0
                    or event.value == "<<"
                    or (lines and mark.line <= lines[-1])
                ):
                    return None
                lines.append(mark.line)
                continue
        if isinstance(event, AliasEvent):
            if event.anchor not in anchors:
                return None
            anchored_to.append((anchors[event.anchor], section))
        elif isinstance(event, NodeEvent) and event.anchor is not None:
            anchors[event.anchor] = section
        if isinstance(event, CollectionStartEvent):
            if depth == 0:
                if not isinstance(event, MappingStartEvent) or event.flow_style:
                    return None
                if event.anchor is not None or event.tag is not None:
                    return None
            elif isinstance(event, MappingStartEvent) and event.anchor is not None:
                candidates.add(section)
            depth += 1
            flow = isinstance(event, MappingStartEvent) and event.flow_style
            flows.append((event.start_mark.line, section) if flow else None)
        elif isinstance(event, CollectionEndEvent):
            depth -= 1
            opened = flows.pop()
            if isinstance(event, MappingEndEvent) and opened and event.end_mark.line != opened[0]:
                candidates.add(opened[1])
    data = yaml.load(text)
    if not lines or not isinstance(data, dict) or len(data) != len(lines):
        return None
    scan = _Scan(text, data, [_key_text(key) for key in data], lines)
    if len(scan.index) != len(lines):
        return None
    for first, second in anchored_to:
        scan.join(first, second)
    scan.candidates = candidates
    return scan


class _Part:
    """Sections ``lo`` to ``hi`` of a large file as a round-trip document of their own."""

    def __init__(self, lo: int, hi: int, document: YamlDocument) -> None:
        self.lo, self.hi, self.document = lo, hi, document
        self.edits: list[tuple[int, KeyPath, object]] = []  # (order, path, value or MISSING)


class _SectionedYamlDocument(YamlDocument):
    """A large YAML file read by the C parser and edited a top-level section at a time.

    Values come from the C parser's reading; what needs ruamel's nodes (anchors,
    merge keys, layout) and every edit goes through a :class:`_Part`, the round
    trip of only the sections concerned.
    """

    _scan: _Scan

    def __init__(self, text: str, origin: str, *, indent_from: str | None = None) -> None:
        BaseDocument.__init__(self, text, origin)
        self._bom = _BOM if text.startswith(_BOM) else ""
        self._text = text[len(self._bom) :]
        self._parts: list[_Part] = []
        self._edits = 0

    # parts ------------------------------------------------------------------------

    def _part(self, lo: int, hi: int) -> _Part:
        """The round-trip document of sections ``lo`` to ``hi`` (and those joined to them).

        Parts that overlap it are merged into it: their edits are made again, in
        the order they were made, on the document of the larger range.
        """
        scan = self._scan
        while True:
            lo, hi = scan.hull(lo, hi)
            overlapping = [part for part in self._parts if part.lo <= hi and lo <= part.hi]
            wider = (
                min([lo, *(p.lo for p in overlapping)]),
                max([hi, *(p.hi for p in overlapping)]),
            )
            if wider == (lo, hi):
                break
            lo, hi = wider
        if len(overlapping) == 1 and (overlapping[0].lo, overlapping[0].hi) == (lo, hi):
            return overlapping[0]
        text = "".join(scan.texts[lo : hi + 1])
        part = _Part(lo, hi, YamlDocument(text, self.origin, indent_from=self._text))
        for order, path, value in sorted(e for p in overlapping for e in p.edits):
            self._apply(part, order, path, value)
        self._parts = [p for p in self._parts if p not in overlapping] + [part]
        return part

    def _covering(self, section: int) -> _Part | None:
        return next((p for p in self._parts if p.lo <= section <= p.hi), None)

    def _section(self, key: str) -> int | None:
        return self._scan.index.get(key)

    def _part_of(self, key: str) -> _Part | None:
        """The part that holds top-level ``key``: a new key goes after the last section."""
        section = self._section(key)
        if section is None:
            return self._covering(len(self._scan.keys) - 1)
        return self._part(section, section)

    @staticmethod
    def _apply(part: _Part, order: int, path: KeyPath, value: object) -> None:
        part.edits.append((order, path, value))
        if value is MISSING:
            part.document._remove(path)
        else:
            part.document._replace(path, value)
        part.document._dirty = True

    # reading ----------------------------------------------------------------------

    def _root(self) -> dict[str, object]:
        root: dict[str, object] = {}
        scan = self._scan
        for section, key in enumerate(scan.keys):
            part = self._covering(section)
            if part is None:
                root[key] = _plain(scan.data[scan.raw[section]])
            elif section == part.lo:
                root.update(part.document._root())
        last = self._covering(len(scan.keys) - 1)
        if last is not None:  # keys added after the last section
            root.update(last.document._root())
        return root

    def _lookup(self, path: KeyPath) -> object:
        section = self._section(path[0])
        part = self._covering(len(self._scan.keys) - 1 if section is None else section)
        if part is not None:
            return part.document._lookup(path)
        if section is None:
            return MISSING
        node: object = self._scan.data
        for segment in path:
            if not isinstance(node, dict):
                return MISSING
            found = [key for key in node if key == segment or _key_text(key) == segment]
            if segment in node:
                node = node[segment]
            elif found:
                node = node[found[0]]
            else:
                return MISSING
        return _plain(node)

    def inherited(self, path: KeyPath) -> bool:
        part = self._part_of(path[0]) if len(path) > 1 else None
        return part is not None and part.document.inherited(path)

    def shared_by(self, path: KeyPath) -> str | None:
        part = self._part_of(path[0]) if len(path) > 1 else None
        return None if part is None else part.document.shared_by(path)

    def kept_whole(self) -> dict[str, str]:
        sections = set(self._scan.candidates)
        for part in self._parts:
            sections.update(range(part.lo, part.hi + 1))
        parts = {id(part): part for part in map(lambda s: self._part(s, s), sorted(sections))}
        found: dict[str, str] = {}
        for part in parts.values():
            found.update(part.document.kept_whole())
        return found

    # writing ----------------------------------------------------------------------

    def _edit(self, path: KeyPath, value: object) -> None:
        section = self._section(path[0])
        last = len(self._scan.keys) - 1
        if section is None:
            lo = hi = last
        elif value is MISSING and len(path) == 1:
            # A deleted key's trailing comments go to the key before it.
            lo, hi = (section - 1, section) if section > 0 else (0, min(1, last))
        else:
            lo = hi = section
        self._edits += 1
        self._apply(self._part(lo, hi), self._edits, path, value)

    def _replace(self, path: KeyPath, value: object) -> None:
        self._edit(path, value)

    def _remove(self, path: KeyPath) -> None:
        self._edit(path, MISSING)

    def _render(self) -> str:
        scan = self._scan
        out = [self._bom, scan.head]
        section = 0
        while section < len(scan.keys):
            part = self._covering(section)
            if part is None:
                out.append(scan.texts[section])
                section += 1
                continue
            text = part.document.to_text()
            if part.hi < len(scan.keys) - 1 and not text.endswith("\n"):
                text += "\r\n" if scan.texts[part.hi].endswith("\r\n") else "\n"
            out.append(text)
            section = part.hi + 1
        return "".join(out)
