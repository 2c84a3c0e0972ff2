"""JSON Schema of declaration files, built from the same models that validate them."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, create_model

from trueup import kinds
from trueup.declare.models import CommonFields, ProfileMeta
from trueup.errors import UsageError


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

    return ProfileFile.model_json_schema()


def schema_for(what: str) -> dict[str, Any]:
    if what == "profile":
        return profile_schema()
    if what == "org":
        from trueup.org.declared import OrgFile

        return OrgFile.model_json_schema()
    raise UsageError(f"unknown schema {what!r}; expected: profile or org")
