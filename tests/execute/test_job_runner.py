"""The job runner on both back ends: enqueue, checkpoints, resume, mismatch, failure, abort."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator, Mapping
from typing import Any

import pytest

from trueup import audit, authz
from trueup.errors import ExitCode
from trueup.execute.runner import (
    AlreadyRunning,
    LeaseLost,
    Runner,
    Step,
    StepContext,
    StepFailed,
    StepMismatch,
    register,
)
from trueup.execute.worker import Worker
from trueup.model import Target
from trueup.state.jobs import JobStore
from trueup.state.store import Store

ORG = Target("org", "acme", "Acme Inc", "")
CALLS: list[tuple[str, str, int]] = []
FAIL_AT: set[str] = set()


def _count(ctx: StepContext) -> Mapping[str, Any]:
    CALLS.append((ctx.run.id, ctx.step.id, ctx.attempt))
    if ctx.step.id in FAIL_AT:
        raise RuntimeError(f"provider said no to {ctx.step.id}")
    if ctx.step.params.get("abort_after"):
        ctx.abort.set()
    return {"id": f"remote-{ctx.step.id}", "seen": sorted(ctx.checkpoints)}


register("test.count", _count)


def steps(*ids: str, **params: Any) -> list[Step]:
    return [Step(i, "test.count", dict(params.get(i, {}))) for i in ids]


@pytest.fixture
def store(store_url: str) -> Iterator[Store]:
    CALLS.clear()
    FAIL_AT.clear()
    opened = Store.open(store_url)
    yield opened
    opened.close()


@pytest.fixture
def runner(store: Store) -> Iterator[Runner]:
    made = Runner(store, lease_seconds=5)
    yield made
    made.close()


def test_enqueue_takes_the_lock_and_names_the_holder(runner: Runner, store: Store) -> None:
    run_id = runner.enqueue(ORG, steps("a"), "user:alice")
    with pytest.raises(AlreadyRunning) as caught:
        runner.enqueue(ORG, steps("a"), "user:bob")
    assert caught.value.holder is not None and caught.value.holder.id == run_id
    assert run_id in caught.value.message and caught.value.exit_code == ExitCode.CONFLICT
    runner.run_steps(run_id, steps("a"))
    assert store.run(run_id).status == "succeeded"  # type: ignore[union-attr]
    assert runner.enqueue(ORG, steps("a"), "user:bob") != run_id, "a finished job frees the lock"


def test_step_ids_are_unique_within_a_run(runner: Runner) -> None:
    with pytest.raises(Exception, match="appears twice"):
        runner.enqueue(ORG, steps("a", "a"), "user:alice")


def test_steps_run_in_order_with_each_checkpointed(runner: Runner, store: Store) -> None:
    run_id = runner.enqueue(ORG, steps("a", "b", "c"), "user:alice")
    result = runner.run_steps(run_id, steps("a", "b", "c"))
    assert result.status == "succeeded" and result.executed == ["a", "b", "c"]
    job = JobStore(store).job(run_id)
    assert job is not None and job.run.status == "succeeded" and job.lease_owner is None
    assert sorted(job.checkpoints) == ["a", "b", "c"]
    assert job.checkpoints["c"]["result"] == {"id": "remote-c", "seen": ["a", "b"]}
    assert [c[1] for c in CALLS] == ["a", "b", "c"]


def test_failure_is_recorded_then_resume_skips_checkpoints_and_clears_it(
    runner: Runner, store: Store
) -> None:
    run_id = runner.enqueue(ORG, steps("a", "b", "c"), "user:alice")
    FAIL_AT.add("b")
    with pytest.raises(StepFailed) as caught:
        runner.run_steps(run_id, steps("a", "b", "c"))
    assert caught.value.step_id == "b" and "provider said no to b" in caught.value.reason
    assert caught.value.exit_code == ExitCode.FAILED
    job = JobStore(store).job(run_id)
    assert job is not None and job.run.status == "failed"
    assert job.failure is not None and job.failure["step"] == "b"
    assert "provider said no to b" in job.failure["message"]
    assert sorted(job.checkpoints) == ["a"], "no rollback: what completed stays recorded"
    with pytest.raises(AlreadyRunning):
        runner.enqueue(ORG, steps("x"), "user:bob")  # a failed job still holds the lock

    FAIL_AT.clear()
    result = runner.run_steps(run_id, steps("a", "b", "c"))
    assert result.skipped == ["a"] and result.executed == ["b", "c"]
    assert [c[1] for c in CALLS] == ["a", "b", "b", "c"], "a ran once; b ran again after failing"
    job = JobStore(store).job(run_id)
    assert job is not None and job.run.status == "succeeded" and job.failure is None


def test_a_different_step_list_is_refused(runner: Runner, store: Store) -> None:
    run_id = runner.enqueue(ORG, steps("a", "b"), "user:alice")
    with pytest.raises(StepMismatch, match=r"\['a', 'b'\].*\['a', 'c'\]"):
        runner.run_steps(run_id, steps("a", "c"))
    with pytest.raises(StepMismatch, match="parameters differ"):
        runner.run_steps(run_id, steps("a", "b", b={"n": 2}))
    assert not CALLS and JobStore(store).job(run_id).run.status == "queued"  # type: ignore[union-attr]


def test_abort_leaves_exactly_what_a_kill_leaves_and_another_runner_resumes(
    store: Store, store_url: str
) -> None:
    first = Runner(store, lease_seconds=1.5)
    plan = steps("a", "b", "c", b={"abort_after": True})
    run_id = first.enqueue(ORG, plan, "user:alice")
    abort = threading.Event()
    result = first.run_steps(run_id, plan, abort)
    first.close()  # the process is gone: nobody renews the lease
    assert result.status == "aborted" and result.executed == ["a", "b"]
    job = JobStore(store).job(run_id)
    assert job is not None
    assert (job.run.status, job.failure, sorted(job.checkpoints)) == ("running", None, ["a", "b"])
    assert job.lease_owner == first.owner, "the lease is left to run out, as after a kill"

    other_store = Store.open(store_url)
    second = Runner(other_store, lease_seconds=5)
    try:
        with pytest.raises(AlreadyRunning, match="is being worked on"):
            second.run_steps(run_id, plan)
        time.sleep(1.6)
        resumed = second.run_steps(run_id, plan)
    finally:
        second.close()
        other_store.close()
    assert resumed.skipped == ["a", "b"] and resumed.executed == ["c"]
    assert [c[1] for c in CALLS] == ["a", "b", "c"], "no step ran twice past its checkpoint"


def test_a_worker_whose_lease_was_taken_over_cannot_write(store: Store, store_url: str) -> None:
    jobs = JobStore(store)
    stalled = Runner(store, lease_seconds=0.3)
    run_id = stalled.enqueue(ORG, steps("a", "b"), "user:alice")
    claimed = jobs.claim(run_id, stalled.owner, 0.3)
    assert claimed is not None
    time.sleep(0.4)
    other_store = Store.open(store_url)
    taker = Runner(other_store, lease_seconds=5)
    try:
        taken = JobStore(other_store).claim_next(taker.owner, 5)
        assert taken is not None and taken.id == run_id and taken.attempts == 2
        assert not jobs.checkpoint(run_id, stalled.owner, {"a": {}}), "fenced by the lease"
        assert not jobs.succeed(run_id, stalled.owner)
        with pytest.raises(LeaseLost):
            stalled.run_job(claimed)
        assert taker.run_job(taken).status == "succeeded"
    finally:
        taker.close()
        other_store.close()
        stalled.close()


def test_an_unknown_handler_fails_the_step_and_names_it(runner: Runner, store: Store) -> None:
    run_id = runner.enqueue(ORG, [Step("x", "nobody.registered")], "user:alice")
    with pytest.raises(StepFailed, match=r"no step handler named 'nobody\.registered'"):
        runner.run_steps(run_id, [Step("x", "nobody.registered")])


def test_concurrent_workers_claim_each_job_exactly_once(store: Store, store_url: str) -> None:
    ids = []
    for n in range(24):
        target = Target("org", f"o{n}", f"Org {n}", "")
        ids.append(Runner(store).enqueue(target, steps("a", "b"), "user:alice"))
    errors: list[BaseException] = []

    def work() -> None:
        own = Store.open(store_url)
        worker = Runner(own, lease_seconds=5)
        try:
            while (job := worker.claim_next()) is not None:
                worker.run_job(job)
        except BaseException as exc:
            errors.append(exc)
        finally:
            worker.close()
            own.close()

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not errors
    assert sorted(CALLS) == sorted((i, s, 1) for i in ids for s in ("a", "b"))
    assert JobStore(store).counts() == {"succeeded": 24}


def test_a_job_bound_to_another_host_is_left_to_that_hosts_workers(runner: Runner) -> None:
    runner.enqueue(ORG, steps("a"), "user:alice", affinity="elsewhere.example")
    assert runner.claim_next() is None
    here = Target("profile", "ws", "Workstation", "/srv/ws")
    mine = runner.enqueue(here, steps("a"), "user:alice", affinity=socket.gethostname())
    claimed = runner.claim_next()
    assert claimed is not None and claimed.id == mine


def test_a_worker_without_apply_permission_leaves_the_job_to_one_with_it(store: Store) -> None:
    boss = authz.os_actor()
    authz.add_grant(store, boss, boss.key, "admin", "*")
    run_id = Runner(store).enqueue(ORG, steps("a"), "user:alice")
    worker = Worker(store, authz.parse_actor("service:w"), lease_seconds=5)
    try:
        stats = worker.work(threading.Event(), drain=True)
    finally:
        worker.close()
    assert stats.failed == 0 and not CALLS
    assert stats.runs == [{"run": run_id, "status": "left queued"}]
    job = JobStore(store).job(run_id)
    assert job is not None and job.run.status == "queued" and job.attempts == 0
    assert audit.entries(store, event="plan.applied") == [], "nothing was refused or done"
    authz.add_grant(store, boss, "service:w", "apply", "org:*")
    worker = Worker(store, authz.parse_actor("service:w"), lease_seconds=5)
    try:
        assert worker.work(threading.Event(), drain=True).succeeded == 1
    finally:
        worker.close()


def test_a_result_that_is_not_json_fails_the_step(runner: Runner) -> None:
    register("test.opaque", lambda ctx: {"client": object()})
    plan = [Step("x", "test.opaque")]
    run_id = runner.enqueue(ORG, plan, "user:alice")
    with pytest.raises(StepFailed, match="TypeError"):
        runner.run_steps(run_id, plan)


def test_a_live_lease_is_live_whatever_this_hosts_clock_says(
    runner: Runner, store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Leases run by the database's clock: an operator whose clock is an hour ahead
    must not take a job a worker holds for an abandoned one."""
    run_id = runner.enqueue(ORG, steps("a"), "user:alice")
    claimed = runner.claim_next()
    assert claimed is not None and claimed.run.id == run_id
    real = time.time
    monkeypatch.setattr(time, "time", lambda: real() + 3600)
    held = store.run(run_id)
    assert held is not None and held.holder_alive is True
    monkeypatch.setattr(time, "time", lambda: real() - 3600)
    store.db.execute("UPDATE runs SET lease_expires_at = lease_expires_at - 60")
    lapsed = store.run(run_id)
    assert lapsed is not None and lapsed.holder_alive is False, "a clock behind keeps no lease"
