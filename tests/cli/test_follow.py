"""``trueup follow`` and ``trueup sync`` on a machine that follows no source yet.

Enrolling and syncing against a real source over HTTPS is
tests/scenarios/test_many_machines.py and test_source_faults.py; this file pins what
the two commands answer before any of that, and that they touch nothing then.
"""

from __future__ import annotations

import pytest
from world import World


@pytest.mark.parametrize("args", [(), ("--apply", "--yes"), ("--no-input",)])
def test_sync_without_enrollment_says_how_to_enroll(world: World, args: tuple[str, ...]) -> None:
    refused = world.run("sync", *args)
    assert refused.code == 2, refused.out + refused.err
    assert "this machine follows no source" in refused.err
    assert "trueup follow INVITE --name NAME" in refused.err
    assert "Traceback" not in refused.err
    assert not (world.data / "follow").exists()


def test_sync_json_is_the_error_envelope(world: World) -> None:
    refused = world.run("sync", "--json")
    assert refused.code == 2
    envelope = refused.json
    assert (envelope["schema"], envelope["status"], envelope["exitCode"]) == (
        "trueup.cli/1",
        "error",
        2,
    )
    assert "trueup source invite" in envelope["data"]["hint"]


@pytest.mark.parametrize("invitation", ["garbage", "trueup-invite:abc", "trueup-invite:"])
def test_a_malformed_invitation_is_refused_and_nothing_kept(world: World, invitation: str) -> None:
    refused = world.run("follow", invitation, "--name", "laptop")
    assert refused.code == 2, refused.out + refused.err
    assert "not a trueup invitation" in refused.err
    assert "copy the whole line `trueup source invite` printed" in refused.err
    assert not (world.data / "follow").exists()
