"""The complete Coolify fake state."""

from __future__ import annotations

from trueup.testing.coolify.applications import ApplicationsMixin
from trueup.testing.coolify.envvars import EnvVarsMixin


class CoolifyState(ApplicationsMixin, EnvVarsMixin):
    """Servers, projects, environments, applications and env vars of one fake team.

    One server is seeded (`server_uuid`); add more with `add_server`. Every
    queued deployment is kept in `deployments` so tests can assert on them.
    """
