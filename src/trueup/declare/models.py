"""The pydantic models of a profile's common parts (built only when validating)."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, model_validator

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


#: How a resource may be verified; each kind accepts those that fit it (Kind.verify_methods).
VERIFY_METHODS = ("digest", "symlink", "command", "executable-present", "credential-present")


class VerifyFields(BaseModel):
    """How a change is verified: the kind's own check (``method``), and a command that
    must exit 0 (cwd: the root), its output holding ``expect_contains`` if given."""

    model_config = ConfigDict(extra="forbid", strict=True)

    method: Literal[VERIFY_METHODS] | None = Field(  # type: ignore[valid-type]
        default=None,
        description="digest, symlink, command, executable-present or credential-present; "
        "a method that does not fit the kind is refused at load",
    )
    command: list[str] | None = Field(default=None, min_length=1)
    expect_contains: str | None = Field(
        default=None,
        min_length=1,
        description="the command's output (first 64 KiB, redacted, never kept) must hold this",
    )
    timeout: int = Field(default=600, gt=0)

    @model_validator(mode="after")
    def _command_when_needed(self) -> VerifyFields:
        if self.method == "command" and self.command is None:
            raise ValueError("method 'command' needs command")
        if self.expect_contains is not None and self.command is None:
            raise ValueError("expect_contains needs command: it checks the command's output")
        if self.method is None and self.command is None:
            raise ValueError("declare method, command, or both")
        return self


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
