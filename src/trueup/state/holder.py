"""Which process holds a run: a pid is reused, a pid with its boot and start time is not.

After a reboot or a container restart, the pid of a killed run may belong to
another process; judged by its pid alone, the dead run would look alive and
block its target forever.
"""

from __future__ import annotations

import functools


def identity(pid: int) -> str | None:
    """``boot id:start time`` of process ``pid``; ``None`` where the system does not say.

    Linux tells both in /proc; the start time counts clock ticks since boot.
    """
    boot = _boot_id()
    if boot is None:
        return None
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            line = handle.read()
    except OSError:
        return None
    # The command name (field 2) may hold spaces and parentheses: count after the last ")".
    fields = line.rpartition(b")")[2].split()
    if len(fields) < 20:
        return None
    return f"{boot}:{int(fields[19])}"  # field 22, the start time (fields[0] is field 3)


@functools.cache
def _boot_id() -> str | None:
    try:
        with open("/proc/sys/kernel/random/boot_id") as handle:
            return handle.read().strip() or None
    except OSError:
        return None
