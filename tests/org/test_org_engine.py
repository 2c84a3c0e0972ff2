"""The org engine against the fakes: create, no-op, change, drift, unmanaged, failures."""

from __future__ import annotations

import json
from typing import Any

import pytest
from org_world import ORG, Orgs

from trueup.declare.org import load_org
from trueup.execute.gates import ConfirmationRequired, StalePlan
from trueup.model import ActionType, Outcome
from trueup.providers.secretstore import SecretStore
from trueup.testing import FakeProviders


def zitadel_counts(fakes: FakeProviders) -> dict[str, int]:
    data = fakes.zitadel.dump()
    return {
        "orgs": len(data["orgs"]),
        "projects": len(data["projects"]),
        "apps": sum(len(a) for a in data["apps"].values()),
        "roles": sum(len(r) for r in data["roles"].values()),
    }


def zone(fakes: FakeProviders) -> str:
    found = fakes.cloudflare.zone_id("acme.test")
    assert found is not None
    return found


def a_record(fakes: FakeProviders) -> dict[str, Any]:
    (record,) = [r for r in fakes.cloudflare.records(zone(fakes)) if r["type"] == "A"]
    return record


def env_of(fakes: FakeProviders, app_name: str) -> dict[str, str]:
    (app,) = [a for a in fakes.coolify.list_applications() if a["name"] == app_name]
    return {e["key"]: e["value"] for e in fakes.coolify.list_envs(app["uuid"])}


def test_an_org_is_created_from_nothing_and_then_nothing_is_left_to_do(orgs: Orgs) -> None:
    path = orgs.write(ORG)
    result = orgs.apply(path)
    assert result.outcome is Outcome.CONVERGED, result.message
    fakes = orgs.fakes
    assert [p["name"] for p in fakes.coolify.list_projects()] == ["Acme Inc"]
    assert sorted(a["name"] for a in fakes.coolify.list_applications()) == ["chat", "portal"]
    assert a_record(fakes)["content"] == "203.0.113.10"
    assert zitadel_counts(fakes) == {"orgs": 2, "projects": 1, "apps": 1, "roles": 2}
    assert env_of(fakes, "portal") == {"LOG_LEVEL": "info"}
    assert set(env_of(fakes, "chat")) == {"CHAT_SIGNING_KEY"}
    state = result.state
    assert set(state.service_ids) == {"cloudflare", "coolify", "zitadel"}
    assert state.failed_fields == []
    assert state.last_applied and state.last_applied["declaredOrgVersion"] == load_org(path).digest
    assert orgs.steps(path) == {}


def test_a_changed_declaration_changes_only_what_changed(orgs: Orgs) -> None:
    path = orgs.write(ORG)
    orgs.apply(path)
    changed = ORG.replace("203.0.113.10", "203.0.113.20").replace('"info"', '"debug"')
    orgs.write(changed)
    assert orgs.steps(path) == {"dns:portal.acme.test/A": "update", "apps.app:portal": "update"}
    assert orgs.apply(path).outcome is Outcome.CONVERGED
    assert a_record(orgs.fakes)["content"] == "203.0.113.20"
    assert env_of(orgs.fakes, "portal") == {"LOG_LEVEL": "debug"}
    assert orgs.steps(path) == {}


def test_drift_shows_live_and_declared_values_and_is_only_overwritten_on_request(
    orgs: Orgs,
) -> None:
    path = orgs.write(ORG)
    orgs.apply(path)
    fakes = orgs.fakes
    record = a_record(fakes)
    fakes.cloudflare.replace_record(
        zone(fakes), record["id"], {"content": "198.51.100.7"}, "", partial=True
    )
    (drift,) = orgs.plan(path).plan.by_type(ActionType.DRIFT_CONFLICT)
    assert drift.resource_id == "dns:portal.acme.test/A"
    assert drift.payload["live"]["content"] == "198.51.100.7"
    assert drift.payload["declared"]["content"] == "203.0.113.10"
    assert orgs.apply(path).outcome is Outcome.DRIFT
    assert a_record(fakes)["content"] == "198.51.100.7"
    assert orgs.apply(path, force=("dns:portal.acme.test/A",)).outcome is Outcome.CONVERGED
    assert a_record(fakes)["content"] == "203.0.113.10"


