"""A wheel built from the checkout installs in a clean venv and runs.

What a person gets from ``pip install .`` / ``pipx install .``: the package
data (Alembic migrations, examples) shipped, and a ``trueup`` command that
imports trueup from that venv, not from the checkout. Dependencies are not
downloaded: the clean venv sees this venv's site-packages through a ``.pth``
line (a plain path: this venv's editable install of trueup is not loaded).
"""

from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

CHECKOUT = Path(__file__).parents[2]


def run(*args: str | Path, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TRUEUP_")}
    if cwd is not None:  # trueup's data folder in the test's, never the user's
        env["TRUEUP_DATA"] = str(cwd / "data")
    return subprocess.run(
        [str(a) for a in args], capture_output=True, text=True, timeout=180, cwd=cwd, env=env
    )


def test_a_built_wheel_installs_in_a_clean_venv_and_runs(tmp_path: Path) -> None:
    wheels = tmp_path / "wheels"
    # With build isolation pip fetches the build back end (setuptools) from the
    # package index configured for it; without one, nothing here can be built.
    built = run(sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", wheels, CHECKOUT)
    if built.returncode != 0 and "setuptools" in built.stderr and "No matching" in built.stderr:
        pytest.skip(f"no package index to fetch the build back end from: {built.stderr[-300:]}")
    assert built.returncode == 0, built.stderr
    (wheel,) = wheels.glob("trueup-*.whl")

    fresh = tmp_path / "fresh"
    assert run(sys.executable, "-m", "venv", "--without-pip", fresh).returncode == 0
    installed = run(
        sys.executable, "-m", "pip", "--python", fresh / "bin" / "python",
        "install", "--no-deps", "--no-index", "-q", wheel,
    )  # fmt: skip
    assert installed.returncode == 0, installed.stderr
    fresh_site = Path(
        run(
            fresh / "bin" / "python", "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"
        ).stdout.strip()
    )
    (fresh_site / "zz_dependencies.pth").write_text(sysconfig.get_path("purelib") + "\n")

    trueup = fresh / "bin" / "trueup"
    version = run(trueup, "--version", cwd=tmp_path)
    assert version.returncode == 0, version.stderr
    assert version.stdout.startswith("trueup "), version.stdout
    where = run(fresh / "bin" / "python", "-c", "import trueup; print(trueup.__file__)")
    assert where.stdout.startswith(str(fresh_site)), where.stdout + where.stderr
    # The migrations ship in the wheel: a new store is built from them.
    store = tmp_path / "state.db"
    migrated = run(trueup, "state", "migrate", "--state", f"sqlite:///{store}", cwd=tmp_path)
    assert migrated.returncode == 0, migrated.stdout + migrated.stderr
    assert store.exists()
