"""What apply refuses, and what a refused or failed apply leaves behind."""

from __future__ import annotations

import json
import os
from pathlib import Path

from world import World

from trueup.canonical import digest

ONE_FILE = """
[profile]
id = "p"
name = "P"

[[resource]]
id = "rc"
kind = "file"
target = ".toolrc"
content = "declared\\n"
policy = "replace-if-unmodified"
"""


def test_stale_saved_plan_is_refused_and_says_what_moved(world: World) -> None:
    profile = str(world.write("p.toml", ONE_FILE))
    rc = world.target(".toolrc")
    rc.write_text("v1\n")
    assert (
        world.run("apply", profile, "--root", str(world.root), "--yes", "--overwrite", "rc").code
        == 0
    )
    world.write("p.toml", ONE_FILE.replace("declared", "declared v2"))
    saved = world.base / "plan.json"
    assert world.run("plan", profile, "--root", str(world.root), "-o", str(saved)).code == 0

    rc.write_text("declared\nedited meanwhile\n")
    refused = world.run("apply", str(saved), "--yes")
    assert refused.code == 4
    assert "stale" in refused.err and "rc: live state changed" in refused.err
    assert f"next: compute the plan again and review it: trueup plan {profile} --root " in (
        refused.err
    ), "a hint is a whole command"
    assert rc.read_text() == "declared\nedited meanwhile\n"


def test_plan_from_an_empty_baseline_is_refused_once_something_exists(world: World) -> None:
    profile = str(world.write("p.toml", ONE_FILE))
    saved = world.base / "plan.json"
    assert world.run("plan", profile, "--root", str(world.root), "-o", str(saved)).code == 0
    world.target(".toolrc").write_text("someone else's file\n")
    refused = world.run("apply", str(saved), "--yes")
    assert refused.code == 4
    assert "rc: live state changed" in refused.err
    assert world.target(".toolrc").read_text() == "someone else's file\n"


def test_a_fresh_saved_plan_applies_exactly(world: World) -> None:
    profile = str(world.write("p.toml", ONE_FILE))
    saved = world.base / "plan.json"
    world.run("plan", profile, "--root", str(world.root), "-o", str(saved))
    assert world.run("apply", str(saved), "--yes").code == 0
    assert world.target(".toolrc").read_text() == "declared\n"
    again = world.run("apply", str(saved), "--yes")
    assert again.code == 4, "a plan already applied is stale"


def test_a_tampered_saved_plan_is_refused(world: World) -> None:
    profile = str(world.write("p.toml", ONE_FILE))
    saved = world.base / "plan.json"
    world.run("plan", profile, "--root", str(world.root), "-o", str(saved))
    document = json.loads(saved.read_text())
    document["plan"]["actions"][0]["payload"]["extra"] = True
    saved.write_text(json.dumps(document))
    refused = world.run("apply", str(saved), "--yes")
    assert refused.code == 2, "an edited or damaged plan file is bad input"
    assert "does not match its digest" in refused.err
    assert "trueup plan" in refused.err
    assert not world.target(".toolrc").exists()
    audited = world.run("audit", "list", "--json").json["data"]
    refusals = [e for e in audited if e["event"] == "plan.applied"]
    assert [e["outcome"] for e in refusals] == ["refused"]
    assert "does not match its digest" in refusals[0]["reason"]


def test_a_saved_plan_rewritten_with_a_new_digest_but_wrong_types_is_a_usage_error(
    world: World,
) -> None:
    profile = str(world.write("p.toml", ONE_FILE))
    saved = world.base / "plan.json"
    world.run("plan", profile, "--root", str(world.root), "-o", str(saved))
    document = json.loads(saved.read_text())
    document["plan"]["source"] = 5
    document["digest"] = digest(document["plan"])
    saved.write_text(json.dumps(document))
    refused = world.run("apply", str(saved), "--yes")
    assert refused.code == 2, refused.err
    assert "not a trueup saved plan" in refused.err and "internal error" not in refused.err


