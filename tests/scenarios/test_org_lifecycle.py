"""An org through the installed ``trueup`` command against the fake providers.

Create from nothing, a no-op plan, a change, unmanaged items left alone, a
stale saved plan, typed confirmation, authorization; and the OIDC client
secret in no output, log or state row.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from world import Result, World

from trueup import authz
from trueup.testing import FakeProviders
from trueup.testing.acme import ACME_ORG, seed_acme

ME = authz.os_actor().key
DNS = '[[dns]]\ntype = "A"\nname = "portal"\ncontent = "203.0.113.10"\n'
ORG = ACME_ORG


class OrgWorld:
    """A world whose ``trueup`` talks to the fakes; every output is kept for scanning."""

    def __init__(self, world: World, fakes: FakeProviders) -> None:
        self.world = world
        self.fakes = fakes
        self.outputs: list[str] = []
        self.path = str(world.write("acme.toml", ORG))
        self.env = {
            **fakes.env(),
            "PYTHON_KEYRING_BACKEND": "keyring.backends.fail.Keyring",
        }

    def run(self, *args: str, actor: str | None = None) -> Result:
        prefix = ("--actor", actor) if actor else ()
        result = self.world.run(*prefix, *args, env=self.env)
        self.outputs += [result.out, result.err]
        return result

    def declare(self, text: str) -> None:
        Path(self.path).write_text(text)

    def zone(self) -> str:
        found = self.fakes.cloudflare.zone_id("acme.test")
        assert found
        return found


@pytest.fixture
def org(world: World, running_fakes: FakeProviders) -> OrgWorld:
    seed_acme(running_fakes)
    return OrgWorld(world, running_fakes)


def test_create_noop_change_unmanaged_and_no_secret_anywhere(org: OrgWorld) -> None:
    fakes = org.fakes
    fakes.cloudflare.add_record(org.zone(), type="TXT", name="legacy", content="keep-me")
    plan = org.run("org", "plan", org.path)
    assert plan.code == 0, plan.err
    assert "create OIDC app portal/portal-web" in plan.out
    assert "Unmanaged (1)" in plan.out and "TXT legacy.acme.test keep-me" in plan.out

    created = org.run("org", "apply", org.path, "--confirm", "Acme Inc")
    assert created.code == 0, created.out + created.err
    assert "converged" in created.out

    again = org.run("org", "plan", org.path, "--json")
    assert again.code == 0
    body = again.json
    assert body["schema"] == "trueup.cli/1" and body["status"] == "converged"
    assert all(a["type"] == "no-op" for a in body["data"]["plan"]["actions"])
    assert [u["description"] for u in body["data"]["unmanaged"]] == [
        "cloudflare.dns_record TXT legacy.acme.test keep-me"
    ]

    org.declare(ORG.replace("203.0.113.10", "203.0.113.99").replace('"info"', '"warn"'))
    changed = org.run("org", "apply", org.path, "--yes")
    assert changed.code == 0, changed.out + changed.err
    assert "203.0.113.10" in changed.out and "203.0.113.99" in changed.out  # live and declared
    records = fakes.cloudflare.records(org.zone())
    assert [r["content"] for r in records if r["type"] == "A"] == ["203.0.113.99"]
    assert any(r["name"] == "legacy.acme.test" for r in records)  # unmanaged: still there

    status = org.run("org", "status", "--json")
    assert status.code == 0
    (recorded,) = status.json["data"]["orgs"]
    assert recorded["failedFields"] == [] and recorded["lastApplied"]["declaredOrgVersion"]
    assert set(recorded["serviceIds"]) == {"cloudflare", "coolify", "zitadel"}

    _assert_secret_only_in_the_secret_store(org)


def _assert_secret_only_in_the_secret_store(org: OrgWorld) -> None:
    secrets_dir = org.world.data / "secrets"
    (stored,) = list(secrets_dir.iterdir())
    secret = stored.read_text()
    assert len(secret) > 20 and stored.stat().st_mode & 0o777 == 0o600
    for text in org.outputs:
        assert secret not in text
    for path in org.world.data.rglob("*"):
        if path.is_file() and secrets_dir not in path.parents:
            assert secret.encode() not in path.read_bytes(), path
    for path in org.world.base.rglob("*.log"):
        assert secret.encode() not in path.read_bytes()


def test_a_stale_saved_plan_is_refused(org: OrgWorld) -> None:
    saved = str(org.world.base / "plan.json")
    assert org.run("org", "apply", org.path, "--confirm", "Acme Inc").code == 0
    org.declare(ORG.replace("203.0.113.10", "203.0.113.11"))
    assert org.run("org", "plan", org.path, "-o", saved).code == 0
    org.fakes.cloudflare.add_record(org.zone(), type="TXT", name="new", content="appeared")
    stale = org.run("org", "apply", saved, "--yes")
    assert stale.code == 4, stale.out + stale.err
    assert "the plan is stale" in stale.err and "unmanaged:cloudflare" in stale.err
    assert "trueup org plan" in stale.err
    wrong_command = org.run("apply", saved, "--yes")
    assert wrong_command.code == 2 and "trueup org apply" in wrong_command.err
    a_records = [r for r in org.fakes.cloudflare.records(org.zone()) if r["type"] == "A"]
    assert [r["content"] for r in a_records] == ["203.0.113.10"]


def test_a_damaged_saved_org_plan_is_refused_and_audited(org: OrgWorld) -> None:
    saved = org.world.base / "plan.json"
    assert org.run("org", "plan", org.path, "-o", str(saved)).code == 0
    saved.write_text(saved.read_text().replace("203.0.113.10", "203.0.113.66"))
    refused = org.run("org", "apply", str(saved), "--yes")
    assert refused.code == 2, refused.out + refused.err
    assert "does not match its digest" in refused.err and "trueup org plan" in refused.err
    audited = org.run("audit", "list", "--json").json["data"]
    assert [e["outcome"] for e in audited if e["event"] == "plan.applied"] == ["refused"]
    assert org.fakes.cloudflare.records(org.zone()) == []


def test_destroying_steps_need_the_typed_name(org: OrgWorld) -> None:
    first = org.run("org", "apply", org.path, "--yes")
    assert first.code == 2 and "--yes alone never confirms" in first.err  # mail level migrates
    wrong = org.run("org", "apply", org.path, "--yes", "--confirm", "Acme")
    assert wrong.code == 2 and "'Acme' is not 'Acme Inc'" in wrong.err
    assert org.fakes.coolify.list_projects() == []
    assert org.run("org", "apply", org.path, "--confirm", "Acme Inc").code == 0
    org.declare(ORG + "key_generation = 2\n")
    rekey = org.run("org", "apply", org.path, "--yes")
    assert rekey.code == 2 and "chat.signing-key" in rekey.err
    assert org.run("org", "apply", org.path, "--confirm", " Acme Inc ").code == 0


def test_an_unauthorised_actor_is_refused(org: OrgWorld) -> None:
    assert org.run("grant", "add", ME, "admin", "*").code == 0
    # Named by a grant (an unnamed actor is refused outright), but not for this org.
    assert org.run("grant", "add", "service:ci", "plan", "profile:*").code == 0
    refused = org.run("org", "apply", org.path, "--confirm", "Acme Inc", actor="ci")
    assert refused.code == 5 and "service:ci may not apply org:acme@acme.test" in refused.err
    assert org.run("org", "plan", org.path, actor="ci").code == 5
    assert org.fakes.request_log.coolify.entries == []  # refused before reading anything
    assert org.run("grant", "add", "service:ci", "apply", "org:acme@*").code == 0
    allowed = org.run("org", "apply", org.path, "--confirm", "Acme Inc", actor="ci")
    assert allowed.code == 0, allowed.err


def test_fakes_serve_prints_exports_trueup_can_use(world: World) -> None:
    import os
    import signal
    import subprocess

    from world import TRUEUP

    server = subprocess.Popen(
        [TRUEUP, "fakes", "serve", "--zone", "acme.test"],
        stdout=subprocess.PIPE,
        text=True,
        env=world.env(),
    )
    try:
        assert server.stdout is not None
        exports = {}
        for line in server.stdout:
            if line.startswith("# serving"):
                break
            if line.startswith("export "):
                name, _, value = line.removeprefix("export ").strip().partition("=")
                exports[name] = value
        assert set(exports) >= {
            "TRUEUP_CLOUDFLARE_URL",
            "TRUEUP_CLOUDFLARE_TOKEN",
            "TRUEUP_COOLIFY_URL",
            "TRUEUP_COOLIFY_TOKEN",
            "TRUEUP_ZITADEL_URL",
            "TRUEUP_ZITADEL_TOKEN",
        }
        dns_only = ORG.split("[[identity.project]]")[0] + DNS
        path = world.write("dns.toml", dns_only)
        plan = world.run("org", "plan", str(path), env=exports)
        assert plan.code == 0, plan.err
        assert "create A record portal.acme.test" in plan.out
    finally:
        os.kill(server.pid, signal.SIGINT)
        server.wait(timeout=10)


def test_renaming_an_app_frees_its_domain_before_the_new_name_takes_it(org: OrgWorld) -> None:
    """Removals run first: the old app's domain is free when the renamed one is created."""
    assert org.run("org", "apply", org.path, "--confirm", "Acme Inc").code == 0
    org.declare(ORG.replace('[[app]]\nname = "portal"', '[[app]]\nname = "website"'))
    renamed = org.run("org", "apply", org.path, "--yes", "--confirm", "Acme Inc")
    assert renamed.code == 0, renamed.out + renamed.err
    again = org.run("org", "plan", org.path, "--json")
    assert again.json["status"] == "converged", again.out


