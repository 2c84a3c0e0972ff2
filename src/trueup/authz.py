"""Who is acting, and whether they may: actors, grants and service tokens.

An actor is the OS user by default (a human), or a service identity claimed
with ``--actor NAME`` / ``TRUEUP_ACTOR``, or proved with a token in
``TRUEUP_TOKEN`` (only the token's sha256 is stored). A service that has a
token must present it: claiming its name is not enough.

Grants say what an actor may do where: ``plan``, ``apply`` (implies plan) or
``admin`` (implies everything, including managing grants and reading the
audit log) on targets whose key matches a glob, e.g. ``profile:workstation@*``
or ``org:acme*``. With no grants at all a single-user machine works as it
always did: everyone is admin. Once any grant exists, every command checks.

These checks are guard rails and accountability for people who share a state
store, not a defence against someone who can write to the database itself;
that is what the database's own roles are for (and the audit chain shows
tampering).
"""

from __future__ import annotations

import getpass
import hashlib
import os
import re
import secrets
from dataclasses import dataclass
from typing import Any

from trueup.errors import NotAuthorizedError, UsageError
from trueup.state.db import UniqueViolation
from trueup.state.store import Store, now

PERMISSIONS = ("plan", "apply", "admin")
_IMPLIED = {"plan": {"plan"}, "apply": {"plan", "apply"}, "admin": set(PERMISSIONS)}
ANY_TARGET = "*"
TOKEN_ENV = "TRUEUP_TOKEN"
_REVOKED = "revoked-"  # 8 + 56 characters: a token_hash no sha256 (hex) can equal


@dataclass(frozen=True, slots=True)
class Actor:
    """Someone or something acting: a ``human`` or a ``service``."""

    type: str
    id: str
    name: str

    @property
    def key(self) -> str:
        """How grants and run rows name this actor: ``user:alice``, ``service:ci``."""
        return f"{'user' if self.type == 'human' else 'service'}:{self.id}"

    def to_json(self) -> dict[str, str]:
        return {"type": self.type, "id": self.id, "name": self.name}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Actor:
        return cls(type=data["type"], id=data["id"], name=data["name"])


@dataclass(frozen=True, slots=True)
class Grant:
    actor: str
    permission: str
    target_glob: str
    created_by: str
    created_at: str

    def to_json(self) -> dict[str, str]:
        return {
            "actor": self.actor,
            "permission": self.permission,
            "target": self.target_glob,
            "created_by": self.created_by,
            "created_at": self.created_at,
        }


def os_user_name() -> str:
    try:
        return getpass.getuser()
    except Exception:
        return f"uid-{os.getuid()}"


def _display_name(user: str) -> str:
    try:
        import pwd

        gecos = pwd.getpwnam(user).pw_gecos.split(",")[0].strip()
    except (ImportError, KeyError):
        return user
    return gecos or user


def os_actor() -> Actor:
    user = os_user_name()
    return Actor("human", user, _display_name(user))


def parse_actor(text: str, default_type: str = "human") -> Actor:
    """``user:NAME`` (or ``human:NAME``), ``service:NAME``, or a bare NAME of ``default_type``."""
    prefix, sep, name = text.partition(":")
    if not sep:
        prefix, name = ("user" if default_type == "human" else "service"), text
    kind = {"user": "human", "human": "human", "service": "service"}.get(prefix)
    if kind is None or not name or any(c.isspace() for c in name):
        raise UsageError(
            f"not an actor: {text!r}", hint="write user:NAME or service:NAME, e.g. service:ci"
        )
    return Actor(kind, name, _display_name(name) if kind == "human" else name)


