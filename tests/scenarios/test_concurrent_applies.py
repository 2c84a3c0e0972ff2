"""Twenty `trueup apply` processes on one target: one runs, nineteen are refused.

The winner stops itself (SIGSTOP at the ``journal-pending`` boundary, right
after its run row and journal are committed) until every other process has
finished, so the race is real but the outcome does not depend on timing.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time

from world import TRUEUP, World

from trueup import audit
from trueup.state.store import Store

N = 20
FILES = 40


def profile(world: World) -> str:
    text = '[profile]\nid = "ws"\nname = "Team Box"\n'
    for i in range(FILES):
        text += f'\n[[resource]]\nid = "f{i}"\nkind = "file"\ntarget = "f/{i}.txt"\n'
        text += f'content = "file {i}\\n"\n'
    return str(world.write("ws.toml", text))


def stopped(pid: int) -> bool:
    with open(f"/proc/{pid}/stat") as handle:
        return handle.read().rsplit(")", 1)[1].split()[0] == "T"


def test_twenty_concurrent_applies_one_runs_the_rest_name_it(world: World, store_url: str) -> None:
    path = profile(world)
    env = world.env({"TRUEUP_STATE": store_url, "TRUEUP_CRASH_AT": "journal-pending:1:SIGSTOP"})
    args = [TRUEUP, "apply", path, "--root", str(world.root), "--yes"]
    procs = [
        subprocess.Popen(
            args,
            env=env,
            cwd=world.base,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(N)
    ]
    try:
        deadline = time.monotonic() + 90
        while sum(p.poll() is not None for p in procs) < N - 1:
            assert time.monotonic() < deadline, "the losers did not finish"
            time.sleep(0.05)
        winners = [p for p in procs if p.poll() is None]
        assert len(winners) == 1
        winner = winners[0]
        assert stopped(winner.pid), "the winner holds the lock mid-run"
        losers = [(p.returncode, *p.communicate()) for p in procs if p is not winner]
    finally:
        for p in procs:
            if p.poll() is None:
                os.kill(p.pid, signal.SIGCONT)
    _, err = winner.communicate(timeout=90)
    assert winner.returncode == 0, err
    store = Store.open(store_url)
    try:
        (run,) = store.runs()
        assert run.status == "finished" and run.outcome == "converged" and run.pid == winner.pid
        for code, _, loser_err in losers:
            assert code == 4, loser_err
            assert f"locked by run {run.id}" in loser_err
            assert f"pid {winner.pid}" in loser_err and "is still running" in loser_err
        applied = audit.entries(store, event="plan.applied", limit=100)
        outcomes = sorted(e.outcome for e in applied)
        assert outcomes == ["refused"] * (N - 1) + ["success"]
        assert audit.verify(store).ok
    finally:
        store.close()
    assert all((world.root / f"f/{i}.txt").read_text() == f"file {i}\n" for i in range(FILES))


def test_an_apply_refused_by_the_lock_shows_no_plan_computed_mid_run(world: World) -> None:
    path = profile(world)
    env = world.env({"TRUEUP_CRASH_AT": "journal-pending:1:SIGSTOP"})
    args = [TRUEUP, "apply", path, "--root", str(world.root), "--yes"]
    holder = subprocess.Popen(
        args, env=env, cwd=world.base, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL
    )
    try:
        deadline = time.monotonic() + 60
        while not stopped(holder.pid):
            assert time.monotonic() < deadline, "the first apply never took the lock"
            time.sleep(0.05)
        second = world.run("apply", path, "--root", str(world.root), "--yes")
        assert second.code == 4 and "locked by run" in second.err
        assert "Plan for" not in second.out and "converged" not in second.out, second.out
    finally:
        os.kill(holder.pid, signal.SIGCONT)
    assert holder.wait(timeout=60) == 0
