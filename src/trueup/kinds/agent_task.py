"""The agent-task kind: a bounded job for a coding agent's CLI, verified independently.

Some changes are not a file to write but a job to do ("migrate this config to
the new format"). A task names the job, the harness that may do it (codex,
claude, gemini: an argument list, the task text appended), the paths it may
change, the executables it may run, its time and output limits, whether it may
use the network, and ``done_when``: a command whose success (and output) says
the job is done. An agent's own statement never counts: only that command.

The agent never works on the root. It runs in a scratch copy of the allowed
paths, with a ``PATH`` of the allowed executables only, and without a network
(a network namespace of its own, ``unshare -rn``) unless the task allows one;
what it changed inside the allowed paths is then the proposal. The policies:

- ``deterministic-only``: never run an agent; the task is a human action;
- ``agent-propose``: the agent runs while planning, in the scratch copy, and
  its diff is the human action's (``plan --json``: the action's payload);
- ``agent-apply``: at apply, the agent's changes are written to the root like
  any file change (rollback material kept), then ``done_when`` must pass, or
  the run fails and restores them.
"""

from __future__ import annotations

import difflib
import os
import shutil
import tempfile
from collections.abc import Mapping
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from trueup.canonical import sha256_hex
from trueup.errors import ApplyFailedError, UsageError
from trueup.kinds.base import ApplyContext, Decision, Kind, ObserveContext, Touched
from trueup.model import Action, ActionType, Applied, Evidence, Observed, Resource
from trueup.paths import TargetError, normalise_target
from trueup.process import locate, run

if TYPE_CHECKING:
    from pydantic import BaseModel

#: A proposal larger than this is not shown whole.
MAX_DIFF = 64 * 1024
#: What ``done_when`` output is searched (never kept).
DONE_OUTPUT = 64 * 1024


@cache
def agent_task_fields() -> type[BaseModel]:
    from pydantic import BaseModel, ConfigDict, Field

    class DoneWhen(BaseModel):
        model_config = ConfigDict(extra="forbid", strict=True)

        command: list[str] = Field(min_length=1)
        expect_contains: str | None = Field(default=None, min_length=1)
        timeout: int = Field(default=60, gt=0)

    class AgentTaskFields(BaseModel):
        model_config = ConfigDict(extra="forbid", strict=True)

        task: str = Field(min_length=1, description="the job, in words, for the agent")
        harness: list[str] = Field(
            min_length=1, description="the agent CLI and its arguments; the task is appended"
        )
        allowed_paths: list[str] = Field(
            default_factory=list, description="what it may change (default: the target)"
        )
        executables: list[str] = Field(
            default_factory=list, description="what it may run besides the harness"
        )
        network: bool = False
        timeout: int = Field(default=600, gt=0)
        max_output: int = Field(default=1024 * 1024, gt=0)
        done_when: DoneWhen

    return AgentTaskFields


