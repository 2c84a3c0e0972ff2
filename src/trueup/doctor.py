"""Is this machine healthy? Each part trueup relies on, probed and explained.

A probe looks and never changes anything (it does not even create the state
store), answers healthy, degraded (trueup works, something it could do will be
a human action) or unhealthy (runs will fail), and always says the next step.
Probes run at once, each within the time limit: a keyring that hangs or a
source that does not answer is reported as such, not waited on for ever.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from trueup import __version__
from trueup.process import locate
from trueup.redact import redact_message, redact_url
from trueup.settings import Settings

DOCTOR_SCHEMA = "trueup.doctor/1"
STATUSES = ("healthy", "degraded", "unhealthy")
#: The coding-agent CLIs an agent task may run.
HARNESSES = ("codex", "claude", "gemini")


@dataclass(frozen=True)
class Check:
    name: str
    status: str
    summary: str
    next_step: str
    detail: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "status": self.status,
            "summary": redact_message(self.summary),
            "next_step": redact_message(self.next_step),
            "detail": self.detail,
        }


@dataclass(frozen=True)
class Report:
    checks: list[Check]

    @property
    def status(self) -> str:
        return max((c.status for c in self.checks), key=STATUSES.index, default="healthy")

    def to_json(self) -> dict[str, Any]:
        return {
            "schema": DOCTOR_SCHEMA,
            "status": self.status,
            "checks": [c.to_json() for c in self.checks],
        }


Probe = Callable[[Settings], Check]


def diagnose(settings: Settings, timeout: float) -> Report:
    """Every probe, at once, each given ``timeout`` seconds.

    Daemon threads, not a pool: a probe stuck past its time (a keyring that
    never answers) must not keep trueup from exiting once the report is out.
    """
    probes: list[tuple[str, Probe]] = [
        ("runtime", runtime),
        ("state", state_store),
        ("keyring", keyring_backend),
        ("source", source),
        ("scheduler", scheduler),
        ("package-managers", package_managers),
        ("agent-harnesses", agent_harnesses),
    ]
    found: dict[str, Check] = {}

    def probing(name: str, probe: Probe) -> None:
        try:
            found[name] = probe(settings)
        except Exception as exc:  # a probe's own failure is a finding, not a crash
            found[name] = Check(name, "unhealthy", f"{type(exc).__name__}: {exc}", "report a bug")

    threads = [
        threading.Thread(target=probing, args=(name, probe), daemon=True, name=f"doctor-{name}")
        for name, probe in probes
    ]
    for thread in threads:
        thread.start()
    deadline = time.monotonic() + timeout
    for thread in threads:
        thread.join(max(deadline - time.monotonic(), 0))
    return Report([found.get(name) or _timed_out(name, timeout) for name, _ in probes])


def _timed_out(name: str, timeout: float) -> Check:
    return Check(
        name,
        "unhealthy",
        f"did not answer within {timeout:g}s",
        f"run trueup doctor --timeout {timeout * 4:g}; if it still hangs, this part is stuck "
        "(a locked keyring, a database that does not answer)",
    )


def runtime(settings: Settings) -> Check:
    version = ".".join(map(str, sys.version_info[:3]))
    here = os.path.dirname(os.path.abspath(sys.argv[0]))
    on_path = locate("trueup")
    detail = {"python": version, "trueup": __version__, "on_path": on_path}
    summary = f"trueup {__version__} on Python {version}"
    if on_path is None:
        return Check(
            "runtime",
            "degraded",
            f"{summary}; trueup is not on PATH",
            f'export PATH="{here}:$PATH" (schedules use its absolute path either way)',
            detail,
        )
    return Check("runtime", "healthy", summary, "none", detail)


def state_store(settings: Settings) -> Check:
    from trueup.state.db import Database, sqlite_path
    from trueup.state.schema import HEAD, KNOWN, current_revision

    url = settings.state_url
    shown = redact_url(url)
    path = sqlite_path(url)
    if path is not None and not Path(path).exists():
        return Check(
            "state", "healthy", f"{shown} is not created yet", "none: the first plan creates it"
        )
    try:
        db = Database(url)
        try:
            revision = current_revision(db)
        finally:
            db.close()
    except Exception as exc:
        return Check(
            "state",
            "unhealthy",
            f"{shown} cannot be opened ({type(exc).__name__})",
            "check TRUEUP_STATE / --state and that the database answers",
        )
    detail = {"url": shown, "revision": revision}
    if revision == HEAD:
        return Check("state", "healthy", f"{shown} at schema {revision}", "none", detail)
    if revision in KNOWN or revision is None:
        step = f"trueup state migrate --state {shown}"
        return Check("state", "unhealthy", f"{shown} at schema {revision}", step, detail)
    return Check("state", "unhealthy", f"{shown} is newer than this trueup", "upgrade trueup")


def keyring_backend(settings: Settings) -> Check:
    try:
        import keyring
        from keyring.backends import fail

        backend = keyring.get_keyring()
        problem = "no backend" if isinstance(backend, fail.Keyring) else ""
    except Exception as exc:
        problem = type(exc).__name__
    if problem:
        return Check(
            "keyring",
            "degraded",
            f"no usable OS keyring ({problem}): credentials stored there are human actions",
            "unlock or install a keyring backend (`keyring --list-backends`), or declare "
            'credentials with store = "env" or "file"',
        )
    name = f"{type(backend).__module__}.{type(backend).__name__}"
    return Check("keyring", "healthy", f"backend {name}", "none", {"backend": name})


def source(settings: Settings) -> Check:
    """The source this machine follows: enrolled, its credential here, reachable, its
    certificate still the pinned one (the client refuses any other before sending)."""
    from trueup.errors import TrueupError
    from trueup.source.client import SourceClient
    from trueup.source.follower import FollowerHome

    home = FollowerHome(settings.data)
    if not home.enrolled():
        return Check(
            "source",
            "healthy",
            "not enrolled: this machine follows no source (profiles are applied locally)",
            "none (to follow one: trueup follow INVITE --name NAME)",
            {"enrolled": False},
        )
    member = home.membership()
    detail = {
        "enrolled": True,
        "name": member.name,
        "endpoint": member.endpoint,
        "tls_pin": member.tls,
        "signing_pin": member.signing,
        "groups": member.groups,
    }
    etags = [r["etag"] for r in home.last().get("roots", {}).values() if r.get("etag")]
    try:
        client = SourceClient(member.endpoint, member.tls, home.credential(member))
        try:
            answer = client.request(
                "GET", "/v1/revision", headers={"If-None-Match": etags[0]} if etags else {}
            )
        finally:
            client.close()
    except TrueupError as exc:
        return Check("source", "unhealthy", exc.message, exc.hint or "trueup sync", detail)
    if answer.status == 404:
        return Check(
            "source",
            "degraded",
            f"{member.endpoint} answers, but has published no revision yet",
            "on the source: trueup source publish PROFILE",
            detail,
        )
    if answer.status not in (200, 304):
        step = "check the source's log"
        return Check("source", "unhealthy", f"the source answered {answer.status}", step, detail)
    return Check(
        "source",
        "healthy",
        f"following {member.endpoint} as {member.name}: reachable, its certificate is the "
        "pinned one",
        "none",
        detail,
    )


def scheduler(settings: Settings) -> Check:
    from trueup.kinds.tool import this_platform
    from trueup.schedules.installer import ScheduleFiles

    platform = this_platform()
    tool = {"linux": "systemctl", "macos": "launchctl", "windows": "schtasks"}[platform]
    found = locate(tool)
    installed = ScheduleFiles(settings.data).installed()
    detail = {"platform": platform, "tool": tool, "tool_found": found is not None}
    if found is None:
        return Check(
            "scheduler",
            "degraded",
            f"{tool} is not on PATH: a schedule's files can be written, not started",
            f"install {tool}, or run trueup from another scheduler (cron, CI)",
            detail,
        )
    if installed is None:
        return Check(
            "scheduler",
            "degraded",
            "no schedule: trueup runs only when someone runs it",
            "trueup schedule set daily@09:00 --profile PROFILE",
            detail,
        )
    detail["schedule"] = installed.schedule
    return Check(
        "scheduler",
        "healthy",
        f"{tool} found; schedule {installed.schedule} installed (its files: trueup schedule "
        "status)",
        "none",
        detail,
    )


def package_managers(settings: Settings) -> Check:
    from trueup.kinds.tool import MANAGERS

    programs = {m: {"apt": "apt-get"}.get(m, m) for m in MANAGERS if m != "download"}
    found = sorted(m for m, program in programs.items() if locate(program))
    detail = {"found": found}
    if not found:
        return Check(
            "package-managers",
            "degraded",
            "no package manager found: tools install only by download recipes",
            "install one (uv, pipx, npm, cargo, brew...) or declare download recipes",
            detail,
        )
    return Check("package-managers", "healthy", ", ".join(found), "none", detail)


def agent_harnesses(settings: Settings) -> Check:
    found = sorted(h for h in HARNESSES if locate(h))
    detail = {"found": found}
    if not found:
        return Check(
            "agent-harnesses",
            "degraded",
            "no coding-agent CLI (codex, claude, gemini): agent tasks are human actions",
            "install one if agent tasks should run here",
            detail,
        )
    return Check("agent-harnesses", "healthy", ", ".join(found), "none", detail)


def schema_path() -> Path:
    return Path(__file__).parent / "schemas" / "doctor.json"
