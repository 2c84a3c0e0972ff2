"""The README's story through the command: plan, apply, converge, drift, status."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from world import TRUEUP, Result, World

from trueup.fs import TEMP_MARK

PROFILE = """
[profile]
id = "workstation"
name = "Workstation"

[[resource]]
id = "agents-md"
kind = "file"
target = ".codex/AGENTS.md"
source = "files/AGENTS.md"
policy = "append-local"

[[resource]]
id = "codex-config"
kind = "config"
target = ".codex/config.toml"
keys = { model = "gpt-5", "sandbox.mode" = "workspace-write" }

[[resource]]
id = "review-skill"
kind = "skill"
target = ".claude/skills/review"
source = "skills/review"
depends_on = ["agents-md"]

[[resource]]
id = "hello"
kind = "file"
target = "bin/hello"
content = "#!/bin/sh\\necho hello\\n"
executable = true
"""


def make_profile(world: World) -> str:
    world.write("files/AGENTS.md", "# Team rules\n\nBe kind.\n")
    world.write("skills/review/SKILL.md", "---\nname: review\n---\nReview carefully.\n")
    world.write("skills/review/scripts/check.sh", "echo ok\n")
    return str(world.write("workstation.toml", PROFILE))


def test_plan_changes_nothing_and_shows_diffs(world: World) -> None:
    profile = make_profile(world)
    result = world.run("plan", profile, "--root", str(world.root))
    assert result.code == 0, result.err
    assert "+# Team rules" in result.out
    assert '+model = "gpt-5"' in result.out
    assert list(world.root.iterdir()) == []


def test_apply_converges_then_a_local_edit_is_drift(world: World) -> None:
    profile = make_profile(world)
    pending = world.run("plan", profile, "--root", str(world.root), "--json")
    assert (pending.code, pending.json["status"]) == (0, "changes-pending")
    applied = world.run("apply", profile, "--root", str(world.root), "--yes")
    assert applied.code == 0, applied.out + applied.err
    assert "converged" in applied.out
    assert world.target("bin/hello").stat().st_mode & 0o111
    assert world.target(".claude/skills/review/scripts/check.sh").read_text() == "echo ok\n"

    again = world.run("plan", profile, "--root", str(world.root), "--json")
    assert (again.code, again.json["status"]) == (0, "converged")
    assert {a["type"] for a in again.json["data"]["plan"]["actions"]} == {"no-op"}

    skill = world.target(".claude/skills/review/SKILL.md")
    skill.write_text(skill.read_text() + "my own note\n")
    drift = world.run("apply", profile, "--root", str(world.root), "--yes")
    assert drift.code == 4
    assert "drift" in drift.out
    assert skill.read_text().endswith("my own note\n")

    status = world.run("status", "--json")
    assert status.code == 4
    [target] = status.json["data"]["targets"]
    assert [d["resource"] for d in target["drift"]] == ["review-skill"]


def test_append_local_keeps_the_followers_text(world: World) -> None:
    profile = make_profile(world)
    agents = world.target(".codex/AGENTS.md")
    agents.parent.mkdir(parents=True)
    agents.write_text("my machine notes\n")
    assert world.run("apply", profile, "--root", str(world.root), "--yes").code == 0
    text = agents.read_text()
    assert text.startswith("<!-- trueup:begin agents-md -->\n# Team rules")
    assert text.endswith("<!-- trueup:end agents-md -->\nmy machine notes\n")

    world.write("files/AGENTS.md", "# Team rules v2\n")
    assert world.run("apply", profile, "--root", str(world.root), "--yes").code == 0
    assert agents.read_text().endswith("-->\nmy machine notes\n")
    assert "# Team rules v2\n" in agents.read_text()

    agents.write_text(agents.read_text().replace("v2", "v2 (edited)"))
    world.write("files/AGENTS.md", "# Team rules v3\n")
    result = world.run("apply", profile, "--root", str(world.root), "--yes")
    assert result.code == 4
    assert "edited by hand" in result.out
    assert "v2 (edited)" in agents.read_text()


def test_json_envelope_is_versioned_on_every_command(world: World) -> None:
    profile = make_profile(world)
    for args in (
        ("plan", profile, "--root", str(world.root), "--json"),
        ("apply", profile, "--root", str(world.root), "--yes", "--json"),
        ("status", "--json"),
        ("status", profile, "--root", str(world.root), "--json"),
        ("schema", "profile", "--json"),
        ("plan", profile, "--root", str(world.root), "--no-such-option", "--json"),
    ):
        result = world.run(*args)
        envelope = result.json
        assert envelope["schema"] == "trueup.cli/1"
        assert envelope["exitCode"] == result.code
        assert set(envelope) == {"schema", "command", "status", "exitCode", "message", "data"}


def test_a_usage_error_envelope_names_the_command_it_was_made_in(world: World) -> None:
    for args, command in (
        (("plan", "--no-such-option", "--json"), "plan"),
        (("org", "plan", "--json"), "org plan"),
        (("grant", "add", "--json"), "grant add"),
        (("org", "no-such-command", "--json"), "org"),
    ):
        result = world.run(*args)
        assert result.code == 2
        assert result.json["command"] == command
        assert result.json["data"]["hint"] == f"trueup {command} --help"


def test_dropped_resource_is_removed_only_if_unmodified(world: World) -> None:
    profile = make_profile(world)
    assert world.run("apply", profile, "--root", str(world.root), "--yes").code == 0
    hello = world.target("bin/hello")
    hello.write_text("#!/bin/sh\necho mine\n")
    trimmed = PROFILE.split('[[resource]]\nid = "hello"')[0]
    world.write("workstation.toml", trimmed.replace('depends_on = ["agents-md"]\n', ""))
    kept = world.run("apply", profile, "--root", str(world.root), "--yes")
    assert kept.code == 4
    assert hello.read_text() == "#!/bin/sh\necho mine\n"
    assert "delete it by hand (trueup then forgets it), or declare it again" in kept.out
    assert "--overwrite" not in kept.out, "there is no declared version to take"

    world.write("workstation.toml", PROFILE)
    assert (
        world.run("apply", profile, "--root", str(world.root), "--yes", "--overwrite", "hello").code
        == 0
    )
    world.write("workstation.toml", trimmed)
    removed = world.run("apply", profile, "--root", str(world.root), "--yes")
    assert removed.code == 0, removed.out
    assert not hello.exists()


def test_version_and_help(world: World) -> None:
    assert world.run("--version").out.startswith("trueup ")
    for command in ("plan", "apply", "status", "recover", "abandon", "schema"):
        result = world.run(command, "--help")
        assert result.code == 0
        assert "Usage" in result.out
    # An argument's help is shown with it: apply takes a saved plan too.
    assert "plan saved with plan -o" in world.run("apply", "--help", env={"COLUMNS": "200"}).out


def test_version_with_json_is_a_versioned_envelope(world: World) -> None:
    version = world.run("--version").out.split()[1]
    for args in (("--version", "--json"), ("--json", "--version")):
        result = world.run(*args)
        assert result.code == 0, result.out + result.err
        assert result.json["schema"] == "trueup.cli/1" and result.json["status"] == "ok"
        assert (result.json["exitCode"], result.json["data"]) == (0, {"version": version})
    misplaced = world.run("--json", "status")
    assert misplaced.code == 2 and misplaced.json["status"] == "error", misplaced.out


def age(base: Path) -> None:
    """Everything 10 s old: past the racy window, so plans are remembered."""
    past = time.time_ns() - 10_000_000_000
    for path in [base, *base.rglob("*")]:
        os.utime(path, ns=(past, past), follow_symlinks=False)


def test_a_remembered_plan_never_hides_an_edit(world: World) -> None:
    profile = make_profile(world)
    assert world.run("apply", profile, "--root", str(world.root), "--yes").code == 0
    age(world.base)
    first = world.run("plan", profile, "--root", str(world.root), "--json")
    second = world.run("plan", profile, "--root", str(world.root), "--json")
    assert first.code == second.code == 0, first.err + second.err
    assert first.json["data"]["digest"] == second.json["data"]["digest"]

    config = world.target(".codex/config.toml")
    config.write_text(config.read_text().replace("gpt-5", "gpt-4"))
    age(world.base)
    drift = world.run("apply", profile, "--root", str(world.root), "--yes", "--json")
    assert drift.code == 4, drift.out + drift.err
    kinds = {a["resource"]: a["type"] for a in drift.json["data"]["plan"]["plan"]["actions"]}
    assert kinds["codex-config"] == "drift-conflict"
    assert 'model = "gpt-4"' in config.read_text()


def test_a_config_file_that_cannot_be_read_is_fixed_by_hand_not_overwritten(
    world: World,
) -> None:
    profile = str(
        world.write(
            "c.toml",
            '[profile]\nid = "c"\nname = "C"\n\n[[resource]]\nid = "settings"\n'
            'kind = "config"\ntarget = "s.json"\nkeys = { model = "m" }\n',
        )
    )
    world.target("s.json").write_text("{ not json")
    planned = world.run("plan", profile, "--root", str(world.root))
    assert planned.code == 4
    assert "fix it by hand" in planned.out and "--overwrite RESOURCE" not in planned.out
    assert world.target("s.json").read_text() == "{ not json"


MOVABLE = """
[profile]
id = "m"
name = "Moved"

