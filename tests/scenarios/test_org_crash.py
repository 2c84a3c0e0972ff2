"""Killing an org apply, and applying twice at once, through the installed command.

A kill may land after a remote call and before its result is recorded; the
next apply (or ``trueup recover``) re-reads every provider and finds what the
killed run created by name, so nothing is ever created twice.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import time
from pathlib import Path

import pytest
from test_org_lifecycle import OrgWorld
from world import TRUEUP

from trueup.testing import FakeProviders


def inventory(fakes: FakeProviders) -> dict[str, list[str]]:
    """Every object the org owns at each provider, by name (duplicates would repeat)."""
    zone = fakes.cloudflare.zone_id("acme.test")
    assert zone
    zitadel = fakes.zitadel.dump()
    email = fakes.cloudflare.dump()["email"].get(zone, {"rules": {}})
    return {
        "coolify projects": sorted(p["name"] for p in fakes.coolify.list_projects()),
        "coolify apps": sorted(a["name"] for a in fakes.coolify.list_applications()),
        "dns": sorted(
            f"{r['type']} {r['name']}"
            for r in fakes.cloudflare.records(zone)
            if not r["meta"].get("email_routing")
        ),
        "mail rules": sorted(r["name"] for r in email["rules"].values()),
        "zitadel orgs": sorted(o["name"] for o in zitadel["orgs"].values()),
        "zitadel projects": sorted(p["name"] for p in zitadel["projects"].values()),
        "zitadel apps": sorted(
            a["name"] for apps in zitadel["apps"].values() for a in apps.values()
        ),
        "zitadel roles": sorted(k for roles in zitadel["roles"].values() for k in roles),
    }


EXPECTED = {
    "coolify projects": ["Acme Inc"],
    "coolify apps": ["chat", "portal"],
    "dns": ["A portal.acme.test"],
    "mail rules": ["trueup: hello@acme.test"],
    "zitadel orgs": ["Acme Inc", "ZITADEL"],
    "zitadel projects": ["portal"],
    "zitadel apps": ["portal-web"],
    "zitadel roles": ["admin", "member"],
}


@pytest.mark.parametrize(
    "crash_at",
    [
        "remote-returned:3",  # a Coolify app exists, its uuid is not recorded
        "journal-running:7",  # about to create the ZITADEL org
        "remote-returned:9",  # the OIDC app exists, its secret is stored, not recorded
    ],
)
def test_sigkill_mid_apply_then_apply_again_creates_nothing_twice(
    org: OrgWorld, crash_at: str
) -> None:
    # One step at a time: the n-th boundary is then the step each case names.
    killed = org.world.run(
        "org",
        "apply",
        org.path,
        "--confirm",
        "Acme Inc",
        env={**org.env, "TRUEUP_CRASH_AT": crash_at, "TRUEUP_REMOTE_CONCURRENCY": "1"},
    )
    assert killed.code == -signal.SIGKILL, killed.err
    (dead,) = org.run("status", "--json").json["data"]["blocked_runs"]
    shown = org.run("org", "status")  # as `trueup status` says it: dead, and what to do
    assert f"(running, process gone); next: run `trueup recover {dead['id']}`" in shown.out
    resumed = org.run("org", "apply", org.path, "--confirm", "Acme Inc")
    # The apply ended the killed run to take its lock over: on the record, as abandon is.
    (ended,) = org.run("audit", "list", "--json", "--event", "run.abandoned").json["data"]
    assert (ended["outcome"], ended["run_id"]) == ("success", dead["id"])
    assert "superseded" in ended["reason"]
    assert resumed.code == 0, resumed.out + resumed.err
    if crash_at == "remote-returned:9":
        # The secret shown at creation was stored before the kill: found by the app's
        # own name for it and recorded, never issued again (that would break clients).
        assert "client secret trueup stored before it was stopped is recorded" in resumed.out
        assert len(list((org.world.data / "secrets").iterdir())) == 1
        requests = org.fakes.request_log.zitadel.entries
        assert not any(e.path.endswith("/_generate_client_secret") for e in requests)
    assert inventory(org.fakes) == EXPECTED
    settled = org.run("org", "plan", org.path, "--json")
    assert settled.code == 0 and settled.json["data"]["summary"] == "14 none; 0 unmanaged"


def kill_at(org: OrgWorld, boundary: str) -> None:
    """SIGKILL an org apply the moment it reaches ``boundary`` (name:n)."""
    killed = org.world.run(
        "org",
        "apply",
        org.path,
        "--confirm",
        "Acme Inc",
        env={**org.env, "TRUEUP_CRASH_AT": boundary},
    )
    assert killed.code == -signal.SIGKILL, killed.err


def test_trueup_recover_resumes_a_killed_org_run(org: OrgWorld) -> None:
    kill_at(org, "mutated:5")
    recovered = org.run("recover")
    assert recovered.code == 0, recovered.out + recovered.err
    assert inventory(org.fakes) == EXPECTED
    assert org.run("org", "plan", org.path).code == 0


def test_a_recovery_a_provider_stops_is_audited_and_can_be_tried_again(org: OrgWorld) -> None:
    kill_at(org, "mutated:5")
    (blocked,) = org.run("status", "--json").json["data"]["blocked_runs"]
    org.fakes.faults.cloudflare.update(garble=1000)
    failed = org.run("recover")
    assert failed.code == 6, failed.out + failed.err
    (row,) = org.run("audit", "list", "--json", "--event", "run.recovered").json["data"]
    assert (row["outcome"], row["run_id"]) == ("failed", blocked["id"])
    org.fakes.faults.cloudflare.reset()
    recovered = org.run("recover")
    assert recovered.code == 0, recovered.out + recovered.err
    assert inventory(org.fakes) == EXPECTED


def test_org_status_shows_a_first_run_killed_and_abandoned(org: OrgWorld) -> None:
    """Its steps made things at the providers: "no org applied yet" would hide them."""
    kill_at(org, "mutated:5")
    assert org.run("abandon").code == 0
    shown = org.run("org", "status")
    assert shown.code == 7, shown.out + shown.err
    assert "abandoned" in shown.out and "no org applied yet" not in shown.out
    listed = org.run("org", "status", "--json")
    assert [o["outcome"] for o in listed.json["data"]["orgs"]] == ["abandoned"]


def _start_apply(org: OrgWorld, **env: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [TRUEUP, "org", "apply", org.path, "--confirm", "Acme Inc"],
        env=org.world.env({**org.env, **env}),
        cwd=org.world.base,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
    )


def _wait_for_writes(fakes: FakeProviders, count: int, deadline: float = 30) -> None:
    end = time.monotonic() + deadline
    while len(fakes.request_log.coolify.matching("POST")) < count:
        assert time.monotonic() < end, "the apply never started writing"
        time.sleep(0.02)


def test_a_real_kill_while_providers_are_slow_then_apply_again(org: OrgWorld) -> None:
    for _, faults in org.fakes.faults.items():
        faults.update(latency=0.05)
    first = _start_apply(org)
    _wait_for_writes(org.fakes, 3)
    os.kill(first.pid, signal.SIGKILL)
    first.communicate(timeout=30)
    for _, faults in org.fakes.faults.items():
        faults.update(latency=0)
    again = org.run("org", "apply", org.path, "--confirm", "Acme Inc")
    assert again.code in (0, 3), again.out + again.err
    if again.code == 3:  # killed between creating the OIDC app and storing its secret
        assert "trueup holds no client secret" in again.out
    inventory_now = inventory(org.fakes)
    assert inventory_now == EXPECTED


def test_a_second_concurrent_apply_of_the_same_org_is_refused(org: OrgWorld) -> None:
    # Slow, one step at a time: the first apply still holds its lock for seconds
    # after its first write, however fast its steps would otherwise overlap.
    for _, faults in org.fakes.faults.items():
        faults.update(latency=0.2)
    first = _start_apply(org, TRUEUP_REMOTE_CONCURRENCY="1")
    _wait_for_writes(org.fakes, 1)
    second = org.run("org", "apply", org.path, "--confirm", "Acme Inc")
    assert second.code == 4, second.out + second.err
    assert "is locked by run" in second.err and "still running" in second.err
    out, err = first.communicate(timeout=120)
    for _, faults in org.fakes.faults.items():
        faults.update(latency=0)
    assert first.returncode == 0, out + err
    assert inventory(org.fakes) == EXPECTED


def test_a_failed_apply_exits_7_keeps_its_steps_and_applying_again_resumes(
    org: OrgWorld,
) -> None:
    zone = org.zone()
    clash = org.fakes.cloudflare.add_record(zone, type="A", name="www", content="192.0.2.1")
    with open(org.path, "a") as handle:
        handle.write('\n[[dns]]\ntype = "CNAME"\nname = "www"\ncontent = "portal.acme.test"\n')
    failed = org.run("org", "apply", org.path, "--confirm", "Acme Inc")
    assert failed.code == 7, failed.out + failed.err
    assert "81057" in failed.out and "no rollback" in failed.out
    assert "next: fix the cause, then apply again" in failed.out
    assert [p["name"] for p in org.fakes.coolify.list_projects()] == ["Acme Inc"]
    org.fakes.cloudflare.delete_record(zone, clash["id"], "")
    resumed = org.run("org", "apply", org.path, "--confirm", "Acme Inc")
    assert resumed.code == 0, resumed.out + resumed.err
    assert inventory(org.fakes) == {
        **EXPECTED,
        "dns": ["A portal.acme.test", "CNAME www.acme.test"],
    }


def test_recover_refuses_to_resume_an_org_file_edited_after_the_kill(org: OrgWorld) -> None:
    kill_at(org, "mutated:5")
    (blocked,) = org.run("status", "--json").json["data"]["blocked_runs"]
    declared = Path(org.path).read_text()
    org.declare(declared.replace("203.0.113.10", "203.0.113.99"))
    refused = org.run("recover")
    assert refused.code == 4, refused.out + refused.err
    assert "changed after the run started" in refused.err and "trueup org plan" in refused.err
    # The run lost its lock: on the record, as a refused recovery of that run.
    (row,) = org.run("audit", "list", "--json", "--event", "run.recovered").json["data"]
    assert (row["outcome"], row["run_id"]) == ("refused", blocked["id"])
    assert "changed after the run started" in row["reason"]
    records = org.fakes.cloudflare.records(org.zone())
    assert not any(r.get("content") == "203.0.113.99" for r in records), "nothing unreviewed"
    applied = org.run("org", "apply", org.path, "--confirm", "Acme Inc")
    assert applied.code in (0, 3), applied.out + applied.err
    assert any(r.get("content") == "203.0.113.99" for r in org.fakes.cloudflare.records(org.zone()))


def signing_keys(fakes: FakeProviders) -> list[str]:
    """The chat app's signing key values, straight from the fake."""
    [chat] = [a for a in fakes.coolify.list_applications() if a["name"] == "chat"]
    return [
        str(e["value"])
        for e in fakes.coolify.list_envs(chat["uuid"])
        if e["key"] == "CHAT_SIGNING_KEY"
    ]


