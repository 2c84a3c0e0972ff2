"""Directory and skill kinds: what is mirrored, and what is never touched."""

from __future__ import annotations

import os
import shutil
import stat

import pytest
from machine import Machine

from trueup.model import ActionType as T

DIRECTORY = '[[resource]]\nid = "d"\nkind = "directory"\ntarget = "out"\nsource = "src"\n'
REPLACE = DIRECTORY + 'policy = "replace"\n'
SKILL = '[[resource]]\nid = "s"\nkind = "skill"\ntarget = "skills/s"\nsource = "skill"\n'


def test_mirror_owned_never_touches_files_it_never_wrote(machine: Machine) -> None:
    machine.source("src/a.txt", "a")
    machine.source("src/sub/b.txt", "b")
    machine.put("out/theirs.txt", "theirs")
    machine.converge(DIRECTORY)
    assert machine.path("out/sub/b.txt").read_text() == "b"
    (machine.base / "src/sub/b.txt").unlink()
    machine.converge(DIRECTORY)
    assert not machine.path("out/sub").exists(), "an owned, unmodified file is removed"
    assert machine.path("out/theirs.txt").read_text() == "theirs"


def test_mirror_owned_keeps_an_owned_file_modified_locally(machine: Machine) -> None:
    machine.source("src/a.txt", "a")
    machine.source("src/b.txt", "b")
    machine.converge(DIRECTORY)
    machine.path("out/b.txt").write_text("edited")
    (machine.base / "src/b.txt").unlink()
    machine.converge(DIRECTORY)
    assert machine.path("out/b.txt").read_text() == "edited"


def test_mirror_owned_never_overwrites_a_declared_file_someone_else_wrote(
    machine: Machine,
) -> None:
    machine.source("src/a.txt", "a")
    machine.source("src/b.txt", "b")
    machine.put("out/a.txt", "theirs")
    action = machine.action(DIRECTORY, "d")
    assert action.type is T.DRIFT_CONFLICT and "a.txt" in action.summary
    machine.apply(DIRECTORY)
    assert machine.path("out/a.txt").read_text() == "theirs"
    assert not machine.path("out/b.txt").exists(), "the folder is left exactly as it is"
    machine.converge(DIRECTORY, force=("d",))
    assert machine.path("out/a.txt").read_text() == "a"


def test_mirror_owned_updates_its_own_files_but_not_edited_ones(machine: Machine) -> None:
    machine.source("src/a.txt", "a1")
    machine.source("src/b.txt", "b1")
    machine.converge(DIRECTORY)
    machine.source("src/a.txt", "a2")
    machine.converge(DIRECTORY)
    assert machine.path("out/a.txt").read_text() == "a2", "unmodified since written: updated"
    machine.path("out/b.txt").write_text("edited")
    machine.source("src/b.txt", "b2")
    assert machine.action(DIRECTORY, "d").type is T.DRIFT_CONFLICT
    machine.apply(DIRECTORY)
    assert machine.path("out/b.txt").read_text() == "edited"


def test_replace_is_a_true_mirror(machine: Machine) -> None:
    machine.source("src/a.txt", "a")
    machine.put("out/theirs.txt", "theirs")
    action = machine.action(REPLACE, "d")
    assert action.payload["remove"] == ["theirs.txt"]
    machine.converge(REPLACE)
    assert sorted(p.name for p in machine.path("out").iterdir()) == ["a.txt"]


def test_removing_only_its_own_unmodified_files_destroys_nothing(machine: Machine) -> None:
    machine.source("src/a.txt", "a")
    machine.source("src/b.txt", "b")
    machine.converge(REPLACE)
    (machine.base / "src/b.txt").unlink()
    action = machine.action(REPLACE, "d")
    assert action.payload["remove"] == ["b.txt"] and not action.destroys


