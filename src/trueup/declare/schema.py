"""JSON Schema of declaration files, built from the same models that validate them."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, create_model

from trueup import kinds
from trueup.declare.models import CommonFields, ProfileMeta
from trueup.errors import UsageError
from trueup.kinds.formats import MAX_KEY_DEPTH, RESERVED_SEGMENTS


def _resource_model(name: str) -> type[BaseModel]:
    kind = kinds.get(name)
    fields = kind.declaration_model()
    policy_type: Any = Literal[kind.policies]
    kind_type: Any = Literal[name]
    return create_model(
        f"{name.title()}Resource",
        __base__=(CommonFields, fields),
        kind=(kind_type, ...),
        policy=(
            policy_type | None,
            Field(default=None, description=f"default {kind.default_policy}"),
        ),
    )


def profile_schema() -> dict[str, Any]:
    resource_models = tuple(_resource_model(name) for name in kinds.names())
    union: Any = resource_models[0]
    for model in resource_models[1:]:
        union = union | model

    class ProfileFile(BaseModel):
        model_config = ConfigDict(extra="forbid", title="trueup profile")

        profile: ProfileMeta
        resource: list[union] = Field(default_factory=list)

    return _with_rules_pydantic_cannot_spell(ProfileFile.model_json_schema())


# What the loader checks beyond the models' types (paths.normalise_target, the
# file kind's one origin and NUL-free link, key paths), spelt for editors. JSON
# Schema's regexes are ECMA 262: lookaheads are fine there, though pydantic's own
# validator lacks them.
_TARGET = r"^(?![/\\])(?![A-Za-z]:)(?!(?:.*[/\\])?\.\.(?:[/\\]|$))(?=.*[^/.\s])[^*?\[\]\x00]+$"
# A symlink target (file_fields' link validator): no NUL anywhere.
_NO_NUL = r"^[^\x00]*$"
# A key path (formats.parse_key_path): segments, bare or in double quotes (where
# dots, quotes and backslashes may appear), none empty, reserved or holding NUL,
# at most MAX_KEY_DEPTH of them.
_RESERVED = '(?!"?(?:' + "|".join(sorted(RESERVED_SEGMENTS)) + ')"?(?:\\.|$))'
_SEGMENT = _RESERVED + r'(?:"(?:[^"\\\x00]|\\["\\])+"|[^."\s\x00](?:[^."\x00]*[^."\s\x00])?)'
_KEY_PATH = rf"^{_SEGMENT}(?:\.{_SEGMENT}){{0,{MAX_KEY_DEPTH - 1}}}$"


def _declared(field: str) -> dict[str, Any]:
    """A field given a value: the loader reads an explicit null as absent (file_fields'
    one-origin check counts only values that are not None), so `required` alone, which
    a null satisfies, would let the schema and the loader disagree."""
    return {"required": [field], "properties": {field: {"not": {"type": "null"}}}}


def _with_rules_pydantic_cannot_spell(schema: dict[str, Any]) -> dict[str, Any]:
    for name, model in schema["$defs"].items():
        if not name.endswith("Resource"):
            continue
        model["properties"]["target"]["pattern"] = _TARGET
        if name == "FileResource":
            model["oneOf"] = [_declared(origin) for origin in ("content", "source", "link")]
            model["properties"]["link"]["pattern"] = _NO_NUL
            model["if"] = _declared("link")
            model["then"] = {"properties": {"policy": {"not": {"const": "append-local"}}}}
        if name == "ConfigResource":
            model["properties"]["keys"]["propertyNames"] = {"pattern": _KEY_PATH}
            model["properties"]["overlay"]["items"]["pattern"] = _KEY_PATH
    return schema


def schema_for(what: str) -> dict[str, Any]:
    if what == "profile":
        return profile_schema()
    if what == "org":
        from trueup.org.declared import OrgFile

        return OrgFile.model_json_schema()
    if what == "doctor":
        import json

        from trueup.doctor import schema_path

        document: dict[str, Any] = json.loads(schema_path().read_text())
        return document
    raise UsageError(f"unknown schema {what!r}; expected: profile, org or doctor")
