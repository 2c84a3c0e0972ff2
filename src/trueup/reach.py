"""The root, and the folders outside it a resource names, each reached from itself down.

A config file a dotfiles manager keeps in its repository (stow, chezmoi, yadm)
is a symlink under the root into that folder. A resource that names the
folder (``follow_links``) is edited there; and what is under such a folder is
reached as what is under the root is (anchor.py): by descriptors opened from
that folder down, one name at a time, a link that leads out of it refused. A
path under neither stays as it was (a source, the profile).

``Reach`` is the anchor a file system is confined with (``ObserveContext``
installs it): with no folder allowed it is exactly the root's ``Anchor``.
"""

from __future__ import annotations

import os

from trueup.anchor import ANCHORED, Anchor
from trueup.fs import ReadOnlyFS


class Reach(Anchor):
    """The root's anchor, plus one anchor for each allowed folder outside the root.

    Every method a file system calls is answered by the anchor that holds the
    path: the root's first, so nothing under the root is ever reached another way.
    """

    def __init__(self, root: str) -> None:
        super().__init__(root)
        self._base = Anchor(root)
        self._allowed: dict[str, Anchor] = {}

    def allow(self, folder: str) -> None:
        """Reach ``folder`` (a real path: links resolved) from itself down from now on."""
        if folder in self._allowed or self._base.holds(folder):
            return  # under the root it is reached from the root, as ever
        self._allowed[folder] = Anchor(folder)

    def _holder(self, path: str) -> Anchor:
        if self._base.holds(path):
            return self._base
        for anchor in self._allowed.values():
            if anchor.holds(path):
                return anchor
        return self._base  # refuses it: not inside the root

    def covers(self, path: str) -> bool:
        return self._base.covers(path) or any(a.covers(path) for a in self._allowed.values())

    def holds(self, path: str) -> bool:
        return self._base.holds(path) or any(a.holds(path) for a in self._allowed.values())

    def parent(self, path: str) -> tuple[int, str]:
        return self._holder(path).parent(path)

    def folder(self, path: str) -> int:
        return self._holder(path).folder(path)

    def recheck(self) -> None:
        self._base.recheck()
        for anchor in self._allowed.values():
            anchor.recheck()

    def forget(self, below: str | None = None) -> None:
        self._base.forget(below)
        for anchor in self._allowed.values():
            anchor.forget(below)

    def close(self) -> None:
        self._base.close()
        for anchor in self._allowed.values():
            anchor.close()


def install(fs: ReadOnlyFS, root: str) -> None:
    """Confine ``fs`` to ``root`` with a ``Reach``, unless it is confined already."""
    if fs.anchor is None and ANCHORED:
        fs.anchor = Reach(os.path.realpath(root))
    fs.confine(root)


def allow(fs: ReadOnlyFS, folder: str) -> bool:
    """Let ``fs`` reach ``folder`` (real) from itself down; False where it cannot (a file
    system confined without a ``Reach``, or a platform without folder descriptors,
    where every path is reached by name)."""
    if isinstance(fs.anchor, Reach):
        fs.anchor.allow(folder)
        return True
    return fs.anchor is None and not ANCHORED
