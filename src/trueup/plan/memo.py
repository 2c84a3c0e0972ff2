"""A plan that changes nothing, remembered with the stat of everything it read.

The planner is pure and observation reads only through ``ReadOnlyFS``, so a
plan is a function of the declaration, the paths it looked at and the applied
records. When a plan changes nothing, it is kept with a witness per path
(type and stat key, or absence) plus the target's run history (applied
records change only within runs). Next time, if every witness still holds
and is old enough to trust (git's racy rule, as in the stat cache), no run of
the target started or ended, and trueup's own code is the same, that plan is
the answer: a no-op plan of 10,000 files costs 10,000 ``lstat`` calls instead
of resolving, observing and planning everything again.

Only plans without changes are remembered, so nothing is ever written on the
strength of a remembered plan: anything with something to do is computed.

The memo is stored with ``marshal``, not JSON: it is read on every no-op plan
and holds a witness per path, which ``marshal`` loads faster than JSON.
Unlike pickle, ``marshal`` builds only plain values and runs no code; its
format is keyed by Python version here, as any other change of format. The
witnesses are one list of paths and one ``array('q')`` of their stats, five
numbers a path, and the actions are rows of their fields: at 10,000 files
loading and decoding those took half of a remembered plan's own time as
dicts of tuples and action bodies (bench/README.md).
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import marshal
import os
import sys
from array import array
from collections.abc import Iterable
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from trueup import __version__
from trueup.canonical import sha256_hex
from trueup.model import Action, ActionType, Plan
from trueup.private import make_folders, write_file
from trueup.statcache import Witness, racy, witness_of

#: An action's fields in the order of its rows; a field added to Action changes the format.
_FIELDS = tuple(f.name for f in fields(Action))
_TYPE_AT = _FIELDS.index("type")
_TYPES = {t.value: t for t in ActionType}
FORMAT = (
    f"trueup-plan-memo/{__version__}/3/marshal-{marshal.version}/"
    f"py{sys.version_info[0]}.{sys.version_info[1]}/{','.join(_FIELDS)}"
)
#: The stats of a path that was absent.
_ABSENT = (-1, -1, -1, -1, -1)
_PACKAGE = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class Remembered:
    """A plan found in the memo; the witnesses (``paths`` and their ``stats``,
    five a path) are still to be checked."""

    plan: Plan
    profile: dict[str, str]
    history: str
    paths: list[str]
    stats: array[int]

    def holds(self) -> bool:
        """Whether every path still looks as it did.

        Each was old enough to trust when the plan was kept (``PlanMemo.keep``),
        and the same stat means the same times, so that still holds.
        """
        stats = self.stats
        at = 0
        for path in self.paths:
            try:
                st = os.lstat(path)
            except (FileNotFoundError, NotADirectoryError):
                if stats[at] != -1:
                    return False
            else:  # witness_of's fields, compared in place: this runs once a path
                if (
                    st.st_mtime_ns != stats[at + 2]
                    or st.st_ctime_ns != stats[at + 4]
                    or st.st_ino != stats[at + 3]
                    or st.st_size != stats[at + 1]
                    or st.st_mode != stats[at]
                ):
                    return False
            at += 5
        return True


class PlanMemo:
    """One remembered plan per (profile file, root, options), under ``<data>/cache/plans``."""

    def __init__(self, folder: Path, profile: Path, root: Path, options: dict[str, Any]) -> None:
        self.root = str(root)
        self.key = {
            "format": FORMAT,
            "code": _code_stamp(),
            "profile": os.path.abspath(profile),
            "root": str(root),
            **options,
        }
        name = sha256_hex(json.dumps(self.key, sort_keys=True).encode())[:32]
        self.path = folder / f"{name}.memo"

    def recall(self) -> Remembered | None:
        try:
            # loads of the bytes: load() of a file object reads it piecemeal, much slower.
            document = marshal.loads(self.path.read_bytes())
            if document.get("key") != self.key:
                return None
            stats = array("q")
            stats.frombytes(document["stats"])
            paths = document["paths"]
            if len(stats) != 5 * len(paths):
                return None
            actions = _actions(document["actions"])
            plan = Plan.from_body(document["plan"], document["digest"], actions)
            return Remembered(plan, document["profile"], document["history"], paths, stats)
        except (OSError, EOFError, ValueError, KeyError, TypeError, AttributeError, IndexError):
            return None

    def keep(
        self,
        plan: Plan,
        profile: dict[str, str],
        history: str,
        recorded_ns: int,
        witnesses: dict[str, Witness],
    ) -> None:
        """Remember a plan without changes; best effort, like every cache.

        ``witnesses`` are the paths the plan read; the folders holding them are
        witnessed too (a link swapped in for one, or a file added beside), and
        below the root every folder up to it. A plan that read a path too new
        to trust by its stat (git's racy rule, as in the stat cache) could
        never be answered from memory, so it is not kept. Nor is a plan with
        drift: it is shown with the work ``--overwrite`` would discard, read
        through its resources.
        """
        if plan.changes or plan.by_type(ActionType.DRIFT_CONFLICT):
            self.forget()
            return
        witnesses = {**witnesses, **_folders_of(witnesses, self.root)}
        if any(
            seen is not None and racy(seen[2], seen[4], recorded_ns) for seen in witnesses.values()
        ):
            self.forget()
            return
        body = {**plan.body(), "actions": []}
        try:
            stats = array("q")
            for seen in witnesses.values():
                stats.extend(_ABSENT if seen is None else seen)
            document = {
                "key": self.key,
                "profile": profile,
                "history": history,
                "digest": plan.digest,
                "plan": body,
                "actions": _rows(plan.actions),
                "paths": list(witnesses),
                "stats": stats.tobytes(),
            }
            make_folders(self.path.parent)
            tmp = self.path.with_name(f".{self.path.name}.{os.getpid()}")
            write_file(tmp, marshal.dumps(document))  # 0600: a plan shows what files hold
            os.replace(tmp, self.path)
        except (OSError, ValueError, OverflowError):  # a value marshal or array cannot store
            self.forget()

    def forget(self) -> None:
        with contextlib.suppress(OSError):
            os.unlink(self.path)


def _rows(actions: Iterable[Action]) -> list[tuple[Any, ...]]:
    """Each action as the tuple of its fields, its type by value (marshal takes no enum)."""
    rows = []
    for action in actions:
        row = [getattr(action, name) for name in _FIELDS]
        row[_TYPE_AT] = action.type.value
        rows.append(tuple(row))
    return rows


def _actions(rows: Iterable[tuple[Any, ...]]) -> tuple[Action, ...]:
    at = _TYPE_AT
    return tuple(Action(*(*row[:at], _TYPES[row[at]], *row[at + 1 :])) for row in rows)


def _folders_of(witnesses: dict[str, Witness], root: str) -> dict[str, Witness]:
    """The folder of every witnessed path, and for a path below ``root`` every
    folder up to it: a folder swapped for a link (out of the root, say) is seen.
    """
    below = root.rstrip("/") + "/"
    folders: set[str] = set()
    for path in witnesses:
        folder = os.path.dirname(path)
        while folder not in folders:
            folders.add(folder)
            if not folder.startswith(below):
                break
            folder = os.path.dirname(folder)
    found: dict[str, Witness] = {}
    for folder in folders - set(witnesses):
        try:
            found[folder] = witness_of(os.lstat(folder))
        except (FileNotFoundError, NotADirectoryError):
            found[folder] = None
    return found


def _code_stamp() -> str:
    """Size and mtime of every module of trueup and of the parsers it plans with.

    A plan is only as good as its planner, and a config file is read by
    tomlkit or ruamel.yaml: upgrading either may change what is observed.
    """
    stamps = []
    for folder, _, names in os.walk(_PACKAGE):
        for name in names:
            if name.endswith(".py"):
                st = os.stat(os.path.join(folder, name))
                stamps.append(f"{folder}/{name}:{st.st_size}:{st.st_mtime_ns}")
    for library in _PARSERS:
        spec = importlib.util.find_spec(library)
        if spec is not None and spec.origin:
            folder = os.path.dirname(spec.origin)
            st = os.stat(folder)  # a reinstall replaces the folder's files
            stamps.append(f"{library}:{folder}:{st.st_mtime_ns}:{st.st_ino}")
    return sha256_hex("\n".join(sorted(stamps)).encode())


_PARSERS = ("tomlkit", "ruamel.yaml")
