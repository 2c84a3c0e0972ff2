"""Where a profile's declared sources are, spelt one way for everything that reads them.

Resolution reads and hashes each ``source``; a second process reads them
ahead (readahead.py), even before the CLI is imported. All of them spell a
source as this module does, so what one read, the others look up by name.
The standard library only: the read-ahead runs it in a bare interpreter.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from trueup.fsops import POSIX_PATHS


@functools.lru_cache(maxsize=1 << 16)
def source_path(base_dir: Path | str, source: str) -> str:
    """Where a declared ``source`` is: absolute and normal (``ReadOnlyFS.follow`` need
    not spell it again).

    ``base_dir`` is absolute and normal (a profile's folder). A plain relative
    source (no ".", "..", "//" or trailing "/") is then normal once joined to
    it, which saves normalising 10,000 paths before the read-ahead can start.
    """
    base = os.fspath(base_dir)
    if (
        POSIX_PATHS
        and source
        and "/." not in f"/{source}"
        and "//" not in source
        and source[0] != "/"
        and source[-1] != "/"
        and base[-1] != "/"
    ):
        return f"{base}/{source}"
    return os.path.abspath(os.path.join(base, source))


def declared_sources(raws: Any, base_dir: Path | str) -> list[str]:
    """Every ``source`` path of a profile's raw resources, spelt as resolution spells it.

    Not yet validated, so taken as they come: a read-ahead only reads, and
    whatever it was wrongly given is simply never looked up.
    """
    if not isinstance(raws, list):
        return []
    return [
        source_path(base_dir, raw["source"])
        for raw in raws
        if isinstance(raw, Mapping) and isinstance(raw.get("source"), str)
    ]
