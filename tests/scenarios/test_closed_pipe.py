"""``trueup plan | head``: a reader that goes away early ends trueup quietly.

Not as an "internal error" (exit 1, which means a bug), and without a
traceback or any message.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time

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


def _blocked_writing(pid: int) -> bool:
    with open(f"/proc/{pid}/wchan") as handle:
        return "pipe_write" in handle.read()  # pipe_write, anon_pipe_write


@pytest.mark.skipif(not os.path.exists("/proc/self/wchan"), reason="needs Linux /proc")
def test_ctrl_c_while_a_finished_run_prints_keeps_the_runs_exit_code(world: World) -> None:
    """The run is over and recorded: a Ctrl-C then cuts the output short, and
    trueup must not exit as cancelled, saying nothing was changed."""
    resources = [
        {"id": f"r{i}", "kind": "file", "target": f"d/f{i}", "content": f"{i}\n"}
        for i in range(600)
    ]
    profile = world.write(
        "p.json", json.dumps({"profile": {"id": "p", "name": "P"}, "resource": resources})
    )
    args = [TRUEUP, "apply", "--yes", "--json", str(profile), "--root", str(world.root)]
    process = subprocess.Popen(
        args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=world.env(), cwd=world.base
    )
    deadline = time.monotonic() + 60
    while not _blocked_writing(process.pid):  # the envelope outgrew the unread pipe
        assert process.poll() is None and time.monotonic() < deadline, "never blocked"
        time.sleep(0.01)
    process.send_signal(signal.SIGINT)
    _, err = process.communicate(timeout=60)
    assert process.returncode == 0, err
    assert "output cut short; the run had already ended: converged" in err.decode()
    assert "nothing was changed" not in err.decode()
    assert (world.root / "d/f599").read_text() == "599\n"
