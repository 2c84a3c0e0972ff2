"""Saved plans (``trueup plan -o``): written atomically, read back only if intact.

A saved plan is what a person reviewed; applying it later must apply exactly
that or refuse. Its digest covers the observed state, so the gates can tell
when the world moved; this module only guards the file itself.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import TYPE_CHECKING

from trueup.canonical import as_json, digest
from trueup.errors import UsageError
from trueup.model import Plan

if TYPE_CHECKING:
    from trueup.session import Session

SAVED_PLAN_SCHEMA = "trueup.saved-plan/1"
# Any version: a plan saved by another trueup is named as such, not read as a profile.
_SAVED_PLAN_END = re.compile(rb'"schema"\s*:\s*"trueup\.saved-plan/[^"\\]*"\s*}\s*$')


def save_plan(plan: Plan, path: Path) -> None:
    """Write a saved plan, atomically; never over a file that is not one.

    A mistyped ``-o`` must not replace the profile, one of its sources or
    anything else that happens to be there.
    """
    if path.is_dir():
        raise UsageError(f"-o {path}: is a folder", hint="name a file, e.g. -o plan.json")
    if path.exists() and not is_saved_plan(path):
        raise UsageError(
            f"-o {path}: refusing to overwrite a file that is not a trueup saved plan",
            hint="name a new file, e.g. -o plan.json",
        )
    document = {"schema": SAVED_PLAN_SCHEMA, "digest": plan.digest, "plan": plan.body()}
    data = json.dumps(document, indent=2, sort_keys=True, default=as_json).encode()
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    try:
        tmp.write_bytes(data)
        os.replace(tmp, path)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise UsageError(
            f"-o {path}: cannot write the plan there: {exc.strerror or exc}",
            hint="name a file in a folder that exists and that you can write to",
        ) from None


def load_saved_plan(session: Session, path: Path) -> Plan:
    """The plan saved at ``path``; a damaged one, or one whose source is gone, is refused.

    Refusals name the plan's target, so they are audited against it.
    """
    try:
        document = json.loads(path.read_bytes())
        schema = document.get("schema")
        if schema != SAVED_PLAN_SCHEMA:
            raise ValueError(
                f"it is a {schema!r} plan, and this trueup reads {SAVED_PLAN_SCHEMA} only: "
                "compute the plan again with this trueup"
                if str(schema).startswith("trueup.saved-plan/")
                else f"schema is {schema!r}, not {SAVED_PLAN_SCHEMA}"
            )
        plan = Plan.from_body(document["plan"])
        texts = (plan.source, plan.declaration, plan.target.location, plan.target.id)
        if not all(isinstance(text, str) for text in texts):
            raise ValueError("its source, declaration and target must be strings")
        recorded = document["digest"]
    except KeyError as exc:  # str(KeyError) is only the quoted key
        raise UsageError(f"{path}: not a trueup saved plan: no field {exc}") from None
    except (OSError, ValueError, TypeError, AttributeError) as exc:
        raise UsageError(f"{path}: not a trueup saved plan: {exc}") from None
    if digest(document["plan"]) != recorded or plan.digest != recorded:
        # Bad input, not a world that moved: the file was edited or damaged. The
        # target it names is audited with the refusal, as the digest it claims.
        raise session.gates(plan.target, "plan.applied", str(recorded)).refuse(
            UsageError(
                f"{path}: the plan's content does not match its digest (the file was "
                "edited or damaged); nothing was changed",
                hint=f"compute the plan again: {plan_command(plan)}",
            )
        )
    if not os.path.exists(plan.source):  # its target is known: the refusal is audited
        raise session.gates(plan.target, "plan.applied", plan.digest).refuse(
            UsageError(
                f"{path}: the plan was computed from {plan.source}, which is not there "
                "any more; nothing was changed",
                hint="put it back, or compute the plan again from where it is: "
                + plan_command(plan),
            )
        )
    return plan


def plan_command(plan: Plan) -> str:
    """The command that computes a plan like ``plan`` again."""
    if plan.target.kind == "org":
        return "trueup org plan ORG.toml -o PLAN.json"
    return f"trueup plan PROFILE --root {plan.target.location} -o PLAN.json"


def is_saved_plan(path: Path) -> bool:
    """Whether ``path`` is a saved plan: its last member is a saved-plan ``schema``.

    Keys are sorted, so ``schema`` comes last; right before the closing brace
    of a valid document it is a member of the outermost object, which no
    profile has (a profile mentioning the schema's name elsewhere is a profile).
    Read from the end only: a saved plan of 10,000 actions is megabytes.
    """
    if path.suffix.lower() != ".json":
        return False
    try:
        with open(path, "rb") as handle:
            handle.seek(max(0, handle.seek(0, os.SEEK_END) - 4096))
            tail = handle.read(4096)
    except OSError:
        return False
    return _SAVED_PLAN_END.search(tail) is not None
