"""The file kind: one file (or symlink) with replace, replace-if-unmodified or
append-local.

append-local keeps a marked source section and leaves every byte outside it
(the follower's own text) exactly as it was.
"""

from __future__ import annotations

import stat
from collections.abc import Mapping, Sequence
from collections.abc import Set as AbstractSet
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from trueup.canonical import sha256_hex
from trueup.errors import UsageError
from trueup.fs import ReadOnlyFS
from trueup.kinds.base import (
    BY_HAND,
    ApplyContext,
    Decision,
    Kind,
    ObserveContext,
    evidence_of,
    obstacle,
)
from trueup.kinds.content import declared_bytes, resolve_source, text_diff
from trueup.model import (
    ABSENT,
    Action,
    ActionType,
    Applied,
    Evidence,
    Observed,
    Resource,
)
from trueup.redact import seal
from trueup.sealing import is_reference, resolve_reference

if TYPE_CHECKING:
    from pydantic import BaseModel

_HTML_SUFFIXES = (".md", ".markdown", ".mdc", ".html", ".htm", ".xml")


@cache
def file_fields() -> type[BaseModel]:
    """Built on first use: a warm no-op plan never imports pydantic."""
    from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

    class FileFields(BaseModel):
        model_config = ConfigDict(extra="forbid", strict=True)

        content: str | dict[str, str] | None = Field(
            default=None,
            description='the text, or a reference to it: { env = "NAME" } or '
            '{ credential = "keyring:SERVICE/NAME" } (secret)',
        )
        source: str | None = None
        # No file system makes a link to nothing: refused here, not by a failed apply.
        link: str | None = Field(default=None, min_length=1)
        # Absent is not false: under append-local the mode is then the follower's.
        executable: bool | None = Field(
            default=None,
            description="absent: not executable, except under append-local, where the "
            "file's own mode is left as it is",
        )
        secret: bool | None = Field(
            default=None,
            description="the content is secret: never shown or stored, the file made 0600",
        )

        @field_validator("content")
        @classmethod
        def _reference(cls, content: str | dict[str, str] | None) -> Any:
            if isinstance(content, dict) and not is_reference(content):
                raise ValueError(
                    'a table here is a reference: { env = "NAME" } or '
                    '{ credential = "keyring:SERVICE/NAME" }'
                )
            return content

        @field_validator("link")
        @classmethod
        def _no_nul(cls, link: str | None) -> str | None:
            # No symlink holds a NUL either: refused at load, not by os.symlink in apply.
            if link is not None and "\0" in link:
                raise ValueError("a symlink target cannot contain a NUL character")
            return link

        @model_validator(mode="after")
        def _one_origin(self) -> FileFields:
            given = [n for n in ("content", "source", "link") if getattr(self, n) is not None]
            if len(given) != 1:
                raise ValueError("declare exactly one of content, source or link")
            return self

    return FileFields


def link_digest(link: str) -> str:
    return sha256_hex(b"symlink:" + link.encode("utf-8"))


def section_digest(text: bytes) -> str:
    return sha256_hex(text.rstrip(b"\n"))


class Markers:
    """The begin/end lines around an append-local section, in the file's own comment style."""

    BEGIN = "trueup:begin"
    END = "trueup:end"

    def __init__(self, resource_id: str, html: bool) -> None:
        if html:
            self.begin = f"<!-- {self.BEGIN} {resource_id} -->\n".encode()
            self.end = f"<!-- {self.END} {resource_id} -->\n".encode()
        else:
            self.begin = f"# {self.BEGIN} {resource_id}\n".encode()
            self.end = f"# {self.END} {resource_id}\n".encode()

    @classmethod
    def found_in(cls, data: bytes) -> bool:
        """Whether ``data`` holds a marker line of any section."""
        return any(f"{word} ".encode() in data for word in (cls.BEGIN, cls.END))

    def split(self, data: bytes) -> tuple[str, bytes, bytes, bytes]:
        """(status, before, section, after); status is ok, missing or broken.

        A marker is a whole line, whatever its line ending (or none, last in
        the file): ``# trueup:begin path`` is not inside ``# trueup:begin path-x``.
        """
        lines = data.splitlines(keepends=True)
        begin, end = self.begin.rstrip(b"\n"), self.end.rstrip(b"\n")
        begins = [i for i, line in enumerate(lines) if line.rstrip(b"\r\n") == begin]
        ends = [i for i, line in enumerate(lines) if line.rstrip(b"\r\n") == end]
        if not begins and not ends:
            return "missing", data, b"", b""
        if len(begins) != 1 or len(ends) != 1 or ends[0] < begins[0]:
            return "broken", data, b"", b""
        first, last = begins[0], ends[0]
        return (
            "ok",
            b"".join(lines[:first]),
            b"".join(lines[first + 1 : last]),
            b"".join(lines[last + 1 :]),
        )

    def compose(self, before: bytes, section: bytes, after: bytes) -> bytes:
        if section and not section.endswith(b"\n"):
            section += b"\n"
        return before + self.begin + section + self.end + after