def test_fields_not_yet_true_give_one_outcome_everywhere(org: OrgWorld) -> None:
    org.declare(
        ORG.replace('forward_to = ["founders@example.com"]', 'forward_to = ["ops@example.com"]')
    )
    applied = org.run("org", "apply", org.path, "--confirm", "Acme Inc", "--json")
    assert applied.code == 3, applied.out + applied.err
    assert applied.json["status"] == "human-action-required"
    assert applied.json["data"]["apply"]["run"]["outcome"] == "human-action-required"
    message = applied.json["message"]
    assert message.startswith("waiting for a person: "), message
    # Never "not yet true: ...: verified", which reads as if it were verified.
    assert "not verified yet" in message and not message.endswith("verified"), message
    text = org.run("org", "apply", org.path, "--confirm", "Acme Inc")
    assert text.code == 3 and "converged" not in text.out, text.out
    assert "not yet true" not in text.out and "not verified yet" in text.out, text.out
    recorded = org.run("org", "status")
    assert "not yet true" not in recorded.out and "not verified yet" in recorded.out


def test_objects_left_in_a_renamed_identity_org_are_forgotten_not_called_gone(
    org: OrgWorld,
) -> None:
    assert org.run("org", "apply", org.path, "--confirm", "Acme Inc").code == 0
    moved = ORG.replace(
        '[[identity.project]]\nname = "portal"', '[[identity.project]]\nname = "web"'
    )
    org.declare(moved + '\n[identity]\norg = "Acme Incorporated"\n')
    planned = org.run("org", "plan", org.path)
    assert "already gone" not in planned.out, planned.out
    assert "not found in the org's scope; nothing is deleted" in planned.out


