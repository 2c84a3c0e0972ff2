"""One source, many machines: the acceptance story of issue 23, through the command.

A source publishes; two followers in different groups enroll and converge to
their share; one edit reaches both as one blob each; a local edit is drift,
reported to the source and kept; a revoked follower is refused. Then two
``source serve`` processes share one PostgreSQL store.
"""

from __future__ import annotations

from collections.abc import Callable

from fleet import Machine, invite, serving
from world import World

PROFILE = """
[profile]
id = "team"
name = "Team"
groups = ["laptops", "servers"]

[[resource]]
id = "rules"
kind = "file"
target = ".codex/AGENTS.md"
source = "files/AGENTS.md"

[[resource]]
id = "laptop-notes"
kind = "file"
target = "notes.md"
source = "files/notes.md"
policy = "replace-if-unmodified"
groups = ["laptops"]

[[resource]]
id = "server-config"
kind = "config"
target = ".server/config.json"
keys = { workers = 4 }
groups = ["servers"]

[[resource]]
id = "deploy-skill"
kind = "skill"
target = ".claude/skills/deploy"
source = "skills/deploy"
groups = ["servers"]
depends_on = ["base-config"]

[[resource]]
id = "base-config"
kind = "config"
target = ".base.toml"
keys = { owner = "ops" }
groups = ["servers"]
"""


def make_source(world: World) -> str:
    world.write("files/AGENTS.md", "# Rules\n\nBe kind.\n")
    world.write("files/notes.md", "laptop notes\n")
    world.write("skills/deploy/SKILL.md", "deploy carefully\n")
    profile = str(world.write("team.toml", PROFILE))
    assert world.run("source", "init").code == 0
    published = world.run("source", "publish", profile, "--note", "first", "--json")
    assert published.code == 0, published.err
    return profile


def test_two_followers_converge_to_their_share_and_report_back(world: World) -> None:
    profile = make_source(world)
    laptop, server = Machine(world, "laptop"), Machine(world, "server")
    with serving(world):
        for machine, group in ((laptop, "laptops"), (server, "servers")):
            enrolled = machine.follow(invite(world, "--group", group))
            assert enrolled.code == 0, enrolled.err
            assert "credential kept in a 0600 file" in enrolled.out
            applied = machine.sync("--apply", "--no-input", "--json")
            assert applied.code == 0, applied.out + applied.err
            assert applied.json["status"] == "converged"

        # Each converged to its share, and nothing else.
        assert (laptop.root / ".codex/AGENTS.md").read_text() == "# Rules\n\nBe kind.\n"
        assert (laptop.root / "notes.md").read_text() == "laptop notes\n"
        assert not (laptop.root / ".server").exists()
        assert (server.root / ".claude/skills/deploy/SKILL.md").exists()
        assert (server.root / ".base.toml").exists()  # a dependency of its group's skill
        assert not (server.root / "notes.md").exists()

        # An unchanged source: one 304, no plan.
        again = laptop.sync("--apply", "--no-input", "--json")
        assert again.json["status"] == "unchanged" and again.json["data"]["received"] == 0

        # One edit reaches both, as one blob each.
        world.write("files/AGENTS.md", "# Rules\n\nBe kind. Be brief.\n")
        second = world.run("source", "publish", profile, "--json")
        assert second.json["data"]["seq"] == 2 and second.json["data"]["new_blobs"] == 1
        for machine in (laptop, server):
            synced = machine.sync("--apply", "--no-input", "--json")
            assert synced.code == 0, synced.out + synced.err
            assert synced.json["data"]["seq"] == 2
            assert synced.json["data"]["blobs_downloaded"] == 1
            assert (machine.root / ".codex/AGENTS.md").read_text().endswith("Be brief.\n")

        # A local edit is drift: reported to the source, and kept.
        (laptop.root / "notes.md").write_text("my own notes\n")
        drifted = laptop.sync("--apply", "--no-input", "--recheck", "--json")
        assert drifted.code == 4, drifted.out + drifted.err
        assert (laptop.root / "notes.md").read_text() == "my own notes\n"
        fleet = {
            r["follower"]["name"]: r for r in world.run("source", "status", "--json").json["data"]
        }
        assert fleet["laptop"]["outcome"] == "drift" and fleet["laptop"]["seq"] == 2
        assert [d["rid"] for d in fleet["laptop"]["drift"]] == ["laptop-notes"]
        assert fleet["server"]["outcome"] == "converged"
        shown = world.run("source", "status", "laptop").out
        assert "drift" in shown and "laptop-notes" in shown

        # Revoked: the next request is refused, exit 5, nothing touched.
        assert world.run("source", "revoke", "server").code == 0
        refused = server.sync("--apply", "--no-input", "--recheck")
        assert refused.code == 5, refused.out + refused.err
        assert "revoked" in refused.err
        listed = world.run("source", "followers", "--json").json["data"]
        assert [f["name"] for f in listed if f["revoked_at"]] == ["server"]
    audited = world.run("audit", "list", "--json")
    assert audited.code == 0, audited.err
    events = {e["event"] for e in audited.json["data"]}
    assert {"source.published", "source.invited", "source.revoked"} <= events


