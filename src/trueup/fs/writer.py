"""The writer apply is handed: it wraps the read-only view and stages every write.

Writes are staged as temp files beside their targets and made durable in
batches (one sync of the file system, then the renames, then one fsync per
touched folder), which is as safe as fsync-per-file and much cheaper for big
trees. A folder that does not exist yet is staged whole: made under a temp
name beside where it goes, its files written in it under their own names,
flushed with the rest, and renamed into place (never over anything that
appeared there) at commit, so its files appear all at once with it. A killed
run's temp folder is swept by recover or abandon like a temp file
(``RollbackStore.sweep_temp_files``).

Below the root every effect (create, write, rename, unlink, mkdir, chmod,
chown, read-back) is made relative to a folder descriptor of the view's
anchor; the folders a batch used are checked again right before its renames
and forgotten after them, so a folder swapped for a link while the run is
under way fails the run (``OutsideRoot``) instead of redirecting it.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import os
import stat
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from trueup.anchor import O_DIR, O_NOFOLLOW, OutsideRoot, named
from trueup.crashpoints import reach
from trueup.errors import ConflictError
from trueup.fs.view import ABSENT_OUTCOME, TEMP_MARK, Entry, ReadOnlyFS
from trueup.fsops import (
    DEFAULT_MAX_FILE_BYTES,
    POSIX_PATHS,
    SYNCFS_BATCH,
    create_temp,
    name_of,
    parent_of,
    rename_exclusive,
    syncfs_all,
    syncfs_fd,
)
from trueup.statcache import StatCache, Witness, witness_of

_EUID = os.geteuid() if hasattr(os, "geteuid") else -1
# A temp name adds ".", the mark, the run id and a counter (~50 bytes) to the target's.
_LONG_NAME = 160
_O_READ = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)


@dataclass(slots=True)
class _Staged:
    temp: str
    final: str
    #: A real folder (not a link to one) is where the file goes: removed at commit.
    replaces_dir: bool = False
    #: The target was absent when planned: the rename refuses to replace anything.
    exclusive: bool = False
    #: Where it waits: beside its target (""), in the nearest folder there is until
    #: its own is made at commit (DEFERRED), or under its own name in a folder this
    #: batch makes whole and renames into place at commit (IN_NEW_FOLDER).
    how: str = ""
    #: A regular file (flushed before its rename), not a link.
    is_file: bool = True


#: A staged file whose folder is made at commit, once the file in its way, removed
#: by the same batch, is gone.
DEFERRED = "deferred"
#: A staged file in a folder that did not exist: made under a temp name, with the
#: files in it under their own names, and renamed into place whole at commit.
IN_NEW_FOLDER = "in-new-folder"


#: Where a staged file or link is made: its folder, and how (``_Staged.how``). A
#: plain tuple: a named one costs a Python call to make, once per file.
_Place = tuple[str, str]


class TargetAppeared(ConflictError):
    """Something appeared at a target planned absent; nothing was put over it."""

    def __init__(self, path: str, what: str = "appeared") -> None:
        super().__init__(
            f"{path} {what} after the plan was computed; it was left as it is",
            hint="compute the plan again and review it",
        )
        self.path = path


class WritableFS:
    """Writes staged beside their targets and committed durably in batches; reads as
    the view it wraps (composition, as chezmoi's System wrappers: the writer is the
    view plus writing, never a view that happens to write)."""

    def __init__(
        self,
        cache: StatCache | None = None,
        max_file_bytes: int = DEFAULT_MAX_FILE_BYTES,
        tag: str = "",
    ) -> None:
        #: What it reads with, as observation would, and where its anchor is.
        self.view = ReadOnlyFS(cache, max_file_bytes, observes_only=False)
        self.tag = tag or str(os.getpid())
        self._staged: list[_Staged] = []
        # Paths to remove at commit, in order (a dict: looked up by ``_place`` too).
        self._removals: dict[str, None] = {}
        # What each staged path will hold after commit (see ``outcomes``).
        self._outcomes: dict[str, str] = {}
        self._prunes: list[tuple[str, str]] = []
        self._dirs: set[str] = set()
        # Folders seen to exist: a tree of 10,000 files has 100 parents to check.
        self._present: set[str] = set()
        # Folders this batch creates, by where they are made until commit: the
        # outermost of each under a temp name (``_new_folders``), renamed into place.
        self._making: dict[str, str] = {}
        self._new_folders: list[tuple[str, str]] = []  # (temp, final)
        # How each path kept for a restore looked then (``kept_as``): a replacement or
        # a removal is only committed over what the run kept.
        self._kept: dict[str, Witness] = {}
        # Who owns each folder written into (only looked up when running as root).
        self._owners: dict[str, tuple[int, int]] = {}
        self._counter = 0
        self._temp_mark = f"{TEMP_MARK}{self.tag}-"

    # -- reading: as the view reads --------------------------------------------
    @property
    def cache(self) -> StatCache:
        return self.view.cache

    @property
    def max_file_bytes(self) -> int:
        return self.view.max_file_bytes

    def confine(self, root: Path | str) -> None:
        self.view.confine(root)

    def allow(self, folder: str) -> bool:
        return self.view.allow(folder)

    def allowed(self) -> list[str]:
        return self.view.allowed()

    def close(self) -> None:
        self.view.close()

    def lstat(self, path: Path | str) -> os.stat_result | None:
        return self.view.lstat(path)

    def read_bytes(self, path: Path | str, st: os.stat_result | None = None) -> bytes:
        return self.view.read_bytes(path, st)

    def read_expected(self, path: Path | str, digest: str) -> bytes:
        return self.view.read_expected(path, digest)

    def digest_file(self, path: Path | str, st: os.stat_result | None = None) -> str:
        return self.view.digest_file(path, st)

    def readlink(self, path: Path | str) -> str:
        return self.view.readlink(path)

    def held_at(self, path: str) -> str:
        return self.view.held_at(path)

    def entry(self, path: Path | str, st: os.stat_result | None = None) -> Entry | None:
        return self.view.entry(path, st)

    def names(self, folder: str) -> list[str]:
        return self.view.names(folder)

    def listing(self, root: Path | str, most: int) -> list[str] | None:
        return self.view.listing(root, most)

    def walk(self, root: Path | str, big: bool = False) -> dict[str, Entry]:
        return self.view.walk(root, big)

    # -- writing ----------------------------------------------------------------
    def temp_path(self, final: str, beside: str | None = None) -> str:
        """A fresh temp name for ``final``, in its folder (or in ``beside``)."""
        self._counter += 1
        if POSIX_PATHS:  # os.path.split, without its normalising of the folder
            folder, _, name = final.rpartition("/")
        else:
            folder, name = os.path.split(final)
        folder = folder if beside is None else beside
        # The temp name must fit NAME_MAX (255) too; a character is at most 4 bytes,
        # so most names need no encoding to know.
        if len(name) * 4 > _LONG_NAME and len(name.encode()) > _LONG_NAME:
            name = hashlib.sha256(name.encode()).hexdigest()[:32]
        return f"{folder}{os.sep}.{name}{self._temp_mark}{self._counter}"

    def _isdir(self, path: str) -> bool:
        try:
            return stat.S_ISDIR(self.view.lstat_strict(path).st_mode)
        except (FileNotFoundError, NotADirectoryError):
            return False

    def _leads_to_folder(self, path: str) -> bool:
        """Whether ``path`` is a folder, or a link to one inside the root (as
        ``os.path.isdir``, the link followed by the anchor: one leading out raises
        ``OutsideRoot``). A folder to write into may be reached through such a link."""
        anchor = self.view.anchor
        if anchor is None or not anchor.holds(path):
            return os.path.isdir(path)
        try:
            anchor.folder(path)
        except (FileNotFoundError, NotADirectoryError):
            return False
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                return False
            raise
        return True

    def _exists(self, path: str) -> bool:
        try:
            self.view.lstat_strict(path)
        except (FileNotFoundError, NotADirectoryError):
            return False
        return True

    def _mkdir(self, path: str) -> None:
        folder, name = self.view.at(path)
        with _naming(path):
            os.mkdir(name, dir_fd=folder)

    def _place(self, final: str) -> _Place:
        """Where to stage ``final``: beside it when its folder exists; else in the folder
        this batch makes for it, under a temp name until commit (the files in it need no
        temp names of their own, nor a rename each); else, where a file this batch
        removes is in the way of its folder, in the nearest folder there is."""
        parent = parent_of(final)
        self._dirs.add(parent)
        if parent in self._present:
            return parent, ""
        making = self._making.get(parent)
        if making is not None:
            return making, IN_NEW_FOLDER
        if self._leads_to_folder(parent):
            self._present.add(parent)
            return parent, ""
        missing = []
        current = parent
        while making is None and not self._leads_to_folder(current):
            if self._exists(current):
                if current in self._removals:
                    # A file becoming a folder (a restructured tree): it goes first, at commit.
                    return os.path.dirname(current), DEFERRED
                # Planned as a folder to create; something else took the place since.
                raise ConflictError(
                    f"{current}: something that is not a folder is where trueup must create "
                    "one; it was left as it is",
                    hint="compute the plan again and review it",
                )
            missing.append(current)
            current = os.path.dirname(current)
            making = self._making.get(current)
        if making is None:  # ``current`` exists: the outermost missing folder is new
            outermost = missing.pop()
            making = self._new_folder(outermost)
            current = outermost
        for folder in reversed(missing):  # outermost first
            inside = making + folder[len(current) :]
            self._mkdir(inside)
            self._making[folder] = inside
            self._own(inside, os.path.dirname(inside))
        return self._making[parent], IN_NEW_FOLDER

    def _new_folder(self, final: str) -> str:
        """Make the folder ``final`` under a temp name beside it; renamed in at commit."""
        temp = self.temp_path(final)
        # Staged before it exists, as a temp file is.
        self._new_folders.append((temp, final))
        self._mkdir(temp)
        self._making[final] = temp
        self._dirs.add(os.path.dirname(final))
        self._own(temp, os.path.dirname(final))
        return temp

    def _own(self, folder: str, parent: str) -> None:
        """A folder made for a person is theirs, as the files in it (when run as root)."""
        if _EUID == 0:
            owner = self._folder_owner(parent)
            self._owners[folder] = owner
            if owner != (0, 0):
                at, name = self.view.at(folder)
                os.chown(name, *owner, dir_fd=at, follow_symlinks=False)

    def _make_deferred(self) -> None:
        """Make the folders deferred staged files wait for, now that what was in their
        way is removed (they are renamed into them from where they wait)."""
        for staged in self._staged:
            if staged.how != DEFERRED:
                continue
            parent = os.path.dirname(staged.final)
            if parent in self._present:
                continue
            missing = []
            current = parent
            while not self._leads_to_folder(current):
                missing.append(current)
                current = os.path.dirname(current)
            for folder in reversed(missing):  # outermost first
                self._mkdir(folder)
                self._own(folder, os.path.dirname(folder))
                self._dirs.add(os.path.dirname(folder))
            self._present.update(missing)

    def _rename_new_folders(self) -> None:
        """Put the folders this batch made in place, whole; never over anything there."""
        for temp, final in self._new_folders:
            self._rename_exclusive(temp, final)
            self._forget(temp)
        self._present.update(self._making)
        self._new_folders.clear()  # in place: nothing of them is for discard() to remove
        self._making.clear()

    def write(
        self,
        path: Path | str,
        data: bytes,
        executable: bool = False,
        mode: int | None = None,
        digest: str | None = None,
        exclusive: bool = False,
    ) -> None:
        """Stage ``data`` for ``path``; ``mode`` (exact bits) wins over ``executable``.

        ``digest``: the sha256 of ``data`` when the caller knows it already.
        ``exclusive``: ``path`` was planned absent, and commit refuses (with
        ``TargetAppeared``) to put the file over anything found there then.
        """
        final = os.fspath(path)
        self.view.check_size(final, len(data))
        digest = digest or hashlib.sha256(data).hexdigest()
        self._stage_file(final, data, digest, executable, mode, exclusive)

    def copy(
        self,
        path: Path | str,
        source: str,
        digest: str,
        executable: bool = False,
        mode: int | None = None,
        exclusive: bool = False,
    ) -> None:
        """Stage the bytes of ``source`` for ``path``, as ``write`` would stage them,
        refused (``ConflictError``) unless they hash to ``digest``, the planned content
        (or the source still has the stat under which the stat cache knows that digest:
        the rule the plan itself trusted, so 10,000 sources are not hashed twice)."""
        data = self.view.read_expected(source, digest)
        self._stage_file(os.fspath(path), data, digest, executable, mode, exclusive)

    def _stage_file(
        self,
        final: str,
        data: bytes,
        digest: str,
        executable: bool,
        mode: int | None,
        exclusive: bool,
    ) -> None:
        place = self._place(final)
        folder, how = place
        # Nothing to look at where the plan saw nothing (the exclusive rename refuses
        # whatever came since), or in a folder this batch makes.
        fresh = exclusive or bool(how)
        current = None if fresh else self.view.lstat(final)
        if mode is None:
            # Keep the read/write bits a regular file already has; anything else
            # (new, or a link whose bits are always 0777) gives 0644.
            if current is not None and stat.S_ISREG(current.st_mode):
                base = stat.S_IMODE(current.st_mode) & 0o666
            else:
                base = 0o644
            mode = base | 0o111 if executable else base
        temp = self._staged_name(final, place)
        # Staged before it exists: a signal is handled between any two steps, and
        # one right after the file is created must still leave discard() its name.
        self._staged.append(_Staged(temp, final, _is_dir(current), exclusive, how))
        owner = self._owner(final, current, folder)
        at, name = self.view.at(temp)
        try:  # not _naming: this runs once per file
            create_temp(name, data, mode, owner, dir_fd=at)
        except OSError as exc:
            raise named(exc, temp) from None
        reach("temp-created")
        self._outcomes[final] = "file:" + digest

    def _staged_name(self, final: str, place: _Place) -> str:
        folder, how = place
        if how == IN_NEW_FOLDER:  # its own name: the folder is the temp
            return folder + os.sep + name_of(final)
        return self.temp_path(final, folder if how else None)

    def symlink(self, path: Path | str, link: str, exclusive: bool = False) -> None:
        """Stage a symlink at ``path``; ``exclusive`` as for ``write``."""
        final = os.fspath(path)
        place = self._place(final)
        folder, how = place
        current = None if how else self.view.lstat(final)
        temp = self._staged_name(final, place)
        # Staged before it exists, as in write.
        self._staged.append(_Staged(temp, final, _is_dir(current), exclusive, how, is_file=False))
        at, name = self.view.at(temp)
        with _naming(temp):
            os.symlink(link, name, dir_fd=at)
        owner = self._owner(final, current, folder)
        if owner is not None:
            os.chown(name, *owner, dir_fd=at, follow_symlinks=False)
        self._outcomes[final] = "link:" + link

    def remove(self, path: Path | str, prune_up_to: Path | str | None = None) -> None:
        """Stage a removal; with ``prune_up_to``, empty parents below it go too."""
        self._removals[os.fspath(path)] = None
        self._outcomes[os.fspath(path)] = ABSENT_OUTCOME
        if prune_up_to is not None:
            self.prune(os.path.dirname(os.fspath(path)), prune_up_to)

    def prune(self, folder: Path | str, stop: Path | str) -> None:
        """Stage removing ``folder`` and its parents, while empty, up to and including ``stop``."""
        self._prunes.append((os.fspath(folder), os.fspath(stop)))

    def make_folder(self, path: str) -> None:
        """Make the folder ``path`` now, and any missing above it (a restore puts a
        folder back where the run had put a file or a link)."""
        if self._isdir(path):
            return
        parent = os.path.dirname(path)
        if parent != path and not self._leads_to_folder(parent):
            self.make_folder(parent)
        if self._exists(path):
            self.unlink(path)
        self._mkdir(path)

    def unlink(self, path: str) -> None:
        """Remove the file or link at ``path`` now."""
        folder, name = self.view.at(path)
        with _naming(path):
            os.unlink(name, dir_fd=folder)

    def rmdir(self, path: str) -> None:
        """Remove the empty folder ``path`` now."""
        folder, name = self.view.at(path)
        with _naming(path):
            os.rmdir(name, dir_fd=folder)
        self._forget(path)

    def chmod_folder(self, path: str, mode: int) -> None:
        """Give the folder at ``path`` (never what a link there leads to) ``mode`` now."""
        at, name = self.view.at(path)
        fd = os.open(name, O_DIR | O_NOFOLLOW, dir_fd=at)
        try:
            os.fchmod(fd, mode)
        finally:
            os.close(fd)

    def remove_any(self, path: str) -> None:
        """Remove whatever is at ``path`` (a folder with all it holds); nothing there is fine."""
        try:
            st = self.view.lstat_strict(path)
        except (FileNotFoundError, NotADirectoryError):
            return
        folder, name = self.view.at(path)
        if stat.S_ISDIR(st.st_mode):
            import shutil

            shutil.rmtree(name, dir_fd=folder)
            self._forget(path)
        else:
            os.unlink(name, dir_fd=folder)

    def _forget(self, folder: str) -> None:
        if self.view.anchor is not None:
            self.view.anchor.forget(folder)

    def _rename_exclusive(self, temp: str, final: str) -> None:
        src, src_name = self.view.at(temp)
        dst, dst_name = self.view.at(final)
        try:
            with _naming(final):
                rename_exclusive(src_name, dst_name, src, dst)
        except FileExistsError:
            raise TargetAppeared(final) from None

    def _owner(
        self, final: str, current: os.stat_result | None, folder: str | None = None
    ) -> tuple[int, int] | None:
        """Whose the written file is to be, when trueup runs as root (sudo, a worker
        applying into a person's home): the replaced file's owner, else the owner of
        the folder it goes in (``folder``: the nearest there is, when that one is made
        at commit). ``None`` when there is nothing to change."""
        if _EUID != 0:
            return None  # nobody else's files can be written as anybody else's
        if current is not None and not stat.S_ISDIR(current.st_mode):
            owner = (current.st_uid, current.st_gid)
        else:
            owner = self._folder_owner(folder or os.path.dirname(final))
        return None if owner == (0, 0) else owner

    def _folder_owner(self, folder: str) -> tuple[int, int]:
        found = self._owners.get(folder)
        if found is None:
            if self.view.anchor is not None and self.view.anchor.holds(folder):
                st = os.fstat(self.view.anchor.folder(folder))
            else:
                st = os.stat(folder)
            found = self._owners[folder] = (st.st_uid, st.st_gid)
        return found

    def outcomes(self) -> dict[str, str]:
        """What each staged path will hold once committed (``held_at`` spelling).

        Kept with the rollback material before commit, so a recovery can tell
        a path this run wrote from one somebody changed after it stopped.
        """
        return dict(self._outcomes)

    def commit(self) -> None:
        """Make every staged change durable and visible, in a crash-safe order.

        Temp contents reach the disk before any rename makes them visible, and
        the renames reach the disk before this returns.
        """
        if self.view.anchor is not None:
            # The folders the batch wrote into are still the ones under the root.
            self.view.anchor.recheck()
        if self._staged:
            self._flush_staged()
            reach("temp-written")
        self._unchanged()  # after the sync, the longest wait
        # Removals first: what a removed file or folder leaves free may be where a
        # renamed file goes (a tree restructured: x/ becomes x, or x becomes x/).
        for path in self._removals:
            self.remove_any(path)
            self._dirs.add(os.path.dirname(path))
        for folder, stop in sorted(self._prunes, reverse=True):
            self.remove_empty_dirs(folder, stop)
        self._make_deferred()
        self._rename_new_folders()
        self._rename_all()
        self._sync_dirs(self._dirs)
        self._end_batch()
        # What is read or written next (verification, the next batch) is reached from
        # the root afresh. A commit that failed keeps the folders it had for discard,
        # which removes the temp files where they are, even in a folder moved away.
        self._forget_all()

    def _forget_all(self) -> None:
        if self.view.anchor is not None:
            self.view.anchor.forget()

    def _end_batch(self) -> None:
        """Forget what the batch staged, once it is committed or discarded."""
        self._staged.clear()
        self._new_folders.clear()
        self._making.clear()
        self._removals.clear()
        self._prunes.clear()
        self._dirs.clear()
        self._outcomes.clear()
        self._kept.clear()
        self._present.clear()

    def _flush_staged(self) -> None:
        """Flush the staged temp files, and the folders made whole that name them."""
        files = [s.temp for s in self._staged if s.is_file and s.how != IN_NEW_FOLDER]
        inside = [s.temp for s in self._staged if s.is_file and s.how == IN_NEW_FOLDER]
        made = list(self._making.values())
        everything = files + inside
        if len(everything) >= SYNCFS_BATCH and self._syncfs({parent_of(p) for p in everything}):
            return
        for path in everything:
            self._fsync(path, _O_READ | O_NOFOLLOW)
        for path in made:
            self._fsync(path, O_DIR | O_NOFOLLOW)

    def _sync_dirs(self, folders: Iterable[str]) -> None:
        """Flush folder entries: one syncfs per file system for many, fsync each for a few."""
        folders = sorted(set(folders))
        if len(folders) >= SYNCFS_BATCH and self._syncfs(folders):
            return
        for folder in folders:
            with contextlib.suppress(OSError):
                self._fsync(folder, O_DIR | O_NOFOLLOW)

    def _fsync(self, path: str, flags: int) -> None:
        at, name = self.view.at(path)
        fd = os.open(name, flags, dir_fd=at)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)

    def _syncfs(self, folders: Iterable[str]) -> bool:
        """syncfs(2) on the file systems the root's ``folders`` are on; False where there
        is none. Each is looked up by descriptor; the root's own one covers the rest."""
        if self.view.anchor is None:
            return syncfs_all(folders)
        devices: dict[int, int] = {}
        for folder in folders:
            try:
                fd = self.view.anchor.folder(folder)
            except OSError:
                continue
            devices.setdefault(os.fstat(fd).st_dev, fd)
        return all(syncfs_fd(fd) for fd in devices.values())

    def kept_as(self, path: str, st: os.stat_result | None) -> None:
        """``path`` was kept for a restore as ``st`` shows it: commit holds it to that."""
        self._kept.setdefault(path, witness_of(st))

    def _unchanged(self) -> None:
        """Refuse to replace or remove a path that changed since it was kept for a restore.

        An edit made while the batch was being prepared would otherwise be written
        over (and a restore would then take it for the run's own write).
        """
        kept = self._kept
        for final in [*(s.final for s in self._staged if not s.exclusive), *self._removals]:
            if final in kept and witness_of(self.view.lstat(final)) != kept[final]:
                raise TargetAppeared(final, "changed")

    def _rename_all(self) -> None:
        # Files in a new folder are in place with it (``_rename_new_folders``).
        for staged in self._staged:
            if staged.how == IN_NEW_FOLDER:
                continue
            if staged.exclusive:
                self._rename_exclusive(staged.temp, staged.final)
                continue
            if staged.replaces_dir:
                self.remove_any(staged.final)
            src, src_name = self.view.at(staged.temp)
            dst, dst_name = self.view.at(staged.final)
            with _naming(staged.final):
                os.replace(src_name, dst_name, src_dir_fd=src, dst_dir_fd=dst)

    def discard(self) -> None:
        """Drop staged temp files (used when a batch fails before commit)."""
        try:
            for staged in self._staged:
                with contextlib.suppress(OutsideRoot):
                    self.remove_any(staged.temp)
            for temp, _ in self._new_folders:
                with contextlib.suppress(OutsideRoot):
                    self.remove_any(temp)
        finally:
            self._end_batch()
            self._forget_all()

    def remove_empty_dirs(self, folder: Path | str, stop: Path | str) -> None:
        """Remove ``folder`` and its parents while empty, down to and including ``stop``."""
        current = os.fspath(folder)
        top = os.fspath(stop)
        while current == top or current.startswith(top + os.sep):
            try:
                self.rmdir(current)
            except OSError:
                return
            current = os.path.dirname(current)
            self._dirs.add(current)


@contextlib.contextmanager
def _naming(path: str) -> Iterator[None]:
    """An error of the calls inside names ``path`` whole (``anchor.named``)."""
    try:
        yield
    except OSError as exc:
        raise named(exc, path) from None


def _is_dir(st: os.stat_result | None) -> bool:
    return st is not None and stat.S_ISDIR(st.st_mode)
