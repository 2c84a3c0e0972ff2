"""The planner: a pure function of resources, observations and applied records."""
