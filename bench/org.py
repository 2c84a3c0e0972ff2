#!/usr/bin/env python3
"""Org benchmark: plan and apply of a large org against the fake providers.

Run on demand, never from the test suite::

    .venv/bin/python bench/org.py                  # 500 records, 20 apps, 10 projects, 50 ms
    .venv/bin/python bench/org.py --runs 3 --apply-latency 0.005

The org: 500 DNS records (5 pages of 100), 20 Coolify apps, 10 ZITADEL
projects (2 roles and an OIDC app each), mail routing with one route, chat.
Every fake answers each request after ``--latency`` seconds (50 ms).

1. **no-op plan**: after the org is applied, ``OrgEngine.plan`` in-process
   (declaration, store, all three providers' reads, planner, unmanaged
   items), against each provider's scope read alone (the same session
   ``load`` a plan runs). Target: plan median <= 1.5 x the slowest
   provider's median. The whole ``trueup org plan`` command (interpreter
   start-up included) is timed too, for reference.
2. **first apply**: from nothing, with independent steps run concurrently
   (the defaults: Cloudflare 16, Coolify 6, ZITADEL 8 in flight), median of
   ``--apply-runs``, against the same apply one step at a time
   (``TRUEUP_REMOTE_CONCURRENCY=1``, ``--serial-runs``, 0 to skip).
   Target: the concurrent median <= 10 s at 50 ms latency.
3. **first apply under faults**: from nothing, once with no faults (the
   minimum number of requests this design needs), once with 10 % of
   requests answered 429 or 5xx (seeded; ``Retry-After: 0`` so the run
   measures requests, not sleeping), both concurrent. Targets: it
   converges, every provider holds exactly one of each declared object
   (0 duplicates), and its request count is within 1.2 x the minimum.

Results go to ``bench/.work/org-results.json``.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
WORK = BENCH / ".work"
RESULTS = WORK / "org-results.json"
TRUEUP = REPO / ".venv" / "bin" / "trueup"
sys.path.insert(0, str(REPO / "src"))

from trueup.declare.org import load_org  # noqa: E402
from trueup.org.engine import OrgEngine  # noqa: E402
from trueup.org.services import open_services  # noqa: E402
from trueup.providers.http import RetryPolicy  # noqa: E402
from trueup.settings import Settings  # noqa: E402
from trueup.state.store import Store  # noqa: E402

PROVIDERS = ("cloudflare", "coolify", "zitadel")


def org_file(records: int, apps: int, projects: int) -> str:
    lines = ['[org]\nid = "bench"\nname = "Bench Co"\ndomain = "bench.test"\n']
    for p in range(projects):
        lines.append(
            f'[[identity.project]]\nname = "project-{p:02d}"\nroles = ["admin", "member"]\n'
            f'apps = [{{ name = "web-{p:02d}", redirect_uris = '
            f'["https://p{p:02d}.bench.test/callback"] }}]\n'
        )
    for n in range(records):
        lines.append(
            f'[[dns]]\ntype = "A"\nname = "host-{n:03d}"\ncontent = "10.{n // 250}.{n % 250}.1"\n'
        )
    lines.append(
        '[mail]\nlevel = "forward"\n'
        'routes = [{ address = "hello@bench.test", forward_to = ["owner@example.com"] }]\n'
    )
    for a in range(apps):
        lines.append(
            f'[[app]]\nname = "app-{a:02d}"\nimage = "ghcr.io/bench/app-{a:02d}:1.0"\n'
            f'domains = ["https://app-{a:02d}.bench.test"]\nenv = {{ LOG_LEVEL = "info" }}\n'
        )
    lines.append('[chat]\nimage = "ghcr.io/bench/chat:1.0"\n')
    return "\n".join(lines)


class RemoteFakes:
    """The three fakes, each in its own process (as three SaaS providers would be).

    In-process fakes would share the benchmark's interpreter lock with the
    client and skew the timings; here each provider serves from its own
    process and is driven through its ``/_fake`` control endpoints.
    """

    def __init__(self) -> None:
        self.processes: list[subprocess.Popen[str]] = []
        self.origins: dict[str, str] = {}
        self.urls: dict[str, str] = {}
        self.tokens: dict[str, str] = {}
        for provider in PROVIDERS:
            process = subprocess.Popen(
                [sys.executable, "-m", "trueup.testing.servers"],
                stdout=subprocess.PIPE,
                text=True,
                env={**os.environ, "PYTHONPATH": str(REPO / "src")},
            )
            self.processes.append(process)
            assert process.stdout is not None
            described = json.loads(process.stdout.readline())
            self.urls[provider] = described[f"{provider}_url"]
            self.tokens[provider] = described["tokens"][provider]
            self.origins[provider] = described["control"][provider].removesuffix("/_fake")
        self.client = httpx.Client(timeout=30)

    def control(self, provider: str, method: str, path: str, body: Any = None) -> Any:
        response = self.client.request(method, f"{self.origins[provider]}/_fake/{path}", json=body)
        response.raise_for_status()
        return response.json()

    def close(self) -> None:
        self.client.close()
        for process in self.processes:
            process.terminate()
        for process in self.processes:
            process.wait(10)


class Bench:
    def __init__(self, fakes: RemoteFakes, base: Path, path: Path) -> None:
        self.fakes = fakes
        self.base = base
        self.path = path
        self.env = {}
        for provider in PROVIDERS:
            upper = provider.upper()
            self.env[f"TRUEUP_{upper}_URL"] = fakes.urls[provider]
            self.env[f"TRUEUP_{upper}_TOKEN"] = fakes.tokens[provider]

    def fresh(self, label: str) -> Settings:
        """Empty fakes (a zone, a confirmed address) and an empty store."""
        for provider in PROVIDERS:
            self.fakes.control(provider, "POST", "reset", {})
            self.fakes.control(provider, "POST", "faults", {"token_limit": 0})
        self.fakes.control(
            "cloudflare",
            "POST",
            "seed",
            {
                "zones": ["bench.test"],
                "addresses": ["owner@example.com"],
                "verify_addresses": ["owner@example.com"],
            },
        )
        data = self.base / label
        data.mkdir(parents=True, exist_ok=True)
        settings = Settings(data=data, state_url=f"sqlite:///{data / 'state.db'}")
        Store.open(settings.state_url).close()
        return settings

    def engine(self, settings: Settings, **env: str) -> OrgEngine:
        return OrgEngine(settings, env={**self.env, **env}, policy=RetryPolicy(attempts=8))

    def set_faults(self, **changes: Any) -> None:
        for provider in PROVIDERS:
            self.fakes.control(provider, "POST", "faults", changes)

    def log(self, provider: str) -> list[dict[str, Any]]:
        requests: list[dict[str, Any]] = self.fakes.control(provider, "GET", "requests")["requests"]
        return requests

    def requests(self) -> dict[str, int]:
        return {provider: len(self.log(provider)) for provider in PROVIDERS}

    def clear_logs(self) -> None:
        for provider in PROVIDERS:
            self.fakes.control(provider, "DELETE", "requests")

    def apply(self, settings: Settings, **env: str) -> tuple[dict[str, Any], float]:
        engine = self.engine(settings, **env)
        started = time.perf_counter()
        try:
            prepared = engine.prepare(self.path, permission="apply")
            result = engine.apply(prepared, prepared.plan, "Bench Co")
        finally:
            engine.close()
        return result.to_json(), time.perf_counter() - started

    def inventory(self) -> dict[str, Any]:
        cloudflare = self.fakes.control("cloudflare", "GET", "state")
        coolify = self.fakes.control("coolify", "GET", "state")
        zitadel = self.fakes.control("zitadel", "GET", "state")

        def dupes(names: list[str]) -> int:
            return sum(n - 1 for n in Counter(names).values())

        records = [
            f"{r['type']} {r['name']}"
            for zone in cloudflare["records"].values()
            for r in zone.values()
            if not r["meta"].get("email_routing")
        ]
        apps = [a["name"] for a in coolify["applications"].values()]
        projects = [p["name"] for p in zitadel["projects"].values()]
        oidc = [a["name"] for group in zitadel["apps"].values() for a in group.values()]
        return {
            "dns records": len(records),
            "coolify projects": len(coolify["projects"]),
            "coolify apps": len(apps),
            "zitadel projects": len(projects),
            "oidc apps": len(oidc),
            "duplicates": dupes(records) + dupes(apps) + dupes(projects) + dupes(oidc),
        }


def scope_readers(bench: Bench, settings: Settings) -> dict[str, Callable[[], None]]:
    """Each provider's scope read alone, through the same code a plan uses."""
    org = load_org(bench.path)
    store = Store.open(settings.state_url)
    applied = store.applied(f"org:{org.id}@{org.domain}")
    store.close()
    readers: dict[str, Callable[[], None]] = {}
    for provider in PROVIDERS:
        only = {rid: a for rid, a in applied.items() if a.resource.kind.startswith(provider)}
        alone = dataclasses.replace(
            org, resources=tuple(r for r in org.resources if r.kind.startswith(provider))
        )

        def read(alone: Any = alone, only: Any = only) -> None:
            open_services(alone, only, settings.data, bench.env).close()

        readers[provider] = read
    return readers


