"""Where the real-world config corpus is, for tests that read it when it is there.

The corpus (``shared/realconfigs``, beside the repository; ``SOURCES.md`` says
where each file came from) is other projects' files: it is read in place, never
copied into this repository, and tests that use it skip when it is absent.
"""

from __future__ import annotations

from pathlib import Path

import pytest

_CANDIDATES = (
    Path(__file__).resolve().parents[3].parent / "shared" / "realconfigs",
    Path("/work/shared/realconfigs"),
)


def corpus(*suffixes: str) -> list[Path]:
    """The corpus files ending in one of ``suffixes``; skips the test if there are none."""
    for folder in _CANDIDATES:
        if folder.is_dir():
            found = sorted(p for p in folder.iterdir() if p.name.endswith(suffixes))
            if found:
                return found
    pytest.skip("the real-world config corpus (shared/realconfigs) is not here")