class AgentTaskKind(Kind):
    name = "agent-task"
    policies = ("deterministic-only", "agent-propose", "agent-apply")
    verify_methods = ("command",)
    witnessed = False  # done_when runs a command: no stat witness covers its answer

    def declaration_model(self) -> type[BaseModel]:
        return agent_task_fields()

    def check(self, resource: Resource) -> None:
        allowed = resource.spec.get("allowed_paths") or [resource.target]
        try:
            normal = [normalise_target(p) for p in allowed]
        except TargetError as exc:
            raise UsageError(f"field 'allowed_paths': {exc}") from None
        if resource.target not in normal and not any(
            resource.target.startswith(p + "/") for p in normal
        ):
            raise UsageError("field 'allowed_paths': the target must be among them")

    # -- observe ------------------------------------------------------------
    def observe(self, resource: Resource, ctx: ObserveContext) -> Observed:
        spec = resource.spec
        if _done(spec["done_when"], ctx.root):
            return Observed("done", sha256_hex(b"agent-task:done"))
        detail: dict[str, Any] = {"harness": locate(spec["harness"][0]) is not None}
        if resource.policy == "agent-propose" and detail["harness"]:
            changed, problem = _in_scratch(resource, ctx.root)
            detail["problem"] = problem
            detail["diff"] = _diff(changed, ctx.root)
        return Observed("not-done", None, detail)

    # -- plan ---------------------------------------------------------------
    def plan(
        self,
        resource: Resource | None,
        observed: Observed,
        applied: Applied | None,
        force: bool = False,
    ) -> Decision:
        if resource is None:
            return Decision(ActionType.NO_OP, "no longer declared; nothing is undone")
        spec = resource.spec
        check = " ".join(spec["done_when"]["command"])
        if observed.state == "done":
            return Decision(ActionType.NO_OP, f"done (`{check}` passes)")
        job = f"task: {spec['task']}"
        if resource.policy == "deterministic-only":
            return Decision(
                ActionType.HUMAN_ACTION,
                f"{job}: do it by hand (policy deterministic-only), until `{check}` passes",
            )
        if not observed.detail.get("harness"):
            return Decision(
                ActionType.HUMAN_ACTION,
                f"{job}: the harness {spec['harness'][0]} is not on PATH; install it, or do "
                f"the task by hand until `{check}` passes",
            )
        if resource.policy == "agent-propose":
            diff = observed.detail.get("diff", "")
            problem = observed.detail.get("problem")
            said = (
                f"the agent failed ({problem})"
                if problem
                else "the agent proposes no change"
                if not diff
                else "the agent proposes a change (its diff: plan --json, this action's "
                "payload.diff)"
            )
            return Decision(
                ActionType.HUMAN_ACTION,
                f"{job}: {said}; review it and apply it by hand (or set policy agent-apply), "
                f"until `{check}` passes",
                {"diff": diff},
            )
        return Decision(ActionType.AGENT_TASK, f"{job} (by {spec['harness'][0]}), then `{check}`")

    # -- execute ------------------------------------------------------------
    def __init__(self) -> None:
        #: The agent's work, done in the scratch copy when the executor asks what the
        #: action touches (before it keeps their old state), written by ``apply``.
        self._work: dict[tuple[str, str], tuple[dict[str, bytes | None], str]] = {}

    def touches(self, action: Action, resource: Resource, ctx: ObserveContext) -> Touched:
        """Exactly what the agent changed: it has done its work in the scratch copy by
        now (the root is not touched), so the old state of just those is kept."""
        work = self._work[(str(ctx.root), resource.id)] = _in_scratch(resource, ctx.root)
        return Touched([ctx.path_str(rel) for rel in sorted(work[0])], prunes=True)

    def apply(
        self, action: Action, resource: Resource, ctx: ApplyContext
    ) -> Mapping[str, Any] | None:
        work = self._work.pop((str(ctx.root), resource.id), None)
        changed, problem = work if work is not None else _in_scratch(resource, ctx.root)
        if problem:
            raise ApplyFailedError(f"agent task {resource.id!r}: {problem}")
        for rel, data in sorted(changed.items()):
            path = ctx.path_str(rel)
            if data is None:
                ctx.writer.remove(path)
            else:
                ctx.writer.write(path, data)
        return None

    def verify(self, action: Action, resource: Resource, ctx: ObserveContext) -> Evidence:
        if _done(resource.spec["done_when"], ctx.root):
            return Evidence("passed", "command", sha256_hex(b"agent-task:done"), exit_code=0)
        check = " ".join(resource.spec["done_when"]["command"])
        return Evidence(
            "failed",
            "command",
            message=f"the agent ran, but `{check}` does not pass: its work is not kept",
        )

    def record(self, action: Action, resource: Resource) -> Mapping[str, Any] | None:
        return {"task": resource.spec["task"]}


def _allowed(resource: Resource) -> list[str]:
    return [normalise_target(p) for p in resource.spec.get("allowed_paths") or [resource.target]]