def timed(function: Callable[[], Any]) -> float:
    started = time.perf_counter()
    function()
    return time.perf_counter() - started


def noop_plan(bench: Bench, runs: int, latency: float) -> dict[str, Any]:
    settings = bench.fresh("noop")
    applied, _ = bench.apply(settings)
    assert applied["outcome"] == "converged", applied["message"]
    bench.set_faults(latency=latency)

    def plan() -> None:
        engine = bench.engine(settings)
        try:
            prepared = engine.plan(bench.path)
            assert not prepared.plan.changes
        finally:
            engine.close()

    plan()  # warm imports and connections once
    # Interleaved, so a busy machine slows the plan and the reads alike.
    series: dict[str, list[float]] = {"plan": [], **{p: [] for p in PROVIDERS}}
    jobs: dict[str, Callable[[], None]] = {"plan": plan, **scope_readers(bench, settings)}
    for run in range(runs):
        names = list(jobs)
        for name in names[run % len(names) :] + names[: run % len(names)]:
            series[name].append(timed(jobs[name]))
    reads = {p: statistics.median(series[p]) for p in PROVIDERS}
    planned = statistics.median(series["plan"])
    env = {**os.environ, **bench.env, "TRUEUP_DATA": str(settings.data)}
    cli = statistics.median(
        timed(
            lambda: subprocess.run(
                [str(TRUEUP), "org", "plan", str(bench.path)],
                env=env,
                check=True,
                capture_output=True,
            )
        )
        for _ in range(3)
    )
    bench.set_faults(latency=0)
    slowest = max(reads.values())
    return {
        "latency_s": latency,
        "provider_read_median_s": {k: round(v, 4) for k, v in reads.items()},
        "plan_median_s": round(planned, 4),
        "cli_plan_median_s": round(cli, 4),
        "ratio_to_slowest_provider": round(planned / slowest, 3),
        "target": 1.5,
        "ok": planned <= 1.5 * slowest,
    }