def test_a_rekey_killed_during_its_call_is_recognised_as_trueups_and_not_done_twice(
    org: OrgWorld,
) -> None:
    assert org.run("org", "apply", org.path, "--confirm", "Acme Inc").code == 0
    [first] = signing_keys(org.fakes)
    org.declare(Path(org.path).read_text() + "key_generation = 2\n")
    kill_at(org, "remote-returned:1")  # the re-key happened; its result was not recorded
    [written] = signing_keys(org.fakes)
    assert written != first
    planned = org.run("org", "plan", org.path)
    assert "changed outside trueup" not in planned.out, planned.out
    assert "that an interrupted run wrote" in planned.out
    resumed = org.run("org", "apply", org.path, "--yes")
    assert resumed.code == 0, resumed.out + resumed.err
    assert signing_keys(org.fakes) == [written], "sessions signed with it keep working"
    settled = org.run("org", "plan", org.path, "--json")
    assert settled.json["status"] == "converged", settled.out


def test_ctrl_c_during_concurrent_steps_says_which_were_in_flight_and_how_to_resume(
    org: OrgWorld,
) -> None:
    for _, faults in org.fakes.faults.items():
        faults.update(latency=0.3)
    first = _start_apply(org)
    _wait_for_writes(org.fakes, 1)
    first.send_signal(signal.SIGINT)
    out, err = first.communicate(timeout=60)
    for _, faults in org.fakes.faults.items():
        faults.update(latency=0)
    assert first.returncode not in (0, 1, 2), out + err
    assert "Traceback" not in err
    said = out + err
    assert "interrupted: the " in said and "step(s) in flight (" in said, said
    assert "ended and were recorded, nothing else was started" in said
    assert "apply again (or `trueup recover " in said
    # Every step in flight ended and was journaled as verified: none left "running".
    # Steps that finished before the signal count as applied too, so at least as many.
    ended = re.search(
        r"(\d+) action\(s\) applied and verified.*the (\d+) step\(s\) in flight \(([^)]*)\)", said
    )
    assert ended is not None, said
    in_flight = ended[3].split(", ")
    assert int(ended[1]) >= int(ended[2]) == len(in_flight)
    unfinished = [line for line in said.splitlines() if line.startswith(("waiting", "failed"))]
    assert not [r for r in in_flight if any(f" {r}:" in line for line in unfinished)], said
    (stopped,) = org.run("status", "--json").json["data"]["blocked_runs"]
    assert stopped["status"] == "interrupted"
    again = org.run("org", "apply", org.path, "--confirm", "Acme Inc")
    assert again.code == 0, again.out + again.err
    assert inventory(org.fakes) == EXPECTED


def test_a_bad_concurrency_bound_is_refused_before_anything_runs(org: OrgWorld) -> None:
    refused = org.world.run(
        "org",
        "apply",
        org.path,
        "--confirm",
        "Acme Inc",
        env={**org.env, "TRUEUP_COOLIFY_CONCURRENCY": "lots"},
    )
    assert refused.code == 2, refused.out + refused.err
    assert "TRUEUP_COOLIFY_CONCURRENCY='lots' is not a number of steps" in refused.err
    assert "Traceback" not in refused.err
    assert org.fakes.request_log.coolify.matching("POST") == []
