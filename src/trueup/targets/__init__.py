"""Targets a Pipeline runs for: a profile on a root, an org (next: a follower's revision)."""
