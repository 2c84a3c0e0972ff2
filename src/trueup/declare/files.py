"""Reading a declaration file in any accepted format into plain data."""

from __future__ import annotations

import json
import stat
from pathlib import Path
from typing import Any

from trueup.errors import UsageError

#: Far more than 10,000 resources take (about 1.5 MB as JSON).
MAX_DECLARATION_BYTES = 64 * 1024 * 1024
#: Levels of tables and lists in a declaration: a config key's value nested some
#: dozens deep still fits, and every recursive walk of it stays far from the stack's end.
MAX_NESTING = 100


def declaration_bytes(path: Path) -> bytes:
    """A declaration file's bytes; only a regular file of a sane size is read."""
    try:
        st = path.stat()
        if stat.S_ISDIR(st.st_mode):
            raise IsADirectoryError
        if not stat.S_ISREG(st.st_mode):  # a pipe would be read until written to, forever
            raise UsageError(f"{path}: is a pipe, socket or device, not a declaration file")
        if st.st_size > MAX_DECLARATION_BYTES:
            raise UsageError(
                f"{path}: is {st.st_size} bytes, over the {MAX_DECLARATION_BYTES} a "
                "declaration file may be"
            )
        return path.read_bytes()
    except FileNotFoundError:
        raise UsageError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise UsageError(f"{path}: is a directory, not a declaration file") from None


def read_document(path: Path) -> dict[str, Any]:
    """TOML is the documented format; JSON and YAML carry the same model."""
    raw = declaration_bytes(path)
    suffix = path.suffix.lower()
    tried = {".json": "JSON", ".yaml": "YAML", ".yml": "YAML"}.get(suffix, "TOML")
    too_many = None
    try:
        if suffix == ".json":
            data = _load_json(raw)
        elif suffix in (".yaml", ".yml"):
            from ruamel.yaml import YAML

            from trueup.kinds.formats.yaml import alias_bomb

            data = YAML(typ="safe", pure=True).load(raw)
            too_many = alias_bomb(data, len(raw))
        else:  # an editor's byte-order mark is no statement (tomllib refuses it)
            import tomllib  # only for TOML: a cached profile is read without it

            data = tomllib.loads(raw.decode("utf-8").removeprefix("\ufeff"))
    except (ValueError, UnicodeDecodeError) as exc:
        raise UsageError(f"{path}: not valid {tried}: {exc}") from None
    except RecursionError:  # brackets or tables nested past what a parser can follow
        raise _too_deep(path, tried) from None
    except Exception as exc:  # ruamel's errors share no useful base class
        raise UsageError(f"{path}: not valid {tried}: {_one_line(exc)}") from None
    if too_many:
        raise UsageError(f"{path}: {too_many}")
    if _deeper_than(data, MAX_NESTING):
        raise _too_deep(path, tried)
    if not isinstance(data, dict):
        raise UsageError(f"{path}: the top level must be a table/object")
    if b"\\ud" in raw.lower():  # JSON and YAML escapes can spell half a surrogate pair
        try:
            json.dumps(data, ensure_ascii=False).encode("utf-8")
        except UnicodeEncodeError as exc:
            bad = exc.object[exc.start : exc.end].encode("unicode_escape").decode()
            raise UsageError(
                f"{path}: holds {bad}, half of a surrogate pair, which is not text",
                hint="write the character itself, or its full pair of escapes",
            ) from None
    return data


def _too_deep(path: Path, tried: str) -> UsageError:
    return UsageError(
        f"{path}: not valid {tried} for trueup: values are nested more than "
        f"{MAX_NESTING} levels deep",
        hint="no declaration needs that many; flatten the nested tables or lists",
    )


def _deeper_than(data: Any, limit: int) -> bool:
    """Whether tables and lists nest more than ``limit`` levels (counted without recursion).

    Everything after loading (validation, canonical JSON, digests) walks values
    recursively: a document nested a few hundred levels deep would end it in a
    RecursionError instead of an error naming the file.
    """
    level: list[tuple[Any, int]] = [(data, 1)]
    while level:
        value, depth = level.pop()
        if depth > limit:
            return True
        if isinstance(value, dict):
            level.extend((child, depth + 1) for child in value.values())
        elif isinstance(value, list):
            level.extend((child, depth + 1) for child in value)
    return False


class _Repeated(dict[str, Any]):
    """A JSON object that gave ``key`` more than once (json keeps the last silently)."""

    key: str


def _load_json(raw: bytes) -> Any:
    """JSON that refuses a key given twice in one object, as TOML and YAML do.

    Otherwise the last value silently wins, and a declaration means something
    other than what its reader sees. Objects are only checked as they are
    built; where the repeated key is (a path like ``resource[0]``) is looked
    for only once one was found.
    """
    repeated = False

    def unique(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        nonlocal repeated
        found = dict(pairs)
        if len(found) == len(pairs):
            return found
        marked, seen = _Repeated(found), set[str]()
        for key, _ in pairs:
            if key in seen:
                marked.key = key
                break
            seen.add(key)
        repeated = True
        return marked

    data = json.loads(raw, object_pairs_hook=unique)
    if repeated:
        where, key = _first_repeated(data, "")
        raise ValueError(f"key {key!r} is given twice in {where or 'the top-level object'}")
    return data


def _first_repeated(value: Any, where: str) -> tuple[str, str]:
    """The path to the first object (in document order) with a repeated key, and the key."""
    if isinstance(value, _Repeated):
        return where, value.key
    if isinstance(value, dict):
        children = [(f"{where}.{k}" if where else k, v) for k, v in value.items()]
    elif isinstance(value, list):
        children = [(f"{where}[{i}]", v) for i, v in enumerate(value)]
    else:
        return where, ""
    for inner, child in children:
        found = _first_repeated(child, inner)
        if found[1]:
            return found
    return where, ""


def _one_line(exc: Exception) -> str:
    """ruamel's own words on one line: the problem and where, without its excerpt."""
    problem = getattr(exc, "problem", None)
    mark = getattr(exc, "problem_mark", None)
    if problem and mark is not None:
        return f"{problem} (at line {mark.line + 1}, column {mark.column + 1})"
    return " ".join(str(exc).split())
