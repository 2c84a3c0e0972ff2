"""``trueup doctor``: every part probed, each with a next step, in a stable JSON form."""

from __future__ import annotations

import json
import sqlite3
import sys
import time
from pathlib import Path
from typing import Any

import jsonschema
from fleet import Machine, invite, serving
from test_many_machines import make_source
from world import World

from trueup.doctor import schema_path

FAIL_KEYRING = {"PYTHON_KEYRING_BACKEND": "keyring.backends.fail.Keyring"}


def checks(document: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {c["name"]: c for c in document["data"]["checks"]}


def bare_path(world: World, *programs: str) -> dict[str, str]:
    """A PATH holding only stand-ins for ``programs`` (each a script that exits 0)."""
    folder = world.base / "path"
    folder.mkdir(exist_ok=True)
    for name in programs:
        script = folder / name
        script.write_text("#!/bin/sh\nexit 0\n")
        script.chmod(0o755)
    return {"PATH": str(folder)}


def test_doctor_json_is_valid_against_its_shipped_schema(world: World) -> None:
    done = world.run("doctor", "--json", env={**FAIL_KEYRING, **bare_path(world, "npm")})
    document = json.loads(done.out)
    jsonschema.validate(document, json.loads(schema_path().read_text()))
    assert [c["name"] for c in document["data"]["checks"]] == [
        "runtime",
        "state",
        "keyring",
        "source",
        "scheduler",
        "package-managers",
        "agent-harnesses",
    ]
    assert done.code == 0  # degraded parts, nothing unhealthy
    assert document["data"]["status"] == "degraded"


def test_trueup_schema_doctor_prints_the_same_schema(world: World) -> None:
    done = world.run("schema", "doctor")
    assert done.code == 0 and json.loads(done.out) == json.loads(schema_path().read_text())


def test_each_part_says_what_it_found_and_the_next_step(world: World) -> None:
    env = {**FAIL_KEYRING, **bare_path(world, "uv", "claude", "systemctl")}
    found = checks(world.run("doctor", "--json", env=env).json)
    assert found["state"]["status"] == "healthy"
    assert found["keyring"]["status"] == "degraded"
    assert "keyring --list-backends" in found["keyring"]["next_step"]
    assert found["source"]["summary"].startswith("not enrolled")
    assert found["package-managers"]["detail"]["found"] == ["uv"]
    assert found["agent-harnesses"] == {
        "name": "agent-harnesses",
        "status": "healthy",
        "summary": "claude",
        "next_step": "none",
        "detail": {"found": ["claude"]},
    }
    if sys.platform.startswith("linux"):
        assert found["scheduler"]["status"] == "degraded"
        assert found["scheduler"]["next_step"].startswith("trueup schedule set")


def test_nothing_found_is_degraded_with_how_to_get_it(world: World) -> None:
    found = checks(world.run("doctor", "--json", env={**FAIL_KEYRING, **bare_path(world)}).json)
    assert found["package-managers"]["status"] == "degraded"
    assert found["agent-harnesses"]["status"] == "degraded"
    assert found["runtime"]["status"] == "degraded"  # trueup itself is not on that PATH
    assert "export PATH=" in found["runtime"]["next_step"]


def test_a_state_store_behind_this_trueup_is_unhealthy_exit_3(world: World) -> None:
    db = sqlite3.connect(world.data / "state.db")
    db.execute("UPDATE alembic_version SET version_num = '0001'")
    db.commit()
    db.close()
    done = world.run("doctor", "--json", env=FAIL_KEYRING)
    assert done.code == 3
    state = checks(done.json)["state"]
    assert state["status"] == "unhealthy" and state["next_step"].startswith("trueup state migrate")
    human = world.run("doctor", env=FAIL_KEYRING)
    assert human.code == 3 and "this machine is unhealthy" in human.out


def test_doctor_creates_no_state_store(world: World) -> None:
    (world.data / "state.db").unlink()
    found = checks(world.run("doctor", "--json", env=FAIL_KEYRING).json)
    assert found["state"]["summary"].endswith("is not created yet")
    assert not (world.data / "state.db").exists()


def test_a_probe_that_hangs_is_reported_at_the_timeout_not_waited_for(world: World) -> None:
    here = str(Path(__file__).parent)
    env = {"PYTHON_KEYRING_BACKEND": "slow_keyring.Slow", "PYTHONPATH": here}
    started = time.monotonic()
    done = world.run("doctor", "--json", "--timeout", "1", env=env, timeout=50)
    assert time.monotonic() - started < 30
    keyring = checks(done.json)["keyring"]
    assert keyring["status"] == "unhealthy"
    assert keyring["summary"] == "did not answer within 1s"
    assert done.code == 3


def test_doctor_human_output_is_a_table_of_every_check(world: World) -> None:
    done = world.run("doctor", env=FAIL_KEYRING)
    for name in ("runtime", "state", "keyring", "source", "scheduler", "package-managers"):
        assert name in done.out


def test_a_follower_s_source_is_probed_reachable_then_not(world: World) -> None:
    make_source(world)
    laptop = Machine(world, "laptop")
    with serving(world) as (_, endpoint):
        assert laptop.follow(invite(world, "--group", "laptops")).code == 0
        done = laptop.run("doctor", "--json", env=FAIL_KEYRING)
        jsonschema.validate(done.json, json.loads(schema_path().read_text()))
        source = checks(done.json)["source"]
        assert source["status"] == "healthy", source
        assert source["detail"]["endpoint"] == endpoint
        assert source["detail"]["tls_pin"].startswith("sha256:")
        assert source["summary"].endswith("its certificate is the pinned one")
    gone = checks(laptop.run("doctor", "--json", env=FAIL_KEYRING).json)["source"]
    assert gone["status"] == "unhealthy"
    assert gone["summary"].startswith(f"cannot reach the source at {endpoint}")
    assert "trueup source serve" in gone["next_step"]