def test_overwriting_a_skill_with_files_added_by_hand_destroys_them_and_says_so(
    machine: Machine,
) -> None:
    machine.source("skill/SKILL.md", "v1")
    machine.converge(SKILL)
    machine.put("skills/s/notes.md", "my notes")
    machine.source("skill/SKILL.md", "v2")
    action = machine.action(SKILL, "s", force=("s",))
    assert action.payload["remove"] == ["notes.md"]
    assert action.destroys, "a typed confirmation guards what trueup never wrote"


def test_skill_three_way(machine: Machine) -> None:
    machine.source("skill/SKILL.md", "v1")
    assert machine.action(SKILL, "s").type is T.MIRROR_DIRECTORY
    machine.converge(SKILL)
    machine.source("skill/SKILL.md", "v2")
    machine.converge(SKILL)
    assert machine.path("skills/s/SKILL.md").read_text() == "v2"


def test_modified_skill_is_drift_and_left_exactly_as_it_is(machine: Machine) -> None:
    machine.source("skill/SKILL.md", "v1")
    machine.converge(SKILL)
    machine.put("skills/s/notes.md", "my notes")
    machine.source("skill/SKILL.md", "v2")
    action = machine.action(SKILL, "s")
    assert action.type is T.DRIFT_CONFLICT
    machine.apply(SKILL)
    assert machine.path("skills/s/SKILL.md").read_text() == "v1"
    assert machine.path("skills/s/notes.md").read_text() == "my notes"


def test_skill_without_record_that_differs_is_drift(machine: Machine) -> None:
    machine.source("skill/SKILL.md", "v1")
    machine.put("skills/s/SKILL.md", "someone else's")
    assert machine.action(SKILL, "s").type is T.DRIFT_CONFLICT


def test_dropped_skill_is_removed_only_if_unmodified(machine: Machine) -> None:
    machine.source("skill/SKILL.md", "v1")
    machine.converge(SKILL)
    machine.put("skills/s/SKILL.md", "edited")
    assert machine.action("", "s").type is T.DRIFT_CONFLICT
    machine.put("skills/s/SKILL.md", "v1")
    machine.converge("")
    assert not machine.path("skills/s").exists()


def test_a_dropped_skill_with_a_file_added_by_hand_is_drift_and_kept(machine: Machine) -> None:
    machine.source("skill/SKILL.md", "v1")
    machine.converge(SKILL)
    machine.put("skills/s/notes.md", "my notes")
    assert machine.action("", "s").type is T.DRIFT_CONFLICT
    machine.apply("")
    assert machine.path("skills/s/notes.md").read_text() == "my notes"
    assert machine.path("skills/s/SKILL.md").read_text() == "v1"


@pytest.mark.parametrize("body", [SKILL, DIRECTORY, REPLACE], ids=["skill", "directory", "replace"])
@pytest.mark.parametrize("by", ["file", "link"])
def test_a_dropped_folder_replaced_by_a_file_or_link_is_drift_and_kept(
    machine: Machine, tmp_path_factory: pytest.TempPathFactory, body: str, by: str
) -> None:
    rid, source, target = ("s", "skill", "skills/s") if body is SKILL else ("d", "src", "out")
    machine.source(f"{source}/a.txt", "a")
    machine.converge(body)
    shutil.rmtree(machine.path(target))
    elsewhere = tmp_path_factory.mktemp("elsewhere")
    (elsewhere / "a.txt").write_text("a")  # even a link to the very same files
    if by == "file":
        machine.put(target, "my own thing")
    else:
        machine.path(target).symlink_to(elsewhere)
    assert machine.action("", rid).type is T.DRIFT_CONFLICT
    machine.apply("")
    kept = machine.path(target)
    assert (kept.readlink() == elsewhere) if by == "link" else (kept.read_text() == "my own thing")
    assert (elsewhere / "a.txt").read_text() == "a"
    assert machine.action("", rid).type is T.DRIFT_CONFLICT, "the record is kept"


