"""The gates of a shared store, through the installed command.

What depends on the back end (authorization, staleness, recovery) runs on
both; what only depends on the gates' logic runs on SQLite, to stay fast.

Authorization comes first (before anything is observed), then staleness,
then typed confirmation, then the lock; every refusal lands in the audit log.
"""

from __future__ import annotations

import pytest
from world import Result, World

from trueup import audit, authz
from trueup.state.store import Store

ME = authz.os_actor().key
PROFILE = """
[profile]
id = "ws"
name = "Team Box"

[[resource]]
id = "rc"
kind = "file"
target = ".toolrc"
content = "declared\\n"

[[resource]]
id = "skills"
kind = "directory"
target = "skills"
source = "skills"
policy = "replace"
"""


class Team:
    """One world on one store URL, with the installed command and a store to inspect."""

    def __init__(self, world: World, url: str) -> None:
        self.world = world
        self.url = url
        world.write("skills/a.md", "a\n")
        self.profile = str(world.write("ws.toml", PROFILE))

    def run(self, *args: str, actor: str | None = None, **env: str) -> Result:
        extra = {"TRUEUP_STATE": self.url, **env}
        prefix = ("--actor", actor) if actor else ()
        return self.world.run(*prefix, *args, env=extra)

    def plan(self, *args: str, actor: str | None = None) -> Result:
        return self.run("plan", self.profile, "--root", str(self.world.root), *args, actor=actor)

    def apply(self, *args: str, actor: str | None = None, **env: str) -> Result:
        root = str(self.world.root)
        return self.run("apply", self.profile, "--root", root, *args, actor=actor, **env)

    def audit(self, event: str | None = None) -> list[audit.Entry]:
        store = Store.open(self.url)
        try:
            return audit.entries(store, event=event, limit=500)
        finally:
            store.close()


@pytest.fixture
def team(world: World, store_url: str) -> Team:
    return Team(world, store_url)


def test_unauthorised_plan_and_apply_are_refused_first_and_audited(team: Team) -> None:
    assert team.run("grant", "add", ME, "admin", "*").code == 0
    # Named by a grant (an unnamed actor is refused outright), but not for this target.
    assert team.run("grant", "add", "service:ci", "plan", "profile:other@*").code == 0
    plan = team.plan(actor="ci")
    assert plan.code == 5 and "service:ci may not plan profile:ws@" in plan.err
    apply = team.apply("--yes", actor="ci")
    assert apply.code == 5 and "service:ci may not apply" in apply.err
    store = Store.open(team.url)
    try:
        observed = store.db.execute(
            "SELECT path FROM stat_cache WHERE path LIKE :root", {"root": f"{team.world.root}%"}
        )
    finally:
        store.close()
    assert observed == [], "refused before anything was observed"
    assert not (team.world.root / ".toolrc").exists()
    plans = [e for e in team.audit() if e.event.startswith("plan.")]
    refused = [(e.event, e.outcome, e.actor["id"]) for e in plans]
    assert refused == [("plan.applied", "refused", "ci"), ("plan.computed", "refused", "ci")]
    assert all("may not" in (e.reason or "") for e in plans)

    assert team.run("grant", "add", "service:ci", "plan", "profile:ws@*").code == 0
    assert team.plan(actor="ci").code == 0
    assert team.apply("--yes", actor="ci").code == 5, "plan does not imply apply"
    assert team.run("grant", "add", "service:ci", "apply", "profile:ws@*").code == 0
    assert team.apply("--yes", actor="ci").code == 0
    last = team.audit("plan.applied")[0]
    assert (last.outcome, last.actor["type"], last.actor["id"]) == ("success", "service", "ci")


@pytest.mark.parametrize("store_url", ["sqlite"], indirect=True)
def test_a_service_token_proves_who_acts(team: Team) -> None:
    assert team.run("grant", "add", ME, "admin", "*").code == 0
    created = team.run("token", "create", "service:deploy")
    assert created.code == 0
    token = created.out.strip()
    assert team.run("grant", "add", "service:deploy", "plan", "*").code == 0
    assert team.plan(actor="deploy").code == 5, "a service with a token must present it"
    assert (
        team.run("plan", team.profile, "--root", str(team.world.root), TRUEUP_TOKEN=token).code == 0
    )
    assert (
        team.run(
            "plan", team.profile, "--root", str(team.world.root), TRUEUP_TOKEN=token + "x"
        ).code
        == 5
    )
    assert team.audit("plan.computed")[0].actor["id"] == "deploy"


