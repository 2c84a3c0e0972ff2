"""Fake ZITADEL: orgs, projects, roles, OIDC apps and project grants."""

from trueup.testing.zitadel.app import DEFAULT_TOKEN, ORG_HEADER, PROFILE, create_app
from trueup.testing.zitadel.base import MGMT_PREFIX, V2_PREFIX
from trueup.testing.zitadel.state import ZitadelState

__all__ = [
    "DEFAULT_TOKEN",
    "MGMT_PREFIX",
    "ORG_HEADER",
    "PROFILE",
    "V2_PREFIX",
    "ZitadelState",
    "create_app",
]
