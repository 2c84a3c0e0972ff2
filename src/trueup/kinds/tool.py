"""The tool kind: a command-line tool present at an exact, pinned version.

A tool is observed by running its version command (no shell, bounded: see
process.py), never by trusting a package manager's database, and installed
by exactly one recipe for this platform. Nothing here guesses: no recipe that
can run, or two that could, is a human action that says what to run; a tool
that needs a login is a human action with the login command. Installers are
not rolled back (machine-sync.md), they are verified, and tools are never
uninstalled: a dropped tool is only forgotten.

The three sides: the declared version, the live one, and the one trueup last
installed. A live version trueup did not install (or one changed since it did)
is drift, left as it is until ``--overwrite ID``.
"""

from __future__ import annotations

import hashlib
import os
import re
import sys
from collections.abc import Mapping, Sequence
from functools import cache
from typing import TYPE_CHECKING, Any, Literal, get_args

from trueup.canonical import sha256_hex
from trueup.errors import ApplyFailedError, UsageError
from trueup.kinds.base import ApplyContext, Decision, Kind, ObserveContext
from trueup.model import Action, ActionType, Applied, Evidence, Observed, Resource
from trueup.private import write_file
from trueup.process import locate, run

if TYPE_CHECKING:
    from pydantic import BaseModel

Manager = Literal["uv", "pipx", "npm", "cargo", "apt", "brew", "winget", "download"]
MANAGERS: tuple[str, ...] = get_args(Manager)
#: The executable each package manager is run as.
_PROGRAM = {"apt": "apt-get"}
#: An exact version: no ranges, no wildcards (install only what is pinned).
_EXACT = r"^[0-9A-Za-z][0-9A-Za-z.+_-]*$"
_VERSION_IN_OUTPUT = re.compile(r"\d+(?:\.\d+)+[0-9A-Za-z.+_-]*")
#: A download larger than this is refused: no tool binary is near it.
MAX_DOWNLOAD = 512 * 1024 * 1024


def this_platform() -> str:
    """linux, macos or windows: the word a recipe's ``platform`` uses."""
    return {"darwin": "macos", "win32": "windows"}.get(sys.platform, "linux")


@cache
def tool_fields() -> type[BaseModel]:
    from pydantic import BaseModel, ConfigDict, Field, model_validator

    class Login(BaseModel):
        model_config = ConfigDict(extra="forbid", strict=True)

        check: list[str] = Field(
            min_length=1, description="a command that exits 0 when the tool is logged in"
        )
        command: str = Field(min_length=1, description="what a person runs to log in")

    class Recipe(BaseModel):
        model_config = ConfigDict(extra="forbid", strict=True)

        manager: Manager
        platform: Literal["linux", "macos", "windows", "any"] = "any"
        package: str | None = Field(default=None, min_length=1)
        url: str | None = Field(default=None, pattern=r"^https?://")
        sha256: str | None = Field(default=None, pattern=r"^[0-9a-f]{64}$")

        @model_validator(mode="after")
        def _complete(self) -> Recipe:
            if self.manager == "download":
                if self.url is None or self.sha256 is None:
                    raise ValueError("a download recipe needs url and its pinned sha256")
            elif self.package is None:
                raise ValueError(f"a {self.manager} recipe needs package")
            return self

    class ToolFields(BaseModel):
        model_config = ConfigDict(extra="forbid", strict=True)

        version: str = Field(pattern=_EXACT, description="the exact version (no ranges)")
        version_args: list[str] = Field(default_factory=lambda: ["--version"])
        recipe: list[Recipe] = Field(default_factory=list)
        prefer: Manager | None = None
        login: Login | None = None
        timeout: int = Field(default=600, gt=0, description="seconds an install may take")

    return ToolFields


def version_digest(version: str) -> str:
    return sha256_hex(f"tool-version:{version}".encode())


def install_argv(recipe: Mapping[str, Any], version: str) -> list[str]:
    """The exact command a package-manager recipe runs (never a shell line)."""
    package, manager = recipe.get("package", ""), recipe["manager"]
    return {
        "uv": ["uv", "tool", "install", f"{package}=={version}"],
        "pipx": ["pipx", "install", f"{package}=={version}"],
        "npm": ["npm", "install", "--global", f"{package}@{version}"],
        "cargo": ["cargo", "install", "--locked", package, "--version", version],
        "apt": ["apt-get", "install", "--yes", f"{package}={version}"],
        "brew": ["brew", "install", package],
        "winget": ["winget", "install", "--exact", "--id", package, "--version", version],
    }[manager]


