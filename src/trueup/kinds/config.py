"""The config kind: declared keys inside a TOML, JSON or YAML file.

merge sets the declared dotted keys and keeps every other key, comment and
byte of formatting; keys listed as the follower's overlay are never touched,
and a key the profile dropped is removed only if trueup set it and it still
holds what trueup wrote. replace makes the file exactly the declared keys
(plus the overlay).
"""

from __future__ import annotations

import math
import reprlib
from collections.abc import Iterable, Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import replace
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from trueup.errors import ConflictError, UsageError
from trueup.fs import ReadOnlyFS
from trueup.kinds import config_edit, config_link
from trueup.kinds.base import ApplyContext, Decision, Kind, ObserveContext, Touched
from trueup.kinds.config_keys import config_format, keys_digest, load_config, spelt
from trueup.kinds.config_plan import plan_keys
from trueup.kinds.formats import (
    MAX_KEY_DEPTH,
    MISSING,
    ConfigError,
    KeyPathError,
    check_key_paths,
    parse_key_path,
    paths_overlap,
)
from trueup.model import ABSENT, Action, ActionType, Applied, Evidence, Observed, Resource
from trueup.redact import any_looks_secret, looks_secret
from trueup.sealing import holds_literal, holds_reference, sealed_leaves, sealed_strings

if TYPE_CHECKING:
    from pydantic import BaseModel


@cache
def config_fields() -> type[BaseModel]:
    """Built on first use: a warm no-op plan never imports pydantic."""
    from pydantic import BaseModel, ConfigDict, Field, field_validator

    def checked(paths: Iterable[str]) -> None:
        try:
            check_key_paths(paths)
        except KeyPathError as exc:
            raise ValueError(str(exc)) from None

    class ConfigFields(BaseModel):
        model_config = ConfigDict(extra="forbid", strict=True)

        format: Literal["toml", "json", "yaml"] | None = None
        keys: dict[str, Any] = Field(min_length=1)
        overlay: list[str] = Field(default_factory=list)
        secret: bool | list[str] | None = Field(
            default=None,
            description="true: every declared value is secret; a list: those keys' values",
        )
        follow_links: list[str] = Field(
            default_factory=list,
            description="folders a symlink at the target may lead into (a dotfiles "
            "manager's); the file it leads to is edited, the link stays",
        )

        @field_validator("follow_links")
        @classmethod
        def _folders(cls, folders: list[str]) -> list[str]:
            for folder in folders:
                if not folder or "\0" in folder:
                    raise ValueError("a folder is a non-empty path without NUL characters")
                if folder.strip("/") == "":
                    raise ValueError("name the folder links lead into (a dotfiles folder), not /")
            return folders

        @field_validator("keys", "overlay")
        @classmethod
        def _paths(cls, paths: Any) -> Any:
            checked(paths)
            return paths

        @field_validator("keys")
        @classmethod
        def _values(cls, keys: dict[str, Any]) -> dict[str, Any]:
            odd = [k for k, v in keys.items() if not plain_value(v)]
            if odd:
                raise ValueError(
                    f"the value of {odd[0]!r} must be a string, a finite number, a boolean, "
                    "a list or a table (write dates and times as strings)"
                )
            return keys

    return ConfigFields


def _storable(resource: Resource, fmt: str) -> None:
    """Refuse a declared value the file's format cannot hold (TOML: 64-bit integers, no null)."""
    if fmt != "toml":
        return
    for key, value in resource.spec["keys"].items():
        leaves = _leaves(value)
        if any(type(v) is int and not -(2**63) <= v < 2**63 for v in leaves):
            raise UsageError(
                f"field 'keys': key {key!r}: TOML integers are 64-bit; this value does not fit",
                hint="declare it as a string, or as a float if that is what the tool reads",
            )
        if any(v is None for v in leaves):
            raise UsageError(
                f"field 'keys': key {key!r}: TOML has no null value",
                hint="leave the key out, or declare the value the tool expects",
            )


