"""``trueup worker`` and ``trueup jobs``: the shared queue of applies."""

import click

from trueup.cli.command import group
from trueup.cli.common import engine_for, json_option, run_command, state_option
from trueup.cli.output import Output, first_visible
from trueup.errors import ExitCode, UsageError

jobs_app = group("jobs", "Queued applies: list them, resume a failed one.")
imports_option = click.option(
    "--import",
    "imports",
    multiple=True,
    help="Import this module for more step handlers (repeatable).",
)
limit_option = click.option(
    "--limit", type=click.IntRange(1, 1_000_000), default=50, show_default=True
)


@click.command("worker")
@click.option(
    "--lease",
    type=click.FloatRange(min=1.0),
    default=30.0,
    show_default=True,
    help="Seconds a claimed job stays ours unrenewed.",
)
@click.option(
    "--poll",
    type=click.FloatRange(min=0.01),
    default=1.0,
    show_default=True,
    help="Seconds between looks at an empty queue.",
)
@click.option("--drain", is_flag=True, help="Exit once the queue is empty (batch and CI).")
@click.option("--max-jobs", type=click.IntRange(min=1), help="Exit after this many jobs.")
@imports_option
@state_option
@json_option
def worker(
    lease: float,
    poll: float,
    drain: bool,
    max_jobs: int | None,
    imports: tuple[str, ...],
    state: str | None,
    json_out: bool,
) -> None:
    """Run queued applies until stopped; start one or more per host, on any number of hosts."""
    out = Output("worker", json_out)

    def body() -> int:
        import threading

        from trueup.execute.worker import Worker, load_handlers, stop_on_signals

        load_handlers(imports or ())
        engine = engine_for(state)
        stop = threading.Event()
        runner = Worker(
            engine.store,
            engine.actor,
            lease_seconds=lease,
            poll_seconds=poll,
            identity=engine.reauthenticate,
        )
        try:
            with stop_on_signals(stop):
                stats = runner.work(stop, drain=drain, max_jobs=max_jobs)
        finally:
            runner.close()
        message = (
            f"{stats.succeeded} succeeded, {stats.failed} failed, {stats.aborted} stopped, "
            f"{stats.lost} taken over"
        )
        # A batch (or CI) must notice a failed job: exit 7, as a failed apply does.
        code = int(ExitCode.FAILED) if stats.failed else 0
        out.report(message, stats.to_json(), "failed" if code else "ok", code)
        return code

    run_command(out, body)


JOB_STATUSES = ("queued", "running", "failed", "succeeded", "abandoned")


@jobs_app.command("list")
@click.option("--status", multiple=True, help="queued, running, failed, succeeded, abandoned.")
@limit_option
@state_option
@json_option
def jobs_list(status: tuple[str, ...], limit: int, state: str | None, json_out: bool) -> None:
    """Jobs, newest first, with their progress and failure."""
    out = Output("jobs list", json_out)

    def body() -> int:
        from trueup import authz
        from trueup.state.jobs import JobStore

        unknown = sorted(set(status or ()) - set(JOB_STATUSES))
        if unknown:
            raise UsageError(
                f"--status {unknown[0]}: not a job status",
                hint=f"use one of {', '.join(JOB_STATUSES)}",
            )
        engine = engine_for(state)
        jobs = first_visible(
            lambda offset, page: JobStore(engine.store).jobs(status or (), page, offset),
            lambda j: authz.allowed(engine.store, engine.actor, "plan", j.run.target.key),
            limit,
        )
        rows = [
            {
                **j.run.to_json(),
                "steps": [s["id"] for s in j.steps],
                "checkpointed": sorted(j.checkpoints),
                "failure": j.failure,
                "attempts": j.attempts,
            }
            for j in jobs
        ]
        if json_out:
            out.envelope("ok", 0, f"{len(rows)} jobs", rows)
            return 0
        if not rows:
            out.print("no jobs")
        for row in rows:
            done = f"{len(row['checkpointed'])}/{len(row['steps'])} steps"
            failure = row["failure"]
            why = f"  failed at {failure['step']}: {failure['message']}" if failure else ""
            out.print(f"{row['id']}  {row['status']:<9}  {done}  {row['target']['name']}{why}")
        return 0

    run_command(out, body)


@jobs_app.command("resume")
@click.argument("run_id", help="The failed (or stalled) job.")
@click.option("--here", is_flag=True, help="Run it in this process now instead of re-queueing.")
@imports_option
@state_option
@json_option
def jobs_resume(
    run_id: str, here: bool, imports: tuple[str, ...], state: str | None, json_out: bool
) -> None:
    """Resume a job from its last checkpoint (its recorded failure is cleared)."""
    out = Output("jobs resume", json_out)

    def body() -> int:
        from trueup.execute.runner import Runner
        from trueup.execute.worker import load_handlers
        from trueup.state.jobs import JobStore

        engine = engine_for(state)
        job = JobStore(engine.store).job(run_id)
        if job is None:
            raise UsageError(f"no job {run_id!r}")
        engine.gates(job.run.target, "plan.applied", job.run.plan_digest).authorize("apply")
        if not here:
            if not JobStore(engine.store).requeue(run_id):
                raise UsageError(
                    f"run {run_id} is {job.run.status}; only a failed job is re-queued",
                    hint="a running job with a dead worker is taken over by any worker; "
                    "or use --here",
                )
            from trueup import audit

            # Who put it back in the queue is on the record; the worker's apply names
            # the requester, as for any queued apply.
            audit.record(
                engine.store,
                "plan.queued",
                "success",
                engine.actor,
                job.run.target,
                plan_digest=job.run.plan_digest,
                run_id=run_id,
                detail={"resumed": True},
            )
            message = f"run {run_id} queued again; a worker resumes it from its checkpoint"
            out.report(message, {"run": run_id}, "queued")
            return 0
        load_handlers(imports or ())
        from trueup.execute.runner import Step, StepFailed
        from trueup.execute.worker import record_job

        runner = Runner(engine.store)
        try:
            result = runner.run_steps(run_id, [Step.from_json(s) for s in job.steps])
        except StepFailed as failed:
            record_job(engine.store, job.run, engine.actor, failed, resumed_here=True)
            raise
        finally:
            runner.close()
        if result.status == "succeeded":
            record_job(engine.store, job.run, engine.actor, None, resumed_here=True)
        message = f"run {run_id} {result.status}"
        out.report(message, result.to_json(), result.status)
        return 0

    run_command(out, body)
