"""A profile as loaded: its identity and validated resources.

Apart from declare/profile.py, which reads and validates profile files, so
that what only holds a profile (a remembered plan, a run's records) does not
load the parsers and the planner with it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from trueup.model import Resource


@dataclass(frozen=True)
class Profile:
    id: str
    name: str
    path: Path
    resources: tuple[Resource, ...]
    digest: str
