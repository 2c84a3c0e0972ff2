"""End-to-end support for many machines: a source serving, followers with data of their own."""

from __future__ import annotations

import contextlib
import signal
import subprocess
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

from world import TRUEUP, Result, World

NO_KEYRING = "keyring.backends.fail.Keyring"


@dataclass
class Machine:
    """A follower: its own data folder (state, pins, credential, blobs) and root."""

    world: World
    name: str

    @property
    def data(self) -> Path:
        return self.world.base / self.name / "data"

    @property
    def root(self) -> Path:
        return self.world.base / self.name / "root"

    @property
    def env(self) -> dict[str, str]:
        # No keyring: a developer's own would get the test's credentials.
        return {"TRUEUP_DATA": str(self.data), "PYTHON_KEYRING_BACKEND": NO_KEYRING}

    def run(self, *args: str, env: Mapping[str, str] | None = None) -> Result:
        return self.world.run(*args, env={**self.env, **(env or {})})

    def sync(self, *args: str) -> Result:
        return self.run("sync", "--root", str(self.root), *args)

    def follow(self, invitation: str) -> Result:
        self.root.mkdir(parents=True, exist_ok=True)
        return self.run("follow", invitation, "--name", self.name)


@contextlib.contextmanager
def serving(
    world: World, *args: str, env: Mapping[str, str] | None = None
) -> Iterator[tuple[subprocess.Popen[str], str]]:
    """``trueup source serve --port 0`` as its own process; yields it and its endpoint."""
    process = subprocess.Popen(
        [TRUEUP, "source", "serve", "--port", "0", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=world.env(env),
        cwd=world.base,
    )
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        if not line.startswith("serving on "):
            _, err = process.communicate(timeout=10)
            raise AssertionError(f"source serve did not start: {line!r} {err}")
        yield process, line.removeprefix("serving on ").strip()
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        for stream in (process.stdout, process.stderr):
            if stream is not None:
                stream.close()


def invite(world: World, *args: str, env: Mapping[str, str] | None = None) -> str:
    made = world.run("source", "invite", *args, "--json", env=env)
    assert made.code == 0, made.out + made.err
    invitation: str = made.json["data"]["invitation"]
    return invitation