def test_a_file_or_link_where_a_declared_folder_should_be_is_drift(
    machine: Machine, tmp_path_factory: pytest.TempPathFactory
) -> None:
    machine.source("src/sub/b.txt", "b")
    machine.put("out/sub", "a file")
    assert machine.action(DIRECTORY, "d").type is T.DRIFT_CONFLICT
    machine.path("out/sub").unlink()
    elsewhere = tmp_path_factory.mktemp("elsewhere")
    machine.path("out/sub").symlink_to(elsewhere)
    action = machine.action(DIRECTORY, "d")
    assert action.type is T.DRIFT_CONFLICT and "link is where a folder should be" in action.summary
    machine.apply(DIRECTORY)
    assert list(elsewhere.iterdir()) == [], "nothing is written through the link"


def test_a_declared_file_already_there_is_never_trueups_to_remove(machine: Machine) -> None:
    machine.source("src/a.txt", "shared")
    machine.source("src/b.txt", "new")
    machine.put("out/a.txt", "shared")  # the person's own copy, there before trueup
    machine.converge(DIRECTORY)
    machine.converge(OTHER)
    assert machine.path("out/a.txt").read_text() == "shared"
    assert not machine.path("out/b.txt").exists(), "what trueup wrote goes"


OTHER = '[[resource]]\nid = "o"\nkind = "file"\ntarget = "other.txt"\ncontent = "o"\n'


@pytest.mark.parametrize(
    "new",
    [
        SKILL.replace('target = "skills/s"', 'target = "out"').replace(
            'source = "skill"', 'source = "src"'
        ),
        DIRECTORY.replace('id = "d"', 'id = "inner"')
        .replace('target = "out"', 'target = "out/sub"')
        .replace('source = "src"', 'source = "src/sub"'),
    ],
)
def test_a_place_declared_again_by_another_kind_or_nested_is_not_removed_by_the_old_one(
    machine: Machine, new: str
) -> None:
    machine.source("src/a.txt", "a")
    machine.source("src/sub/b.txt", "b")
    machine.converge(DIRECTORY)
    machine.apply(new)
    assert machine.path("out/sub/b.txt").read_text() == "b"
    assert all(a.type is T.NO_OP for a in machine.plan(new).actions)


def test_a_tree_written_by_an_abandoned_run_gets_its_record_refreshed(machine: Machine) -> None:
    machine.source("skill/SKILL.md", "v1")
    machine.converge(SKILL)
    machine.source("skill/SKILL.md", "v2")
    machine.put("skills/s/SKILL.md", "v2")  # as an abandoned run left it
    assert machine.action(SKILL, "s").type is T.VERIFY_ONLY
    machine.converge(SKILL)
    machine.source("skill/SKILL.md", "v3")
    assert machine.action(SKILL, "s").type is T.MIRROR_DIRECTORY, "an update, not drift"


def test_drift_from_something_in_the_way_names_all_three_sides(machine: Machine) -> None:
    machine.source("src/a.txt", "a")
    machine.converge(DIRECTORY)
    machine.source("src/b/c.txt", "c")
    machine.put("out/b", "a file where the folder goes")
    drift = machine.action(DIRECTORY, "d").payload["drift"]
    assert drift["applied"] and drift["desired"] and drift["observed"], drift


@pytest.mark.parametrize(("writes", "removes", "hidden"), [(80, 0, 30), (60, 40, 10), (50, 50, 0)])
def test_a_shortened_file_list_says_how_many_files_it_leaves_out(
    machine: Machine, writes: int, removes: int, hidden: int
) -> None:
    for i in range(writes):
        machine.source(f"src/new{i:03d}", "n")
    for i in range(removes):
        machine.put(f"out/old{i:03d}", "o")
    preview = machine.preview(REPLACE, "d").splitlines()
    listed = [line for line in preview if line[:2] in ("+ ", "- ")]
    assert len(listed) == min(writes, 50) + min(removes, 50)
    assert (preview[-1] == f"… and {hidden} more") if hidden else (preview[-1] in listed)