def test_unmanaged_items_are_reported_and_never_touched(orgs: Orgs) -> None:
    path = orgs.write(ORG)
    first = orgs.apply(path)
    fakes = orgs.fakes
    fakes.cloudflare.add_record(zone(fakes), type="TXT", name="legacy", content="keep-me")
    project = first.state.service_ids["coolify"]
    fakes.coolify.create_application(
        "dockerimage",
        {
            "project_uuid": project,
            "server_uuid": fakes.coolify.server_uuid,
            "environment_name": "production",
            "name": "hand-made",
            "docker_registry_image_name": "nginx",
            "ports_exposes": "80",
        },
    )
    fakes.zitadel.create_project(first.state.service_ids["zitadel"], {"name": "side-project"})
    prepared = orgs.plan(path)
    described = [u.description for u in prepared.unmanaged]
    assert any("TXT legacy.acme.test keep-me" in d for d in described)
    assert any("coolify.application hand-made" in d for d in described)
    assert any("zitadel.project side-project" in d for d in described)
    assert not prepared.plan.changes
    orgs.write(ORG.replace("203.0.113.10", "203.0.113.30"))
    assert orgs.apply(path).outcome is Outcome.CONVERGED
    assert any(r["name"] == "legacy.acme.test" for r in fakes.cloudflare.records(zone(fakes)))
    assert any(a["name"] == "hand-made" for a in fakes.coolify.list_applications())
    assert zitadel_counts(fakes)["projects"] == 2


def test_mail_level_transitions_migrate_and_turning_mail_off_destroys(orgs: Orgs) -> None:
    path = orgs.write(ORG)
    orgs.apply(path)
    without = ORG.replace(
        'level = "forward"\nroutes = [{ address = "hello@acme.test", forward_to = '
        '["founders@example.com"] }]',
        'level = "none"',
    )
    orgs.write(without)
    actions = {a.resource_id: a for a in orgs.plan(path).plan.actions}
    off = actions["mail.routing"]
    assert (off.destroys, off.migrates) == (True, True)
    assert actions["mail.route:hello@acme.test"].payload["op"] == "delete"
    with pytest.raises(ConfirmationRequired):
        orgs.apply(path, confirm=None)
    with pytest.raises(ConfirmationRequired):
        orgs.apply(path, confirm="Acme")
    assert orgs.apply(path, confirm="  Acme Inc ").outcome is Outcome.CONVERGED
    email = orgs.fakes.cloudflare.dump()["email"][zone(orgs.fakes)]
    assert email["settings"]["enabled"] is False and email["rules"] == {}
    orgs.write(ORG)
    on = {a.resource_id: a for a in orgs.plan(path).plan.actions}["mail.routing"]
    assert (on.destroys, on.migrates) == (False, True)


def test_chat_rekey_destroys_and_migrates_and_the_key_never_reaches_state(orgs: Orgs) -> None:
    path = orgs.write(ORG)
    orgs.apply(path)
    old_key = env_of(orgs.fakes, "chat")["CHAT_SIGNING_KEY"]
    orgs.write(ORG + "key_generation = 2\n")
    (rekey,) = orgs.plan(path).plan.changes
    assert rekey.resource_id == "chat.signing-key"
    assert (rekey.destroys, rekey.migrates) == (True, True)
    assert orgs.apply(path).outcome is Outcome.CONVERGED
    new_key = env_of(orgs.fakes, "chat")["CHAT_SIGNING_KEY"]
    assert new_key != old_key
    database = (orgs.data / "state.db").read_bytes()
    assert old_key.encode() not in database and new_key.encode() not in database
    assert orgs.steps(path) == {}


def test_moving_the_issuer_destroys_and_migrates(orgs: Orgs) -> None:
    path = orgs.write(ORG)
    orgs.apply(path)
    orgs.write(
        ORG.replace(
            "[[identity.project]]", '[identity]\norg = "Acme Identity"\n\n[[identity.project]]'
        )
    )
    move = {a.resource_id: a for a in orgs.plan(path).plan.actions}["identity.org"]
    assert "move the identity issuer" in move.summary
    assert (move.destroys, move.migrates) == (True, True)