def test_the_audit_log_records_the_outcome_the_command_reported(org: OrgWorld) -> None:
    org.declare(
        ORG.replace('forward_to = ["founders@example.com"]', 'forward_to = ["ops@example.com"]')
    )
    assert org.run("org", "apply", org.path, "--confirm", "Acme Inc").code == 3
    [row, *_] = org.run("audit", "list", "--event", "plan.applied", "--json").json["data"]
    assert row["detail"]["outcome"] == "human-action-required"
    # The plan applied is the row's "after" value (by digest: no value enters the
    # append-only log), and it is the plan approved.
    after = row["detail"]["after"]
    assert after["digest"] == row["plan_digest"]
    assert {a["resource"] for a in after["actions"]} >= {"identity.org", "mail.routing"}
    assert org.run("audit", "verify").code == 0


def test_an_apply_that_stops_before_its_first_step_is_audited(org: OrgWorld) -> None:
    org.env = {**org.env, "TRUEUP_COOLIFY_TOKEN": "wrong"}
    refused = org.run("org", "apply", org.path, "--confirm", "Acme Inc")
    assert refused.code == 5, refused.out + refused.err
    [row, *_] = org.run("audit", "list", "--event", "plan.applied", "--json").json["data"]
    assert row["outcome"] == "failed" and row["detail"]["outcome"] == "failed"
    assert "wrong" not in row["reason"]


