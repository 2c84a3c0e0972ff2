"""Profile files -> validated, content-addressed resources.

Every error names the file, the resource id (or its position when the id
itself is missing) and the field, and nothing is changed anywhere.

Parsing and validating ten thousand resources costs far more than observing
them, so the validated form of a profile is cached beside the state, keyed by
the file's stat like the stat cache (and distrusted while racy). Content is
never cached here: sources are re-addressed on every load through the stat
cache, so an edited source is always seen.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson

from trueup import __version__, kinds
from trueup.canonical import digest, sha256_hex
from trueup.declare.declared import Profile
from trueup.declare.files import read_document
from trueup.errors import UsageError
from trueup.fs import ReadOnlyFS
from trueup.kinds.base import Kind
from trueup.model import Resource
from trueup.paths import TargetError, find_overlaps, normalise_target
from trueup.plan.planner import topological_order
from trueup.private import make_folders, write_file
from trueup.sources import SourceBounds, source_path
from trueup.statcache import racy, stat_key

if TYPE_CHECKING:
    from pydantic import BaseModel, ValidationError

# 2: only profiles past every check; 3: an undeclared `executable` is absent, not false;
# 4: [profile] has allow_sources_outside; 5: resources keep their groups; 6: orjson's
# bytes only, read back by orjson (which would read an integer beyond 64 bits as a float)
CACHE_FORMAT = f"trueup-profile-cache/{__version__}/6"
Entry = dict[str, Any]


def load_profile(path: Path, fs: ReadOnlyFS, cache_dir: Path | None = None) -> Profile:
    """Parse, validate and content-address a profile file."""
    path = Path(os.path.abspath(path))
    where = str(path)
    try:
        st = os.stat(path)
    except FileNotFoundError:
        raise UsageError(f"{where}: no such file") from None
    cache = _cache_file(cache_dir, path)
    validated = _read_cache(cache, st)
    fresh = validated is None
    if validated is None:
        validated = _validate(read_document(path), where)
    meta, entries = validated["profile"], validated["resources"]
    base = path.parent
    bounds = SourceBounds(base, meta["allow_sources_outside"])
    resources = tuple(_resolve(entry, base, fs, where, bounds) for entry in entries)
    if fresh:
        _check_whole(resources, where)
        # Only a profile that passed every check is remembered as valid: a
        # cache hit skips them all. One spelling out a secret value is not
        # remembered at all: the cache would be one more copy of the value.
        if not any(kinds.get(e["kind"]).secret_literal(e["fields"]) for e in entries):
            _write_cache(cache, st, validated)
    body = {"profile": meta, "resources": [r.to_json() for r in resources]}
    return Profile(meta["id"], meta["name"], path, resources, digest(body))


# -- validation (on a cache miss) ------------------------------------------
#: The fields every resource has (declare/models.py CommonFields); the rest are its kind's.
COMMON = frozenset({"id", "kind", "target", "policy", "depends_on", "groups", "verify"})


def _validate(data: dict[str, Any], where: str) -> dict[str, Any]:
    unknown = sorted(set(data) - {"profile", "resource"})
    if unknown:
        raise UsageError(f"{where}: unknown top-level section(s): {', '.join(unknown)}")
    raw_resources = data.get("resource", [])
    if not isinstance(raw_resources, list):
        raise UsageError(f"{where}: 'resource' must be a list of tables ([[resource]])")
    meta, entries = _with_pydantic(data, raw_resources, where)
    _check_groups(meta, entries, where)
    return {"profile": meta, "resources": entries}


def _check_groups(meta: dict[str, Any], entries: list[Entry], where: str) -> None:
    """A resource's groups are among the profile's: a typo would hide it from every follower."""
    declared = set(meta["groups"])
    for entry in entries:
        unknown = [group for group in entry["groups"] if group not in declared]
        if unknown:
            raise UsageError(
                f"{where}: resource {entry['id']!r}: field 'groups': {unknown[0]!r} is not "
                "declared in [profile] groups",
                hint=f"add it: [profile] groups = {sorted(declared | {unknown[0]})!r}".replace(
                    "'", '"'
                ),
            )


def _with_pydantic(
    data: dict[str, Any], raws: list[Any], where: str
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    from pydantic import ValidationError

    from trueup.declare.models import ProfileMeta

    if not isinstance(data.get("profile"), dict):
        raise UsageError(
            f"{where}: a profile starts with a [profile] table naming it",
            hint='add: [profile] with id = "..." and name = "..."',
        )
    try:
        meta = ProfileMeta.model_validate(data.get("profile"))
    except ValidationError as exc:
        raise UsageError(f"{where}: [profile] {_first(exc)}") from None
    entries = _all_at_once(raws)
    if entries is None:  # something is wrong: find the first problem, entry by entry
        entries = [_entry(raw, index, where) for index, raw in enumerate(raws)]
    return meta.model_dump(), entries


def _checked(common: dict[str, Any], kind: Kind, fields: dict[str, Any] | None) -> Entry | None:
    """The cached form of a resource whose policy and target are valid too, else ``None``."""
    policy = common["policy"] or kind.default_policy
    if fields is None or policy not in kind.policies:
        return None
    try:
        target = normalise_target(common["target"])
    except TargetError:
        return None
    return _assemble(common, policy, target, fields)


def _all_at_once(raws: list[Any]) -> list[dict[str, Any]] | None:
    """Every entry validated with one pydantic call per model; ``None`` if any is invalid.

    One call per resource pays pydantic's call overhead ten thousand times on
    a big profile; a list per model pays it once. Errors are never
    reported from here: ``_entry`` finds and words the first one.
    """
    from pydantic import TypeAdapter, ValidationError

    from trueup.declare.models import CommonFields

    if not all(isinstance(raw, Mapping) for raw in raws):
        return None
    try:
        commons = TypeAdapter(list[CommonFields]).validate_python(
            [{k: v for k, v in raw.items() if k in COMMON} for raw in raws]
        )
    except ValidationError:
        return None
    by_kind: dict[str, list[int]] = {}
    for index, common in enumerate(commons):
        by_kind.setdefault(common.kind, []).append(index)
    fields: list[Any] = [None] * len(raws)
    for name, indexes in by_kind.items():
        if name not in kinds.REGISTRY:
            return None
        model = kinds.get(name).declaration_model()
        try:
            valid: list[BaseModel] = TypeAdapter(list[model]).validate_python(  # type: ignore[valid-type]
                [{k: v for k, v in raws[i].items() if k not in COMMON} for i in indexes]
            )
        except ValidationError:
            return None
        for index, value in zip(indexes, valid, strict=True):
            fields[index] = value.model_dump(exclude_none=True)
    entries = []
    for common, own in zip(commons, fields, strict=True):
        entry = _checked(common.model_dump(), kinds.get(common.kind), own)
        if entry is None:
            return None
        entries.append(entry)
    return entries


def _entry(raw: Any, index: int, where: str) -> dict[str, Any]:
    from pydantic import ValidationError

    from trueup.declare.models import CommonFields

    label = f"resource #{index + 1}"
    if not isinstance(raw, Mapping):
        raise UsageError(f"{where}: {label} must be a table")
    if isinstance(raw.get("id"), str):
        label = f"resource {raw['id']!r}"
    try:
        common = CommonFields.model_validate({k: v for k, v in raw.items() if k in COMMON})
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
    except ValidationError as exc:
        raise UsageError(f"{where}: {label}: {_first(exc)}") from None
    return _assemble(common.model_dump(), policy, target, fields.model_dump(exclude_none=True))


def _assemble(common: dict[str, Any], policy: str, target: str, fields: Entry) -> Entry:
    """The cached, JSON-able form of one validated resource."""
    return {
        "id": common["id"],
        "kind": common["kind"],
        "policy": policy,
        "target": target,
        "depends_on": common["depends_on"],
        "groups": common["groups"],
        "verify": common["verify"],
        "fields": fields,
    }


def _first(exc: ValidationError) -> str:
    """The first validation problem as 'field X: message'."""
    error = exc.errors()[0]
    loc = ".".join(str(part) for part in error["loc"])
    message = error["msg"].removeprefix("Value error, ")
    return f"field {loc!r}: {message}" if loc else message


# -- resolution (every load) ------------------------------------------------
def _resolve(
    entry: dict[str, Any], base: Path, fs: ReadOnlyFS, where: str, bounds: SourceBounds
) -> Resource:
    """A resource, its sources read; checked on every load, the cached ones too: a
    folder on the way to a source may have become a link since."""
    kind = kinds.get(entry["kind"])
    declared = entry["fields"].get("source")
    try:
        if isinstance(declared, str):
            bounds.check(declared, source_path(base, declared))
        resource = Resource(
            id=entry["id"],
            kind=entry["kind"],
            policy=entry["policy"],
            target=entry["target"],
            spec=kind.resolve(dict(entry["fields"]), entry["policy"], base, fs),
            depends_on=tuple(entry["depends_on"]),
            verify=entry["verify"],
        )
        if resource.verify is not None:
            _check_method(kind, resource)
        kind.check(resource)
        bounds.check_links(declared, kind.source_links(resource.spec))
    except UsageError as exc:
        raise UsageError(
            f"{where}: resource {entry['id']!r}: {exc.message}", hint=exc.hint
        ) from None
    except ValueError as exc:
        raise UsageError(f"{where}: resource {entry['id']!r}: {exc}") from None
    return resource


def _check_method(kind: Kind, resource: Resource) -> None:
    """A verification method must fit the kind (and ``symlink``, a declared link)."""
    method = resource.verify.get("method") if resource.verify is not None else None
    if method is None:
        return
    if method not in kind.verify_methods:
        raise UsageError(
            f"field 'verify.method': {method!r} does not fit a {kind.name}; "
            f"expected one of {', '.join(kind.verify_methods)}"
        )
    if method == "symlink" and resource.spec.get("link") is None:
        raise UsageError("field 'verify.method': 'symlink' verifies a declared link; add link")


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


# -- the validated-profile cache ---------------------------------------------
def _cache_file(cache_dir: Path | None, path: Path) -> Path | None:
    if cache_dir is None:
        return None
    return cache_dir / f"{sha256_hex(str(path).encode())[:32]}.json"


def _read_cache(cache: Path | None, st: os.stat_result) -> dict[str, Any] | None:
    if cache is None:
        return None
    try:
        # Written by storage_json: orjson reads its own bytes back several times faster.
        document = orjson.loads(cache.read_bytes())
    except (OSError, ValueError):
        return None
    if document.get("format") != CACHE_FORMAT or document.get("stat") != list(stat_key(st)):
        return None
    if racy(st.st_mtime_ns, st.st_ctime_ns, document.get("recorded_ns", 0)):
        return None
    validated: dict[str, Any] = document["validated"]
    return validated


def _write_cache(cache: Path | None, st: os.stat_result, validated: dict[str, Any]) -> None:
    """Best effort: a cache that cannot be written only costs the next run time."""
    if cache is None:
        return
    import time

    document = {
        "format": CACHE_FORMAT,
        "stat": list(stat_key(st)),
        "recorded_ns": time.time_ns(),
        "validated": validated,
    }
    try:
        # Not storage_json: its fallback for what orjson refuses (an integer beyond 64
        # bits) would not read back as written; such a profile is not remembered.
        data = orjson.dumps(document)
    except TypeError:
        return
    try:
        make_folders(cache.parent)
        tmp = cache.with_name(f".{cache.name}.{os.getpid()}")
        write_file(tmp, data)  # 0600: it holds the profile's every value
        os.replace(tmp, cache)
    except OSError:
        pass
