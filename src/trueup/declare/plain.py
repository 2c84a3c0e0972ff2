"""Validation without pydantic, for declarations that are plainly valid.

Importing pydantic and building its models costs ~0.16 s, more than planning
a small profile, and every edit of a profile pays it again. Most profiles
hold values of exactly the declared types (TOML, JSON and YAML give str,
bool, int, list and dict), so these checks accept those and return exactly
what the pydantic models would dump; anything else (a missing field, a
coercible value, a typo) returns ``None`` and pydantic decides and words the
error. A property test keeps the two in agreement: whatever is accepted here
is accepted by pydantic with the same result.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._:-]*$"
_ID = re.compile(ID_PATTERN)

# field -> (check, default when absent); a field without a default is required.
Shape = Mapping[str, tuple[Callable[[Any], bool], Any]]
REQUIRED = object()


def is_str(value: Any) -> bool:
    return type(value) is str


def is_id(value: Any) -> bool:
    return type(value) is str and _ID.fullmatch(value) is not None  # `$` would let "id\n" through


def is_name(value: Any) -> bool:
    return type(value) is str and len(value) > 0


def is_optional_str(value: Any) -> bool:
    return value is None or type(value) is str


def is_str_list(value: Any) -> bool:
    return type(value) is list and all(type(item) is str for item in value)


def is_bool(value: Any) -> bool:
    return type(value) is bool


def is_optional_bool(value: Any) -> bool:
    return value is None or type(value) is bool


def checked(raw: Any, shape: Shape) -> dict[str, Any] | None:
    """``raw`` with defaults filled in, if every field is known and plainly valid."""
    if not isinstance(raw, Mapping) or not raw.keys() <= shape.keys():
        return None
    out: dict[str, Any] = {}
    get = raw.get
    for name, (check, default) in shape.items():
        value = get(name, REQUIRED)  # no declaration holds that object
        if value is REQUIRED:
            if default is REQUIRED:
                return None
            value = default
        elif not check(value):
            return None
        out[name] = list(value) if type(value) is list else value
    return out


def is_folder_list(value: Any) -> bool:
    """Folder paths: text that a file name can be (not empty, no NUL)."""
    return type(value) is list and all(
        type(item) is str and item != "" and "\0" not in item for item in value
    )


META: Shape = {
    "id": (is_id, REQUIRED),
    "name": (is_name, REQUIRED),
    "description": (is_optional_str, None),
    "groups": (is_str_list, []),
    "allow_sources_outside": (is_folder_list, []),
}


def verify(raw: Any) -> dict[str, Any] | None:
    """The ``verify`` table: a non-empty command and a positive timeout."""
    found = checked(
        raw,
        {
            "command": (lambda v: is_str_list(v) and len(v) > 0, REQUIRED),
            "timeout": (lambda v: type(v) is int and v > 0, 600),
        },
    )
    return found


def _is_verify(value: Any) -> bool:
    return value is None or verify(value) is not None


COMMON: Shape = {
    "id": (is_id, REQUIRED),
    "kind": (is_str, REQUIRED),
    "target": (is_str, REQUIRED),
    "policy": (is_optional_str, None),
    "depends_on": (is_str_list, []),
    "groups": (is_str_list, []),
    "verify": (_is_verify, None),
}


def common(raw: Mapping[str, Any]) -> dict[str, Any] | None:
    """The common fields of a resource, as ``CommonFields.model_dump()`` gives them."""
    found = checked({k: v for k, v in raw.items() if k in COMMON}, COMMON)
    if found is not None and found["verify"] is not None:
        found["verify"] = verify(found["verify"])
    return found
