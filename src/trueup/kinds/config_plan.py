"""Planning a config resource: which declared keys to set, which to remove, and
when a key is a person's to keep or to decide about (drift, a step by hand).

Pure: a function of the resource, what was observed and the applied record.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import replace
from typing import Any

from trueup.kinds.base import BY_HAND, Decision, obstacle
from trueup.kinds.config_keys import (
    holds,
    inside,
    live_value,
    owned_value,
    same,
    spelt,
    unflatten,
    value_digest,
)
from trueup.kinds.formats import flatten, format_key_path, parse_key_path, paths_overlap
from trueup.model import ActionType, Applied, Observed, Resource


def plan_keys(
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
        k for k in shared if k in declared and not (k in live and same(live[k], declared[k]))
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
        and not any(inside(k, d) for d in declared)
    ]
    unset = sorted(k for k in dropped if owned_value(flat, k, owned[k]))
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
    blocked = _blocked_keys(declared, flat, {spelt(k) for k in unset})
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
    changes = {k: v for k, v in declared.items() if k not in live or not same(live[k], v)}
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
        and not any(inside(o, k) or inside(k, o) for o in owned if o not in was_foreign)
    }
    kept_before = sorted((took | before) & set(declared))
    # A table declared whole whose keys trueup set one by one stays trueup's.
    found = {
        k
        for k in declared
        if k not in owned
        and k in live
        and k not in changes
        and not any(inside(o, k) for o in owned if o not in was_foreign)
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
            return Decision(ActionType.REMOVE_RESOURCE, f"forget (no keys left to remove){left}")
        released = sorted(
            k for k in set(owned) - set(declared) if not any(inside(k, d) for d in declared)
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
    # The file as it was before trueup first wrote in it, by its digest (see config_edit._edit).
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
    gone = {spelt(k) for k in unset}
    for key in changes:
        parts = parse_key_path(key)
        for depth in range(1, len(parts)):
            table = format_key_path(parts[:depth])
            # A value of trueup's that goes to make room for it leaves the table trueup's.
            if not holds(flat.keys() - {table} if table in gone else flat, table):
                made.add(table)
    left = {k for k in flat if k not in gone} | {spelt(k) for k in declared}
    prune = sorted(
        (table for table in made if not holds(left, table)),
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


def _kept_whole(observed: Observed, verb: str, keys: Iterable[str]) -> Decision | None:
    """A person's step: a key to ``verb`` inside a mapping an edit would change beyond
    that key (``ConfigDocument.kept_whole``)."""
    whole: Mapping[str, str] = observed.detail.get("kept_whole", {})
    for key in sorted(keys):
        why = next((whole[place] for place in whole if inside(key, place)), None)
        if why is not None:
            return Decision(
                ActionType.HUMAN_ACTION, f"cannot {verb} {key}: {why}; edit the file by hand"
            )
    return None


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
        name = spelt(key)
        below = name + "."
        gone += [
            k
            for k in flat
            if (k.startswith(below) or (k == name and _holds_tables(flat[k])))
            and k not in kept
            and not any(k == o or inside(k, o) for o in owned)
        ]
    return sorted(gone)


def _holds_tables(value: object) -> bool:
    """Whether a live value is a list of tables (a TOML array of tables, say)."""
    return isinstance(value, list) and any(isinstance(item, Mapping) for item in value)


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
        if any(inside(d, k) for d in declared)
        and isinstance(live_value(flat, spelt(k)), Mapping)  # a plain value makes way
        and owned_value(flat, k, owned[k])
    ]
    if applied is None or not wholes:
        return applied
    keys = {k: v for k, v in owned.items() if k not in wholes}
    tables = set(applied.detail.get("tables", ()))
    for whole in wholes:
        split, made = _split(spelt(whole), declared, flat)
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
    children = {format_key_path(parse_key_path(k)[:depth]) for k in flat if inside(k, table)}
    for child in sorted(children):
        name = next((d for d in declared if spelt(d) == child), None)
        if name is None and any(inside(d, child) for d in declared):
            inner, tables = _split(child, declared, flat)
            keys.update(inner)
            made |= tables
        else:
            keys[name or child] = value_digest(live_value(flat, child))
    return keys, made


def _extra_keys(
    flat: Mapping[str, Any], declared: Mapping[str, Any], overlay: set[str]
) -> set[str]:
    wanted = set(flatten(unflatten(dict(declared)))) | set(declared)
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