def _shallow(resource: Resource) -> None:
    """Refuse a key whose value nests it past ``MAX_KEY_DEPTH`` levels in the file.

    Each format library recurses once per level, in trueup and in the tools that
    read the file: far past this, writing or reading the file back would crash.
    """
    for key, value in resource.spec["keys"].items():
        if _nests_deeper(value, MAX_KEY_DEPTH - len(parse_key_path(key))):
            raise UsageError(
                f"field 'keys': key {reprlib.repr(key)}: its value nests it more than "
                f"{MAX_KEY_DEPTH} levels deep in the file",
                hint="declare a flatter value, or the deeper keys as key paths of their own",
            )


def _nests_deeper(value: object, room: int) -> bool:
    """Whether a table or list inside ``value`` lies more than ``room`` levels down."""
    items = value.values() if isinstance(value, dict) else value if isinstance(value, list) else ()
    if not items:
        return False
    return room <= 0 or any(_nests_deeper(item, room - 1) for item in items)


def _leaves(value: object) -> list[object]:
    if isinstance(value, list):
        return [leaf for item in value for leaf in _leaves(item)]
    if isinstance(value, dict):
        return [leaf for item in value.values() for leaf in _leaves(item)]
    return [value]


def plain_value(value: object) -> bool:
    """Whether a key's value is one every format spells the same way.

    TOML and YAML also read dates and times, which JSON cannot hold and the
    formats do not agree on: a declaration writes them as strings instead.
    """
    if value is None or type(value) in (str, int, bool):
        return True
    if type(value) is float:
        return math.isfinite(value)
    if type(value) is list:
        return all(plain_value(item) for item in value)
    if type(value) is dict:
        return all(type(k) is str and plain_value(v) for k, v in value.items())
    return False


_PLAIN = frozenset({str, int, bool, type(None)})


def _spellable(value: Any) -> Any:
    """``value`` with each NaN or infinity in it replaced by a stand-in JSON can spell.

    A plan's identity covers what it observed, and canonical JSON has no
    spelling for them: one in a key the profile does not declare would block
    the whole profile. A declared key holding one is still refused, by name.
    The NUL keeps the stand-in from reading as a value anybody would declare.
    """
    if isinstance(value, float) and not math.isfinite(value):
        return f"\x00{value!r}"
    if isinstance(value, dict):
        # A string, an integer or a boolean is spelt as it is: no call for each.
        return {k: v if type(v) in _PLAIN else _spellable(v) for k, v in value.items()}
    if isinstance(value, list):
        return [v if type(v) in _PLAIN else _spellable(v) for v in value]
    return value