#: A folder where a file is declared is listed up to this many entries (see observe).
_LISTED = 64

# The decisions most files get, made once: a Decision is immutable, and a frozen
# dataclass costs a call of ``object.__setattr__`` per field to make.
_UP_TO_DATE = Decision(ActionType.NO_OP, "up to date")
_CREATE_FILE = Decision(ActionType.WRITE_FILE, "create file", exclusive=True)
_CREATE_LINK = Decision(ActionType.WRITE_FILE, "create symlink", exclusive=True)


class FileKind(Kind):
    name = "file"
    policies = ("replace", "replace-if-unmodified", "append-local")
    verify_methods = ("digest", "symlink", "command")
    #: A file holds no other targets (plan/restructure.py's PathKind).
    holds_paths = False

    def declaration_model(self) -> type[BaseModel]:
        return file_fields()

    def secret_literal(self, fields: Mapping[str, Any]) -> bool:
        return bool(fields.get("secret")) and isinstance(fields.get("content"), str)

    def resolve(
        self, fields: dict[str, Any], policy: str, base_dir: Path, fs: ReadOnlyFS
    ) -> dict[str, Any]:
        # Validated content is text, a reference table or absent: only a table is looked into.
        content = fields.get("content")
        reference = isinstance(content, dict) and is_reference(content)
        secret = bool(fields.pop("secret", False)) or reference
        if reference:
            try:
                fields["content"] = resolve_reference(fields["content"])
            except UsageError as exc:
                raise UsageError(f"field 'content': {exc.message}", hint=exc.hint) from None
        spec = resolve_source(fields, base_dir, fs)
        if secret:
            if spec.get("link") is not None:
                raise ValueError("field 'secret': a symlink holds no content to keep secret")
            # Plans, records and output hold its digest; apply opens it (declared_bytes).
            spec["secret"] = True
            if spec.get("content") is not None:
                spec["content"] = seal(spec["content"])
        if policy != "append-local":
            # The whole file is trueup's, its mode too: undeclared means not executable.
            # append-local owns only its section, so there the mode stays the follower's.
            spec.setdefault("executable", False)
        if spec.get("link") is not None:
            if policy == "append-local":
                raise ValueError("append-local needs content or source, not link")
            if fields.get("executable"):
                raise ValueError(
                    "field 'executable': a symlink has no mode of its own; "
                    "drop executable, or set it on the file the link leads to"
                )
            spec["digest"] = link_digest(spec["link"])
        elif policy == "append-local":
            section = declared_bytes(spec, fs)
            if Markers.found_in(section):
                raise ValueError(
                    "the content holds a trueup section marker line, which would break "
                    "the section it is written into"
                )
            spec["section_digest"] = section_digest(section)
        return spec

    @staticmethod
    def _markers(resource: Resource) -> Markers:
        return Markers(resource.id, resource.target.lower().endswith(_HTML_SUFFIXES))

    # -- observe ------------------------------------------------------------
    def observe(self, resource: Resource, ctx: ObserveContext) -> Observed:
        path = ctx.path_str(resource.target)
        entry = ctx.fs.entry(path)
        if entry is None:
            return ABSENT
        if entry.state == "symlink":
            return Observed("symlink", link_digest(entry.link or ""), {"link": entry.link})
        if entry.state == "directory":
            # What is in the way, when it is little: trueup's own dropped files in it
            # go first, and the file is then written in the folder's place.
            return Observed("directory", None, {"holds": ctx.fs.listing(path, _LISTED)})
        if entry.state != "file":
            return Observed(entry.state)
        if resource.policy != "append-local":
            return Observed("file", entry.digest, {"executable": entry.executable})
        status, _, section, _ = self._markers(resource).split(ctx.fs.read_bytes(path))
        return Observed(
            "file",
            section_digest(section) if status == "ok" else None,
            {"executable": entry.executable, "markers": status, "file_digest": entry.digest},
        )

    def left_empty(self, observed: Observed, removed: AbstractSet[str]) -> bool:
        holds = observed.detail.get("holds") if observed.state == "directory" else None
        return holds is not None and set(holds) <= removed

    # -- plan ---------------------------------------------------------------
    def plan(
        self,
        resource: Resource | None,
        observed: Observed,
        applied: Applied | None,
        force: bool = False,
    ) -> Decision:
        if resource is None:
            assert applied is not None
            return self._plan_removal(applied, observed)
        if resource.policy == "append-local":
            return self._plan_append_local(resource, observed, applied, force)
        if self._matches(resource, observed):
            return _UP_TO_DATE
        if observed.state in ("directory", "special", "blocked"):
            return _conflict(obstacle(observed), resource, observed, applied, BY_HAND)
        if observed.state == "absent":
            return _CREATE_LINK if resource.spec.get("link") is not None else _CREATE_FILE
        if applied is None and resource.policy == "replace":
            if _only_mode_differs(resource, observed):
                # Their bytes are the declared ones: taking the file over loses nothing.
                change = _mode_change(resource.spec)
                return Decision(
                    ActionType.WRITE_FILE, f"{change} of the existing file, already as declared"
                )
            return _replacing_theirs(resource)
        if resource.policy == "replace" or force:
            return Decision(ActionType.WRITE_FILE, f"update {_shape(resource)}")
        if applied is not None and self._as_written(observed, applied):
            return Decision(
                ActionType.WRITE_FILE, f"update {_shape(resource)} (unmodified since applied)"
            )
        why = "modified since trueup wrote it" if applied else "differs and trueup never wrote it"
        return _conflict(why, resource, observed, applied)

    def _plan_append_local(
        self, resource: Resource, observed: Observed, applied: Applied | None, force: bool
    ) -> Decision:
        desired = resource.spec["section_digest"]
        markers = observed.detail.get("markers")
        renamed = applied is not None and applied.resource.id != resource.id
        if renamed and observed.state == "file" and markers != "ok":
            # Taken over from a renamed id: its section is still marked with that id,
            # and adding one under the new id would leave two.
            assert applied is not None
            old, new = self._markers(applied.resource), self._markers(resource)
            return Decision(
                ActionType.HUMAN_ACTION,
                f"the section in {resource.target} is marked with the old id "
                f"{applied.resource.id!r}: change its marker lines to "
                f"{new.begin.decode().strip()!r} and {new.end.decode().strip()!r} "
                f"(from {old.begin.decode().strip()!r} and {old.end.decode().strip()!r}), "
                "then plan again",
            )
        if observed.state == "absent":
            return Decision(ActionType.WRITE_FILE, "create with the source section", exclusive=True)
        if observed.state != "file":
            return _conflict(obstacle(observed), resource, observed, applied, BY_HAND)
        if markers == "ok":
            if observed.digest == desired and not _mode_as_declared(resource.spec, observed):
                return Decision(ActionType.WRITE_FILE, _mode_change(resource.spec))
            if observed.digest == desired:
                return Decision(ActionType.NO_OP, "source section up to date")
            if force or (applied is not None and observed.digest == applied.digest):
                return Decision(ActionType.WRITE_FILE, "update the source section")
            return _conflict("the source section was edited by hand", resource, observed, applied)
        if markers == "missing" and (applied is None or force):
            return Decision(ActionType.WRITE_FILE, "add the source section above the local text")
        if markers == "broken":
            # Where the section starts or ends is not known, so nothing can be put in
            # it without guessing which lines are the person's: --overwrite cannot
            # help, and is not offered.
            marked = self._markers(resource)
            begin, end = marked.begin.decode().strip(), marked.end.decode().strip()
            why = (
                f"section markers are broken (not one {begin!r} line followed by one {end!r} "
                "line): fix them by hand, or remove both to have the section added again"
            )
            return _conflict(why, resource, observed, applied, BY_HAND)
        return _conflict(f"section markers are {markers}", resource, observed, applied)

    def _plan_removal(self, applied: Applied, observed: Observed) -> Decision:
        if _gone(observed):
            why = "its section is already gone" if observed.state == "file" else "already gone"
            return Decision(ActionType.REMOVE_RESOURCE, f"forget ({why})", {"gone": True})
        if self._as_written(observed, applied):
            what = "the source section" if applied.resource.policy == "append-local" else "file"
            return Decision(ActionType.REMOVE_RESOURCE, f"remove {what} (no longer declared)")
        return _conflict(
            "no longer declared, but modified since trueup wrote it",
            applied.resource,
            observed,
            applied,
        )

    def written(self, applied: Applied) -> list[Any] | None:
        spec = applied.resource.spec
        if spec.get("link") is not None:
            return ["link", spec["link"]]
        if applied.resource.policy == "append-local" or applied.digest is None:
            return None  # a section of a file that stays the person's
        return ["file", applied.digest, bool(spec.get("executable"))]

    def inherit(
        self, resource: Resource, records: Sequence[tuple[Applied, list[Any] | None]]
    ) -> Applied | None:
        return None  # a file declared around nothing: there is nothing to take over

    def clears(self, applied: Applied, decision: Decision) -> bool:
        # The removal of an append-local section keeps the file and its local text.
        return (
            decision.type is ActionType.REMOVE_RESOURCE
            and applied.resource.policy != "append-local"
        )

    @staticmethod
    def _as_written(observed: Observed, applied: Applied) -> bool:
        """The live file is what trueup wrote: its content, and its executable bit.

        One rule for an update and for a removal: a hand-made chmod is a local
        modification either way, and a modified file is never replaced or deleted.
        """
        if observed.digest != applied.digest:
            return False
        return observed.state != "file" or _mode_as_declared(applied.resource.spec, observed)

    @staticmethod
    def _matches(resource: Resource, observed: Observed) -> bool:
        spec = resource.spec
        if spec.get("link") is not None:
            return observed.state == "symlink" and observed.digest == spec["digest"]
        return (
            observed.state == "file"
            and observed.digest == spec["digest"]
            and _mode_as_declared(spec, observed)
        )

    # -- execute ------------------------------------------------------------
    def apply(self, action: Action, resource: Resource, ctx: ApplyContext) -> None:
        path = ctx.path_str(resource.target)
        spec = resource.spec
        if action.type is ActionType.REMOVE_RESOURCE:
            if action.payload.get("gone"):
                return
            if resource.policy == "append-local":
                _, before, _, after = self._markers(resource).split(ctx.fs.read_bytes(path))
                if before + after:
                    ctx.writer.write(path, before + after, mode=_mode_now(ctx, path))
                    return
            ctx.writer.remove(path)
            return
        # A target planned absent is created exclusively (the rename refuses what came).
        exclusive = action.exclusive
        if spec.get("link") is not None:
            ctx.writer.symlink(path, spec["link"], exclusive)
            return
        executable = spec.get("executable")
        # An undeclared mode (append-local) is the follower's: kept bit for bit.
        mode = _mode_now(ctx, path) if executable is None else None
        if spec.get("secret") and mode is None:
            # A secret is readable by the file's owner only (a person's append-local
            # file keeps its own mode).
            mode = 0o700 if executable else 0o600
        if resource.policy != "append-local" and spec.get("source") is not None:
            ctx.writer.copy(path, spec["source"], spec["digest"], bool(executable), mode, exclusive)
            return
        known = None if resource.policy == "append-local" else spec["digest"]
        data = self._new_bytes(resource, ctx.fs, path)
        ctx.writer.write(path, data, bool(executable), mode=mode, digest=known, exclusive=exclusive)

    def _new_bytes(self, resource: Resource, fs: ReadOnlyFS, path: Path | str) -> bytes:
        data = declared_bytes(resource.spec, fs)
        if resource.policy != "append-local":
            return data
        markers = self._markers(resource)
        current = fs.read_bytes(path) if fs.entry(path) is not None else b""
        status, before, _, after = markers.split(current)
        if status == "missing":
            before, after = b"", current
        return markers.compose(before, data, after)

    def verify(self, action: Action, resource: Resource, ctx: ObserveContext) -> Evidence:
        observed = self.observe(resource, ctx)
        if action.type is ActionType.REMOVE_RESOURCE:
            gone = _gone(observed)
            return Evidence("passed" if gone else "failed", "absence", observed.digest)
        expected = resource.spec.get("section_digest") or resource.spec["digest"]
        evidence = evidence_of(observed, expected)
        linked = resource.spec.get("link") is not None
        if evidence.passed and not linked and not _mode_as_declared(resource.spec, observed):
            return Evidence("failed", "digest", observed.digest, message="executable bit differs")
        return evidence

    def preview(self, action: Action, resource: Resource, ctx: ObserveContext) -> str:
        if resource.spec.get("secret"):
            digest = resource.spec.get("section_digest") or resource.spec.get("digest") or ""
            return f"{resource.target}: secret content (sha256 {digest[:12]}), not shown\n"
        path = ctx.path(resource.target)
        entry = ctx.fs.entry(path)
        old = ctx.fs.read_bytes(path) if entry is not None and entry.state == "file" else None
        if entry is not None and entry.state == "symlink":
            old = f"-> {entry.link}\n".encode()
        if action.type is ActionType.REMOVE_RESOURCE:
            new: bytes | None = None
            if resource.policy == "append-local" and old is not None:
                _, before, _, after = self._markers(resource).split(old)
                new = before + after or None
        elif resource.spec.get("link") is not None:
            new = f"-> {resource.spec['link']}\n".encode()
        else:
            new = self._new_bytes(resource, ctx.fs, path)
        return text_diff(old, new, resource.target)


