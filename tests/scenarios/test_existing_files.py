"""A person's file at a target is never replaced silently by the first apply.

trueup has no record of it, so nothing could give it back: the plan marks the
step as destroying, names the command that types the target's name, and
apply refuses ``--yes`` alone (exit 2) and ``--no-input`` (exit 3: a person
decides). merge and append-local keep the person's content and need none of it.
"""

from __future__ import annotations

from world import World

PROFILE = """
[profile]
id = "home"
name = "My Home"

[[resource]]
id = "notes"
kind = "file"
target = "notes.md"
content = "declared\\n"
"""

MERGED = """
[profile]
id = "home"
name = "My Home"

[[resource]]
id = "tool"
kind = "config"
target = "tool.toml"
keys = { model = "gpt-5" }

[[resource]]
id = "agents"
kind = "file"
target = "AGENTS.md"
policy = "append-local"
content = "shared rules\\n"
"""


def test_the_first_apply_over_a_persons_file_needs_the_name_typed(world: World) -> None:
    profile = str(world.write("home.toml", PROFILE))
    mine = world.target("notes.md")
    mine.write_text("my own notes\n")
    root = str(world.root)
    confirm = f"trueup apply {profile} --root {root} --confirm 'My Home'"

    shown = world.run("plan", profile, "--root", root)
    assert shown.code == 0, shown.err
    assert "trueup never wrote" in shown.out and "(destroys)" in shown.out
    assert confirm in shown.out
    as_json = world.run("plan", profile, "--root", root, "--json").json["data"]
    assert as_json["confirm"] == confirm and as_json["plan"]["actions"][0]["destroys"]

    refused = world.run("apply", profile, "--root", root, "--yes")
    assert refused.code == 2, refused.err
    assert "--yes alone never confirms" in refused.err and "--confirm 'My Home'" in refused.err
    unattended = world.run("apply", profile, "--root", root, "--no-input")
    assert unattended.code == 3, unattended.err
    assert "nobody to type the name" in unattended.err
    assert f"runs: trueup apply {profile} --root {root} --no-input --confirm 'My Home'" in (
        unattended.err
    )
    assert mine.read_text() == "my own notes\n"

    done = world.run("apply", profile, "--root", root, "--no-input", "--confirm", "My Home")
    assert done.code == 0, done.err
    assert mine.read_text() == "declared\n"
    # From now on the file is trueup's: a new declaration updates it without a name typed.
    world.write("home.toml", PROFILE.replace("declared", "declared again"))
    again = world.run("apply", profile, "--root", root, "--no-input")
    assert again.code == 0, again.err
    assert mine.read_text() == "declared again\n"


def test_merge_and_append_local_keep_the_persons_content_without_confirmation(
    world: World,
) -> None:
    profile = str(world.write("home.toml", MERGED))
    config = world.target("tool.toml")
    config.write_text('# mine\nmodel = "o3"  # the one I like\ntheme = "dark"\n')
    agents = world.target("AGENTS.md")
    agents.write_text("# My notes\nkeep me\n")

    done = world.run("apply", profile, "--root", str(world.root), "--no-input")
    assert done.code == 0, done.err
    assert "(destroys)" not in done.out
    assert config.read_text() == '# mine\nmodel = "gpt-5"  # the one I like\ntheme = "dark"\n'
    assert agents.read_text().endswith("# My notes\nkeep me\n")
    assert "shared rules\n" in agents.read_text()
