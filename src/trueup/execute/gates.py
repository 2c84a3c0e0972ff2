"""The gates every apply passes before anything changes: the lock and staleness."""

from __future__ import annotations

from trueup.errors import ConflictError
from trueup.model import Plan, Target
from trueup.state.store import RunInfo, RunLocked, Store


def acquire(store: Store, target: Target, plan: Plan, actor: str) -> RunInfo:
    """Take the target's lock (a run row), or refuse naming whoever holds it."""
    try:
        return store.start_run(target, plan.digest, plan.source, actor)
    except RunLocked as locked:
        raise locked_error(locked.holder, target) from None


def locked_error(holder: RunInfo | None, target: Target) -> ConflictError:
    if holder is None:
        return ConflictError(f"{target.name} is locked by another run that just finished; retry")
    alive = holder.holder_alive
    state = {
        True: "is still running",
        False: "was interrupted (its process is gone)",
        None: "runs on another host",
    }[alive]
    if holder.status == "interrupted":
        state = "was interrupted"
    hint = (
        "wait for it to finish"
        if alive and holder.status == "running"
        else f"run `trueup recover {holder.id}` to finish it, or `trueup abandon {holder.id}`"
    )
    return ConflictError(
        f"{target.name} is locked by run {holder.id} (host {holder.host}, pid {holder.pid}, "
        f"since {holder.started_at}), which {state}",
        hint=hint,
        data={"holder": holder.to_json()},
    )


def check_fresh(expected: Plan, actual: Plan) -> None:
    """Refuse a plan whose inputs moved since it was computed; say what moved."""
    if expected.digest == actual.digest:
        return
    moved: list[str] = []
    if expected.declaration != actual.declaration:
        moved.append("the declaration changed")
    for rid in sorted(set(expected.observed) | set(actual.observed)):
        before, after = expected.observed.get(rid), actual.observed.get(rid)
        if before != after:
            what = "appeared" if before is None else "disappeared" if after is None else "changed"
            moved.append(f"{rid}: live state {what}")
    if not moved:
        moved.append("the planned actions differ")
    raise ConflictError(
        "the plan is stale: " + "; ".join(moved[:10]) + (" …" if len(moved) > 10 else ""),
        hint="compute the plan again (trueup plan) and review it",
        data={"moved": moved, "expected": expected.digest, "actual": actual.digest},
    )
