"""The config kind: declared keys inside a TOML, JSON or YAML file.

merge sets the declared dotted keys and keeps every other key, comment and
byte of formatting; keys listed as the follower's overlay are never touched,
and a key the profile dropped is removed only if trueup set it and it still
holds what trueup wrote. replace makes the file exactly the declared keys
(plus the overlay).
"""

from __future__ import annotations

import itertools
import math
import reprlib
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import replace
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from trueup.canonical import digest
from trueup.errors import UsageError
from trueup.fs import ReadOnlyFS, sha256_bytes
from trueup.kinds.base import (
    BY_HAND,
    ApplyContext,
    Decision,
    Kind,
    ObserveContext,
    evidence_of,
    obstacle,
)
from trueup.kinds.content import text_diff
from trueup.kinds.formats import (
    MAX_KEY_DEPTH,
    MISSING,
    ConfigDocument,
    ConfigError,
    KeyPathError,
    UnsupportedValueError,
    canonical_value,
    check_key_paths,
    flatten,
    format_for_path,
    format_key_path,
    load,
    parse_key_path,
    paths_overlap,
    same_value,
)
from trueup.model import ABSENT, Action, ActionType, Applied, Evidence, Observed, Resource
from trueup.redact import looks_secret
from trueup.sealing import (
    holds_literal,
    holds_reference,
    holds_sealed,
    mask,
    opened,
    sealed_leaves,
    sealed_strings,
    unsealed_leaves,
)

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


