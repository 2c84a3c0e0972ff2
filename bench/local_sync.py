#!/usr/bin/env python3
"""Local-sync benchmark: trueup against rsync and pyinfra on a tree of small files.

Run on demand, never from the test suite::

    .venv/bin/python bench/local_sync.py                 # 10,000 files, 5 runs, with pyinfra
    .venv/bin/python bench/local_sync.py --files 1000 --runs 3 --skip-pyinfra
    .venv/bin/python bench/local_sync.py --snapshot      # measure a copy of src/ taken now

Scenarios (see bench/README.md for the targets and what each one means):

1. no-op ``trueup plan`` of a converged tree, against ``rsync -ac --dry-run``;
2. the same no-op at 1,000 files, against pyinfra 3 ``files.sync`` on ``@local``;
3. first ``trueup apply --yes`` into an empty root (cold state, and a warm stat
   cache of the source tree), against ``rsync -a`` into an empty folder;
4. peak memory (max RSS) of every trueup process above.

Every command is timed as a whole process, start-up included, from spawn to
reap; ``os.wait4`` gives each process's own max RSS. Everything is written
under ``bench/.work/`` (git-ignored); results go to
``bench/.work/local_sync-results.json``.
"""

from __future__ import annotations

import argparse
import base64
import json
import math
import os
import platform
import random
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
WORK = BENCH / ".work"
SCRATCH = WORK / "local_sync"
RESULTS = WORK / "local_sync-results.json"
TRUEUP = REPO / ".venv" / "bin" / "trueup"
PYINFRA_VENV = WORK / "pyinfra-venv"
PYINFRA = PYINFRA_VENV / "bin" / "pyinfra"
PYINFRA_SPEC = "pyinfra>=3,<4"

FILES_PER_DIR = 100
MIN_SIZE, MAX_SIZE = 200, 4096
SEED = 20240601
PYINFRA_FILES = 1000
PYINFRA_NOOP_RUNS = 2
# trueup trusts a recorded stat only when the file is older than the
# recording by more than 2 s (fs.RACY_WINDOW_NS); wait a little longer.
RACY_WAIT_S = 2.5
MEMORY_LIMIT_MIB = 200.0
WITHIN_RSYNC = 3.0  # a first apply against rsync -a
NOOP_WITHIN_RSYNC = 2.0  # a no-op plan against rsync -ac --dry-run (issue 22)
FASTER_THAN_PYINFRA = 50.0


# -- measurements -------------------------------------------------------------
@dataclass
class Sample:
    seconds: float
    max_rss_kib: int
    load1: float = 0.0  # the 1-minute load average when the run ended


@dataclass
class Row:
    """One line of the results table: a tool timed in one scenario."""

    scenario: str
    tool: str
    samples: list[Sample] = field(default_factory=list)
    trueup: bool = False
    peer: str | None = None
    target: str = ""
    ratio: float | None = None
    ratio_text: str = ""
    passed: bool | None = None

    @property
    def median(self) -> float:
        return statistics.median(s.seconds for s in self.samples)

    @property
    def minimum(self) -> float:
        return min(s.seconds for s in self.samples)

    @property
    def peak_mib(self) -> float:
        return max(s.max_rss_kib for s in self.samples) / 1024

    def to_json(self) -> dict[str, Any]:
        return {
            "scenario": self.scenario,
            "tool": self.tool,
            "median_s": round(self.median, 4),
            "min_s": round(self.minimum, 4),
            "runs": len(self.samples),
            "samples_s": [round(s.seconds, 4) for s in self.samples],
            "samples_load1": [round(s.load1, 2) for s in self.samples],
            "max_rss_mib": round(self.peak_mib, 1) if self.trueup else None,
            "peer": self.peer,
            "ratio": round(self.ratio, 3) if self.ratio is not None else None,
            "ratio_text": self.ratio_text,
            "target": self.target,
            "passed": self.passed,
        }


