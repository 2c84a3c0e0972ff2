"""``trueup org apply --queue`` and ``trueup worker``, through the installed command.

A queued org apply holds the org's lock from the moment it is queued; a run
that fails in the worker keeps it until resumed (``trueup jobs resume``) or
abandoned, as the seed's job runner does.
"""

from __future__ import annotations

from test_org_crash import EXPECTED, inventory
from test_org_lifecycle import OrgWorld


def queue(org: OrgWorld) -> str:
    queued = org.run("org", "apply", org.path, "--confirm", "Acme Inc", "--queue", "--json")
    assert queued.code == 0, queued.out + queued.err
    assert queued.json["status"] == "queued"
    run_id: str = queued.json["data"]["run"]
    return run_id


def test_a_queued_org_apply_changes_nothing_until_a_worker_applies_it(org: OrgWorld) -> None:
    run_id = queue(org)
    assert org.fakes.coolify.list_projects() == [], "queued: nothing applied yet"
    [job] = org.run("jobs", "list", "--json").json["data"]
    assert (job["id"], job["status"]) == (run_id, "queued")
    worked = org.run("worker", "--drain", "--json")
    assert worked.code == 0, worked.out + worked.err
    assert worked.json["data"]["succeeded"] == 1, worked.out
    assert inventory(org.fakes) == EXPECTED
    settled = org.run("org", "plan", org.path, "--json")
    assert settled.code == 0 and settled.json["status"] == "converged", settled.out


def test_a_failed_queued_org_run_keeps_its_lock_until_it_is_resumed(org: OrgWorld) -> None:
    zone = org.zone()
    clash = org.fakes.cloudflare.add_record(zone, type="A", name="www", content="192.0.2.1")
    with open(org.path, "a") as handle:
        handle.write('\n[[dns]]\ntype = "CNAME"\nname = "www"\ncontent = "portal.acme.test"\n')
    run_id = queue(org)
    worked = org.run("worker", "--drain", "--json")
    assert worked.json["data"]["failed"] == 1, worked.out + worked.err
    [job] = org.run("jobs", "list", "--json").json["data"]
    assert job["status"] == "failed" and "81057" in job["failure"]["message"], job
    # The failed run still holds the org: nobody applies over it meanwhile.
    refused = org.run("org", "apply", org.path, "--confirm", "Acme Inc")
    assert refused.code == 4, refused.out + refused.err
    assert f"is locked by run {run_id}" in refused.err
    org.fakes.cloudflare.delete_record(zone, clash["id"], "")  # a person fixes the cause
    assert org.run("jobs", "resume", run_id).code == 0
    resumed = org.run("worker", "--drain", "--json")
    assert resumed.json["data"]["succeeded"] == 1, resumed.out + resumed.err
    assert inventory(org.fakes) == {
        **EXPECTED,
        "dns": ["A portal.acme.test", "CNAME www.acme.test"],
    }
    again = org.run("org", "apply", org.path, "--confirm", "Acme Inc")
    assert again.code == 0, again.out + again.err  # the lock went with the run's success


def test_a_failed_queued_org_run_released_by_abandon(org: OrgWorld) -> None:
    zone = org.zone()
    org.fakes.cloudflare.add_record(zone, type="A", name="www", content="192.0.2.1")
    with open(org.path, "a") as handle:
        handle.write('\n[[dns]]\ntype = "CNAME"\nname = "www"\ncontent = "portal.acme.test"\n')
    run_id = queue(org)
    assert org.run("worker", "--drain", "--json").json["data"]["failed"] == 1
    abandoned = org.run("abandon", run_id)
    assert abandoned.code == 0, abandoned.out + abandoned.err
    failed = org.run("org", "apply", org.path, "--confirm", "Acme Inc")
    assert failed.code == 7, "not locked any more: the clash itself fails the apply"