def first_apply(bench: Bench, latency: float, runs: int, serial_runs: int) -> dict[str, Any]:
    """A first apply from nothing: concurrent (the defaults) against one step at a time."""

    def once(label: str, **env: str) -> float:
        settings = bench.fresh(label)
        bench.set_faults(latency=latency)
        result, took = bench.apply(settings, **env)
        bench.set_faults(latency=0)
        assert result["outcome"] == "converged", result["message"]
        assert bench.inventory()["duplicates"] == 0
        return took

    concurrent = [once(f"first-{n}") for n in range(runs)]
    serial = [once(f"serial-{n}", TRUEUP_REMOTE_CONCURRENCY="1") for n in range(serial_runs)]
    median = statistics.median(concurrent)
    report: dict[str, Any] = {
        "latency_s": latency,
        "concurrent_s": [round(t, 2) for t in concurrent],
        "concurrent_median_s": round(median, 2),
        "target_s": 10.0,
        "ok": median <= 10.0,
    }
    if serial:
        report["serial_s"] = [round(t, 2) for t in serial]
        report["serial_median_s"] = round(statistics.median(serial), 2)
        report["speedup"] = round(statistics.median(serial) / median, 1)
    return report


def faulty_apply(bench: Bench, latency: float, ratio: float, seed: int) -> dict[str, Any]:
    settings = bench.fresh("minimum")
    bench.set_faults(latency=latency)
    bench.clear_logs()
    clean, clean_time = bench.apply(settings)
    minimum = bench.requests()
    assert clean["outcome"] == "converged", clean["message"]
    expected = bench.inventory()

    settings = bench.fresh("faulty")
    bench.set_faults(latency=latency, fail_ratio=ratio, retry_after=0, seed=seed)
    bench.clear_logs()
    faulty, faulty_time = bench.apply(settings)
    sent = bench.requests()
    faults = {p: sum(1 for e in bench.log(p) if e["fault"]) for p in PROVIDERS}
    bench.set_faults(latency=0, fail_ratio=0)
    found = bench.inventory()
    total_min, total = sum(minimum.values()), sum(sent.values())
    return {
        "latency_s": latency,
        "fail_ratio": ratio,
        "minimum_requests": minimum,
        "faulty_requests": sent,
        "injected_faults": faults,
        "request_ratio": round(total / total_min, 3),
        "clean_apply_s": round(clean_time, 2),
        "faulty_apply_s": round(faulty_time, 2),
        "outcome": faulty["outcome"],
        "inventory": found,
        "target": 1.2,
        "ok": faulty["outcome"] == "converged"
        and found == expected
        and found["duplicates"] == 0
        and total <= 1.2 * total_min,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--records", type=int, default=500)
    parser.add_argument("--apps", type=int, default=20)
    parser.add_argument("--projects", type=int, default=10)
    parser.add_argument("--latency", type=float, default=0.05)
    parser.add_argument("--apply-latency", type=float, default=0.05)
    parser.add_argument("--fail-ratio", type=float, default=0.1)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--runs", type=int, default=9)
    parser.add_argument("--apply-runs", type=int, default=3)
    parser.add_argument("--serial-runs", type=int, default=1)
    args = parser.parse_args()
    WORK.mkdir(parents=True, exist_ok=True)
    fakes = RemoteFakes()
    with tempfile.TemporaryDirectory(dir=WORK) as scratch:
        base = Path(scratch)
        path = base / "bench.toml"
        path.write_text(org_file(args.records, args.apps, args.projects))
        os.environ["TRUEUP_DATA"] = str(base / "default")
        bench = Bench(fakes, base, path)
        results = {
            "org": {"records": args.records, "apps": args.apps, "projects": args.projects},
            "noop_plan": noop_plan(bench, args.runs, args.latency),
            "first_apply": first_apply(
                bench, args.apply_latency, args.apply_runs, args.serial_runs
            ),
            "faulty_first_apply": faulty_apply(
                bench, args.apply_latency, args.fail_ratio, args.seed
            ),
        }
    fakes.close()
    RESULTS.write_text(json.dumps(results, indent=2) + "\n")
    print(json.dumps(results, indent=2))
    checks = ("noop_plan", "first_apply", "faulty_first_apply")
    return 0 if all(results[name]["ok"] for name in checks) else 1


if __name__ == "__main__":
    sys.exit(main())
