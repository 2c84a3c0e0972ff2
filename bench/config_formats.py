#!/usr/bin/env python3
"""How long the config kind takes to plan an edit in a large YAML or JSON file.

Planning a ``config`` resource reads the file (observe: parse, every key flat,
the declared keys, the mappings kept whole) and renders the edited text the plan
shows as a diff (set one key, ``to_text``). This bench does exactly those steps
through :mod:`trueup.kinds.formats` on generated files shaped like real configs
(comments, blank lines, anchors and aliases, block scalars, nested mappings and
lists), so it measures the format layer without a profile, a store or a CLI.

Issue 26 asks: a 1 MB YAML config plans in at most 3 s, a 5 MB JSON in at most 2 s.

Usage: ``.venv/bin/python bench/config_formats.py [--runs N] [--yaml-mb X] [--json-mb Y]``
(``--profile yaml|json`` prints the hottest functions of one run instead).
"""

from __future__ import annotations

import argparse
import cProfile
import json
import pstats
import statistics
import sys
import time
from collections.abc import Callable

from trueup.kinds.formats import load, parse_key_path
from trueup.kinds.formats import yaml as yaml_format

_SERVICE = """\
# Service {i}: the settings below are read by the deployment tooling.
service{i}:
  name: &name{i} svc-{i}
  image: registry.example.com/team/svc-{i}:1.{i}.0
  replicas: {replicas}
  enabled: true

  # Ports exposed by the container.
  ports:
    - name: http
      containerPort: 80{d}
      protocol: TCP
    - name: metrics
      containerPort: 90{d}
  labels:
    app: *name{i}
    tier: backend  # kept in sync with the chart
  resources: {{}}
    # limits:
    #   cpu: 100m
    #   memory: 128Mi
  script: |
    set -e
    echo "starting svc-{i}"
    exec /usr/bin/svc --port 80{d}
  description: >-
    A long description of service {i}, folded over
    two lines the way people write them.
  tags: [alpha, beta, gamma]

"""


def yaml_text(megabytes: float) -> str:
    """A YAML config of about ``megabytes`` MB, many top-level services."""
    parts: list[str] = ["# A large generated config.\n---\n"]
    size, i = 0, 0
    while size < megabytes * 1_000_000:
        part = _SERVICE.format(i=i, replicas=i % 5 + 1, d=i % 10)
        parts.append(part)
        size += len(part)
        i += 1
    return "".join(parts)


def json_text(megabytes: float) -> str:
    """A settings-like JSON object of about ``megabytes`` MB, indented by 2."""
    data: dict[str, object] = {}
    size, i = 0, 0
    while size < megabytes * 1_000_000:
        entry = {
            "name": f"extension-{i}",
            "enabled": i % 3 != 0,
            "version": f"1.{i}.0",
            "options": {"timeout": i, "paths": [f"/opt/{i}/bin", f"/opt/{i}/lib"], "ratio": 0.5},
            "description": "A setting that a person wrote and trueup must leave alone. " * 2,
        }
        data[f"entry{i}"] = entry
        size += len(json.dumps(entry, indent=2)) + 20
        i += 1
    return json.dumps(data, indent=2) + "\n"


def plan_once(fmt: str, text: str, keys: dict[str, object]) -> str:
    """What planning a config resource does with the file: observe, then render the edit.

    Each run starts as a fresh process would: nothing read before is remembered.
    """
    yaml_format.clear_cache()
    doc = load(fmt, text, origin=f"bench.{fmt}")
    doc.keys_flat()
    for key in keys:
        doc.get(parse_key_path(key))
        doc.shared_by(parse_key_path(key))
        doc.inherited(parse_key_path(key))
    doc.kept_whole()
    edited = load(fmt, text, origin=f"bench.{fmt}")
    for key, value in keys.items():
        edited.set(parse_key_path(key), value)
    return edited.to_text()


def median_seconds(work: Callable[[], object], runs: int) -> tuple[float, float]:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        work()
        times.append(time.perf_counter() - start)
    return statistics.median(times), min(times)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--yaml-mb", type=float, default=1.0)
    parser.add_argument("--json-mb", type=float, default=5.0)
    parser.add_argument("--profile", choices=["yaml", "json"])
    args = parser.parse_args(argv)

    cases = {
        "yaml": (
            yaml_text(args.yaml_mb),
            {"service7.replicas": 9, "service7.labels.team": "core", "zz_new": {"a": 1}},
            3.0,
        ),
        "json": (
            json_text(args.json_mb),
            {"entry7.enabled": True, "entry7.options.timeout": 99, "zz_new": {"a": 1}},
            2.0,
        ),
    }
    if args.profile:
        text, keys, _ = cases[args.profile]
        profiler = cProfile.Profile()
        profiler.runcall(plan_once, args.profile, text, keys)
        pstats.Stats(profiler).sort_stats("cumulative").print_stats(30)
        return 0
    print(f"{'format':<6} {'size':>9} {'median s':>9} {'min s':>7} {'budget s':>9}")
    failed = False
    for fmt, (text, keys, budget) in cases.items():
        median, fastest = median_seconds(lambda: plan_once(fmt, text, keys), args.runs)  # noqa: B023
        size = f"{len(text.encode()) / 1_000_000:.2f} MB"
        print(f"{fmt:<6} {size:>9} {median:>9.2f} {fastest:>7.2f} {budget:>9.1f}")
        failed |= median > budget
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
