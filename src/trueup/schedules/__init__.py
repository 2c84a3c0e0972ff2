"""Native, user-level schedules that run trueup by itself: no resident daemon.

``spec`` reads what a person types (``daily@09:30``), ``native`` writes what
each platform's scheduler reads (a systemd user timer, a launchd agent, a
Task Scheduler task), and ``installer`` puts those files in place as a
profile of its own, through the same pipeline as any other change.
"""
