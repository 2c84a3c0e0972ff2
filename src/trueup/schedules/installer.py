"""A schedule installed as a profile of its own, so it is written like any change.

The native files (native.py) become a small generated profile of ``file``
resources under ``replace-if-unmodified``, kept in the data folder and applied
to the home through the same pipeline as any profile: planned and shown,
applied under the lock, journaled with rollback material, verified, recorded.
A unit edited by hand is therefore drift, left as it is until ``--overwrite``,
and a failed install puts the previous files back.

Its status is that profile planned again: nothing to do is ``current``; no
profile, or none of its files there, ``not-installed``; only the enabling link
missing (systemd) or the job switched off in its file (launchd, Task
Scheduler) ``disabled``; anything else ``drifted``.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from trueup.errors import UsageError
from trueup.model import Action, ActionType
from trueup.private import make_folders, write_file
from trueup.schedules.native import ENABLED_LINK, PLATFORMS, NativeFile, disabled

PROFILE_ID = "trueup-schedule"
#: A person types this name to confirm a step that replaces a file of theirs.
PROFILE_NAME = "trueup schedule"
STATES = ("not-installed", "current", "drifted", "disabled")


@dataclass(frozen=True)
class Installed:
    """What ``schedule set`` last installed: read back by ``status`` and ``remove``."""

    platform: str
    schedule: str
    command: list[str]


@dataclass
class ScheduleStatus:
    state: str
    installed: Installed | None = None
    #: Why it is not current, one line per file.
    reasons: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        found = self.installed
        return {
            "state": self.state,
            "platform": found.platform if found else None,
            "schedule": found.schedule if found else None,
            "command": found.command if found else None,
            "reasons": self.reasons,
        }


class ScheduleFiles:
    """The generated profile and its record, in ``<data>/schedule``."""

    def __init__(self, data: Path) -> None:
        self.folder = data / "schedule"
        self.profile = self.folder / "profile.json"
        self.pending = self.folder / "pending.json"
        self.record = self.folder / "installed.json"

    def stage(self, files: list[NativeFile]) -> Path:
        """Write the profile ``files`` make as the pending one, to plan and apply."""
        resources = [_resource(f) for f in files]
        document = {
            "profile": {"id": PROFILE_ID, "name": PROFILE_NAME},
            "resource": resources,
        }
        make_folders(self.folder)
        write_file(self.pending, json.dumps(document, indent=2).encode())
        return self.pending

    def commit(self, installed: Installed | None) -> None:
        """The pending profile was applied: it is now the installed one."""
        os.replace(self.pending, self.profile)
        if installed is None:
            self.record.unlink(missing_ok=True)
        else:
            write_file(self.record, json.dumps(asdict(installed)).encode())

    def discard(self) -> None:
        self.pending.unlink(missing_ok=True)

    def installed(self) -> Installed | None:
        try:
            body = json.loads(self.record.read_text())
        except (OSError, ValueError):
            return None
        if body.get("platform") not in PLATFORMS:
            return None
        return Installed(body["platform"], body["schedule"], list(body["command"]))


def _resource(native: NativeFile) -> dict[str, Any]:
    name = native.target.rsplit("/", 1)[-1]
    rid = ("enabled-" if native.target == ENABLED_LINK else "") + name
    body: dict[str, Any] = {
        "id": rid,
        "kind": "file",
        "target": native.target,
        "policy": "replace-if-unmodified",
    }
    if native.link is not None:
        body["link"] = native.link
    else:
        body["content"] = native.content
    return body


def status_of(
    installed: Installed | None,
    actions: tuple[Action, ...],
    absent: set[str],
    targets: Mapping[str, Path],
) -> ScheduleStatus:
    """The state of an installed schedule from its plan: ``actions``, the ids whose
    files are ``absent`` and where each id's file is."""
    if installed is None:
        return ScheduleStatus("not-installed")
    changes = [a for a in actions if a.type is not ActionType.NO_OP]
    if not changes:
        return ScheduleStatus("current", installed)
    if {a.resource_id for a in actions} <= absent:
        return ScheduleStatus("not-installed", installed, ["none of its files is there"])
    reasons = [f"{a.resource_id}: {a.summary}" for a in changes]
    if all(a.resource_id.startswith("enabled-") for a in changes):
        return ScheduleStatus("disabled", installed, reasons)
    if all(_switched_off(installed.platform, targets[a.resource_id]) for a in changes):
        return ScheduleStatus("disabled", installed, reasons)
    return ScheduleStatus("drifted", installed, reasons)


def _switched_off(platform: str, path: Path) -> bool:
    try:
        live = path.read_bytes()
    except OSError:
        return False
    return disabled(platform, path.as_posix(), live)


def refuse_unknown_platform(platform: str) -> None:
    if platform not in PLATFORMS:
        raise UsageError(f"--platform {platform!r}: expected one of {', '.join(PLATFORMS)}")