def test_a_failure_keeps_what_completed_and_applying_again_resumes(orgs: Orgs) -> None:
    """One step at a time, so which steps the failure leaves unreached is known."""
    from trueup.audit import entries

    orgs.env = {**orgs.env, "TRUEUP_REMOTE_CONCURRENCY": "1"}
    fakes = orgs.fakes
    clash = fakes.cloudflare.add_record(zone(fakes), type="A", name="www", content="192.0.2.1")
    path = orgs.write(
        ORG + '\n[[dns]]\ntype = "CNAME"\nname = "www"\ncontent = "portal.acme.test"\n'
    )
    engine = orgs.engine()
    prepared = engine.prepare(path, permission="apply")
    failed = engine.apply(prepared, prepared.plan, "Acme Inc")
    assert failed.outcome is Outcome.FAILED
    assert "81057" in failed.message and "no rollback" in failed.message
    assert "local ones" not in failed.message, "an org run changes nothing local"
    assert failed.run is not None
    statuses = {a.action.resource_id: a.status for a in engine.store.run_actions(failed.run.run_id)}
    assert statuses["apps.project"] == statuses["dns:portal.acme.test/A"] == "succeeded"
    assert statuses["dns:www.acme.test/CNAME"] == "failed"
    assert statuses["identity.org"] == "pending"
    assert len(fakes.coolify.list_projects()) == 1  # kept: remote steps are not rolled back
    assert any(f.startswith("dns:www.acme.test/CNAME") for f in failed.state.failed_fields)
    assert "identity.org: not reached (the run stopped)" in failed.state.failed_fields
    assert failed.state.last_applied is None
    audited = [e for e in entries(engine.store) if e.event == "plan.applied"]
    assert audited[0].outcome == "failed"

    fakes.cloudflare.delete_record(zone(fakes), clash["id"], "")  # a person fixes the cause
    again = orgs.apply(path)
    assert again.outcome is Outcome.CONVERGED, again.message
    assert again.run is not None
    assert "apps.project" not in {r.action.resource_id for r in again.run.results}
    assert len(fakes.coolify.list_projects()) == 1
    assert sorted(a["name"] for a in fakes.coolify.list_applications()) == ["chat", "portal"]
    assert zitadel_counts(fakes) == {"orgs": 2, "projects": 1, "apps": 1, "roles": 2}
    assert again.state.failed_fields == [] and again.state.last_applied is not None
    # The record names every step completed towards this state, each when it completed.
    at = {c["step"]: c["at"] for c in again.state.checkpoints}
    assert len(at) == len(again.state.checkpoints), "a step is checkpointed once"
    assert {"apps.project", "dns:www.acme.test/CNAME", "identity.org"} <= set(at)
    assert at["apps.project"] < at["dns:www.acme.test/CNAME"]


def test_an_unconfirmed_destination_is_a_failed_field_until_confirmed(orgs: Orgs) -> None:
    path = orgs.write(ORG.replace('["founders@example.com"]', '["new@example.com"]'))
    result = orgs.apply(path)
    assert result.outcome is Outcome.HUMAN_ACTION_REQUIRED
    assert result.state.failed_fields == ["mail.destination:new@example.com: verified"]
    (person,) = orgs.plan(path).plan.by_type(ActionType.HUMAN_ACTION)
    assert person.resource_id == "mail.destination:new@example.com"
    orgs.fakes.cloudflare.verify_address("new@example.com")
    assert orgs.steps(path) == {}
    settled = orgs.apply(path)
    assert settled.state.failed_fields == [] and settled.outcome is Outcome.CONVERGED
    # Nothing was left to do, but the last run waited for a person: status must not.
    store, key = orgs.engine().store, orgs.plan(path).target.key
    last = store.last_run(key)
    assert last is not None and last.outcome == "converged"
    orgs.apply(path)
    assert store.last_run(key) == last, "a converged org is not recorded again"


