"""Declarations (profiles, orgs) parsed and validated into resources."""
