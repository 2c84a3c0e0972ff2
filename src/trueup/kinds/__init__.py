"""Resource kinds, each one module behind the seam in ``trueup.kinds.base``."""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from trueup.kinds.base import Kind

# Kind name -> "module:Class". Modules load on first use, so a plan that only
# touches files never imports the config editors or a provider's client.
REGISTRY: dict[str, str] = {
    "file": "trueup.kinds.file:FileKind",
    "directory": "trueup.kinds.directory:DirectoryKind",
    "skill": "trueup.kinds.skill:SkillKind",
    "config": "trueup.kinds.config:ConfigKind",
    "tool": "trueup.kinds.tool:ToolKind",
    "credential": "trueup.kinds.credential:CredentialKind",
    "agent-task": "trueup.kinds.agent_task:AgentTaskKind",
    # Provider kinds ("provider.kind"), declared by org files, never by profiles.
    "cloudflare.dns_record": "trueup.providers.cloudflare.dns:DnsRecordKind",
    "cloudflare.email_routing": "trueup.providers.cloudflare.mail:EmailRoutingKind",
    "cloudflare.email_rule": "trueup.providers.cloudflare.mail:EmailRuleKind",
    "cloudflare.catch_all": "trueup.providers.cloudflare.mail:CatchAllKind",
    "cloudflare.email_address": "trueup.providers.cloudflare.mail:EmailAddressKind",
    "coolify.project": "trueup.providers.coolify.project:ProjectKind",
    "coolify.environment": "trueup.providers.coolify.project:EnvironmentKind",
    "coolify.application": "trueup.providers.coolify.apps:ApplicationKind",
    "coolify.signing_key": "trueup.providers.coolify.chat:SigningKeyKind",
    "zitadel.org": "trueup.providers.zitadel.identity:OrgKind",
    "zitadel.project": "trueup.providers.zitadel.identity:ProjectKind",
    "zitadel.role": "trueup.providers.zitadel.identity:RoleKind",
    "zitadel.oidc_app": "trueup.providers.zitadel.apps:OidcAppKind",
    "zitadel.project_grant": "trueup.providers.zitadel.apps:ProjectGrantKind",
}

_loaded: dict[str, Kind] = {}


def get(name: str) -> Kind:
    kind = _loaded.get(name)
    if kind is None:
        module, _, cls = REGISTRY[name].partition(":")
        kind = getattr(import_module(module), cls)()
        _loaded[name] = kind
    return kind


def names() -> list[str]:
    """The kinds a profile may declare (provider kinds belong to org files)."""
    return sorted(name for name in REGISTRY if "." not in name)


def provider_names() -> list[str]:
    return sorted(name for name in REGISTRY if "." in name)