def test_the_client_secret_goes_to_the_secret_store_only(orgs: Orgs) -> None:
    path = orgs.write(ORG)
    orgs.apply(path)
    engine = orgs.engine()
    (record,) = [
        a
        for a in engine.store.applied("org:acme@acme.test").values()
        if a.resource.kind == "zitadel.oidc_app"
    ]
    ref = record.detail["secret_ref"]
    secret = SecretStore(orgs.data).get(ref)
    assert secret and len(secret) > 20
    assert secret.encode() not in (orgs.data / "state.db").read_bytes()
    assert secret not in json.dumps(record.detail)


def test_grants_to_other_orgs_and_removing_what_trueup_made(orgs: Orgs) -> None:
    granted = ORG.replace(
        'roles = ["admin", "member"]',
        'roles = ["admin", "member"]\ngrants = [{ org = "Partner", roles = ["member"] }]',
    )
    path = orgs.write(granted)
    (missing,) = orgs.plan(path).plan.by_type(ActionType.HUMAN_ACTION)
    assert missing.resource_id == "identity.grant:portal/Partner"
    partner = orgs.fakes.zitadel.add_org("Partner")
    assert orgs.apply(path).outcome is Outcome.CONVERGED
    grants = orgs.fakes.zitadel.dump()["grants"]
    assert [(g["grantedOrgId"], g["roleKeys"]) for p in grants.values() for g in p.values()] == [
        (partner, ["member"])
    ]
    assert orgs.steps(path) == {}

    bare = '[org]\nid = "acme"\nname = "Acme Inc"\ndomain = "acme.test"\n'
    orgs.write(bare + "[apps]\n")
    actions = {a.resource_id: a for a in orgs.plan(path).plan.actions}
    assert (
        actions["apps.app:portal"].payload["op"] == "delete" and actions["apps.app:portal"].destroys
    )
    assert actions["identity.project:portal"].payload["op"] == "delete"
    assert actions["dns:portal.acme.test/A"].payload["op"] == "delete"
    for shared in ("apps.project", "apps.environment:production", "identity.org", "mail.routing"):
        assert shared not in actions or actions[shared].payload.get("op") in ("forget", None)
    assert orgs.apply(path).outcome is Outcome.CONVERGED
    fakes = orgs.fakes
    assert fakes.coolify.list_applications() == []
    assert [p["name"] for p in fakes.coolify.list_projects()] == ["Acme Inc"]  # left in place
    assert zitadel_counts(fakes) == {"orgs": 3, "projects": 0, "apps": 0, "roles": 0}
    assert not any(r["type"] == "A" for r in fakes.cloudflare.records(zone(fakes)))
    assert fakes.cloudflare.dump()["email"][zone(fakes)]["settings"]["enabled"] is True
    assert orgs.steps(path) == {}


def test_a_txt_record_somebody_else_made_at_a_declared_name_is_never_taken_over(
    orgs: Orgs,
) -> None:
    fakes = orgs.fakes
    fakes.cloudflare.add_record(
        zone(fakes), type="TXT", name="acme.test", content="google-site-verification=abc"
    )
    declared = '\n[[dns]]\ntype = "TXT"\nname = "@"\ncontent = "acme-verification=7f3c"\n'
    path = orgs.write(ORG + declared)
    prepared = orgs.plan(path)
    assert any("google-site-verification=abc" in u.description for u in prepared.unmanaged)
    applied = orgs.apply(path)
    assert applied.outcome is not Outcome.FAILED, applied
    contents = {r["content"] for r in fakes.cloudflare.records(zone(fakes)) if r["type"] == "TXT"}
    assert {"google-site-verification=abc", "acme-verification=7f3c"} <= contents


def test_a_lost_client_secret_is_never_replaced_without_a_person(orgs: Orgs) -> None:
    path = orgs.write(ORG)
    orgs.apply(path)
    secrets = [p for p in (orgs.data / "secrets").rglob("*") if p.is_file()]
    assert secrets
    for stored in secrets:  # another operator's data directory, or a lost one
        stored.unlink()
    (action,) = [a for a in orgs.plan(path).plan.actions if a.kind == "zitadel.oidc_app"]
    assert action.type is ActionType.HUMAN_ACTION and "--overwrite" in action.summary
    forced = orgs.plan(path, force=(action.resource_id,))
    (rotate,) = [a for a in forced.plan.actions if a.kind == "zitadel.oidc_app"]
    assert rotate.payload["op"] == "rotate-secret" and rotate.destroys
    with pytest.raises(ConfirmationRequired):
        orgs.apply(path, confirm=None, force=(action.resource_id,))


