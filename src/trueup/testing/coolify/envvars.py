"""Coolify application environment variables.

Keys are unique per application and per preview flag: creating an existing
key is a 409 (use PATCH), PATCH needs an existing key (404 otherwise), and
``PATCH .../envs/bulk`` upserts a list of them.

Values are sensitive: the API answers ``value`` and ``real_value`` only to a
token with the ``root`` or ``read:sensitive`` ability (whose user is a team
admin); to any other token both fields are left out of every variable, as
Coolify's ``removeSensitiveData`` does.
"""

from __future__ import annotations

from trueup.testing._util import FakeHTTPError, cuid, laravel_time
from trueup.testing.coolify.base import CoolifyStore, laravel_bool, not_found
from trueup.testing.coolify.validation import validate
from trueup.testing.store import JSON

ENV_EXISTS = "Environment variable already exists. Use PATCH request to update it."
ENV_RULES = {
    "key": "string|required",
    "value": "string|nullable",
    "is_preview": "boolean",
    "is_build_time": "boolean",
    "is_literal": "boolean",
    "is_multiline": "boolean",
    "is_shown_once": "boolean",
}
ENV_FLAGS = ("is_preview", "is_build_time", "is_literal", "is_multiline", "is_shown_once")
#: Token abilities that may read sensitive values.
SENSITIVE_READERS = frozenset({"root", "read:sensitive"})


def _env_key(raw: str) -> str:
    return raw.strip().replace(" ", "_")


class EnvVarsMixin(CoolifyStore):
    """``/applications/{uuid}/envs`` behaviour."""

    def set_token_abilities(self, *abilities: str) -> None:
        """What the API token may do from now on (e.g. ``"read", "write", "deploy"``)."""
        with self._write() as data:
            data["token_abilities"] = list(abilities)

    def list_envs(self, uuid: str, *, as_token: bool = False) -> list[JSON]:
        """Every variable; ``as_token``: as the API answers the token (values hidden
        from a token that may not read sensitive data)."""
        with self._read() as data:
            self._app(data, uuid)
            envs = sorted(data["envs"][uuid].values(), key=lambda e: (e["is_preview"], e["id"]))
            hidden = as_token and not SENSITIVE_READERS & set(data["token_abilities"])
            hide = {"value", "real_value"} if hidden else set()
            return [{k: v for k, v in e.items() if k not in hide} for e in envs]

    def create_env(self, uuid: str, body: JSON) -> JSON:
        with self._write() as data:
            self._app(data, uuid)
            validate(body, ENV_RULES, ENV_RULES)
            if self._env_by_key(data, uuid, body["key"], laravel_bool(body.get("is_preview"))):
                raise FakeHTTPError(409, {"message": ENV_EXISTS})
            return {"uuid": self._new_env(data, uuid, body)["uuid"]}

    def update_env(self, uuid: str, body: JSON) -> JSON:
        with self._write() as data:
            self._app(data, uuid)
            validate(body, ENV_RULES, ENV_RULES)
            env = self._env_by_key(data, uuid, body["key"], laravel_bool(body.get("is_preview")))
            if env is None:
                raise not_found("Environment variable")
            _apply_env(env, body)
            return dict(env)

    def bulk_envs(self, uuid: str, body: JSON) -> list[JSON]:
        with self._write() as data:
            self._app(data, uuid)
            items = body.get("data")
            if not items:
                raise FakeHTTPError(400, {"message": "Bulk data is required."})
            if not isinstance(items, list) or not all(isinstance(i, dict) for i in items):
                raise FakeHTTPError(
                    422,
                    {
                        "message": "Validation failed.",
                        "errors": {"data": ["The data field must be an array."]},
                    },
                )
            validate(body, {"data": "required|array"}, ("data",))
            for item in items:
                validate(item, ENV_RULES, ENV_RULES)
            out = []
            for item in items:
                env = self._env_by_key(
                    data, uuid, item["key"], laravel_bool(item.get("is_preview"))
                )
                if env is None:
                    env = self._new_env(data, uuid, item)
                else:
                    _apply_env(env, item)
                out.append(dict(env))
            return out

    def delete_env(self, uuid: str, env_uuid: str) -> JSON:
        with self._write() as data:
            self._app(data, uuid)
            if env_uuid not in data["envs"][uuid]:
                raise not_found("Environment variable")
            del data["envs"][uuid][env_uuid]
            return {"message": "Environment variable deleted."}

    def _env_by_key(self, data: JSON, uuid: str, key: str, preview: bool) -> JSON | None:
        wanted = _env_key(key)
        for env in data["envs"][uuid].values():
            if env["key"] == wanted and env["is_preview"] is preview:
                found: JSON = env
                return found
        return None

    def _new_env(self, data: JSON, uuid: str, body: JSON) -> JSON:
        now = laravel_time()
        env: JSON = {
            "id": self._next_id(data),
            "uuid": cuid(),
            "key": _env_key(body["key"]),
            "value": body.get("value"),
            "real_value": body.get("value"),
            **{flag: laravel_bool(body.get(flag)) for flag in ENV_FLAGS},
            "created_at": now,
            "updated_at": now,
        }
        data["envs"][uuid][env["uuid"]] = env
        return env


def _apply_env(env: JSON, body: JSON) -> None:
    env["value"] = body.get("value")
    env["real_value"] = body.get("value")
    for flag in ENV_FLAGS:
        if flag in body:
            env[flag] = laravel_bool(body[flag])
    env["updated_at"] = laravel_time()