@pytest.mark.parametrize(
    ("profile", "fifo"),
    [
        (DIRECTORY, "out/a.txt"),  # where a declared file goes
        (REPLACE, "out/a.txt"),
        (REPLACE, "out/pipe"),  # undeclared: a true mirror would remove it
        (SKILL, "skills/s/pipe"),
    ],
    ids=["declared", "replace-declared", "replace-undeclared", "skill"],
)
def test_a_pipe_where_a_tree_would_write_or_remove_is_drift_and_never_opened(
    machine: Machine, profile: str, fifo: str
) -> None:
    """Opening a pipe to keep it for a restore would wait for a writer forever."""
    machine.source("src/a.txt", "a")
    machine.source("skill/SKILL.md", "s")
    machine.path(fifo).parent.mkdir(parents=True)
    os.mkfifo(machine.path(fifo))
    rid = "s" if profile is SKILL else "d"
    action = machine.action(profile, rid, force=(rid,))
    assert action.type is T.DRIFT_CONFLICT
    assert "a pipe, socket or device is in the way" in action.summary
    machine.apply(profile, force=(rid,))
    assert stat.S_ISFIFO(os.lstat(machine.path(fifo)).st_mode)


@pytest.mark.parametrize(
    ("profile", "rid", "source"),
    [(DIRECTORY, "d", "src"), (REPLACE, "d", "src"), (SKILL, "s", "skill")],
    ids=["mirror-owned", "replace", "skill"],
)
def test_a_folder_of_trueups_files_and_a_file_of_trueups_trade_places(
    machine: Machine, profile: str, rid: str, source: str
) -> None:
    """What the mirror removes anyway is in nobody's way: the plan restructures the tree."""
    target = "skills/s" if rid == "s" else "out"
    machine.source(f"{source}/x/y.txt", "y")
    machine.source(f"{source}/keep.txt", "k")
    machine.converge(profile)
    shutil.rmtree(machine.base / source / "x")
    machine.source(f"{source}/x", "a file now")
    action = machine.action(profile, rid)
    assert action.type is T.MIRROR_DIRECTORY, action.summary
    assert (action.payload["write"], action.payload["remove"]) == (["x"], ["x/y.txt"])
    machine.converge(profile)
    assert machine.path(f"{target}/x").read_text() == "a file now"
    (machine.base / source / "x").unlink()
    machine.source(f"{source}/x/z.txt", "z")
    assert machine.action(profile, rid).payload["remove"] == ["x"]
    machine.converge(profile)
    assert machine.path(f"{target}/x/z.txt").read_text() == "z"


def test_a_folder_holding_a_file_trueup_never_wrote_stays_in_the_way(machine: Machine) -> None:
    machine.source("src/x/y.txt", "y")
    machine.converge(DIRECTORY)
    machine.put("out/x/theirs.txt", "theirs")
    shutil.rmtree(machine.base / "src/x")
    machine.source("src/x", "a file now")
    action = machine.action(DIRECTORY, "d")
    assert action.type is T.DRIFT_CONFLICT
    assert "a folder is in the way at x" in action.summary


def test_a_drifted_skill_names_each_file_added_removed_or_modified(machine: Machine) -> None:
    machine.source("skill/SKILL.md", "v1\n")
    machine.source("skill/gone.md", "gone\n")
    machine.converge(SKILL)
    machine.put("skills/s/SKILL.md", "edited\n")
    machine.put("skills/s/notes.md", "my notes\n")
    machine.path("skills/s/gone.md").unlink()
    action = machine.action(SKILL, "s")
    assert action.type is T.DRIFT_CONFLICT
    assert action.payload["changed"] == [
        {"path": "SKILL.md", "change": "modified"},
        {"path": "gone.md", "change": "removed"},
        {"path": "notes.md", "change": "added"},
    ]
    assert "SKILL.md modified, gone.md removed, notes.md added" in action.summary


