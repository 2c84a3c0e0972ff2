"""What ``--overwrite`` would discard in a drifted folder (a skill or directory), as a diff.

A person deciding whether to take the declared version needs to see the work
it would throw away, file by file: a text diff from the live file to the
declared one, a size for binary content, never a secret. The output is
bounded, so a folder with thousands of changed files still prints a page.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from typing import Any

from trueup.fs import ReadOnlyFS
from trueup.kinds.content import text_diff
from trueup.redact import PLACEHOLDER, looks_secret

#: Lines of diff shown for one resource before the rest is only counted.
MAX_LINES = 200
#: A file larger than this is summarised by its size, never diffed.
MAX_DIFF_BYTES = 256 * 1024

# A line that gives a secret-named setting its value (``API_TOKEN=...``,
# ``"password": "..."``, ``client_secret: ...``): the value is masked.
_ASSIGNED_SECRET = re.compile(
    r"""^(?P<head>[-+ ]?.*?(TOKEN|SECRET|PASSWORD|PASSWD|API_KEY|PRIVATE_KEY|CREDENTIAL)"""
    r"""[\w.-]*["']?\s*[:=]\s*)\S.*$""",
    re.IGNORECASE | re.MULTILINE,
)


def discarded(
    changed: list[Mapping[str, str]],
    desired: Mapping[str, list[Any]],
    fs: ReadOnlyFS,
    base: str,
    source: str,
    label: str,
) -> str:
    """The diff, file by file, from each changed live file to what ``--overwrite`` puts there.

    ``base`` is the live folder and ``source`` the declared one; a changed file
    that is not declared is removed by the overwrite (``desired`` lacks it), and
    one removed by hand is only put back, which discards nothing.
    """
    chunks: list[str] = []
    lines = 0
    for shown, item in enumerate(changed):
        if item["change"] == "removed":
            continue
        if lines >= MAX_LINES:
            rest = sum(1 for c in changed[shown:] if c["change"] != "removed")
            chunks.append(f"… {rest} more changed file(s) not shown (plan --json lists them)\n")
            break
        rel = item["path"]
        name = f"{label}/{rel}"
        live = _live_bytes(fs, os.path.join(base, rel))
        entry = desired.get(rel)
        declared = _declared_bytes(fs, os.path.join(source, rel), entry) if entry else None
        chunk = _file_diff(name, live, declared)
        lines += chunk.count("\n")
        chunks.append(chunk)
    return "".join(chunks)


def _file_diff(name: str, live: bytes | None, declared: bytes | None) -> str:
    if looks_secret(os.path.basename(name)):
        return f"{name}: may hold a secret ({_size(live)} live), not shown\n"
    sizes = f"{_size(live)} live, {_size(declared)} declared"
    if max(len(live or b""), len(declared or b"")) > MAX_DIFF_BYTES:
        return f"{name}: too large to show ({sizes})\n"
    if _binary(live) or _binary(declared):
        return f"{name}: binary, {sizes}\n"
    return _ASSIGNED_SECRET.sub(rf"\g<head>{PLACEHOLDER}", text_diff(live, declared, name))


def _binary(data: bytes | None) -> bool:
    """Not text a person reads in a diff: a NUL byte (as git decides), or not UTF-8."""
    if not data:
        return False
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return True
    return b"\0" in data


def _size(data: bytes | None) -> str:
    return "none" if data is None else f"{len(data)} bytes"


def _live_bytes(fs: ReadOnlyFS, path: str) -> bytes | None:
    entry = fs.entry(path)
    if entry is None:
        return None
    if entry.state == "symlink":
        return f"-> {entry.link}\n".encode()
    if entry.state != "file":
        return f"({entry.state})\n".encode()
    return fs.read_bytes(path)


def _declared_bytes(fs: ReadOnlyFS, path: str, entry: list[Any]) -> bytes:
    if entry[0] == "link":
        return f"-> {entry[1]}\n".encode()
    return fs.read_expected(path, entry[1])
