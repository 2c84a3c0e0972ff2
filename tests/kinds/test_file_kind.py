"""The file kind: each policy against each three-way case.

Cases: target absent; equal to the declaration; modified since trueup wrote
it; modified and the declaration changed too; present with no applied record.
"""

from __future__ import annotations

import os

import pytest
from machine import Machine

from trueup.kinds.content import text_diff
from trueup.model import ActionType as T


def file_resource(policy: str, content: str, extra: str = "") -> str:
    return (
        f'[[resource]]\nid = "f"\nkind = "file"\ntarget = "dir/f.txt"\npolicy = "{policy}"\n'
        f"content = {content!r}\n".replace("'", '"')
        + extra
    )


# policy -> case -> expected action type
EXPECTED = {
    "replace": {
        "absent": T.WRITE_FILE,
        "equal": T.NO_OP,
        "modified": T.WRITE_FILE,
        "modified+declared-changed": T.WRITE_FILE,
        "no-record": T.WRITE_FILE,
    },
    "replace-if-unmodified": {
        "absent": T.WRITE_FILE,
        "equal": T.NO_OP,
        "modified": T.DRIFT_CONFLICT,
        "modified+declared-changed": T.DRIFT_CONFLICT,
        "no-record": T.DRIFT_CONFLICT,
    },
    "append-local": {
        "absent": T.WRITE_FILE,
        "equal": T.NO_OP,
        "modified": T.DRIFT_CONFLICT,
        "modified+declared-changed": T.DRIFT_CONFLICT,
        "no-record": T.WRITE_FILE,
    },
}
CASES = [(p, c) for p in EXPECTED for c in EXPECTED[p]]


def arrange(machine: Machine, policy: str, case: str) -> str:
    """Bring the machine into ``case`` and return the declaration to plan."""
    v1 = file_resource(policy, "v1\n")
    if case == "absent":
        return v1
    if case == "no-record":
        machine.put("dir/f.txt", "someone's file\n")
        return v1
    machine.converge(v1)
    if case == "equal":
        return v1
    target = machine.path("dir/f.txt")
    target.write_text(target.read_text().replace("v1", "v1 edited"))
    return v1 if case == "modified" else file_resource(policy, "v2\n")


@pytest.mark.parametrize(("policy", "case"), CASES, ids=[f"{p}:{c}" for p, c in CASES])
def test_three_way(machine: Machine, policy: str, case: str) -> None:
    body = arrange(machine, policy, case)
    before = machine.path("dir/f.txt").read_bytes() if machine.path("dir/f.txt").exists() else None
    action = machine.action(body, "f")
    assert action.type is EXPECTED[policy][case], action.summary
    result = machine.apply(body)
    after = machine.path("dir/f.txt").read_bytes()
    if action.type is T.DRIFT_CONFLICT:
        assert after == before, "a conflict leaves the content exactly as it is"
        assert action.payload["drift"]["observed"] is not None
        assert result is not None and result.outcome.value == "drift"
    elif action.type is T.NO_OP:
        assert after == before
    else:
        assert b"v1\n" in after or b"v2\n" in after


def test_modified_file_is_never_overwritten_without_overwrite(machine: Machine) -> None:
    body = file_resource("replace-if-unmodified", "v1\n")
    machine.converge(body)
    machine.path("dir/f.txt").write_text("mine\n")
    for _ in range(2):
        machine.apply(file_resource("replace-if-unmodified", "v2\n"))
        assert machine.path("dir/f.txt").read_text() == "mine\n"
    machine.converge(file_resource("replace-if-unmodified", "v2\n"), force=("f",))
    assert machine.path("dir/f.txt").read_text() == "v2\n"


def test_unmodified_file_follows_the_declaration(machine: Machine) -> None:
    machine.converge(file_resource("replace-if-unmodified", "v1\n"))
    machine.converge(file_resource("replace-if-unmodified", "v2\n"))
    assert machine.path("dir/f.txt").read_text() == "v2\n"


def test_executable_bit_is_declared_state(machine: Machine) -> None:
    machine.converge(file_resource("replace", "#!/bin/sh\n", "executable = true\n"))
    target = machine.path("dir/f.txt")
    assert target.stat().st_mode & 0o111
    os.chmod(target, 0o644)
    assert (
        machine.action(file_resource("replace", "#!/bin/sh\n", "executable = true\n"), "f").type
        is T.WRITE_FILE
    )
    machine.converge(file_resource("replace", "#!/bin/sh\n", "executable = true\n"))
    assert target.stat().st_mode & 0o111


