"""apply's question at a terminal: declining or cancelling changes nothing and says so.

The question goes to stderr, so that with --json stdout still holds just the
envelope. The terminal is a real pseudo-terminal, as a person's would be.
"""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import time

from world import ONE_FILE, TRUEUP, World


def asked(world: World, *args: str) -> tuple[subprocess.Popen[bytes], int]:
    """``trueup apply`` with stdin and stderr on a terminal, once it asks its question."""
    main, terminal = os.openpty()
    process = subprocess.Popen(
        [TRUEUP, "apply", str(world.write("p.toml", ONE_FILE)), "--root", str(world.root), *args],
        stdin=terminal,
        stdout=subprocess.PIPE,
        stderr=terminal,
        env=world.env(),
        cwd=world.base,
    )
    os.close(terminal)
    seen, deadline = b"", time.monotonic() + 60
    while b"[y/N]" not in seen:
        assert time.monotonic() < deadline, seen
        if select.select([main], [], [], 1)[0]:
            seen += os.read(main, 4096)
    # readline prints the question, then waits in select(): a SIGINT landing in
    # between is noted but never wakes it (a race in Python's readline module,
    # which no person's Ctrl-C can hit). Give it time to start waiting.
    time.sleep(0.5)
    return process, main


def finish(process: subprocess.Popen[bytes], main: int) -> tuple[int, str, str]:
    try:  # a hang fails the test instead of the whole suite
        raw, _ = process.communicate(timeout=60)
    finally:
        process.kill()
    out, code = raw.decode(), process.wait()
    err = b""
    while select.select([main], [], [], 0.2)[0]:
        try:
            chunk = os.read(main, 4096)
        except OSError:  # the terminal closed with the process
            break
        if not chunk:
            break
        err += chunk
    os.close(main)
    return code, out, err.decode(errors="replace")


def test_ctrl_c_at_the_question_is_cancelled_not_an_internal_error(world: World) -> None:
    process, main = asked(world)
    process.send_signal(signal.SIGINT)
    code, _, err = finish(process, main)
    assert code == 2, err
    assert "cancelled; nothing was changed" in err and "internal error" not in err
    assert not world.target("x").exists()


def test_end_of_input_at_the_question_is_cancelled(world: World) -> None:
    process, main = asked(world)
    os.write(main, b"\x04")  # Ctrl-D
    code, _, err = finish(process, main)
    assert code == 2 and "cancelled" in err, err
    assert not world.target("x").exists()


def test_with_json_the_question_is_on_stderr_and_a_no_still_prints_the_envelope(
    world: World,
) -> None:
    process, main = asked(world, "--json")
    os.write(main, b"n\n")
    code, out, _ = finish(process, main)
    assert code == 0
    assert "[y/N]" not in out
    envelope = json.loads(out)
    assert envelope["status"] == "declined" and envelope["data"]["run"] is None
    assert not world.target("x").exists()


def test_with_json_ctrl_c_at_the_question_prints_an_error_envelope(world: World) -> None:
    process, main = asked(world, "--json")
    process.send_signal(signal.SIGINT)
    code, out, _ = finish(process, main)
    assert code == 2
    assert "cancelled" in json.loads(out)["message"]


def test_a_missing_root_is_offered_at_a_terminal_and_made_on_yes(world: World) -> None:
    missing = world.base / "fresh"
    main, terminal = os.openpty()
    profile = str(world.write("p.toml", ONE_FILE))
    process = subprocess.Popen(
        [TRUEUP, "apply", profile, "--root", str(missing)],
        stdin=terminal,
        stdout=subprocess.PIPE,
        stderr=terminal,
        env=world.env(),
        cwd=world.base,
    )
    os.close(terminal)
    seen, deadline = b"", time.monotonic() + 60
    while b"create it? [y/N]" not in seen:
        assert time.monotonic() < deadline, seen
        if select.select([main], [], [], 1)[0]:
            seen += os.read(main, 4096)
    assert f"root {missing} does not exist".encode() in seen
    os.write(main, b"y\n")
    while b"[y/N]" not in seen.split(b"create it? [y/N]", 1)[1]:  # then the plan's question
        assert time.monotonic() < deadline, seen
        if select.select([main], [], [], 1)[0]:
            seen += os.read(main, 4096)
    os.write(main, b"y\n")
    code, out, _ = finish(process, main)
    assert code == 0, out
    assert (missing / "x").read_text() == "c"