def _blocked_keys(
    declared: Mapping[str, Any], flat: Mapping[str, Any], going: set[str]
) -> list[tuple[str, str]]:
    """Declared keys that would go inside a live value that is not a table (nor ``going``)."""
    blocked = []
    for key in sorted(declared):
        path = parse_key_path(key)
        for depth in range(1, len(path)):
            holder = format_key_path(path[:depth])
            if holder in flat and holder not in going and not isinstance(flat[holder], Mapping):
                blocked.append((key, holder))
                break
    return blocked


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
        return {k: _spellable(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_spellable(v) for v in value]
    return value


def value_digest(value: object) -> str:
    return digest(canonical_value(value))


def keys_digest(values: Mapping[str, object]) -> str:
    return digest({k: canonical_value(v) for k, v in values.items()})


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
        return spec

    def secret_literal(self, fields: Mapping[str, Any]) -> bool:
        marked = fields.get("secret")
        return any(
            holds_literal(value, _marked_secret(key, marked))
            for key, value in fields["keys"].items()
        )

    def check(self, resource: Resource) -> None:
        _storable(resource, self._format(resource))
        _shallow(resource)

    @staticmethod
    def _format(resource: Resource) -> str:
        fmt = resource.spec.get("format") or format_for_path(resource.target)
        if fmt is None:
            raise UsageError(
                f"field 'target': cannot tell the format of {resource.target} from its name",
                hint='declare format = "toml", "json" or "yaml" for it',
            )
        return str(fmt)

    def _load(self, resource: Resource, text: str) -> Any:
        return load(self._format(resource), text, origin=resource.target)

    # -- observe ------------------------------------------------------------
    def observe(self, resource: Resource, ctx: ObserveContext) -> Observed:
        path = ctx.path(resource.target)
        entry = ctx.fs.entry(path)
        if entry is None:
            return ABSENT
        if entry.state != "file":
            return Observed(entry.state)
        try:
            text = ctx.fs.read_bytes(path).decode("utf-8")
            doc = self._load(resource, text)
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
        if inherited:
            detail["inherited"] = inherited
        kept_whole = doc.kept_whole()
        if kept_whole:
            detail["kept_whole"] = kept_whole
        return Observed(
            "file", keys_digest(declared), {**detail, "shared": shared} if shared else detail
        )

    # -- plan ---------------------------------------------------------------
    def plan(
        self,
        resource: Resource | None,
        observed: Observed,
        applied: Applied | None,
        force: bool = False,
    ) -> Decision:
        if observed.state not in ("absent", "file"):
            reason = obstacle(observed)
            # Nothing can be merged into it, --overwrite included: a person fixes it.
            return _drift(reason, observed, applied, resource, by_hand=True)
        flat: Mapping[str, Any] = observed.detail.get("flat", {})
        declared: Mapping[str, Any] = resource.spec["keys"] if resource else {}
        recorded, applied = applied, _split_wholes(applied, declared, flat)
        owned: Mapping[str, str] = applied.detail.get("keys", {}) if applied else {}
        overlay = set(resource.spec["overlay"]) if resource else set()
        clash = sorted(k for k in declared if any(paths_overlap(k, o) for o in overlay))
        if clash:
            return Decision(
                ActionType.HUMAN_ACTION,
                f"local overlay conflicts with canonical keys: {', '.join(clash)}; "
                "drop them from overlay or from keys",
            )
        shared: Mapping[str, str] = observed.detail.get("shared", {})
        live: Mapping[str, Any] = observed.detail.get("declared", {})
        aliased = sorted(
            k for k in shared if k in declared and not (k in live and _same(live[k], declared[k]))
        )
        if aliased:
            return Decision(
                ActionType.HUMAN_ACTION,
                f"cannot set {aliased[0]}: it is inside the YAML anchor {shared[aliased[0]]}, "
                "which other keys share; edit the file by hand",
            )
        # Declared keys that were already as declared before trueup: never trueup's to
        # remove, though a change to them is drift like any declared key's.
        was_foreign = set(applied.detail.get("foreign", ())) if applied else set()
        # A key moved into the overlay (or under an overlay table) is the machine's
        # now; one inside a key declared whole is that key's value.
        dropped = [
            k
            for k in owned
            if k not in declared
            and k not in was_foreign
            and not any(paths_overlap(k, o) for o in overlay)
            and not any(_inside(k, d) for d in declared)
        ]
        unset = sorted(k for k in dropped if _owned_value(flat, k, owned[k]))
        kept = sorted(set(dropped) - set(unset))
        # A key a person had before trueup set it stays when it is dropped: theirs
        # before, theirs again. (Only its name is recorded: its value may be a secret.)
        before = set(applied.detail.get("before", ())) if applied else set()
        kept += sorted(k for k in unset if k in before)
        unset = [k for k in unset if k not in before]
        blocked_edit = _kept_whole(observed, "remove", unset)
        if blocked_edit is not None:
            return blocked_edit
        # A value trueup set and no longer declares makes way for the table now declared.
        blocked = _blocked_keys(declared, flat, {_spelt(k) for k in unset})
        if blocked:
            key, holder = blocked[0]
            return Decision(
                ActionType.HUMAN_ACTION,
                f"cannot set {key}: {holder} holds a value, not a table, in the file; "
                "change it by hand or declare other keys",
            )
        modified = sorted(
            k
            for k in declared
            if k in live
            and k in owned
            and value_digest(live[k]) != owned[k]
            and value_digest(live[k]) != value_digest(declared[k])
        )
        if modified and not force:
            return _drift(
                f"key(s) changed locally since trueup set them: {', '.join(modified)}",
                observed,
                applied,
                resource,
            )
        changes = {k: v for k, v in declared.items() if k not in live or not _same(live[k], v)}
        blocked_edit = _kept_whole(observed, "set", changes)
        if blocked_edit is not None:
            return blocked_edit
        inherited = set(observed.detail.get("inherited", ()))
        took = {
            k
            for k in changes
            if k in live
            and k not in inherited
            and (k not in owned or k in was_foreign)
            # what trueup set there under another spelling is not a person's
            and not any(_inside(o, k) or _inside(k, o) for o in owned if o not in was_foreign)
        }
        kept_before = sorted((took | before) & set(declared))
        # A table declared whole whose keys trueup set one by one stays trueup's.
        found = {
            k
            for k in declared
            if k not in owned
            and k in live
            and k not in changes
            and not any(_inside(o, k) for o in owned if o not in was_foreign)
        }
        foreign = sorted((was_foreign | found) & set(declared) - set(changes))
        replace = resource is not None and resource.policy == "replace"
        extra = sorted(_extra_keys(flat, declared, overlay)) if replace else []
        theirs = _replaced_keys(flat, changes, owned)
        if not changes and not unset and not extra:
            if resource is None:
                left = (
                    f": left {', '.join(kept)} as they are (changed since, or there before "
                    "trueup), the person's from now on"
                    if kept
                    else ""
                )
                return Decision(
                    ActionType.REMOVE_RESOURCE, f"forget (no keys left to remove){left}"
                )
            released = sorted(
                k for k in set(owned) - set(declared) if not any(_inside(k, d) for d in declared)
            )
            if released:  # the record must stop calling them trueup's
                return Decision(
                    ActionType.VERIFY_ONLY,
                    f"up to date; no longer trueup's: {', '.join(released)}",
                    {"foreign": foreign} if foreign else {},
                )
            if applied is not recorded:  # the record must name the keys as now declared
                return Decision(
                    ActionType.VERIFY_ONLY,
                    "up to date; the keys are recorded as now declared",
                    _made(flat, {}, [], declared, applied, absent=False),
                )
            return Decision(ActionType.NO_OP, "up to date")
        payload: dict[str, Any] = {
            "set": changes,
            "unset": unset,
            # What trueup had set there: a YAML merge key (<<) may still show a value.
            "unset_was": {k: owned[k] for k in unset},
            "replace": replace,
            **_made(flat, changes, unset, declared, applied, observed.state == "absent"),
        }
        if foreign:
            payload["foreign"] = foreign
        if kept_before:
            payload["before"] = kept_before
        # The file as it was before trueup first wrote in it, by its digest (see _edit).
        original = (
            applied.detail.get("original", applied.detail.get("open_end"))
            if applied
            else observed.detail.get("file_digest")
        )
        if original:
            payload["original"] = original
        if resource is None:
            note = (
                f"; left key(s) {', '.join(kept)} (changed since, or there before trueup)"
                if kept
                else ""
            )
            return Decision(
                ActionType.REMOVE_RESOURCE,
                f"remove {len(unset)} key(s) no longer declared{note}",
                payload,
            )
        parts = [f"set {len(changes)}"] if changes else []
        parts += [f"remove {len(unset) + len(extra)}"] if unset or extra else []
        drops = f", which drops {', '.join(theirs)} (a declared key is set whole)" if theirs else ""
        # replace writes the file anew: a person's file trueup never wrote in loses its
        # comments and layout too, even when no key of theirs goes.
        rewrites = replace and recorded is None and observed.state == "file"
        if rewrites:
            drops += "; rewrites the existing file, which trueup never wrote in, whole"
        return Decision(
            ActionType.WRITE_CONFIG,
            f"{', '.join(parts)} key(s){drops}",
            payload,
            # Keys trueup never set are data it cannot give back.
            destroys=bool(extra or theirs or rewrites),
        )

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

    # -- execute ------------------------------------------------------------
    def _new_text(self, action: Action, resource: Resource, fs: ReadOnlyFS, path: Path) -> str:
        try:
            return self._edit(action, resource, fs, path)
        except (KeyPathError, UnsupportedValueError) as exc:
            raise UsageError(
                f"resource {resource.id!r}: cannot edit {resource.target}: {exc}"
            ) from None

    def _edit(self, action: Action, resource: Resource, fs: ReadOnlyFS, path: Path) -> str:
        entry = fs.entry(path)
        there = (
            entry is not None and entry.state == "file"
        )  # "blocked": a file trueup removes first
        current = fs.read_bytes(path).decode("utf-8") if there else ""
        doc = self._load(resource, current)
        payload = action.payload
        if payload.get("replace"):
            fresh = self._load(resource, "")
            for key in resource.spec["overlay"]:
                value = doc.get(parse_key_path(key))
                if value is not MISSING:
                    fresh.set(parse_key_path(key), value)
            for key, value in resource.spec["keys"].items():
                fresh.set(parse_key_path(key), unsealed_leaves(value))
            return str(fresh.to_text())
        for key in payload.get("unset", []):
            doc.delete(parse_key_path(key))
        for table in payload.get("prune", []):
            # Table by table, deepest first: a person who wrote in one table trueup
            # made owns that one (and so its parents), not every table pruned with it.
            kept = str(doc.to_text())
            doc.delete(parse_key_path(table))
            if _loses_a_comment(kept, str(doc.to_text())):
                doc = self._load(resource, kept)
        for key, value in payload.get("set", {}).items():
            # The one place a sealed secret is opened: written into the file.
            doc.set(parse_key_path(key), unsealed_leaves(value))
        text = str(doc.to_text())
        original = payload.get("original")
        if original is True and action.type is ActionType.REMOVE_RESOURCE:
            # Recorded by an older trueup: the file had no final newline before trueup's
            # first key, so none again.
            text = text.removesuffix("\r\n" if text.endswith("\r\n") else "\n")
        gap = "\r\n\r\n" if "\r\n" in current else "\n\n"
        if text.endswith(gap) and not current.endswith(gap):
            # A deleted or replaced last table leaves the blank line that set it apart;
            # but the blank lines a kept block scalar (YAML ``|+``) ends with are its value.
            trimmed = text.rstrip("\r\n") + ("\r\n" if "\r\n" in current else "\n")
            if same_value(self._load(resource, trimmed).keys_flat(), doc.keys_flat()):
                text = trimmed
        if isinstance(original, str):
            return self._as_it_was(resource, text, original, doc) or text
        return text

    def _as_it_was(
        self, resource: Resource, text: str, original: str, doc: ConfigDocument
    ) -> str | None:
        """``text`` give or take one blank line or its final newline, when that is the file
        exactly as it was before trueup first wrote in it (``original``, its digest).

        Once trueup's keys are gone, the spacing it put around them (a blank line
        before a table, a final newline) goes too, and the file is given back
        byte for byte; a file changed in any other way since is left as edited.
        """
        if len(text) > _AS_IT_WAS_MAX or sha256_bytes(text.encode("utf-8")) == original:
            return None
        newline = "\r\n" if "\r\n" in text else "\n"
        for candidate in itertools.chain(_one_line_apart(text, newline), _respelt_empty(text)):
            if sha256_bytes(candidate.encode("utf-8")) == original and same_value(
                self._load(resource, candidate).keys_flat(), doc.keys_flat()
            ):
                return candidate
        return None

    def _outcome(
        self, action: Action, resource: Resource, fs: ReadOnlyFS, path: Path
    ) -> str | None:
        """The file's new text, or ``None`` when it goes: trueup made it and nothing is left."""
        text = self._new_text(action, resource, fs, path)
        dropped = action.type is ActionType.REMOVE_RESOURCE and action.payload.get("file_made")
        return None if dropped and text.strip() in ("", "{}") else text

    def apply(self, action: Action, resource: Resource, ctx: ApplyContext) -> None:
        path = ctx.path(resource.target)
        entry = ctx.fs.entry(path)
        text = self._outcome(action, resource, ctx.fs, path)
        if text is None:
            ctx.writer.remove(path)
        elif entry is None and holds_sealed(resource.spec["keys"]):
            # A file trueup makes to hold a secret is readable by its owner only.
            ctx.writer.write(path, text.encode("utf-8"), mode=0o600)
        else:
            ctx.writer.write(path, text.encode("utf-8"), bool(entry and entry.executable))

    def verify(self, action: Action, resource: Resource, ctx: ObserveContext) -> Evidence:
        observed = self.observe(resource, ctx)
        flat = observed.detail.get("flat", {})
        was = action.payload.get("unset_was", {})
        lingering = [
            k
            for k in action.payload.get("unset", [])
            if _spelt(k) in flat and (k not in was or value_digest(flat[_spelt(k)]) == was[k])
        ]
        if lingering:
            return Evidence("failed", "keys", observed.digest, message=f"{lingering[0]} still set")
        if action.type is ActionType.REMOVE_RESOURCE:
            return Evidence("passed", "keys", observed.digest)
        return evidence_of(observed, resource.spec["digest"], "keys")

    def record(self, action: Action, resource: Resource) -> Mapping[str, Any] | None:
        if action.type is ActionType.REMOVE_RESOURCE:
            return None
        detail: dict[str, Any] = {
            "keys": {k: value_digest(v) for k, v in resource.spec["keys"].items()}
        }
        for key in ("tables", "foreign", "before", "original"):
            if action.payload.get(key):
                detail[key] = action.payload[key]
        if action.payload.get("file_made"):
            detail["file_made"] = True
        return detail

    def preview(self, action: Action, resource: Resource, ctx: ObserveContext) -> str:
        path = ctx.path(resource.target)
        entry = ctx.fs.entry(path)
        old = ctx.fs.read_bytes(path) if entry is not None and entry.state == "file" else None
        text = self._outcome(action, resource, ctx.fs, path)
        diff = text_diff(old, None if text is None else text.encode("utf-8"), resource.target)
        # Secret values, declared or live (a person's own token beside trueup's keys).
        live = self.observe(resource, ctx).detail.get("flat", {})
        return mask(diff, opened([resource.spec["keys"], live]))


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
    spelt = [_spelt(k) for k in secret]
    return {
        k: sealed_strings(v, looks_secret(k) or any(k == s or k.startswith(s + ".") for s in spelt))
        for k, v in flat.items()
    }


def _made(
    flat: Mapping[str, Any],
    changes: Mapping[str, Any],
    unset: list[str],
    declared: Mapping[str, Any],
    applied: Applied | None,
    absent: bool,
) -> dict[str, Any]:
    """What trueup brought into the file, so dropping its keys can take it away again.

    ``tables``: tables trueup created to hold its keys (none of them was there);
    ``prune``: those this write leaves empty, deepest first, which go too;
    ``file_made``: trueup created the file, so it goes once nothing is left in it.
    """
    recorded = applied.detail if applied else {}
    made = set(recorded.get("tables", []))
    gone = {_spelt(k) for k in unset}
    for key in changes:
        parts = parse_key_path(key)
        for depth in range(1, len(parts)):
            table = format_key_path(parts[:depth])
            # A value of trueup's that goes to make room for it leaves the table trueup's.
            if not _holds(flat.keys() - {table} if table in gone else flat, table):
                made.add(table)
    left = {k for k in flat if k not in gone} | {_spelt(k) for k in declared}
    prune = sorted(
        (table for table in made if not _holds(left, table)),
        key=lambda table: (-len(parse_key_path(table)), table),
    )
    found: dict[str, Any] = {}
    if made - set(prune):
        found["tables"] = sorted(made - set(prune))
    if prune and unset:
        found["prune"] = prune
    if recorded.get("file_made") or (absent and applied is None):
        found["file_made"] = True
    return found


def _holds(keys: Iterable[str], table: str) -> bool:
    """Whether any of the dotted ``keys`` is ``table`` or lies inside it."""
    inside = table + "."
    return any(k == table or k.startswith(inside) for k in keys)


def _loses_a_comment(before: str, after: str) -> bool:
    """Whether ``after`` lacks a comment line ``before`` has (TOML and YAML: ``#``).

    Counted, not just looked up: the same note written in two tables is two
    comments, and dropping the table holding one of them still loses a comment.
    """
    remaining = Counter(after.splitlines())
    comments = Counter(line for line in before.splitlines() if line.lstrip().startswith("#"))
    return any(remaining[line] < count for line, count in comments.items())


def _kept_whole(observed: Observed, verb: str, keys: Iterable[str]) -> Decision | None:
    """A person's step: a key to ``verb`` inside a mapping an edit would change beyond
    that key (``ConfigDocument.kept_whole``)."""
    whole: Mapping[str, str] = observed.detail.get("kept_whole", {})
    for key in sorted(keys):
        why = next((whole[place] for place in whole if _inside(key, place)), None)
        if why is not None:
            return Decision(
                ActionType.HUMAN_ACTION, f"cannot {verb} {key}: {why}; edit the file by hand"
            )
    return None


#: Larger files are not searched for their former spacing (see ConfigKind._as_it_was).
_AS_IT_WAS_MAX = 256 * 1024


def _one_line_apart(text: str, newline: str) -> Iterator[str]:
    """``text`` with one blank line more or less somewhere, or its final newline toggled."""
    yield text.removesuffix(newline) if text.endswith(newline) else text + newline
    at = text.find(newline)
    while at != -1:
        after = at + len(newline)
        yield text[:after] + newline + text[after:]
        if text.startswith(newline, after):
            yield text[:after] + text[after + len(newline) :]
        at = text.find(newline, after)


#: Empty tables and lists a file may spell with a space inside (``{ }``); at most this
#: many are tried both ways (ConfigKind._as_it_was).
_EMPTY_SPELLINGS = {"{}": "{ }", "[]": "[ ]"}
_RESPELT_MAX = 3


def _respelt_empty(text: str) -> Iterator[str]:
    """``text`` with some of its empty tables and lists spelt with a space inside:
    a table that held only trueup's keys is written back empty as ``{}``, where the
    person may have spelt it ``{ }``."""
    spots = sorted((at, empty) for empty in _EMPTY_SPELLINGS for at in _occurrences(text, empty))
    if not spots or len(spots) > _RESPELT_MAX:
        return
    for chosen in range(1, 1 << len(spots)):
        pieces, last = [], 0
        for bit, (at, empty) in enumerate(spots):
            if chosen >> bit & 1:
                pieces += [text[last:at], _EMPTY_SPELLINGS[empty]]
                last = at + len(empty)
        yield "".join(pieces) + text[last:]


def _occurrences(text: str, part: str) -> Iterator[int]:
    at = text.find(part)
    while at != -1:
        yield at
        at = text.find(part, at + len(part))


def _inside(key: str, declared: str) -> bool:
    """Whether ``key`` lies within the value of the declared key ``declared``."""
    return _spelt(key).startswith(_spelt(declared) + ".")


def _replaced_keys(
    flat: Mapping[str, Any], changes: Mapping[str, Any], owned: Mapping[str, str]
) -> list[str]:
    """Live keys trueup never set that a declared value replaces, so they are lost.

    A declared key is set whole: a table keeps only the keys it declares, and a
    plain value or a list takes the place of a whole live table. A live list of
    tables (a TOML array of tables) is the person's tables too, not one value.
    """
    gone = []
    for key, value in changes.items():
        kept = set(flatten(value, parse_key_path(key))) if isinstance(value, Mapping) else set()
        spelt = _spelt(key)
        gone += [
            k
            for k in flat
            if (k.startswith(spelt + ".") or (k == spelt and _holds_tables(flat[k])))
            and k not in kept
            and not any(k == o or _inside(k, o) for o in owned)
        ]
    return sorted(gone)


def _holds_tables(value: object) -> bool:
    """Whether a live value is a list of tables (a TOML array of tables, say)."""
    return isinstance(value, list) and any(isinstance(item, Mapping) for item in value)


def _same(live: object, declared: object) -> bool:
    return value_digest(live) == value_digest(declared)


def _spelt(key: str) -> str:
    """A declared key path as ``keys_flat`` spells it (quotes only where needed)."""
    return format_key_path(parse_key_path(key))


def _owned_value(flat: Mapping[str, Any], declared_key: str, owned_digest: str) -> bool:
    """Whether the key is present and still holds the value trueup wrote."""
    value = _live_value(flat, _spelt(declared_key))
    return value is not MISSING and value_digest(value) == owned_digest


def _live_value(flat: Mapping[str, Any], key: str) -> Any:
    """The live value of the spelt ``key``: a leaf, or the table its nested leaves make."""
    if key in flat:
        return flat[key]
    nested = {k[len(key) + 1 :]: v for k, v in flat.items() if k.startswith(key + ".")}
    return _unflatten(nested) if nested else MISSING


def _split_wholes(
    applied: Applied | None, declared: Mapping[str, Any], flat: Mapping[str, Any]
) -> Applied | None:
    """The record as it would read had the keys now declared inside a table been declared so.

    A table trueup set whole (``tool = { x = 1 }``) and declared later by its
    keys (``"tool.x" = 1``) is trueup's as before, key by key: otherwise the
    whole table counts as dropped, removing it takes the declared keys with it,
    and every apply fails its verification. Only a table that still holds what
    trueup wrote is split; one a person changed stays as recorded, and is kept.
    """
    owned: Mapping[str, str] = applied.detail.get("keys", {}) if applied else {}
    wholes = [
        k
        for k in owned
        if any(_inside(d, k) for d in declared)
        and isinstance(_live_value(flat, _spelt(k)), Mapping)  # a plain value makes way
        and _owned_value(flat, k, owned[k])
    ]
    if applied is None or not wholes:
        return applied
    keys = {k: v for k, v in owned.items() if k not in wholes}
    tables = set(applied.detail.get("tables", ()))
    for whole in wholes:
        split, made = _split(_spelt(whole), declared, flat)
        keys.update(split)
        tables |= made
    return replace(applied, detail={**applied.detail, "keys": keys, "tables": sorted(tables)})


def _split(
    table: str, declared: Mapping[str, Any], flat: Mapping[str, Any]
) -> tuple[dict[str, str], set[str]]:
    """The keys of a live ``table`` trueup set whole, as declared ones or whole subtables.

    Returns their value digests by key (spelt as declared where declared) and the
    tables trueup made along the way: ``table`` and the subtables it descends into.
    """
    keys: dict[str, str] = {}
    made = {table}
    depth = len(parse_key_path(table)) + 1
    children = {format_key_path(parse_key_path(k)[:depth]) for k in flat if _inside(k, table)}
    for child in sorted(children):
        name = next((d for d in declared if _spelt(d) == child), None)
        if name is None and any(_inside(d, child) for d in declared):
            inner, tables = _split(child, declared, flat)
            keys.update(inner)
            made |= tables
        else:
            keys[name or child] = value_digest(_live_value(flat, child))
    return keys, made


def _unflatten(flat: Mapping[str, Any]) -> dict[str, Any]:
    root: dict[str, Any] = {}
    for dotted, value in flat.items():
        node = root
        *parents, leaf = parse_key_path(dotted)
        for part in parents:
            node = node.setdefault(part, {})
        node[leaf] = value
    return root


def _extra_keys(
    flat: Mapping[str, Any], declared: Mapping[str, Any], overlay: set[str]
) -> set[str]:
    wanted = set(flatten(_unflatten(dict(declared)))) | set(declared)
    return {
        k
        for k in flat
        if k not in wanted and not any(k == o or k.startswith(o + ".") for o in overlay)
    }


def _drift(
    why: str,
    observed: Observed,
    applied: Applied | None,
    resource: Resource | None,
    by_hand: bool = False,
) -> Decision:
    return Decision(
        ActionType.DRIFT_CONFLICT,
        f"drift: {why}; left exactly as it is",
        BY_HAND if by_hand else {},
        drift={
            "observed": observed.digest,
            "applied": applied.digest if applied else None,
            "desired": resource.spec["digest"] if resource else None,
        },
    )
