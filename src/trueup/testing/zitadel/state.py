"""The complete ZITADEL fake state."""

from __future__ import annotations

from trueup.testing.zitadel.apps import AppsMixin


class ZitadelState(AppsMixin):
    """Orgs, projects, roles, OIDC apps and project grants of one fake instance.

    The token acts in `default_org_id` unless a request sends
    ``x-zitadel-orgid``; seed further orgs with `add_org`.
    """
