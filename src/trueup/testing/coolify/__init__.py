"""Fake Coolify API: servers, projects, environments, applications, env vars."""

from trueup.testing.coolify.app import DEFAULT_TOKEN, PROFILE, create_app
from trueup.testing.coolify.base import API_PREFIX
from trueup.testing.coolify.state import CoolifyState

__all__ = ["API_PREFIX", "DEFAULT_TOKEN", "PROFILE", "CoolifyState", "create_app"]
