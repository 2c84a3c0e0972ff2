"""Directory descriptors opened from the root down: no effect leaves the root.

A path checked once and then used by name can be redirected between the
check and the use: a folder above a target swapped for a symlink sends the
write wherever the link points. So every effect under a root is made
relative to a descriptor of its folder, and that descriptor is reached from
the root one name at a time, never following a link the kernel would follow
blindly (``O_NOFOLLOW``). A symlinked folder is followed by reading the link
and walking its text the same way, so a link that stays inside the root
(``skills`` -> ``real/skills``) still works, and one that leads out, or a
``..`` above the root, is refused with ``OutsideRoot``.

Descriptors are remembered until ``forget``: a batch of 10,000 files in 100
folders opens 100 chains. A writer checks them again right before it makes
anything visible (``recheck``): a folder replaced since it was opened (moved
away, a link put in its place) fails the run instead of being written into.
"""

from __future__ import annotations

import errno
import os
import stat

from trueup.errors import ApplyFailedError

O_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
#: A folder, opened to reach what is in it; never through a link.
O_DIR = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_CLOEXEC", 0)
_O_DIR = O_DIR | O_NOFOLLOW
#: Whether this platform reaches paths by folder descriptors (not Windows).
ANCHORED = os.open in os.supports_dir_fd and os.scandir in os.supports_fd
_MAX_LINKS = 40  # as the kernel's own limit on a chain of symlinks
_HELD = 64  # descriptors kept open: a batch's folders, not a whole tree's


def named(exc: OSError, path: str) -> OSError:
    """``exc`` naming ``path`` whole: a call relative to a folder descriptor names only
    the last name, and a message must say which file."""
    if exc.filename is not None and not os.fsdecode(exc.filename).startswith("/"):
        exc.filename = path
    return exc


class OutsideRoot(ApplyFailedError):
    """A path under the root leads outside it now (a link, or a folder swapped)."""

    def __init__(self, path: str, why: str) -> None:
        super().__init__(
            f"{path}: {why}; trueup writes and reads only inside the root, so nothing was "
            "done there",
            hint="look at who changed that folder while trueup ran, put it back as a plain "
            "folder, then plan again",
        )
        self.path = path