class ConfigKind(Kind):
    #: A config file holds no other targets (plan/restructure.py's PathKind).
    holds_paths = False
    name = "config"
    policies = ("merge", "replace")

    def declaration_model(self) -> type[BaseModel]:
        return config_fields()

    def resolve(
        self, fields: dict[str, Any], policy: str, base_dir: Path, fs: ReadOnlyFS
    ) -> dict[str, Any]:
        keys, secret = _sealed_keys(fields)
        spec = {
            "format": fields.get("format"),
            "keys": dict(sorted(keys.items())),
            "overlay": sorted(fields.get("overlay", [])),
            "digest": keys_digest(keys),
        }
        if secret:
            spec["secret"] = secret
        if fields.get("follow_links"):  # only when declared: older specs stay as they were
            spec["follow_links"] = sorted(set(fields["follow_links"]))
        return spec

    def secret_literal(self, fields: Mapping[str, Any]) -> bool:
        marked = fields.get("secret")
        return any(
            holds_literal(value, _marked_secret(key, marked))
            for key, value in fields["keys"].items()
        )

    def check(self, resource: Resource) -> None:
        _storable(resource, config_format(resource))
        _shallow(resource)

    # -- observe ------------------------------------------------------------
    def observe(self, resource: Resource, ctx: ObserveContext) -> Observed:
        path = ctx.path_str(resource.target)
        entry = ctx.fs.entry(path)
        if entry is None:
            return ABSENT
        linked = None
        if entry.state == "symlink":  # a dotfiles manager's link: edited through if allowed
            found = config_link.follow(resource, ctx, path, entry.link or "")
            if isinstance(found, str):
                return Observed("symlink", None, {"reason": found})
            linked, path = found, found["path"]
            entry = ctx.fs.entry(path)
            if entry is None:
                reason = f"{resource.target} is a symlink to {path}, which does not exist"
                return Observed("symlink", None, {"reason": reason, "linked": linked})
        if entry.state != "file":
            return Observed(entry.state, None, {"linked": linked} if linked else {})
        try:
            text = ctx.fs.read_bytes(path).decode("utf-8")
            doc = load_config(resource, text)
            # Walks every level: a file nested too deeply fails here, once.
            flat = _live_sealed(_spellable(doc.keys_flat()), resource.spec.get("secret", ()))
        except ConfigError as exc:
            return Observed("unverifiable", None, {"reason": str(exc)})
        except UnicodeDecodeError as exc:
            reason = (
                f"{resource.target} is not UTF-8 text (byte 0x{exc.object[exc.start]:02x} "
                f"at offset {exc.start}), so trueup cannot edit it"
            )
            return Observed("unverifiable", None, {"reason": reason})
        except RecursionError:
            reason = f"{resource.target} is nested too deeply for trueup to read"
            return Observed("unverifiable", None, {"reason": reason})
        declared = {}
        shared = {}
        inherited: list[str] = []  # found through a YAML merge key, not written here
        for key in resource.spec["keys"]:
            key_path = parse_key_path(key)
            value = doc.get(key_path)
            if value is not MISSING:  # holding a NaN: refused, naming the resource
                declared[key] = sealed_strings(value, _secret_key(key, resource))
            anchor = doc.shared_by(key_path)
            if anchor is not None:
                shared[key] = anchor
            if value is not MISSING and doc.inherited(key_path):
                inherited.append(key)
        detail: dict[str, Any] = {"declared": declared, "flat": flat, "file_digest": entry.digest}
        if linked:  # where the link led: the plan's identity covers it
            detail["linked"] = linked
        if inherited:
            detail["inherited"] = inherited
        kept_whole = doc.kept_whole()
        if kept_whole:
            detail["kept_whole"] = kept_whole
        return Observed(
            "file", keys_digest(declared), {**detail, "shared": shared} if shared else detail
        )

    # -- plan (config_plan.py) ----------------------------------------------
    def plan(
        self,
        resource: Resource | None,
        observed: Observed,
        applied: Applied | None,
        force: bool = False,
    ) -> Decision:
        decision = plan_keys(resource, observed, applied, force)
        linked = observed.detail.get("linked")
        if linked and decision.type.applies:  # apply edits there, and only there
            return replace(decision, payload={**decision.payload, "linked": linked})
        return decision

    # -- restructured trees (plan/restructure.py's PathKind) -----------------
    # A config file is edited in place, keys it does not own stay: its removal
    # never leaves its place empty, and it is never one entry of a tree.
    def written(self, applied: Applied) -> list[Any] | None:
        return None

    def inherit(
        self, resource: Resource, records: Sequence[tuple[Applied, list[Any] | None]]
    ) -> Applied | None:
        return None

    def left_empty(self, observed: Observed, removed: AbstractSet[str]) -> bool:
        return False

    def clears(self, applied: Applied, decision: Decision) -> bool:
        return False

    def overlaps(self, resource: Resource, other: Resource) -> list[str]:
        """The declared keys another profile declares too, or that nest with one of its."""
        theirs = other.spec.get("keys", {})
        return sorted(k for k in resource.spec["keys"] if any(paths_overlap(k, o) for o in theirs))

    def unrecorded(self, resource: Resource, observed: Observed) -> Decision | None:
        """Declared keys found as declared are recorded as the person's (``foreign``).

        As when another key needed writing: a later change to one of them is
        drift, not an update over it, and none ever becomes trueup's to remove.
        """
        return Decision(
            ActionType.VERIFY_ONLY,
            "up to date; the keys found as declared are watched for drift from now on",
            {"foreign": sorted(resource.spec["keys"])},
        )

    # -- execute (config_edit.py) --------------------------------------------
    def touches(self, action: Action, resource: Resource, ctx: ObserveContext) -> Touched:
        # Through a link: the file it leads to is what changes, and what a restore puts back.
        return Touched([config_link.edited_path(action, resource, ctx)])

    def apply(self, action: Action, resource: Resource, ctx: ApplyContext) -> None:
        config_edit.apply(action, resource, ctx, config_link.edited_path(action, resource, ctx))

    def verify(self, action: Action, resource: Resource, ctx: ObserveContext) -> Evidence:
        return config_edit.verify(action, resource, self.observe(resource, ctx))

    def record(self, action: Action, resource: Resource) -> Mapping[str, Any] | None:
        return config_edit.record(action, resource)

    def preview(self, action: Action, resource: Resource, ctx: ObserveContext) -> str:
        # Secret values, declared or live (a person's own token beside trueup's keys).
        # As the plan observed it (the same process, a moment ago): a large file is
        # parsed and flattened once, not again for its diff.
        observed = ctx.observed.get(resource.id) or self.observe(resource, ctx)
        live = observed.detail.get("flat", {})
        try:
            path = config_link.edited_path(None, resource, ctx)
        except ConflictError:  # a link trueup does not edit through: nothing to show
            return ""
        return config_edit.preview(action, resource, ctx, live, path)


