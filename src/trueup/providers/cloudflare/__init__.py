"""Cloudflare: DNS records and Email Routing of one zone (API v4 over httpx)."""
