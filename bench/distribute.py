"""One source, 200 followers: what one changed file costs the wire, the source and the fleet.

A 1,000-file profile is published and served by `trueup source serve` (its own
process, real HTTPS on loopback). 200 followers, async clients in this
process, hold the first revision (its share and blobs cached, as after a
sync). One file changes and is published; then every follower syncs at once,
as `trueup sync` does: the revision with If-None-Match, the signature and
share verified, the one missing blob downloaded and checked, a report posted.

Measured: bytes each follower received (bodies and headers), the source's CPU
time per follower sync (/proc, user + system), the fleet's converged time
(first request to last report), and, against a real follower process, the
median of a whole `trueup sync` on an unchanged source next to the median of
`trueup --version` in the same run. Compared with `rsync -a --stats` of the
same change into a copy of the tree (bytes sent + received, per follower).

    .venv/bin/python bench/distribute.py [--followers 200] [--files 1000] [--runs 11]

Scratch files go under bench/.work/distribute (git-ignored), or --scratch.
The bench followers verify and fetch exactly as trueup's follower does, but do
not run the plan/apply half (timed by bench/workstation.py and local_sync.py).
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import hashlib
import json
import os
import re
import shutil
import signal
import ssl
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx

from trueup.engine import Engine
from trueup.settings import Settings
from trueup.source.admin import SourceAdmin
from trueup.source.enrollment import read_invitation
from trueup.source.keys import verify_signature
from trueup.source.wire import Revision, check_share, parse

BENCH = Path(__file__).resolve().parent
TRUEUP = str(Path(sys.executable).parent / "trueup")


def run(env: dict[str, str], *args: str) -> dict[str, Any]:
    done = subprocess.run([TRUEUP, *args, "--json"], env=env, capture_output=True, text=True)
    if done.returncode not in (0,):
        raise SystemExit(f"trueup {' '.join(args)} failed: {done.stdout}{done.stderr}")
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def make_profile(base: Path, files: int) -> Path:
    lines = ['[profile]\nid = "fleet"\nname = "Fleet"\n']
    for i in range(files):
        path = base / f"files/d{i // 100:02d}/f{i:04d}.md"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"# note {i}\n" + f"line {i} of the fleet's shared notes\n" * 30)
        lines.append(
            f'[[resource]]\nid = "f{i:04d}"\nkind = "file"\ntarget = "notes/f{i:04d}.md"\n'
            f'source = "files/d{i // 100:02d}/f{i:04d}.md"\n'
        )
    profile = base / "fleet.toml"
    profile.write_text("\n".join(lines))
    return profile


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class Follower:
    """What `trueup sync` keeps between syncs: credential, ETag, seq, cached blobs."""

    def __init__(self, credential: str, signing: str) -> None:
        self.auth = {"Authorization": f"Bearer {credential}"}
        self.signing = signing
        self.etag = ""
        self.held: Revision | None = None
        self.blobs: set[str] = set()
        self.received = 0

    def count(self, response: httpx.Response) -> None:
        head = sum(len(k) + len(v) + 4 for k, v in response.headers.items())
        self.received += len(response.content) + head + len("HTTP/1.1 200 OK\r\n")

    async def sync(self, client: httpx.AsyncClient) -> None:
        answer = await client.get("/v1/revision", headers={**self.auth, "If-None-Match": self.etag})
        self.count(answer)
        if answer.status_code == 304:
            return
        body = answer.json()
        key = base64.b64decode(body["key"])
        assert "sha256:" + hashlib.sha256(key).hexdigest() == self.signing
        revision = parse(body, self.held)
        assert verify_signature(key, revision.signature, revision.signed_bytes())
        check_share(revision)
        assert self.held is None or revision.seq > self.held.seq
        for digest in sorted(set(revision.blobs()) - self.blobs):
            blob = await client.get(f"/v1/blobs/{digest}", headers=self.auth)
            self.count(blob)
            assert hashlib.sha256(blob.content).hexdigest() == digest
            self.blobs.add(digest)
        self.etag, self.held = answer.headers["etag"], revision
        report = {"revision": revision.id, "seq": revision.seq, "outcome": "converged"}
        self.count(await client.post("/v1/reports", json=report, headers=self.auth))


def client_for(endpoint: str) -> httpx.AsyncClient:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE  # the bench's followers pin nothing; trueup's do
    return httpx.AsyncClient(
        base_url=endpoint,
        verify=context,
        timeout=120,
        limits=httpx.Limits(max_connections=400, max_keepalive_connections=400),
    )


async def enroll_all(endpoint: str, codes: list[str], signing: str) -> list[Follower]:
    async with client_for(endpoint) as client:
        answers = await asyncio.gather(
            *(
                client.post("/v1/enroll", json={"code": code, "name": f"bench-{i}"})
                for i, code in enumerate(codes)
            )
        )
    return [Follower(a.json()["credential"], signing) for a in answers]


async def fleet_sync(endpoint: str, followers: list[Follower]) -> float:
    async with client_for(endpoint) as client:
        started = time.perf_counter()
        await asyncio.gather(*(f.sync(client) for f in followers))
        return time.perf_counter() - started


def rsync_bytes(tree: Path, copy: Path) -> int:
    done = subprocess.run(
        ["rsync", "-a", "--stats", f"{tree}/", f"{copy}/"], capture_output=True, text=True
    )
    sent = re.search(r"Total bytes sent: ([\d,]+)", done.stdout)
    got = re.search(r"Total bytes received: ([\d,]+)", done.stdout)
    assert sent and got, done.stdout + done.stderr
    return int(sent[1].replace(",", "")) + int(got[1].replace(",", ""))


def whole_process(env: dict[str, str], args: list[str], runs: int) -> float:
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        done = subprocess.run([TRUEUP, *args], env=env, capture_output=True, text=True)
        times.append(time.perf_counter() - started)
        assert done.returncode == 0, done.stdout + done.stderr
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--followers", type=int, default=200)
    parser.add_argument("--files", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=11)
    parser.add_argument("--scratch", type=Path, default=BENCH / ".work" / "distribute")
    args = parser.parse_args()
    scratch: Path = args.scratch
    shutil.rmtree(scratch, ignore_errors=True)
    source_env = {**os.environ, "TRUEUP_DATA": str(scratch / "source"), "NO_COLOR": "1"}
    profile = make_profile(scratch / "profile", args.files)
    run(source_env, "source", "init")
    run(source_env, "source", "publish", str(profile))
    server = subprocess.Popen(
        [TRUEUP, "source", "serve", "--port", "0"],
        env=source_env,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert server.stdout is not None
        endpoint = server.stdout.readline().removeprefix("serving on ").strip()
        results = measure(args, scratch, source_env, profile, endpoint, server.pid)
    finally:
        server.send_signal(signal.SIGTERM)
        server.wait(timeout=30)
    out = scratch / "results.json"
    out.write_text(json.dumps(results, indent=2))
    for name, value in results.items():
        print(f"{name:48} {value}")
    print(f"(written to {out})")


def measure(
    args: argparse.Namespace,
    scratch: Path,
    source_env: dict[str, str],
    profile: Path,
    endpoint: str,
    pid: int,
) -> dict[str, Any]:
    data = Path(source_env["TRUEUP_DATA"])
    admin = SourceAdmin(Engine(Settings(data, f"sqlite:///{data / 'state.db'}", actor="bench")))
    invitations = [admin.invite(endpoint, [], 3600)[0] for _ in range(args.followers)]
    codes = [str(read_invitation(text)["code"]) for text in invitations]
    signing = admin.keys.signing_fingerprint()
    followers = asyncio.run(enroll_all(endpoint, codes, signing))
    # The first sync of one follower pays for every blob; the others start where it ends.
    first = followers[0]
    asyncio.run(fleet_sync(endpoint, [first]))
    first_bytes = first.received
    for other in followers[1:]:
        other.etag, other.held, other.blobs = first.etag, first.held, set(first.blobs)

    # One real follower process, converged on the first revision.
    follower_env = {**os.environ, "TRUEUP_DATA": str(scratch / "follower"), "NO_COLOR": "1"}
    root = scratch / "follower-root"
    root.mkdir()
    invitation = run(source_env, "source", "invite", "--endpoint", endpoint)["data"]["invitation"]
    run(follower_env, "follow", invitation, "--name", "real")
    run(follower_env, "sync", "--apply", "--no-input", "--root", str(root))

    # rsync's copy of the same tree, in step with the first revision.
    tree, copy = profile.parent / "files", scratch / "rsync-copy"
    shutil.copytree(tree, copy)

    changed = profile.parent / "files/d00/f0000.md"
    changed.write_text(changed.read_text() + "one more line\n")
    run(source_env, "source", "publish", str(profile))
    for follower in followers:
        follower.received = 0
    cpu_before, own_before = cpu_seconds(pid), time.process_time()
    converged = asyncio.run(fleet_sync(endpoint, followers))
    cpu, own = cpu_seconds(pid) - cpu_before, time.process_time() - own_before
    received = [f.received for f in followers]
    assert all(f.held is not None and f.held.seq == 2 for f in followers)
    rsync = rsync_bytes(tree, copy)

    started = time.perf_counter()
    real = run(follower_env, "sync", "--apply", "--no-input", "--root", str(root))["data"]
    real_seconds = time.perf_counter() - started
    sync_args = ["sync", "--root", str(root)]
    unchanged = whole_process(follower_env, sync_args, args.runs)
    version = whole_process(follower_env, ["--version"], args.runs)
    return {
        "followers": args.followers,
        "files": args.files,
        "changed file bytes": changed.stat().st_size,
        "bytes per follower (median)": statistics.median(received),
        "bytes per follower (max)": max(received),
        "rsync -a bytes per follower": rsync,
        "bytes ratio trueup/rsync": round(statistics.median(received) / rsync, 3),
        "source CPU per follower sync (ms)": round(cpu / args.followers * 1000, 3),
        "fleet converged (s)": round(converged, 3),
        "source CPU, whole fleet (s)": round(cpu, 3),
        "followers' CPU, whole fleet (s)": round(own, 3),
        "first sync of one follower (bytes)": first_bytes,
        "trueup sync --apply of the change: bytes received": real["received"],
        "trueup sync --apply of the change: whole process (s)": round(real_seconds, 3),
        "unchanged sync, whole process median (ms)": round(unchanged * 1000, 1),
        "trueup --version median (ms)": round(version * 1000, 1),
        "unchanged sync / --version": round(unchanged / version, 2),
        "load average": os.getloadavg(),
    }


if __name__ == "__main__":
    main()
