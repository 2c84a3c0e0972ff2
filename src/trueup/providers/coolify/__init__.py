"""Coolify: one project's environments, applications and the chat signing key."""