@pytest.mark.parametrize("store_url", ["sqlite"], indirect=True)
def test_a_destroying_step_needs_the_name_typed_exactly(team: Team) -> None:
    skills = team.world.root / "skills"
    skills.mkdir()
    (skills / "mine.md").write_text("written by hand, never by trueup\n")
    shown = team.plan("--json")
    risky = [a for a in shown.json["data"]["plan"]["actions"] if a["destroys"]]
    assert [a["resource"] for a in risky] == ["skills"]

    # Under --no-input nobody could type the name: a person's to do (3), not a mistake (2).
    for args, code in ((["--yes"], 2), (["--no-input"], 3), (["--yes", "--confirm", "Team"], 2)):
        refused = team.apply(*args)
        assert refused.code == code, refused.err
        assert "destroy or migrate data" in refused.err and "--yes alone never" in refused.err
        assert "--confirm 'Team Box'" in refused.err
    assert (skills / "mine.md").exists() and not (team.world.root / ".toolrc").exists()

    done = team.apply("--confirm", "  Team Box ")
    assert done.code == 0, done.err
    assert not (skills / "mine.md").exists() and (skills / "a.md").read_text() == "a\n"
    outcomes = [e.outcome for e in team.audit("plan.applied")]
    assert outcomes == ["success", "refused", "refused", "refused"]
    assert "confirmation required" in (team.audit("plan.applied")[-1].reason or "")


@pytest.mark.parametrize("baseline", ["present", "empty"])
def test_a_stale_saved_plan_is_refused(team: Team, baseline: str) -> None:
    rc = team.world.root / ".toolrc"
    if baseline == "present":
        rc.write_text("old\n")
    saved = team.world.base / "plan.json"
    assert team.plan("-o", str(saved)).code in (0, 4)
    rc.write_text("someone else's file\n")  # created after an empty-baseline plan, or edited
    refused = team.run("apply", str(saved), "--yes")
    assert refused.code == 4, refused.err
    assert "stale" in refused.err and "rc: live state" in refused.err
    assert rc.read_text() == "someone else's file\n"
    last = team.audit("plan.applied")[0]
    assert last.outcome == "refused" and "stale" in (last.reason or "")


@pytest.mark.parametrize("store_url", ["sqlite"], indirect=True)
def test_audit_cli_lists_newest_first_and_verify_catches_tampering(team: Team) -> None:
    assert team.plan().code == 0
    assert team.apply("--yes", "--confirm", "Team Box").code == 0
    listed = team.run("audit", "list", "--json", "--target", "profile:ws@*")
    assert listed.code == 0
    assert [e["event"] for e in listed.json["data"]] == ["plan.applied", "plan.computed"]
    ok = team.run("audit", "verify")
    assert ok.code == 0 and "audit log intact: 2 entries" in ok.out

    store = Store.open(team.url)
    try:
        db = store.db
        if db.dialect == "postgresql":
            db.execute("ALTER TABLE audit DISABLE TRIGGER USER")
        else:
            db.execute("DROP TRIGGER audit_append_only_update")
        db.execute("UPDATE audit SET outcome = 'refused' WHERE seq = 2")
    finally:
        store.close()
    broken = team.run("audit", "verify", "--json")
    assert broken.code == 7
    assert broken.json["data"]["detail"]["problems"] == [
        "row 2 was edited (its hash does not match)"
    ]


def test_recover_and_abandon_are_audited(team: Team) -> None:
    killed = team.apply("--yes", "--confirm", "Team Box", TRUEUP_CRASH_AT="journal-running")
    assert killed.code == -9
    blocked = team.apply("--yes", "--confirm", "Team Box")
    assert blocked.code == 4 and "its process is gone" in blocked.err
    recovered = team.run("recover")
    assert recovered.code == 0, recovered.err
    assert (team.world.root / ".toolrc").read_text() == "declared\n"
    (entry,) = team.audit("run.recovered")
    assert entry.outcome == "success" and entry.detail == {"outcome": "converged"}

    team.world.write("ws.toml", PROFILE.replace("declared", "second"))
    assert team.apply("--yes", TRUEUP_CRASH_AT="journal-running").code == -9
    assert team.run("abandon").code == 0
    (abandoned,) = team.audit("run.abandoned")
    assert abandoned.outcome == "success" and abandoned.run_id


