"""`trueup worker` processes sharing one queue: queued applies, kills, takeovers, resumes."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from trueup import audit
from trueup.authz import os_actor
from trueup.execute.runner import Runner, Step
from trueup.model import Target
from trueup.state.jobs import JobStore
from trueup.state.store import Store

TRUEUP = str(Path(sys.executable).parent / "trueup")
ACME = Target("org", "acme", "Acme Inc", "")
PROFILE = """
[profile]
id = "ws"
name = "Team Box"

[[resource]]
id = "rc"
kind = "file"
target = ".toolrc"
content = "queued\\n"
"""


@pytest.fixture
def store(store_url: str) -> Iterator[Store]:
    opened = Store.open(store_url)
    yield opened
    opened.close()


def env(tmp_path: Path, url: str) -> dict[str, str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("TRUEUP_")}
    return {**clean, "TRUEUP_STATE": url, "TRUEUP_DATA": str(tmp_path / "data"), "NO_COLOR": "1"}


def trueup(tmp_path: Path, url: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [TRUEUP, *args], env=env(tmp_path, url), capture_output=True, text=True, timeout=60
    )


def worker(tmp_path: Path, url: str, *args: str) -> subprocess.Popen[str]:
    command = [TRUEUP, "worker", "--import", "trueup.testing.steps", "--poll", "0.05", *args]
    return subprocess.Popen(
        command, env=env(tmp_path, url), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )


@pytest.mark.parametrize("store_url", ["postgresql"], indirect=True)
def test_a_queued_profile_apply_is_run_by_a_worker(tmp_path: Path, store_url: str) -> None:
    root = tmp_path / "root"
    root.mkdir()
    profile = tmp_path / "ws.toml"
    profile.write_text(PROFILE)
    queued = trueup(
        tmp_path, store_url, "apply", str(profile), "--root", str(root), "--queue", "--yes"
    )
    assert queued.returncode == 0, queued.stderr
    listed = trueup(tmp_path, store_url, "jobs", "list", "--json")
    (job,) = json.loads(listed.stdout)["data"]
    assert job["status"] == "queued" and job["steps"] == ["apply"]
    blocked = trueup(tmp_path, store_url, "apply", str(profile), "--root", str(root), "--yes")
    assert blocked.returncode == 4 and "is queued for a worker" in blocked.stderr

    done = worker(tmp_path, store_url, "--drain").communicate(timeout=60)
    assert "1 succeeded" in done[0], done
    assert (root / ".toolrc").read_text() == "queued\n"
    store = Store.open(store_url)
    try:
        assert store.run(job["id"]).status == "succeeded"  # type: ignore[union-attr]
        events = [(e.event, e.outcome) for e in audit.entries(store)]
        assert events == [
            ("plan.applied", "success"),
            ("plan.applied", "refused"),
            ("plan.queued", "success"),
        ]
        assert audit.entries(store)[0].detail["queued"] is True  # type: ignore[index]
    finally:
        store.close()
    again = trueup(tmp_path, store_url, "apply", str(profile), "--root", str(root), "--yes")
    assert again.returncode == 0 and "nothing to change" in again.stdout


def test_a_killed_workers_apply_is_not_resumed_with_a_profile_changed_since_it_was_queued(
    tmp_path: Path, store_url: str
) -> None:
    """Nobody queued what the profile says now: the job fails as stale, as recover does."""
    root = tmp_path / "root"
    root.mkdir()
    profile = tmp_path / "ws.toml"
    profile.write_text(PROFILE + SECOND.format(text="as queued"))
    queued = trueup(
        tmp_path, store_url, "apply", str(profile), "--root", str(root), "--queue", "--yes"
    )
    assert queued.returncode == 0, queued.stderr
    killed = subprocess.run(
        [TRUEUP, "worker", "--drain", "--lease", "1"],
        env={**env(tmp_path, store_url), "TRUEUP_CRASH_AT": "mutated"},
        capture_output=True,
        timeout=60,
    )
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    profile.write_text(PROFILE + SECOND.format(text="never queued"))
    time.sleep(1.2)  # the lease runs out
    out, err = worker(tmp_path, store_url, "--drain", "--lease", "1").communicate(timeout=60)
    assert "1 failed" in out, out + err
    listed = trueup(tmp_path, store_url, "jobs", "list")
    assert "changed after the apply was queued" in listed.stdout, listed.stdout
    assert not (root / "b.txt").exists() or (root / "b.txt").read_text() == "as queued\n"


SECOND = """
[[resource]]
id = "b"
kind = "file"
target = "b.txt"
content = "{text}\\n"
"""


def test_a_killed_workers_job_is_taken_over_from_its_checkpoint(
    tmp_path: Path, store: Store, store_url: str
) -> None:
    log = tmp_path / "executions.log"
    plan = [Step(f"s{i}", "testing.record", {"log": str(log), "sleep": 0.4}) for i in range(4)]
    runner = Runner(store)
    run_id = runner.enqueue(ACME, plan, "user:alice")
    runner.close()
    jobs = JobStore(store)

    first = worker(tmp_path, store_url, "--lease", "1")
    deadline = time.monotonic() + 30
    while "s0" not in jobs.job(run_id).checkpoints:  # type: ignore[union-attr]
        assert time.monotonic() < deadline and first.poll() is None
        time.sleep(0.02)
    os.kill(first.pid, signal.SIGKILL)
    first.wait()

    second = worker(tmp_path, store_url, "--lease", "1", "--max-jobs", "1")
    out, err = second.communicate(timeout=60)
    assert "1 succeeded" in out, err
    job = jobs.job(run_id)
    assert job is not None and job.run.status == "succeeded" and job.attempts == 2
    runs = [line.split() for line in log.read_text().splitlines()]
    assert [r[1] for r in runs].count("s0") == 1, "s0 was checkpointed: never run again"
    for _, step, attempt, _ in runs:
        assert int(attempt) <= job.checkpoints[step]["attempt"], "nothing ran past a checkpoint"
    assert "s3" in {r[1] for r in runs if r[2] == "2"}, "the second worker finished it"


def failing_job(tmp_path: Path, store: Store, *first: str) -> tuple[str, Path, Path]:
    """Queue ``first`` recording steps, one that fails until ``fixed`` exists, and a last one.

    Returns the run id, the executions log and the file that fixes the failure.
    """
    log, fix = tmp_path / "executions.log", tmp_path / "fixed"
    plan = [
        *(Step(name, "testing.record", {"log": str(log)}) for name in first),
        Step("route", "testing.fail", {"unless": str(fix), "message": "zone is not active"}),
        Step("finish", "testing.record", {"log": str(log)}),
    ]
    runner = Runner(store)
    run_id = runner.enqueue(ACME, plan, "service:ci")
    runner.close()
    return run_id, log, fix


@pytest.mark.parametrize("store_url", ["sqlite"], indirect=True)
def test_a_failed_job_is_resumed_after_the_fix(
    tmp_path: Path, store: Store, store_url: str
) -> None:
    run_id, log, fix = failing_job(tmp_path, store, "create")
    drained = worker(tmp_path, store_url, "--drain")
    out, _ = drained.communicate(timeout=60)
    assert "1 failed" in out and drained.returncode == 7, "a batch notices a failed job"
    job = JobStore(store).job(run_id)
    assert job is not None and job.run.status == "failed"
    assert job.failure == {
        **job.failure,
        "step": "route",
        "message": "RuntimeError: zone is not active",
    }  # type: ignore[dict-item]
    failed = audit.entries(store, event="plan.applied")[0]
    assert failed.outcome == "failed" and "zone is not active" in (failed.reason or "")
    assert failed.actor == {"type": "service", "id": "ci", "name": "ci"}

    fix.touch()
    assert trueup(tmp_path, store_url, "jobs", "resume", run_id).returncode == 0
    requeued = audit.entries(store, event="plan.queued")[0]
    assert (requeued.run_id, requeued.detail) == (run_id, {"resumed": True})
    assert requeued.actor["type"] == "human", "who re-queued it, not who first queued it"
    out, _ = worker(tmp_path, store_url, "--drain").communicate(timeout=60)
    assert "1 succeeded" in out
    job = JobStore(store).job(run_id)
    assert job is not None and job.run.status == "succeeded" and job.failure is None
    assert [line.split()[1] for line in log.read_text().splitlines()] == ["create", "finish"]


@pytest.mark.parametrize("store_url", ["sqlite"], indirect=True)
def test_a_job_resumed_here_is_audited_like_any_apply(
    tmp_path: Path, store: Store, store_url: str
) -> None:
    run_id, _, fix = failing_job(tmp_path, store)
    worker(tmp_path, store_url, "--drain").communicate(timeout=60)
    fix.touch()
    resumed = trueup(
        tmp_path, store_url, "jobs", "resume", run_id, "--here", "--import", "trueup.testing.steps"
    )
    assert resumed.returncode == 0, resumed.stderr
    done = audit.entries(store, event="plan.applied")[0]
    assert (done.outcome, done.run_id, done.detail) == (
        "success",
        run_id,
        {"resumed_here": True},
    )


@pytest.mark.parametrize("store_url", ["sqlite"], indirect=True)
def test_a_worker_whose_token_is_revoked_stops_claiming_jobs(
    tmp_path: Path, store_url: str
) -> None:
    admin = ("grant", "add", os_actor().key, "admin", "*")
    assert trueup(tmp_path, store_url, *admin).returncode == 0
    grant = ("grant", "add", "service:deploy", "apply", "profile:ws@*")
    assert trueup(tmp_path, store_url, *grant).returncode == 0
    token = trueup(tmp_path, store_url, "token", "create", "service:deploy").stdout.strip()
    running = subprocess.Popen(
        [TRUEUP, "worker", "--poll", "0.05"],
        env={**env(tmp_path, store_url), "TRUEUP_TOKEN": token},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        time.sleep(1)  # working, with a valid token
        assert running.poll() is None, running.communicate()
        assert trueup(tmp_path, store_url, "token", "revoke", "service:deploy").returncode == 0
        root = tmp_path / "root"
        root.mkdir()
        profile = tmp_path / "ws.toml"
        profile.write_text(PROFILE)
        queue = ("apply", str(profile), "--root", str(root), "--queue", "--yes")
        assert trueup(tmp_path, store_url, *queue).returncode == 0
        _, err = running.communicate(timeout=30)
    finally:
        running.kill()
    assert running.returncode == 5 and "not a known token" in err, err
    assert not (root / ".toolrc").exists()
    (job,) = json.loads(trueup(tmp_path, store_url, "jobs", "list", "--json").stdout)["data"]
    assert job["status"] == "queued"