class BenchError(RuntimeError):
    """A command failed or a no-op was not a no-op: the numbers would mean nothing."""


class QuietDisk:
    """Waits, before each scenario, for the disk to be as quick as it was at the start.

    Some virtual disks slow down for minutes after heavy writing or deleting
    (a first ``pip install`` of pyinfra, a scenario's clean-up). A scenario
    timed in that state bills the tool that makes its writes durable (trueup)
    for what the one that does not (rsync) never waits for. So each scenario
    starts only once a probe (``PROBE_FILES`` small files written, then
    ``sync``) takes at most twice its time at the start, or after
    ``QUIET_WAIT_S`` in any case; every reading goes to the results.
    """

    PROBE_FILES = 256
    QUIET_WAIT_S = 180.0

    def __init__(self, place: Path) -> None:
        self.place = place
        self.baseline = min(self.probe() for _ in range(3))
        self.log: list[dict[str, Any]] = []

    def probe(self) -> float:
        folder = fresh_dir(self.place)
        data = b"x" * 2048
        started = time.perf_counter()
        for i in range(self.PROBE_FILES):
            (folder / str(i)).write_bytes(data)
        os.sync()
        took = time.perf_counter() - started
        shutil.rmtree(folder)
        return took

    def wait(self, before: str) -> None:
        limit = max(2 * self.baseline, self.baseline + 0.05)
        started = time.monotonic()
        readings = [self.probe()]
        while readings[-1] > limit and time.monotonic() - started < self.QUIET_WAIT_S:
            if len(readings) == 1:
                progress(f"waiting for the disk to quieten before: {before}")
            time.sleep(5)
            readings.append(self.probe())
        self.log.append(
            {
                "before": before,
                "probe_ms": [round(r * 1000, 1) for r in readings],
                "limit_ms": round(limit * 1000, 1),
                "waited_s": round(time.monotonic() - started, 1),
                "quiet": readings[-1] <= limit,
            }
        )


#: Set by main(); ``interleaved`` waits on it before the first round.
DISK: list[QuietDisk] = []


