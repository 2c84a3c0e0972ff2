"""End-to-end support: the installed ``trueup`` command in a temporary world.

Each test gets its own data directory (so its own SQLite state), a root to
apply into, and a folder for profile files.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

#: The smallest profile: one file resource, ``a``, at ``x``.
ONE_FILE = """
[profile]
id = "p"
name = "P"

[[resource]]
id = "a"
kind = "file"
target = "x"
content = "c"
"""

#: ``python -c`` this: the ``trueup`` command, then the modules it imported, on stderr.
_TRUEUP_THEN_MODULES = """
import atexit, json, sys
atexit.register(lambda: print("MODULES", json.dumps(sorted(sys.modules)), file=sys.stderr))
from trueup.cli.entry import run
run()
"""

TRUEUP = shutil.which("trueup", path=str(Path(sys.executable).parent)) or "trueup"


@dataclass
class Result:
    code: int
    out: str
    err: str

    @property
    def json(self) -> Any:
        return json.loads(self.out)


@dataclass
class World:
    base: Path
    root: Path
    profiles: Path
    data: Path

    def env(self, extra: Mapping[str, str] | None = None) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("TRUEUP_")}
        env.update({"TRUEUP_DATA": str(self.data), "NO_COLOR": "1", "COLUMNS": "200"})
        env.update(extra or {})
        return env

    def call(
        self, argv: list[str], env: Mapping[str, str] | None = None, timeout: float = 120
    ) -> subprocess.CompletedProcess[str]:
        """Run ``argv`` as every scenario runs trueup: in this world, no stdin, output kept."""
        return subprocess.run(
            argv,
            capture_output=True,
            text=True,
            env=self.env(env),
            cwd=self.base,
            timeout=timeout,
            stdin=subprocess.DEVNULL,
        )

    def run(self, *args: str, env: Mapping[str, str] | None = None, timeout: float = 120) -> Result:
        done = self.call([TRUEUP, *args], env, timeout)
        return Result(done.returncode, done.stdout, done.stderr)

    def modules(self, *args: str, env: Mapping[str, str] | None = None) -> tuple[int, set[str]]:
        """Run ``trueup ARGS`` as ``run`` does; its exit code and every module it imported."""
        done = self.call([sys.executable, "-c", _TRUEUP_THEN_MODULES, *args], env)
        listed = done.stderr[done.stderr.rindex("MODULES ") + len("MODULES ") :]
        return done.returncode, set(json.loads(listed))

    def write(self, relative: str, text: str) -> Path:
        path = self.profiles / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        return path

    def target(self, relative: str) -> Path:
        return self.root / relative
