"""The remote scheduler: independent steps at once, bounded, dependents in order."""

from __future__ import annotations

import signal
import threading
import time
from collections.abc import Callable

import pytest

from trueup.errors import UsageError
from trueup.execute.remote_scheduler import (
    DEFAULT_LIMITS,
    Limits,
    RemoteScheduler,
    StepsInterrupted,
)
from trueup.model import Action, ActionType


def step(
    rid: str, kind: str = "cloudflare.dns_record", after: tuple[str, ...] = (), remove: bool = False
) -> Action:
    kind_type = ActionType.REMOVE_RESOURCE if remove else ActionType.WRITE_CONFIG
    return Action(rid, kind, kind_type, f"create {rid}", before=after)


class Recorder:
    """Each step sleeps ``pause`` seconds; records start and end order and peak overlap."""

    def __init__(
        self, pause: float = 0.05, fail: str | None = None, slow: tuple[str, ...] = ()
    ) -> None:
        self.pause = pause
        self.slow = slow
        self.fail = fail
        self.events: list[str] = []
        self.running: dict[str, int] = {}
        self.peak: dict[str, int] = {}
        self.lock = threading.Lock()

    def __call__(self, seq: int, action: Action) -> None:
        provider = action.kind.partition(".")[0]
        with self.lock:
            self.events.append(f"start {action.resource_id}")
            self.running[provider] = self.running.get(provider, 0) + 1
            self.peak[provider] = max(self.peak.get(provider, 0), self.running[provider])
        time.sleep(self.pause * (4 if action.resource_id in self.slow else 1))
        with self.lock:
            self.running[provider] -= 1
            self.events.append(f"end {action.resource_id}")
        if action.resource_id == self.fail:
            raise RuntimeError(f"{action.resource_id} failed")


def run(actions: list[Action], recorder: Callable[[int, Action], None], limits: Limits) -> None:
    RemoteScheduler(limits).run(list(enumerate(actions)), recorder)


def test_independent_steps_overlap_up_to_each_providers_bound() -> None:
    recorder = Recorder(pause=0.1)
    actions = [step(f"dns:{n}") for n in range(12)] + [
        step(f"app:{n}", "coolify.application") for n in range(6)
    ]
    run(actions, recorder, Limits({"cloudflare": 4, "coolify": 2}))
    assert 1 < recorder.peak["cloudflare"] <= 4 and 1 < recorder.peak["coolify"] <= 2
    assert sum(e.startswith("end") for e in recorder.events) == 18


def test_a_step_starts_only_after_every_step_it_depends_on_ended() -> None:
    recorder = Recorder()
    actions = [
        step("identity.org", "zitadel.org"),
        step("project", "zitadel.project", after=("identity.org",)),
        step("role", "zitadel.role", after=("project",)),
        step("app", "zitadel.oidc_app", after=("project", "not-in-this-run")),
    ]
    run(actions, recorder, Limits())
    at = {e: i for i, e in enumerate(recorder.events)}
    assert at["end identity.org"] < at["start project"]
    assert at["end project"] < at["start role"] and at["end project"] < at["start app"]


def test_removals_run_alone_in_plan_order_before_what_follows() -> None:
    recorder = Recorder(pause=0.02)
    actions = [
        step("old-a", remove=True),
        step("old-b", "coolify.application", remove=True),
        step("new-a"),
        step("new-b", "coolify.application"),
    ]
    run(actions, recorder, Limits())
    events = recorder.events
    assert events[:4] == ["start old-a", "end old-a", "start old-b", "end old-b"]
    assert sorted(events[4:]) == ["end new-a", "end new-b", "start new-a", "start new-b"]


def test_after_a_failure_nothing_new_starts_and_the_steps_in_flight_end() -> None:
    recorder = Recorder(fail="fails", slow=("slow",))
    actions = [
        step("fails", "coolify.project"),
        step("slow", "zitadel.org"),
        step("child", "coolify.application", after=("fails",)),
        step("later", "zitadel.project", after=("slow",)),
    ]
    with pytest.raises(RuntimeError, match="fails failed"):
        run(actions, recorder, Limits())
    assert "end slow" in recorder.events  # in flight: waited for, so it is journaled
    assert "start child" not in recorder.events and "start later" not in recorder.events


def test_a_bound_of_one_runs_the_steps_one_by_one_in_plan_order() -> None:
    recorder = Recorder(pause=0.001)
    actions = [
        step(f"dns:{n}", kind) for n, kind in enumerate(["zitadel.org", "coolify.project"] * 3)
    ]
    run(actions, recorder, Limits(total=1))
    assert recorder.events == [f"{w} dns:{n}" for n in range(6) for w in ("start", "end")]


def test_an_interrupt_waits_for_the_steps_in_flight_and_names_them() -> None:
    started = threading.Event()

    def slow(seq: int, action: Action) -> None:
        if action.resource_id == "first":
            started.set()
            # Ctrl-C while this step's call is in flight: a real SIGINT, which (unlike
            # _thread.interrupt_main) wakes the main thread from its wait at once.
            signal.pthread_kill(threading.main_thread().ident or 0, signal.SIGINT)
            time.sleep(0.2)

    actions = [step("first"), step("second", after=("first",))]
    with pytest.raises(StepsInterrupted) as stopped:
        run(actions, slow, Limits())
    assert started.is_set()
    assert [a.resource_id for _, a in stopped.value.finished] == ["first"]
    assert stopped.value.unknown == []


def test_bounds_come_from_the_environment_and_a_bad_one_is_refused() -> None:
    assert Limits.from_env({}).of("cloudflare") == DEFAULT_LIMITS["cloudflare"] == 16
    assert Limits.from_env({}).of("coolify") == 6 and Limits.from_env({}).of("zitadel") == 8
    tuned = Limits.from_env({"TRUEUP_COOLIFY_CONCURRENCY": "2", "TRUEUP_REMOTE_CONCURRENCY": "4"})
    assert (tuned.of("coolify"), tuned.of("cloudflare"), tuned.total) == (2, 4, 4)
    with pytest.raises(UsageError, match="TRUEUP_ZITADEL_CONCURRENCY='many'"):
        Limits.from_env({"TRUEUP_ZITADEL_CONCURRENCY": "many"})
    with pytest.raises(UsageError, match="TRUEUP_REMOTE_CONCURRENCY='0'"):
        Limits.from_env({"TRUEUP_REMOTE_CONCURRENCY": "0"})
