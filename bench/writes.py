#!/usr/bin/env python3
"""Bytes a first apply sends to the disk, against ``rsync -a``: what the time is spent on.

``local_sync.py`` times a first apply of 10,000 files; on a virtual disk that
throttles writes, its time follows the bytes and flushes a run makes the
device wait for. This counts them from the device's own statistics
(``/sys/dev/block/MAJOR:MINOR/stat``, Linux only):

- ``during``: written while the command ran (a durable apply flushes as it goes);
- ``in all``: written once everything was flushed after it (rsync leaves it
  all to the kernel's write-back, after it exits).

trueup runs twice: with its state folder on the same disk, and on tmpfs
(``/dev/shm``), which splits the journal's and stat cache's share from the
tree's. Other writers on the same device add to every figure: run it on an
idle machine, several times.

    .venv/bin/python bench/writes.py                 # 10,000 files, 3 runs each
    .venv/bin/python bench/writes.py --files 1000 --runs 1
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from local_sync import (  # a sibling script, not a package
    SEED,
    TRUEUP,
    VARIANTS,
    WORK,
    fresh_dir,
    make_fixture,
    trueup_cmd,
    trueup_env,
)

SCRATCH = WORK / "writes"
TMPFS = Path("/dev/shm")
SECTOR = 512


def device_stat(path: Path) -> Path:
    """The statistics file of the block device holding ``path``."""
    st = os.stat(path)
    return Path(f"/sys/dev/block/{os.major(st.st_dev)}:{os.minor(st.st_dev)}/stat")


def written(stat_file: Path) -> tuple[int, int]:
    """Bytes and write requests the device has completed so far."""
    fields = stat_file.read_text().split()
    return int(fields[6]) * SECTOR, int(fields[4])


def measure(run: Callable[[], None], stat_file: Path) -> tuple[float, int, int, int]:
    """Seconds, bytes written during ``run``, bytes written in all, write requests in all."""
    os.sync()
    time.sleep(1)  # the flush's own requests complete before the count starts
    before, requests = written(stat_file)
    started = time.perf_counter()
    run()
    seconds = time.perf_counter() - started
    during, _ = written(stat_file)
    os.sync()
    time.sleep(1)
    after, requests_after = written(stat_file)
    return seconds, during - before, after - before, requests_after - requests


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--files", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args(argv)
    if not TRUEUP.exists():
        print(f"no trueup at {TRUEUP}; run scripts/bootstrap first", file=sys.stderr)
        return 1
    fresh_dir(SCRATCH)
    fixture = make_fixture(SCRATCH / "tree", args.files, SEED)
    stat_file = device_stat(SCRATCH)
    profile = fixture.base / VARIANTS["files-json"]

    def rsync(i: int) -> None:
        dst = fresh_dir(SCRATCH / f"rsync-{i}")
        subprocess.run(["rsync", "-a", f"{fixture.src}/", f"{dst}/"], check=True)

    def trueup(data_parent: Path) -> Callable[[int], None]:
        def run(i: int) -> None:
            data = fresh_dir(data_parent / f"trueup-data-{os.getpid()}-{i}")
            root = fresh_dir(SCRATCH / f"root-{i}")
            command = [str(part) for part in trueup_cmd("apply", profile, root)]
            try:
                subprocess.run(command, env=trueup_env(data), check=True, capture_output=True)
            finally:
                if data_parent == TMPFS:
                    shutil.rmtree(data, ignore_errors=True)

        return run

    tools: dict[str, Callable[[int], None]] = {
        "rsync -a": rsync,
        f"trueup apply, {args.files:,} file resources": trueup(SCRATCH),
    }
    if TMPFS.is_dir():
        tools[f"trueup apply, {args.files:,} file resources, state on tmpfs"] = trueup(TMPFS)
    samples: dict[str, list[tuple[float, int, int, int]]] = {name: [] for name in tools}
    try:
        for i in range(args.runs):  # the tools take turns: the disk's mood hits them alike
            for name, tool in tools.items():
                samples[name].append(measure(lambda: tool(i), stat_file))  # noqa: B023
    finally:
        shutil.rmtree(SCRATCH, ignore_errors=True)
    print(f"{'tool':54s} {'median s':>8s} {'MB during':>9s} {'MB in all':>9s} {'writes':>7s}")
    for name, rows in samples.items():
        columns = zip(*rows, strict=True)
        seconds, during, total, requests = (statistics.median(column) for column in columns)
        print(f"{name:54s} {seconds:8.2f} {during / 1e6:9.1f} {total / 1e6:9.1f} {requests:7.0f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
