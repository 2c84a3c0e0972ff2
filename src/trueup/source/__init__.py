"""One source, many machines: signed revisions served over HTTPS to enrolled followers.

The source side (keys, revisions, store, server, admin) and the follower side
(client, enrollment, follower, sync) speak one wire format (wire.py). A
follower's apply of a revision runs through the Pipeline as one more target
(trueup.targets.follower).
"""

from __future__ import annotations

from trueup.errors import ExitCode, TrueupError


class SourceUnreachable(TrueupError):
    """The source cannot be reached or cannot be trusted: nothing on this machine was touched."""

    exit_code = ExitCode.TRANSPORT


class FollowerRefused(TrueupError):
    """The source refused this follower: revoked or unknown, or an invitation no longer valid."""

    exit_code = ExitCode.AUTH