def test_removing_a_project_that_holds_hand_made_items_needs_the_typed_name(
    orgs: Orgs,
) -> None:
    path = orgs.write(ORG)
    first = orgs.apply(path)
    fakes = orgs.fakes
    org_id = first.state.service_ids["zitadel"]
    (project_id,) = fakes.zitadel.dump()["projects"]
    fakes.zitadel.add_role(org_id, project_id, {"roleKey": "handrole", "displayName": "Hand"})
    start = ORG.index("[[identity.project]]")
    path = orgs.write(ORG[:start] + ORG[ORG.index("[[dns]]") :])
    (removal,) = [
        a
        for a in orgs.plan(path).plan.actions
        if a.kind == "zitadel.project" and a.type is ActionType.REMOVE_RESOURCE
    ]
    assert removal.destroys and "unmanaged item(s) in it" in removal.summary
    assert "handrole" in removal.summary
    with pytest.raises(ConfirmationRequired):
        orgs.apply(path, confirm=None)
    assert zitadel_counts(fakes)["projects"] == 1


def test_an_srv_record_converges(orgs: Orgs) -> None:
    srv = (
        '\n[[dns]]\ntype = "SRV"\nname = "_sip._tcp"\ncontent = "1 5060 sip.example.com"\n'
        "priority = 5\n"
    )
    path = orgs.write(ORG + srv)
    assert orgs.apply(path).outcome is not Outcome.FAILED
    assert not [
        a
        for a in orgs.plan(path).plan.actions
        if a.kind == "cloudflare.dns_record" and a.type.mutates
    ]


def test_moving_an_app_to_another_environment_is_a_person_s_step_at_plan_time(
    orgs: Orgs,
) -> None:
    both = ORG.replace("[[app]]", '[apps]\nenvironments = ["production", "staging"]\n\n[[app]]', 1)
    path = orgs.write(both)
    orgs.apply(path)
    moved = both.replace(
        'name = "portal"\nimage', 'name = "portal"\nenvironment = "staging"\nimage'
    )
    assert moved != both
    path = orgs.write(moved)
    actions = orgs.plan(path).plan.actions
    steps = [a for a in actions if a.kind == "coolify.application" and a.type.value != "no-op"]
    assert [a.type for a in steps] == [ActionType.HUMAN_ACTION]
    assert "portal" in steps[0].resource_id and "environment in place" in steps[0].summary


def test_moving_the_issuer_keeps_the_old_organization_s_client_secret(orgs: Orgs) -> None:
    path = orgs.write(ORG)
    orgs.apply(path)
    before = {p: p.read_bytes() for p in (orgs.data / "secrets").rglob("*") if p.is_file()}
    assert len(before) == 1
    orgs.write(
        ORG.replace(
            "[[identity.project]]", '[identity]\norg = "Acme Identity"\n\n[[identity.project]]'
        )
    )
    orgs.apply(path)
    after = {p: p.read_bytes() for p in (orgs.data / "secrets").rglob("*") if p.is_file()}
    assert len(after) == 2, "the new organization's app has a secret of its own"
    for old, data in before.items():
        assert after[old] == data, "the old organization's secret is kept as it was"


def test_recorded_org_status_shows_an_actor_only_the_orgs_it_may_plan(orgs: Orgs) -> None:
    import dataclasses

    from trueup import authz
    from trueup.org.engine import OrgEngine

    path = orgs.write(ORG)
    orgs.apply(path)
    engine = orgs.engine()
    me = authz.os_actor()
    authz.add_grant(engine.store, me, me.key, "admin", "*")
    assert [key for key, _ in engine.status()] == [orgs.plan(path).target.key]
    stranger = OrgEngine(dataclasses.replace(orgs.settings, actor="stranger"), env=orgs.env)
    orgs.engines.append(stranger)
    assert stranger.status() == [] and stranger.blocked_runs() == []


