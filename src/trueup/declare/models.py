"""The pydantic models of a profile's common parts (built only when validating)."""

from __future__ import annotations

from typing import Annotated

from pydantic import AfterValidator, BaseModel, ConfigDict, Field

#: What an id may be: a letter or digit, then letters, digits and ``._:-``.
ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._:-]*$"


def _no_nul(path: str) -> str:
    if "\0" in path:
        raise ValueError("a path cannot contain a NUL character")
    return path


FolderPath = Annotated[str, Field(min_length=1), AfterValidator(_no_nul)]


class ProfileMeta(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    id: str = Field(pattern=ID_PATTERN)
    name: str = Field(min_length=1)
    description: str | None = None
    groups: list[str] = Field(default_factory=list)
    allow_sources_outside: list[FolderPath] = Field(
        default_factory=list,
        description="folders outside this file's folder that sources may be read from "
        "(relative to it, or absolute; symlinks resolved); none by default",
    )


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
