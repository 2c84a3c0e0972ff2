"""A small imitation of Laravel's validator, worded the way Coolify answers.

Coolify validates bodies with Laravel rules and rejects fields it does not
know ("This field is not allowed."), returning 422 ``{"message":
"Validation failed.", "errors": {field: [messages]}}``. Clients must send
exactly the documented fields, so the fake enforces the same.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from trueup.testing._util import FakeHTTPError

_MISSING = object()


def _attr(field: str) -> str:
    return field.replace("_", " ")


def _check(field: str, value: Any, spec: str) -> str | None:
    """First failing rule's message for one field, or None."""
    rules = spec.split("|")
    name = _attr(field)
    blank = value is _MISSING or value is None or (isinstance(value, str) and not value.strip())
    if "required" in rules and blank:
        return f"The {name} field is required."
    if value is _MISSING or (value is None and "nullable" in rules):
        return None
    for rule in rules:
        kind, _, arg = rule.partition(":")
        if kind == "string" and not isinstance(value, str):
            return f"The {name} field must be a string."
        if kind == "boolean" and value not in (True, False, 0, 1, "0", "1"):
            return f"The {name} field must be true or false."
        if kind == "numeric" and (
            isinstance(value, bool)
            or not isinstance(value, int | float | str)
            or not _numeric(value)
        ):
            return f"The {name} field must be a number."
        if kind == "array" and not isinstance(value, list | dict):
            return f"The {name} field must be an array."
        if kind == "max" and isinstance(value, str) and len(value) > int(arg):
            return f"The {name} field must not be greater than {arg} characters."
        if kind == "regex" and (not isinstance(value, str) or not re.fullmatch(arg, value)):
            return f"The {name} field format is invalid."
        if kind == "in" and value not in arg.split(","):
            return f"The selected {name} is invalid."
    return None


def _numeric(value: int | float | str) -> bool:
    try:
        float(value)
    except ValueError:
        return False
    return True


def validation_errors(
    body: Mapping[str, Any],
    rules: Mapping[str, str],
    allowed: Iterable[str] | None = None,
) -> dict[str, list[str]]:
    """All messages, by field; unknown fields get "This field is not allowed."."""
    errors: dict[str, list[str]] = {}
    for field, spec in rules.items():
        message = _check(field, body.get(field, _MISSING), spec)
        if message:
            errors.setdefault(field, []).append(message)
    if allowed is not None:
        known = set(allowed)
        for field in body:
            if field not in known:
                errors.setdefault(field, []).append("This field is not allowed.")
    return errors


def validate(
    body: Mapping[str, Any],
    rules: Mapping[str, str],
    allowed: Iterable[str] | None = None,
) -> None:
    """Raise Coolify's 422 if anything fails."""
    errors = validation_errors(body, rules, allowed)
    if errors:
        raise FakeHTTPError(422, {"message": "Validation failed.", "errors": errors})


def require_json_object(ok: bool, body: Any, *, allow_empty: bool = False) -> dict[str, Any]:
    """Coolify's ``validateIncomingRequest``: JSON, valid, and not empty."""
    if not ok:
        raise FakeHTTPError(400, {"message": "Invalid request.", "error": "Invalid JSON."})
    if body is None or body == {}:
        if allow_empty:
            return {}
        raise FakeHTTPError(400, {"message": "Invalid request.", "error": "Empty JSON."})
    if not isinstance(body, dict):
        raise FakeHTTPError(400, {"message": "Invalid request.", "error": "Invalid JSON."})
    return body
