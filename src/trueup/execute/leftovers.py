"""Temp files an unfinished run left under its root, found without its rollback material.

A run's temp files are named after it (``fs.WritableFS.temp_path``: the
mark, then the run id), so whatever bears its name is its own and may go.
Where they can be is where its targets are: beside a target, in a folder
above one (a folder made whole under a temp name), or anywhere inside a
target that is a folder. The rollback material names those places, but it
may be gone (a data folder cleaned by hand, another ``TRUEUP_DATA``), and
abandoning a run must still leave nothing of it behind: the targets are then
taken from the store's records of the target and from the declaration the
run was made from, as it reads now.
"""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from trueup.anchor import OutsideRoot
from trueup.fs import TEMP_MARK, WritableFS
from trueup.paths import TargetError, normalise_target

if TYPE_CHECKING:
    from trueup.state.store import RunInfo, Store

#: A folder target is searched this deep at most (a tree is rarely deeper).
_MOST_DEPTH = 64


def run_mark(run_id: str) -> str:
    """What every temp name of run ``run_id`` holds (``WritableFS._temp_mark``)."""
    return f"{TEMP_MARK}{run_id}-"


def declared_targets(declaration: str | None) -> list[str]:
    """The targets a profile file declares, as it reads now; none if it cannot be read."""
    if not declaration:
        return []
    from trueup.declare.files import read_document
    from trueup.errors import TrueupError

    try:
        document = read_document(Path(declaration))
    except (TrueupError, OSError, RecursionError, ValueError):
        return []
    raws = document.get("resource")
    if not isinstance(raws, list):
        return []
    return [
        raw["target"]
        for raw in raws
        if isinstance(raw, dict) and isinstance(raw.get("target"), str)
    ]


def sweep_run_temp_files(fs: WritableFS, root: str, run_id: str, targets: Iterable[str]) -> int:
    """Remove every temp file or folder of run ``run_id`` around and inside ``targets``
    (relative to ``root``); how many were removed.

    Nothing outside the root is looked at: every folder is reached from the
    root down (``fs.confine``), and a target that leads out of it (``..``, a
    link on the way) is passed over.
    """
    fs.confine(root)
    real_root = os.path.realpath(root)
    mark = run_mark(run_id)
    listed: set[str] = set()
    walked: set[str] = set()
    removed = 0
    for target in targets:
        try:
            path = real_root + "/" + normalise_target(target)
        except TargetError:
            continue
        folder = os.path.dirname(path)
        while folder not in listed:
            listed.add(folder)
            removed += _remove_marked(fs, folder, mark)
            if folder == real_root:
                break
            folder = os.path.dirname(folder)
        if path not in walked:
            walked.add(path)
            removed += _walk(fs, path, mark, _MOST_DEPTH)
    return removed


def _remove_marked(fs: WritableFS, folder: str, mark: str) -> int:
    try:
        names = fs.names(folder)
    except (OSError, OutsideRoot):
        return 0
    removed = 0
    for name in names:
        if mark in name:
            with contextlib.suppress(OSError, OutsideRoot):
                fs.remove_any(f"{folder}/{name}")
                removed += 1
    return removed


def _walk(fs: WritableFS, folder: str, mark: str, depth: int) -> int:
    """``_remove_marked`` in ``folder`` and every real folder below it (links not followed)."""
    try:
        st = fs.lstat(folder)
        if st is None or not stat.S_ISDIR(st.st_mode) or depth == 0:
            return 0
        names = fs.names(folder)
    except (OSError, OutsideRoot):
        return 0
    removed = _remove_marked(fs, folder, mark)
    for name in names:
        if mark not in name:
            removed += _walk(fs, f"{folder}/{name}", mark, depth - 1)
    return removed


def sweep_abandoned(store: Store, run: RunInfo) -> int:
    """``sweep_run_temp_files`` for an abandoned run of a profile: around every target the
    store has a record of, and every target its declaration names now."""
    if run.target.kind != "profile":
        return 0  # an org's run writes nothing under a root
    targets = [applied.resource.target for applied in store.applied(run.target.key).values()]
    targets += declared_targets(run.declaration)
    fs = WritableFS(tag=run.id)
    try:
        return sweep_run_temp_files(fs, run.target.location, run.id, targets)
    finally:
        fs.close()
