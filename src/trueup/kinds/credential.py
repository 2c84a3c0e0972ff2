"""The credential kind: a secret that must be present here, required by reference.

trueup never copies, stores or shows a credential: a profile names where one
must be (the OS keyring, an environment variable, a file under the root) and
trueup checks that it is there. Present is converged; anything else is a
human action with the exact command that stores it, because only a person
has the value. Observation learns presence and nothing else: a keyring
entry is fetched and dropped at once, a file is only ``lstat``-ed, so no
value reaches a plan, the state store or any output.

There is no third side: trueup never writes a credential, so it has no
record of one, and a credential dropped from the profile is left where it is.
"""

from __future__ import annotations

import os
import stat
from functools import cache
from typing import TYPE_CHECKING, Literal

from trueup.canonical import sha256_hex
from trueup.errors import UsageError
from trueup.kinds.base import Decision, Kind, ObserveContext
from trueup.model import Action, ActionType, Applied, Evidence, Observed, Resource

if TYPE_CHECKING:
    from pydantic import BaseModel

#: The permission bits a credential file may not have: anyone but its owner.
_SHARED_BITS = 0o077


@cache
def credential_fields() -> type[BaseModel]:
    from pydantic import BaseModel, ConfigDict, Field

    class CredentialFields(BaseModel):
        model_config = ConfigDict(extra="forbid", strict=True)

        store: Literal["keyring", "env", "file"] = Field(
            description="keyring: the OS keyring (name = SERVICE/USERNAME); env: an "
            "environment variable (name = VARIABLE); file: the target, a file under the "
            "root readable by its owner only"
        )
        name: str | None = Field(default=None, min_length=1)

    return CredentialFields


class CredentialKind(Kind):
    name = "credential"
    policies = ("require-local",)
    verify_methods = ("credential-present", "command")
    restorable = False  # nothing is ever written: there is nothing to restore
    witnessed = False

    def declaration_model(self) -> type[BaseModel]:
        return credential_fields()

    def check(self, resource: Resource) -> None:
        store, name = resource.spec["store"], resource.spec.get("name")
        if store == "file" and name is not None:
            raise UsageError("field 'name': a file credential is its target; drop name")
        if store == "keyring" and (name is None or "/" not in name.strip("/")):
            raise UsageError("field 'name': a keyring credential is named SERVICE/USERNAME")
        if store == "env" and (name is None or not name.replace("_", "a").isalnum()):
            raise UsageError("field 'name': an env credential names its variable, e.g. API_KEY")

    # -- observe ------------------------------------------------------------
    def observe(self, resource: Resource, ctx: ObserveContext) -> Observed:
        store, name = resource.spec["store"], resource.spec.get("name")
        if store == "env":
            present = bool(os.environ.get(str(name)))
            return _presence(resource, present)
        if store == "keyring":
            service, _, user = str(name).partition("/")
            try:
                import keyring

                present = keyring.get_password(service, user) is not None
            except Exception as exc:  # no backend, a locked keyring: the person's to fix
                return Observed("unavailable", None, {"reason": type(exc).__name__})
            return _presence(resource, present)
        path = ctx.path_str(resource.target)
        st = ctx.fs.lstat(path)
        if st is None:
            return Observed("absent", None, {"path": path})
        if not stat.S_ISREG(st.st_mode):
            return Observed("not-a-file", None, {"path": path})
        if st.st_mode & _SHARED_BITS:
            mode = f"{stat.S_IMODE(st.st_mode):04o}"
            return Observed("exposed", None, {"path": path, "mode": mode})
        if st.st_size == 0:
            return Observed("absent", None, {"path": path, "empty": True})
        return _presence(resource, True)

    # -- plan ---------------------------------------------------------------
    def plan(
        self,
        resource: Resource | None,
        observed: Observed,
        applied: Applied | None,
        force: bool = False,
    ) -> Decision:
        if resource is None:
            return Decision(ActionType.NO_OP, "no longer required; left where it is")
        where = _where(resource)
        if observed.state == "present":
            return Decision(ActionType.NO_OP, f"present in {where}")
        return Decision(ActionType.HUMAN_ACTION, _missing(resource, observed, where))

    # -- verify (nothing is ever applied: a credential is only checked) ---------
    def verify(self, action: Action, resource: Resource, ctx: ObserveContext) -> Evidence:
        seen = self.observe(resource, ctx)
        if seen.state == "present":
            return Evidence("passed", "credential-present", seen.digest)
        return Evidence(
            "failed", "credential-present", message=f"not present in {_where(resource)}"
        )


def _presence(resource: Resource, present: bool) -> Observed:
    """Present, with a digest of where (never of the value), or absent."""
    if not present:
        return Observed("absent")
    where = f"{resource.spec['store']}:{resource.spec.get('name') or resource.target}"
    return Observed("present", sha256_hex(f"credential-present:{where}".encode()))


def _where(resource: Resource) -> str:
    store, name = resource.spec["store"], resource.spec.get("name")
    if store == "keyring":
        return f"the OS keyring ({name})"
    if store == "env":
        return f"the environment variable {name}"
    return f"the file {resource.target}"


def _missing(resource: Resource, observed: Observed, where: str) -> str:
    """What is wrong, and the exact command that puts it right."""
    store, name = resource.spec["store"], resource.spec.get("name")
    if store == "keyring":
        service, _, user = str(name).partition("/")
        if observed.state == "unavailable":
            return (
                f"the OS keyring cannot be read here ({observed.detail['reason']}): unlock it "
                f"or configure a backend (`keyring --list-backends`), then store the "
                f"credential with `keyring set {service} {user}` and apply again"
            )
        return f"missing from {where}: store it with `keyring set {service} {user}`, then apply"
    if store == "env":
        return (
            f"{name} is not set: export it where trueup runs (`export {name}=...` in your "
            "shell profile, or the environment of the scheduled job), then apply again"
        )
    path = observed.detail.get("path", resource.target)
    if observed.state == "exposed":
        return (
            f"{path} is readable by others (mode {observed.detail['mode']}): "
            f"run `chmod 600 {path}`, then apply again"
        )
    if observed.state == "not-a-file":
        return f"{path} is not a regular file: put the credential in a file there by hand"
    return (
        f"{path} is {'empty' if observed.detail.get('empty') else 'missing'}: create it "
        f"readable by you only, `(umask 077; cat > {path})`, paste the credential, "
        "then apply again"
    )
