"""Profile files -> validated, content-addressed resources.

Every error names the file, the resource id (or its position when the id
itself is missing) and the field, and nothing is changed anywhere.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from trueup import kinds
from trueup.canonical import digest
from trueup.declare.files import read_document
from trueup.errors import UsageError
from trueup.fs import ReadOnlyFS
from trueup.model import Resource
from trueup.paths import TargetError, find_overlaps, normalise_target
from trueup.plan.planner import topological_order

ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._:-]*$"


class ProfileMeta(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: str = Field(pattern=ID_PATTERN)
    name: str = Field(min_length=1)
    description: str | None = None
    groups: list[str] = Field(default_factory=list)


class VerifyFields(BaseModel):
    """Extra verification after a change: a command that must exit 0 (cwd: the root)."""

    model_config = ConfigDict(extra="forbid")

    command: list[str] = Field(min_length=1)
    timeout: int = Field(default=600, gt=0)


class CommonFields(BaseModel):
    """The fields every resource has, whatever its kind."""

    model_config = ConfigDict(extra="forbid")

    id: str = Field(pattern=ID_PATTERN)
    kind: str
    target: str
    policy: str | None = None
    depends_on: list[str] = Field(default_factory=list)
    groups: list[str] = Field(default_factory=list)
    verify: VerifyFields | None = None


COMMON = frozenset(CommonFields.model_fields)


@dataclass(frozen=True)
class Profile:
    id: str
    name: str
    path: Path
    resources: tuple[Resource, ...]
    digest: str


def load_profile(path: Path, fs: ReadOnlyFS) -> Profile:
    """Parse, validate and content-address a profile file."""
    path = path.resolve()
    data = read_document(path)
    where = str(path)
    unknown = sorted(set(data) - {"profile", "resource"})
    if unknown:
        raise UsageError(f"{where}: unknown top-level section(s): {', '.join(unknown)}")
    try:
        meta = ProfileMeta.model_validate(data.get("profile"))
    except ValidationError as exc:
        raise UsageError(f"{where}: [profile] {_first(exc)}") from None
    raw_resources = data.get("resource", [])
    if not isinstance(raw_resources, list):
        raise UsageError(f"{where}: 'resource' must be a list of tables ([[resource]])")
    resources = tuple(
        _resource(raw, index, path.parent, fs, where) for index, raw in enumerate(raw_resources)
    )
    _check_whole(resources, where)
    body = {"profile": meta.model_dump(), "resources": [r.to_json() for r in resources]}
    return Profile(meta.id, meta.name, path, resources, digest(body))


def _resource(raw: Any, index: int, base: Path, fs: ReadOnlyFS, where: str) -> Resource:
    label = f"resource #{index + 1}"
    if not isinstance(raw, Mapping):
        raise UsageError(f"{where}: {label} must be a table")
    if isinstance(raw.get("id"), str):
        label = f"resource {raw['id']!r}"
    common_raw = {k: v for k, v in raw.items() if k in COMMON}
    try:
        common = CommonFields.model_validate(common_raw)
    except ValidationError as exc:
        raise UsageError(f"{where}: {label}: {_first(exc)}") from None
    if common.kind not in kinds.REGISTRY:
        raise UsageError(
            f"{where}: {label}: field 'kind': unknown kind {common.kind!r}; "
            f"expected one of {', '.join(kinds.names())}"
        )
    kind = kinds.get(common.kind)
    policy = common.policy or kind.default_policy
    if policy not in kind.policies:
        raise UsageError(
            f"{where}: {label}: field 'policy': {policy!r} is not a {common.kind} policy; "
            f"expected one of {', '.join(kind.policies)}"
        )
    try:
        target = normalise_target(common.target)
    except TargetError as exc:
        raise UsageError(f"{where}: {label}: field 'target': {exc}") from None
    try:
        fields = kind.declaration_model().model_validate(
            {k: v for k, v in raw.items() if k not in COMMON}
        )
        spec = kind.resolve(fields.model_dump(exclude_none=True), policy, base, fs)
    except ValidationError as exc:
        raise UsageError(f"{where}: {label}: {_first(exc)}") from None
    except UsageError as exc:
        raise UsageError(f"{where}: {label}: {exc.message}", hint=exc.hint) from None
    except ValueError as exc:
        raise UsageError(f"{where}: {label}: {exc}") from None
    return Resource(
        id=common.id,
        kind=common.kind,
        policy=policy,
        target=target,
        spec=spec,
        depends_on=tuple(common.depends_on),
        verify=common.verify.model_dump() if common.verify else None,
    )


def _check_whole(resources: tuple[Resource, ...], where: str) -> None:
    seen: set[str] = set()
    for resource in resources:
        if resource.id in seen:
            raise UsageError(f"{where}: resource {resource.id!r} is declared twice")
        seen.add(resource.id)
    clashes = find_overlaps((r.id, r.target) for r in resources)
    if clashes:
        a, b = clashes[0]
        raise UsageError(f"{where}: resources {a!r} and {b!r} have overlapping targets")
    try:
        topological_order(resources)
    except UsageError as exc:
        raise UsageError(f"{where}: {exc.message}") from None


def _first(exc: ValidationError) -> str:
    """The first validation problem as 'field X: message'."""
    error = exc.errors()[0]
    loc = ".".join(str(part) for part in error["loc"])
    message = error["msg"].removeprefix("Value error, ")
    return f"field {loc!r}: {message}" if loc else message
