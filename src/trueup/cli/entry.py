"""The ``trueup`` executable: a timer's unchanged sync answered at once, the rest by click."""

import sys


def run() -> None:
    """``trueup``. ``cli/unchanged_sync.py`` says why one answer comes before click."""
    from trueup.cli.unchanged_sync import answered

    if answered(sys.argv[1:]):
        raise SystemExit(0)
    from trueup.cli.main import run as run_cli

    run_cli()
