"""``trueup sync`` on an unchanged source, answered before the command line is built.

A follower's timer runs ``trueup sync --apply --no-input`` every few minutes,
and nearly every run finds the source as it left it: one HEAD request and a
304. Importing click to parse that command line costs the run more than the
request does (about 130M instructions of 340M), so the plain forms of
``trueup sync`` get that one answer here. Everything else goes on to the full
command, which says it properly: ``--help``, ``--recheck``, an option not
listed here, a source that changed, or any problem at all (it meets the
problem again and reports it with its exit code).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from trueup.cli.output import Output

#: The options of ``trueup sync`` this answers for; any other goes to click.
FLAGS = frozenset({"--apply", "--no-input", "--yes", "-y", "--json"})
VALUED = frozenset({"--root", "--state"})


def sync_options(args: list[str]) -> dict[str, str | bool] | None:
    """The options of a plain ``trueup sync`` command line, or ``None`` for any other."""
    found: dict[str, str | bool] = {}
    given = iter(args)
    for arg in given:
        name, equals, value = arg.partition("=")
        if arg in FLAGS:
            found[arg] = True
        elif name in VALUED and name not in found:
            found[name] = value if equals else next(given, "")
            if not found[name]:
                return None  # --root "" is a mistake click names
        else:
            return None
    return found


def answered(argv: list[str]) -> bool:
    """Whether ``argv`` was a plain ``sync`` the source had no news for, now answered."""
    options = sync_options(argv[1:]) if argv[:1] == ["sync"] else None
    if options is None:
        return False
    try:
        from trueup.settings import Settings
        from trueup.source.sync import FollowerSync

        root = Path(str(options.get("--root") or Path.home()))
        state = options.get("--state")
        syncer = FollowerSync(Settings.from_env(state=str(state) if state else None), root)
        try:
            known = syncer.unchanged()
        finally:
            syncer.close()
    except Exception:
        return False  # the full command meets it again and says what is wrong
    if known is None:
        return False
    from trueup.cli.output import Output, stdout_closed

    try:
        report_unchanged(Output("sync", bool(options.get("--json"))), known)
        sys.stdout.flush()
    except BrokenPipeError:
        stdout_closed()
    return True


def report_unchanged(out: Output, known: dict[str, Any]) -> None:
    """The answer of a sync with nothing to fetch: this root holds the newest revision."""
    message = f"up to date: revision {known['seq']} converged here; nothing to fetch"
    if out.json_mode:
        data = {"revision": known["revision"], "seq": known["seq"], "received": 0}
        out.envelope("unchanged", 0, message, data)
    else:
        print(message)  # plain print: the timer's every run need not load rich
