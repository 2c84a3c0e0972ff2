"""Command verification: a declared command must exit 0 after a change.

The command's output is never stored (it could hold anything); only its exit
code, and a capped, redacted excerpt for the failure message.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

from trueup.model import Evidence, Resource
from trueup.redact import redact_message

MAX_OUTPUT = 1024 * 1024
DEFAULT_TIMEOUT = 600


def verify_command(resource: Resource, root: Path) -> Evidence | None:
    """Run the resource's verification command, if it declares one."""
    spec = resource.verify or {}
    command = spec.get("command")
    if not command:
        return None
    timeout = int(spec.get("timeout", DEFAULT_TIMEOUT))
    try:
        done = subprocess.run(command, cwd=root, capture_output=True, timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        return Evidence("failed", "command", message=f"verification timed out after {timeout}s")
    except OSError as exc:
        return Evidence("failed", "command", message=f"verification could not start: {exc}")
    if done.returncode == 0:
        return Evidence("passed", "command", exit_code=0)
    excerpt = (done.stderr or done.stdout)[:MAX_OUTPUT].decode("utf-8", "replace").strip()
    return Evidence(
        "failed",
        "command",
        exit_code=done.returncode,
        message=redact_message(f"verification command exited {done.returncode}: {excerpt[:300]}"),
    )
