"""SIGKILL at every journal boundary, then `trueup recover`.

After the kill every target is either exactly as before the run or exactly as
declared (never half-written), the run blocks new applies, and recover leaves
everything as declared with no temp file behind.
"""

from __future__ import annotations

import os
import secrets
import signal
import sqlite3
import subprocess
import time
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from world import TRUEUP, Result, World

from trueup.crashpoints import BOUNDARIES
from trueup.fs import TEMP_MARK
from trueup.state.store import Store

if TYPE_CHECKING:
    from conftest import TcpProxy

BATCH = "3"
FILES = {f"notes/n{i}.md": f"note {i}\n" for i in range(5)}
PROFILE_HEAD = """
[profile]
id = "crashy"
name = "Crashy"

[[resource]]
id = "config"
kind = "config"
target = "app/settings.json"
keys = { '"editor.fontSize"' = 14, "telemetry" = false }

[[resource]]
id = "tree"
kind = "directory"
target = "tree"
source = "tree"
policy = "replace"  # takes tree/a.txt, which trueup never wrote (mirror-owned would not)

[[resource]]
id = "skill"
kind = "skill"
target = "skills/review"
source = "skill"
policy = "replace"
"""
BEFORE = {
    "notes/n0.md": "old 0\n",
    "notes/n3.md": "old 3\n",
    "app/settings.json": '{\n    "editor.fontSize": 11,\n    "mine": true\n}\n',
    "tree/a.txt": "old a\n",
    # The tree was restructured: a file becomes a folder, and a folder a file.
    "tree/sub": "old sub\n",
    "tree/c.txt/inner": "old inner\n",
}
FOLDER = "<a folder>"
DECLARED_JSON = '{\n    "editor.fontSize": 14,\n    "mine": true,\n    "telemetry": false\n}\n'


def setup(world: World) -> str:
    text = PROFILE_HEAD
    for i, (target, content) in enumerate(FILES.items()):
        text += f'\n[[resource]]\nid = "n{i}"\nkind = "file"\ntarget = "{target}"\n'
        text += f"content = {content!r}\n".replace("'", '"')
    world.write("tree/a.txt", "new a\n")
    world.write("tree/sub/b.txt", "new b\n")
    world.write("tree/c.txt", "new c\n")
    world.write("skill/SKILL.md", "skill\n")
    for target, content in BEFORE.items():
        path = world.target(target)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content)
    return str(world.write("crashy.toml", text))


def declared() -> dict[str, str]:
    return {
        **FILES,
        "app/settings.json": DECLARED_JSON,
        "tree/a.txt": "new a\n",
        "tree/sub/b.txt": "new b\n",
        "tree/c.txt": "new c\n",
        "skills/review/SKILL.md": "skill\n",
    }


def read(world: World, target: str) -> str | None:
    path = world.target(target)
    if path.is_dir():
        return FOLDER
    return path.read_text() if path.exists() else None


def before(target: str) -> str | None:
    if any(path.startswith(target + "/") for path in BEFORE):
        return FOLDER
    return BEFORE.get(target)


def assert_each_before_or_declared(world: World) -> None:
    for target, want in declared().items():
        now = read(world, target)
        assert now in (before(target), want), f"{target} is half-way: {now!r}"
    for target, was in BEFORE.items():  # what the restructured tree held goes whole, or not
        if target not in declared():
            now = read(world, target)
            becomes = FOLDER if any(d.startswith(target + "/") for d in declared()) else None
            assert now in (was, becomes), f"{target} is half-way: {now!r}"


def temp_files(root: Path) -> list[str]:
    """Temp files, and temp folders (a new folder is staged whole under a temp name)."""
    return [
        os.path.join(folder, name)
        for folder, folders, names in os.walk(root)
        for name in [*folders, *names]
        if TEMP_MARK in name
    ]


CASES = [(b, 1) for b in BOUNDARIES] + [
    (b, 2) for b in ("rollback-flushed", "journal-running", "temp-written", "mutated")
]


