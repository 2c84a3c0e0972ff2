"""``trueup follow INVITE``: enroll with a single-use invitation, pinning what it names.

The invitation carries the endpoint, the sha256 of the source's TLS
certificate and of its signing key, the groups and an expiry. The
certificate is checked before the code is sent; the signing key the source
answers with must be the pinned one, or nothing is kept.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import time
from typing import Any

from trueup.errors import UsageError
from trueup.source import FollowerRefused, SourceUnreachable
from trueup.source.admin import INVITE_PREFIX
from trueup.source.client import SourceClient
from trueup.source.follower import FollowerHome, Membership
from trueup.state.store import now


def read_invitation(text: str) -> dict[str, Any]:
    """The invitation's fields, or a usage error saying it is not one."""
    text = text.strip()
    try:
        if not text.startswith(INVITE_PREFIX):
            raise ValueError
        raw = text[len(INVITE_PREFIX) :]
        fields = json.loads(base64.urlsafe_b64decode(raw + "=" * (-len(raw) % 4)))
        invitation = {
            key: fields[key] for key in ("endpoint", "tls", "signing", "groups", "code", "expires")
        }
    except (ValueError, KeyError, TypeError, binascii.Error):
        raise UsageError(
            "that is not a trueup invitation (it starts with trueup-invite:)",
            hint="copy the whole line `trueup source invite` printed on the source",
        ) from None
    return invitation


def follow(home: FollowerHome, text: str, name: str) -> Membership:
    invitation = read_invitation(text)
    if not name or len(name) > 128:
        raise UsageError("--name must be 1 to 128 characters")
    if invitation["expires"] < time.time():
        raise FollowerRefused(
            "the invitation has expired",
            hint="ask the source's operator for a new one: trueup source invite",
        )
    client = SourceClient(invitation["endpoint"], invitation["tls"])
    try:
        answer = client.request("POST", "/v1/enroll", {"code": invitation["code"], "name": name})
    finally:
        client.close()
    if answer.status != 200:
        raise UsageError(
            f"the source refused the enrollment: {answer.json().get('error', answer.status)}",
            hint="enroll under another --name (the invitation is still unused)",
        )
    body = answer.json()
    key = base64.b64decode(body["key"])
    presented = "sha256:" + hashlib.sha256(key).hexdigest()
    if presented != invitation["signing"]:
        raise SourceUnreachable(
            f"the source signs with another key ({presented}) than the invitation pins "
            f"({invitation['signing']}); nothing was kept",
            hint="ask the source's operator for a new invitation",
        )
    membership = Membership(
        name=body["name"],
        follower=body["follower"],
        endpoint=invitation["endpoint"],
        tls=invitation["tls"],
        signing=invitation["signing"],
        groups=list(body["groups"]),
        credential_in="file",
        enrolled_at=now(),
    )
    return home.keep(membership, body["credential"])
