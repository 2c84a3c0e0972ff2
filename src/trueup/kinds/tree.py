"""Folder trees shared by the directory and skill kinds.

A desired tree is ``{relative path: entry}`` taken from a source folder at
declaration time; an observed tree is the same shape read from the target.
Entries are ``["file", digest, executable]`` or ``["link", target]``, so two
trees compare with ``==`` and digest canonically.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable, Mapping, Sequence
from collections.abc import Set as AbstractSet
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from trueup.canonical import digest
from trueup.errors import UsageError
from trueup.fs import Entry, ReadOnlyFS
from trueup.kinds import discard
from trueup.kinds.base import ApplyContext, Decision, Kind, ObserveContext, Touched, obstacle
from trueup.model import ABSENT, Action, ActionType, Applied, Evidence, Observed, Resource

if TYPE_CHECKING:
    from pydantic import BaseModel

TreeEntry = list[Any]
Tree = Mapping[str, TreeEntry]


@cache
def tree_fields() -> type[BaseModel]:
    """Built on first use: a warm no-op plan never imports pydantic."""
    from pydantic import BaseModel, ConfigDict

    class TreeFields(BaseModel):
        model_config = ConfigDict(extra="forbid", strict=True)

        source: str

    return TreeFields


def as_tree(entries: Mapping[str, Entry]) -> dict[str, TreeEntry]:
    tree: dict[str, TreeEntry] = {}
    # Unpacked, not read by field name: a named tuple's field is a slow attribute.
    for rel, (state, sha, executable, link) in entries.items():
        if state == "file":
            tree[rel] = ["file", sha, executable]
        elif state == "symlink":
            tree[rel] = ["link", link]
        elif state == "special":
            tree[rel] = ["special"]
    return tree


def tree_digest(tree: Tree) -> str:
    return digest(dict(tree))


def observe_tree(resource: Resource, ctx: ObserveContext, managed_only: bool) -> Observed:
    """The live tree; for mirror-owned only the declared paths count in the digest."""
    path = ctx.path(resource.target)
    entry = ctx.fs.entry(path)
    if entry is None:
        return ABSENT
    if entry.state != "directory":
        return Observed(entry.state)
    live = as_tree(ctx.fs.walk(path, big=True))
    counted = (
        {k: v for k, v in live.items() if k in resource.spec["files"]} if managed_only else live
    )
    return Observed("directory", tree_digest(counted), {"files": live})


def changes(desired: Tree, live: Tree, removable: Iterable[str]) -> dict[str, list[str]]:
    """Files to write and to remove; ``update`` names the writes that replace a live file.

    Every other write is an exclusive create (fs.WritableFS.write): a file
    that appears there after the plan is never replaced.
    """
    write = sorted(rel for rel, entry in desired.items() if live.get(rel) != entry)
    remove = sorted(rel for rel in removable if rel in live and rel not in desired)
    return {"write": write, "remove": remove, "update": [rel for rel in write if rel in live]}


def owned_unmodified(applied: Applied, live: Tree) -> list[str]:
    owned: Mapping[str, TreeEntry] = applied.detail.get("files", {})
    return [rel for rel, entry in owned.items() if live.get(rel) == entry]


def not_a_folder(observed: Observed, place: str = "where the folder should be") -> str | None:
    """What stands at ``place`` (or above it) instead of a folder, in words; ``None`` if nothing."""
    if observed.state == "blocked":
        return obstacle(observed)
    if observed.state not in ("absent", "directory"):
        return f"a {observed.state} is {place}"
    return None


def in_the_way(
    desired: Tree, observed: Observed, whole: bool = False, removable: Iterable[str] = ()
) -> str | None:
    """A path a file must go to that holds a folder, or the target itself not a folder.

    A pipe, socket or device is in the way wherever trueup would write or (with
    ``whole``: everything live in the folder is trueup's to replace) remove it:
    it can be neither read for a restore nor put back by one. What the mirror
    removes anyway (``removable`` and not declared) is in nobody's way: a
    folder of trueup's own files becomes a file, or a file of its own becomes
    a folder, when the source was restructured so.
    """
    target = not_a_folder(observed)
    if target:
        return target
    live = observed.detail.get("files", {})
    special = sorted(
        rel for rel, entry in live.items() if entry[0] == "special" and (whole or rel in desired)
    )
    if special:
        return f"a pipe, socket or device is in the way at {special[0]}"
    going = {rel for rel in removable if rel in live and rel not in desired}
    staying = {rel: entry for rel, entry in live.items() if rel not in going}
    blocked = sorted(rel for rel in desired if rel not in live and _has_children(rel, staying))
    if blocked:
        return f"a folder is in the way at {blocked[0]}"
    # A file or a link where a declared file needs a folder: writing there
    # would fail, or go through the link to wherever it leads.
    above = sorted({p for rel in desired for p in _parents(rel) if p in staying}) if live else []
    return f"a {_what(live[above[0]])} is where a folder should be at {above[0]}" if above else None


def _parents(rel: str) -> list[str]:
    parts = rel.split("/")
    return ["/".join(parts[:i]) for i in range(1, len(parts))]


def _what(entry: TreeEntry) -> str:
    return {"link": "link", "special": "pipe, socket or device"}.get(entry[0], "file")


def _has_children(rel: str, live: Mapping[str, Any]) -> bool:
    prefix = rel + "/"
    return any(key.startswith(prefix) for key in live)


def mirror(
    resource: Resource,
    observed: Observed,
    applied: Applied | None,
    removable: Iterable[str],
    what: str,
) -> Decision:
    """Write what differs and remove ``removable`` files that are not declared.

    Removing a file trueup did not write, or that changed since it did, or
    writing over a file that was there before trueup and differs, destroys
    somebody's work: the plan says so and asks for a typed confirmation,
    whichever policy or ``--overwrite`` led there.
    """
    live = observed.detail.get("files", {})
    desired: Tree = resource.spec["files"]
    plan: dict[str, Any] = changes(desired, live, removable)
    safe = set(owned_unmodified(applied, live)) if applied else set()
    # A declared file already there as declared, and not trueup's before, was
    # not written by trueup: it never becomes trueup's to remove.
    owned: Mapping[str, TreeEntry] = applied.detail.get("files", {}) if applied else {}
    written = set(plan["write"])
    foreign = sorted(
        rel for rel in desired if rel not in written and rel not in owned and rel in live
    )
    if foreign:
        plan["foreign"] = foreign
    if not plan["write"] and not plan["remove"]:
        return Decision(ActionType.NO_OP, "up to date", {"foreign": foreign} if foreign else {})
    parts = [f"write {len(plan['write'])}"] if plan["write"] else []
    parts += [f"remove {len(plan['remove'])}"] if plan["remove"] else []
    verb = "install" if observed.state == "absent" else "update"
    theirs = [rel for rel in plan["update"] if rel not in owned]
    lost = f", replacing {listed(theirs)}, which trueup never wrote" if theirs else ""
    return Decision(
        ActionType.MIRROR_DIRECTORY,
        f"{verb} {what}: {', '.join(parts)} file(s){lost}",
        plan,
        destroys=bool(theirs) or any(rel not in safe for rel in plan["remove"]),
    )


def removal(applied: Applied, observed: Observed, whole: bool) -> Decision:
    """Drop a no-longer-declared tree if what trueup wrote is still unmodified.

    ``whole`` (a skill, or a folder trueup mirrored exactly): the folder is
    trueup's, so any file in it that trueup did not write is a modification
    too. Otherwise only trueup's own unmodified files go; others stay.
    """
    if observed.state == "absent":
        return Decision(ActionType.REMOVE_RESOURCE, "forget (already gone)", {"remove": []})
    drift = {"observed": observed.digest, "applied": applied.digest, "desired": None}
    replaced = not_a_folder(observed, "where the folder trueup wrote was")
    if replaced:
        # Someone put their own file or link there: it is not what trueup
        # wrote, so it is theirs, and the record stays until they decide.
        return Decision(
            ActionType.DRIFT_CONFLICT,
            f"drift: no longer declared, but {replaced}; left exactly as it is",
            drift=drift,
        )
    live = observed.detail.get("files", {})
    owned = applied.detail.get("files", {})
    unmodified = owned_unmodified(applied, live)
    changed = [rel for rel in owned if rel in live and rel not in unmodified]
    if whole:
        changed += sorted(rel for rel in live if rel not in owned)
    if changed:
        files = [
            {"path": rel, "change": "modified" if rel in owned else "added"} for rel in changed
        ]
        return Decision(
            ActionType.DRIFT_CONFLICT,
            f"drift: no longer declared, but {listed(changed)} changed or added since trueup "
            "wrote it: left in place",
            changed_payload(files),
            drift=drift,
        )
    remove = sorted(unmodified)
    payload: dict[str, Any] = {"remove": remove}
    if set(live) <= set(remove):
        payload["empties"] = True  # nothing else is in it: the folder goes too
    return Decision(
        ActionType.REMOVE_RESOURCE, f"remove {len(remove)} file(s) (no longer declared)", payload
    )


def clobbered(desired: Tree, live: Tree, applied: Applied | None) -> list[str]:
    """Declared files whose live content trueup did not write, or that changed since it did."""
    owned: Mapping[str, TreeEntry] = applied.detail.get("files", {}) if applied else {}
    return sorted(
        rel
        for rel, entry in desired.items()
        if rel in live and live[rel] != entry and owned.get(rel) != live[rel]
    )


#: A drift's payload lists at most this many changed files; ``changed_count`` says how many.
MAX_CHANGED = 100


def changed_files(live: Tree, reference: Tree, desired: Tree) -> list[dict[str, str]]:
    """Each file that differs from ``reference`` (what trueup wrote, or what is declared):
    ``added``, ``removed`` or ``modified``, by relative path.

    A live file exactly as declared is no one's change worth naming: taking the
    declared version loses nothing there.
    """
    found = []
    for rel in sorted(set(live) | set(reference)):
        entry, was = live.get(rel), reference.get(rel)
        if entry == was or (entry is not None and entry == desired.get(rel)):
            continue
        change = "added" if was is None else "removed" if entry is None else "modified"
        found.append({"path": rel, "change": change})
    return found


def changed_payload(changed: list[dict[str, str]]) -> dict[str, Any]:
    """The structured list of a drift's files (``--json``), bounded like everything shown."""
    payload: dict[str, Any] = {"changed": changed[:MAX_CHANGED]}
    if len(changed) > MAX_CHANGED:
        payload["changed_count"] = len(changed)
    return payload


def described(changed: list[dict[str, str]], most: int = 3) -> str:
    """``SKILL.md modified, notes.md added`` for a one-line message, and how many more."""
    more = f" and {len(changed) - most} more" if len(changed) > most else ""
    return ", ".join(f"{c['path']} {c['change']}" for c in changed[:most]) + more


def listed(rels: list[str], most: int = 3) -> str:
    """A few paths for a one-line message, and how many more there are."""
    more = f" and {len(rels) - most} more" if len(rels) > most else ""
    return ", ".join(rels[:most]) + more


def tree_preview(action: Action, most: int = 50) -> str:
    """The files a mirror writes (+) and removes (-), at most ``most`` of each.

    Whatever is left out is counted on a last line, so a person confirming
    the plan never takes a shortened list for the whole of it.
    """
    write, remove = action.payload.get("write", []), action.payload.get("remove", [])
    lines = [f"+ {rel}\n" for rel in write[:most]]
    lines += [f"- {rel}\n" for rel in remove[:most]]
    hidden = len(write) + len(remove) - len(lines)
    if hidden:
        lines.append(f"… and {hidden} more\n")
    return "".join(lines)


class TreeKind(Kind):
    """What the directory and skill kinds share: everything but observe and plan."""

    #: A folder: other targets may lie in it (plan/restructure.py's PathKind).
    holds_paths = True

    def declaration_model(self) -> type[BaseModel]:
        return tree_fields()

    def resolve(
        self, fields: dict[str, Any], policy: str, base_dir: Path, fs: ReadOnlyFS
    ) -> dict[str, Any]:
        declared = base_dir / fields["source"]
        source, st = fs.follow(declared)  # a link to the folder is witnessed, and followed
        if st is None or not stat.S_ISDIR(st.st_mode):
            what = "does not exist" if st is None else "is not a folder"
            raise UsageError(f"field 'source': {fields['source']!r} {what} (looked in {declared})")
        files = as_tree(fs.walk(source))
        if not files:
            # A tree is its files and links: folders exist only as their parents,
            # as in git. With none, there is nothing to install, and planning
            # "up to date" with no folder at the target would claim a convergence
            # that never happened.
            raise UsageError(
                f"field 'source': {fields['source']!r} holds no files, so there is nothing "
                f"to install (looked in {declared})",
                hint="add the files it should install; trueup installs files and links, not "
                "empty folders, so a folder meant to start empty needs a placeholder such as .keep",
            )
        special = sorted(rel for rel, entry in files.items() if entry[0] == "special")
        if special:
            raise UsageError(
                f"field 'source': {special[0]} in {fields['source']!r} is a pipe, socket or "
                "device, which trueup cannot copy",
                hint="move it out of the source folder",
            )
        return {"source": source, "files": files, "digest": tree_digest(files)}

    def source_links(self, spec: Mapping[str, Any]) -> list[tuple[str, str]]:
        source = spec["source"]
        return [
            (os.path.join(source, rel), entry[1])
            for rel, entry in spec["files"].items()
            if entry[0] == "link"
        ]

    # -- restructured trees (plan/restructure.py's PathKind) -----------------
    def written(self, applied: Applied) -> list[Any] | None:
        return None  # a folder is not one entry of a tree

    def left_empty(self, observed: Observed, removed: AbstractSet[str]) -> bool:
        return False

    def inherit(
        self, resource: Resource, records: Sequence[tuple[Applied, list[Any] | None]]
    ) -> Applied | None:
        """What trueup wrote in this folder under dropped ids is trueup's to update."""
        prefix = resource.target + "/"
        files: dict[str, TreeEntry] = {}
        for record, entry in records:
            if entry is not None and record.resource.target.startswith(prefix):
                files[record.resource.target.removeprefix(prefix)] = entry
        if not files:
            return None
        first = records[0][0]
        return Applied(resource, None, {"files": files}, first.revision, first.applied_at)

    def clears(self, applied: Applied, decision: Decision) -> bool:
        return decision.type is ActionType.REMOVE_RESOURCE and bool(decision.payload.get("empties"))

    def touches(self, action: Action, resource: Resource, ctx: ObserveContext) -> Touched:
        into = os.path.join(ctx.path_str(resource.target), "")  # as in ``apply``
        rels = [*action.payload.get("write", []), *action.payload.get("remove", [])]
        prunes = action.type is ActionType.REMOVE_RESOURCE or bool(action.payload.get("remove"))
        return Touched([into + rel for rel in rels], prunes)

    def apply(self, action: Action, resource: Resource, ctx: ApplyContext) -> None:
        # Plain strings, not Path objects: this loop runs once per file of the tree.
        base = ctx.path_str(resource.target)
        source = resource.spec.get("source", "")
        desired: Tree = resource.spec.get("files", {})
        join, fs = os.path.join, ctx.writer
        # Each relative path joined by one concatenation, as os.path.join would spell it.
        into, source_dir = join(base, ""), join(source, "")
        replaced = set(action.payload.get("update", ()))
        # Removals first: a file going where a removed folder was, or into a folder
        # where a removed file was, is staged to wait for them (WritableFS._place).
        for rel in action.payload.get("remove", []):
            fs.remove(join(base, rel), prune_up_to=base)
        for rel in action.payload.get("write", []):
            entry = desired[rel]
            if entry[0] == "link":
                fs.symlink(into + rel, entry[1], rel not in replaced)
                continue
            fs.copy(into + rel, source_dir + rel, entry[1], entry[2], None, rel not in replaced)

    def verify(self, action: Action, resource: Resource, ctx: ObserveContext) -> Evidence:
        base = ctx.path(resource.target)
        live = as_tree(ctx.fs.walk(base, big=True)) if ctx.fs.entry(base) else {}
        removing = action.type is ActionType.REMOVE_RESOURCE
        desired: Tree = {} if removing else resource.spec.get("files", {})
        wrong = [rel for rel in desired if live.get(rel) != desired[rel]]
        wrong += [rel for rel in action.payload.get("remove", []) if rel in live]
        if wrong:
            return Evidence("failed", "digest", tree_digest(live), message=f"{wrong[0]} differs")
        # Every declared entry is live as declared, so the live digest of the declared
        # paths is the declared one (``resolve`` computed it; a skill's plan relies on
        # it too): encoding 10,000 entries again would only spell the same bytes.
        declared = resource.spec.get("digest") if desired else None
        return Evidence(
            "passed", "digest", declared or tree_digest({rel: live[rel] for rel in desired})
        )

    def record(self, action: Action, resource: Resource) -> Mapping[str, Any] | None:
        """The files trueup owns: those it wrote or owned already, never a foreign one."""
        if action.type is ActionType.REMOVE_RESOURCE:
            return None
        foreign = set(action.payload.get("foreign", ()))
        files: Tree = resource.spec["files"]
        return {"files": {rel: e for rel, e in files.items() if rel not in foreign}}

    def preview(self, action: Action, resource: Resource, ctx: ObserveContext) -> str:
        return tree_preview(action)

    def discarded(self, action: Action, resource: Resource, ctx: ObserveContext) -> str:
        base, source = ctx.path_str(resource.target), resource.spec.get("source", "")
        changed = action.payload.get("changed", [])
        return discard.discarded(
            changed, resource.spec.get("files", {}), ctx.fs, base, source, resource.target
        )