def _shown(recipe: Mapping[str, Any], version: str, target: str) -> str:
    if recipe["manager"] == "download":
        return f"download {recipe['url']} (sha256 {recipe['sha256']}) to {target}, executable"
    argv = install_argv(recipe, version)
    return " ".join(["sudo", *argv] if recipe["manager"] == "apt" else argv)


class ToolKind(Kind):
    name = "tool"
    policies = ("ensure",)
    verify_methods = ("executable-present", "command")
    restorable = False  # an installer has no rollback: it is verified instead
    witnessed = False

    def declaration_model(self) -> type[BaseModel]:
        return tool_fields()

    def check(self, resource: Resource) -> None:
        downloads = [r for r in resource.spec["recipe"] if r["manager"] == "download"]
        if downloads and "/" not in resource.target:
            raise UsageError(
                "field 'target': a download recipe installs to a path under the root; "
                f"spell the target as one, e.g. .local/bin/{resource.target}"
            )

    # -- observe ------------------------------------------------------------
    def observe(self, resource: Resource, ctx: ObserveContext) -> Observed:
        spec = resource.spec
        where = self._where(resource, ctx)
        managers = self._usable(spec["recipe"])
        if where is None:
            return Observed("absent", None, {"managers": managers, "platform": this_platform()})
        shown = where if "/" not in resource.target else resource.target
        ran = run([where, *spec["version_args"]], timeout=30, max_output=64 * 1024, cwd=ctx.root)
        if not ran.ok:
            why = ran.problem or f"exited {ran.exit_code}"
            reason = f"{shown} {' '.join(spec['version_args'])} failed: {why}"
            return Observed("unverifiable", None, {"reason": reason, "managers": managers})
        version = _found_version(ran.output, spec["version"])
        detail: dict[str, Any] = {"version": version, "managers": managers}
        detail["platform"] = this_platform()
        if version == spec["version"] and spec.get("login"):
            detail["logged_in"] = run(spec["login"]["check"], timeout=30, max_output=4096).ok
        return Observed("present", version_digest(version) if version else None, detail)

    def _where(self, resource: Resource, ctx: ObserveContext) -> str | None:
        if "/" in resource.target:
            path = ctx.path_str(resource.target)
            return path if os.path.isfile(path) and os.access(path, os.X_OK) else None
        return locate(resource.target)

    def _usable(self, recipes: Sequence[Mapping[str, Any]]) -> list[str]:
        """The declared managers that can run here (apt only as root)."""
        found = set()
        for recipe in recipes:
            manager = recipe["manager"]
            if manager == "download" or locate(_PROGRAM.get(manager, manager)):
                found.add(manager)
        if "apt" in found and hasattr(os, "geteuid") and os.geteuid() != 0:
            found.discard("apt")
        return sorted(found)

    # -- plan ---------------------------------------------------------------
    def plan(
        self,
        resource: Resource | None,
        observed: Observed,
        applied: Applied | None,
        force: bool = False,
    ) -> Decision:
        if resource is None:
            return Decision(
                ActionType.REMOVE_RESOURCE,
                "forget it: trueup never uninstalls a tool, it stays as it is",
            )
        want = resource.spec["version"]
        if observed.state == "unverifiable":
            return Decision(
                ActionType.HUMAN_ACTION,
                f"{observed.detail['reason']}: repair or remove it by hand, then plan again",
            )
        found = observed.detail.get("version")
        if observed.state == "present" and found == want:
            if observed.detail.get("logged_in") is False:
                login = resource.spec["login"]["command"]
                return Decision(
                    ActionType.HUMAN_ACTION,
                    f"{resource.target} {want} needs a login: run `{login}`, then apply again",
                )
            return Decision(ActionType.NO_OP, f"{resource.target} {want} is installed")
        ours = applied is not None and applied.digest == observed.digest
        if observed.state == "present" and not (ours or force):
            whose = "changed since trueup installed it" if applied else "not installed by trueup"
            return Decision(
                ActionType.DRIFT_CONFLICT,
                f"drift: {resource.target} {found or '(version not recognised)'} is installed "
                f"({whose}), {want} is declared; left as it is (--overwrite {resource.id} "
                f"installs {want})",
                drift={
                    "observed": observed.digest,
                    "applied": applied.digest if applied else None,
                    "desired": version_digest(want),
                },
            )
        return self._install(resource, observed)

    def _install(self, resource: Resource, observed: Observed) -> Decision:
        spec, target = resource.spec, resource.target
        want = spec["version"]
        here = observed.detail.get("platform", this_platform())
        mine = [r for r in spec["recipe"] if r["platform"] in (here, "any")]
        usable = [r for r in mine if r["manager"] in observed.detail.get("managers", [])]
        if spec.get("prefer"):
            usable = [r for r in usable if r["manager"] == spec["prefer"]]
        if len(usable) == 1:
            recipe = usable[0]
            return Decision(
                ActionType.INSTALL_TOOL,
                f"install {target} {want} ({_shown(recipe, want, target)})",
                {"recipe": dict(recipe), "version": want},
            )
        if len(usable) > 1:
            managers = ", ".join(r["manager"] for r in usable)
            return Decision(
                ActionType.HUMAN_ACTION,
                f"ambiguous: {managers} could each install {target} {want} on {here}; "
                f'trueup does not guess: set prefer = "{usable[0]["manager"]}" (or keep one '
                "recipe for this platform), then plan again",
            )
        if not mine:
            return Decision(
                ActionType.HUMAN_ACTION,
                f"no recipe installs {target} {want} on {here}: install it by hand (or "
                "declare a recipe for this platform), then plan again",
            )
        ways = "; or ".join(_shown(r, want, target) for r in mine)
        return Decision(
            ActionType.HUMAN_ACTION,
            f"no recipe for {target} {want} can run here: run {ways}; then apply again",
        )

    # -- execute ------------------------------------------------------------
    def apply(
        self, action: Action, resource: Resource, ctx: ApplyContext
    ) -> Mapping[str, Any] | None:
        if action.type is ActionType.REMOVE_RESOURCE:
            return None
        recipe, version = action.payload["recipe"], action.payload["version"]
        if recipe["manager"] == "download":
            _install_file(ctx.path_str(resource.target), _download(recipe["url"], recipe["sha256"]))
            return None
        argv = install_argv(recipe, version)
        ran = run(argv, timeout=resource.spec["timeout"], cwd=ctx.root)
        if not ran.ok:
            raise ApplyFailedError(
                f"installing {resource.target} {version} failed "
                f"({ran.problem or f'exit {ran.exit_code}'}): run `{' '.join(argv)}` to see why"
            )
        return None

    def verify(self, action: Action, resource: Resource, ctx: ObserveContext) -> Evidence:
        if action.type is ActionType.REMOVE_RESOURCE:
            return Evidence("passed", "forgotten")
        seen = self.observe(resource, ctx)
        want = resource.spec["version"]
        if seen.state == "present" and seen.detail.get("version") == want:
            return Evidence("passed", "executable-present", seen.digest)
        found = seen.detail.get("version") or seen.detail.get("reason") or "nothing"
        return Evidence(
            "failed",
            "executable-present",
            seen.digest,
            message=f"{resource.target} {want} was installed, but found: {found}",
        )

    def record(self, action: Action, resource: Resource) -> Mapping[str, Any] | None:
        if action.type is ActionType.REMOVE_RESOURCE:
            return None
        return {"version": resource.spec["version"]}


