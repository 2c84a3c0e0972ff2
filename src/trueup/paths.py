"""Targets: the rules a target path must obey, and resolving it under a root.

A target is always relative to the root it is applied to, so a profile can be
tried in a sandbox before it touches a home directory. Everything that could
make a write land outside the root is refused here, before anything is written.
"""

from __future__ import annotations

import os
import sys
import unicodedata
from collections.abc import Iterable, Set
from pathlib import Path

_GLOB = frozenset("*?[")


class TargetError(ValueError):
    """A target that breaks a rule; the message says which."""


_NAME_MAX = 255  # bytes in one file name, on every common file system
# Bytes in a whole target: PATH_MAX (4096 on Linux) less room for the root, so a
# target is one the tools a person uses on it can name too.
_PATH_MAX = 3072
#: Names in one target: far more than any setup needs, and few enough that a walk
#: of its folders, one by one from the root, never runs out of stack.
MAX_TARGET_DEPTH = 128


def normalise_target(raw: str) -> str:
    """Return the canonical spelling of a target, or raise ``TargetError``."""
    if not raw or not raw.strip():
        raise TargetError("target is empty")
    if "\0" in raw:
        raise TargetError("target contains a NUL character")
    text = raw.replace("\\", "/")
    plain = text.isascii()  # already NFC, one byte a character: the common case, made quick
    if not plain:
        text = unicodedata.normalize("NFC", text)
    if text.startswith("/") or (len(text) > 1 and text[1] == ":"):
        raise TargetError(f"target {raw!r} is absolute; targets are relative to the root")
    if not _GLOB.isdisjoint(text):
        raise TargetError(f"target {raw!r} contains a glob character")
    parts = [p for p in text.split("/") if p not in ("", ".")]
    if not parts:
        raise TargetError(f"target {raw!r} names the root itself")
    if ".." in parts:
        raise TargetError(f"target {raw!r} contains '..'")
    if len(parts) > MAX_TARGET_DEPTH:
        shown = raw if len(raw) <= 80 else f"{raw[:40]}…{raw[-30:]}"
        raise TargetError(
            f"target {shown!r} is {len(parts)} names deep; at most {MAX_TARGET_DEPTH} are allowed"
        )
    size = len(text) if plain else len(text.encode("utf-8", "surrogatepass"))
    if size > _PATH_MAX:
        shown = raw if len(raw) <= 80 else f"{raw[:40]}…{raw[-30:]}"
        raise TargetError(
            f"target {shown!r}: a path of {size} bytes is too long for the file system "
            f"(at most {_PATH_MAX} below the root)"
        )
    if plain and len(text) <= _NAME_MAX:
        return "/".join(parts)  # no name in it can be too long
    for part in parts:
        size = len(part) if plain else len(part.encode("utf-8", "surrogatepass"))
        if size > _NAME_MAX:
            raise TargetError(
                f"target {raw!r} has a name of {size} bytes; file systems allow {_NAME_MAX}"
            )
    return "/".join(parts)


def folds_case() -> bool:
    """Whether the platform's usual file systems compare names case-insensitively."""
    return sys.platform in ("darwin", "win32")


def overlap_key(target: str) -> str:
    return target.casefold() if folds_case() else target


def find_overlaps(targets: Iterable[tuple[str, str]]) -> list[tuple[str, str]]:
    """Pairs of resource ids whose targets are equal or nest, after normalisation."""
    # Sorted by component, so everything below a path comes right after it
    # (as text, "s-old" would sort between "s" and "s/SKILL.md"): with "/" as
    # NUL, which sorts first and which no target holds.
    keyed = sorted((overlap_key(t).replace("/", "\0"), rid) for rid, t in targets)
    clashes: list[tuple[str, str]] = []
    open_dirs: list[tuple[str, str]] = []
    for key, rid in keyed:
        while open_dirs and not (
            key == open_dirs[-1][0] or key.startswith(open_dirs[-1][0] + "\0")
        ):
            open_dirs.pop()
        if open_dirs:
            clashes.append((open_dirs[-1][1], rid))
        open_dirs.append((key, rid))
    return clashes


class RootResolver:
    """Resolves targets under one root, refusing any that would escape it.

    Every existing parent is checked without following the final component:
    a parent that is a symlink must resolve inside the root, so a link planted
    in a followed directory cannot redirect a write elsewhere. Checked parents
    are remembered, so ten thousand files in a hundred folders cost a hundred
    checks, not a million.
    """

    def __init__(self, root: Path | str) -> None:
        self.root = os.path.realpath(root)
        self._safe: set[str] = {self.root}
        # Each target's resolved path: a run resolves it to observe, keep, write and
        # verify it, and its parents are checked once anyway (``_safe``).
        self._resolved: dict[str, str] = {}
        #: Folders (relative) that are symlinks inside the root, and where they lead.
        self.links: dict[str, str] = {}

    def canonical(self, target: str) -> str:
        """``target`` as the file system sees it: symlinked folders on the way followed.

        Two targets that differ only by a link (``skills/x`` and ``real/x`` when
        ``skills`` leads to ``real``) are one place.
        """
        parts = target.split("/")
        for depth in range(len(parts) - 1, 0, -1):
            lead = self.links.get("/".join(parts[:depth]))
            if lead is not None:
                return "/".join([lead, *parts[depth:]]) if lead else "/".join(parts[depth:])
        return target

    def resolve(self, target: str) -> Path:
        return Path(self.resolve_str(target))

    def resolve_str(self, target: str) -> str:
        """As ``resolve``, as a string: hot loops over many files skip pathlib."""
        found = self._resolved.get(target)
        if found is None:
            parent, _, _ = target.rpartition("/")
            self._check_parent(parent, target)
            found = self._resolved[target] = self.root + "/" + target
        return found

    def _check_parent(self, parent: str, target: str) -> None:
        if not parent:
            return
        folder = self.root + "/" + parent
        if folder in self._safe:
            return
        grand, _, _ = parent.rpartition("/")
        self._check_parent(grand, target)
        if os.path.islink(folder):
            resolved = os.path.realpath(folder)
            if resolved != self.root and not resolved.startswith(self.root + os.sep):
                raise TargetError(
                    f"target {target!r} goes through {folder}, a symlink to {resolved}, "
                    f"which is outside the root {self.root}"
                )
            self.links[parent] = resolved[len(self.root) + 1 :]
        self._safe.add(folder)


def within(target: str, places: Set[str]) -> bool:
    """Whether the normalised ``target`` is one of ``places`` or lies inside one of them."""
    if not places:
        return False
    parts = target.split("/")
    return any("/".join(parts[:n]) in places for n in range(1, len(parts) + 1))
