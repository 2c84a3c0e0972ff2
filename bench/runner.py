#!/usr/bin/env python3
"""Shared-state benchmark: audit and journal write rates, and the job queue under load.

Run on demand, never from the test suite::

    .venv/bin/python bench/runner.py                      # everything, 3 repetitions
    .venv/bin/python bench/runner.py --only drain --runs 5 --jobs 1000
    .venv/bin/python bench/runner.py --postgres postgresql://postgres@127.0.0.1:5432/test

Scenarios:

1. ``writes``: audit appends per second (one row per transaction, hash-chained,
   serialised) and journal writes per second (``Store.event``, one row per
   transaction), on SQLite (WAL, synchronous=FULL) and PostgreSQL;
2. ``drain``: 1,000 queued small runs (3 steps, each a simulated provider
   call of ``--step-ms`` milliseconds) drained by 1 and by 4 ``trueup worker``
   processes on PostgreSQL; throughput, and the ratio 4 : 1 (target >= 3);
   also with zero-latency steps, which measures only trueup's own overhead;
3. ``chaos``: the same drain with 4 workers while a random worker is killed
   with SIGKILL every ``--kill-every`` seconds (and replaced): no run may be
   lost, and no step may run again after its checkpoint was written.

Every PostgreSQL repetition uses its own fresh schema (dropped afterwards).
Medians of ``--runs`` repetitions are printed and written to
``bench/.work/runner-results.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import secrets
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
WORK = BENCH / ".work"
RESULTS = WORK / "runner-results.json"
TRUEUP = REPO / ".venv" / "bin" / "trueup"
DEFAULT_PG = os.environ.get("TRUEUP_TEST_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/test")

sys.path.insert(0, str(REPO / "src"))

from trueup import audit  # noqa: E402
from trueup.authz import Actor  # noqa: E402
from trueup.execute.runner import Runner, Step  # noqa: E402
from trueup.model import Target  # noqa: E402
from trueup.state.jobs import JobStore  # noqa: E402
from trueup.state.store import Store  # noqa: E402

BENCHER = Actor("service", "bench", "bench")


# -- stores -----------------------------------------------------------------
@contextmanager
def pg_store(base: str) -> Iterator[str]:
    """A fresh, migrated schema on ``base``; dropped afterwards."""
    import psycopg

    schema = f"bench_{secrets.token_hex(5)}"
    with psycopg.connect(base, autocommit=True) as admin:
        admin.execute(f"CREATE SCHEMA {schema}")
    sep = "&" if "?" in base else "?"
    url = f"{base}{sep}options=-csearch_path%3D{schema}"
    try:
        Store.open(url).close()
        yield url
    finally:
        with psycopg.connect(base, autocommit=True) as admin:
            admin.execute(f"DROP SCHEMA {schema} CASCADE")


@contextmanager
def sqlite_store() -> Iterator[str]:
    WORK.mkdir(exist_ok=True)
    with tempfile.TemporaryDirectory(dir=WORK) as folder:
        url = f"sqlite:///{folder}/state.db"
        Store.open(url).close()
        yield url


def store_for(backend: str, pg: str) -> Any:
    return sqlite_store() if backend == "sqlite" else pg_store(pg)


def median(values: list[float]) -> float:
    return round(statistics.median(values), 1)


# -- 1. write rates ---------------------------------------------------------
def audit_rate(url: str, n: int) -> float:
    store = Store.open(url)
    target = Target("org", "acme", "Acme Inc", "")
    started = time.perf_counter()
    for i in range(n):
        audit.record(store, "plan.computed", "success", BENCHER, target, detail={"i": i})
    elapsed = time.perf_counter() - started
    assert audit.verify(store).ok
    store.close()
    return n / elapsed


def journal_rate(url: str, n: int) -> float:
    store = Store.open(url)
    run = store.start_run(Target("org", "acme", "Acme Inc", ""), "0" * 64, None, "bench")
    started = time.perf_counter()
    for i in range(n):
        store.event(run.id, "bench.event", {"i": i})
    elapsed = time.perf_counter() - started
    store.close()
    return n / elapsed


def bench_writes(args: argparse.Namespace) -> dict[str, Any]:
    results: dict[str, Any] = {}
    for backend in ("sqlite", "postgresql"):
        for name, fn in (
            ("audit_appends_per_s", audit_rate),
            ("journal_writes_per_s", journal_rate),
        ):
            samples = []
            for _ in range(args.runs):
                with store_for(backend, args.postgres) as url:
                    samples.append(fn(url, args.writes))
            results[f"{backend}.{name}"] = {"median": median(samples), "samples": samples}
            print(f"{backend:>10} {name:<22} median {median(samples):>8.1f}/s  {samples}")
    return results


# -- 2. queue drain ---------------------------------------------------------
def enqueue(url: str, jobs: int, step_ms: float, log: Path | None) -> list[str]:
    store = Store.open(url)
    runner = Runner(store)
    ids = []
    for n in range(jobs):
        steps = [
            Step(f"s{i}", "testing.record", {"log": str(log), "sleep": step_ms / 1000})
            if log is not None
            else Step(f"s{i}", "testing.sleep", {"seconds": step_ms / 1000})
            for i in range(3)
        ]
        target = Target("org", f"org-{n}", f"Org {n}", "")
        ids.append(runner.enqueue(target, steps, "service:bench"))
    runner.close()
    store.close()
    return ids


def spawn_worker(url: str, *extra: str) -> subprocess.Popen[bytes]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TRUEUP_")}
    env.update({"TRUEUP_STATE": url, "TRUEUP_DATA": str(WORK / "data")})
    command = [str(TRUEUP), "worker", "--import", "trueup.testing.steps", "--poll", "0.05"]
    return subprocess.Popen(
        [*command, *extra], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )


def counts(url: str) -> dict[str, int]:
    store = Store.open(url)
    try:
        return JobStore(store).counts()
    finally:
        store.close()


def drain_once(pg: str, workers: int, jobs: int, step_ms: float) -> float:
    with pg_store(pg) as url:
        enqueue(url, jobs, step_ms, None)
        started = time.perf_counter()
        procs = [spawn_worker(url, "--drain", "--lease", "10") for _ in range(workers)]
        for proc in procs:
            _, err = proc.communicate()
            if proc.returncode != 0:
                raise RuntimeError(f"worker failed: {err.decode()[-2000:]}")
        elapsed = time.perf_counter() - started
        done = counts(url)
        if done != {"succeeded": jobs}:
            raise RuntimeError(f"queue not drained: {done}")
    return jobs / elapsed


def bench_drain(args: argparse.Namespace) -> dict[str, Any]:
    results: dict[str, Any] = {}
    for step_ms in (args.step_ms, 0.0):
        rates: dict[int, list[float]] = {1: [], 4: []}
        for _ in range(args.runs):
            for workers in (1, 4):
                rates[workers].append(drain_once(args.postgres, workers, args.jobs, step_ms))
        one, four = median(rates[1]), median(rates[4])
        key = f"drain.{int(step_ms)}ms_steps"
        results[key] = {
            "jobs": args.jobs,
            "steps_per_job": 3,
            "runs_per_s_1_worker": {"median": one, "samples": rates[1]},
            "runs_per_s_4_workers": {"median": four, "samples": rates[4]},
            "ratio_4_to_1": round(four / one, 2),
        }
        print(
            f"drain {args.jobs} runs x 3 steps of {step_ms:g} ms: 1 worker {one}/s, "
            f"4 workers {four}/s, ratio {four / one:.2f}  (samples {rates})"
        )
    return results


# -- 3. chaos ---------------------------------------------------------------
def chaos_once(pg: str, jobs: int, step_ms: float, kill_every: float) -> dict[str, Any]:
    WORK.mkdir(exist_ok=True)
    with tempfile.TemporaryDirectory(dir=WORK) as folder, pg_store(pg) as url:
        log = Path(folder) / "executions.log"
        enqueue(url, jobs, step_ms, log)
        lease = "2"
        procs = [spawn_worker(url, "--lease", lease) for _ in range(4)]
        kills = 0
        started = time.perf_counter()
        next_kill = started + kill_every
        while counts(url).get("succeeded", 0) < jobs:
            if time.perf_counter() > started + 600:
                raise RuntimeError(f"chaos drain stuck: {counts(url)}")
            if time.perf_counter() >= next_kill:
                victim = random.randrange(len(procs))
                procs[victim].send_signal(signal.SIGKILL)
                procs[victim].wait()
                procs[victim] = spawn_worker(url, "--lease", lease)
                kills += 1
                next_kill += kill_every
            time.sleep(0.1)
        elapsed = time.perf_counter() - started
        for proc in procs:
            proc.send_signal(signal.SIGTERM)
        for proc in procs:
            proc.wait(timeout=30)
        return check_chaos(url, log, jobs) | {"kills": kills, "seconds": round(elapsed, 1)}


def check_chaos(url: str, log: Path, jobs: int) -> dict[str, Any]:
    store = Store.open(url)
    try:
        all_jobs = JobStore(store).jobs(limit=jobs + 10)
    finally:
        store.close()
    succeeded = [j for j in all_jobs if j.run.status == "succeeded"]
    complete = [j for j in succeeded if sorted(j.checkpoints) == ["s0", "s1", "s2"]]
    checkpoint = {(j.id, s): int(c["attempt"]) for j in all_jobs for s, c in j.checkpoints.items()}
    executions: dict[tuple[str, str], int] = {}
    past_checkpoint = 0
    for line in log.read_text().splitlines():
        run, step, attempt, _pid = line.split()
        executions[(run, step)] = executions.get((run, step), 0) + 1
        if int(attempt) > checkpoint.get((run, step), 10**9):
            past_checkpoint += 1
    return {
        "jobs": jobs,
        "succeeded_with_all_checkpoints": len(complete),
        "lost": jobs - len(complete),
        "taken_over": sum(1 for j in all_jobs if j.attempts > 1),
        "steps_rerun_in_flight": sum(n - 1 for n in executions.values() if n > 1),
        "executed_past_checkpoint": past_checkpoint,
    }


def bench_chaos(args: argparse.Namespace) -> dict[str, Any]:
    samples = [
        chaos_once(args.postgres, args.jobs, args.step_ms, args.kill_every)
        for _ in range(args.runs)
    ]
    for sample in samples:
        print(f"chaos: {sample}")
    ok = all(s["lost"] == 0 and s["executed_past_checkpoint"] == 0 for s in samples)
    print(f"chaos: {'PASS' if ok else 'FAIL'}: no run lost, nothing ran past a checkpoint")
    return {"chaos": {"ok": ok, "samples": samples}}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--postgres", default=DEFAULT_PG)
    parser.add_argument("--runs", type=int, default=3, help="repetitions (medians reported)")
    parser.add_argument("--writes", type=int, default=2000, help="rows per write-rate sample")
    parser.add_argument("--jobs", type=int, default=1000)
    parser.add_argument("--step-ms", type=float, default=10.0, help="simulated call per step")
    parser.add_argument("--kill-every", type=float, default=3.0)
    parser.add_argument("--only", choices=("writes", "drain", "chaos"), action="append")
    args = parser.parse_args()
    chosen: dict[str, Callable[[argparse.Namespace], dict[str, Any]]] = {
        "writes": bench_writes,
        "drain": bench_drain,
        "chaos": bench_chaos,
    }
    results: dict[str, Any] = {"args": vars(args), "cpus": os.cpu_count()}
    for name in args.only or list(chosen):
        results.update(chosen[name](args))
    WORK.mkdir(exist_ok=True)
    RESULTS.write_text(json.dumps(results, indent=2))
    print(f"results: {RESULTS}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
