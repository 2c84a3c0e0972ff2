"""Rollback material: the previous state of every path a run may change.

Material for a batch of actions is written and flushed to disk before the
journal says those actions are running, so a crash at any point leaves
either nothing changed or enough on disk to put it back. Contents are stored
once by digest; a manifest per batch maps each action to its snapshots and to
the applied record it replaced.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import socket
import stat
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, NamedTuple

from trueup.canonical import storage_json
from trueup.errors import ApplyFailedError, UsageError
from trueup.fs import (
    ABSENT_OUTCOME,
    TEMP_MARK,
    WritableFS,
    sha256_bytes,
)
from trueup.fsops import parent_of, sync_paths
from trueup.private import copy_mode, make_folders, write_file


class Capture(NamedTuple):
    """What to keep for one journaled action before it mutates.

    A tuple, not a frozen dataclass: one is made per action of a run, and a
    frozen dataclass sets each field through ``object.__setattr__``.
    """

    seq: int
    paths: Sequence[str]
    applied: dict[str, Any] | None
    #: The action may remove the folders it empties (``Kind.prunes``).
    prunes: bool = False
    #: Its paths were planned absent and are created exclusively: nothing is there
    #: to keep (whatever came since is refused by the rename, never replaced).
    absent: bool = False


class MaterialMissing(UsageError):
    """A run's rollback material is not in this data folder at all.

    With a shared state store every host, and every ``TRUEUP_DATA``, sees the
    run, but its material stays in the data folder of the trueup that ran it:
    most likely this is the wrong place to recover it, a usage error.
    """


class RollbackStore:
    """The material of one run, under ``<data>/rollback/<run id>``.

    ``host`` is the host the run's record names: where its material is when
    it is not here.
    """

    def __init__(self, base: Path, root: Path, host: str) -> None:
        self.base = base
        self.root = Path(os.path.realpath(root))
        self.host = host

    def capture(self, items: Sequence[Capture], fs: WritableFS) -> str:
        """Snapshot every path of every item, flush it all; returns the manifest's name.

        An item's journal reference is ``<manifest>#<seq>`` (see ``load``).
        """
        blobs = self.base / "blobs"
        make_folders(blobs)
        written: list[str] = []
        manifest: dict[str, Any] = {}
        exists: dict[str, bool] = {}  # folder -> is it there; shared by the batch
        above: dict[str, list[str]] = {}
        allowed = fs.allowed()
        for item in items:
            missing = self._missing_dirs(item.paths, exists, above, fs)
            snaps = [
                # In a folder that is not there, nothing is: no need to look.
                {"path": path, "state": "absent"}
                if item.absent or exists.get(parent_of(path)) is False
                else self._snapshot(path, fs, blobs, written)
                for path in item.paths
            ]
            manifest[str(item.seq)] = {
                "snapshots": snaps,
                "missing_dirs": missing,
                "applied": item.applied,
            }
            # Folders outside the root its paths lie in (follow_links): a recovery in
            # another process reaches them from themselves down, as this run does.
            used = [f for f in allowed if any(p.startswith(f + "/") for p in item.paths)]
            if used:  # absent from older manifests, and where none was used
                manifest[str(item.seq)]["allowed"] = used
            if item.prunes:  # a pruned folder comes back with its own mode
                manifest[str(item.seq)]["folder_modes"] = _folder_modes(item.paths, self.root, fs)
        name = f"batch-{items[0].seq}.json" if items else "batch-empty.json"
        target = self.base / name
        write_file(target, storage_json(manifest))
        # The blobs folder needs its own flush only when it gained a blob.
        sync_paths(
            [*written, str(target)], [str(blobs), str(self.base)] if written else [str(self.base)]
        )
        return name

    def _snapshot(
        self, path: str, fs: WritableFS, blobs: Path, written: list[str]
    ) -> dict[str, Any]:
        st = fs.lstat(path)
        fs.kept_as(path, st)
        if st is None:
            return {"path": path, "state": "absent"}
        if stat.S_ISLNK(st.st_mode):
            return {"path": path, "state": "symlink", "link": fs.readlink(path)}
        if stat.S_ISDIR(st.st_mode):
            return {"path": path, "state": "directory"}
        data = fs.read_bytes(path, st)
        blob = sha256_bytes(data)
        blob_path = blobs / blob
        # A copy of somebody's file is no more readable than the file (and never by
        # others): 0644 is kept 0600, 0400 as 0400.
        mode = copy_mode(st.st_mode)
        try:
            kept = os.stat(blob_path).st_mode
        except FileNotFoundError:
            write_file(blob_path, data, mode)
            written.append(str(blob_path))
        else:  # the same bytes from another file: the narrower of the two modes
            if stat.S_IMODE(kept) & ~mode:
                os.chmod(blob_path, stat.S_IMODE(kept) & mode)
        return {"path": path, "state": "file", "blob": blob, "mode": stat.S_IMODE(st.st_mode)}

    def _missing_dirs(
        self,
        paths: Sequence[str],
        exists: dict[str, bool],
        above: dict[str, list[str]],
        fs: WritableFS,
    ) -> list[str]:
        """Folders a write would create, deepest first, so a restore can remove them.

        ``exists`` and ``above`` (each folder's missing folders, from it up) are
        shared by a batch, whose files go many to a folder.
        """
        if len(paths) == 1:
            return self._missing_above(parent_of(paths[0]), exists, above, fs)
        missing = {
            d
            for path in paths
            for d in self._missing_above(os.path.dirname(path), exists, above, fs)
        }
        return sorted(missing, key=lambda p: (-p.count(os.sep), p))

    def _missing_above(
        self, folder: str, exists: dict[str, bool], above: dict[str, list[str]], fs: WritableFS
    ) -> list[str]:
        """``folder`` and its parents inside the root that do not exist, deepest first."""
        known = above.get(folder)
        if known is not None:
            return known
        missing = []
        prefix = str(self.root) + os.sep
        parent = folder
        while parent.startswith(prefix):
            there = exists.get(parent)
            if there is None:
                st = fs.lstat(parent)
                there = exists[parent] = st is not None and stat.S_ISDIR(st.st_mode)
            if there:
                break
            missing.append(parent)
            parent = os.path.dirname(parent)
        above[folder] = missing
        return missing

    def load(self, ref: str) -> dict[str, Any]:
        """One action's material (``<manifest>#<seq>``); see ``_reading`` when it is gone."""
        name, _, seq = ref.partition("#")
        path = self.base / name
        with self._reading(path), open(path, encoding="utf-8") as handle:
            entry: dict[str, Any] = json.load(handle)[seq]
        return entry

    def check(self, refs: Iterable[str]) -> None:
        """Read the material a recovery needs before it changes anything (one per manifest).

        A recovery refused only once it is under way has taken the run over,
        recording this host as its holder: the host that has the material
        could then no longer tell whether the run is still being worked on.
        """
        for ref in {ref.partition("#")[0]: ref for ref in refs}.values():
            self.load(ref)

    @contextmanager
    def _reading(self, path: Path) -> Iterator[None]:
        """Refuse, in words, material that is not here or cannot be read.

        Only trueup writes it. Its folder missing most likely means this is not
        where the run ran (another host, another ``TRUEUP_DATA``), so it says
        where to recover it; a file missing or damaged inside the folder means
        a person cleaned or damaged it: what the run changed cannot be put back.
        """
        try:
            yield
        except (OSError, ValueError, KeyError) as exc:
            run = self.base.name
            lost = (
                f"restore that folder from a backup and try again, or run `trueup abandon {run}` "
                "to leave every target as it is now"
            )
            if self.base.is_dir():
                raise ApplyFailedError(
                    f"the rollback material of run {run} ({path}) cannot be read "
                    f"({exc.strerror if isinstance(exc, OSError) else exc}): what that run "
                    "changed cannot be put back",
                    hint=lost,
                ) from None
            if self.host != socket.gethostname():
                where = f"the run's record names host {self.host}: it is there, unless removed"
                there = f"on {self.host}"
            else:
                where = "it was removed, or it is under the TRUEUP_DATA the run was made with"
                there = "with that TRUEUP_DATA"
            raise MaterialMissing(
                f"the rollback material of run {run} is not in this data folder "
                f"({self.base}): {where}",
                hint=f"nothing was changed: run `trueup recover {run}` {there}; if the "
                f"material is lost, {lost}",
            ) from None

    def note_written(self, manifest: str, outcomes: dict[str, str]) -> None:
        """Keep, before a batch's changes become visible, what each path will hold.

        A path a recovery finds neither as it was nor as this note says was
        changed by somebody after the run stopped: it is left alone.
        """
        target = self.base / _written_name(manifest)
        write_file(target, storage_json(outcomes))
        sync_paths([str(target)], [str(self.base)])

    def restore(self, ref: str, fs: WritableFS) -> tuple[dict[str, Any] | None, list[str]]:
        """Put back every path of one action that still holds what the run wrote.

        Returns the applied record the action replaced, and the paths kept as
        they are because somebody changed them after the run wrote them.

        What the run put where nothing was goes first, deepest first, with the
        folders it made; then what was there comes back, shallowest first: a
        folder the run turned into a file (or a file it turned into a folder)
        is back before what it held.
        """
        entry = self.load(ref)
        self._reach(fs, [entry])
        written = self._written(ref)
        kept: list[str] = []
        modes: dict[str, int] = entry.get("folder_modes", {})
        pruned = [folder for folder in modes if not _is_folder(fs, folder)]
        snapshots = entry["snapshots"]
        added = [snap for snap in snapshots if snap["state"] == "absent"]
        for snap in sorted(added, key=_depth, reverse=True):
            if self._run_wrote(snap, written, kept, fs):
                fs.remove(snap["path"])
        fs.commit()
        for folder in entry["missing_dirs"]:  # deepest first
            with contextlib.suppress(OSError):
                fs.rmdir(folder)
        there = [snap for snap in snapshots if snap["state"] != "absent"]
        for snap in sorted(there, key=_depth):
            if self._run_wrote(snap, written, kept, fs):
                self._put_back(snap, fs)
        fs.commit()
        for folder in pruned:  # recreated by the writes above, with default modes
            with contextlib.suppress(OSError):
                fs.chmod_folder(folder, modes[folder])
        applied: dict[str, Any] | None = entry["applied"]
        return applied, kept

    @staticmethod
    def _run_wrote(
        snap: dict[str, Any], written: dict[str, str], kept: list[str], fs: WritableFS
    ) -> bool:
        """Whether ``snap``'s path differs from it and holds what the run wrote there
        (if it holds anything else, somebody changed it since: it goes to ``kept``)."""
        path = snap["path"]
        now = fs.held_at(path)
        if now == _as_outcome(snap) and not _mode_differs(snap, path, fs):
            return False  # as it was before the run
        if written.get(path) != now:
            kept.append(path)
            return False
        return True

    def _put_back(self, snap: dict[str, Any], fs: WritableFS) -> None:
        path, state = snap["path"], snap["state"]
        if state == "file":
            blob = self.base / "blobs" / snap["blob"]
            with self._reading(blob):
                data = blob.read_bytes()
            fs.write(path, data, mode=snap["mode"])
        elif state == "symlink":
            fs.symlink(path, snap["link"])
        else:  # a folder, where the run put a file or a link
            fs.make_folder(path)

    def _written(self, ref: str) -> dict[str, str]:
        path = self.base / _written_name(ref.partition("#")[0])
        if not path.exists():  # the run stopped before changing anything of the batch
            return {}
        with self._reading(path), open(path, encoding="utf-8") as handle:
            noted: dict[str, str] = json.load(handle)
        return noted

    def _entries(self) -> Iterator[dict[str, Any]]:
        """The material of every action in every manifest that can be read, to clean up.

        A damaged manifest is passed over: cleaning up is best effort, and
        abandon, which cleans up, is the way on when the material is damaged.
        """
        for manifest in self.base.glob("batch-*.json"):
            try:
                with open(manifest, encoding="utf-8") as handle:
                    entries: dict[str, dict[str, Any]] = json.load(handle)
            except (OSError, ValueError):
                continue
            yield from entries.values()

    def sweep_temp_files(self, fs: WritableFS) -> int:
        """Remove temp files a killed run left beside the paths it was changing, and the
        folders it was making whole under temp names beside the outermost of them."""
        folders: set[str] = set()
        entries = list(self._entries())
        for entry in entries:
            folders.update(os.path.dirname(s["path"]) for s in entry["snapshots"])
            if entry["missing_dirs"]:  # deepest first
                folders.add(os.path.dirname(entry["missing_dirs"][-1]))
        self._reach(fs, entries)
        removed = 0
        for folder in folders:
            try:
                names = fs.names(folder)
            except OSError:
                continue
            for name in names:
                if TEMP_MARK in name:
                    fs.remove_any(os.path.join(folder, name))
                    removed += 1
        return removed

    def remove_empty_folders(self, fs: WritableFS) -> None:
        """Remove folders the run created that nothing is in (after ``sweep_temp_files``).

        A run killed before its renames leaves only those behind; a folder that
        holds anything, written by the run or by anybody, stays.
        """
        entries = list(self._entries())
        self._reach(fs, entries)
        for entry in entries:
            for folder in entry["missing_dirs"]:  # deepest first
                with contextlib.suppress(OSError):
                    fs.rmdir(folder)

    def _reach(self, fs: WritableFS, entries: Iterable[dict[str, Any]]) -> None:
        """Reach the root, and the allowed folders ``entries`` used, by descriptors only:
        a link swapped in on the way since the run is refused (``OutsideRoot``)."""
        fs.confine(self.root)
        for entry in entries:
            for folder in entry.get("allowed", ()):
                fs.allow(folder)

    def discard(self) -> None:
        """Remove the run's material; failures here never change an outcome."""
        shutil.rmtree(self.base, ignore_errors=True)


def _folder_modes(paths: Iterable[str], root: Path, fs: WritableFS) -> dict[str, int]:
    """The modes of the folders above ``paths``, below ``root``, that exist now."""
    modes: dict[str, int] = {}
    top = str(root)
    for path in paths:
        folder = os.path.dirname(path)
        while folder.startswith(top + os.sep) and folder not in modes:
            st = fs.lstat(folder)
            if st is not None:
                modes[folder] = stat.S_IMODE(st.st_mode)
            folder = os.path.dirname(folder)
    return modes


def _mode_differs(snap: dict[str, Any], path: str, fs: WritableFS) -> bool:
    """A file back to its bytes may still hold the run's mode (the executable bit)."""
    if snap["state"] != "file":
        return False
    st = fs.lstat(path)
    return st is not None and stat.S_IMODE(st.st_mode) != int(snap["mode"])


def _is_folder(fs: WritableFS, path: str) -> bool:
    st = fs.lstat(path)
    return st is not None and stat.S_ISDIR(st.st_mode)


def _written_name(manifest: str) -> str:
    return manifest.replace("batch-", "written-", 1)


def _depth(snap: dict[str, Any]) -> int:
    return str(snap["path"]).count(os.sep)


def _as_outcome(snap: dict[str, Any]) -> str:
    """A snapshot spelt as ``ReadOnlyFS.held_at`` spells what a path holds."""
    state = snap["state"]
    if state == "file":
        return "file:" + str(snap["blob"])
    if state == "symlink":
        return "link:" + str(snap["link"])
    return ABSENT_OUTCOME if state == "absent" else "other"
