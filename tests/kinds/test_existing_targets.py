"""A target that was there before trueup: replaced only with the name typed.

The first apply over a person's file (one trueup has no record of, that
differs from the declaration) destroys their work, so the step says so and
waits for ``--confirm``; merge and append-local keep the person's content, so
they need nothing more than any write.
"""

from __future__ import annotations

import os

import pytest
from machine import Machine

from trueup.model import ActionType as T

FILE = '[[resource]]\nid = "f"\nkind = "file"\ntarget = "notes.md"\ncontent = "declared\\n"\n'
SKILL = '[[resource]]\nid = "s"\nkind = "skill"\ntarget = "skills/s"\nsource = "skill"\n'
DIRECTORY = '[[resource]]\nid = "d"\nkind = "directory"\ntarget = "out"\nsource = "src"\n'
CONFIG = (
    '[[resource]]\nid = "c"\nkind = "config"\ntarget = "tool.toml"\nkeys = { model = "gpt-5" }\n'
)
MINE_TOML = '# my settings\nmodel = "o3"  # the one I like\ntheme = "dark"\n'


@pytest.mark.parametrize("force", [(), ("f",)])
def test_a_file_trueup_never_wrote_is_replaced_only_as_a_destroying_step(
    machine: Machine, force: tuple[str, ...]
) -> None:
    machine.put("notes.md", "my own notes\n")
    action = machine.action(FILE, "f", force)  # the default policy: replace
    assert action.type is T.WRITE_FILE and action.destroys
    assert "trueup never wrote" in action.summary


@pytest.mark.parametrize("executable", [True, False])
def test_a_persons_file_holding_the_declared_bytes_only_has_its_mode_set(
    machine: Machine, executable: bool
) -> None:
    tool = machine.put("notes.md", "declared\n")
    os.chmod(tool, 0o644 if executable else 0o755)
    body = FILE + f"executable = {str(executable).lower()}\n"
    action = machine.action(body, "f")
    # Nothing of theirs is lost, so nothing waits for the name typed.
    assert action.type is T.WRITE_FILE and not action.destroys
    assert "executable bit" in action.summary and "lost" not in action.summary
    machine.converge(body)
    assert tool.read_text() == "declared\n"
    assert bool(tool.stat().st_mode & 0o100) is executable


def test_under_replace_if_unmodified_it_is_drift_and_overwrite_is_the_decision(
    machine: Machine,
) -> None:
    body = FILE + 'policy = "replace-if-unmodified"\n'
    machine.put("notes.md", "my own notes\n")
    assert machine.action(body, "f").type is T.DRIFT_CONFLICT
    taken = machine.action(body, "f", ("f",))
    assert taken.type is T.WRITE_FILE and not taken.destroys


def test_a_file_trueup_wrote_is_updated_without_confirmation(machine: Machine) -> None:
    machine.converge(FILE)
    changed = FILE.replace("declared", "declared again")
    action = machine.action(changed, "f")
    assert action.type is T.WRITE_FILE and not action.destroys


def test_a_link_a_person_made_is_theirs_too(machine: Machine) -> None:
    machine.put("elsewhere.md", "mine\n")
    machine.path("notes.md").symlink_to("elsewhere.md")
    assert machine.action(FILE, "f").destroys


def test_a_file_already_as_declared_is_left_and_not_taken(machine: Machine) -> None:
    machine.put("notes.md", "declared\n")
    assert machine.action(FILE, "f").type is T.NO_OP


def test_append_local_keeps_the_persons_text_and_needs_no_confirmation(machine: Machine) -> None:
    body = FILE + 'policy = "append-local"\n'
    machine.put("notes.md", "my own notes\n")
    action = machine.action(body, "f")
    assert action.type is T.WRITE_FILE and not action.destroys
    machine.converge(body)
    text = machine.path("notes.md").read_text()
    assert text.endswith("my own notes\n") and "declared\n" in text


@pytest.mark.parametrize("policy", ["replace", "replace-if-unmodified"])
def test_a_skill_over_a_persons_file_of_the_same_name_destroys_it(
    machine: Machine, policy: str
) -> None:
    machine.source("skill/SKILL.md", "declared")
    machine.put("skills/s/SKILL.md", "mine")
    body = SKILL + f'policy = "{policy}"\n'
    action = machine.action(body, "s", ("s",) if policy != "replace" else ())
    assert action.payload["remove"] == [] and action.payload["update"] == ["SKILL.md"]
    assert action.destroys and "SKILL.md, which trueup never wrote" in action.summary


def test_a_directory_taking_a_persons_file_with_overwrite_destroys_it(machine: Machine) -> None:
    machine.source("src/a.txt", "a")
    machine.put("out/a.txt", "theirs")
    assert machine.action(DIRECTORY, "d").type is T.DRIFT_CONFLICT
    assert machine.action(DIRECTORY, "d", ("d",)).destroys


def test_a_directory_beside_a_persons_files_destroys_nothing(machine: Machine) -> None:
    machine.source("src/a.txt", "a")
    machine.put("out/theirs.txt", "theirs")
    action = machine.action(DIRECTORY, "d")
    assert action.type is T.MIRROR_DIRECTORY and not action.destroys


def test_config_replace_over_a_persons_file_destroys_it(machine: Machine) -> None:
    machine.put("tool.toml", 'model = "o3"  # the one I like\n')
    action = machine.action(CONFIG + 'policy = "replace"\n', "c")
    assert action.type is T.WRITE_CONFIG and action.destroys
    assert "never wrote in" in action.summary


def test_config_replace_of_a_file_it_created_needs_no_confirmation(machine: Machine) -> None:
    body = CONFIG + 'policy = "replace"\n'
    machine.converge(body)
    action = machine.action(body.replace("gpt-5", "gpt-6"), "c")
    assert action.type is T.WRITE_CONFIG and not action.destroys


def test_config_merge_keeps_everything_but_its_keys_and_needs_no_confirmation(
    machine: Machine,
) -> None:
    machine.put("tool.toml", MINE_TOML)
    action = machine.action(CONFIG, "c")
    assert action.type is T.WRITE_CONFIG and not action.destroys
    machine.converge(CONFIG)
    assert machine.path("tool.toml").read_text() == MINE_TOML.replace('"o3"', '"gpt-5"')