def test_one_domain_on_two_apps_is_refused_before_anything_is_created(org: OrgWorld) -> None:
    second = (
        '\n[[app]]\nname = "docs"\nimage = "nginx:1"\ndomains = ["https://portal.acme.test/x"]\n'
    )
    org.declare(ORG + second)
    planned = org.run("org", "plan", org.path)
    assert planned.code == 2, planned.out + planned.err
    assert "[[app]] 'docs': field 'domains': portal.acme.test is a domain of [[app]] 'portal'" in (
        planned.err
    )


def test_an_env_var_trueup_set_and_no_longer_declares_is_removed_not_called_unmanaged(
    org: OrgWorld,
) -> None:
    assert org.run("org", "apply", org.path, "--confirm", "Acme Inc").code == 0
    org.declare(ORG.replace('env = { LOG_LEVEL = "info" }', "env = {}"))
    planned = org.run("org", "plan", org.path)
    assert "LOG_LEVEL of portal" not in planned.out, planned.out
    assert "LOG_LEVEL" in planned.out, "the removal itself is shown"


def test_overwriting_an_id_the_org_does_not_have_is_a_usage_error(org: OrgWorld) -> None:
    planned = org.run("org", "plan", org.path, "--overwrite", "no.such.resource")
    assert planned.code == 2
    assert "--overwrite no.such.resource: no resource has that id" in planned.err


def test_dropping_a_role_a_hand_made_grant_gives_is_destroying_and_says_so(
    org: OrgWorld,
) -> None:
    assert org.run("org", "apply", org.path, "--confirm", "Acme Inc").code == 0
    zitadel = org.fakes.zitadel
    acme = zitadel.org_id("Acme Inc")
    assert acme
    portal = zitadel.project_id(acme, "portal")
    assert portal
    other = zitadel.add_org("Other")
    zitadel.add_grant(acme, portal, {"grantedOrgId": other, "roleKeys": ["member"]})
    org.declare(ORG.replace('roles = ["admin", "member"]', 'roles = ["admin"]'))
    planned = org.run("org", "plan", org.path, "--json")
    [role] = [a for a in planned.json["data"]["plan"]["actions"] if a["type"] == "remove-resource"]
    assert role["destroys"], role
    assert "which changes unmanaged zitadel.project_grant portal -> Other" in role["summary"]
    refused = org.run("org", "apply", org.path, "--yes")
    assert refused.code == 2 and "role" in refused.err, refused.out + refused.err
    [grant] = [g for g in zitadel.dump()["grants"][portal].values()]
    assert grant["roleKeys"] == ["member"], "nothing changed without the typed name"


def test_an_object_found_as_declared_is_recorded_so_a_later_hand_edit_is_drift(
    org: OrgWorld,
) -> None:
    org.declare(ORG.split("[[identity.project]]")[0] + DNS)
    made = org.fakes.cloudflare.add_record(
        org.zone(), type="A", name="portal.acme.test", content="203.0.113.10"
    )
    planned = org.run("org", "plan", org.path)
    assert "recorded as managed from now on" in planned.out, planned.out
    assert org.run("org", "apply", org.path, "--yes").code == 0
    path = f"/zones/{org.zone()}/dns_records/{made['id']}"  # as a dashboard edit would
    org.fakes.cloudflare.replace_record(
        org.zone(), made["id"], {"content": "198.51.100.7"}, path, partial=True
    )
    drifted = org.run("org", "plan", org.path)
    assert drifted.code == 4 and "changed outside trueup" in drifted.out, drifted.out


def test_a_declared_app_that_is_not_running_is_started_not_called_converged(
    org: OrgWorld,
) -> None:
    assert org.run("org", "apply", org.path, "--confirm", "Acme Inc").code == 0
    coolify = org.fakes.coolify
    [portal] = [a for a in coolify.list_applications() if a["name"] == "portal"]
    coolify.action(portal["uuid"], "stop")
    stopped = org.run("org", "plan", org.path)
    assert stopped.code == 4 and "running" in stopped.out, stopped.out
    started = org.run("org", "apply", org.path, "--yes", "--overwrite", "apps.app:portal")
    assert started.code == 0, started.out + started.err
    [portal] = [a for a in coolify.list_applications() if a["name"] == "portal"]
    assert portal["status"].startswith("running")