def test_overwrite_with_a_saved_plan_is_refused_not_ignored(world: World) -> None:
    profile = str(world.write("p.toml", ONE_FILE))
    saved = world.base / "plan.json"
    world.run("plan", profile, "--root", str(world.root), "-o", str(saved))
    refused = world.run("apply", str(saved), "--yes", "--overwrite", "rc")
    assert refused.code == 2 and "applied exactly as it was planned" in refused.err
    again = f"trueup plan {profile} --root {world.root} --overwrite rc -o {saved}"
    assert again in refused.err.replace("\n", " "), refused.err


def test_next_steps_are_commands_that_can_be_pasted_whatever_the_paths(world: World) -> None:
    """Paths with spaces are quoted in every command trueup suggests."""
    profile = str(world.write("my profile.toml", ONE_FILE))
    root = world.base / "my root"
    root.mkdir()
    saved = world.base / "the plan.json"
    planned = world.run("plan", profile, "--root", str(root), "-o", str(saved))
    assert f"apply it with: trueup apply '{saved}'" in planned.out, planned.out
    live = world.run("status", profile, "--root", str(root))
    assert f"next: trueup apply '{profile}' --root '{root}'" in live.out, live.out


def test_source_edited_after_plan_is_refused(world: World) -> None:
    world.write("files/rc", "one\n")
    profile = str(
        world.write(
            "p.toml",
            ONE_FILE.replace('content = "declared\\n"', 'source = "files/rc"'),
        )
    )
    saved = world.base / "plan.json"
    world.run("plan", profile, "--root", str(world.root), "-o", str(saved))
    world.write("files/rc", "two\n")
    refused = world.run("apply", str(saved), "--yes")
    assert refused.code == 4
    assert "the declaration changed" in refused.err


def test_failed_verification_restores_previous_bytes_and_mode(world: World) -> None:
    for name in ("a", "b"):
        target = world.target(f"bin/{name}")
        target.parent.mkdir(exist_ok=True)
        target.write_text(f"old {name}\n")
        os.chmod(target, 0o751)
    profile = """
[profile]
id = "v"
name = "V"

[[resource]]
id = "a"
kind = "file"
target = "bin/a"
content = "new a\\n"

[[resource]]
id = "b"
kind = "file"
target = "bin/b"
content = "new b\\n"
depends_on = ["a"]
verify = { command = ["sh", "-c", "grep -q never bin/b"] }

[[resource]]
id = "c"
kind = "file"
target = "new/dir/c"
content = "c\\n"
"""
    path = str(world.write("v.toml", profile))
    # bin/a and bin/b are a person's files trueup never wrote: replacing them is confirmed.
    confirmed = ("--yes", "--confirm", "V", "--json")
    result = world.run("apply", path, "--root", str(world.root), *confirmed)
    assert result.code == 7
    assert result.json["status"] == "failed"
    for name in ("a", "b"):
        target = world.target(f"bin/{name}")
        assert target.read_text() == f"old {name}\n"
        assert target.stat().st_mode & 0o777 == 0o751
    assert not world.target("new").exists(), "folders the run created are removed too"
    status = world.run("status", "--json").json
    assert status["data"]["blocked_runs"] == []


def test_a_failed_run_restores_a_mode_it_changed_on_a_file_it_left_as_it_was(
    world: World,
) -> None:
    tool = world.target("bin/tool")
    tool.parent.mkdir()
    tool.write_text("echo hi\n")
    os.chmod(tool, 0o644)
    profile = """
[profile]
id = "x"
name = "X"

[[resource]]
id = "tool"
kind = "file"
target = "bin/tool"
content = "echo hi\\n"
executable = true

[[resource]]
id = "fails"
kind = "file"
target = "b.txt"
content = "b\\n"
depends_on = ["tool"]
verify = { command = ["false"] }
"""
    path = str(world.write("x.toml", profile))
    # bin/tool is a person's file trueup never wrote: the run confirms taking it over.
    confirmed = ("--root", str(world.root), "--yes", "--confirm", "X")
    assert world.run("apply", path, *confirmed).code == 7
    assert tool.read_text() == "echo hi\n"
    assert tool.stat().st_mode & 0o777 == 0o644, "the executable bit the run set is taken back"


