"""A config file a dotfiles manager keeps in its folder, a symlink at the target.

Edited through the link only when the resource names the folder it leads into
(``follow_links``): the edit lands in the file the link leads to, the link
stays, drift and rollback hold as for a plain file, and a link that leads
elsewhere, or that was retargeted since the plan, is refused.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from machine import Machine

from trueup.execute.gates import StalePlan
from trueup.model import ActionType as T
from trueup.model import Outcome

SETTINGS = '{\n  "theme": "dark",\n  "model": "sonnet"\n}\n'


def dotfiles(machine: Machine, inside_root: bool = False) -> Path:
    """A stow-style setup: ``.claude/settings.json`` links into a dotfiles folder."""
    folder = (machine.root if inside_root else machine.base) / "dotfiles"
    (folder / "claude").mkdir(parents=True)
    real = folder / "claude" / "settings.json"
    real.write_text(SETTINGS)
    (machine.root / ".claude").mkdir()
    link = machine.root / ".claude" / "settings.json"
    link.symlink_to(os.path.relpath(real, link.parent))
    return real


def claude(follow: str = "", keys: str = 'model = "opus"', extra: str = "") -> str:
    line = f"follow_links = [{follow}]\n" if follow else ""
    return (
        '[[resource]]\nid = "claude"\nkind = "config"\ntarget = ".claude/settings.json"\n'
        f"keys = {{ {keys} }}\n{line}{extra}"
    )


def test_a_link_without_the_opt_in_says_how_to_opt_in(machine: Machine) -> None:
    real = dotfiles(machine)
    action = machine.action(claude(), "claude")
    assert action.type is T.DRIFT_CONFLICT
    assert "follow_links" in action.summary
    assert str(real) in action.summary
    assert real.read_text() == SETTINGS


@pytest.mark.parametrize("inside_root", [False, True])
def test_the_edit_lands_in_the_file_the_link_leads_to(machine: Machine, inside_root: bool) -> None:
    real = dotfiles(machine, inside_root)
    folder = '"~/dotfiles"' if inside_root else json.dumps(str(real.parent.parent))
    machine.converge(claude(folder))
    link = machine.path(".claude/settings.json")
    assert link.is_symlink()
    assert json.loads(real.read_text()) == {"theme": "dark", "model": "opus"}
    assert real.read_text() == SETTINGS.replace('"sonnet"', '"opus"')


def test_a_key_changed_in_the_linked_file_is_drift(machine: Machine) -> None:
    real = dotfiles(machine)
    body = claude(json.dumps(str(real.parent.parent)))
    machine.converge(body)
    real.write_text(SETTINGS.replace('"sonnet"', '"haiku"'))
    assert machine.action(body, "claude").type is T.DRIFT_CONFLICT


def test_a_link_leading_out_of_the_allowed_folder_is_refused(machine: Machine) -> None:
    real = dotfiles(machine)
    elsewhere = machine.base / "elsewhere"
    elsewhere.mkdir()
    action = machine.action(claude(json.dumps(str(elsewhere))), "claude")
    assert action.type is T.DRIFT_CONFLICT
    assert "outside the folders" in action.summary
    assert real.read_text() == SETTINGS


def test_a_failed_run_restores_the_linked_file(machine: Machine) -> None:
    real = dotfiles(machine)
    failing = 'verify = { command = ["false"] }\n'
    result = machine.apply(claude(json.dumps(str(real.parent.parent)), extra=failing))
    assert result is not None and result.outcome is Outcome.FAILED
    assert real.read_text() == SETTINGS
    assert machine.path(".claude/settings.json").is_symlink()


def test_a_link_retargeted_since_the_plan_is_a_conflict(machine: Machine) -> None:
    real = dotfiles(machine)
    other = real.parent / "other.json"
    other.write_text(SETTINGS)
    body = claude(json.dumps(str(real.parent.parent)))
    prepared = machine.engine.prepare(machine.profile(body), machine.root, ())
    link = machine.path(".claude/settings.json")
    link.unlink()
    link.symlink_to(other)
    # Applied at once: the action finds the link leading elsewhere and writes nothing.
    result = machine.engine.apply(prepared, prepared.plan)
    assert result is not None and result.outcome is Outcome.FAILED
    assert "changed after the plan" in (result.message or "")
    # Reviewed first (paused): the plan, computed again, differs.
    with pytest.raises(StalePlan):
        machine.engine.apply(prepared, prepared.plan, paused=True)
    assert real.read_text() == SETTINGS
    assert other.read_text() == SETTINGS


def test_follow_links_may_not_name_the_file_system_root(machine: Machine) -> None:
    dotfiles(machine)
    with pytest.raises(Exception, match="not /"):
        machine.plan(claude('"/"'))


def test_an_allowed_folder_is_reached_from_itself_down(tmp_path: Path) -> None:
    """A folder in it swapped for a link leading out is refused, as under the root."""
    from trueup.anchor import Anchor, OutsideRoot

    root, allowed, outside = tmp_path / "root", tmp_path / "dotfiles", tmp_path / "outside"
    for folder in (root, allowed / "claude", outside):
        folder.mkdir(parents=True)
    (allowed / "swapped").symlink_to(outside)
    reach = Anchor(str(root))
    assert not reach.covers(f"{allowed}/claude/settings.json")
    reach.allow(str(allowed))
    assert reach.covers(f"{allowed}/claude/settings.json")
    assert not reach.covers(f"{outside}/x")
    found = reach.at(f"{allowed}/claude/settings.json")
    assert found is not None
    fd, name = found
    assert name == "settings.json" and os.path.samestat(os.fstat(fd), os.stat(allowed / "claude"))
    with pytest.raises(OutsideRoot):
        reach.at(f"{allowed}/swapped/settings.json")
    assert reach.at(f"{outside}/x") is None
    reach.close()
