"""Config files as people write them, edited through the ``trueup`` command.

JSON with comments and trailing commas (VS Code, Cursor and Zed settings), a
YAML file with an anchor, an alias and commented-out options, and a TOML file
with a multi-line string: apply sets the declared keys and every other byte
stays where the person put it; the next plan changes nothing. With the
real-world corpus beside the repository (52 files other projects wrote), every
file in it takes a key through ``trueup apply`` keeping its comments (skipped
when the corpus is absent; its files are read in place, never copied here).
"""

from __future__ import annotations

import sys
from pathlib import Path

from world import World

sys.path.insert(0, str(Path(__file__).parents[1] / "kinds" / "formats"))
from realconfigs import corpus

VSCODE = """\
{
    // Editor
    "editor.fontSize": 13,
    "editor.tabSize": 2, // as the team writes it
    /* Files */
    "files.exclude": {
        "**/.git": true,
    },
}
"""
VALUES = """\
# Chart values
containerPortName: &p http

service:
  port: *p
  # type: LoadBalancer
  # annotations: {}

replicas: 1
"""
CODEX = '''\
model = "gpt-5"
instructions = """
Be brief.
Cite the file you read.
"""

[sandbox]
mode = "read-only"
'''
PROFILE = """\
[profile]
id = "formats"
name = "Formats"

[[resource]]
id = "vscode"
kind = "config"
target = ".config/Code/User/settings.json"
keys = { '"editor.fontSize"' = 15, '"files.exclude"."**/node_modules"' = true }

[[resource]]
id = "values"
kind = "config"
target = "chart/values.yaml"
keys = { replicas = 3, "service.name" = "web" }

[[resource]]
id = "codex"
kind = "config"
target = ".codex/config.toml"
keys = { "sandbox.mode" = "workspace-write" }
"""


def put(world: World, target: str, text: str) -> Path:
    path = world.target(target)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_each_format_is_edited_keeping_what_the_person_wrote(world: World) -> None:
    vscode = put(world, ".config/Code/User/settings.json", VSCODE)
    values = put(world, "chart/values.yaml", VALUES)
    codex = put(world, ".codex/config.toml", CODEX)
    profile = str(world.write("formats.toml", PROFILE))
    root = str(world.root)
    done = world.run("apply", profile, "--root", root, "--yes")
    assert done.code == 0, done.out + done.err
    assert vscode.read_text() == (
        VSCODE.replace('"editor.fontSize": 13', '"editor.fontSize": 15').replace(
            '"**/.git": true,\n', '"**/.git": true,\n        "**/node_modules": true,\n'
        )
    )
    assert values.read_text() == VALUES.replace("port: *p\n", "port: *p\n  name: web\n").replace(
        "replicas: 1", "replicas: 3"
    )
    assert codex.read_text() == CODEX.replace('"read-only"', '"workspace-write"')
    again = world.run("plan", profile, "--root", root, "--json")
    assert again.code == 0, again.out + again.err
    assert {a["type"] for a in again.json["data"]["plan"]["actions"]} == {"no-op"}


def test_every_real_file_takes_a_new_key_keeping_its_comments(world: World) -> None:
    """Each file gets a key; one whose top level is no single mapping (a stream of
    Kubernetes documents, a list of pre-commit hooks) is drift naming why."""
    body = '[profile]\nid = "corpus"\nname = "Corpus"\n'
    written = {}
    for i, source in enumerate(corpus(".json", ".yaml", ".yml", ".toml")):
        target = f"corpus/{i}{source.suffix}"
        written[f"f{i}"] = (put(world, target, source.read_text()), source.read_text())
        body += (
            f'\n[[resource]]\nid = "f{i}"\nkind = "config"\ntarget = "{target}"\n'
            'keys = { trueup_added = "yes" }\n'
        )
    profile = str(world.write("corpus.toml", body))
    applied = world.run("apply", profile, "--root", str(world.root), "--yes", "--json")
    assert applied.code in (0, 4), applied.out + applied.err
    for action in applied.json["data"]["plan"]["plan"]["actions"]:
        path, before = written[action["resource"]]
        if action["type"] == "drift-conflict":
            assert action["payload"].get("by_hand"), action
            assert "single document" in action["summary"] or "a mapping" in action["summary"]
            assert path.read_text() == before
            continue
        assert action["type"] == "write-config", action
        after = path.read_text()
        assert "trueup_added" in after, path
        comments = [line for line in before.splitlines() if line.lstrip().startswith(("#", "//"))]
        assert all(line in after.splitlines() for line in comments), path
