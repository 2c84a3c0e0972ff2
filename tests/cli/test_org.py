"""``trueup org``: plan, apply and status of an org against the fake providers."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from world import Result, World

from trueup.testing import FakeProviders
from trueup.testing.acme import ACME_ORG

DNS = '[[dns]]\ntype = "A"\nname = "portal"\ncontent = "203.0.113.10"\n'
#: The example org's header and one DNS record: nothing that asks for a typed confirmation.
DNS_ONLY = ACME_ORG.split("[[identity.project]]")[0] + DNS


@pytest.fixture
def fakes() -> Iterator[FakeProviders]:
    with FakeProviders() as running:
        running.cloudflare.add_zone("acme.test")
        yield running


def org(world: World, fakes: FakeProviders, *args: str) -> Result:
    env = {**fakes.env(), "PYTHON_KEYRING_BACKEND": "keyring.backends.fail.Keyring"}
    return world.run("org", *args, env=env)


def test_org_plan_apply_status(world: World, fakes: FakeProviders) -> None:
    path = str(world.write("acme.toml", DNS_ONLY))
    planned = org(world, fakes, "plan", path)
    assert planned.code == 0, planned.err
    assert "create A record portal.acme.test" in planned.out
    applied = org(world, fakes, "apply", path, "--yes")
    assert applied.code == 0, applied.err
    zone = fakes.cloudflare.zone_id("acme.test")
    assert zone is not None
    assert [r["content"] for r in fakes.cloudflare.records(zone)] == ["203.0.113.10"]
    live = org(world, fakes, "status", path)
    assert live.code == 0, live.err
    recorded = org(world, fakes, "status", "--json")
    [acme] = recorded.json["data"]["orgs"]
    assert acme["orgId"] == "acme" and acme["outcome"] == "converged"
