"""A config file kept by a dotfiles manager: a symlink at the target into its folder.

stow, chezmoi (in symlink mode) and yadm-style setups make
``~/.claude/settings.json`` a link into the repository they manage. A config
resource edits through such a link only when it names the folder the link
leads into (``follow_links = ["~/dotfiles"]``): the edit lands in the file the
link finally leads to, the link stays a link, and that folder is reached from
itself down by folder descriptors, as the root is (anchor.py, ``Anchor.allow``). A link that
leads anywhere else is refused, as any link at a config target is without the
opt-in; a link retargeted after the plan was computed is a conflict.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Mapping
from typing import Any

from trueup.anchor import OutsideRoot
from trueup.errors import ConflictError
from trueup.kinds.base import ObserveContext
from trueup.model import Action, Resource

_MAX_LINKS = 40  # as the kernel's own limit on a chain of symlinks


def allowed_folders(spec: Mapping[str, Any], root: str) -> list[str]:
    """The folders ``follow_links`` names, real: ``~`` and relative paths are the
    root's (the home a profile is applied to), absolute ones as written."""
    found = []
    for folder in spec.get("follow_links", ()):
        if folder == "~" or folder.startswith("~/"):
            path = root + folder[1:]
        else:
            path = os.path.join(root, folder)  # an absolute folder stays as it is
        found.append(os.path.realpath(path))
    return found


def follow(resource: Resource, ctx: ObserveContext, path: str, link: str) -> dict[str, str] | str:
    """Where the link at ``path`` (reading ``link``) finally leads, as
    ``{"path": ..., "link": ...}``, when ``resource`` allows that folder; else why not.

    Every link on the way is witnessed (``ReadOnlyFS.follow``); the file it leads
    to is then read and written only through its allowed folder's descriptors.
    """
    final = _walk(ctx, path)
    allowed = allowed_folders(resource.spec, ctx.resolver.root)
    if not allowed:
        return (
            f"{resource.target} is a symlink to {final}, and trueup edits a config file "
            "through a link only when the resource names the folder it leads into (a "
            f'dotfiles manager\'s): add follow_links = ["{_suggested(final, ctx)}"] to '
            f"resource {resource.id!r}, or replace the link with the file"
        )
    home = next((f for f in allowed if final.startswith(f + "/")), None)
    if home is None:
        named = ", ".join(allowed)
        return (
            f"{resource.target} is a symlink to {final}, which is outside the folders "
            f"resource {resource.id!r} allows links to lead into (follow_links: {named}); "
            "trueup neither reads nor writes through it"
        )
    if not ctx.fs.allow(home):
        return f"{resource.target} is a symlink, and this file system cannot follow it safely"
    return {"path": final, "link": link}


def _walk(ctx: ObserveContext, path: str) -> str:
    """The real path the link at ``path`` leads to, each link on the way looked at
    (witnessed: a plan remembered from them is recomputed once one changes)."""
    current = path
    for _ in range(_MAX_LINKS):
        try:
            st = ctx.fs.lstat(current)
        except (OSError, OutsideRoot):
            break
        if st is None or not stat.S_ISLNK(st.st_mode):
            break
        text = ctx.fs.readlink(current)
        current = os.path.normpath(os.path.join(os.path.realpath(os.path.dirname(current)), text))
    return os.path.realpath(path)


def _suggested(final: str, ctx: ObserveContext) -> str:
    """A folder to name in ``follow_links``: the top folder the link leads into, spelt
    from ``~`` when it is under the root."""
    root = ctx.resolver.root
    if final.startswith(root + "/"):
        top = final[len(root) + 1 :].split("/")[0]
        return f"~/{top}" if "/" in final[len(root) + 1 :] else "~"
    return os.path.dirname(final)


def edited_path(action: Action | None, resource: Resource, ctx: ObserveContext) -> str:
    """The file an action on ``resource`` edits: the target, or the file its link leads to.

    With ``action``, the link must still lead where the plan saw it lead (its
    payload's ``linked``): one retargeted since is a conflict, nothing written.
    """
    path = ctx.path_str(resource.target)
    st = ctx.fs.lstat(path)
    planned = action.payload.get("linked") if action is not None else None
    if st is None or not stat.S_ISLNK(st.st_mode):
        if planned:
            raise _retargeted(resource, planned, "is no longer a symlink")
        return path
    found = follow(resource, ctx, path, ctx.fs.readlink(path))
    if isinstance(found, str):
        raise ConflictError(found, hint="compute the plan again")
    if action is not None and planned != found:
        raise _retargeted(resource, planned, f"now leads to {found['path']}")
    return found["path"]


def _retargeted(resource: Resource, planned: object, now: str) -> ConflictError:
    was = planned["path"] if isinstance(planned, Mapping) else "the file itself"
    return ConflictError(
        f"{resource.target} {now}; the plan was computed for {was}, so nothing was written",
        hint="compute the plan again and review it",
    )