def test_a_failed_run_brings_back_a_pruned_folder_with_its_own_mode(world: World) -> None:
    world.write("src/key.txt", "secret\n")
    keep = '[profile]\nid = "m"\nname = "M"\n'
    tree = '[[resource]]\nid = "priv"\nkind = "directory"\ntarget = "priv"\nsource = "src"\n'
    path = str(world.write("m.toml", keep + tree))
    assert world.run("apply", path, "--root", str(world.root), "--yes").code == 0
    os.chmod(world.target("priv"), 0o700)
    failing = '[[resource]]\nid = "z"\nkind = "file"\ntarget = "z"\ncontent = "z"\n'
    world.write("m.toml", keep + failing + 'verify = { command = ["false"] }\n')
    assert world.run("apply", path, "--root", str(world.root), "--yes").code == 7
    assert world.target("priv/key.txt").read_text() == "secret\n"
    assert world.target("priv").stat().st_mode & 0o777 == 0o700, "not the default 0755"


def test_path_traversal_is_refused_before_anything_is_written(world: World) -> None:
    profile = str(
        world.write("p.toml", ONE_FILE.replace('target = ".toolrc"', 'target = "../escape"'))
    )
    result = world.run("apply", profile, "--root", str(world.root), "--yes")
    assert result.code == 2
    assert "contains '..'" in result.err and "'rc'" in result.err
    assert not (world.base / "escape").exists()
    assert "Traceback" not in result.err


def test_symlinked_parent_pointing_outside_the_root_is_refused(world: World) -> None:
    outside = world.base / "outside"
    outside.mkdir()
    (world.root / "cfg").symlink_to(outside)
    text = ONE_FILE.replace('target = ".toolrc"', 'target = "cfg/app.conf"')
    text += '\n[[resource]]\nid = "first"\nkind = "file"\ntarget = "aaa"\ncontent = "x"\n'
    profile = str(world.write("p.toml", text))
    result = world.run("apply", profile, "--root", str(world.root), "--yes")
    assert result.code == 2
    assert "outside the root" in result.err
    assert list(outside.iterdir()) == []
    assert not world.target("aaa").exists(), "nothing at all is written"


def test_symlinked_parent_inside_the_root_is_fine(world: World) -> None:
    (world.root / "real").mkdir()
    (world.root / "cfg").symlink_to(world.root / "real")
    profile = str(
        world.write("p.toml", ONE_FILE.replace('target = ".toolrc"', 'target = "cfg/app.conf"'))
    )
    assert world.run("apply", profile, "--root", str(world.root), "--yes").code == 0
    assert (world.root / "real" / "app.conf").read_text() == "declared\n"


def test_file_over_the_size_limit_is_a_clear_error(world: World) -> None:
    world.write("files/big", "x" * 2048)
    profile = str(
        world.write("p.toml", ONE_FILE.replace('content = "declared\\n"', 'source = "files/big"'))
    )
    result = world.run("plan", profile, "--root", str(world.root), "--max-file-bytes", "1024")
    assert result.code == 2
    assert "over the file-size limit of 1024 bytes" in result.err


def test_a_live_file_over_the_size_limit_waits_for_a_person_and_the_rest_is_applied(
    world: World,
) -> None:
    # A source over the limit is a declaration error; a target over it is live
    # state: only its resource stops, and the file is left exactly as it is.
    text = (
        ONE_FILE + '\n[[resource]]\nid = "small"\nkind = "file"\ntarget = "small"\ncontent = "s"\n'
    )
    profile = str(world.write("p.toml", text))
    world.target(".toolrc").write_text("x" * 2048)
    limit = ("--max-file-bytes", "1024")
    planned = world.run("plan", profile, "--root", str(world.root), *limit, "--json")
    assert planned.code == 3, planned.err
    actions = {a["resource"]: a for a in planned.json["data"]["plan"]["actions"]}
    assert actions["rc"]["type"] == "human-action"
    assert "over the file-size limit of 1024 bytes" in actions["rc"]["summary"]
    applied = world.run("apply", profile, "--root", str(world.root), *limit, "--yes")
    assert applied.code == 3, applied.err
    assert "--max-file-bytes" in applied.out
    assert world.target("small").read_text() == "s"
    assert world.target(".toolrc").read_text() == "x" * 2048


def test_known_secrets_are_redacted_in_output(world: World) -> None:
    secret = "s3cr3t-value-123456"
    profile = str(world.write("p.toml", ONE_FILE.replace("declared", f"token={secret}")))
    result = world.run("plan", profile, "--root", str(world.root), env={"MY_API_TOKEN": secret})
    assert result.code == 0
    assert secret not in result.out
    assert "[REDACTED]" in result.out


