"""ZITADEL: one organization's projects, roles, OIDC apps and project grants."""
