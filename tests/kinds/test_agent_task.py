"""The agent-task kind, with a stand-in harness: a script that does the job (or not).

Cases: already done (converged), deterministic-only (a human action), no
harness (a human action), agent-propose (the diff, nothing changed),
agent-apply (changed, then verified by done_when; a failed check restores),
and the bounds: only allowed paths come back, no network, a time limit.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

import pytest
from machine import Machine

from trueup.model import ActionType as T
from trueup.model import Outcome

OLD = "model = 'o3'\n"
NEW = 'model = "gpt-5"\n'


@pytest.fixture
def harness(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A folder on PATH for the stand-in agent CLI (written per test)."""
    folder = tmp_path / "agents"
    folder.mkdir()
    system = tmp_path / "system"
    system.mkdir()
    for tool in ("grep", "sed", "sleep", "unshare"):
        (system / tool).symlink_to(shutil.which(tool) or f"/usr/bin/{tool}")
    # The interpreter itself, not a shim that needs a shell of its own.
    (system / "python3").symlink_to(os.path.realpath(sys.executable))
    monkeypatch.setenv("PATH", f"{folder}:{system}")
    return folder


def agent(folder: Path, body: str) -> None:
    script = folder / "fake-agent"
    script.write_text("#!/bin/sh\n" + body)
    script.chmod(0o755)


#: The stand-in does the migration: rewrites the config in its working folder.
MIGRATES = f"printf '{NEW}' > .codex/config.toml\necho 'done, trust me'\n"


def task(policy: str, extra: str = "") -> str:
    return f"""
[[resource]]
id = "migrate"
kind = "agent-task"
target = ".codex/config.toml"
policy = "{policy}"
task = "migrate .codex/config.toml to double-quoted strings"
harness = ["fake-agent", "--yolo"]
allowed_paths = [".codex"]
executables = ["sed"]
timeout = 20
done_when = {{ command = ["grep", "-q", "gpt-5", ".codex/config.toml"] }}
{extra}"""


def test_a_task_already_done_is_converged(machine: Machine, harness: Path) -> None:
    machine.put(".codex/config.toml", NEW)
    action = machine.action(task("agent-apply"), "migrate")
    assert action.type is T.NO_OP and "done (`grep -q gpt-5" in action.summary


def test_deterministic_only_never_runs_an_agent(machine: Machine, harness: Path) -> None:
    agent(harness, "touch /tmp/should-not-run\n")
    machine.put(".codex/config.toml", OLD)
    action = machine.action(task("deterministic-only"), "migrate")
    assert action.type is T.HUMAN_ACTION
    assert "do it by hand (policy deterministic-only)" in action.summary


def test_no_harness_on_path_is_a_human_action(machine: Machine, harness: Path) -> None:
    machine.put(".codex/config.toml", OLD)
    action = machine.action(task("agent-apply"), "migrate")
    assert action.type is T.HUMAN_ACTION and "fake-agent is not on PATH" in action.summary


def test_agent_propose_shows_the_diff_and_changes_nothing(machine: Machine, harness: Path) -> None:
    agent(harness, MIGRATES)
    machine.put(".codex/config.toml", OLD)
    action = machine.action(task("agent-propose"), "migrate")
    assert action.type is T.HUMAN_ACTION and "proposes a change" in action.summary
    assert f"-{OLD}" in action.payload["diff"] and f"+{NEW}" in action.payload["diff"]
    assert machine.path(".codex/config.toml").read_text() == OLD


def test_agent_apply_applies_then_verifies_independently(machine: Machine, harness: Path) -> None:
    agent(harness, MIGRATES)
    machine.put(".codex/config.toml", OLD)
    action = machine.action(task("agent-apply"), "migrate")
    assert action.type is T.AGENT_TASK
    result = machine.apply(task("agent-apply"))
    assert result is not None and result.outcome is Outcome.CONVERGED
    assert machine.path(".codex/config.toml").read_text() == NEW
    [done] = result.results
    assert done.evidence is not None and done.evidence.method == "command"
    assert machine.action(task("agent-apply"), "migrate").type is T.NO_OP


def test_an_agent_that_claims_success_but_fails_the_check_is_restored(
    machine: Machine, harness: Path
) -> None:
    agent(harness, "printf 'model = \"o4\"\\n' > .codex/config.toml\necho 'all done!'\n")
    machine.put(".codex/config.toml", OLD)
    result = machine.apply(task("agent-apply"))
    assert result is not None and result.outcome is Outcome.FAILED
    assert "does not pass: its work is not kept" in result.message
    assert machine.path(".codex/config.toml").read_text() == OLD


def test_only_the_allowed_paths_come_back(machine: Machine, harness: Path) -> None:
    agent(harness, "echo pwned > outside.txt\necho escaped > ../escaped.txt\n" + MIGRATES)
    machine.put(".codex/config.toml", OLD)
    machine.converge(task("agent-apply"))
    assert not machine.path("outside.txt").exists()
    assert sorted(p.name for p in machine.root.rglob("*") if p.is_file()) == ["config.toml"]


def test_the_agent_has_no_network_unless_allowed(machine: Machine, harness: Path) -> None:
    probe = (
        "python3 -c \"import socket; socket.create_connection(('127.0.0.1', 9), 1)\" "
        "2>&1 | grep -q 'Network is unreachable' && " + MIGRATES
    )
    agent(harness, probe)
    machine.put(".codex/config.toml", OLD)
    body = task("agent-apply").replace('["sed"]', '["python3", "grep"]')
    result = machine.apply(body)
    # With no network, connecting is "unreachable": the agent went on and did the job.
    assert result is not None and result.outcome is Outcome.CONVERGED, result.message


def test_an_agent_past_its_time_limit_fails_the_run(machine: Machine, harness: Path) -> None:
    agent(harness, "sleep 30\n")
    machine.put(".codex/config.toml", OLD)
    body = task("agent-apply").replace("timeout = 20", "timeout = 1")
    body = body.replace('["sed"]', '["sleep"]')
    result = machine.apply(body)
    assert result is not None and result.outcome is Outcome.FAILED
    assert "did not finish within 1s" in result.message
    assert machine.path(".codex/config.toml").read_text() == OLD


def test_an_executable_not_allowed_is_not_found(machine: Machine, harness: Path) -> None:
    agent(harness, "python3 -c 'print(1)' || exit 9\n" + MIGRATES)  # python3: not allowed
    machine.put(".codex/config.toml", OLD)
    result = machine.apply(task("agent-apply"))
    assert result is not None and result.outcome is Outcome.FAILED
    assert "fake-agent exited 9" in result.message
    assert machine.path(".codex/config.toml").read_text() == OLD


def test_an_allowed_path_must_hold_the_target(machine: Machine) -> None:
    from trueup.errors import UsageError

    with pytest.raises(UsageError, match="field 'allowed_paths': the target must be among them"):
        machine.plan(task("agent-apply").replace('[".codex"]', '["elsewhere"]'))


def test_the_plan_json_carries_the_proposal_for_review(machine: Machine, harness: Path) -> None:
    agent(harness, MIGRATES)
    machine.put(".codex/config.toml", OLD)
    body = json.dumps(machine.plan(task("agent-propose")).body())
    assert "gpt-5" in body