def test_a_secret_is_redacted_however_json_spells_it(world: World) -> None:
    for secret in ("sëcret-value-42", 'quote"d-value', "back\\slash-value"):
        keys = {"tok": secret}
        document = {
            "profile": {"id": "p", "name": "P"},
            "resource": [{"id": "c", "kind": "config", "target": "c.json", "keys": keys}],
        }
        profile = str(world.write("p.json", json.dumps(document)))
        env = {"MY_API_TOKEN": secret}
        for extra in ((), ("--json",)):
            out = world.run("plan", profile, "--root", str(world.root), *extra, env=env).out
            assert "[REDACTED]" in out
            for spelling in (
                secret,
                json.dumps(secret)[1:-1],
                json.dumps(secret, ensure_ascii=False)[1:-1],
            ):
                assert spelling not in out


def test_refuses_to_apply_without_a_terminal_or_yes(world: World) -> None:
    profile = str(world.write("p.toml", ONE_FILE))
    result = world.run("apply", profile, "--root", str(world.root))
    assert result.code == 2
    assert "--yes" in result.err
    assert not world.target(".toolrc").exists()


def test_sigterm_restores_the_action_in_flight_and_blocks_until_recover(world: World) -> None:
    profile = str(world.write("p.toml", ONE_FILE))
    world.target(".toolrc").write_text("before\n")
    killed = world.run(
        "apply",
        profile,
        "--root",
        str(world.root),
        "--yes",
        "--overwrite",
        "rc",
        env={"TRUEUP_CRASH_AT": "mutated:1:SIGTERM"},
    )
    assert killed.code == 7
    assert "interrupted" in killed.out
    assert world.target(".toolrc").read_text() == "before\n"
    blocked = world.run("apply", profile, "--root", str(world.root), "--yes")
    assert blocked.code == 4 and "was interrupted" in blocked.err
    abandoned = world.run("abandon")
    assert abandoned.code == 0
    assert f"trueup plan {profile} --root {world.root}" in abandoned.out, "a command to paste"
    assert world.target(".toolrc").read_text() == "before\n"
    assert world.run("status", "--json").json["data"]["blocked_runs"] == []


def test_root_must_exist(world: World) -> None:
    profile = str(world.write("p.toml", ONE_FILE))
    result = world.run("plan", profile, "--root", str(Path(world.base) / "nope"))
    assert result.code == 2 and "does not exist" in result.err


def test_a_plan_saved_by_another_trueup_version_is_named_as_such(world: World) -> None:
    profile = str(world.write("p.toml", ONE_FILE))
    saved = world.base / "plan.json"
    world.run("plan", profile, "--root", str(world.root), "-o", str(saved))
    saved.write_text(saved.read_text().replace("trueup.saved-plan/1", "trueup.saved-plan/9"))
    refused = world.run("apply", str(saved), "--yes")
    assert refused.code == 2, refused.err
    assert "'trueup.saved-plan/9' plan" in refused.err and "top-level" not in refused.err


def test_a_json_profile_that_mentions_the_saved_plan_schema_is_still_a_profile(
    world: World,
) -> None:
    text = json.dumps(
        {
            "profile": {"id": "p", "name": "plans carry trueup.saved-plan/1"},
            "resource": [
                {"id": "n", "kind": "file", "target": "n.md", "content": '"trueup.saved-plan/1"'}
            ],
        }
    )
    profile = world.write("p.json", text)
    assert world.run("apply", str(profile), "--root", str(world.root), "--yes").code == 0
    refused = world.run("plan", str(profile), "--root", str(world.root), "-o", str(profile))
    assert refused.code == 2 and "not a trueup saved plan" in refused.err
    assert profile.read_text() == text


