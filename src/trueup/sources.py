"""Where a profile's declared sources are, spelt one way for everything that reads them.

Resolution reads and hashes each ``source``, and the stat cache remembers
it by name: every reader spells a source as this module does, so what one
read, the others look up by that name.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

from trueup.fsops import POSIX_PATHS


def source_path(base_dir: Path | str, source: str) -> str:
    """Where a declared ``source`` is: absolute and normal (``ReadOnlyFS.follow`` need
    not spell it again).

    ``base_dir`` is absolute and normal (a profile's folder). A plain relative
    source (no ".", "..", "//" or trailing "/") is then normal once joined to
    it, which saves normalising 10,000 paths; and as that is a few string
    tests, it is not memoised (a memo would hash the folder's Path each call).
    """
    base = os.fspath(base_dir)
    if (
        POSIX_PATHS
        and source
        and "/." not in f"/{source}"
        and "//" not in source
        and source[0] != "/"
        and source[-1] != "/"
        and base[-1] != "/"
    ):
        return f"{base}/{source}"
    return os.path.abspath(os.path.join(base, source))


class SourceBounds:
    """Where a profile may read sources from: its own folder, and the folders it
    names in ``allow_sources_outside``.

    A profile is often somebody else's (a published one, a repository's): a
    ``source = "/home/me/.ssh/id_ed25519"`` or a link in a skill folder to
    ``~/.aws`` would copy a secret into a target, or into a follower's
    revision. Symlinks are resolved before the comparison, so a link inside
    the profile's folder leading out of it is out of it. Real folders are
    looked up once each: ten thousand sources in a hundred folders cost a
    hundred ``realpath`` calls, not ten thousand.
    """

    def __init__(self, base_dir: Path | str, allowed: Iterable[str] = ()) -> None:
        base = os.path.abspath(base_dir)
        self.base = base
        self.allowed = tuple(allowed)
        self._roots = tuple(
            dict.fromkeys(
                os.path.realpath(os.path.join(base, os.path.expanduser(root)))
                for root in (base, *self.allowed)
            )
        )
        self._real_folders: dict[str, str] = {}
        # Per folder (as declared): whether its real folder is where sources may be.
        self._folders_inside: dict[str, bool] = {}

    def real(self, path: str) -> str:
        """Where ``path`` (absolute) really is, every symlink on the way resolved."""
        folder, name = os.path.split(path)
        real = os.path.join(self._real_folder(folder), name)
        return os.path.realpath(real) if os.path.islink(real) else real

    def holds(self, path: str) -> bool:
        """Whether ``path`` (absolute), symlinks resolved, is where sources may be."""
        try:
            folder, _, name = path.rpartition("/")
            if (
                POSIX_PATHS
                and name not in ("", ".", "..")
                and self._holds_folder(folder or "/")
                and not os.path.islink(path)
            ):
                # The common case in a few string steps: a file, not a link, in a
                # folder already judged inside (one lstat, no realpath).
                return True
            return self._inside(self.real(path))
        except ValueError:  # a NUL: no file is there, and whoever reads it says so
            return True

    def _holds_folder(self, folder: str) -> bool:
        inside = self._folders_inside.get(folder)
        if inside is None:
            inside = self._folders_inside[folder] = self._inside(self._real_folder(folder))
        return inside

    def holds_link(self, where: str, link: str) -> bool:
        """Whether the symlink at ``where`` (in a source), reading ``link``, leads to
        where sources may be: its copy is installed leading there too."""
        try:
            leads = os.path.realpath(os.path.join(self._real_folder(os.path.dirname(where)), link))
        except ValueError:
            return False
        return self._inside(leads)

    def _real_folder(self, folder: str) -> str:
        real = self._real_folders.get(folder)
        if real is None:
            real = self._real_folders[folder] = os.path.realpath(folder)
        return real

    def _inside(self, real: str) -> bool:
        return any(
            real == root or real.startswith(root if root.endswith(os.sep) else root + os.sep)
            for root in self._roots
        )

    def check(self, declared: str, source: str) -> None:
        """Refuse (``UsageError``) the ``source`` spelt ``declared`` if it is outside,
        before anything reads it."""
        if not self.holds(source):
            self._refuse(f"{declared!r} is outside the profile's folder", source)

    def check_links(self, declared: str, links: Iterable[tuple[str, str]]) -> None:
        """Refuse the first link in the ``declared`` source that leads outside."""
        for where, link in links:
            if not self.holds_link(where, link):
                self._refuse(
                    f"{declared!r} holds a symlink {where} -> {link} that leads outside "
                    "the profile's folder",
                    os.path.join(os.path.dirname(where), link),
                )

    def _refuse(self, problem: str, path: str) -> None:
        from trueup.errors import UsageError

        real = os.path.realpath(path)
        folder = real if os.path.isdir(real) else os.path.dirname(real)
        named = f" or the folders it allows ({', '.join(self.allowed)})" if self.allowed else ""
        raise UsageError(
            f"field 'source': {problem} {self.base}{named}: it is {real}",
            hint="a profile reads sources only from its own folder unless it names others "
            "explicitly; to allow this one, add to [profile]: "
            f'allow_sources_outside = ["{folder}"]',
        )