def test_symlink_declared_and_a_symlink_in_place_of_a_file_is_drift(machine: Machine) -> None:
    body = '[[resource]]\nid = "l"\nkind = "file"\ntarget = "link"\nlink = "elsewhere/x"\n'
    machine.converge(body)
    assert os.readlink(machine.path("link")) == "elsewhere/x"

    machine.put("real.txt", "x")
    machine.path("f.txt").symlink_to(machine.path("real.txt"))
    conflict = '[[resource]]\nid = "f"\nkind = "file"\ntarget = "f.txt"\ncontent = "x"\npolicy = "replace-if-unmodified"\n'
    action = machine.action(conflict, "f")
    assert action.type is T.DRIFT_CONFLICT, "observation never follows symlinks"


def test_directory_in_the_way_is_a_conflict_not_a_deletion(machine: Machine) -> None:
    machine.path("dir/f.txt").mkdir(parents=True)
    (machine.path("dir/f.txt") / "keep").write_text("keep")
    action = machine.action(file_resource("replace", "v1\n"), "f")
    assert action.type is T.DRIFT_CONFLICT
    machine.apply(file_resource("replace", "v1\n"))
    assert (machine.path("dir/f.txt") / "keep").read_text() == "keep"


def test_broken_markers_stop_append_local(machine: Machine) -> None:
    body = file_resource("append-local", "managed\n")
    machine.converge(body)
    target = machine.path("dir/f.txt")
    target.write_text(target.read_text().replace("# trueup:end f\n", ""))
    action = machine.action(file_resource("append-local", "managed v2\n"), "f")
    assert action.type is T.DRIFT_CONFLICT
    assert "broken" in action.summary


def test_append_local_removal_keeps_local_text(machine: Machine) -> None:
    machine.put("dir/f.txt", "local\n")
    machine.converge(file_resource("append-local", "managed\n"))
    assert (
        machine.path("dir/f.txt").read_text()
        == "# trueup:begin f\nmanaged\n# trueup:end f\nlocal\n"
    )
    machine.converge("")
    assert machine.path("dir/f.txt").read_text() == "local\n"


@pytest.mark.parametrize("policy", ["replace", "replace-if-unmodified", "append-local"])
def test_a_file_where_a_parent_folder_should_be_is_drift_at_plan_time(
    machine: Machine, policy: str
) -> None:
    machine.put("dir", "a file, not a folder")
    action = machine.action(file_resource(policy, "x"), "f")
    assert action.type is T.DRIFT_CONFLICT
    assert "a file stands where a folder above the target should be" in action.summary
    machine.apply(file_resource(policy, "x"))
    assert machine.path("dir").read_text() == "a file, not a folder"


def test_append_local_restores_a_lost_executable_bit(machine: Machine) -> None:
    body = file_resource("append-local", "echo managed\n", "executable = true\n")
    machine.converge(body)
    os.chmod(machine.path("dir/f.txt"), 0o644)
    action = machine.action(body, "f")
    assert action.type is T.WRITE_FILE and "executable" in action.summary
    machine.converge(body)
    assert machine.path("dir/f.txt").stat().st_mode & 0o111


def test_a_local_chmod_is_a_modification_replace_if_unmodified_keeps(machine: Machine) -> None:
    machine.converge(file_resource("replace-if-unmodified", "echo hi\n"))
    target = machine.path("dir/f.txt")
    os.chmod(target, 0o755)
    action = machine.action(file_resource("replace-if-unmodified", "echo hi v2\n"), "f")
    assert action.type is T.DRIFT_CONFLICT
    machine.apply(file_resource("replace-if-unmodified", "echo hi v2\n"))
    assert target.stat().st_mode & 0o111 and target.read_text() == "echo hi\n"


def test_sections_whose_ids_share_a_prefix_are_told_apart(machine: Machine) -> None:
    machine.put("dir/f.txt", "# trueup:begin f-extra\nother\n# trueup:end f-extra\n")
    machine.converge(file_resource("append-local", "managed\n"))
    text = machine.path("dir/f.txt").read_text()
    assert text.startswith("# trueup:begin f\nmanaged\n# trueup:end f\n# trueup:begin f-extra")


@pytest.mark.parametrize("ending", ["", "\r\n"])
def test_an_end_marker_last_in_the_file_or_ending_crlf_is_found(
    machine: Machine, ending: str
) -> None:
    machine.converge(file_resource("append-local", "managed\n"))
    target = machine.path("dir/f.txt")
    target.write_bytes(target.read_bytes().rstrip(b"\n") + ending.encode())
    assert machine.action(file_resource("append-local", "managed\n"), "f").type is T.NO_OP


def test_a_diff_that_differs_only_in_the_last_newline_says_so() -> None:
    shown = text_diff(b"same\n", b"same", "f")
    assert shown.endswith("-same\n+same\n\\ No newline at end of file\n"), shown