@pytest.mark.parametrize(("boundary", "nth"), CASES, ids=[f"{b}-{n}" for b, n in CASES])
def test_kill_at_boundary_then_recover(world: World, boundary: str, nth: int) -> None:
    profile = setup(world)
    env = {"TRUEUP_BATCH_SIZE": BATCH}
    # The restructured tree's old files were not trueup's: removing them destroys data.
    confirmed = ("--root", str(world.root), "--yes", "--confirm", "Crashy")
    killed = world.run(
        "apply", profile, *confirmed, env={**env, "TRUEUP_CRASH_AT": f"{boundary}:{nth}"}
    )
    assert killed.code == -9, f"expected SIGKILL at {boundary}:{nth}: {killed.out}{killed.err}"
    assert_each_before_or_declared(world)

    blocked = world.run("apply", profile, *confirmed, env=env)
    assert blocked.code == 4
    assert "process is gone" in blocked.err
    assert "trueup recover" in blocked.err

    recovered = world.run("recover", env=env)
    assert recovered.code == 0, recovered.out + recovered.err
    for target, want in declared().items():
        assert read(world, target) == want, target
    assert temp_files(world.root) == []
    assert not any((world.data / "rollback").glob("*/batch-*.json"))

    after = world.run("plan", profile, "--root", str(world.root), "--json")
    assert {a["type"] for a in after.json["data"]["plan"]["actions"]} == {"no-op"}


EDITS = """
[profile]
id = "edits"
name = "Edits"

[[resource]]
id = "config"
kind = "config"
target = "c.toml"
keys = { model = "gpt-5" }

[[resource]]
id = "file"
kind = "file"
target = "f.txt"
content = "declared\\n"
policy = "replace-if-unmodified"
"""


def killed(
    world: World, profile: str, boundary: str = "mutated", confirm: str | None = None
) -> None:
    """Apply ``profile`` and SIGKILL it at ``boundary``; ``confirm``: the profile's name,
    typed when the run replaces a person's file (one trueup never wrote)."""
    typed = ("--confirm", confirm) if confirm is not None else ()
    result = world.run(
        "apply",
        profile,
        "--root",
        str(world.root),
        "--yes",
        *typed,
        env={"TRUEUP_CRASH_AT": boundary},
    )
    assert result.code == -9, result.err


def test_recover_never_undoes_an_edit_made_after_the_crash(world: World) -> None:
    world.target("c.toml").write_text('theme = "dark"\n')
    profile = str(world.write("edits.toml", EDITS))
    killed(world, profile)
    assert read(world, "f.txt") == "declared\n", "the run wrote both before it was killed"
    planned = world.run("plan", profile, "--root", str(world.root), "--json")
    assert "process is gone" in planned.json["data"]["blocked"]["message"]
    assert "trueup recover" in planned.json["data"]["blocked"]["hint"]
    shown = world.run("plan", profile, "--root", str(world.root))
    assert "note:" in shown.out and "trueup recover" in shown.out
    status = world.run("status")
    assert status.code == 4 and "process gone); next: run `trueup recover" in status.out
    world.target("c.toml").write_text(read(world, "c.toml") + 'font = "mono"\n')
    world.target("f.txt").write_text("my own text\n")

    recovered = world.run("recover")
    assert recovered.code == 4, recovered.out + recovered.err
    assert read(world, "f.txt") == "my own text\n"
    assert 'font = "mono"' in (read(world, "c.toml") or "")
    assert "drift" in recovered.out


def ctrl_c_at(world: World, boundary: str) -> tuple[str, Result]:
    """Apply EDITS and press Ctrl-C (SIGINT) when the run reaches ``boundary``."""
    profile = str(world.write("edits.toml", EDITS))
    crash = {"TRUEUP_CRASH_AT": f"{boundary}:1:SIGINT"}
    return profile, world.run("apply", profile, "--root", str(world.root), "--yes", env=crash)


