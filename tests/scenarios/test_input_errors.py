"""Mistakes in what a user names (paths, URLs, saved plans) are usage errors.

Each is refused with exit 2 and a message naming what is wrong and where,
never as an "internal error" (exit 1), and nothing is changed.
"""

from __future__ import annotations

import json
import os

import pytest
from world import ONE_FILE, Result, World


def refused(result: Result, *named: str) -> None:
    assert result.code == 2, (result.code, result.err)
    assert "internal error" not in result.err and "Traceback" not in result.err
    for text in named:
        assert text in result.err, result.err


def test_a_profile_path_through_a_file_is_a_usage_error(world: World) -> None:
    (world.base / "afile").write_text("")
    path = str(world.base / "afile" / "p.toml")
    refused(world.run("plan", path, "--root", str(world.root)), path, "Not a directory")


@pytest.mark.parametrize("command", [["plan"], ["org", "plan"]], ids=["profile", "org"])
def test_a_declaration_that_is_a_pipe_or_a_device_is_refused_unread(
    world: World, command: list[str]
) -> None:
    """A pipe would be read until somebody writes to it; /dev/zero, until memory ran out."""
    pipe = world.base / "pipe.toml"
    os.mkfifo(pipe)
    for path in (str(pipe), "/dev/zero"):
        refused(world.run(*command, path, timeout=30), path, "is a pipe, socket or device")


def test_a_profile_name_too_long_is_a_usage_error(world: World) -> None:
    path = str(world.profiles / ("a" * 300 + ".toml"))
    refused(world.run("plan", path, "--root", str(world.root)), "too long")


def test_an_org_file_path_through_a_file_is_a_usage_error(world: World) -> None:
    (world.base / "afile").write_text("")
    path = str(world.base / "afile" / "org.toml")
    refused(world.run("org", "plan", path), path, "Not a directory")


def test_a_target_too_long_for_the_file_system_names_the_resource_and_field(
    world: World,
) -> None:
    target = "/".join(["d" * 250] * 20) + "/f"
    profile = {
        "profile": {"id": "p", "name": "P"},
        "resource": [{"id": "a", "kind": "file", "target": target, "content": "x"}],
    }
    path = world.write("p.json", json.dumps(profile))
    result = world.run("plan", str(path), "--root", str(world.root))
    refused(result, f"{path}: resource 'a': field 'target'", "too long for the file system")
    assert len(result.err) < 600  # the path is named by its ends, not printed whole


def test_a_malformed_postgresql_url_is_a_usage_error_without_its_password(
    world: World,
) -> None:
    result = world.run("status", "--state", "postgresql://u:hunter2@[bad/db")
    refused(result, "not a valid PostgreSQL URL")
    assert "hunter2" not in result.err


def test_a_saved_plan_without_its_digest_is_not_a_saved_plan(world: World) -> None:
    profile = str(world.write("p.toml", ONE_FILE))
    saved = world.base / "plan.json"
    assert world.run("plan", profile, "--root", str(world.root), "-o", str(saved)).code == 0
    document = json.loads(saved.read_text())
    del document["digest"]
    saved.write_text(json.dumps(document))
    refused(world.run("apply", str(saved), "--yes"), "not a trueup saved plan", "'digest'")
    assert not world.target("x").exists()


def test_a_data_folder_that_is_a_file_is_a_usage_error(world: World) -> None:
    datafile = world.base / "datafile"
    datafile.write_text("")
    result = world.run("status", env={"TRUEUP_DATA": str(datafile)})
    refused(result, f"{datafile} is not a folder", "TRUEUP_DATA")
    migrate = world.run("state", "migrate", env={"TRUEUP_DATA": str(datafile)})
    refused(migrate, f"{datafile} is not a folder")


def test_state_migrate_creates_a_fresh_data_folder_like_every_command(world: World) -> None:
    fresh = world.base / "fresh" / "data"
    result = world.run("state", "migrate", env={"TRUEUP_DATA": str(fresh)})
    assert result.code == 0, result.err
    assert (fresh / "state.db").is_file()


def test_a_source_name_too_long_names_the_profile(world: World) -> None:
    path = world.write("p.toml", ONE_FILE.replace('content = "c"', f'source = "{"s" * 300}"'))
    refused(world.run("plan", str(path), "--root", str(world.root)), f"{path}: ", "too long")