def _gone(observed: Observed) -> bool:
    """Nothing trueup wrote is left: no target, or (append-local) no section in it.

    The follower's own text around a section is theirs, so a file whose markers
    were deleted by hand holds nothing of trueup's: a removal has nothing to do,
    and a removal that took the section out is done.
    """
    return observed.state == "absent" or observed.detail.get("markers") == "missing"


def _mode_as_declared(spec: Mapping[str, Any], observed: Observed) -> bool:
    """The live executable bit is the declared one, or none is declared (append-local)."""
    declared = spec.get("executable")
    return declared is None or bool(observed.detail.get("executable")) == declared


def _mode_now(ctx: ObserveContext, path: Path | str) -> int | None:
    """The permission bits of the regular file at ``path``; ``None`` if there is none."""
    st = ctx.fs.lstat(path)
    return stat.S_IMODE(st.st_mode) & 0o777 if st is not None and stat.S_ISREG(st.st_mode) else None


def _only_mode_differs(resource: Resource, observed: Observed) -> bool:
    """The live file holds exactly the declared bytes (so, as it is not up to date,
    only its executable bit differs)."""
    return (
        resource.spec.get("link") is None
        and observed.state == "file"
        and observed.digest == resource.spec["digest"]
    )


def _mode_change(spec: Mapping[str, Any]) -> str:
    return f"{'set' if spec['executable'] else 'clear'} the executable bit"


def _replacing_theirs(resource: Resource) -> Decision:
    """The first write over a file or link that was there before trueup and differs.

    It is somebody's work that no record can give back once the run is over, so
    the step destroys data: it waits for the target's name typed (``--confirm``),
    never ``--yes`` alone. (Under replace-if-unmodified such a file is drift, and
    ``--overwrite ID``, given after the plan showed it, is that decision already.)
    """
    shape = _shape(resource)
    return Decision(
        ActionType.WRITE_FILE,
        f"replace the existing {shape}, which trueup never wrote (its content is lost)",
        destroys=True,
    )


def _shape(resource: Resource) -> str:
    return "symlink" if resource.spec.get("link") is not None else "file"


def _conflict(
    why: str,
    resource: Resource,
    observed: Observed,
    applied: Applied | None,
    payload: Mapping[str, Any] | None = None,
) -> Decision:
    desired = resource.spec.get("section_digest") or resource.spec.get("digest")
    return Decision(
        ActionType.DRIFT_CONFLICT,
        f"drift: {why}; left exactly as it is",
        payload or {},
        drift={
            "observed": observed.digest,
            "applied": applied.digest if applied else None,
            "desired": desired,
        },
    )