def test_ctrl_c_before_any_change_releases_the_target(world: World) -> None:
    profile, stopped = ctrl_c_at(world, "run-started")
    assert stopped.code == 2 and "nothing was changed" in stopped.err
    assert read(world, "f.txt") is None
    assert world.run("apply", profile, "--root", str(world.root), "--yes").code == 0


def test_ctrl_c_between_actions_says_so_and_keeps_the_run_for_recover(world: World) -> None:
    profile, stopped = ctrl_c_at(world, "run-finishing")
    assert stopped.code == 7, stopped.out + stopped.err
    assert "interrupted" in stopped.err and "trueup recover" in stopped.err
    assert "nothing was changed" not in stopped.err
    assert world.run("apply", profile, "--root", str(world.root), "--yes").code == 4
    recovered = world.run("recover")
    assert recovered.code == 0, recovered.out + recovered.err
    assert read(world, "f.txt") == "declared\n"


@pytest.mark.parametrize("boundary", ["journal-running", "mutated"])
def test_recover_never_redoes_an_action_over_an_edit_made_after_the_crash(
    world: World, boundary: str
) -> None:
    # Under "replace" the fresh plan reads the same ("update file"), yet the
    # file is not the one the run planned to replace: a person's work now.
    world.target("a.txt").write_text("original\n")
    profile = str(world.write("a.toml", ONE_REPLACE))
    killed(world, profile, boundary, confirm="One")
    world.target("a.txt").write_text("my edit after the crash\n")
    recovered = world.run("recover")
    assert recovered.code == 3, recovered.out + recovered.err
    assert read(world, "a.txt") == "my edit after the crash\n"
    assert "its target changed after the run planned" in recovered.out
    assert "kept as changed after the run" in recovered.out
    status = world.run("status", "--json")
    assert (status.code, status.json["status"]) == (3, "human-action-required"), status.out


def test_recover_redoes_what_is_still_as_the_run_planned(world: World) -> None:
    world.target("a.txt").write_text("original\n")
    profile = str(world.write("a.toml", ONE_REPLACE))
    killed(world, profile, confirm="One")
    recovered = world.run("recover")
    assert recovered.code == 0, recovered.out + recovered.err
    assert read(world, "a.txt") == "declared\n"


def test_recover_does_not_apply_a_declaration_changed_after_the_crash(world: World) -> None:
    two = ONE_REPLACE + ONE_REPLACE.split("\n\n", 1)[1].replace('"a', '"b')
    profile = world.write("a.toml", two)
    result = world.run(
        "apply",
        str(profile),
        "--root",
        str(world.root),
        "--yes",
        env={"TRUEUP_CRASH_AT": "journal-succeeded:1", "TRUEUP_BATCH_SIZE": "1"},
    )
    assert result.code == -9, result.err
    assert read(world, "a.txt") == "declared\n" and not world.target("b.txt").exists()
    world.write("a.toml", two.replace("declared", "never reviewed"))
    recovered = world.run("recover")
    assert recovered.code == 3, recovered.out + recovered.err
    assert "a.toml changed after the run planned it" in recovered.out
    assert not world.target("b.txt").exists()


@pytest.mark.parametrize(
    ("boundary", "journaled", "staged"),
    [
        ("outcomes-noted:2", ["succeeded", "running"], 1),
        ("journal-succeeded:1", ["succeeded", "pending"], 0),
    ],
)
def test_a_verified_batch_is_journaled_before_the_next_batch_starts(
    world: World, boundary: str, journaled: list[str], staged: int
) -> None:
    """One batch in flight: a crash finds at most one batch running (the first is
    journaled succeeded right after its verification), and recover puts it right."""
    two = ONE_REPLACE + ONE_REPLACE.split("\n\n", 1)[1].replace('"a', '"b')
    profile = str(world.write("a.toml", two))
    result = world.run(
        "apply",
        profile,
        "--root",
        str(world.root),
        "--yes",
        env={"TRUEUP_CRASH_AT": boundary, "TRUEUP_BATCH_SIZE": "1"},
    )
    assert result.code == -9, result.err
    store = Store.open(f"sqlite:///{world.data / 'state.db'}")
    try:
        [run] = store.runs()
        statuses = [a.status for a in store.run_actions(run.id)]
    finally:
        store.close()
    assert statuses == journaled
    assert read(world, "a.txt") == "declared\n" and not world.target("b.txt").exists()
    assert len(temp_files(world.root)) == staged, "the second batch's file, if staged"
    recovered = world.run("recover")
    assert recovered.code == 0, recovered.out + recovered.err
    assert read(world, "a.txt") == read(world, "b.txt") == "declared\n"
    assert not temp_files(world.root)