def test_a_saved_plan_outlives_reordered_entries_but_not_a_real_change(orgs: Orgs) -> None:
    """org-provisioning.md: plans compare order-independently for the staleness check."""
    a_record = '[[dns]]\ntype = "A"\nname = "portal"\ncontent = "203.0.113.10"\n'
    txt = '[[dns]]\ntype = "TXT"\nname = "@"\ncontent = "acme-verification=7f3c"\n'
    granted = 'grants = [{ org = "Partner", roles = ["member", "admin"] }]'
    first = ORG.replace(a_record, txt + "\n" + a_record).replace(
        'roles = ["admin", "member"]', 'roles = ["admin", "member"]\n' + granted
    )
    path = orgs.write(first)
    saved = orgs.plan(path).plan
    # Same records, roles and grant, other order: the same steps mean the same plan.
    reordered = (
        first.replace(txt + "\n" + a_record, a_record + "\n" + txt)
        .replace('roles = ["admin", "member"]\n', 'roles = ["member", "admin"]\n')
        .replace('roles = ["member", "admin"] }', 'roles = ["admin", "member"] }')
    )
    assert reordered != first
    orgs.write(reordered)
    engine = orgs.engine()
    prepared = engine.prepare(path, permission="apply")
    assert prepared.plan.digest == saved.digest
    engine.check_fresh(saved, prepared)
    orgs.write(reordered.replace("7f3c", "7f3d"))
    with pytest.raises(StalePlan, match="the declaration changed"):
        engine.check_fresh(saved, engine.prepare(path, permission="apply"))


def test_an_app_deleted_takes_its_client_secret_with_it(orgs: Orgs) -> None:
    path = orgs.write(ORG)
    orgs.apply(path)
    (record,) = [
        a
        for a in orgs.engine().store.applied("org:acme@acme.test").values()
        if a.resource.kind == "zitadel.oidc_app"
    ]
    store = SecretStore(orgs.data)
    assert store.get(record.detail["secret_ref"])
    apps = (
        '\napps = [{ name = "portal-web", redirect_uris = ["https://portal.acme.test/callback"] }]'
    )
    assert apps in ORG
    removed = orgs.apply(orgs.write(ORG.replace(apps, "")))
    assert removed.outcome in (Outcome.CONVERGED, Outcome.HUMAN_ACTION_REQUIRED), removed.message
    assert store.get(record.detail["secret_ref"]) is None
    assert not [p for p in (orgs.data / "secrets").rglob("*") if p.is_file()]


@pytest.mark.parametrize("provider", ["cloudflare", "zitadel", "coolify"])
def test_a_page_in_place_of_a_providers_answer_is_its_failure_named_and_audited(
    orgs: Orgs, provider: str
) -> None:
    """A proxy or sign-in portal answering 200 with HTML: exit 6 naming the provider and
    the request, never an internal error, and a refused apply is in the audit log."""
    from trueup.audit import entries
    from trueup.errors import ExitCode
    from trueup.providers.http import ProviderError

    getattr(orgs.fakes.faults, provider).update(garble=1)
    engine = orgs.engine()
    with pytest.raises(ProviderError) as failed:
        engine.prepare(orgs.write(ORG), permission="apply")
    assert failed.value.exit_code is ExitCode.TRANSPORT
    assert failed.value.message.startswith(f"{provider}: ")
    assert "not JSON" in failed.value.message and failed.value.hint
    audited = [e for e in entries(engine.store) if e.event == "plan.applied"]
    assert [e.outcome for e in audited] == ["failed"]


def test_an_answer_of_a_shape_its_client_cannot_read_is_the_providers_failure() -> None:
    from trueup.errors import ExitCode
    from trueup.providers.cloudflare.dns import record_view
    from trueup.providers.http import misread

    with pytest.raises(KeyError) as read:
        record_view({}, with_comment=False)  # a DNS record without its fields
    unreadable = misread(read.value)
    assert unreadable is not None and unreadable.exit_code is ExitCode.TRANSPORT
    assert unreadable.message.startswith("cloudflare answered with data trueup cannot read")
    with pytest.raises(KeyError) as elsewhere:
        {}["id"]  # raised here, outside any provider's client
    assert misread(elsewhere.value) is None, "a bug elsewhere stays a bug"
