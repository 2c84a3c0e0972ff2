"""The seam every resource kind implements.

The planner and executor know nothing about files, config keys or SaaS
records: they call these methods and pass the JSON-able values they return
along. A new kind is one module with one ``Kind`` subclass, registered in
``trueup.kinds``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, NamedTuple

from trueup.fs import ReadOnlyFS, WritableFS
from trueup.model import Action, ActionType, Applied, Evidence, Observed, Resource
from trueup.paths import RootResolver

if TYPE_CHECKING:
    from pydantic import BaseModel


@dataclass(frozen=True)
class ObserveContext:
    """What observation may use: a root and a file system that cannot write."""

    root: Path
    fs: ReadOnlyFS
    env: Mapping[str, str] = field(default_factory=dict)
    #: Per-run helpers of remote kinds (provider sessions with their scope
    #: snapshots, the applied records), by name; empty for machine runs.
    services: Mapping[str, Any] = field(default_factory=dict)
    #: What the plan being previewed was computed from, by resource id (a preview
    #: in the process that planned; empty elsewhere): read instead of observing again.
    observed: Mapping[str, Observed] = field(default_factory=dict)
    resolver: RootResolver = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "resolver", RootResolver(self.root))
        # Every target is then reached from the root down (anchor.py), and a folder a
        # resource allows its links to lead into from that folder down (Anchor.allow).
        self.fs.confine(self.resolver.root)

    def path(self, target: str) -> Path:
        return self.resolver.resolve(target)

    def path_str(self, target: str) -> str:
        return self.resolver.resolve_str(target)


def _nowhere(intent: Mapping[str, Any]) -> None:
    """Where an intent goes when nothing runs the action (a preview, a test)."""


@dataclass(frozen=True)
class ApplyContext(ObserveContext):
    """What a mutation may use: the same root, the view it reads with (``fs``), and
    the writer that wraps that view (``writer``)."""

    writer: WritableFS = field(kw_only=True)
    #: Keep, durably and before a remote call, what the call is about to make
    #: true that trueup could not recognise afterwards as its own (the digest of
    #: a secret it generates). Should the run die during the call, the next plan
    #: finds the intent in the applied record (``INTENT`` in its detail) and can
    #: tell "written by that run" from "changed by somebody".
    intend: Callable[[Mapping[str, Any]], None] = _nowhere

    def reading(self) -> ObserveContext:
        """The same root and file system, to observe with: one resolver serves both,
        so a run checks and spells each target once."""
        read = ObserveContext(self.root, self.fs, self.env, self.services)
        object.__setattr__(read, "resolver", self.resolver)
        return read


#: The applied-record detail key of an intent (see ``ApplyContext.intend``).
INTENT = "intent"

# The payload of drift that --overwrite cannot take over (something in the way,
# a value trueup cannot edit): a person fixes it by hand, then plans again.
BY_HAND: Mapping[str, Any] = {"by_hand": True}


def obstacle(observed: Observed) -> str:
    """Why what was observed stops a write, in words (its own ``reason`` when it has one)."""
    state = observed.state
    if observed.detail.get("reason"):
        return str(observed.detail["reason"])
    if state == "blocked":
        return "a file stands where a folder above the target should be"
    if state == "special":
        return "a pipe, socket or device (not a file, link or folder) is in the way"
    return f"a {state} is in the way"


@dataclass(frozen=True, slots=True)
class Decision:
    """A kind's plan for one resource, before the planner adds ordering."""

    type: ActionType
    summary: str
    payload: Mapping[str, Any] = field(default_factory=dict)
    destroys: bool = False
    migrates: bool = False
    drift: Mapping[str, str | None] | None = None
    #: What the executor reads (``Action``'s fields of the same names): a kind
    #: sets ``exclusive``; the planner sets the other two for dropped ids.
    exclusive: bool = False
    handed_over: str | None = None
    frees: str | None = None


class Touched(NamedTuple):
    """The paths an action may change (their old state is kept before it runs)."""

    paths: list[str]
    #: It may remove the folders it empties: their modes are kept too, so a
    #: restore brings them back as they were.
    prunes: bool = False


