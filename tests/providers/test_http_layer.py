"""The shared HTTP layer: retries, Retry-After, bounded attempts, ambiguity, counting."""

from __future__ import annotations

import pytest
from provider_support import logged

from trueup.providers.http import AmbiguousWrite, HttpClient, ProviderError, RetryPolicy
from trueup.redact import PLACEHOLDER, redact
from trueup.testing import FakeProviders


class Sleeps(list[float]):
    """Records the delays the client would wait, without waiting."""

    def __call__(self, seconds: float) -> None:
        self.append(seconds)


def client(fakes: FakeProviders, sleeps: Sleeps, attempts: int = 6) -> HttpClient:
    return HttpClient(
        "coolify",
        fakes.coolify_url,
        fakes.tokens.coolify,
        policy=RetryPolicy(attempts=attempts),
        sleep=sleeps,
    )


def test_429_is_retried_after_the_servers_retry_after(fakes: FakeProviders) -> None:
    fakes.faults.coolify.update(rate_limit=2, retry_after=3)
    sleeps = Sleeps()
    http = client(fakes, sleeps)
    assert http.get("/projects") == []
    assert sleeps[:2] == [3.0, 3.0]
    assert http.stats.requests == 3 == len(logged(fakes.request_log.coolify, 3))
    assert http.stats.retries == 2


def test_server_errors_back_off_exponentially_and_attempts_are_bounded(
    fakes: FakeProviders,
) -> None:
    fakes.faults.coolify.update(server_errors=10)
    sleeps = Sleeps()
    http = client(fakes, sleeps, attempts=4)
    with pytest.raises(ProviderError) as failed:
        http.get("/projects")
    assert failed.value.status in (500, 502, 503)
    assert http.stats.requests == 4 == len(logged(fakes.request_log.coolify, 4))
    assert len(sleeps) == 3
    assert all(0 <= s <= 0.05 * 2**n for n, s in enumerate(sleeps))


def test_a_dropped_connection_is_retried_for_reads(fakes: FakeProviders) -> None:
    fakes.faults.coolify.update(drop=1)
    http = client(fakes, Sleeps())
    assert http.get("/projects") == []
    assert http.stats.statuses["broken"] == 1


def test_an_unsafe_write_that_may_have_happened_is_not_replayed(fakes: FakeProviders) -> None:
    fakes.faults.coolify.update(server_errors=1)
    http = client(fakes, Sleeps())
    with pytest.raises(AmbiguousWrite):
        http.request("POST", "/projects", json={"name": "x"}, replay="unsent-only")
    # Count this test's POSTs only: the previous test's last request may be logged late.
    posts = logged(fakes.request_log.coolify, 1).matching("POST")
    assert http.stats.requests == 1 == len(posts)
    fakes.faults.coolify.update(rate_limit=1, retry_after=0)
    created = http.request("POST", "/projects", json={"name": "x"}, replay="unsent-only")
    assert created.status_code == 201  # a 429 was never processed: replaying is safe


def test_observation_cannot_write(fakes: FakeProviders) -> None:
    reader = client(fakes, Sleeps()).reader()
    with pytest.raises(RuntimeError, match="observation tried to write"):
        reader.request("POST", "/projects", json={"name": "x"})
    assert reader.get("/projects") == []
    assert fakes.coolify.list_projects() == []


def test_a_4xx_names_the_provider_and_never_the_token(fakes: FakeProviders) -> None:
    http = client(fakes, Sleeps())
    assert redact(fakes.tokens.coolify) == PLACEHOLDER
    with pytest.raises(ProviderError) as missing:
        http.get("/projects/nope")
    assert missing.value.status == 404
    assert "coolify: GET /projects/nope: HTTP 404" in missing.value.message
    wrong = HttpClient("coolify", fakes.coolify_url, "a-wrong-token-123", sleep=Sleeps())
    with pytest.raises(ProviderError) as denied:
        wrong.get("/projects")
    assert denied.value.exit_code == 5


def test_a_rate_limit_window_of_minutes_is_waited_out_and_said_so(
    fakes: FakeProviders, capsys: pytest.CaptureFixture[str]
) -> None:
    # Cloudflare's window is 5 minutes: its Retry-After can say 282 s.
    fakes.faults.coolify.update(rate_limit=1, retry_after=282)
    sleeps = Sleeps()
    assert client(fakes, sleeps).get("/projects") == []
    assert sleeps == [282.0]
    assert "coolify asks to wait 282 s before retrying GET /projects" in capsys.readouterr().err


def test_every_server_error_is_retried_not_only_the_common_ones(fakes: FakeProviders) -> None:
    fakes.faults.coolify.update(server_errors=1, server_error_statuses=[520])
    sleeps = Sleeps()
    http = client(fakes, sleeps)
    assert http.get("/projects") == []
    assert http.stats.statuses["520"] == 1 and len(sleeps) == 1


def test_a_retry_after_pauses_every_thread_sending_to_that_provider(
    fakes: FakeProviders,
) -> None:
    """Concurrent steps share one client: the one told to wait holds the others too."""
    fakes.faults.coolify.update(rate_limit=1, retry_after=30)
    told, other = Sleeps(), Sleeps()
    http = client(fakes, told)
    assert http.get("/projects") == []
    assert told == [30.0]  # waited out once, by the thread that was told
    reader = http.reader()
    reader._sleep = other  # another thread's view of the same client
    assert reader.get("/projects") == []
    [held] = other  # the fake sleep let no time pass: nearly all of the pause remains
    assert 29.0 < held <= 30.0
    assert http.stats.requests == 3


def test_a_pause_already_waited_out_is_not_waited_again() -> None:
    from trueup.providers.http import Pause

    clock = [100.0]
    pause = Pause(lambda: clock[0])
    ends = pause.hold(5)
    assert pause.remaining(covered=0.0) == 5 and pause.remaining(covered=ends) == 0
    clock[0] = 106.0
    assert pause.remaining(covered=0.0) == 0