def test_an_unchanged_source_is_answered_without_click_or_the_engine(world: World) -> None:
    make_source(world)
    laptop = Machine(world, "laptop")
    with serving(world):
        assert laptop.follow(invite(world, "--group", "laptops")).code == 0
        assert laptop.sync("--apply", "--no-input").code == 0
        timer = ("sync", "--root", str(laptop.root), "--apply", "--no-input")
        code, modules = world.modules(*timer, env=laptop.env)
        assert code == 0
        assert not {"click", "rich", "trueup.engine", "trueup.source.wire"} & modules
        answered = laptop.sync("--json")
        assert answered.json["status"] == "unchanged", answered.out + answered.err
        # --recheck plans anyway: the full command.
        code, modules = world.modules(*timer, "--recheck", env=laptop.env)
        assert code == 0 and {"click", "trueup.engine"} <= modules
        # A changed source: the quick look finds news, the full command fetches it.
        world.write("files/AGENTS.md", "# Rules\n\nBe kind. Be brief.\n")
        assert world.run("source", "publish", str(world.profiles / "team.toml")).code == 0
        synced = laptop.sync("--apply", "--no-input", "--json")
        assert synced.json["data"]["seq"] == 2, synced.out + synced.err
        assert (laptop.root / ".codex/AGENTS.md").read_text().endswith("Be brief.\n")


def test_two_serve_processes_share_one_postgresql_store(world: World, postgres_schema: str) -> None:
    state = {"TRUEUP_STATE": postgres_schema}
    world.write("files/AGENTS.md", "# Rules\n")
    world.write("files/notes.md", "notes\n")
    world.write("skills/deploy/SKILL.md", "deploy\n")
    profile = str(world.write("team.toml", PROFILE))
    assert world.run("source", "init", env=state).code == 0
    assert world.run("source", "publish", profile, env=state).code == 0
    one, two = Machine(world, "one"), Machine(world, "two")
    with serving(world, env=state) as (_, first), serving(world, env=state) as (_, second):
        assert (
            one.follow(invite(world, "--group", "laptops", "--endpoint", first, env=state)).code
            == 0
        )
        assert (
            two.follow(invite(world, "--group", "servers", "--endpoint", second, env=state)).code
            == 0
        )
        for machine in (one, two):
            synced = machine.sync("--apply", "--no-input")
            assert synced.code == 0, synced.out + synced.err
        # Enrolled through one process, known to the other: they share the store.
        fleet: Callable[[], dict[str, str]] = lambda: {  # noqa: E731
            r["follower"]["name"]: r["outcome"]
            for r in world.run("source", "status", "--json", env=state).json["data"]
        }
        assert fleet() == {"one": "converged", "two": "converged"}
        assert world.run("source", "revoke", "one", env=state).code == 0
        assert one.sync("--recheck").code == 5