def test_two_targets_that_meet_through_a_symlinked_folder_are_refused(world: World) -> None:
    (world.root / "real").mkdir()
    (world.root / "skills").symlink_to(world.root / "real")
    world.write("src/a.txt", "s\n")
    text = (
        '[profile]\nid = "p"\nname = "P"\n'
        '[[resource]]\nid = "sk"\nkind = "skill"\ntarget = "skills/sk"\nsource = "src"\n'
        '[[resource]]\nid = "other"\nkind = "file"\ntarget = "real/sk/a.txt"\ncontent = "x"\n'
    )
    profile = str(world.write("p.toml", text))
    result = world.run("apply", profile, "--root", str(world.root), "--yes")
    assert result.code == 2, result.out + result.err
    assert "'sk' and 'other' have overlapping targets once the symlinked folders" in result.err
    assert list((world.root / "real").iterdir()) == []


def test_a_dropped_target_and_a_new_one_that_meet_through_a_link_are_refused(
    world: World,
) -> None:
    (world.root / "real").mkdir()
    (world.root / "alias").symlink_to(world.root / "real")
    one = '[profile]\nid = "p"\nname = "P"\n[[resource]]\nid = "{rid}"\nkind = "file"\ntarget = "{target}"\ncontent = "{text}\\n"\n'
    profile = str(world.write("p.toml", one.format(rid="b", target="alias/f.txt", text="2")))
    assert world.run("apply", profile, "--root", str(world.root), "--yes").code == 0
    world.write("p.toml", one.format(rid="c", target="real/f.txt", text="3"))
    result = world.run("apply", profile, "--root", str(world.root), "--yes")
    assert result.code == 2, result.out + result.err
    assert "'b' is no longer declared" in result.err
    assert (world.root / "real" / "f.txt").read_text() == "2\n"


def test_a_big_file_trueup_has_nothing_to_do_with_does_not_stop_its_folder(
    world: World,
) -> None:
    world.write("src/x.txt", "x\n")
    world.target("d/unrelated.bin").parent.mkdir(parents=True)
    world.target("d/unrelated.bin").write_bytes(b"\0" * 5000)
    text = '[profile]\nid = "p"\nname = "P"\n[[resource]]\nid = "d"\nkind = "directory"\ntarget = "d"\nsource = "src"\n'
    profile = str(world.write("p.toml", text))
    limit = ("--max-file-bytes", "1000")
    applied = world.run("apply", profile, "--root", str(world.root), "--yes", *limit)
    assert applied.code == 0, applied.out + applied.err
    assert world.target("d/x.txt").read_text() == "x\n"
    assert world.target("d/unrelated.bin").read_bytes() == b"\0" * 5000
    assert world.run("plan", profile, "--root", str(world.root), *limit).code == 0


def test_a_saved_plan_whose_profile_is_gone_says_so_and_is_audited(world: World) -> None:
    profile = world.write("p.toml", ONE_FILE)
    saved = world.base / "plan.json"
    world.run("plan", str(profile), "--root", str(world.root), "-o", str(saved))
    profile.unlink()
    refused = world.run("apply", str(saved), "--yes")
    assert refused.code == 2, refused.err
    assert "not there any more" in refused.err and "put it back" in refused.err
    audited = world.run("audit", "list", "--json").json["data"]
    assert [e["outcome"] for e in audited if e["event"] == "plan.applied"] == ["refused"]
    assert not world.target(".toolrc").exists()


def test_drift_says_the_exact_command_that_takes_the_declared_version(world: World) -> None:
    profile = str(world.write("my profile.toml", ONE_FILE))
    world.target(".toolrc").write_text("a person's\n")  # never written by trueup: drift
    planned = world.run("plan", profile, "--root", str(world.root))
    assert planned.code == 4, planned.out
    command = f"trueup apply '{profile}' --root {world.root} --overwrite rc"
    assert command in planned.out.replace("\n", ""), planned.out
    taken = world.run("apply", profile, "--root", str(world.root), "--overwrite", "rc", "--yes")
    assert taken.code == 0 and world.target(".toolrc").read_text() == "declared\n"


def test_an_apply_without_a_terminal_to_ask_on_says_the_command_to_run(world: World) -> None:
    profile = str(world.write("my profile.toml", ONE_FILE))
    refused = world.run("apply", profile, "--root", str(world.root))
    assert refused.code == 2 and "no terminal to ask on" in refused.err
    again = f"trueup apply '{profile}' --root {world.root} --yes"
    assert again in refused.err.replace("\n", ""), refused.err
    assert not world.target(".toolrc").exists()