def test_recover_without_the_declaration_finishes_the_run_and_says_what_next(
    world: World,
) -> None:
    world.target("a.txt").write_text("original\n")
    profile = world.write("a.toml", ONE_REPLACE)
    killed(world, str(profile), confirm="One")
    profile.unlink()
    recovered = world.run("recover")
    assert recovered.code == 3, recovered.out + recovered.err
    assert f"its declaration {profile} no longer exists" in recovered.out
    assert "trueup recover" not in recovered.out, "the run is finished: recover again refuses"
    assert world.run("status", "--json").json["data"]["blocked_runs"] == []


@pytest.mark.parametrize("sig", ["SIGINT", "SIGTERM"])
def test_a_signal_during_recover_leaves_the_run_for_another_recover(world: World, sig: str) -> None:
    world.target("a.txt").write_text("original\n")
    profile = str(world.write("a.toml", ONE_REPLACE))
    killed(world, profile, "journal-running", confirm="One")
    stopped = world.run("recover", env={"TRUEUP_CRASH_AT": f"run-finishing:1:{sig}"})
    assert stopped.code == 7, stopped.out + stopped.err
    assert "cancelled" not in stopped.err and "trueup recover" in stopped.err
    assert world.run("recover").code == 0
    assert read(world, "a.txt") == "declared\n"


ONE_REPLACE = """
[profile]
id = "one"
name = "One"

[[resource]]
id = "a"
kind = "file"
target = "a.txt"
content = "declared\\n"
"""


def test_abandon_of_a_run_killed_before_its_renames_leaves_no_folder_it_made(
    world: World,
) -> None:
    text = ONE_REPLACE.replace('target = "a.txt"', 'target = "new/deeper/a.txt"')
    profile = str(world.write("n.toml", text))
    killed(world, profile, "temp-written")
    assert world.run("abandon").code == 0
    assert list(world.root.iterdir()) == [], "as before the run: nothing added"


LOSES_ITS_MATERIAL = """
[profile]
id = "lossy"
name = "Lossy"

[[resource]]
id = "a"
kind = "file"
target = "a.txt"
content = "A\\n"

[[resource]]
id = "b"
kind = "file"
target = "b.txt"
content = "B\\n"
verify = { command = ["sh", "-c", "rm -rf \\"$TRUEUP_DATA/rollback\\"; exit 1"] }
"""


def test_a_restore_that_fails_leaves_the_run_for_recover_and_says_why(world: World) -> None:
    """A failed run whose undo fails too is no bug in trueup: it is a run to recover.

    Here the undo cannot read the rollback material (somebody removed it); a
    full disk or a read-only folder ends the same way.
    """
    world.target("a.txt").write_text("old\n")
    profile = world.write("lossy.toml", LOSES_ITS_MATERIAL)
    failed = world.run(
        "apply", str(profile), "--root", str(world.root), "--yes", "--confirm", "Lossy"
    )
    assert failed.code == 7, failed.err
    assert "internal error" not in failed.err
    assert "restoring what the run changed failed too" in failed.out + failed.err
    status = world.run("status", "--json")
    assert status.code == 4 and status.json["status"] == "blocked", status.out
    [run_id] = [run["id"] for run in status.json["data"]["blocked_runs"]]
    assert f"trueup recover {run_id}" in failed.out + failed.err
    # Its folder gone, the material looks as it does where the run did not run:
    # recover is refused before it takes the run over, a usage error.
    recovered = world.run("recover")
    assert recovered.code == 2, recovered.err
    assert "rollback material" in recovered.err and "nothing was changed" in recovered.err
    assert f"trueup abandon {run_id}" in recovered.err
    assert "internal error" not in recovered.err
    assert (
        world.run("status", "--json").json["data"]["blocked_runs"]
        == status.json["data"]["blocked_runs"]
    )
    assert world.run("abandon").code == 0
    assert world.run("status", "--json").json["data"]["blocked_runs"] == []