def _marked_secret(key: str, marked: object) -> bool:
    """Whether a declared key's value is secret as a whole: by ``secret`` or by its name."""
    return marked is True or (isinstance(marked, list) and key in marked) or looks_secret(key)


def _sealed_keys(fields: Mapping[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """The declared keys with references resolved and secret values sealed, and the
    keys whose whole value is secret (their live values are sealed alike)."""
    marked = fields.get("secret")
    if isinstance(marked, list):
        unknown = sorted(set(marked) - set(fields["keys"]))
        if unknown:
            raise UsageError(f"field 'secret': {unknown[0]!r} is not one of the declared keys")
    keys: dict[str, Any] = {}
    secret: list[str] = []
    for key, value in fields["keys"].items():
        whole = _marked_secret(key, marked)
        try:
            keys[key] = sealed_leaves(value, whole)
        except UsageError as exc:
            raise UsageError(f"field 'keys': key {key!r}: {exc.message}", hint=exc.hint) from None
        if whole or holds_reference(value):
            secret.append(key)
    return keys, sorted(secret)


def _secret_key(key: str, resource: Resource) -> bool:
    return key in resource.spec.get("secret", ()) or looks_secret(key)


def _live_sealed(flat: dict[str, Any], secret: Iterable[str]) -> dict[str, Any]:
    """The file's values with every secret one sealed: under a declared secret key, or
    under a name that looks secret. Plans and output then hold only their digests."""
    spelt_secret = [spelt(k) for k in secret]
    under = tuple(s + "." for s in spelt_secret)
    # Only a key named like a secret, or under a declared secret key, can be sealed
    # whole: most files hold none, which one search over all their names tells.
    named = bool(spelt_secret) or any_looks_secret(flat)
    sealed = dict(flat)
    for k, v in flat.items():
        if named and (looks_secret(k) or k in spelt_secret or k.startswith(under)):
            sealed[k] = sealed_strings(v, True)
        elif type(v) not in _PLAIN and isinstance(v, dict | list):
            # A list of tables may name a secret inside. A plain value under a plain
            # name costs no call: a large file has hundreds of thousands of them.
            sealed[k] = sealed_strings(v, False)
    return sealed