def test_a_renamed_append_local_resource_asks_for_its_markers_not_a_second_section(
    machine: Machine,
) -> None:
    machine.put("dir/f.txt", "my notes\n")
    machine.converge(file_resource("append-local", "shared\n"))
    renamed = file_resource("append-local", "shared\n").replace('id = "f"', 'id = "g"')
    for force in ((), ("g",)):
        action = machine.action(renamed, "g", force)
        assert action.type is T.HUMAN_ACTION and "# trueup:begin g" in action.summary
    machine.apply(renamed, ("g",))
    assert machine.path("dir/f.txt").read_text().count("shared") == 1
    target = machine.path("dir/f.txt")
    target.write_text(
        target.read_text()
        .replace("trueup:begin f", "trueup:begin g")
        .replace("trueup:end f", "trueup:end g")
    )
    machine.converge(renamed)
    assert target.read_text() == "# trueup:begin g\nshared\n# trueup:end g\nmy notes\n"


def test_a_renamed_append_local_resource_whose_file_is_gone_creates_it(machine: Machine) -> None:
    machine.converge(file_resource("append-local", "shared\n"))
    machine.path("dir/f.txt").unlink()
    machine.converge(file_resource("append-local", "shared\n").replace('id = "f"', 'id = "g"'))
    assert machine.path("dir/f.txt").read_text() == "# trueup:begin g\nshared\n# trueup:end g\n"


@pytest.mark.parametrize("policy", ["replace", "replace-if-unmodified"])
@pytest.mark.parametrize(("declared", "chmod"), [("true", 0o644), ("false", 0o755)])
def test_a_dropped_file_whose_mode_was_changed_by_hand_is_left_in_place(
    machine: Machine, policy: str, declared: str, chmod: int
) -> None:
    # The executable bit is part of what trueup wrote, for a removal as for an update.
    machine.converge(file_resource(policy, "#!/bin/sh\n", f"executable = {declared}\n"))
    target = machine.path("dir/f.txt")
    os.chmod(target, chmod)
    action = machine.action("", "f")
    assert action.type is T.DRIFT_CONFLICT, action.summary
    result = machine.apply("")
    assert result is not None and result.outcome.value == "drift"
    assert target.read_text() == "#!/bin/sh\n" and target.stat().st_mode & 0o777 == chmod


def test_a_dropped_modified_file_says_once_that_it_is_left_as_it_is(machine: Machine) -> None:
    machine.converge(file_resource("replace", "v1\n"))
    machine.path("dir/f.txt").write_text("mine\n")
    assert machine.action("", "f").summary == (
        "drift: no longer declared, but modified since trueup wrote it; left exactly as it is"
    )


def test_a_dropped_append_local_section_already_removed_by_hand_is_forgotten(
    machine: Machine,
) -> None:
    # The follower deleted trueup's section and kept their own text: the section
    # is already gone, as verify() says of missing markers, so nothing is left to do.
    machine.put("dir/f.txt", "my notes\n")
    machine.converge(file_resource("append-local", "shared\n"))
    machine.path("dir/f.txt").write_text("my notes\n")
    action = machine.action("", "f")
    assert action.type is T.REMOVE_RESOURCE and action.summary.startswith("forget"), action.summary
    machine.converge("")
    assert machine.path("dir/f.txt").read_text() == "my notes\n"


def test_append_local_leaves_the_follower_s_mode_alone_unless_one_is_declared(
    machine: Machine,
) -> None:
    # Only the section is trueup's (machine-sync.md, append-local): without a
    # declared `executable`, the file's mode is the follower's, on every write.
    machine.put("dir/f.txt", "echo mine\n")
    machine.converge(file_resource("append-local", "echo shared\n"))
    target = machine.path("dir/f.txt")
    os.chmod(target, 0o740)
    assert machine.action(file_resource("append-local", "echo shared\n"), "f").type is T.NO_OP
    machine.converge(file_resource("append-local", "echo shared v2\n"))
    assert target.stat().st_mode & 0o777 == 0o740
    assert machine.action("", "f").type is T.REMOVE_RESOURCE
    machine.converge("")
    assert target.read_text() == "echo mine\n" and target.stat().st_mode & 0o777 == 0o740


@pytest.mark.parametrize(
    ("declared", "chmod", "summary"),
    [("true", 0o644, "set the executable bit"), ("false", 0o755, "clear the executable bit")],
)
def test_append_local_says_which_way_a_declared_executable_bit_changes(
    machine: Machine, declared: str, chmod: int, summary: str
) -> None:
    body = file_resource("append-local", "echo shared\n", f"executable = {declared}\n")
    machine.converge(body)
    target = machine.path("dir/f.txt")
    os.chmod(target, chmod)
    action = machine.action(body, "f")
    assert (action.type, action.summary) == (T.WRITE_FILE, summary)
    machine.converge(body)
    assert bool(target.stat().st_mode & 0o111) is (declared == "true")
