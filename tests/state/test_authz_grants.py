"""Actors and grants on both back ends: implication, globs, the first grant, tokens."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import closing

import pytest

from trueup import authz
from trueup.errors import ExitCode, NotAuthorizedError, UsageError
from trueup.state.store import Store

ROOT = authz.Actor("human", "root-user", "Root")
CI = authz.parse_actor("service:ci")
ALICE = authz.parse_actor("alice")
WS = "profile:workstation@/home/alice"
ACME = "org:acme-prod"


@pytest.fixture
def store(store_url: str) -> Iterator[Store]:
    opened = Store.open(store_url)
    yield opened
    opened.close()


def test_without_grants_everyone_is_admin(store: Store) -> None:
    for permission in authz.PERMISSIONS:
        assert authz.allowed(store, CI, permission, ACME)


def test_the_first_grant_must_keep_its_author_admin(store: Store) -> None:
    with pytest.raises(UsageError, match="first grant"):
        authz.add_grant(store, ROOT, "service:ci", "plan", "*")
    assert authz.grants(store) == []
    authz.add_grant(store, ROOT, ROOT.key, "admin", "*")
    assert not authz.allowed(store, CI, "plan", ACME), "once a grant exists, all are checked"


def test_apply_implies_plan_and_globs_match_target_keys(store: Store) -> None:
    authz.add_grant(store, ROOT, ROOT.key, "admin", "*")
    authz.add_grant(store, ROOT, "service:ci", "apply", "org:acme*")
    authz.add_grant(store, ROOT, "alice", "plan", "profile:workstation@*")
    assert authz.allowed(store, CI, "apply", ACME) and authz.allowed(store, CI, "plan", ACME)
    assert not authz.allowed(store, CI, "admin", ACME)
    assert not authz.allowed(store, CI, "plan", "org:other")
    assert authz.allowed(store, ALICE, "plan", WS)
    assert not authz.allowed(store, ALICE, "apply", WS)
    with pytest.raises(NotAuthorizedError) as caught:
        authz.require(store, ALICE, "apply", WS)
    assert caught.value.exit_code == ExitCode.AUTH
    assert "user:alice may not apply" in caught.value.message


def test_grant_management_needs_admin_over_the_glob(store: Store) -> None:
    authz.add_grant(store, ROOT, ROOT.key, "admin", "*")
    authz.add_grant(store, ROOT, "service:acme-admin", "admin", "org:acme*")
    acme_admin = authz.parse_actor("service:acme-admin")
    authz.add_grant(store, acme_admin, "alice", "apply", "org:acme-prod")
    with pytest.raises(NotAuthorizedError):
        authz.add_grant(store, acme_admin, "alice", "apply", "*")
    with pytest.raises(NotAuthorizedError):
        authz.add_grant(store, ALICE, "alice", "admin", "*")


def test_the_last_admin_of_everything_cannot_be_removed_while_grants_remain(
    store: Store,
) -> None:
    authz.add_grant(store, ROOT, ROOT.key, "admin", "*")
    authz.add_grant(store, ROOT, "service:ci", "plan", "*")
    with pytest.raises(UsageError, match="no admin of every target"):
        authz.remove_grant(store, ROOT, ROOT.key, "admin", "*")
    assert len(authz.grants(store)) == 2
    authz.remove_grant(store, ROOT, "service:ci", "plan", "*")
    authz.remove_grant(store, ROOT, ROOT.key, "admin", "*")
    assert authz.grants(store) == []


def test_tokens_prove_a_service_and_only_their_hash_is_stored(store: Store) -> None:
    token = authz.create_token(store, ROOT, "service:deploy")
    stored = store.db.execute("SELECT actor, token_hash FROM actor_tokens")
    assert stored == [("service:deploy", authz.token_hash(token))]
    assert token not in str(stored)
    assert authz.resolve_actor(store, None, token).key == "service:deploy"
    with pytest.raises(NotAuthorizedError, match="not a known token"):
        authz.resolve_actor(store, None, token + "x")
    with pytest.raises(NotAuthorizedError, match="needs TRUEUP_TOKEN"):
        authz.resolve_actor(store, "deploy", None)
    with pytest.raises(NotAuthorizedError, match="belongs to service:deploy"):
        authz.resolve_actor(store, "service:other", token)
    assert authz.resolve_actor(store, "ci", None).key == "service:ci", "no token: a claim"
    assert authz.revoke_token(store, ROOT, "service:deploy")
    with pytest.raises(NotAuthorizedError):
        authz.resolve_actor(store, None, token)


def test_actor_names_parse_strictly() -> None:
    assert authz.parse_actor("alice").key == "user:alice"
    assert authz.parse_actor("human:alice").key == "user:alice"
    assert authz.parse_actor("ci", "service").key == "service:ci"
    for bad in ("robot:x", "user:", "user:a b"):
        with pytest.raises(UsageError):
            authz.parse_actor(bad)


def test_a_person_cannot_be_claimed_only_a_service(store: Store) -> None:
    me = authz.os_actor()
    with pytest.raises(NotAuthorizedError, match="acts as their own OS user"):
        authz.resolve_actor(store, "user:somebody-else", None)
    assert authz.resolve_actor(store, me.key, None) == me


def test_a_revoked_token_leaves_its_service_guarded(store: Store) -> None:
    authz.create_token(store, ROOT, "service:deploy")
    assert authz.revoke_token(store, ROOT, "service:deploy")
    with pytest.raises(NotAuthorizedError, match="token was revoked"):
        authz.resolve_actor(store, "service:deploy", None)
    assert not authz.revoke_token(store, ROOT, "service:deploy"), "already revoked"
    token = authz.create_token(store, ROOT, "service:deploy")
    assert authz.resolve_actor(store, None, token).key == "service:deploy"


@pytest.mark.parametrize("glob", ["profile:*", "*", "profile:*@/srv", "org:*@/srv/*"])
def test_a_scoped_admin_cannot_grant_beyond_its_scope(store: Store, glob: str) -> None:
    authz.add_grant(store, ROOT, ROOT.key, "admin", "*")
    authz.add_grant(store, ROOT, "service:carol", "admin", "profile:*@/srv/*")
    carol = authz.parse_actor("service:carol")
    authz.add_grant(store, carol, "alice", "plan", "profile:ws@/srv/a")
    with pytest.raises(NotAuthorizedError):
        authz.add_grant(store, carol, "service:carol", "admin", glob)


def test_two_admins_removing_each_other_at_once_leave_one(store_url: str) -> None:
    with closing(Store.open(store_url)) as setup:
        authz.add_grant(setup, ROOT, ROOT.key, "admin", "*")
        authz.add_grant(setup, ROOT, "service:other", "admin", "*")
        authz.add_grant(setup, ROOT, "service:ci", "plan", "*")
    other = authz.parse_actor("service:other")
    errors: list[BaseException] = []

    def remove(by: authz.Actor, whom: str) -> None:
        with closing(Store.open(store_url)) as own:
            try:
                authz.remove_grant(own, by, whom, "admin", "*")
            except (UsageError, NotAuthorizedError) as exc:
                errors.append(exc)

    for _ in range(5):
        threads = [
            threading.Thread(target=remove, args=(ROOT, "service:other")),
            threading.Thread(target=remove, args=(other, ROOT.key)),
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        with closing(Store.open(store_url)) as check:
            admins = [g for g in authz.grants(check) if g.permission == "admin"]
            assert len(admins) == 1, admins
            for missing, by in ((ROOT.key, other), ("service:other", ROOT)):
                if not any(g.actor == missing for g in admins):
                    authz.add_grant(check, by, missing, "admin", "*")


def test_star_is_the_only_wildcard_so_a_key_granted_as_it_is_grants_just_that_key(
    store: Store,
) -> None:
    """A root may be spelt with [ ] or ?: the grant a refusal suggests is the key itself."""
    authz.add_grant(store, ROOT, ROOT.key, "admin", "*")
    authz.add_grant(store, ROOT, "service:ci", "apply", "profile:ws@/srv/box[1]")
    ci = authz.parse_actor("service:ci")
    assert authz.allowed(store, ci, "apply", "profile:ws@/srv/box[1]")
    assert not authz.allowed(store, ci, "apply", "profile:ws@/srv/box1")
    assert authz.matches("profile:ws@/srv/a?b", "profile:*@/srv/a?b")
    assert not authz.matches("profile:ws@/srv/axb", "profile:*@/srv/a?b")