@pytest.mark.parametrize("store_url", ["postgresql"], indirect=True)
def test_a_state_database_lost_mid_apply_leaves_the_run_for_recover(
    world: World, store_url: str, tcp_proxy: TcpProxy
) -> None:
    """The connection drops while a batch is written: a transport error, no bug.

    Nothing more can be journaled, so nothing is restored either: the run is
    left as a crash leaves it, and recover finishes it once the database answers.
    """
    profile = setup(world)
    password = f"pw{secrets.token_hex(6)}"  # trust auth: any password is accepted
    through = tcp_proxy.route(store_url).replace("postgres@", f"postgres:{password}@", 1)
    env = world.env({"TRUEUP_BATCH_SIZE": BATCH, "TRUEUP_CRASH_AT": "mutated:1:SIGSTOP"})
    apply = subprocess.Popen(
        [
            TRUEUP,
            "apply",
            profile,
            "--root",
            str(world.root),
            "--yes",
            "--confirm",
            "Crashy",
            "--state",
            through,
        ],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    _, status = os.waitpid(apply.pid, os.WUNTRACED)  # the first batch is written
    assert os.WIFSTOPPED(status), "expected to stop at the first batch"
    tcp_proxy.cut()
    os.kill(apply.pid, signal.SIGCONT)
    _, err = apply.communicate(timeout=60)
    assert apply.returncode == 6, err
    assert "internal error" not in err and password not in err
    assert "stopped answering" in err and f"127.0.0.1:{tcp_proxy.port}" in err
    [blocked] = world.run("status", "--json", "--state", store_url).json["data"]["blocked_runs"]
    assert blocked["status"] == "running", "left for recover, not marked as anything"
    assert f"trueup recover {blocked['id']}" in err
    assert_each_before_or_declared(world)

    recovered = world.run("recover", blocked["id"], "--state", store_url)
    assert recovered.code == 0, recovered.out + recovered.err
    for target, want in declared().items():
        assert read(world, target) == want, target
    assert temp_files(world.root) == []


def test_recover_where_the_run_did_not_run_changes_nothing_and_says_where(world: World) -> None:
    """A shared state store shows the run everywhere; its material is where it ran."""
    state = f"sqlite:///{world.data / 'state.db'}"
    two = ONE_REPLACE + ONE_REPLACE.split("\n\n", 1)[1].replace('"a', '"b')
    profile = str(world.write("two.toml", two))
    crash = {"TRUEUP_BATCH_SIZE": "1", "TRUEUP_CRASH_AT": "mutated:2"}
    killed = world.run("apply", profile, "--root", str(world.root), "--yes", env=crash)
    assert killed.code == -9, killed.err
    [before] = world.run("status", "--json").json["data"]["blocked_runs"]
    other = world.base / "other-data"
    other.mkdir()
    elsewhere = {"TRUEUP_DATA": str(other)}

    refused = world.run("recover", before["id"], "--state", state, env=elsewhere)
    assert refused.code == 2, refused.out + refused.err
    assert "internal error" not in refused.err
    assert f"not in this data folder ({other / 'rollback' / before['id']})" in refused.err
    assert "nothing was changed" in refused.err and "with that TRUEUP_DATA" in refused.err
    assert world.run("status", "--json").json["data"]["blocked_runs"] == [before], "not taken over"

    with sqlite3.connect(world.data / "state.db") as db:  # as if it ran on another host
        db.execute("UPDATE runs SET host = 'build-7' WHERE id = ?", (before["id"],))
    refused = world.run("recover", before["id"], "--state", state, env=elsewhere)
    assert refused.code == 2, refused.out + refused.err
    assert "the run's record names host build-7" in refused.err
    assert f"`trueup recover {before['id']}` on build-7" in refused.err
    with sqlite3.connect(world.data / "state.db") as db:
        db.execute("UPDATE runs SET host = ? WHERE id = ?", (before["host"], before["id"]))

    recovered = world.run("recover", before["id"])
    assert recovered.code == 0, recovered.out + recovered.err
    assert read(world, "a.txt") == read(world, "b.txt") == "declared\n"


@pytest.mark.parametrize("damaged", ["batch-0.json", "written-0.json", "blobs"])
def test_damaged_material_is_refused_in_words_and_abandon_still_works(
    world: World, damaged: str
) -> None:
    world.target("a.txt").write_text("original\n")
    profile = str(world.write("a.toml", ONE_REPLACE))
    killed(world, profile, confirm="One")
    [material] = (world.data / "rollback").iterdir()
    if damaged == "blobs":
        for blob in (material / "blobs").iterdir():
            blob.unlink()
    else:
        (material / damaged).write_text("{")
    recovered = world.run("recover")
    assert recovered.code == 7, recovered.out + recovered.err
    assert "cannot be read" in recovered.err and "internal error" not in recovered.err
    assert world.run("abandon").code == 0
    assert world.run("status", "--json").json["data"]["blocked_runs"] == []


def _paused_apply(world: World, profile: str, point: str) -> subprocess.Popen[str]:
    """An apply stopped (SIGSTOP) at ``point``: the window a person's edit can fall in."""
    process = subprocess.Popen(
        [TRUEUP, "apply", profile, "--root", str(world.root), "--yes"],
        env=world.env({"TRUEUP_CRASH_AT": f"{point}:1:SIGSTOP"}),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        with open(f"/proc/{process.pid}/stat") as stat_file:
            if stat_file.read().split(") ")[1].startswith("T"):
                return process
        time.sleep(0.02)
    raise AssertionError("the apply never reached the crash point")


@pytest.mark.parametrize(
    ("point", "dropped"),
    [("rollback-flushed", False), ("temp-written", False), ("rollback-flushed", True)],
    ids=["updated-before-staging", "updated-after-the-sync", "dropped"],
)
def test_an_edit_made_while_a_batch_is_written_is_never_written_over(
    world: World, point: str, dropped: bool
) -> None:
    declared = """
[profile]
id = "t"
name = "T"

[[resource]]
id = "f1"
kind = "file"
target = "f1"
policy = "replace-if-unmodified"
content = "{content}"
"""
    profile = world.write("p.toml", declared.format(content="v1\\n"))
    assert world.run("apply", str(profile), "--root", str(world.root), "--yes").code == 0
    world.write(
        "p.toml",
        '[profile]\nid = "t"\nname = "T"\n' if dropped else declared.format(content="v2\\n"),
    )
    process = _paused_apply(world, str(profile), point)
    world.target("f1").write_text("my edit\n")
    os.kill(process.pid, signal.SIGCONT)
    out, _ = process.communicate(timeout=60)
    assert process.returncode == 7, out
    assert "'f1' changed after the plan was computed; it was left as it is" in out
    assert world.target("f1").read_text() == "my edit\n"
    assert not list(world.root.rglob("*.trueup-tmp-*"))


def test_a_killed_runs_pid_taken_by_another_process_does_not_keep_it_alive(
    world: World,
) -> None:
    """After a reboot or a container restart, another process may have the dead
    run's pid: the run is still seen as dead, so recover can take it over."""
    profile = str(world.write("edits.toml", EDITS))
    killed(world, profile)
    other = subprocess.Popen(["sleep", "60"])  # a process that never held the run
    try:
        with sqlite3.connect(world.data / "state.db") as db:
            db.execute("UPDATE runs SET pid = ? WHERE status = 'running'", (other.pid,))
        status = world.run("status")
        assert status.code == 4 and "process gone" in status.out, status.out
        recovered = world.run("recover")
        assert recovered.code == 0, recovered.out + recovered.err
        assert read(world, "f.txt") == "declared\n"
    finally:
        other.kill()
        other.wait()


# A tree big enough that its new folders are made whole under temp names and its
# batch spans many folders: killed or interrupted, all of it lands or none does.
BIG = 600
BIG_PROFILE = """
[profile]
id = "big"
name = "Big"

[[resource]]
id = "tree"
kind = "directory"
target = "tree"
source = "tree"
"""


def big_tree(world: World) -> str:
    for i in range(BIG):
        world.write(f"tree/d{i % 7}/f{i}.txt", f"file {i}\n" * (i % 50 + 1))
    return str(world.write("big.toml", BIG_PROFILE))


def landed(world: World) -> list[int]:
    """Which files of the big tree hold what is declared; any other content fails."""
    found = []
    for i in range(BIG):
        now = read(world, f"tree/d{i % 7}/f{i}.txt")
        assert now in (None, f"file {i}\n" * (i % 50 + 1)), f"f{i} is half-way"
        if now is not None:
            found.append(i)
    return found


@pytest.mark.parametrize("boundary", ["outcomes-noted", "temp-written", "mutated"])
def test_a_big_batch_killed_mid_commit_recovers_whole(world: World, boundary: str) -> None:
    profile = big_tree(world)
    crash = {"TRUEUP_CRASH_AT": boundary}
    killed = world.run("apply", profile, "--root", str(world.root), "--yes", env=crash)
    assert killed.code == -9, killed.out + killed.err
    assert landed(world) in ([], list(range(BIG)))
    recovered = world.run("recover")
    assert recovered.code == 0, recovered.out + recovered.err
    assert landed(world) == list(range(BIG))
    assert temp_files(world.root) == []


def test_a_big_batch_interrupted_mid_commit_is_restored(world: World) -> None:
    profile = big_tree(world)
    crash = {"TRUEUP_CRASH_AT": "outcomes-noted:1:SIGINT"}
    stopped = world.run("apply", profile, "--root", str(world.root), "--yes", env=crash)
    assert stopped.code == 7, stopped.out + stopped.err
    assert landed(world) == []
    assert temp_files(world.root) == []


def file_resources(world: World) -> str:
    """The big tree as one file resource per file: three batches of 200."""
    big_tree(world)
    text = BIG_PROFILE.split("[[resource]]")[0]
    for i in range(BIG):
        text += f'[[resource]]\nid = "f{i:03d}"\nkind = "file"\n'
        text += f'target = "tree/d{i % 7}/f{i}.txt"\nsource = "tree/d{i % 7}/f{i}.txt"\n\n'
    return str(world.write("files.toml", text))


@pytest.mark.parametrize("signal_name", ["SIGKILL", "SIGINT"])
def test_a_batch_recorded_before_the_next_one_commits_stops_cleanly(
    world: World, signal_name: str
) -> None:
    """The second batch is journaled as the third one commits: killed there, recover
    finishes; interrupted there, the first two batches stay and the third is
    restored, with no temp file left behind."""
    profile = file_resources(world)
    env = {"TRUEUP_BATCH_SIZE": "200"}
    crash = {**env, "TRUEUP_CRASH_AT": f"journal-succeeded:2:{signal_name}"}
    stopped = world.run("apply", profile, "--root", str(world.root), "--yes", env=crash)
    assert stopped.code == (-9 if signal_name == "SIGKILL" else 7), stopped.out + stopped.err
    if signal_name == "SIGINT":
        assert temp_files(world.root) == []
    assert landed(world) == list(range(400))
    recovered = world.run("recover", env=env)
    assert recovered.code == 0, recovered.out + recovered.err
    assert landed(world) == list(range(BIG))
    assert temp_files(world.root) == []