def token_hash(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def resolve_actor(store: Store, claim: str | None, token: str | None, named: bool = False) -> Actor:
    """The acting identity: a token proves a service; a claim names one; else the OS user.

    ``named`` (the command line): a claimed service must be one a grant or a
    token names, so that a typo never acts, or is audited, as nobody at all.
    """
    if token:
        row = store.db.one(
            "SELECT actor FROM actor_tokens WHERE token_hash = :h", {"h": token_hash(token)}
        )
        if row is None:
            raise NotAuthorizedError(
                f"{TOKEN_ENV} is not a known token (revoked or mistyped)",
                hint="ask an admin for a token: trueup token create service:NAME",
            )
        actor = parse_actor(str(row[0]), "service")
        if claim and parse_actor(claim, "service").key != actor.key:
            raise NotAuthorizedError(f"{TOKEN_ENV} belongs to {actor.key}, not {claim}")
        return actor
    if claim:
        actor = parse_actor(claim, "service")
        me = os_actor()
        if actor.type == "human":
            if actor.id != me.id:
                raise NotAuthorizedError(
                    f"--actor {claim}: a person acts as their own OS user (here {me.key}); "
                    "--actor claims a service identity",
                    hint="write --actor service:NAME, or run trueup as that person",
                )
            return me
        held = store.db.one(
            "SELECT token_hash FROM actor_tokens WHERE actor = :a", {"a": actor.key}
        )
        if held is not None and str(held[0]).startswith(_REVOKED):
            raise NotAuthorizedError(
                f"{actor.key}'s token was revoked: acting as it needs a new one",
                hint=f"an admin can issue one: trueup token create {actor.key}",
            )
        if held is not None:
            raise NotAuthorizedError(
                f"{actor.key} has a token: acting as it needs {TOKEN_ENV}",
                hint=f"set {TOKEN_ENV} to the token issued for {actor.key}",
            )
        known = store.db.one("SELECT actor FROM grants WHERE actor = :a", {"a": actor.key})
        if named and known is None:
            first = store.db.one("SELECT actor FROM grants") is None
            yourself = f"trueup grant add {os_actor().key} admin '*', then " if first else ""
            raise NotAuthorizedError(
                f"--actor {actor.key}: no grant or token names this service",
                hint=f"an admin names it first: {yourself}"
                f"trueup grant add {actor.key} apply 'TARGET'",
            )
        return actor
    return os_actor()


# -- checking -------------------------------------------------------------
def grants(store: Store) -> list[Grant]:
    rows = store.db.execute(
        "SELECT actor, permission, target_glob, created_by, created_at FROM grants "
        "ORDER BY actor, permission, target_glob"
    )
    return [Grant(*(str(v) for v in row)) for row in rows]


def allowed(store: Store, actor: Actor, permission: str, target_key: str) -> bool:
    """Whether ``actor`` may ``permission`` on the target keyed ``target_key``."""
    rows = store.db.execute("SELECT actor, permission, target_glob FROM grants")
    if not rows:
        return True
    return any(
        who == actor.key and permission in _IMPLIED[perm] and matches(target_key, glob)
        for who, perm, glob in rows
    )


def require(store: Store, actor: Actor, permission: str, target_key: str) -> None:
    if not allowed(store, actor, permission, target_key):
        raise NotAuthorizedError(
            f"{actor.key} may not {permission} {target_key}",
            hint=f"an admin can allow it: trueup grant add {actor.key} {permission} '{target_key}'",
        )


def require_admin(store: Store, actor: Actor, glob: str = ANY_TARGET) -> None:
    """Admin over ``glob``: every target it can match must fall under the actor's admin globs.

    An admin of every target passes. Otherwise the glob's own text must match
    one of the actor's admin globs, which proves containment because ``*`` is
    the only wildcard (``matches``).
    """
    if _is_any(store, actor):
        return
    rows = store.db.execute(
        "SELECT target_glob FROM grants WHERE actor = :a AND permission = 'admin'",
        {"a": actor.key},
    )
    if any(matches(glob, str(r[0])) for r in rows):
        return
    raise NotAuthorizedError(
        f"{actor.key} may not administer {glob}", hint="an admin of that scope can do it"
    )


def _is_any(store: Store, actor: Actor) -> bool:
    """Admin of every target: no grants at all, or an admin grant of ``*``."""
    if not store.db.one("SELECT 1 FROM grants"):
        return True
    return (
        store.db.one(
            "SELECT 1 FROM grants WHERE actor = :a AND permission = 'admin' AND target_glob = '*'",
            {"a": actor.key},
        )
        is not None
    )


def matches(target_key: str, glob: str) -> bool:
    """Whether ``glob`` matches the key, ``*`` its only wildcard: a root may hold ``[``
    or ``?``, and the grant a refusal suggests (the key itself) must grant that key."""
    pattern = ".*".join(re.escape(part) for part in glob.split("*"))
    return re.fullmatch(pattern, target_key, re.DOTALL) is not None


# -- managing -------------------------------------------------------------
def add_grant(store: Store, by: Actor, actor_text: str, permission: str, glob: str) -> Grant:
    """Grant a permission; the first grant must keep its author admin of everything."""
    who = parse_actor(actor_text)
    if permission not in PERMISSIONS:
        raise UsageError(f"unknown permission {permission!r}; use one of {', '.join(PERMISSIONS)}")
    if not glob.strip():
        raise UsageError("the target glob is empty; use '*' for every target")
    with store.db.transaction():
        _serialise_grant_changes(store)
        if not store.db.one("SELECT 1 FROM grants"):
            if not (who.key == by.key and permission == "admin" and glob == ANY_TARGET):
                raise UsageError(
                    "the first grant turns authorization on; it must make you admin of every "
                    "target, or nobody could manage grants afterwards",
                    hint=f"run first: trueup grant add {by.key} admin '*'",
                )
        else:
            require_admin(store, by, glob)
        grant = Grant(who.key, permission, glob, by.key, now())
        try:
            store.db.execute(
                "INSERT INTO grants (actor, permission, target_glob, created_by, created_at) "
                "VALUES (:actor, :permission, :glob, :by, :at)",
                {
                    "actor": grant.actor,
                    "permission": permission,
                    "glob": glob,
                    "by": by.key,
                    "at": grant.created_at,
                },
            )
        except UniqueViolation:
            raise UsageError(f"{who.key} already has {permission} on {glob!r}") from None
    return grant


def remove_grant(store: Store, by: Actor, actor_text: str, permission: str, glob: str) -> None:
    """Remove one grant; refuse to remove the last admin of everything while others remain."""
    who = parse_actor(actor_text)
    with store.db.transaction():
        _serialise_grant_changes(store)
        require_admin(store, by, glob)
        params = {"actor": who.key, "permission": permission, "glob": glob}
        if not store.db.one(
            "SELECT 1 FROM grants WHERE actor = :actor AND permission = :permission "
            "AND target_glob = :glob",
            params,
        ):
            raise UsageError(f"no grant of {permission} on {glob!r} to {who.key}")
        store.db.execute(
            "DELETE FROM grants WHERE actor = :actor AND permission = :permission "
            "AND target_glob = :glob",
            params,
        )
        left = grants(store)
        if left and not any(g.permission == "admin" and g.target_glob == ANY_TARGET for g in left):
            raise UsageError(
                "that would leave grants but no admin of every target, and nobody could manage "
                "them; grant another admin first, or remove the other grants"
            )


_GRANTS_LOCK = 0x7472_7565_6772  # "truegr": one PostgreSQL advisory lock for grant changes


def _serialise_grant_changes(store: Store) -> None:
    """One grant change at a time: two admins removing each other must not both succeed.

    SQLite serialises write transactions already; PostgreSQL's read committed
    would let each removal see the other admin still there.
    """
    if store.db.dialect == "postgresql":
        store.db.execute("SELECT pg_advisory_xact_lock(:key)", {"key": _GRANTS_LOCK})


def create_token(store: Store, by: Actor, service: str) -> str:
    """Issue (or replace) a service's token; returns it once, stores only its hash."""
    who = parse_actor(service, "service")
    if who.type != "service":
        raise UsageError("tokens are for services: name one as service:NAME")
    require_admin(store, by)
    token = "tu_" + secrets.token_urlsafe(32)
    with store.db.transaction():
        store.db.execute("DELETE FROM actor_tokens WHERE actor = :a", {"a": who.key})
        store.db.execute(
            "INSERT INTO actor_tokens (actor, token_hash, created_by, created_at) "
            "VALUES (:a, :h, :by, :at)",
            {"a": who.key, "h": token_hash(token), "by": by.key, "at": now()},
        )
    return token


def revoke_token(store: Store, by: Actor, service: str) -> bool:
    """Revoke a service's token; the service stays one that must present a token.

    Deleting the row would turn the service back into a name anyone may claim.
    The row keeps a hash no token can have (not hex), until a new token is made.
    """
    who = parse_actor(service, "service")
    require_admin(store, by)
    with store.db.transaction():
        found = store.db.one("SELECT token_hash FROM actor_tokens WHERE actor = :a", {"a": who.key})
        if found is not None and not str(found[0]).startswith(_REVOKED):
            store.db.execute(
                "UPDATE actor_tokens SET token_hash = :h WHERE actor = :a",
                {"a": who.key, "h": _REVOKED + secrets.token_hex(28)},
            )
    return found is not None and not str(found[0]).startswith(_REVOKED)