[[resource]]
id = "notes"
kind = "file"
target = "{target}"
content = "declared\\n"
"""


def test_a_resource_moved_to_another_target_needs_a_person_then_overwrite(world: World) -> None:
    root = str(world.root)
    profile = world.write("m.toml", MOVABLE.format(target="old.txt"))
    assert world.run("apply", str(profile), "--root", root, "--yes").code == 0
    world.write("m.toml", MOVABLE.format(target="new.txt"))

    planned = world.run("plan", str(profile), "--root", root, "--json")
    assert planned.json["status"] == "human-action-required", planned.out
    (action,) = planned.json["data"]["plan"]["actions"]
    assert action["type"] == "human-action"
    assert "--overwrite notes" in action["summary"]
    refused = world.run("apply", str(profile), "--root", root, "--yes")
    assert not world.target("new.txt").exists(), "nothing is written for a moved id"
    assert "--overwrite notes" in refused.out

    taken = world.run("apply", str(profile), "--root", root, "--yes", "--overwrite", "notes")
    assert taken.code == 0, taken.out + taken.err
    assert world.target("new.txt").read_text() == "declared\n"
    assert world.target("old.txt").read_text() == "declared\n", "the old target is left"
    again = world.run("plan", str(profile), "--root", root, "--json")
    assert again.json["status"] == "converged", again.out


def test_a_moved_resource_already_in_place_is_verified_and_recorded(world: World) -> None:
    root = str(world.root)
    profile = world.write("m.toml", MOVABLE.format(target="old.txt"))
    assert world.run("apply", str(profile), "--root", root, "--yes").code == 0
    world.write("m.toml", MOVABLE.format(target="new.txt"))
    world.target("new.txt").write_text("declared\n")

    taken = world.run(
        "apply", str(profile), "--root", root, "--yes", "--overwrite", "notes", "--json"
    )
    assert taken.code == 0, taken.out + taken.err
    (action,) = taken.json["data"]["run"]["actions"]
    assert (action["type"], action["status"]) == ("verify-only", "succeeded")
    assert action["evidence"]["status"] == "passed"
    again = world.run("plan", str(profile), "--root", root, "--json")
    assert again.json["status"] == "converged", again.out


def test_a_live_config_value_that_is_not_a_number_is_named_not_taken_for_null(
    world: World,
) -> None:
    root = str(world.root)
    profile = world.write(
        "n.json",
        '{"profile": {"id": "n", "name": "N"}, "resource": [{"id": "s", "kind": "config",'
        ' "target": "s.yaml", "keys": {"limit": null, "a": 1}}]}',
    )
    assert world.run("apply", str(profile), "--root", root, "--yes").code == 0
    world.target("s.yaml").write_text("a: 1\nlimit: .nan\n")
    planned = world.run("plan", str(profile), "--root", root)
    assert planned.code == 2, planned.out + planned.err
    assert "resource 's'" in planned.err and "not finite" in planned.err
    assert "Traceback" not in planned.err


MOVED_AND_FAILING = """
[profile]
id = "m"
name = "Moved"

