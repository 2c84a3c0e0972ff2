"""Declared content: inline text or a source file, addressed by its digest.

A resolved spec carries the sha256 of the bytes it declares, so a plan covers
content and not just paths; apply re-reads the source and refuses bytes that
no longer match what was planned.
"""

from __future__ import annotations

import stat
from pathlib import Path
from typing import Any

from trueup.errors import UsageError
from trueup.fs import ReadOnlyFS, sha256_bytes
from trueup.kinds.unified import unified_diff
from trueup.redact import unseal
from trueup.sources import source_path


def resolve_source(fields: dict[str, Any], base_dir: Path, fs: ReadOnlyFS) -> dict[str, Any]:
    """Replace ``source``/``content`` by an absolute source path or text, plus a digest
    (in ``fields``, which the caller gives as its own copy)."""
    spec = fields
    if spec.get("source") is not None:
        declared = source_path(base_dir, spec["source"])
        # A source may be a link: read, hash and remember what it leads to.
        source, st = fs.follow(declared, absolute=True)
        if st is None or not stat.S_ISREG(st.st_mode):
            what = "does not exist" if st is None else "is not a file"
            raise UsageError(f"field 'source': {spec['source']!r} {what} (looked in {declared})")
        spec["source"] = source
        spec["digest"] = fs.digest_file(source, st)
    elif spec.get("content") is not None:
        spec["digest"] = sha256_bytes(spec["content"].encode("utf-8"))
    return spec


def declared_bytes(spec: dict[str, Any] | Any, fs: ReadOnlyFS) -> bytes:
    """The planned bytes; refuses a source edited after the plan was computed."""
    if spec.get("content") is not None:
        return str(unseal(spec["content"])).encode("utf-8")
    return fs.read_expected(spec["source"], spec["digest"])


def text_diff(old: bytes | None, new: bytes | None, label: str) -> str:
    """A unified diff for people; binary content is summarised, not dumped."""
    try:
        old_text = (old or b"").decode("utf-8")
        new_text = (new or b"").decode("utf-8")
    except UnicodeDecodeError:
        return f"Binary content of {label} differs\n"
    lines = unified_diff(
        old_text.splitlines(keepends=True),
        new_text.splitlines(keepends=True),
        fromfile=f"{label} (live)" if old is not None else "/dev/null",
        tofile=f"{label} (declared)" if new is not None else "/dev/null",
    )
    # A last line without its newline says so, as diff(1) does: otherwise a file
    # that differs only there shows two identical lines.
    return "".join(
        line if line.endswith("\n") else line + "\n\\ No newline at end of file\n" for line in lines
    )