def test_status_tells_an_org_that_needs_a_person_as_org_status_does(org: OrgWorld) -> None:
    org.declare(
        ORG.replace('forward_to = ["founders@example.com"]', 'forward_to = ["ops@example.com"]')
    )
    assert org.run("org", "apply", org.path, "--confirm", "Acme Inc").code == 3
    status = org.run("status", "--json")
    assert (status.code, status.json["status"]) == (3, "human-action-required"), status.out


def test_org_status_of_an_org_never_applied_says_changes_are_pending(org: OrgWorld) -> None:
    live = org.run("org", "status", org.path, "--json")
    assert live.code == 3 and live.json["data"]["pending"] > 0
    assert live.json["status"] == "changes-pending", live.out
    human = org.run("org", "status", org.path)
    assert "changes-pending;" in human.out and "converged" not in human.out


def test_org_status_after_a_failed_apply_exits_as_a_failed_run(org: OrgWorld) -> None:
    assert org.run("org", "apply", org.path, "--confirm", "Acme Inc").code == 0
    # A CNAME made by hand where an A record is declared: Cloudflare refuses the
    # create (400), so the step fails and the run ends failed.
    cname = {"type": "CNAME", "name": "status.acme.test", "content": "elsewhere.example"}
    org.fakes.cloudflare.add_record(org.zone(), **cname)
    org.declare(ORG + DNS.replace("portal", "status"))
    assert org.run("org", "apply", org.path, "--yes").code == 7
    status = org.run("org", "status", "--json")
    assert status.code == 7 == org.run("status").code, status.out


def test_a_secret_named_app_variable_reaches_coolify_and_nothing_else(org: OrgWorld) -> None:
    declared, rotated = "declared-pw-0123456789", "rotated-pw-9876543210"
    org.declare(
        ORG.replace('env = { LOG_LEVEL = "info" }', f'env = {{ DB_PASSWORD = "{declared}" }}')
    )
    assert org.run("org", "apply", org.path, "--confirm", "Acme Inc").code == 0
    coolify = org.fakes.coolify
    [portal] = [a for a in coolify.list_applications() if a["name"] == "portal"]

    def live() -> str:
        return next(
            str(e["value"]) for e in coolify.list_envs(portal["uuid"]) if e["key"] == "DB_PASSWORD"
        )

    assert live() == declared
    assert org.run("org", "plan", org.path, "--json").json["status"] == "converged"
    coolify.bulk_envs(portal["uuid"], {"data": [{"key": "DB_PASSWORD", "value": rotated}]})
    saved = org.world.base / "plan.json"
    assert org.run("org", "plan", org.path, "--json", "-o", str(saved)).code == 4  # drift
    assert org.run("org", "apply", org.path, "--yes", "--overwrite", "apps.app:portal").code == 0
    assert live() == declared
    for value in (declared, rotated):
        for text in org.outputs:
            assert value not in text
        for path in [saved, *org.world.data.rglob("*")]:
            if path.is_file():
                assert value.encode() not in path.read_bytes(), path


def test_a_coolify_token_that_may_not_read_values_is_refused_naming_the_permission(
    org: OrgWorld,
) -> None:
    """Hidden values would make every variable look changed: refused (exit 5), not planned."""
    assert org.run("org", "apply", org.path, "--confirm", "Acme Inc").code == 0
    org.fakes.coolify.set_token_abilities("read", "write", "deploy")
    planned = org.run("org", "plan", org.path)
    assert planned.code == 5, planned.out + planned.err
    assert "hides the variables' values from this token" in planned.err
    assert "root or read:sensitive permission" in planned.err
    assert "Traceback" not in planned.err
    org.fakes.coolify.set_token_abilities("read:sensitive")
    settled = org.run("org", "plan", org.path, "--json")
    assert settled.code == 0 and settled.json["status"] == "converged", settled.out
