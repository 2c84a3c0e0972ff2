#!/usr/bin/env python3
"""How long the config kind takes to plan an edit in a large YAML or JSON file.

Planning a ``config`` resource reads the file (observe: parse, every key flat,
the declared keys, the mappings kept whole) and renders the edited text the plan
shows as a diff (set one key, ``to_text``). On generated files shaped like real
configs (comments, blank lines, anchors and aliases, block scalars, nested
mappings and lists) this bench times those steps through
:mod:`trueup.kinds.formats` in this process (the format layer alone), then the
whole ``trueup plan`` command on a profile that edits the file, as a person runs
it (start-up, profile, store, observe, plan, diff), beside peers run on the same
file in the same rounds: ruamel.yaml's round trip and ``yq -y`` (jq over YAML)
for YAML, Python's json module and ``jq`` for JSON. The peers neither keep
comments nor show a diff: they are the floor of reading and writing the file.

Issue 26 asks, whole process: a 1 MB YAML config plans in at most 3 s, a 5 MB
JSON in at most 2 s. The exit status is 1 when a median is over its budget.

Usage: ``.venv/bin/python bench/config_formats.py [--runs N] [--yaml-mb X] [--json-mb Y]``
(``--profile yaml|json`` prints the hottest functions of one in-process run
instead). Scratch files go under bench/.work/config_formats (git-ignored).
"""

from __future__ import annotations

import argparse
import cProfile
import json
import os
import pstats
import resource
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

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


# --- whole process -----------------------------------------------------------------
WORK = Path(__file__).resolve().parent / ".work" / "config_formats"
TRUEUP = str(Path(sys.executable).parent / "trueup")

#: Each case's file name, keys as a profile declares them, and the same edit for the
#: peers: a jq filter (jq for JSON, yq for YAML, which reads and writes YAML through
#: jq, losing comments) and the lines a ruamel.yaml or json script runs.
_WHOLE = {
    "yaml": (
        "values.yaml",
        '{ "service7.replicas" = 9, "service7.labels.team" = "core", zz_new = { a = 1 } }',
        '.service7.replicas = 9 | .service7.labels.team = "core" | .zz_new = {"a": 1}',
    ),
    "json": (
        "settings.json",
        '{ "entry7.enabled" = true, "entry7.options.timeout" = 99, zz_new = { a = 1 } }',
        ".entry7.enabled = true | .entry7.options.timeout = 99 | .zz_new = {a: 1}",
    ),
}
_RUAMEL = (
    "import sys\nfrom ruamel.yaml import YAML\nyaml = YAML()\n"
    "data = yaml.load(open(sys.argv[1]))\ndata['service7']['replicas'] = 9\n"
    "data['service7']['labels']['team'] = 'core'\ndata['zz_new'] = {'a': 1}\n"
    "yaml.dump(data, sys.stdout)\n"
)
_JSON = (
    "import json, sys\ndata = json.load(open(sys.argv[1]))\n"
    "data['entry7']['enabled'] = True\ndata['entry7']['options']['timeout'] = 99\n"
    "data['zz_new'] = {'a': 1}\njson.dump(data, sys.stdout, indent=2)\n"
)


def whole_process(fmt: str, text: str, runs: int) -> dict[str, tuple[float, float]]:
    """Median wall-clock and CPU seconds of ``trueup plan`` on a profile editing the file
    (the state store made beforehand, as on any machine trueup ran on), and of each
    peer on the same file."""
    name, keys, jq_filter = _WHOLE[fmt]
    base = WORK / fmt
    shutil.rmtree(base, ignore_errors=True)
    (base / "root").mkdir(parents=True)
    target = base / "root" / name
    target.write_text(text)
    profile = base / "profile.toml"
    profile.write_text(
        f'[profile]\nid = "bench-{fmt}"\nname = "Bench"\n\n[[resource]]\nid = "big"\n'
        f'kind = "config"\ntarget = "{name}"\nformat = "{fmt}"\nkeys = {keys}\n'
    )
    env = {**os.environ, "TRUEUP_DATA": str(base / "data"), "NO_COLOR": "1"}
    commands = {"trueup plan": [TRUEUP, "plan", str(profile), "--root", str(base / "root")]}
    if fmt == "yaml":
        commands["ruamel.yaml"] = [sys.executable, "-c", _RUAMEL, str(target)]
        if shutil.which("yq"):
            commands["yq -y"] = ["yq", "-y", jq_filter, str(target)]
    else:
        commands["python json"] = [sys.executable, "-c", _JSON, str(target)]
        if shutil.which("jq"):
            commands["jq"] = ["jq", jq_filter, str(target)]
    _run(commands["trueup plan"], env)  # makes the state store
    times: dict[str, list[tuple[float, float]]] = {what: [] for what in commands}
    for _ in range(runs):  # interleaved: each peer meets the same load as trueup
        for what, args in commands.items():
            times[what].append(_timed(args, env))
    return {
        what: (statistics.median(t[0] for t in found), statistics.median(t[1] for t in found))
        for what, found in times.items()
    }


def _timed(args: list[str], env: dict[str, str]) -> tuple[float, float]:
    """Wall-clock and CPU (user + system) seconds of one run: on a machine other work
    shares, the CPU time says what the command itself costs."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    _run(args, env)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime


def _run(args: list[str], env: dict[str, str]) -> None:
    done = subprocess.run(args, env=env, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"{args[0]} exited {done.returncode}:\n{done.stdout}{done.stderr}")


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
    print("The format layer in this process (parse, flatten, edit, render):")
    print(f"{'format':<6} {'size':>9} {'median s':>9} {'min s':>7}")
    for fmt, (text, keys, _) in cases.items():
        median, fastest = median_seconds(lambda: plan_once(fmt, text, keys), args.runs)  # noqa: B023
        size = f"{len(text.encode()) / 1_000_000:.2f} MB"
        print(f"{fmt:<6} {size:>9} {median:>9.2f} {fastest:>7.2f}")
    print(f"\nWhole process, medians of {args.runs} interleaved runs (the budget is trueup's):")
    print(
        f"{'format':<6} {'command':<12} {'wall s':>7} {'cpu s':>6} {'trueup/it':>10} "
        f"{'budget s':>9}  load {os.getloadavg()[0]:.1f}"
    )
    failed = False
    for fmt, (text, _, budget) in cases.items():
        medians = whole_process(fmt, text, args.runs)
        ours = medians["trueup plan"][0]
        for what, (wall, cpu) in medians.items():
            ratio = "" if what == "trueup plan" else f"{ours / wall:.2f}x"
            limit = f"{budget:.1f}" if what == "trueup plan" else ""
            print(f"{fmt:<6} {what:<12} {wall:>7.2f} {cpu:>6.2f} {ratio:>10} {limit:>9}")
        failed |= ours > budget
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
