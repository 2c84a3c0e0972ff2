"""The engine's vocabulary, as immutable values.

Every phase hands the next one these values and nothing else: declare produces
``Resource``s, observe produces ``Observed``s, the planner turns those plus the
``Applied`` records into a ``Plan`` of ``Action``s, and the executor reports an
``Outcome``. Kind-specific detail travels in JSON-able mappings (``spec``,
``detail``, ``payload``) that only the kind's own module interprets, which is
what keeps the planner and executor ignorant of kinds.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from functools import cached_property
from typing import Any

from trueup.canonical import digest
from trueup.errors import ExitCode

JSONMap = Mapping[str, Any]

PLAN_SCHEMA = "trueup.plan/1"


@dataclass(frozen=True, slots=True)
class Resource:
    """One declared thing: what it is, where it lives, how it may be changed."""

    id: str
    kind: str
    policy: str
    target: str
    spec: JSONMap
    depends_on: tuple[str, ...] = ()
    verify: JSONMap | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "kind": self.kind,
            "policy": self.policy,
            "target": self.target,
            "depends_on": list(self.depends_on),
            "spec": dict(self.spec),
            "verify": dict(self.verify) if self.verify is not None else None,
        }

    @classmethod
    def from_json(cls, data: JSONMap) -> Resource:
        return cls(
            id=data["id"],
            kind=data["kind"],
            policy=data["policy"],
            target=data["target"],
            spec=data["spec"],
            depends_on=tuple(data.get("depends_on", ())),
            verify=data.get("verify"),
        )


@dataclass(frozen=True, slots=True)
class Observed:
    """What is live at a resource's target, read without changing anything.

    ``state`` is ``absent``, ``file``, ``symlink``, ``directory``, ``special`` or
    ``unverifiable`` (or a kind's own word); ``digest`` identifies the content
    the kind compares; ``detail`` is whatever else the kind needs to plan.
    """

    state: str
    digest: str | None = None
    detail: JSONMap = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {"state": self.state, "digest": self.digest, "detail": dict(self.detail)}

    @classmethod
    def from_json(cls, data: JSONMap) -> Observed:
        return cls(state=data["state"], digest=data.get("digest"), detail=data.get("detail", {}))

    def identity(self) -> str:
        """What a plan records for this observation (its staleness check).

        Flat observations (a file's digest and mode) spell themselves out,
        which costs far less than a digest per file on big trees; nested ones
        (a folder's listing, a config's keys) are digested.
        """
        detail = self.detail
        if not detail:  # nothing there, or a file seen by its digest alone
            return f"{self.state}:{self.digest}:"
        if all(isinstance(v, str | int | bool) or v is None for v in detail.values()):
            flat = ",".join(f"{k}={detail[k]!r}" for k in sorted(detail))
            return f"{self.state}:{self.digest}:{flat}"
        return digest(self.to_json())


ABSENT = Observed("absent")
#: A live file over the size limit: trueup will not read it, so cannot compare it.
OVERSIZED = "oversized"
#: A live target trueup may not read (permission denied): not compared, left alone.
UNREADABLE = "unreadable"


@dataclass(frozen=True, slots=True)
class Applied:
    """What trueup last wrote for a resource: the third side of drift detection."""

    resource: Resource
    digest: str | None
    detail: JSONMap
    revision: str
    applied_at: str

    @property
    def resource_id(self) -> str:
        return self.resource.id


class ActionType(StrEnum):
    NO_OP = "no-op"
    WRITE_FILE = "write-file"
    WRITE_CONFIG = "write-config"
    MIRROR_DIRECTORY = "mirror-directory"
    INSTALL_TOOL = "install-tool"
    AGENT_TASK = "agent-task"
    REMOVE_RESOURCE = "remove-resource"
    VERIFY_ONLY = "verify-only"
    HUMAN_ACTION = "human-action"
    DRIFT_CONFLICT = "drift-conflict"
    #: Would change something, but depends on a resource that needs a person or is
    #: in drift (planner.blocked_dependents): journaled skipped, with why.
    BLOCKED = "blocked"

    @property
    def mutates(self) -> bool:
        """Whether the executor changes the target for it."""
        return self in _MUTATING

    @property
    def applies(self) -> bool:
        """Whether apply runs it: it mutates, or (verify-only) checks and records the target."""
        return self in _MUTATING or self is ActionType.VERIFY_ONLY


_ACTION_TYPES = {t.value: t for t in ActionType}
_MUTATING = frozenset(
    {
        ActionType.WRITE_FILE,
        ActionType.WRITE_CONFIG,
        ActionType.MIRROR_DIRECTORY,
        ActionType.INSTALL_TOOL,
        ActionType.AGENT_TASK,
        ActionType.REMOVE_RESOURCE,
    }
)


# Where Action's typed fields travel in the plan's JSON: inside "payload", under
# these keys, as they always have. A saved plan reads back the same, and the
# digest of a plan is unchanged by their becoming fields of their own.
_HANDED_OVER = "handed_over"
_EXCLUSIVE = "exclusive"
_FREES = "frees"


@dataclass(frozen=True, slots=True)
class Action:
    """One step of a plan for one resource.

    ``payload`` carries what the kind decided at plan time (desired digests,
    keys to set, files to remove) so that apply does exactly what was shown;
    only the kind reads it. What the executor must know is a field of its own:

    - ``handed_over``: the id now declared at a dropped id's target (a renamed
      resource): executing the removal only forgets the old id's record;
    - ``frees``: the declared target a dropped id's removal must leave empty (a
      file moved up to its folder's name, "a/b" to "a"): the folders it empties
      go too, up to and including that place, before anything is written there;
    - ``exclusive``: the write creates its target exclusively (the rename refuses
      anything found there), so the executor need not look again first.
    """

    resource_id: str
    kind: str
    type: ActionType
    summary: str
    payload: JSONMap = field(default_factory=dict)
    before: tuple[str, ...] = ()
    destroys: bool = False
    migrates: bool = False
    handed_over: str | None = None
    frees: str | None = None
    exclusive: bool = False

    @property
    def changes_target(self) -> bool:
        """Whether executing it changes the target (a handed-over removal only forgets)."""
        return self.type.mutates and self.handed_over is None

    def to_json(self) -> dict[str, Any]:
        payload = dict(self.payload)
        if self.handed_over is not None:
            payload[_HANDED_OVER] = self.handed_over
        if self.frees is not None:
            payload[_FREES] = self.frees
        if self.exclusive:
            payload[_EXCLUSIVE] = True
        return {
            "resource": self.resource_id,
            "kind": self.kind,
            "type": self.type.value,
            "summary": self.summary,
            "payload": payload,
            "after": list(self.before),
            "destroys": self.destroys,
            "migrates": self.migrates,
        }

    @classmethod
    def from_json(cls, data: JSONMap) -> Action:
        payload = data.get("payload", {})
        handed_over = frees = None
        exclusive = False
        if _HANDED_OVER in payload or _FREES in payload or _EXCLUSIVE in payload:
            payload = dict(payload)
            handed_over = payload.pop(_HANDED_OVER, None)
            frees = payload.pop(_FREES, None)
            exclusive = bool(payload.pop(_EXCLUSIVE, False))
        return cls(
            resource_id=data["resource"],
            kind=data["kind"],
            # A dict lookup: cheaper than calling the enum, once per action.
            type=_ACTION_TYPES.get(data["type"]) or ActionType(data["type"]),
            summary=data["summary"],
            payload=payload,
            before=tuple(data.get("after", ())),
            destroys=bool(data.get("destroys", False)),
            migrates=bool(data.get("migrates", False)),
            handed_over=handed_over,
            frees=frees,
            exclusive=exclusive,
        )


@dataclass(frozen=True, slots=True)
class Target:
    """What a run is about: a profile on a root, or an org."""

    kind: str
    id: str
    name: str
    location: str

    @property
    def key(self) -> str:
        """The lock key: one active run per key."""
        return f"{self.kind}:{self.id}@{self.location}"

    def to_json(self) -> dict[str, str]:
        return {"kind": self.kind, "id": self.id, "name": self.name, "location": self.location}

    @classmethod
    def from_json(cls, data: JSONMap) -> Target:
        return cls(kind=data["kind"], id=data["id"], name=data["name"], location=data["location"])


@dataclass(frozen=True)
class Plan:
    """A pure function's result; its identity covers what it was computed from."""

    target: Target
    source: str
    declaration: str
    observed: Mapping[str, str]
    actions: tuple[Action, ...]
    force: tuple[str, ...] = ()

    def body(self) -> dict[str, Any]:
        return {
            "schema": PLAN_SCHEMA,
            "target": self.target.to_json(),
            "source": self.source,
            "declaration": self.declaration,
            "observed": dict(self.observed),
            "force": list(self.force),
            "actions": [a.to_json() for a in self.actions],
        }

    @cached_property
    def digest(self) -> str:
        """The plan's identity; cached, as a big plan's body is costly to encode."""
        return digest(self.body())

    @property
    def changes(self) -> tuple[Action, ...]:
        return tuple(a for a in self.actions if a.type.applies)

    def by_type(self, kind: ActionType) -> tuple[Action, ...]:
        return tuple(a for a in self.actions if a.type is kind)

    @classmethod
    def from_body(
        cls,
        body: JSONMap,
        known_digest: str | None = None,
        actions: tuple[Action, ...] | None = None,
    ) -> Plan:
        """The plan a body describes; ``known_digest`` is trusted (our own cache only),
        and so are ``actions`` in place of the body's (plan/memo.py keeps them as rows)."""
        plan = cls(
            target=Target.from_json(body["target"]),
            source=body["source"],
            declaration=body["declaration"],
            observed=body["observed"],
            actions=tuple(Action.from_json(a) for a in body["actions"])
            if actions is None
            else actions,
            force=tuple(body.get("force", ())),
        )
        if known_digest is not None:
            plan.__dict__["digest"] = known_digest  # what cached_property would store
        return plan


@dataclass(frozen=True, slots=True)
class Evidence:
    """How a resource was verified; a kind's say-so never counts, only this."""

    status: str  # passed | failed | not-run
    method: str
    observed_digest: str | None = None
    exit_code: int | None = None
    message: str = ""

    @property
    def passed(self) -> bool:
        return self.status == "passed"

    def to_json(self) -> dict[str, Any]:
        return {
            "status": self.status,
            "method": self.method,
            "observed_digest": self.observed_digest,
            "exit_code": self.exit_code,
            "message": self.message,
        }


class Outcome(StrEnum):
    CONVERGED = "converged"
    HUMAN_ACTION_REQUIRED = "human-action-required"
    DRIFT = "drift"
    FAILED = "failed"
    INTERRUPTED = "interrupted"

    @property
    def exit_code(self) -> ExitCode:
        return _OUTCOME_EXIT[self]


_OUTCOME_EXIT = {
    Outcome.CONVERGED: ExitCode.OK,
    Outcome.HUMAN_ACTION_REQUIRED: ExitCode.HUMAN_ACTION,
    Outcome.DRIFT: ExitCode.CONFLICT,
    Outcome.FAILED: ExitCode.FAILED,
    Outcome.INTERRUPTED: ExitCode.FAILED,
}


def plan_status(actions: tuple[Action, ...]) -> str:
    """A plan's state for people and scripts: its outcome, or ``changes-pending``.

    ``converged`` would be wrong for a plan that still has changes to apply.
    """
    outcome = outcome_of(actions)
    if outcome is Outcome.CONVERGED and any(a.type.applies for a in actions):
        return "changes-pending"
    return outcome.value


def outcome_of(actions: tuple[Action, ...], failed: bool = False) -> Outcome:
    """Failed > Drift > HumanActionRequired > Converged."""
    if failed:
        return Outcome.FAILED
    types = {a.type for a in actions}
    if ActionType.DRIFT_CONFLICT in types:
        return Outcome.DRIFT
    if ActionType.HUMAN_ACTION in types:
        return Outcome.HUMAN_ACTION_REQUIRED
    return Outcome.CONVERGED
