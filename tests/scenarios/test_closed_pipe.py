"""``trueup plan | head``: a reader that goes away early ends trueup quietly.

Not as an "internal error" (exit 1, which means a bug), and without a
traceback or any message.
"""

from __future__ import annotations

import json
import subprocess

import pytest
from world import TRUEUP, World


@pytest.mark.parametrize("json_out", [False, True])
def test_a_reader_that_stops_early_ends_trueup_quietly(world: World, json_out: bool) -> None:
    resources = [
        {"id": f"r{i}", "kind": "file", "target": f"d/f{i}", "content": "line\n" * 50}
        for i in range(2000)
    ]
    profile = world.write(
        "p.json", json.dumps({"profile": {"id": "p", "name": "P"}, "resource": resources})
    )
    args = [
        TRUEUP,
        "plan",
        str(profile),
        "--root",
        str(world.root),
        *(["--json"] if json_out else []),
    ]
    process = subprocess.Popen(
        args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=world.env(), cwd=world.base
    )
    assert process.stdout is not None and process.stderr is not None
    process.stdout.read(10)  # like head -c 10: a little is read, then the pipe closes
    process.stdout.close()
    err = process.stderr.read().decode()
    # 141 once a write fails; 0 when Python's last, partial write hid the closed
    # pipe (what was read is all anyone wanted). Never 1, which means a bug.
    assert process.wait(timeout=120) in (0, 141), err
    assert err == ""