class Kind:
    """Base of every kind; subclasses override what applies to them."""

    name: ClassVar[str]
    policies: ClassVar[tuple[str, ...]]
    #: Whether the old state of what an action touches can be kept and put back
    #: (local files: ``touches``). False for remote APIs: there is nothing to
    #: restore from, so a failure leaves a checkpoint and each action runs alone,
    #: journaled before its remote call. (Whether a kind's targets are paths, which
    #: the planner asks, is plan/restructure.py's ``PathKind``, not this.)
    restorable: ClassVar[bool] = True
    #: The ``verify.method``s that fit this kind (declare/models.py VERIFY_METHODS);
    #: any other is refused at load.
    verify_methods: ClassVar[tuple[str, ...]] = ("digest", "command")
    #: Whether independent actions of this kind may run at once, each in its own
    #: thread (execute/remote_scheduler.py): provider API calls, which share no
    #: file system writer. Implies not ``restorable``.
    concurrent: ClassVar[bool] = False
    #: Whether what ``observe`` reads is all under the root, so the stat witnesses
    #: of a remembered no-op plan (plan/memo.py) would notice it change. A tool's
    #: version or a credential in the keyring is not: a plan holding one is
    #: always computed afresh.
    witnessed: ClassVar[bool] = True

    @property
    def default_policy(self) -> str:
        return self.policies[0]

    # -- declare ------------------------------------------------------------
    def declaration_model(self) -> type[BaseModel]:
        """The pydantic model of this kind's own fields (besides the common ones)."""
        raise NotImplementedError

    def resolve(
        self, fields: dict[str, Any], policy: str, base_dir: Path, fs: ReadOnlyFS
    ) -> dict[str, Any]:
        """Turn validated fields into a self-contained spec (content-addressed sources)."""
        return fields

    def secret_literal(self, fields: Mapping[str, Any]) -> bool:
        """Whether validated ``fields`` spell out a secret value (not a reference to one).

        The validated-profile cache never holds such a profile: it would keep
        the value in a file of its own.
        """
        return False

    def check(self, resource: Resource) -> None:
        """Declaration rules that need the whole resource (its target), checked at load.

        Raise ``UsageError`` starting with the field at fault, so the error
        names the file, the resource and the field before anything is planned.
        """

    def source_links(self, spec: Mapping[str, Any]) -> list[tuple[str, str]]:
        """The symlinks a resolved source holds, as (where, what it reads).

        Resolution never follows them, but each is installed leading where it
        leads: the loader refuses one that leads out of where the profile may
        read (sources.SourceBounds), like a source there.
        """
        return []

    # -- observe / plan -----------------------------------------------------
    def observe(self, resource: Resource, ctx: ObserveContext) -> Observed:
        raise NotImplementedError

    def plan(
        self,
        resource: Resource | None,
        observed: Observed,
        applied: Applied | None,
        force: bool = False,
    ) -> Decision:
        """Pure. ``resource`` is ``None`` when the declaration dropped it."""
        raise NotImplementedError

    def unrecorded(self, resource: Resource, observed: Observed) -> Decision | None:
        """A target already as declared that trueup has no record of: take it over?

        ``None`` (the default, for most local kinds) leaves it unrecorded: trueup
        did not write it, so it never becomes trueup's to remove. A kind that can
        record it as found, and still never remove it (config keys), may.
        """
        return None

    def overlaps(self, resource: Resource, other: Resource) -> list[str]:
        """What of ``resource`` another profile's ``other`` (same kind, same target on
        the same root) declares too: its target whole by default; a kind whose
        resources share a target piece by piece (config keys) names the pieces."""
        return [resource.target]

    # -- execute ------------------------------------------------------------
    def touches(self, action: Action, resource: Resource, ctx: ObserveContext) -> Touched:
        """What a mutation may change, so the executor keeps its old state first."""
        return Touched([ctx.path_str(resource.target)])

    def apply(
        self, action: Action, resource: Resource, ctx: ApplyContext
    ) -> Mapping[str, Any] | None:
        """Stage one mutation on ``ctx.fs``; the executor commits it.

        A remote kind makes its call here and returns what the provider said
        (its ids): the executor records that at once, before verifying, so a
        crash right after never loses a created object's id.
        """
        raise NotImplementedError

    def scope(self, ctx: ObserveContext) -> list[Observed]:
        """Optional: everything of this kind live in the run's scope, declared or not.

        Each item's ``detail`` has ``id`` and ``description`` (and ``parent``,
        the id of the object it belongs to), so unmanaged items can be reported.
        """
        return []

    def verify(self, action: Action, resource: Resource, ctx: ObserveContext) -> Evidence:
        raise NotImplementedError

    def record(self, action: Action, resource: Resource) -> Mapping[str, Any] | None:
        """Detail for the applied record after success; ``None`` forgets the resource."""
        return {} if action.type is not ActionType.REMOVE_RESOURCE else None

    def preview(self, action: Action, resource: Resource, ctx: ObserveContext) -> str:
        """A human diff of what ``apply`` would do (read-only)."""
        return ""

    def discarded(self, action: Action, resource: Resource, ctx: ObserveContext) -> str:
        """For a drift conflict: the diff of the live work ``--overwrite`` would throw
        away (read-only), so a person decides seeing it; empty when not shown."""
        return ""


def evidence_of(observed: Observed, expected: str | None, method: str = "digest") -> Evidence:
    """Digest verification: the re-observed digest must be the expected one."""
    ok = observed.digest == expected
    return Evidence(
        status="passed" if ok else "failed",
        method=method,
        observed_digest=observed.digest,
        message="" if ok else f"expected {short(expected)}, found {short(observed.digest)}",
    )


def short(digest: str | None) -> str:
    return digest[:12] if digest else "nothing"
