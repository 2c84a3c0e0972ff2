"""The ``trueup`` console script: what must start before the CLI is imported, then the CLI.

Importing the CLI and the engine takes a tenth of a second or more, during
which the machine's other core idles. An apply of a profile big enough to
declare hundreds of sources has them read meanwhile (readahead.start_early):
by the time the profile is loaded, most are hashed. Nothing else happens
here: anything odd (no such file, a saved plan, a YAML profile) only means
no early read-ahead, and the CLI words whatever is wrong.
"""

from __future__ import annotations

import os
import stat
import sys

#: A profile smaller than this declares too few sources for a process to pay
#: (readahead.MIN_FILES resources take ~20 KB).
EARLY_PROFILE_BYTES = 16 * 1024


def run() -> None:
    start_reading(sys.argv[1:])
    from trueup.cli.main import run as cli

    cli()


def start_reading(args: list[str]) -> None:
    """Start the early read-ahead when ``args`` apply a big JSON or TOML profile."""
    words = [arg for arg in args if not arg.startswith("-")]
    if not words or words[0] != "apply":
        return
    for arg in words[1:]:  # the first file named (option values name no file)
        if not arg.endswith((".json", ".toml")):
            continue
        try:
            st = os.stat(arg)
        except (OSError, ValueError):
            continue
        if stat.S_ISREG(st.st_mode):
            if st.st_size >= EARLY_PROFILE_BYTES:
                from trueup.readahead import start_early

                start_early(os.path.abspath(arg))
            return