def run_timed(
    cmd: Sequence[str | Path],
    env: dict[str, str] | None = None,
    cwd: Path | None = None,
    log: Path | None = None,
) -> Sample:
    """Run ``cmd`` to completion; wall time from spawn to reap and its own max RSS."""
    log = log or SCRATCH / "last-command.log"
    with open(log, "wb") as out:
        start = time.perf_counter()
        proc = subprocess.Popen(
            [str(part) for part in cmd],
            env=env,
            cwd=cwd,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
        _, status, usage = os.wait4(proc.pid, 0)
        elapsed = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        tail = log.read_text(errors="replace")[-2000:]
        raise BenchError(f"{' '.join(map(str, cmd))} exited {proc.returncode}:\n{tail}")
    return Sample(elapsed, usage.ru_maxrss, os.getloadavg()[0])


def command_job(
    cmd: Sequence[str | Path], env: dict[str, str] | None = None
) -> Callable[[int], Sample]:
    """A timed run of the same command every round."""

    def job(_round: int) -> Sample:
        return run_timed(cmd, env)

    return job


def trueup_env(data: Path) -> dict[str, str]:
    """The environment of every trueup process: its own state folder, no colour."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("TRUEUP_")}
    env.update(TRUEUP_DATA=str(data), NO_COLOR="1", COLUMNS="120")
    return env


def settle() -> None:
    """Flush dirty pages so one run's write-back is not billed to the next."""
    os.sync()


# -- the tree and the profiles ------------------------------------------------
@dataclass(frozen=True)
class Fixture:
    """A source tree and the profiles that declare it."""

    base: Path
    files: int
    rels: tuple[str, ...]

    @property
    def src(self) -> Path:
        return self.base / "src"

    def profile(self, variant: str) -> Path:
        return self.base / VARIANTS[variant]


VARIANTS = {"dir": "dir.toml", "files-json": "files.json", "files-toml": "files.toml"}
VARIANT_LABEL = {
    "dir": "1 directory resource (toml)",
    "files-json": "{n} file resources (json)",
    "files-toml": "{n} file resources (toml)",
}
INFO_ONLY = {"files-toml"}


def label(variant: str, files: int) -> str:
    return VARIANT_LABEL[variant].format(n=f"{files:,}")


def tree_layout(files: int) -> list[str]:
    """Relative paths: folders of FILES_PER_DIR files (10,000 -> 100 x 100)."""
    folders = max(1, math.ceil(files / FILES_PER_DIR))
    width = max(3, len(str(folders - 1)))
    return [f"d{i // FILES_PER_DIR:0{width}d}/f{i % FILES_PER_DIR:03d}.txt" for i in range(files)]


def random_text(rng: random.Random, size: int) -> bytes:
    """Printable random content (base64 lines), as a text config file would be."""
    raw = base64.encodebytes(rng.randbytes(size))
    return raw[: size - 1] + b"\n"


def write_tree(src: Path, rels: Sequence[str], seed: int) -> None:
    rng = random.Random(seed)
    for rel in rels:
        path = src / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(random_text(rng, rng.randint(MIN_SIZE, MAX_SIZE)))


def file_resources(rels: Sequence[str]) -> list[dict[str, str]]:
    resources = []
    for rel in rels:
        folder, name = rel.split("/")
        rid = f"f-{folder[1:]}-{name[1:].split('.')[0]}"
        resources.append(
            {"id": rid, "kind": "file", "target": f"tree/{rel}", "source": f"src/{rel}"}
        )
    return resources


def toml_profile(pid: str, resources: Sequence[dict[str, str]]) -> str:
    lines = ["[profile]", f'id = "{pid}"', 'name = "Bench"', ""]
    for resource in resources:
        lines.append("[[resource]]")
        lines += [f'{key} = "{value}"' for key, value in resource.items()]
        lines.append("")
    return "\n".join(lines)


def write_profiles(base: Path, rels: Sequence[str]) -> None:
    directory = {"id": "tree", "kind": "directory", "target": "tree", "source": "src"}
    (base / VARIANTS["dir"]).write_text(toml_profile("bench-dir", [directory]))
    resources = file_resources(rels)
    document = {"profile": {"id": "bench-files", "name": "Bench"}, "resource": resources}
    (base / VARIANTS["files-json"]).write_text(json.dumps(document, indent=1))
    (base / VARIANTS["files-toml"]).write_text(toml_profile("bench-files", resources))


def make_fixture(base: Path, files: int, seed: int) -> Fixture:
    rels = tree_layout(files)
    base.mkdir(parents=True, exist_ok=True)
    write_tree(base / "src", rels, seed)
    write_profiles(base, rels)
    return Fixture(base, files, tuple(rels))


def age_past_racy_window(since: float) -> None:
    """Sleep until ``since`` (a time.time()) is more than the racy window ago."""
    remaining = since + RACY_WAIT_S - time.time()
    if remaining > 0:
        time.sleep(remaining)


def fresh_dir(path: Path) -> Path:
    if path.exists():
        shutil.rmtree(path)
    path.mkdir(parents=True)
    return path


def same_tree(src: Path, dst: Path) -> bool:
    """Byte-for-byte comparison of every regular file under both folders."""

    def files(root: Path) -> dict[str, Path]:
        return {p.relative_to(root).as_posix(): p for p in root.rglob("*") if p.is_file()}

    left, right = files(src), files(dst)
    return left.keys() == right.keys() and all(
        left[rel].read_bytes() == right[rel].read_bytes() for rel in left
    )


# -- trueup commands ----------------------------------------------------------
# What runs trueup: the venv's console script, or a launcher for a snapshot.
LAUNCHER: list[str | Path] = [TRUEUP]


def trueup_cmd(verb: str, profile: Path, root: Path, *extra: str) -> list[str | Path]:
    yes = ["--yes"] if verb == "apply" else []
    return [*LAUNCHER, verb, *yes, profile, "--root", root, *extra]


def snapshot_trueup(place: Path) -> Path:
    """Copy src/trueup so edits made to the tree during a long run cannot mix versions.

    The launcher is the console script with the snapshot first on sys.path
    (the editable install only appends src/ via a .pth file).
    """
    shutil.copytree(
        REPO / "src" / "trueup",
        place / "trueup",
        ignore=shutil.ignore_patterns("__pycache__"),
    )
    import tomllib

    with open(REPO / "pyproject.toml", "rb") as handle:
        entry = tomllib.load(handle)["project"]["scripts"]["trueup"]
    module, function = entry.split(":")
    launcher = place / "trueup-launcher"
    launcher.write_text(
        f"#!{REPO / '.venv' / 'bin' / 'python'}\n"
        "import sys\n"
        f"sys.path.insert(0, {str(place)!r})\n"
        f"from {module} import {function}\n"
        f"sys.exit({function}())\n"
    )
    launcher.chmod(0o755)
    # as an installed package would be: byte-compiled (PYTHONDONTWRITEBYTECODE may be set)
    subprocess.run(
        [str(REPO / ".venv" / "bin" / "python"), "-m", "compileall", "-q", str(place)],
        check=True,
    )
    return launcher


def trueup_json(verb: str, profile: Path, root: Path, data: Path) -> dict[str, Any]:
    proc = subprocess.run(
        [str(p) for p in trueup_cmd(verb, profile, root, "--json")],
        env=trueup_env(data),
        capture_output=True,
        text=True,
        check=False,
    )
    try:
        envelope: dict[str, Any] = json.loads(proc.stdout)
    except json.JSONDecodeError:
        raise BenchError(
            f"trueup {verb} --json: no JSON (exit {proc.returncode}):\n"
            f"{proc.stdout[-1000:]}{proc.stderr[-1000:]}"
        ) from None
    return envelope


def expect_noop(profile: Path, root: Path, data: Path, count: int) -> None:
    """A ``plan --json`` that must report only no-ops (it also warms the stat cache)."""
    envelope = trueup_json("plan", profile, root, data)
    data_part = envelope.get("data") or {}
    summary = data_part.get("summary")
    if envelope.get("status") != "converged" or summary != f"{count} no-op":
        raise BenchError(
            f"expected a no-op plan for {profile}, got {summary!r}: "
            f"{envelope.get('message')} {data_part.get('hint') or ''}"
        )


def converge(fixture: Fixture, variant: str, place: Path) -> tuple[Path, Path]:
    """A state folder and a root where ``variant`` has been applied; returns (data, root)."""
    data, root = fresh_dir(place / "data"), fresh_dir(place / "root")
    run_timed(trueup_cmd("apply", fixture.profile(variant), root), trueup_env(data))
    if not same_tree(fixture.src, root / "tree"):
        raise BenchError(f"trueup apply of {variant} did not reproduce the source tree")
    return data, root


def resource_count(fixture: Fixture, variant: str) -> int:
    return 1 if variant == "dir" else fixture.files


# -- comparisons --------------------------------------------------------------
def within(row: Row, peer: Row, limit: float, info: bool = False) -> None:
    """Row must take at most ``limit`` times as long as its peer."""
    row.peer = peer.tool
    row.ratio = row.median / peer.median
    row.ratio_text = f"{row.ratio:.2f}x {peer.tool.split()[0]}"
    row.target = f"<= {limit:g}x" + (" (info)" if info else "")
    row.passed = None if info else row.ratio <= limit


def faster(row: Row, peer: Row, limit: float, info: bool = False) -> None:
    """Row must be at least ``limit`` times faster than its peer."""
    row.peer = peer.tool
    row.ratio = peer.median / row.median
    row.ratio_text = f"{row.ratio:.0f}x faster"
    row.target = f">= {limit:g}x faster" + (" (info)" if info else "")
    row.passed = None if info else row.ratio >= limit


def interleaved(rows: Sequence[Row], jobs: Sequence[Callable[[int], Sample]], runs: int) -> None:
    """Run every job once per round, round-robin, so background load hits all alike."""
    for disk in DISK:
        disk.wait(rows[0].scenario)
    for i in range(runs):
        for row, job in zip(rows, jobs, strict=True):
            row.samples.append(job(i))
            progress(
                f"  {row.scenario} | {row.tool}: run {i + 1}/{runs} {row.samples[-1].seconds:.3f} s"
            )


def progress(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


# -- scenario 1: no-op plan ---------------------------------------------------
def scenario_noop(fixture: Fixture, runs: int, place: Path) -> list[Row]:
    name = f"1 no-op, {fixture.files:,} files"
    progress(f"{name}: converging")
    converged = {v: converge(fixture, v, place / v) for v in VARIANTS}
    rsync_dst = fresh_dir(place / "rsync-dst")
    run_timed(["rsync", "-a", f"{fixture.src}/", f"{rsync_dst}/"])
    age_past_racy_window(time.time())
    for variant, (data, root) in converged.items():
        expect_noop(fixture.profile(variant), root, data, resource_count(fixture, variant))
    rsync_noop: list[str | Path] = ["rsync", "-ac", "--dry-run", f"{fixture.src}/", f"{rsync_dst}/"]
    run_timed(rsync_noop)  # warm-up, as trueup had its plan --json

    rows: list[Row] = []
    jobs: list[Callable[[int], Sample]] = []
    for verb in ("plan", "apply"):
        for variant, (data, root) in converged.items():
            cmd = trueup_cmd(verb, fixture.profile(variant), root)
            rows.append(Row(name, f"trueup {verb}, {label(variant, fixture.files)}", trueup=True))
            jobs.append(command_job(cmd, trueup_env(data)))
    rsync = Row(name, "rsync -ac --dry-run")
    rows.append(rsync)
    jobs.append(command_job(rsync_noop))
    interleaved(rows, jobs, runs)
    for row, variant in zip(rows[:3], VARIANTS, strict=True):
        within(row, rsync, NOOP_WITHIN_RSYNC, info=variant in INFO_ONLY)
    for row in rows[3:6]:
        within(row, rsync, NOOP_WITHIN_RSYNC, info=True)
    return rows


# -- scenario 2: no-op against pyinfra ----------------------------------------
def ensure_pyinfra() -> None:
    if PYINFRA.exists():
        return
    progress(f"installing {PYINFRA_SPEC} into {PYINFRA_VENV}")
    subprocess.run([sys.executable, "-m", "venv", str(PYINFRA_VENV)], check=True)
    pip = PYINFRA_VENV / "bin" / "pip"
    subprocess.run([str(pip), "install", "-q", PYINFRA_SPEC], check=True)


def pyinfra_version() -> str:
    proc = subprocess.run([str(PYINFRA), "--version"], capture_output=True, text=True)
    return proc.stdout.strip().removeprefix("pyinfra:").strip()


def pyinfra_sync(deploy: Path, log: Path, expect_noop_run: bool) -> Sample:
    cmd: list[str | Path] = [PYINFRA, "@local", deploy.name, "-y"]
    sample = run_timed(cmd, cwd=deploy.parent, log=log)
    output = log.read_text(errors="replace")
    if expect_noop_run and "No changes" not in output:
        raise BenchError(f"pyinfra's second run was not a no-op:\n{output[-2000:]}")
    return sample


def scenario_pyinfra(fixture: Fixture, runs: int, place: Path) -> list[Row]:
    name = f"2 no-op, {fixture.files:,} files"
    ensure_pyinfra()
    progress(f"{name}: converging")
    variants = ("dir", "files-json")
    converged = {v: converge(fixture, v, place / v) for v in variants}
    pyinfra_dir = fresh_dir(place / "pyinfra")
    deploy = pyinfra_dir / "deploy.py"
    deploy.write_text(
        "from pyinfra.operations import files\n\n"
        f"files.sync(name='bench tree', src={str(fixture.src)!r}, "
        f"dest={str(pyinfra_dir / 'dst')!r})\n"
    )
    progress(f"{name}: pyinfra first run (copies the tree; slow)")
    first = Row(name, "pyinfra files.sync first run (info)")
    first.samples.append(pyinfra_sync(deploy, pyinfra_dir / "run-1.log", False))
    if not same_tree(fixture.src, pyinfra_dir / "dst"):
        raise BenchError("pyinfra files.sync did not reproduce the source tree")
    noop = Row(name, f"pyinfra {pyinfra_version()} files.sync @local, no-op")
    for i in range(PYINFRA_NOOP_RUNS):
        progress(f"{name}: pyinfra no-op run {i + 1}/{PYINFRA_NOOP_RUNS}")
        noop.samples.append(pyinfra_sync(deploy, pyinfra_dir / f"noop-{i + 1}.log", True))

    age_past_racy_window(time.time())
    rows: list[Row] = []
    jobs: list[Callable[[int], Sample]] = []
    for verb in ("plan", "apply"):
        for variant, (data, root) in converged.items():
            expect_noop(fixture.profile(variant), root, data, resource_count(fixture, variant))
            cmd = trueup_cmd(verb, fixture.profile(variant), root)
            rows.append(Row(name, f"trueup {verb}, {label(variant, fixture.files)}", trueup=True))
            jobs.append(command_job(cmd, trueup_env(data)))
    interleaved(rows, jobs, runs)
    for row in rows:
        faster(row, noop, FASTER_THAN_PYINFRA, info=row.tool.startswith("trueup apply"))
    return [*rows, noop, first]


# -- scenario 3: first apply into an empty root -------------------------------
def scenario_first_apply(fixture: Fixture, runs: int, place: Path) -> list[Row]:
    """Per mode, trueup and rsync take turns, so disk contention hits them alike.

    Nothing written is deleted until both modes are done: on some virtual disks,
    creating files right after many were deleted (and discarded) is several
    times slower, which would bill one tool for another's clean-up.
    """
    rows: list[Row] = []
    for mode in ("cold state", "warm source cache"):
        name = f"3 first apply, {fixture.files:,} files, {mode}"
        progress(name)
        mode_place = place / mode.split()[0]
        mode_rows: list[Row] = []
        jobs: list[Callable[[int], Sample]] = []
        for variant in VARIANTS:
            here = mode_place / variant
            shared = None if mode == "cold state" else primed_state(fixture, variant, here)
            mode_rows.append(
                Row(name, f"trueup apply, {label(variant, fixture.files)}", trueup=True)
            )
            jobs.append(first_apply_job(fixture, variant, here, shared))
        plain, synced = Row(name, "rsync -a"), Row(name, "rsync -a + syncfs (info)")
        floor = Row(name, "python floor: bench/floor.py (info)")
        mode_rows += [plain, synced, floor]
        jobs += [
            rsync_job(fixture, mode_place / "rsync", False),
            rsync_job(fixture, mode_place / "rsync-sync", True),
            floor_job(fixture, mode_place / "floor"),
        ]
        interleaved(mode_rows, jobs, runs)
        for row, variant in zip(mode_rows, VARIANTS, strict=False):
            within(row, plain, WITHIN_RSYNC, info=variant in INFO_ONLY)
        within(synced, plain, WITHIN_RSYNC, info=True)
        within(floor, plain, WITHIN_RSYNC, info=True)
        rows += mode_rows
    shutil.rmtree(place)
    settle()
    return rows


def primed_state(fixture: Fixture, variant: str, here: Path) -> Path:
    """A state folder whose stat cache already knows the source tree."""
    data, _root = converge(fixture, variant, here / "prime")
    return data


def first_apply_job(
    fixture: Fixture, variant: str, here: Path, shared: Path | None
) -> Callable[[int], Sample]:
    def job(i: int) -> Sample:
        data = shared or fresh_dir(here / f"data-{i}")
        root = fresh_dir(here / f"root-{i}")
        settle()
        sample = run_timed(trueup_cmd("apply", fixture.profile(variant), root), trueup_env(data))
        if i == 0 and not same_tree(fixture.src, root / "tree"):
            raise BenchError(f"trueup apply of {variant} did not reproduce the source tree")
        return sample

    return job


def rsync_job(fixture: Fixture, place: Path, with_sync: bool) -> Callable[[int], Sample]:
    """``rsync -a`` into a fresh empty folder; optionally made durable with syncfs."""

    def job(i: int) -> Sample:
        dst = fresh_dir(place / f"dst-{i}")
        command = f"rsync -a '{fixture.src}/' '{dst}/'"
        if with_sync:
            command += f" && sync -f '{dst}'"
        settle()
        return run_timed(["sh", "-c", command])

    return job


def floor_job(fixture: Fixture, place: Path) -> Callable[[int], Sample]:
    """The same copy by bench/floor.py: trueup's guarantees with nothing else."""

    def job(i: int) -> Sample:
        state = fresh_dir(place / f"state-{i}")
        dst = place / f"dst-{i}"
        settle()
        return run_timed(
            [sys.executable, BENCH / "floor.py", fixture.src, dst, state / "journal.db"]
        )

    return job


# -- scenario 4 and the report ------------------------------------------------
def memory_rows(rows: Sequence[Row]) -> list[dict[str, Any]]:
    found = []
    for row in rows:
        if row.trueup:
            found.append(
                {
                    "scenario": row.scenario,
                    "tool": row.tool,
                    "max_rss_mib": round(row.peak_mib, 1),
                    "passed": row.peak_mib < MEMORY_LIMIT_MIB,
                }
            )
    return found


def verdict(passed: bool | None) -> str:
    return {True: "PASS", False: "FAIL", None: "info"}[passed]


def table(headers: Sequence[str], lines: Sequence[Sequence[str]]) -> str:
    widths = [max(len(h), *(len(line[i]) for line in lines)) for i, h in enumerate(headers)]

    def fmt(cells: Sequence[str]) -> str:
        return "  ".join(c.ljust(w) for c, w in zip(cells, widths, strict=True)).rstrip()

    rule = "  ".join("-" * w for w in widths)
    return "\n".join([fmt(headers), rule, *(fmt(line) for line in lines)])


def render(rows: Sequence[Row], memory: Sequence[dict[str, Any]]) -> str:
    timing = table(
        ["scenario", "tool", "median s", "min s", "runs", "ratio to peer", "target", "result"],
        [
            [
                r.scenario,
                r.tool,
                f"{r.median:.3f}",
                f"{r.minimum:.3f}",
                str(len(r.samples)),
                r.ratio_text,
                r.target,
                verdict(r.passed) if r.target else "",
            ]
            for r in rows
        ],
    )
    peak = max((m["max_rss_mib"] for m in memory), default=0.0)
    mem = table(
        ["scenario", "trueup process", "max RSS MiB", "target", "result"],
        [
            [
                m["scenario"],
                m["tool"],
                f"{m['max_rss_mib']:.1f}",
                f"< {MEMORY_LIMIT_MIB:g} MiB",
                verdict(m["passed"]),
            ]
            for m in memory
        ],
    )
    overall = (
        f"4 peak memory of all trueup processes: {peak:.1f} MiB "
        f"(target < {MEMORY_LIMIT_MIB:g} MiB: {verdict(peak < MEMORY_LIMIT_MIB)})"
    )
    return f"{timing}\n\n{mem}\n\n{overall}"


def git_state() -> dict[str, Any]:
    """Which trueup was measured (read-only git queries; the tree changes under us)."""

    def git(*args: str) -> str:
        proc = subprocess.run(["git", "-C", str(REPO), *args], capture_output=True, text=True)
        return proc.stdout.strip()

    changed = [line for line in git("status", "--porcelain").splitlines() if line]
    return {"head": git("rev-parse", "HEAD"), "uncommitted_paths": len(changed)}


def environment() -> dict[str, Any]:
    rsync = subprocess.run(["rsync", "--version"], capture_output=True, text=True).stdout
    return {
        "trueup_tree": git_state(),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "cpus": os.cpu_count(),
        "rsync": rsync.splitlines()[0] if rsync else None,
        "loadavg_start": os.getloadavg(),
    }


# -- main ---------------------------------------------------------------------
def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--files", type=int, default=10_000, help="tree size (default 10000)")
    parser.add_argument("--runs", type=int, default=5, help="timed runs per tool (default 5)")
    parser.add_argument("--skip-pyinfra", action="store_true", help="skip scenario 2")
    parser.add_argument("--keep", action="store_true", help=f"keep {SCRATCH} afterwards")
    parser.add_argument(
        "--snapshot",
        action="store_true",
        help="measure a copy of src/trueup taken at start (the tree may change meanwhile)",
    )
    parser.add_argument(
        "--scratch",
        type=Path,
        help=f"write trees, roots and stores here instead of {SCRATCH} (e.g. /dev/shm/trueup-bench:"
        " tmpfs, so the disk's write-back is nobody's time)",
    )
    args = parser.parse_args(argv)
    if args.files < 1 or args.runs < 1:
        parser.error("--files and --runs must be at least 1")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    global SCRATCH
    args = parse_args(argv)
    SCRATCH = args.scratch or SCRATCH
    if not TRUEUP.exists():
        print(f"no trueup at {TRUEUP}; run scripts/bootstrap first", file=sys.stderr)
        return 1
    env = environment()
    started = time.time()
    fresh_dir(SCRATCH)
    if not args.skip_pyinfra:  # its install is no scenario's business (QuietDisk)
        ensure_pyinfra()
    DISK[:] = [QuietDisk(SCRATCH / "disk-probe")]
    env["disk_probe_baseline_ms"] = round(DISK[0].baseline * 1000, 1)
    if args.snapshot:
        LAUNCHER[:] = [snapshot_trueup(SCRATCH / "snapshot")]
    env["trueup"] = [str(part) for part in LAUNCHER]
    try:
        progress(f"writing {args.files:,} files under {SCRATCH / 'tree'}")
        big = make_fixture(SCRATCH / "tree", args.files, SEED)
        rows = scenario_noop(big, args.runs, SCRATCH / "noop")
        if not args.skip_pyinfra:
            small = make_fixture(SCRATCH / "tree-small", min(PYINFRA_FILES, args.files), SEED + 1)
            rows += scenario_pyinfra(small, args.runs, SCRATCH / "pyinfra")
        rows += scenario_first_apply(big, args.runs, SCRATCH / "first")
    except BenchError as exc:
        print(f"benchmark aborted: {exc}", file=sys.stderr)
        return 1
    finally:
        if not args.keep:
            shutil.rmtree(SCRATCH, ignore_errors=True)
    memory = memory_rows(rows)
    env["loadavg_end"] = os.getloadavg()
    env["disk_probes"] = DISK[0].log
    env["wall_s"] = round(time.time() - started, 1)
    print(render(rows, memory))
    print(f"\ndisk probe: {DISK[0].baseline * 1000:.0f} ms at the start", end="")
    for entry in DISK[0].log:
        state = "quiet" if entry["quiet"] else "NOT quiet"
        print(f"; {entry['probe_ms'][-1]:.0f} ms ({state}) before {entry['before']}", end="")
    print()
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(
        json.dumps(
            {
                "benchmark": "local_sync",
                "files": args.files,
                "runs": args.runs,
                "environment": env,
                "rows": [r.to_json() for r in rows],
                "memory": memory,
            },
            indent=2,
        )
    )
    print(f"\nresults: {RESULTS}")
    failed = [r for r in rows if r.passed is False] + [m for m in memory if not m["passed"]]
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