[[resource]]
id = "a-notes"
kind = "file"
target = "{target}"
content = "declared\\n"

[[resource]]
id = "b-other"
kind = "file"
target = "b.txt"
content = "b\\n"
{verify}
"""


def _moved_in_place(world: World, verify: str) -> Path:
    root = str(world.root)
    profile = world.write("m.toml", MOVED_AND_FAILING.format(target="old.txt", verify=""))
    world.run("apply", str(profile), "--root", root, "--yes")
    world.target("b.txt").unlink()
    world.write("m.toml", MOVED_AND_FAILING.format(target="new.txt", verify=verify))
    world.target("new.txt").write_text("declared\n")
    return profile


def test_a_failed_run_puts_back_the_record_a_verify_only_action_replaced(world: World) -> None:
    profile = _moved_in_place(world, 'verify = { command = ["sh", "-c", "exit 3"] }')
    root = str(world.root)
    failed = world.run("apply", str(profile), "--root", root, "--yes", "--overwrite", "a-notes")
    assert failed.code == 7, failed.out + failed.err
    assert "internal error" not in failed.out + failed.err
    assert not world.target("b.txt").exists()
    again = world.run("plan", str(profile), "--root", root, "--json")
    moved = [a for a in again.json["data"]["plan"]["actions"] if a["resource"] == "a-notes"]
    assert moved[0]["type"] == "human-action", "the old record (old.txt) is back"


def test_a_crash_after_a_verify_only_action_is_recovered(world: World) -> None:
    profile = _moved_in_place(world, "")
    root = str(world.root)
    crashed = world.run(
        "apply",
        str(profile),
        "--root",
        root,
        "--yes",
        "--overwrite",
        "a-notes",
        env={"TRUEUP_CRASH_AT": "mutated"},
    )
    assert crashed.code != 0
    recovered = world.run("recover", "--json")
    assert recovered.code == 0, recovered.out + recovered.err
    assert world.target("b.txt").read_text() == "b\n"
    assert world.target("new.txt").read_text() == "declared\n"


def test_a_file_appearing_mid_apply_with_the_declared_bytes_is_still_left_alone(
    world: World,
) -> None:
    """Between staging and the rename a person writes exactly what trueup would: still theirs."""
    profile = world.write("m.toml", MOVABLE.format(target="d/notes.txt"))
    code, said = apply_while_paused_after_staging(
        world, profile, lambda: person_writes(world.target("d/notes.txt"), "declared\n")
    )
    assert code == 7, said
    assert "'notes' changed after the plan was computed" in said
    assert world.target("d/notes.txt").read_text() == "declared\n", "the person's file stays"


@pytest.mark.parametrize("kind", ["skill", "directory"])
def test_a_file_appearing_in_a_folder_mid_apply_is_left_alone(world: World, kind: str) -> None:
    world.write("src/one.txt", "one\n")
    world.write("src/two.txt", "two\n")
    profile = world.write(
        "s.toml",
        f'[profile]\nid = "s"\nname = "S"\n[[resource]]\nid = "s"\nkind = "{kind}"\n'
        'target = "sk"\nsource = "src"\n',
    )
    code, said = apply_while_paused_after_staging(
        world, profile, lambda: person_writes(world.target("sk/two.txt"), "USER DATA\n")
    )
    assert code == 7, said
    assert "changed after the run wrote it" not in said, "the run never wrote it"
    assert world.target("sk/two.txt").read_text() == "USER DATA\n"
    assert not world.target("sk/one.txt").exists(), "the run is one transaction"


def person_writes(path: Path, text: str) -> None:
    """A file written by somebody else, in a folder made for it if it is not there yet
    (a folder a run is making is renamed into place only at commit)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def apply_while_paused_after_staging(
    world: World, profile: Path, meanwhile: Callable[[], object]
) -> tuple[int, str]:
    """Apply, stopped (SIGSTOP) once its temp files are written; ``meanwhile``, then go on."""
    proc = subprocess.Popen(
        [TRUEUP, "apply", str(profile), "--root", str(world.root), "--yes"],
        env=world.env({"TRUEUP_CRASH_AT": "temp-written:1:SIGSTOP"}),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 60
        while not _stopped(proc.pid):
            assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
            time.sleep(0.02)
        meanwhile()
    finally:
        os.kill(proc.pid, signal.SIGCONT)
    out, err = proc.communicate(timeout=60)
    return proc.returncode, out + err


def _stopped(pid: int) -> bool:
    with open(f"/proc/{pid}/stat") as handle:
        return handle.read().rsplit(")", 1)[1].split()[0] == "T"


RENAMED = """
[profile]
id = "r"
name = "Renamed"

[[resource]]
id = "{rid}"
kind = "file"
target = "a.txt"
content = "{content}\\n"
policy = "replace-if-unmodified"

[[resource]]
id = "{skill}"
kind = "skill"
target = "skills/review"
source = "skills/review"
"""


@pytest.mark.parametrize("content", ["v1", "v2"], ids=["same content", "new content"])
def test_a_renamed_id_takes_its_target_over_and_never_deletes_it(
    world: World, content: str
) -> None:
    root = str(world.root)
    world.write("skills/review/SKILL.md", "review\n")
    profile = world.write("r.toml", RENAMED.format(rid="old", content="v1", skill="s-old"))
    assert world.run("apply", str(profile), "--root", root, "--yes").code == 0
    world.write("r.toml", RENAMED.format(rid="new", content=content, skill="s-new"))

    planned = world.run("plan", str(profile), "--root", root, "--json")
    kinds_of = {a["resource"]: a["type"] for a in planned.json["data"]["plan"]["actions"]}
    assert kinds_of["old"] == kinds_of["s-old"] == "remove-resource"
    assert kinds_of["new"] == ("verify-only" if content == "v1" else "write-file")
    applied = world.run("apply", str(profile), "--root", root, "--yes")
    assert applied.code == 0, applied.out + applied.err
    assert world.target("a.txt").read_text() == f"{content}\n"
    assert world.target("skills/review/SKILL.md").read_text() == "review\n"
    again = world.run("plan", str(profile), "--root", root, "--json")
    assert again.json["status"] == "converged", again.out

    world.write("r.toml", '[profile]\nid = "r"\nname = "Renamed"\n')
    dropped = world.run("apply", str(profile), "--root", root, "--yes")
    assert dropped.code == 0, dropped.out + dropped.err
    assert not world.target("a.txt").exists(), "the new id owns it: dropping it removes it"


def test_a_live_value_a_config_key_replaces_is_never_stored(world: World) -> None:
    """It may be a credential: the plan file and the state store hold declared values only."""
    root = str(world.root)
    profile = world.write(
        "c.toml",
        '[profile]\nid = "c"\nname = "C"\n[[resource]]\nid = "t"\nkind = "config"\n'
        'target = "c.toml"\nkeys = { "api.key" = "placeholder" }\n',
    )
    world.target("c.toml").write_text('[api]\nkey = "sk-live-SECRET-4242"\n')
    saved = world.base / "plan.json"
    assert world.run("plan", str(profile), "--root", root, "-o", str(saved)).code == 0
    assert world.run("apply", str(profile), "--root", root, "--yes").code == 0
    assert b"sk-live-SECRET-4242" not in saved.read_bytes()
    assert_never_stored(world, b"sk-live-SECRET-4242")


def assert_never_stored(world: World, text: bytes) -> None:
    """Not in any file of the state folder: database, journal, rollback, caches."""
    for stored in world.data.rglob("*"):
        if stored.is_file():
            assert text not in stored.read_bytes(), stored


def test_a_verification_command_s_output_is_never_kept(world: World) -> None:
    root = str(world.root)
    profile = world.write(
        "v.toml",
        '[profile]\nid = "v"\nname = "V"\n[[resource]]\nid = "f"\nkind = "file"\n'
        'target = "f.txt"\ncontent = "x"\n'
        # prints "private-line", which the command line itself does not spell
        'verify = { command = ["sh", "-c", "printf \'priv%s\\\\n\' ate-line; exit 3"] }\n',
    )
    failed = world.run("apply", str(profile), "--root", root, "--yes")
    assert failed.code == 7, failed.out + failed.err
    assert "exited 3" in failed.out + failed.err
    assert "private-line" not in failed.out + failed.err
    assert_never_stored(world, b"private-line")


def test_a_mistyped_plan_output_is_refused_and_loses_nothing(world: World) -> None:
    root = str(world.root)
    profile = world.write("m.toml", MOVABLE.format(target="a.txt"))
    text = profile.read_text()
    (world.base / "folder").mkdir()
    for out in ("nodir/plan.json", "folder", str(profile)):
        refused = world.run("plan", str(profile), "--root", root, "-o", out)
        assert refused.code == 2, (out, refused.out, refused.err)
        assert "Traceback" not in refused.err and "internal error" not in refused.err
        assert "-o" in refused.err
    assert profile.read_text() == text
    assert sorted(p.name for p in world.base.iterdir() if ".tmp-" in p.name) == []
    assert list((world.base / "folder").iterdir()) == []
    saved = world.base / "plan.json"
    for _ in range(2):  # a saved plan may be saved over
        assert world.run("plan", str(profile), "--root", root, "-o", str(saved)).code == 0


@pytest.mark.parametrize("kind", ["file", "directory", "skill"])
def test_something_in_the_way_needs_a_person_not_overwrite(world: World, kind: str) -> None:
    root = str(world.root)
    world.write("src/one.txt", "one\n")
    body = 'content = "x"' if kind == "file" else 'source = "src"'
    profile = world.write(
        "w.toml",
        f'[profile]\nid = "w"\nname = "W"\n[[resource]]\nid = "w"\nkind = "{kind}"\n'
        f'target = "thing"\n{body}\n',
    )
    if kind == "file":
        world.target("thing").mkdir()
    else:
        world.target("thing").write_text("a file where the folder goes\n")
    planned = world.run("plan", str(profile), "--root", root)
    assert planned.code == 4, planned.out + planned.err
    assert "fix it by hand" in planned.out
    assert "rerun with --overwrite" not in planned.out


def test_recover_never_redoes_what_a_person_changed_after_the_crash(world: World) -> None:
    root = str(world.root)
    profile = world.write(
        "r.toml",
        '[profile]\nid = "r"\nname = "R"\n'
        '[[resource]]\nid = "f1"\nkind = "file"\ntarget = "f1.txt"\ncontent = "declared 1\\n"\n'
        '[[resource]]\nid = "f2"\nkind = "file"\ntarget = "f2.txt"\ncontent = "declared 2\\n"\n',
    )
    crashed = world.run(
        "apply", str(profile), "--root", root, "--yes", env={"TRUEUP_CRASH_AT": "temp-written"}
    )
    assert crashed.code != 0
    world.target("f2.txt").write_text("created by a person after the crash\n")
    recovered = world.run("recover")
    assert recovered.code == 3, recovered.out + recovered.err
    assert "trueup plan" in recovered.out
    assert world.target("f2.txt").read_text() == "created by a person after the crash\n"
    assert world.run("status").code != 4, "the target is not locked any more"


def test_keys_declared_with_needless_quotes_are_removed_when_dropped(world: World) -> None:
    root = str(world.root)
    head = '[profile]\nid = "q"\nname = "Q"\n'
    profile = world.write(
        "q.toml",
        head + '[[resource]]\nid = "c"\nkind = "config"\ntarget = "c.toml"\n'
        "keys = { '\"quoted\"' = 1, 'sec.\"inner\"' = 2 }\n",
    )
    world.target("c.toml").write_text("mine = 0\n")  # so the file stays when the keys go
    assert world.run("apply", str(profile), "--root", root, "--yes").code == 0
    world.write("q.toml", head)
    dropped = world.run("apply", str(profile), "--root", root, "--yes")
    assert dropped.code == 0, dropped.out + dropped.err
    assert "left changed" not in dropped.out
    assert "quoted" not in world.target("c.toml").read_text()
    assert "inner" not in world.target("c.toml").read_text()
    assert world.target("c.toml").read_text() == "mine = 0\n"


def test_a_table_declared_again_as_dotted_keys_converges_and_stays_so(world: World) -> None:
    root = str(world.root)
    head = '[profile]\nid = "t"\nname = "T"\n[[resource]]\nid = "c"\nkind = "config"\n'
    profile = world.write("t.toml", head + 'target = "c.toml"\nkeys = { tool = { x = 1 } }\n')
    assert world.run("apply", str(profile), "--root", root, "--yes").code == 0
    world.write("t.toml", head + 'target = "c.toml"\nkeys = { "tool.x" = 1 }\n')
    for _ in range(2):
        again = world.run("apply", str(profile), "--root", root, "--yes")
        assert again.code == 0, again.out + again.err
        assert world.target("c.toml").read_text() == "[tool]\nx = 1\n"
    planned = world.run("plan", str(profile), "--root", root, "--json")
    assert (planned.code, planned.json["status"]) == (0, "converged"), planned.out


@pytest.mark.parametrize("sig", ["SIGINT", "SIGTERM"])
def test_a_signal_while_a_run_finishes_leaves_it_for_recover(world: World, sig: str) -> None:
    root = str(world.root)
    profile = world.write("m.toml", MOVABLE.format(target="a.txt"))
    stopped = world.run(
        "apply",
        str(profile),
        "--root",
        root,
        "--yes",
        env={"TRUEUP_CRASH_AT": f"run-finishing:1:{sig}"},
    )
    assert stopped.code == 7, stopped.out + stopped.err
    assert "trueup recover" in stopped.err
    assert world.run("recover").code == 0


@pytest.mark.parametrize("sig", ["SIGINT", "SIGTERM"])
def test_a_signal_while_a_run_records_its_end_waits_until_it_is_recorded(
    world: World, sig: str
) -> None:
    profile = world.write("m.toml", MOVABLE.format(target="a.txt"))
    stopped = world.run(
        "apply",
        str(profile),
        "--root",
        str(world.root),
        "--yes",
        env={"TRUEUP_CRASH_AT": f"material-discarded:1:{sig}"},
    )
    assert stopped.code == 7 and "nothing is left to recover" in stopped.err, stopped.err
    assert not [p for p in (world.data / "rollback").rglob("*") if p.is_file()]
    status = world.run("status", "--json")
    assert status.json["data"]["blocked_runs"] == [], "the run was recorded as finished"


def test_status_tells_a_failed_last_run_even_when_it_was_the_first(world: World) -> None:
    root = str(world.root)
    failing = ONE_FILE_A + 'verify = { command = ["false"] }\n'
    profile = world.write("f.toml", failing)
    assert world.run("apply", str(profile), "--root", root, "--yes").code == 7
    status = world.run("status")
    assert status.code == 7, status.out
    assert "failed" in status.out and f"next: trueup plan {profile} --root {root}" in status.out
    assert world.run("status", "--json").json["status"] == "failed"
    world.write("f.toml", ONE_FILE_A)
    assert world.run("apply", str(profile), "--root", root, "--yes").code == 0
    assert world.run("status").code == 0


def test_status_after_an_abandoned_run_says_so(world: World) -> None:
    root = str(world.root)
    profile = world.write("f.toml", ONE_FILE_A)
    killed = world.run(
        "apply", str(profile), "--root", root, "--yes", env={"TRUEUP_CRASH_AT": "mutated"}
    )
    assert killed.code == -9
    assert world.run("abandon").code == 0
    status = world.run("status", "--json")
    assert status.code == 7 and status.json["status"] == "interrupted", status.out
    assert "was abandoned part-way" in world.run("status").out
    # The abandoned run wrote the file: an apply finds nothing to change, and says so
    # to status too, once; applying a converged target again records nothing more.
    last_runs = []
    for _ in range(2):
        applied = world.run("apply", str(profile), "--root", root, "--yes")
        assert applied.code == 0 and "nothing to change" in applied.out, applied.out
        status = world.run("status", "--json")
        assert status.code == 0 and status.json["status"] == "converged", status.out
        last_runs += [t["last_run"]["id"] for t in status.json["data"]["targets"]]
    assert len(set(last_runs)) == 1, last_runs


def test_status_of_an_empty_store_says_nothing_was_applied_not_converged(world: World) -> None:
    status = world.run("status", "--json")
    assert (status.code, status.json["status"]) == (0, "nothing-applied"), status.out
    assert status.json["schema"] == "trueup.cli/1"
    assert status.json["data"] == {"targets": [], "blocked_runs": []}
    human = world.run("status")
    assert human.code == 0 and "nothing applied yet" in human.out
    assert "converged" not in human.out


def test_status_after_a_first_run_cancelled_before_any_change_says_nothing_was_applied(
    world: World,
) -> None:
    profile = str(world.write("f.toml", ONE_FILE_A))
    cancelled = _apply_stopped_at(world, profile, "run-started:1:SIGTERM")
    assert "nothing was changed" in cancelled.err, cancelled.out + cancelled.err
    status = world.run("status", "--json")
    assert (status.code, status.json["status"]) == (0, "nothing-applied"), status.out
    assert "nothing applied yet" in world.run("status").out


def test_live_status_with_changes_to_apply_is_not_called_converged(world: World) -> None:
    profile = world.write("f.toml", ONE_FILE_A)
    status = world.run("status", str(profile), "--root", str(world.root), "--json")
    assert status.code == 3 and status.json["status"] == "changes-pending"
    assert (
        "changes-pending; 1 pending change(s)"
        in world.run("status", str(profile), "--root", str(world.root)).out
    )


def _apply_stopped_at(world: World, profile: str, crash_at: str) -> Result:
    """``apply --yes`` of ``profile``, stopped at a crash point (``point[:n[:SIGNAL]]``)."""
    env = {"TRUEUP_CRASH_AT": crash_at}
    return world.run("apply", profile, "--root", str(world.root), "--yes", env=env)


ONE_FILE_A = '[profile]\nid = "s"\nname = "S"\n[[resource]]\nid = "a"\nkind = "file"\ntarget = "a.txt"\ncontent = "A\\n"\n'


def test_a_mistyped_state_folder_is_an_error_not_a_new_empty_store(world: World) -> None:
    typo = world.base / "typo" / "dir" / "state.db"
    result = world.run("status", "--state", f"sqlite:///{typo}")
    assert result.code == 2 and "folder" in result.err and "does not exist" in result.err
    assert not (world.base / "typo").exists()


def test_a_broken_state_file_is_named_not_called_a_bug(world: World) -> None:
    broken = world.base / "broken.db"
    broken.write_text("garbage, not SQLite\n" * 100)
    result = world.run("status", "--state", f"sqlite:///{broken}")
    assert result.code == 6, result.err  # a store that cannot be used (README, exit codes)
    assert f"the state store {broken} cannot be used" in result.err
    assert "internal error" not in result.err


def test_a_live_status_of_a_target_another_run_holds_says_blocked(world: World) -> None:
    profile = str(world.write("f.toml", ONE_FILE_A))
    crashed = _apply_stopped_at(world, profile, "journal-running")
    assert crashed.code == -9
    live = world.run("status", profile, "--root", str(world.root))
    assert live.code == 4 and "trueup recover" in live.err, live.out + live.err
    queued = world.run("apply", profile, "--root", str(world.root), "--yes", "--queue")
    assert queued.code == 4 and "Plan for" not in queued.out


def test_status_drift_ends_when_a_plan_finds_none(world: World) -> None:
    text = ONE_FILE_A + 'policy = "replace-if-unmodified"\n'
    profile = str(world.write("f.toml", text))
    root = str(world.root)
    assert world.run("apply", profile, "--root", root, "--yes").code == 0
    world.target("a.txt").write_text("edited\n")
    assert world.run("apply", profile, "--root", root, "--yes").code == 4
    drifted = world.run("status")
    assert drifted.code == 4 and f"next: trueup plan {profile} --root {root}" in drifted.out
    world.target("a.txt").write_text("A\n")
    assert world.run("plan", profile, "--root", root).code == 0
    assert world.run("status").code == 0


def test_a_queued_apply_is_confirmed_like_any_apply(world: World) -> None:
    profile = str(world.write("f.toml", ONE_FILE_A))
    refused = world.run("apply", profile, "--root", str(world.root), "--queue")
    assert refused.code == 2 and "--yes" in refused.err
    assert world.run("jobs", "list", "--json").json["data"] == []


def test_migrating_a_store_written_by_a_newer_trueup_is_refused(world: World) -> None:
    import sqlite3

    store = world.base / "s.db"
    assert world.run("status", "--state", f"sqlite:///{store}").code == 0
    with sqlite3.connect(store) as db:
        db.execute("UPDATE alembic_version SET version_num = '0099'")
    result = world.run("state", "migrate", "--state", f"sqlite:///{store}")
    assert result.code == 2 and "written by a newer trueup" in result.err, result.err


def test_status_says_queued_while_a_queued_apply_waits_for_a_worker(world: World) -> None:
    profile = str(world.write("f.toml", ONE_FILE_A))
    assert world.run("apply", profile, "--root", str(world.root), "--queue", "--yes").code == 0
    status = world.run("status", "--json")
    assert (status.code, status.json["status"]) == (0, "queued"), status.out


A_FILE_THERE = """
[profile]
id = "r"
name = "R"

[[resource]]
id = "commands-file"
kind = "file"
target = ".claude/commands"
content = "one file\\n"
"""

A_FOLDER_THERE = """
[profile]
id = "r"
name = "R"

[[resource]]
id = "commands-dir"
kind = "directory"
target = ".claude/commands"
source = "cmds"
{verify}
"""


DIRTIES = 'verify = { command = ["sh", "-c", "echo log > .claude/commands/x.log; exit 1"] }'


@pytest.mark.parametrize(
    "verify",
    ["", 'verify = { command = ["false"] }', DIRTIES],
    ids=["ok", "fails", "fails-after-writing-there"],
)
def test_a_file_trueup_wrote_becomes_a_folder_in_one_apply(world: World, verify: str) -> None:
    """A file is dropped and a folder declared at its name: the file goes, then the folder comes.

    One run is one transaction: if the folder fails its verification, the file
    is put back as it was.
    """
    root = str(world.root)
    world.write("cmds/review.md", "review\n")
    first = world.write("r.toml", A_FILE_THERE)
    assert world.run("apply", str(first), "--root", root, "--yes").code == 0
    second = world.write("r.toml", A_FOLDER_THERE.format(verify=verify))
    applied = world.run("apply", str(second), "--root", root, "--yes")
    commands = world.target(".claude/commands")
    if verify == DIRTIES:  # the folder holds what its check wrote: it is not trueup's to remove
        assert applied.code == 7, applied.out
        assert "changed after the run wrote it, so left as it is" in applied.out
        assert (commands / "x.log").exists()
        return
    if verify:
        assert applied.code == 7, applied.out
        assert commands.read_text() == "one file\n"
        return
    assert applied.code == 0, applied.out + applied.err
    assert (commands / "review.md").read_text() == "review\n"
    again = world.run("plan", str(second), "--root", root, "--json")
    assert again.code == 0 and again.json["status"] == "converged", again.out


@pytest.mark.parametrize(
    ("name", "live"),
    [("c.json", '{"other": "\\ud800"}\n'), ("c.yaml", 'other: "\\ud83d\\ude00"\n')],
    ids=["json-lone-surrogate", "yaml-escaped-pair"],
)
def test_a_config_file_holding_lone_surrogates_is_merged_like_any_other(
    world: World, name: str, live: str
) -> None:
    """JSON and YAML escapes can spell text that has no UTF-8 form; the file is still the user's."""
    world.target(name).write_text(live)
    profile = world.write(
        "c.toml",
        f'[profile]\nid = "c"\nname = "C"\n[[resource]]\nid = "c"\nkind = "config"\n'
        f'target = "{name}"\nkeys = {{ a = 1 }}\n',
    )
    applied = world.run("apply", str(profile), "--root", str(world.root), "--yes")
    assert applied.code == 0, applied.out + applied.err
    assert world.target(name).read_text().startswith(live.rstrip("}\n"))
    again = world.run("plan", str(profile), "--root", str(world.root), "--json")
    assert again.code == 0 and again.json["status"] == "converged", again.out


def test_verification_commands_run_several_at_once(world: World) -> None:
    """machine-sync.md, Limits: verification concurrency 4.

    Each command notes when it starts, then waits until four have started (or
    gives up after 20 s): run one at a time, the first would give up and fail.
    """
    marks = world.base / "marks"
    marks.mkdir()
    wait = (
        f'touch "{marks}/$1"; i=0; '
        f'while [ "$(ls "{marks}" | wc -l)" -lt 4 ] && [ $i -lt 200 ]; do sleep 0.1; i=$((i+1)); done; '
        f'[ "$(ls "{marks}" | wc -l)" -ge 4 ]'
    )
    text = '[profile]\nid = "v"\nname = "V"\n'
    for n in range(4):
        text += (
            f'[[resource]]\nid = "f{n}"\nkind = "file"\ntarget = "f{n}.txt"\ncontent = "{n}\\n"\n'
            f'verify = {{ command = ["sh", "-c", {json.dumps(wait)}, "sh", "f{n}"] }}\n'
        )
    profile = world.write("v.toml", text)
    applied = world.run("apply", str(profile), "--root", str(world.root), "--yes")
    assert applied.code == 0, applied.out + applied.err
    assert sorted(p.name for p in marks.iterdir()) == ["f0", "f1", "f2", "f3"]


def test_a_config_declared_below_a_dropped_file_is_shown_and_written(world: World) -> None:
    root = str(world.root)
    first = world.write("r.toml", A_FILE_THERE)
    assert world.run("apply", str(first), "--root", root, "--yes").code == 0
    below = A_FILE_THERE.replace('id = "commands-file"', 'id = "cfg"').replace(
        'kind = "file"\ntarget = ".claude/commands"\ncontent = "one file\\n"',
        'kind = "config"\ntarget = ".claude/commands/e.json"\nkeys = { k = 1 }',
    )
    assert "e.json" in below
    second = world.write("r.toml", below)
    shown = world.run("plan", str(second), "--root", root)
    assert shown.code == 0 and "internal error" not in shown.err, shown.out + shown.err
    assert world.run("apply", str(second), "--root", root, "--yes").code == 0
    assert json.loads(world.target(".claude/commands/e.json").read_text()) == {"k": 1}


def test_sigterm_during_verification_commands_stops_them_and_the_run(world: World) -> None:
    """The commands run in threads: a signal must not wait for each to finish."""
    started = world.base / "started"
    started.mkdir()
    text = '[profile]\nid = "s"\nname = "S"\n'
    for n in range(2):
        wait = f'touch "{started}/{n}"; sleep 60'
        text += (
            f'[[resource]]\nid = "f{n}"\nkind = "file"\ntarget = "f{n}.txt"\ncontent = "{n}\\n"\n'
            f'verify = {{ command = ["sh", "-c", {json.dumps(wait)}] }}\n'
        )
    profile = world.write("s.toml", text)
    proc = subprocess.Popen(
        [TRUEUP, "apply", str(profile), "--root", str(world.root), "--yes"],
        env=world.env(),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 60
    while len(list(started.iterdir())) < 2:
        assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
        time.sleep(0.05)
    signalled = time.monotonic()
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=50)
    assert time.monotonic() - signalled < 20, "it waited for the commands"
    assert proc.returncode == 7, out + err
    assert not world.target("f0.txt").exists() and not world.target("f1.txt").exists()


A_LINK_OUT = """
[profile]
id = "r"
name = "R"

[[resource]]
id = "shared"
kind = "file"
target = "notes"
link = "{outside}"
"""

A_FILE_BELOW = """
[profile]
id = "r"
name = "R"

[[resource]]
id = "mine"
kind = "file"
target = "notes/today.md"
content = "mine\\n"
"""


@pytest.mark.parametrize("edited", [False, True], ids=["as-written", "repointed"])
def test_a_dropped_link_out_of_the_root_gives_way_to_a_file_declared_below_it(
    world: World, edited: bool
) -> None:
    """trueup made the link, so it removes it first; a link a person repointed stays,
    and the file below it is a conflict for them, never written outside the root."""
    root = str(world.root)
    outside = world.base / "outside"
    outside.mkdir()
    first = world.write("r.toml", A_LINK_OUT.format(outside=outside))
    assert world.run("apply", str(first), "--root", root, "--yes").code == 0
    link = world.target("notes")
    if edited:
        elsewhere = world.base / "elsewhere"
        elsewhere.mkdir()
        link.unlink()
        link.symlink_to(elsewhere)
    second = world.write("r.toml", A_FILE_BELOW)
    plan = world.run("plan", str(second), "--root", root)
    assert plan.code == (4 if edited else 0), plan.out + plan.err
    applied = world.run("apply", str(second), "--root", root, "--yes")
    assert not list(outside.iterdir())
    if edited:
        assert "outside the root" in applied.out
        assert link.is_symlink()
        assert not list((world.base / "elsewhere").iterdir())
        return
    assert applied.code == 0, applied.out + applied.err
    assert not link.is_symlink()
    assert (link / "today.md").read_text() == "mine\n"


FILES_IN_D = """
[profile]
id = "r"
name = "R"

[[resource]]
id = "x"
kind = "file"
target = "d/x.txt"
content = "old x\\n"

[[resource]]
id = "tool"
kind = "file"
target = "d/bin/tool"
content = "#!/bin/sh\\n"
executable = true
"""

FOLDER_D = """
[profile]
id = "r"
name = "R"

[[resource]]
id = "tree"
kind = "directory"
target = "d"
source = "tree"
"""


@pytest.mark.parametrize("edited", [False, True], ids=["as-written", "edited"])
def test_a_folder_declared_around_dropped_files_takes_over_what_trueup_wrote(
    world: World, edited: bool
) -> None:
    """The files trueup wrote under their own ids are trueup's inside the folder too:
    updated when unmodified, drift when a person edited them."""
    root = str(world.root)
    world.write("tree/x.txt", "new x\n")
    world.write("tree/bin/tool", "#!/bin/sh\n").chmod(0o755)
    first = world.write("r.toml", FILES_IN_D)
    assert world.run("apply", str(first), "--root", root, "--yes").code == 0
    if edited:
        world.target("d/x.txt").write_text("my edit\n")
    second = world.write("r.toml", FOLDER_D)
    applied = world.run("apply", str(second), "--root", root, "--yes")
    if edited:
        assert applied.code == 4 and "drift" in applied.out, applied.out
        assert world.target("d/x.txt").read_text() == "my edit\n"
        return
    assert applied.code == 0, applied.out + applied.err
    assert world.target("d/x.txt").read_text() == "new x\n"
    again = world.run("plan", str(second), "--root", root, "--json")
    assert again.code == 0 and again.json["status"] == "converged", again.out


A_TREE_THERE = """
[profile]
id = "r"
name = "R"

[[resource]]
id = "commands-tree"
kind = "{kind}"
target = ".claude/commands"
source = "cmds"
"""


@pytest.mark.parametrize("kind", ["directory", "skill"])
@pytest.mark.parametrize("foreign", [False, True], ids=["trueups-only", "with-a-persons-file"])
def test_a_folder_trueup_wrote_becomes_a_file_in_one_apply(
    world: World, kind: str, foreign: bool
) -> None:
    """The reverse of the file becoming a folder: the folder goes when nothing but
    trueup's files is in it; a person's file in it keeps it, a conflict for them."""
    root = str(world.root)
    world.write("cmds/review.md", "review\n")
    first = world.write("r.toml", A_TREE_THERE.format(kind=kind))
    assert world.run("apply", str(first), "--root", root, "--yes").code == 0
    if foreign:
        world.target(".claude/commands/mine.md").write_text("mine\n")
    second = world.write("r.toml", A_FILE_THERE)
    applied = world.run("apply", str(second), "--root", root, "--yes")
    commands = world.target(".claude/commands")
    if foreign:
        assert applied.code == 4, applied.out
        assert (commands / "mine.md").read_text() == "mine\n"
        return
    assert applied.code == 0, applied.out + applied.err
    assert commands.read_text() == "one file\n"
    again = world.run("plan", str(second), "--root", root, "--json")
    assert again.code == 0 and again.json["status"] == "converged", again.out


FILES_IN_THE_FOLDER = """[profile]
id = "r"
name = "R"
[[resource]]
id = "review"
kind = "file"
target = ".claude/commands/review.md"
content = "review\\n"
[[resource]]
id = "deep"
kind = "file"
target = ".claude/commands/sub/deep.md"
content = "deep\\n"
"""


@pytest.mark.parametrize(
    "case", ["ok", "a-persons-file", "fails"], ids=["ok", "a-persons-file", "fails"]
)
def test_files_trueup_wrote_in_a_folder_give_way_to_a_file_of_its_name(
    world: World, case: str
) -> None:
    """``a/b`` dropped and ``a`` declared: trueup's files go with the folders they
    leave empty, then the file comes, in one apply; a person's file in the folder
    keeps it (a conflict for them), and a failed check puts everything back."""
    root = str(world.root)
    first = world.write("r.toml", FILES_IN_THE_FOLDER)
    assert world.run("apply", str(first), "--root", root, "--yes").code == 0
    if case == "a-persons-file":
        world.target(".claude/commands/mine.md").write_text("mine\n")
    verify = 'verify = { command = ["false"] }\n' if case == "fails" else ""
    second = world.write("r.toml", A_FILE_THERE + verify)
    applied = world.run("apply", str(second), "--root", root, "--yes")
    commands = world.target(".claude/commands")
    if case == "ok":
        assert applied.code == 0, applied.out + applied.err
        assert commands.read_text() == "one file\n"
        again = world.run("plan", str(second), "--root", root, "--json")
        assert again.code == 0 and again.json["status"] == "converged", again.out
        return
    assert applied.code == (4 if case == "a-persons-file" else 7), applied.out + applied.err
    assert (commands / "review.md").read_text() == "review\n"
    assert (commands / "sub/deep.md").read_text() == "deep\n"
    assert not [p for p in world.root.rglob("*") if TEMP_MARK in p.name]
