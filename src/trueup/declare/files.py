"""Reading a declaration file in any accepted format into plain data."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path
from typing import Any

from trueup.errors import UsageError


def read_document(path: Path) -> dict[str, Any]:
    """TOML is the documented format; JSON and YAML carry the same model."""
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise UsageError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise UsageError(f"{path}: is a directory, not a declaration file") from None
    suffix = path.suffix.lower()
    try:
        if suffix == ".json":
            data = json.loads(raw)
        elif suffix in (".yaml", ".yml"):
            from ruamel.yaml import YAML

            data = YAML(typ="safe", pure=True).load(raw)
        else:
            data = tomllib.loads(raw.decode("utf-8"))
    except (ValueError, UnicodeDecodeError) as exc:
        raise UsageError(f"{path}: not valid {suffix.lstrip('.') or 'toml'}: {exc}") from None
    except Exception as exc:  # ruamel's errors share no useful base class
        raise UsageError(f"{path}: not valid YAML: {_one_line(exc)}") from None
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


def _one_line(exc: Exception) -> str:
    """ruamel's own words on one line: the problem and where, without its excerpt."""
    problem = getattr(exc, "problem", None)
    mark = getattr(exc, "problem_mark", None)
    if problem and mark is not None:
        return f"{problem} (at line {mark.line + 1}, column {mark.column + 1})"
    return " ".join(str(exc).split())