def test_an_empty_root_is_refused_not_taken_as_the_current_folder(world: World) -> None:
    profile = str(world.write("p.toml", ONE_FILE))
    result = world.run("apply", profile, "--root", "", "--yes")
    refused(result, "--root", "not be empty")
    assert not (world.base / "x").exists()


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["--port-base", "70000"], "--port-base"),
        (["--host", "256.1.1.1"], "cannot listen on 256.1.1.1"),
    ],
)
def test_fakes_serve_refuses_a_port_or_host_it_cannot_use(
    world: World, args: list[str], words: str
) -> None:
    result = world.run("fakes", "serve", *args, timeout=60)
    refused(result, words)


def test_the_migration_ddl_comes_in_the_envelope_when_json_is_asked(world: World) -> None:
    plain = world.run("state", "migrate", "--sql", "sqlite")
    assert plain.code == 0 and "CREATE TABLE" in plain.out
    enveloped = world.run("state", "migrate", "--sql", "sqlite", "--json")
    assert enveloped.code == 0 and enveloped.json["exitCode"] == 0, enveloped.out
    assert enveloped.json["data"]["sql"] == plain.out


def test_control_characters_in_a_name_are_shown_never_sent_to_the_terminal(
    world: World,
) -> None:
    """An ESC in a file name must not clear a person's screen or retitle their window."""
    path = str(world.base / "nope\x1b[2J\x1b]0;x\x07.toml")
    result = world.run("plan", path, "--root", str(world.root))
    refused(result, "nope\\x1b[2J\\x1b]0;x\\x07.toml")
    assert "\x1b" not in result.err and "\x07" not in result.err


@pytest.mark.parametrize(
    ("url", "why"),
    [
        ("sqlite:////tmp/x%00.db", "NUL"),
        ("sqlite:////tmp/s.db?mode=ro", "a query"),
        ("sqlite:///:memory:", "names no file"),  # a store gone with the process
    ],
)
def test_a_sqlite_url_no_file_can_be_is_refused(world: World, url: str, why: str) -> None:
    refused(world.run("status", "--state", url), "cannot be used", why)
    assert not list(world.base.glob("s.db*"))


@pytest.mark.parametrize("command", [["audit", "list"], ["jobs", "list"]])
def test_a_limit_too_large_for_the_database_is_a_usage_error(
    world: World, command: list[str]
) -> None:
    refused(world.run(*command, "--limit", "100000000000000000000"), "not in the range")


@pytest.mark.parametrize(
    ("args", "command"), [(["plan"], "plan"), (["org", "plan"], "org plan"), ([], "trueup")]
)
def test_help_asked_with_json_comes_as_an_envelope(
    world: World, args: list[str], command: str
) -> None:
    shown = world.run(*args, "--help", "--json")
    assert shown.code == 0, shown.out + shown.err
    assert (shown.json["command"], shown.json["status"]) == (command, "help")
    assert shown.json["schema"] == "trueup.cli/1"
    assert f"Usage: {' '.join(['trueup', *args])} " in shown.json["data"]["help"]


def test_a_mistyped_option_beside_help_with_json_is_an_error_envelope(world: World) -> None:
    mistyped = world.run("plan", "--json", "--help", "--nosuch")
    assert mistyped.code == 2
    assert (mistyped.json["command"], mistyped.json["status"]) == ("plan", "error")
    assert "--nosuch" in mistyped.json["message"]


def test_a_file_name_that_is_not_utf8_is_refused_by_name_before_anything_is_written(
    world: World,
) -> None:
    source = world.profiles / "tree"
    source.mkdir()
    (source / "fine.txt").write_text("fine\n")
    with open(os.path.join(bytes(source), b"caf\xe9.txt"), "w") as handle:  # latin-1
        handle.write("x\n")
    profile = world.write(
        "tree.toml",
        '[profile]\nid = "t"\nname = "T"\n\n[[resource]]\nid = "tree"\nkind = "directory"\n'
        'target = "tree"\nsource = "tree"\n',
    )
    result = world.run("apply", str(profile), "--root", str(world.root), "--yes")
    refused(result, "caf\\xe9.txt: a file name that is not UTF-8")
    assert not (world.root / "tree").exists()
    assert world.run("status").code == 0