def _done(done_when: Mapping[str, Any], root: Path) -> bool:
    """Whether the task's own check passes: exit 0, and the expected text if any."""
    finished = run(
        done_when["command"], timeout=done_when["timeout"], max_output=DONE_OUTPUT, cwd=root
    )
    expect = done_when.get("expect_contains")
    return finished.ok and (expect is None or expect in finished.output)


def _in_scratch(resource: Resource, root: Path) -> tuple[dict[str, bytes | None], str]:
    """Run the harness in a scratch copy of the allowed paths.

    Returns what it changed inside them (relative path → new bytes, ``None``:
    removed) and, if it failed, why.
    """
    spec = resource.spec
    allowed = _allowed(resource)
    with tempfile.TemporaryDirectory(prefix="trueup-agent-") as scratch_dir:
        scratch = Path(scratch_dir) / "work"
        before = _copy_allowed(root, scratch, allowed)
        argv = [*spec["harness"], spec["task"]]
        if not spec["network"]:
            unshare = locate("unshare")
            if unshare is None:
                return {}, "no network confinement here (unshare is missing); allow network"
            argv = [unshare, "--net", "--map-root-user", *argv]
        done = run(
            argv,
            timeout=spec["timeout"],
            max_output=spec["max_output"],
            cwd=scratch,
            env=_confined_env(Path(scratch_dir), spec),
        )
        if not done.ok:
            return {}, done.problem or f"{spec['harness'][0]} exited {done.exit_code}"
        after = _read_tree(scratch, allowed)
    changed: dict[str, bytes | None] = {
        rel: data for rel, data in after.items() if before.get(rel) != data
    }
    changed.update({rel: None for rel in before if rel not in after})
    return changed, ""


def _confined_env(scratch: Path, spec: Mapping[str, Any]) -> dict[str, str]:
    """A PATH of the harness and the allowed executables only; HOME in the scratch."""
    tools = scratch / "bin"
    tools.mkdir()
    for name in [spec["harness"][0], *spec["executables"]]:
        found = locate(name)
        if found is not None and not (tools / os.path.basename(name)).exists():
            (tools / os.path.basename(name)).symlink_to(found)
    keep = {k: os.environ[k] for k in ("LANG", "LC_ALL", "TERM") if k in os.environ}
    return {**keep, "PATH": str(tools), "HOME": str(scratch / "work")}


def _copy_allowed(root: Path, scratch: Path, allowed: list[str]) -> dict[str, bytes]:
    scratch.mkdir()
    for rel in allowed:
        source, copy = root / rel, scratch / rel
        copy.parent.mkdir(parents=True, exist_ok=True)
        if source.is_dir() and not source.is_symlink():
            shutil.copytree(source, copy, symlinks=True)
        elif source.is_file() and not source.is_symlink():
            shutil.copy2(source, copy)
    return _read_tree(scratch, allowed)


def _read_tree(base: Path, allowed: list[str]) -> dict[str, bytes]:
    """The regular files at and under the allowed paths, by path relative to ``base``."""
    found: dict[str, bytes] = {}
    for rel in allowed:
        top = base / rel
        if top.is_file() and not top.is_symlink():
            found[rel] = top.read_bytes()
            continue
        for folder, _, names in os.walk(top):
            for name in names:
                path = Path(folder) / name
                if path.is_file() and not path.is_symlink():
                    found[path.relative_to(base).as_posix()] = path.read_bytes()
    return found


def _diff(changed: Mapping[str, bytes | None], root: Path) -> str:
    """A unified diff of the proposal against the root, bounded."""
    parts: list[str] = []
    for rel, data in sorted(changed.items()):
        path = root / rel
        old = path.read_bytes().decode("utf-8", "replace") if path.is_file() else ""
        new = "" if data is None else data.decode("utf-8", "replace")
        parts += difflib.unified_diff(
            old.splitlines(keepends=True), new.splitlines(keepends=True), f"a/{rel}", f"b/{rel}"
        )
    text = "".join(parts)
    return text if len(text) <= MAX_DIFF else text[:MAX_DIFF] + "\n… (diff cut)\n"