def test_a_skill_trueup_never_wrote_is_compared_with_the_declared_one(machine: Machine) -> None:
    machine.source("skill/SKILL.md", "v1\n")
    machine.source("skill/same.md", "same\n")
    machine.put("skills/s/SKILL.md", "theirs\n")
    machine.put("skills/s/same.md", "same\n")
    action = machine.action(SKILL, "s")
    assert action.payload["changed"] == [{"path": "SKILL.md", "change": "modified"}]
    assert "differs and trueup never wrote it (SKILL.md modified)" in action.summary


def test_the_diff_of_a_drifted_skill_is_what_overwrite_would_discard(machine: Machine) -> None:
    machine.source("skill/SKILL.md", "title\nstep one\n")
    (machine.base / "skill/logo.png").write_bytes(b"\x89PNG\x00\x01")
    machine.converge(SKILL)
    machine.put("skills/s/SKILL.md", "title\nmy own step\nAPI_TOKEN=hunter2-value\n")
    machine.path("skills/s/logo.png").write_bytes(b"\x89PNG\x00\x02\x03")
    machine.put("skills/s/notes.md", "my notes\n")
    shown = machine.preview(SKILL, "s")
    assert "--- skills/s/SKILL.md (live)\n+++ skills/s/SKILL.md (declared)\n" in shown
    assert "-my own step\n" in shown and "+step one\n" in shown
    assert "hunter2-value" not in shown and "-API_TOKEN=[REDACTED]\n" in shown
    assert "skills/s/logo.png: binary, 7 bytes live, 6 bytes declared\n" in shown
    assert "--- skills/s/notes.md (live)\n+++ /dev/null\n" in shown and "-my notes\n" in shown


def test_a_file_named_like_a_secret_is_never_diffed(machine: Machine) -> None:
    machine.source("skill/SKILL.md", "v1\n")
    machine.source("skill/credentials.env", "KEY=declared\n")
    machine.converge(SKILL)
    machine.put("skills/s/credentials.env", "sk-live-value\n")
    shown = machine.preview(SKILL, "s")
    assert "skills/s/credentials.env: may hold a secret (14 bytes live), not shown" in shown
    assert "sk-live-value" not in shown


def test_the_diff_of_many_changed_files_is_bounded_and_counts_the_rest(machine: Machine) -> None:
    for i in range(150):
        machine.source(f"skill/f{i:03}.md", "".join(f"line {n}\n" for n in range(5)))
    machine.converge(SKILL)
    for i in range(150):
        machine.put(f"skills/s/f{i:03}.md", "".join(f"mine {n}\n" for n in range(5)))
    action = machine.action(SKILL, "s")
    assert len(action.payload["changed"]) == 100 and action.payload["changed_count"] == 150
    assert "f000.md modified, f001.md modified, f002.md modified and 147 more" in action.summary
    shown = machine.preview(SKILL, "s")
    assert shown.count("\n") < 230
    assert shown.endswith(" more changed file(s) not shown (plan --json lists them)\n")


def test_a_directory_names_the_declared_files_changed_and_diffs_them(machine: Machine) -> None:
    machine.source("src/a.txt", "a\n")
    machine.source("src/b.txt", "b\n")
    machine.converge(DIRECTORY)
    machine.put("out/a.txt", "edited\n")
    machine.put("out/theirs.txt", "theirs\n")
    action = machine.action(DIRECTORY, "d")
    assert action.payload["changed"] == [{"path": "a.txt", "change": "modified"}]
    shown = machine.preview(DIRECTORY, "d")
    assert "-edited\n+a\n" in shown and "theirs" not in shown, "mirror-owned keeps it"


def test_a_dropped_skill_changed_by_hand_lists_its_files(machine: Machine) -> None:
    machine.source("skill/SKILL.md", "v1")
    machine.converge(SKILL)
    machine.put("skills/s/SKILL.md", "edited")
    machine.put("skills/s/notes.md", "mine")
    action = machine.action("", "s")
    assert action.type is T.DRIFT_CONFLICT
    assert action.payload["changed"] == [
        {"path": "SKILL.md", "change": "modified"},
        {"path": "notes.md", "change": "added"},
    ]
