"""A bad profile is refused with the file, the resource and the field named, exit 2."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest

TRUEUP = str(Path(sys.executable).parent / "trueup")

GOOD = """
[profile]
id = "p"
name = "P"

[[resource]]
id = "one"
kind = "file"
target = "a/one.txt"
content = "1"
"""


def run(
    tmp_path: Path, text: str, name: str = "p.toml", *extra: str
) -> subprocess.CompletedProcess[str]:
    profile = tmp_path / name
    profile.write_text(text)
    (tmp_path / "root").mkdir(exist_ok=True)
    return subprocess.run(
        [TRUEUP, "plan", str(profile), "--root", str(tmp_path / "root"), *extra],
        capture_output=True,
        text=True,
        env={"TRUEUP_DATA": str(tmp_path / "data"), "PATH": "/usr/bin:/bin", "NO_COLOR": "1"},
        timeout=60,  # a declaration that never finishes loading fails, rather than hangs
    )


BAD = {
    "unknown kind": (
        GOOD.replace('kind = "file"', 'kind = "fiel"'),
        ["resource 'one'", "field 'kind'", "unknown kind 'fiel'"],
    ),
    "bad policy": (
        GOOD.replace('kind = "file"', 'kind = "file"\npolicy = "merge"'),
        ["resource 'one'", "field 'policy'", "replace-if-unmodified"],
    ),
    "bad id": (GOOD.replace('id = "one"', 'id = "-one"'), ["resource '-one'", "field 'id'"]),
    "missing target": (
        GOOD.replace('target = "a/one.txt"\n', ""),
        ["resource 'one'", "field 'target'", "Field required"],
    ),
    "glob target": (GOOD.replace("a/one.txt", "a/*.txt"), ["field 'target'", "glob"]),
    "absolute target": (GOOD.replace("a/one.txt", "/etc/passwd"), ["field 'target'", "absolute"]),
    "NUL in target": (GOOD.replace("a/one.txt", "a\\u0000b"), ["field 'target'", "NUL"]),
    "undeclared group": (
        GOOD.replace('name = "P"', 'name = "P"\ngroups = ["laptops"]').replace(
            'content = "1"', 'content = "1"\ngroups = ["laptop"]'
        ),
        ["resource 'one'", "field 'groups'", "'laptop' is not declared in [profile] groups"],
    ),
    "unknown field": (
        GOOD.replace('content = "1"', 'content = "1"\ncolour = "red"'),
        ["resource 'one'", "field 'colour'", "Extra inputs"],
    ),
    "two origins": (
        GOOD.replace('content = "1"', 'content = "1"\nsource = "x"'),
        ["resource 'one'", "exactly one of content, source or link"],
    ),
    "missing source file": (
        GOOD.replace('content = "1"', 'source = "nope.txt"'),
        ["resource 'one'", "field 'source': 'nope.txt' does not exist"],
    ),
    "source is a folder": (
        GOOD.replace('content = "1"', 'source = "."'),
        ["resource 'one'", "field 'source': '.' is not a file"],
    ),
    "duplicate id": (
        GOOD + '\n[[resource]]\nid = "one"\nkind = "file"\ntarget = "b"\ncontent = "x"\n',
        ["'one' is declared twice"],
    ),
    "overlap": (
        GOOD + '\n[[resource]]\nid = "dir"\nkind = "file"\ntarget = "a"\ncontent = "x"\n',
        ["'dir' and 'one' have overlapping targets"],
    ),
    "overlap after normalisation": (
        GOOD
        + '\n[[resource]]\nid = "two"\nkind = "file"\ntarget = "./a//one.txt"\ncontent = "x"\n',
        ["overlapping targets"],
    ),
    "unknown dependency": (
        GOOD.replace('content = "1"', 'content = "1"\ndepends_on = ["ghost"]'),
        ["depends on unknown resource 'ghost'"],
    ),
    "cycle": (
        GOOD.replace('content = "1"', 'content = "1"\ndepends_on = ["two"]')
        + '\n[[resource]]\nid = "two"\nkind = "file"\ntarget = "b"\ncontent = "x"\ndepends_on = ["one"]\n',
        ["dependency cycle: one -> two -> one"],
    ),
    "config key path": (
        '[profile]\nid = "p"\nname = "P"\n[[resource]]\nid = "c"\nkind = "config"\n'
        'target = "c.json"\nkeys = { "a..b" = 1 }\n',
        ["resource 'c'", "field 'keys'"],
    ),
    "overlapping config keys": (
        '[profile]\nid = "p"\nname = "P"\n[[resource]]\nid = "c"\nkind = "config"\n'
        'target = "c.json"\nkeys = { "a" = 1, "a.b" = 2 }\n',
        ["resource 'c'", "overlap"],
    ),
    "a date as a config value": (
        '[profile]\nid = "p"\nname = "P"\n[[resource]]\nid = "c"\nkind = "config"\n'
        'target = "c.toml"\nkeys = { when = 1979-05-27T07:32:00Z }\n',
        ["resource 'c'", "field 'keys'", "write dates and times as strings"],
    ),
    "a non-finite number as a config value": (
        '[profile]\nid = "p"\nname = "P"\n[[resource]]\nid = "c"\nkind = "config"\n'
        'target = "c.toml"\nkeys = { ratio = nan }\n',
        ["resource 'c'", "field 'keys'"],
    ),
    "a config key path too deep": (
        '[profile]\nid = "p"\nname = "P"\n[[resource]]\nid = "c"\nkind = "config"\n'
        f'target = "c.toml"\nkeys = {{ "{".".join(["k"] * 1000)}" = 1 }}\n',
        ["resource 'c'", "field 'keys'", "1000 segments; at most 64"],
    ),
    "a config overlay path too deep": (
        '[profile]\nid = "p"\nname = "P"\n[[resource]]\nid = "c"\nkind = "config"\n'
        f'target = "c.json"\nkeys = {{ a = 1 }}\noverlay = ["{".".join(["k"] * 65)}"]\n',
        ["resource 'c'", "field 'overlay'", "65 segments"],
    ),
    "a config value that nests its key too deep": (
        '[profile]\nid = "p"\nname = "P"\n[[resource]]\nid = "c"\nkind = "config"\n'
        f'target = "c.yaml"\nkeys = {{ "a.b" = {"{ k = " * 63}1{" }" * 63} }}\n',
        ["resource 'c'", "field 'keys'", "key 'a.b'", "more than 64 levels deep"],
    ),
    "an append-local section holding a marker": (
        GOOD.replace(
            'content = "1"', 'content = "x\\n# trueup:end one\\n"\npolicy = "append-local"'
        ),
        ["resource 'one'", "section marker"],
    ),
    "an empty link": (
        GOOD.replace('content = "1"', 'link = ""'),
        ["resource 'one'", "field 'link'", "at least 1 character"],
    ),
    "an executable link": (
        GOOD.replace('content = "1"', 'link = "x"\nexecutable = true'),
        ["resource 'one'", "field 'executable'", "a symlink has no mode"],
    ),
    "a NUL in a link": (
        GOOD.replace('content = "1"', 'link = "a\\u0000b"'),
        ["resource 'one'", "field 'link'", "NUL"],
    ),
    "a string for a boolean": (
        GOOD.replace('content = "1"', 'content = "1"\nexecutable = "yes"'),
        ["resource 'one'", "field 'executable'", "boolean"],
    ),
    "profile section": (GOOD.replace('id = "p"\n', ""), ["[profile]", "field 'id'"]),
    "no profile section": (
        GOOD[GOOD.index("[[resource]]") :],
        ["a profile starts with a [profile] table", 'id = "..."'],
    ),
    "toml syntax": (GOOD.replace('name = "P"', "name = "), ["not valid TOML"]),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_refused_with_file_resource_and_field(tmp_path: Path, case: str) -> None:
    text, fragments = BAD[case]
    result = run(tmp_path, text)
    assert result.returncode == 2, result.stdout + result.stderr
    assert str(tmp_path / "p.toml") in result.stderr
    for fragment in fragments:
        assert fragment in result.stderr
    assert "Traceback" not in result.stderr
    assert not (tmp_path / "root" / "a").exists()


def test_json_and_yaml_carry_the_same_model(tmp_path: Path) -> None:
    as_json = {
        "profile": {"id": "p", "name": "P"},
        "resource": [{"id": "one", "kind": "file", "target": "a/one.txt", "content": "1"}],
    }
    assert run(tmp_path, json.dumps(as_json), "p.json").returncode == 0
    as_yaml = (
        "profile: {id: p, name: P}\n"
        "resource:\n  - {id: one, kind: file, target: a/one.txt, content: '1'}\n"
    )
    assert run(tmp_path, as_yaml, "p.yaml").returncode == 0


@pytest.mark.parametrize(
    ("text", "words"),
    [
        (
            '{"profile": {"id": "p", "name": "P"}, "resource": [{"id": "one", "kind": "file",'
            ' "target": "a/one.txt", "content": "1", "target": "b.txt"}]}',
            "key 'target' is given twice in resource[0]",
        ),
        (
            '{"profile": {"id": "p", "name": "P", "id": "q"}, "resource": []}',
            "key 'id' is given twice in profile",
        ),
    ],
)
def test_a_json_key_given_twice_is_refused_like_in_toml_and_yaml(
    tmp_path: Path, text: str, words: str
) -> None:
    result = run(tmp_path, text, "p.json")
    assert result.returncode == 2, result.stdout + result.stderr
    assert f"{tmp_path / 'p.json'}: not valid JSON: {words}" in result.stderr
    assert not (tmp_path / "root" / "b.txt").exists()


def test_schema_lists_every_kind_and_policy() -> None:
    done = subprocess.run([TRUEUP, "schema", "profile"], capture_output=True, text=True, check=True)
    schema = json.loads(done.stdout)
    text = json.dumps(schema)
    for word in (
        "FileResource",
        "ConfigResource",
        "SkillResource",
        "DirectoryResource",
        "append-local",
        "mirror-owned",
    ):
        assert word in text


def test_a_config_file_of_unknown_format_is_a_usage_error(tmp_path: Path) -> None:
    text = GOOD.replace('kind = "file"', 'kind = "config"').replace(
        'target = "a/one.txt"\ncontent = "1"', 'target = "a/app.conf"\nkeys = { a = 1 }'
    )
    result = run(tmp_path, text)
    assert result.returncode == 2, result.stdout + result.stderr
    assert (
        f"{tmp_path / 'p.toml'}: resource 'one': field 'target': cannot tell the format of "
        "a/app.conf" in result.stderr
    )
    assert 'declare format = "toml", "json" or "yaml"' in result.stderr
    assert "Traceback" not in result.stderr and "internal error" not in result.stderr


def test_overwriting_an_unknown_resource_is_a_usage_error(tmp_path: Path) -> None:
    profile = tmp_path / "p.toml"
    profile.write_text(GOOD)
    (tmp_path / "root").mkdir()
    result = subprocess.run(
        [TRUEUP, "plan", str(profile), "--root", str(tmp_path / "root"), "--overwrite", "typo"],
        capture_output=True,
        text=True,
        env={"TRUEUP_DATA": str(tmp_path / "data"), "PATH": "/usr/bin:/bin", "NO_COLOR": "1"},
    )
    assert result.returncode == 2
    assert "--overwrite typo: no resource has that id" in result.stderr


def test_a_yaml_syntax_error_is_one_line_with_its_place(tmp_path: Path) -> None:
    result = run(tmp_path, "profile:\n  id: p\n  name: [P\nresource: []\n", name="p.yaml")
    assert result.returncode == 2
    [line] = result.stderr.strip().splitlines()
    assert line.startswith(f"error: {tmp_path / 'p.yaml'}: not valid YAML: ")
    assert "(at line 4, column 9)" in line


def test_a_yaml_profile_whose_aliases_expand_without_bound_is_refused(tmp_path: Path) -> None:
    """Eight levels of ten aliases: a hundred million values, from a few hundred bytes."""
    lines = ["profile: {id: p, name: P}", "resource:", "- id: a0", "  kind: config"]
    lines += ["  target: x0.json", '  keys: {k: &a0 ["x","x","x","x","x","x","x","x","x","x"]}']
    for i in range(1, 9):
        lines += [f"- id: a{i}", "  kind: config", f"  target: x{i}.json", "  keys:"]
        lines.append(f"    k: &a{i} [" + ",".join([f"*a{i - 1}"] * 10) + "]")
    result = run(tmp_path, "\n".join(lines) + "\n", name="p.yaml")
    assert result.returncode == 2, result.stderr
    assert "aliases expand to more than" in result.stderr


@pytest.mark.parametrize("limit", ["0", "-5"])
def test_a_file_size_limit_below_one_byte_is_refused(tmp_path: Path, limit: str) -> None:
    profile = tmp_path / "p.toml"
    profile.write_text(GOOD)
    (tmp_path / "root").mkdir()
    result = subprocess.run(
        [TRUEUP, "plan", str(profile), "--root", str(tmp_path / "root"), "--max-file-bytes", limit],
        capture_output=True,
        text=True,
        env={"TRUEUP_DATA": str(tmp_path / "data"), "PATH": "/usr/bin:/bin", "NO_COLOR": "1"},
    )
    assert result.returncode == 2 and "--max-file-bytes" in result.stderr


def test_an_integer_a_toml_file_cannot_hold_is_refused_before_planning(tmp_path: Path) -> None:
    text = GOOD.replace('kind = "file"', 'kind = "config"').replace(
        'target = "a/one.txt"\ncontent = "1"',
        'target = "a/c.toml"\nkeys = { big = 1' + "0" * 25 + " }",
    )
    result = run(tmp_path, text)
    assert result.returncode == 2, result.stdout + result.stderr
    assert "p.toml: resource 'one': field 'keys': key 'big': TOML integers are 64-bit" in (
        result.stderr
    )


def test_a_null_a_toml_file_cannot_hold_is_refused_before_anything_is_planned(
    tmp_path: Path,
) -> None:
    # Every output mode alike: no plan shown, saved or applied first.
    text = (
        '{"profile": {"id": "p", "name": "P"}, "resource": [{"id": "c", "kind": "config", '
        '"target": "c.toml", "keys": {"a": null}}]}'
    )
    for extra in ([], ["--json"], ["-o", str(tmp_path / "plan.json")]):
        result = run(tmp_path, text, "p.json", *extra)
        assert result.returncode == 2, (extra, result.stdout + result.stderr)
        assert "field 'keys': key 'a': TOML has no null value" in result.stdout + result.stderr
        assert "set 1 key" not in result.stdout
    assert not (tmp_path / "plan.json").exists()


def test_a_tree_source_that_is_a_file_is_not_called_missing(tmp_path: Path) -> None:
    text = GOOD.replace('kind = "file"', 'kind = "directory"').replace(
        'target = "a/one.txt"\ncontent = "1"', 'target = "d"\nsource = "p.toml"'
    )
    result = run(tmp_path, text)
    assert result.returncode == 2
    assert "resource 'one': field 'source': 'p.toml' is not a folder" in result.stderr


def test_a_pipe_in_a_tree_source_is_refused_at_load(tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "SKILL.md").write_text("hi\n")
    os.mkfifo(tmp_path / "src" / "pipe")
    text = GOOD.replace('kind = "file"', 'kind = "skill"').replace(
        'target = "a/one.txt"\ncontent = "1"', 'target = "sk"\nsource = "src"'
    )
    result = run(tmp_path, text)
    assert result.returncode == 2, result.stdout + result.stderr
    assert "field 'source': pipe in 'src' is a pipe, socket or device" in result.stderr


@pytest.mark.parametrize("kind", ["skill", "directory"])
@pytest.mark.parametrize("inside", ["", "scripts/empty"], ids=["nothing", "empty folders"])
def test_a_tree_source_without_files_is_refused_at_load(
    tmp_path: Path, kind: str, inside: str
) -> None:
    (tmp_path / "src" / inside).mkdir(parents=True)
    text = GOOD.replace('kind = "file"', f'kind = "{kind}"').replace(
        'target = "a/one.txt"\ncontent = "1"', 'target = "sk"\nsource = "src"'
    )
    result = run(tmp_path, text)
    assert result.returncode == 2, result.stdout + result.stderr
    assert "resource 'one': field 'source': 'src' holds no files" in result.stderr
    assert "converged" not in result.stdout


@pytest.mark.parametrize(
    ("text", "words"),
    [
        (GOOD.replace('id = "one"', 'id = "one\\n"'), "field 'id'"),
        (GOOD.replace("a/one.txt", "a/" + "n" * 256), "has a name of 256 bytes"),
    ],
)
def test_ids_and_target_names_are_checked_whole(tmp_path: Path, text: str, words: str) -> None:
    result = run(tmp_path, text)
    assert result.returncode == 2, result.stdout + result.stderr
    assert words in result.stderr


@pytest.mark.parametrize("field", ["target", "content"])
def test_half_a_surrogate_pair_is_not_text(tmp_path: Path, field: str) -> None:
    values = {"target": "a.txt", "content": "x", field: "n\\udce9me"}
    text = (
        '{"profile": {"id": "p", "name": "P"}, "resource": [{"id": "f", "kind": "file", '
        f'"target": "{values["target"]}", "content": "{values["content"]}"}}]}}'
    )
    result = run(tmp_path, text, "p.json")
    assert result.returncode == 2, result.stdout + result.stderr
    assert "half of a surrogate pair" in result.stderr


def _resource(**fields: object) -> dict[str, object]:
    return {"id": "r", "kind": "file", "target": "a.txt", "content": "x", **fields}


AGREEMENT = {
    "a plain file": (_resource(), True),
    "content and link": (_resource(link="b"), False),
    "no origin": ({"id": "r", "kind": "file", "target": "a.txt"}, False),
    "parent target": (_resource(target="../x"), False),
    "absolute target": (_resource(target="/etc/x"), False),
    "empty target": (_resource(target=""), False),
    "glob target": (_resource(target="a*.txt"), False),
    "dot-dot inside": (_resource(target="a/../b"), False),
    "dots in a name": (_resource(target="a/..b/c"), True),
    "a NUL in a link": ({"id": "r", "kind": "file", "target": "a", "link": "a\0b"}, False),
    "link and append-local": (
        {"id": "r", "kind": "file", "target": "a", "link": "b", "policy": "append-local"},
        False,
    ),
    # The loader reads an explicit null as absent; the schema must count it so too.
    "content and a null source": (_resource(source=None), True),
    "content and a null link": (_resource(link=None), True),
    "a null content only": ({"id": "r", "kind": "file", "target": "a", "content": None}, False),
    "a null link and append-local": (
        {
            "id": "r",
            "kind": "file",
            "target": "a",
            "content": "x",
            "link": None,
            "policy": "append-local",
        },
        True,
    ),
    "a config key path": (
        {"id": "c", "kind": "config", "target": "c.json", "keys": {"a.b": 1}},
        True,
    ),
    "an empty key segment": (
        {"id": "c", "kind": "config", "target": "c.json", "keys": {"a..b": 1}},
        False,
    ),
    "the deepest key path": (
        {"id": "c", "kind": "config", "target": "c.json", "keys": {".".join(["k"] * 64): 1}},
        True,
    ),
    "a key path too deep": (
        {"id": "c", "kind": "config", "target": "c.json", "keys": {".".join(["k"] * 65): 1}},
        False,
    ),
    "an overlay path too deep": (
        {
            "id": "c",
            "kind": "config",
            "target": "c.json",
            "keys": {"a": 1},
            "overlay": [".".join(["k"] * 65)],
        },
        False,
    ),
    "quoted segments holding dots": (
        {"id": "c", "kind": "config", "target": "c.json", "keys": {'a."b.c".d': 1}},
        True,
    ),
    "a reserved segment": (
        {"id": "c", "kind": "config", "target": "c.json", "keys": {"a.__proto__": 1}},
        False,
    ),
}


@pytest.mark.parametrize("name", sorted(AGREEMENT))
def test_the_schema_and_the_loader_agree(tmp_path: Path, name: str) -> None:
    resource, valid = AGREEMENT[name]
    document = {"profile": {"id": "p", "name": "P"}, "resource": [resource]}
    schema = json.loads(
        subprocess.run([TRUEUP, "schema", "profile"], capture_output=True, check=True).stdout
    )
    errors = list(jsonschema.Draft202012Validator(schema).iter_errors(document))
    assert (not errors) is valid, errors
    loaded = run(tmp_path, json.dumps(document), "p.json")
    assert (loaded.returncode == 0) is valid, loaded.stderr


WHOLE = {
    "duplicate id": (GOOD + GOOD.split("\n\n", 1)[1].replace("a/one.txt", "a/two.txt"), "twice"),
    "overlapping targets": (
        GOOD + GOOD.split("\n\n", 1)[1].replace('"one"', '"two"').replace("a/one.txt", "a"),
        "overlapping",
    ),
    "unknown dependency": (GOOD.replace('content = "1"', 'content = "1"\ndepends_on = ["x"]'), "x"),
}


@pytest.mark.parametrize("case", sorted(WHOLE))
def test_a_profile_refused_as_a_whole_stays_refused_on_every_run(tmp_path: Path, case: str) -> None:
    text, words = WHOLE[case]
    profile = tmp_path / "p.toml"
    profile.write_text(text)
    # An old mtime: the second run would trust a cached validation, if one were kept.
    os.utime(profile, (1_500_000_000, 1_500_000_000))
    (tmp_path / "root").mkdir()
    for _ in range(2):
        result = subprocess.run(
            [TRUEUP, "plan", str(profile), "--root", str(tmp_path / "root"), "--json"],
            capture_output=True,
            text=True,
            env={"TRUEUP_DATA": str(tmp_path / "data"), "PATH": "/usr/bin:/bin"},
        )
        assert result.returncode == 2, result.stdout
        assert str(profile) in result.stdout and words in result.stdout


def test_a_toml_profile_may_start_with_a_byte_order_mark(tmp_path: Path) -> None:
    result = run(tmp_path, "\ufeff" + GOOD)
    assert result.returncode == 0, result.stderr


def test_a_profile_of_another_suffix_is_read_as_toml_and_its_errors_say_so(
    tmp_path: Path,
) -> None:
    result = run(tmp_path, "profile = [\n", name="p.conf")
    assert result.returncode == 2
    assert f"{tmp_path / 'p.conf'}: not valid TOML: " in result.stderr
