"""The pydantic models of a profile's common parts (built only when validating)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from trueup.declare.plain import ID_PATTERN


class ProfileMeta(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    id: str = Field(pattern=ID_PATTERN)
    name: str = Field(min_length=1)
    description: str | None = None
    groups: list[str] = Field(default_factory=list)


class VerifyFields(BaseModel):
    """Extra verification after a change: a command that must exit 0 (cwd: the root)."""

    model_config = ConfigDict(extra="forbid", strict=True)

    command: list[str] = Field(min_length=1)
    timeout: int = Field(default=600, gt=0)


class CommonFields(BaseModel):
    """The fields every resource has, whatever its kind."""

    model_config = ConfigDict(extra="forbid", strict=True)

    id: str = Field(pattern=ID_PATTERN)
    kind: str
    target: str
    policy: str | None = None
    depends_on: list[str] = Field(default_factory=list)
    groups: list[str] = Field(default_factory=list)
    verify: VerifyFields | None = None


COMMON = frozenset(CommonFields.model_fields)