def _found_version(output: str, want: str) -> str | None:
    """The declared version if the output names it as a word, else the first version
    the output names."""
    if re.search(rf"(?<![0-9A-Za-z.]){re.escape(want)}(?![0-9A-Za-z])", output):
        return want
    match = _VERSION_IN_OUTPUT.search(output)
    return match.group(0) if match else None


def _install_file(path: str, data: bytes) -> None:
    """Put an executable at ``path`` whole: written beside it, then renamed over it.

    Not staged through the run's writer: an installer is not rolled back, and a
    tool's binary is no file of the profile's to restore.
    """
    os.makedirs(os.path.dirname(path), exist_ok=True)
    temp = f"{path}.trueup-{os.getpid()}.tmp"
    try:
        write_file(temp, data, 0o755)
        os.replace(temp, path)
    finally:
        if os.path.exists(temp):
            os.unlink(temp)


def _download(url: str, sha256: str) -> bytes:
    """The bytes at ``url``, refused unless their sha256 is the pinned one."""
    import httpx

    digest = hashlib.sha256()
    chunks = bytearray()
    try:
        with httpx.stream("GET", url, follow_redirects=True, timeout=60) as response:
            response.raise_for_status()
            for chunk in response.iter_bytes():
                digest.update(chunk)
                chunks += chunk
                if len(chunks) > MAX_DOWNLOAD:
                    raise ApplyFailedError(f"{url} is larger than {MAX_DOWNLOAD} bytes")
    except httpx.HTTPError as exc:
        raise ApplyFailedError(f"downloading {url} failed: {exc}") from None
    if digest.hexdigest() != sha256:
        raise ApplyFailedError(
            f"{url} does not have the pinned sha256 {sha256} (got {digest.hexdigest()}); "
            "nothing was installed"
        )
    return bytes(chunks)
