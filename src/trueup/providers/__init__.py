"""SaaS providers behind the seam: each is a client, a scope reader and its kinds.

Nothing outside this package knows a provider's wire format. The org engine
(`trueup.org`) builds one session per provider for a run and hands it to the
kinds through ``ctx.services``; the planner and executor only see kinds.
"""