def test_grant_and_token_changes_and_every_refusal_are_audited(team: Team) -> None:
    assert team.run("grant", "add", ME, "admin", "*").code == 0
    assert team.run("token", "create", "service:deploy").code == 0
    assert team.run("grant", "add", "service:bob", "plan", "profile:other@*").code == 0
    assert team.run("grant", "add", "service:bob", "admin", "*", actor="bob").code == 5
    assert team.run("grant", "list", actor="bob").code == 5
    assert team.run("token", "create", "service:b", actor="bob").code == 5
    assert team.plan(actor="deploy").code == 5, "its token is not presented"
    assert team.run("plan", team.profile, TRUEUP_TOKEN="tu_wrong").code == 5
    rows = [(e.event, e.outcome, e.actor["id"]) for e in reversed(team.audit())]
    me = ME.partition(":")[2]
    assert rows == [
        ("grant.added", "success", me),
        ("token.created", "success", me),
        ("grant.added", "success", me),
        ("grant.added", "refused", "bob"),
        ("grants.read", "refused", "bob"),
        ("token.created", "refused", "bob"),
        ("actor.claimed", "refused", me),
        ("actor.claimed", "refused", me),
    ]
    assert all("tu_" not in str(e.to_json()) for e in team.audit()), "no token in the log"


def test_status_and_lists_show_an_actor_only_what_it_may_plan(team: Team) -> None:
    assert team.run("grant", "add", ME, "admin", "*").code == 0
    other = team.world.base / "other"
    other.mkdir()
    assert team.run("apply", team.profile, "--root", str(other), "--yes").code == 0
    root = str(team.world.root)
    assert team.run("grant", "add", "service:dave", "plan", f"profile:ws@{root}").code == 0
    assert team.plan().code == 0
    for _ in range(6):  # the newest rows are all about a target dave may not see
        assert team.run("plan", team.profile, "--root", str(other)).code == 0
    status = team.run("status", "--json", actor="dave")
    assert [t["target"] for t in status.json["data"]["targets"]] == [], status.out
    listed = team.run("audit", "list", "--limit", "5", "--json", actor="dave")
    assert listed.code == 0 and len(listed.json["data"]) >= 1, listed.out
    assert all(root in e["target_key"] for e in listed.json["data"])


def test_bad_job_and_worker_options_are_usage_errors(team: Team) -> None:
    assert team.run("jobs", "list", "--status", "bogus").code == 2
    worker = team.run("worker", "--drain", "--import", "no_such_module_here")
    assert worker.code == 2 and "no such module" in worker.err, worker.err


def test_recover_and_abandon_name_no_run_of_a_target_the_actor_may_not_see(team: Team) -> None:
    killed = team.apply("--yes", "--confirm", "Team Box", TRUEUP_CRASH_AT="journal-running")
    assert killed.code == -9
    (blocked,) = team.run("status", "--json").json["data"]["blocked_runs"]
    assert team.run("grant", "add", ME, "admin", "*").code == 0
    assert team.run("grant", "add", "service:bob", "plan", "profile:other@*").code == 0
    for verb in ("recover", "abandon"):
        unnamed = team.run(verb, actor="service:bob")
        assert unnamed.code == 2 and "no interrupted run" in unnamed.err, unnamed.err
        assert blocked["id"] not in unnamed.out + unnamed.err
    named = team.run("recover", blocked["id"], actor="service:bob")
    assert named.code == 5, named.err  # refused, and audited, before anything is said of it
    assert any(e.outcome == "refused" for e in team.audit("run.recovered"))


def test_an_unknown_token_is_refused_even_before_anything_is_guarded(team: Team) -> None:
    for command in (["status"], ["jobs", "list"], ["audit", "list"]):
        refused = team.run(*command, TRUEUP_TOKEN="not-a-token")
        assert refused.code == 5 and "not a known token" in refused.err, refused.err