class Anchor:
    """The folders below one root, each reached from the root by descriptors."""

    def __init__(self, root: str) -> None:
        self.root = os.path.realpath(root)
        self._prefix = self.root.rstrip("/") + "/"
        self._root_fd: int | None = None
        # Open descriptors by folder, least recently used first; and what every folder
        # reached since the last ``forget`` was (device, inode), held or not.
        self._dirs: dict[str, int] = {}
        self._seen: dict[str, tuple[int, int]] = {}
        # Folders outside the root a resource lets its links lead into (``allow``),
        # each reached from itself down, as the root is.
        self._others: dict[str, Anchor] = {}

    def covers(self, path: str) -> bool:
        """Whether ``path`` (absolute, as the resolver spells targets) is below the root,
        or below a folder ``allow``ed."""
        return path.startswith(self._prefix) or self._other(path) is not None

    def holds(self, path: str) -> bool:
        """Whether ``path`` is the root or below it (or an allowed folder, or below it)."""
        return path == self.root or path.startswith(self._prefix) or self._other(path) is not None

    def allow(self, folder: str) -> None:
        """Reach ``folder`` (real: links resolved), outside the root, from itself down from
        now on, as the root is; a folder under the root is reached from the root, as ever."""
        if folder not in self._others and not self.holds(folder):
            self._others[folder] = Anchor(folder)

    @property
    def allowed(self) -> list[str]:
        """The folders ``allow``ed so far (a run's rollback material names them)."""
        return list(self._others)

    def _other(self, path: str) -> Anchor | None:
        for other in self._others.values():
            if other.holds(path):
                return other
        return None

    def at(self, path: str) -> tuple[int, str] | None:
        """The descriptor of the folder holding ``path`` and its last name, when ``path``
        is below the root or a folder ``allow``ed (``covers``); else ``None``. One call:
        every read and write below the root asks it."""
        if not path.startswith(self._prefix) and (not self._others or self._other(path) is None):
            return None
        folder, _, name = path.rpartition("/")
        return self.folder(folder), name

    def folder(self, path: str) -> int:
        """A descriptor of the folder ``path`` (the root or below it), opened from the
        root down; raises as ``open`` would (``FileNotFoundError``,
        ``NotADirectoryError``, ``PermissionError``) or ``OutsideRoot``.

        The descriptor stays the anchor's: use it at once, never close it.
        """
        if self._others and path != self.root and not path.startswith(self._prefix):
            other = self._other(path)
            if other is not None:
                return other.folder(path)
        found = self._dirs.pop(path, None)
        if found is not None:
            self._dirs[path] = found  # last: the most recently used goes last
            return found
        try:
            found = self._open(path)
        except OSError as exc:
            raise named(exc, path) from None
        st = os.fstat(found)
        seen = self._seen.setdefault(path, (st.st_dev, st.st_ino))
        if seen != (st.st_dev, st.st_ino):
            os.close(found)
            raise OutsideRoot(path, "the folder was replaced while trueup ran")
        if len(self._dirs) >= _HELD:  # the least recently used goes: never one just handed out
            os.close(self._dirs.pop(next(iter(self._dirs))))
        self._dirs[path] = found
        return found

    def _root(self) -> int:
        if self._root_fd is None:
            self._root_fd = os.open(self.root, O_DIR)  # the root itself may be reached by a link
        return self._root_fd

    def _open(self, path: str) -> int:
        if path == self.root or path + "/" == self._prefix:
            return os.dup(self._root())
        if not self.covers(path):
            raise OutsideRoot(path, f"not inside the root {self.root}")
        todo = [p for p in path[len(self._prefix) :].split("/") if p not in ("", ".")]
        todo.reverse()  # a stack: the next name on top
        real: list[str] = []  # names walked so far, every one a real folder
        fd = os.dup(self._root())
        hops = 0
        try:
            while todo:
                name = todo.pop()
                if name == "..":
                    if not real:
                        raise OutsideRoot(path, f"a '..' leads above the root {self.root}")
                    real.pop()
                    os.close(fd)
                    fd = self._walk(real, path)
                    continue
                try:
                    child = os.open(name, _O_DIR, dir_fd=fd)
                except OSError as exc:
                    if exc.errno not in (errno.ELOOP, errno.ENOTDIR, errno.EMLINK):
                        raise
                    st = os.lstat(name, dir_fd=fd)
                    if not stat.S_ISLNK(st.st_mode):
                        raise NotADirectoryError(
                            errno.ENOTDIR, os.strerror(errno.ENOTDIR), path
                        ) from None
                    hops += 1
                    if hops > _MAX_LINKS:
                        raise OSError(errno.ELOOP, os.strerror(errno.ELOOP), path) from None
                    link = os.readlink(name, dir_fd=fd)
                    names = self._link_names(link, path)
                    if link.startswith("/"):
                        real = []
                        os.close(fd)
                        fd = os.dup(self._root())
                    todo.extend(reversed(names))
                    continue
                os.close(fd)
                fd = child
                real.append(name)
        except BaseException:
            os.close(fd)
            raise
        return fd

    def _walk(self, names: list[str], path: str) -> int:
        """A descriptor of the real folder ``names`` below the root (no link among them)."""
        fd = os.dup(self._root())
        for name in names:
            try:
                child = os.open(name, _O_DIR, dir_fd=fd)
            except OSError as exc:
                if exc.errno in (errno.ELOOP, errno.ENOTDIR):
                    raise OutsideRoot(path, "a folder on the way was replaced") from None
                raise
            finally:
                os.close(fd)
            fd = child
        return fd

    def _link_names(self, link: str, path: str) -> list[str]:
        """The names a link's text walks, from the root when it is absolute."""
        if not link.startswith("/"):
            return link.split("/")
        # An absolute link names the root as the kernel spells it; any link on the
        # way to the root itself (/tmp -> /private/tmp) is the root's own business.
        real = os.path.realpath(os.path.dirname(link)) + "/" + os.path.basename(link)
        if real.rstrip("/") == self.root:
            return []
        if not self.covers(real):
            raise OutsideRoot(path, f"a symlink on the way leads to {link}, outside the root")
        return real[len(self._prefix) :].split("/")

    def recheck(self) -> None:
        """Refuse, with ``OutsideRoot``, if any folder reached since the last ``forget``
        is not what its path leads to now."""
        for other in self._others.values():
            other.recheck()
        for path, (dev, ino) in list(self._seen.items()):
            try:
                fresh = self._open(path)
            except OSError as exc:
                why = f"the folder moved while trueup ran ({exc.strerror})"
                raise OutsideRoot(path, why) from None
            try:
                now = os.fstat(fresh)
            finally:
                os.close(fresh)
            if (now.st_dev, now.st_ino) != (dev, ino):
                raise OutsideRoot(path, "the folder was replaced while trueup ran")

    def forget(self, below: str | None = None) -> None:
        """Let go of ``below`` and everything under it (all by default): a folder removed
        or renamed must be reached afresh."""
        for other in self._others.values():
            other.forget(below)
        if below is None:
            doomed = list(self._seen)
        else:
            inside = below + "/"
            doomed = [p for p in self._seen if p == below or p.startswith(inside)]
        for path in doomed:
            del self._seen[path]
            held = self._dirs.pop(path, None)
            if held is not None:
                os.close(held)

    def close(self) -> None:
        for other in self._others.values():
            other.close()
        self.forget()
        if self._root_fd is not None:
            os.close(self._root_fd)
            self._root_fd = None
