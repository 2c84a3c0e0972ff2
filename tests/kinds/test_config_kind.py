"""The config kind through the engine: declared keys change, nothing else does."""

from __future__ import annotations

import json

import pytest
from machine import Machine

from trueup.model import ActionType as T

TOML_BEFORE = """\
# Codex settings, hand-written
model = "o3"        # the model I like
approval_policy = "on-request"

[sandbox]
# keep network off
network = false
mode = "read-only"

[profiles.fast]
model = "o4-mini"
"""
TOML_AFTER = TOML_BEFORE.replace('model = "o3"        #', 'model = "gpt-5"        #').replace(
    'mode = "read-only"', 'mode = "workspace-write"'
)

JSON_BEFORE = """\
{
\t"theme": "dark",
\t"editor": {
\t\t"fontSize": 12,
\t\t"tabSize": 4
\t},
\t"permissions": {"allow": ["Bash(ls)"]}
}
"""
JSON_AFTER = JSON_BEFORE.replace('"fontSize": 12', '"fontSize": 14')

YAML_BEFORE = """\
# service config
name: api   # the service
replicas: 2
limits:
  cpu: "500m"   # keep quoted
  memory: 256Mi
tags: [a, b]
"""
YAML_AFTER = YAML_BEFORE.replace("replicas: 2", "replicas: 3").replace(
    "memory: 256Mi", "memory: 512Mi"
)

CASES = {
    "toml": (
        "c/config.toml",
        TOML_BEFORE,
        TOML_AFTER,
        'model = "gpt-5", "sandbox.mode" = "workspace-write"',
    ),
    "json": ("c/settings.json", JSON_BEFORE, JSON_AFTER, '"editor.fontSize" = 14'),
    "yaml": ("c/app.yaml", YAML_BEFORE, YAML_AFTER, 'replicas = 3, "limits.memory" = "512Mi"'),
}


OTHER = '[[resource]]\nid = "o"\nkind = "file"\ntarget = "other.txt"\ncontent = "other"\n'


def config(target: str, keys: str, extra: str = "") -> str:
    return f'[[resource]]\nid = "c"\nkind = "config"\ntarget = "{target}"\nkeys = {{ {keys} }}\n{extra}'


@pytest.mark.parametrize("fmt", sorted(CASES))
def test_merge_keeps_everything_undeclared_byte_for_byte(machine: Machine, fmt: str) -> None:
    target, before, after, keys = CASES[fmt]
    machine.put(target, before)
    machine.converge(config(target, keys))
    assert machine.path(target).read_text() == after


@pytest.mark.parametrize("fmt", sorted(CASES))
def test_merge_creates_a_missing_file(machine: Machine, fmt: str) -> None:
    target, _, _, keys = CASES[fmt]
    machine.converge(config(target, keys))
    assert machine.path(target).exists()


def test_a_key_changed_locally_is_drift_and_kept(machine: Machine) -> None:
    target, before, _, keys = CASES["toml"]
    machine.put(target, before)
    machine.converge(config(target, keys))
    text = machine.path(target).read_text().replace('"gpt-5"', '"my-model"')
    machine.path(target).write_text(text)
    action = machine.action(config(target, keys), "c")
    assert action.type is T.DRIFT_CONFLICT and "model" in action.summary
    machine.apply(config(target, keys))
    assert machine.path(target).read_text() == text
    machine.converge(config(target, keys), force=("c",))
    assert '"gpt-5"' in machine.path(target).read_text()


def test_overlay_keys_are_the_machines_own(machine: Machine) -> None:
    target = "c/settings.json"
    machine.put(target, '{\n  "permissions": {"allow": ["x"]},\n  "model": "a"\n}\n')
    body = config(target, '"model" = "b"', 'overlay = ["permissions"]\n')
    machine.converge(body)
    assert '"permissions": {"allow": ["x"]}' in machine.path(target).read_text()


def test_an_overlay_that_clashes_with_declared_keys_needs_a_person(machine: Machine) -> None:
    body = config("c/s.json", '"model" = "b"', 'overlay = ["model"]\n')
    action = machine.action(body, "c")
    assert action.type is T.HUMAN_ACTION
    assert "overlay conflicts" in action.summary


def test_a_dropped_key_is_removed_only_if_trueup_owned_it_unchanged(machine: Machine) -> None:
    target = "c/s.json"
    machine.put(target, '{\n  "mine": 1\n}\n')
    machine.converge(config(target, '"a" = 1, "b" = 2'))
    machine.converge(config(target, '"a" = 1'))
    assert '"b"' not in machine.path(target).read_text()
    assert '"mine": 1' in machine.path(target).read_text()
    text = machine.path(target).read_text().replace('"a": 1', '"a": 5')
    machine.path(target).write_text(text)
    machine.apply(config(target, '"c" = 3'))
    assert '"a": 5' in machine.path(target).read_text()


def test_a_dropped_resource_whose_keys_were_all_changed_says_what_it_leaves(
    machine: Machine,
) -> None:
    machine.put("c/s.json", '{\n  "mine": 1\n}\n')
    machine.converge(config("c/s.json", '"a" = 1'))
    machine.put("c/s.json", machine.path("c/s.json").read_text().replace('"a": 1', '"a": 5'))
    action = machine.action(OTHER, "c")
    assert action.type is T.REMOVE_RESOURCE
    assert "left a as they are (changed since" in action.summary
    machine.converge(OTHER)
    assert '"a": 5' in machine.path("c/s.json").read_text()


def test_replace_makes_the_file_exactly_the_declared_keys(machine: Machine) -> None:
    target = "c/s.json"
    machine.put(target, '{\n  "mine": 1,\n  "keep": 2\n}\n')
    machine.converge(config(target, '"a" = 1', 'policy = "replace"\noverlay = ["keep"]\n'))
    text = machine.path(target).read_text()
    assert '"mine"' not in text and '"a": 1' in text and '"keep": 2' in text


def test_unparseable_config_is_drift_not_a_rewrite(machine: Machine) -> None:
    target = "c/s.json"
    machine.put(target, "{ not json")
    action = machine.action(config(target, '"a" = 1'), "c")
    assert action.type is T.DRIFT_CONFLICT
    machine.apply(config(target, '"a" = 1'))
    assert machine.path(target).read_text() == "{ not json"


def test_a_config_that_is_not_utf8_names_the_file_and_the_byte(machine: Machine) -> None:
    target = "c/c.toml"
    machine.path(target).parent.mkdir(parents=True, exist_ok=True)
    machine.path(target).write_bytes(b"a = 1\xff\n")
    action = machine.action(config(target, '"a" = 2'), "c")
    assert action.type is T.DRIFT_CONFLICT
    assert "c/c.toml is not UTF-8 text (byte 0xff at offset 5)" in action.summary
    assert machine.path(target).read_bytes() == b"a = 1\xff\n"


def test_a_key_inside_an_overlay_table_needs_a_person(machine: Machine) -> None:
    body = config("c/s.json", '"permissions.allow" = ["x"]', 'overlay = ["permissions"]\n')
    action = machine.action(body, "c")
    assert action.type is T.HUMAN_ACTION
    assert "overlay conflicts" in action.summary and "permissions.allow" in action.summary


@pytest.mark.parametrize("target", ["c/config.toml", "c/settings.json", "c/app.yaml"])
def test_a_value_trueup_set_makes_way_for_a_table_declared_in_its_place(
    machine: Machine, target: str
) -> None:
    machine.converge(config(target, '"a" = "x"'))
    machine.converge(config(target, '"a.b" = 1'))
    assert machine.load(target) == {"a": {"b": 1}}
    machine.converge(OTHER)
    assert not machine.path(target).exists(), "the table went with its key, and the file"


def test_a_key_under_a_live_value_that_is_not_a_table_needs_a_person(machine: Machine) -> None:
    machine.put("c/s.json", '{"a": "a string"}\n')
    body = config("c/s.json", '"a.b" = 1') + OTHER
    action = machine.action(body, "c")
    assert action.type is T.HUMAN_ACTION and "cannot set a.b: a holds a value" in action.summary
    machine.apply(body)
    assert machine.path("c/s.json").read_text() == '{"a": "a string"}\n'
    assert machine.path("other.txt").read_text() == "other", "the rest of the plan runs"


def test_a_key_moved_under_the_overlay_is_kept(machine: Machine) -> None:
    target = "c/s.json"
    machine.converge(config(target, '"permissions.allow" = ["Bash"], "model" = "m"'))
    machine.converge(config(target, '"model" = "m"', 'overlay = ["permissions"]\n'))
    assert json.loads(machine.path(target).read_text())["permissions"] == {"allow": ["Bash"]}


def test_a_key_reached_through_a_yaml_alias_needs_a_person(machine: Machine) -> None:
    text = "defaults: &d\n  color: red\nwork: *d\n"
    machine.put("c/app.yaml", text)
    body = config("c/app.yaml", '"work.color" = "blue"')
    action = machine.action(body, "c")
    assert action.type is T.HUMAN_ACTION and "YAML anchor &d" in action.summary
    machine.apply(body)
    assert machine.path("c/app.yaml").read_text() == text, "defaults.color is not changed"


@pytest.mark.parametrize("later", ['"t.x" = 1', None], ids=["key-dropped", "resource-dropped"])
def test_a_key_trueup_set_that_a_person_shares_through_an_anchor_is_not_removed(
    machine: Machine, later: str | None
) -> None:
    """Removing it from the shared mapping would change the person's key too."""
    machine.put("c/app.yaml", "a: 1\n")
    machine.converge(config("c/app.yaml", '"t.x" = 1, "t.y" = 2'))
    shared = "a: 1\nt: &T\n  x: 1\n  'y': 2\nu: *T\n"
    machine.put("c/app.yaml", shared)
    body = config("c/app.yaml", later) if later else OTHER
    action = machine.action(body, "c")
    assert action.type is T.HUMAN_ACTION and "inside the YAML anchor &T" in action.summary
    machine.apply(body)
    assert machine.path("c/app.yaml").read_text() == shared


@pytest.mark.parametrize(
    ("target", "before"),
    [
        ("c/config.toml", "# mine\nkeep = 0\n"),
        ("c/settings.json", '{"keep": 0}\n'),
        ("c/app.yaml", "# mine\nkeep: 0\n"),
    ],
)
def test_dropping_nested_keys_takes_away_the_tables_trueup_made_for_them(
    machine: Machine, target: str, before: str
) -> None:
    machine.put(target, before)
    machine.converge(config(target, '"sandbox.mode" = "ws", "a.b.c" = 1'))
    machine.converge(config(target, '"sandbox.mode" = "ws"'))
    assert "b" not in machine.load(target).get("a", {}), "a.b went with its last key"
    assert "a" not in machine.load(target)
    machine.converge(OTHER)
    assert machine.path(target).read_text() == before, "the file is as it was before trueup"


def test_a_table_that_was_there_before_trueup_stays_when_its_keys_go(machine: Machine) -> None:
    target = "c/settings.json"
    machine.put(target, '{"env": {}}\n')
    machine.converge(config(target, '"env.X" = "1"'))
    machine.converge(OTHER)
    assert machine.path(target).read_text() == '{"env": {}}\n'


def test_a_table_that_holds_a_persons_key_too_stays(machine: Machine) -> None:
    target = "c/config.toml"
    machine.converge(config(target, '"sandbox.mode" = "ws"'))
    machine.path(target).write_text(machine.path(target).read_text() + 'network = "on"\n')
    machine.converge(OTHER)
    assert machine.load(target) == {"sandbox": {"network": "on"}}


@pytest.mark.parametrize("target", ["c/config.toml", "c/settings.json", "c/app.yaml"])
def test_a_config_file_trueup_made_goes_with_its_last_key(machine: Machine, target: str) -> None:
    machine.converge(config(target, '"env.X" = "1"'))
    assert machine.path(target).exists()
    machine.converge(OTHER)
    assert not machine.path(target).exists()


def test_a_config_file_trueup_made_stays_if_a_person_wrote_in_it(machine: Machine) -> None:
    target = "c/config.toml"
    machine.converge(config(target, '"env.X" = "1"'))
    machine.path(target).write_text("# my notes\n" + machine.path(target).read_text())
    machine.converge(OTHER)
    assert machine.path(target).read_text().startswith("# my notes\n")


def test_a_declared_key_already_there_is_never_trueups_to_remove(machine: Machine) -> None:
    target = "c/config.toml"
    machine.put(target, 'model = "gpt-5"  # set by the person\nkeep = true\n')
    machine.converge(config(target, '"model" = "gpt-5", "other" = 1'))
    machine.converge(config(target, '"other" = 1'))
    assert 'model = "gpt-5"  # set by the person' in machine.path(target).read_text()


TAKEN_OVER = {
    "toml": ("c/c.toml", "model = 'old'   # pick one\nother = 1\n"),
    "json": ("c/c.json", '{\n  "model": "old",\n  "other": 1\n}\n'),
    "yaml": ("c/c.yaml", "model: old  # pick one\nother: 1\n"),
}


@pytest.mark.parametrize("fmt", sorted(TAKEN_OVER))
@pytest.mark.parametrize("first", ["new", "old"], ids=["changed", "found-as-declared"])
def test_a_key_a_person_had_before_trueup_set_it_stays_when_dropped(
    machine: Machine, fmt: str, first: str
) -> None:
    """Whether trueup changed it at once or only once its declaration changed, the
    line stays (with its comment): only the key's name is recorded, as its value
    may be a secret, so the value is trueup's last."""
    target, text = TAKEN_OVER[fmt]
    machine.put(target, text)
    machine.converge(config(target, f'"model" = "{first}"'))
    machine.converge(config(target, '"model" = "mid"'))
    assert machine.load(target)["model"] == "mid"
    machine.converge(OTHER)
    assert machine.path(target).read_text() == text.replace("old", "mid")


@pytest.mark.parametrize(
    ("target", "text"), [("c/c.toml", "a = 1"), ("c/c.yaml", "a: 1"), ("c/c.json", '{"a": 1}')]
)
def test_a_file_without_a_final_newline_is_given_back_without_one(
    machine: Machine, target: str, text: str
) -> None:
    machine.put(target, text)
    machine.converge(config(target, '"b" = 2'))
    machine.converge(OTHER)
    assert machine.path(target).read_text() == text


def test_a_value_taken_over_and_then_edited_by_the_person_stays_as_they_left_it(
    machine: Machine,
) -> None:
    target = "c/c.toml"
    machine.put(target, "model = 'old'\n")
    machine.converge(config(target, '"model" = "new"'))
    machine.put(target, "model = 'theirs'\n")
    assert machine.apply(OTHER) is not None
    assert machine.path(target).read_text() == "model = 'theirs'\n"


def test_keys_all_found_as_declared_at_first_apply_are_watched_for_drift(
    machine: Machine,
) -> None:
    target = "c/config.toml"
    machine.put(target, 'model = "gpt-5"  # set by the person\n')
    body = config(target, '"model" = "gpt-5"')
    assert machine.action(body, "c").type is T.VERIFY_ONLY, "recorded, though nothing is written"
    machine.converge(body)
    assert machine.path(target).read_text() == 'model = "gpt-5"  # set by the person\n'
    machine.put(target, 'model = "mine"  # set by the person\n')
    assert machine.action(body, "c").type is T.DRIFT_CONFLICT, "a later edit is not overwritten"
    machine.put(target, 'model = "gpt-5"  # set by the person\n')
    machine.converge(OTHER)
    assert machine.load(target) == {"model": "gpt-5"}, "never trueup's to remove"


def test_a_key_moved_into_the_overlay_is_released_even_when_nothing_else_changes(
    machine: Machine,
) -> None:
    target = "c/s.json"
    machine.put(target, '{\n  "u": 1\n}\n')
    machine.converge(config(target, '"a" = 1, "c" = "x"'))
    machine.converge(config(target, '"a" = 1', 'overlay = ["c"]\n'))
    machine.converge(config(target, '"a" = 1'))
    assert machine.load(target) == {"u": 1, "a": 1, "c": "x"}


def test_a_dotted_key_declared_again_as_its_whole_table_is_the_same_key(
    machine: Machine,
) -> None:
    target = "c/s.json"
    machine.put(target, '{\n  "u": 0\n}\n')
    machine.converge(config(target, '"a.b" = 1'))
    machine.converge(config(target, "a = { b = 1 }"))
    assert machine.load(target) == {"u": 0, "a": {"b": 1}}
    machine.converge(OTHER)  # still trueup's: dropped, it goes
    assert machine.load(target) == {"u": 0}


@pytest.mark.parametrize("target", ["c/config.toml", "c/settings.json", "c/app.yaml"])
def test_a_whole_table_declared_again_as_its_dotted_key_is_the_same_key(
    machine: Machine, target: str
) -> None:
    machine.converge(config(target, "tool = { x = 1 }"))
    before = machine.path(target).read_text()
    again = config(target, '"tool.x" = 1')
    assert machine.action(again, "c").type is T.VERIFY_ONLY, "recorded anew, nothing written"
    machine.converge(again)
    assert machine.path(target).read_text() == before


@pytest.mark.parametrize("target", ["c/config.toml", "c/settings.json", "c/app.yaml"])
def test_a_whole_table_declared_again_by_some_of_its_keys_loses_only_the_rest(
    machine: Machine, target: str
) -> None:
    machine.converge(config(target, "tool = { x = 1, y = 2, s = { z = 3, w = 4 } }"))
    machine.converge(config(target, '"tool.x" = 1, "tool.s.z" = 3'))
    assert machine.load(target) == {"tool": {"x": 1, "s": {"z": 3}}}
    machine.converge(OTHER)
    assert not machine.path(target).exists(), "its tables and its file went with its last key"


def test_a_declared_table_that_drops_a_persons_key_says_so_and_asks(machine: Machine) -> None:
    target = "c/config.toml"
    machine.put(target, "[a]\nz = 0 # the person's own key\n")
    action = machine.action(config(target, "a = { b = 1 }"), "c")
    assert action.destroys and "drops a.z" in action.summary


@pytest.mark.parametrize(
    ("target", "before", "declared", "drops"),
    [
        ("c/config.toml", "[a]\n# mine\ny = 1\nz = 2\n", 'a = "none"', "a.y, a.z"),
        ("c/config.toml", "[a]\ny = 1\n", "a = [1, 2]", "a.y"),
        ("c/config.toml", '[[a]]\nname = "x"\n[[a]]\nname = "y"\n', 'a = "none"', "a "),
        ("c/config.toml", '[[a]]\nname = "x"\n', "a = { b = 1 }", "a "),
        ("c/settings.json", '{"a": {"y": 1, "z": {"w": 2}}}\n', "a = 0", "a.y, a.z.w"),
        ("c/app.yaml", "a:\n  y: 1\n", "a = [1]", "a.y"),
    ],
)
def test_a_declared_value_that_takes_the_place_of_a_persons_table_says_so_and_asks(
    machine: Machine, target: str, before: str, declared: str, drops: str
) -> None:
    machine.put(target, before)
    action = machine.action(config(target, declared), "c")
    assert action.type is T.WRITE_CONFIG
    assert action.destroys, "the person's keys go: the typed confirmation is asked for"
    assert f"which drops {drops}" in action.summary + " "


def test_a_plain_list_replaced_by_a_declared_value_is_an_update_not_a_loss(
    machine: Machine,
) -> None:
    machine.put("c/config.toml", "a = [1, 2]\n")
    action = machine.action(config("c/config.toml", "a = [3]"), "c")
    assert action.type is T.WRITE_CONFIG and not action.destroys


def test_a_table_trueup_set_may_become_a_plain_value_without_asking(machine: Machine) -> None:
    machine.put("c/config.toml", "keep = 1\n")
    machine.converge(config("c/config.toml", "a = { y = 1 }"))
    action = machine.action(config("c/config.toml", 'a = "none"'), "c")
    assert action.type is T.WRITE_CONFIG and not action.destroys


@pytest.mark.parametrize("made_by_trueup", [False, True])
def test_a_table_trueup_made_stays_when_a_person_wrote_a_comment_in_it(
    machine: Machine, made_by_trueup: bool
) -> None:
    target = "c/config.toml"
    if not made_by_trueup:
        machine.put(target, "x = 1\n")
    machine.converge(config(target, '"a.b.c" = 1'))
    machine.path(target).write_text(machine.path(target).read_text() + "# my note about a.b\n")
    machine.converge(OTHER)
    assert "# my note about a.b" in machine.path(target).read_text()


def test_a_table_trueup_made_then_declared_as_a_value_goes_without_a_trace(
    machine: Machine,
) -> None:
    target = "c/c.toml"
    machine.put(target, "z = 0\n")
    machine.converge(config(target, '"a.b" = 1'))
    machine.converge(config(target, '"a" = 5'))
    assert machine.path(target).read_text() == "z = 0\na = 5\n"
    machine.converge(OTHER)
    assert machine.path(target).read_text() == "z = 0\n"


def test_a_table_trueup_made_goes_though_a_person_introduced_their_own_after_it(
    machine: Machine,
) -> None:
    target = "c/c.toml"
    machine.put(target, "x = 1\n")
    machine.converge(config(target, '"a.b" = 1'))
    text = machine.path(target).read_text()
    machine.put(target, text + "\n# about y\n[y]\nq = 1\n")
    machine.converge(OTHER)
    assert machine.path(target).read_text() == "x = 1\n\n# about y\n[y]\nq = 1\n"


@pytest.mark.parametrize(
    ("noted", "after"),
    [
        ({"m"}, "z = 1\nx = 2\n\n[n]\n# my note\n"),
        # The same words in two tables are two comments: both tables stay.
        ({"m", "r"}, "z = 1\nx = 2\n\n[n]\n# my note\n\n[q]\n# my note\n"),
    ],
)
def test_only_the_tables_trueup_made_that_hold_a_persons_comment_stay(
    machine: Machine, noted: set[str], after: str
) -> None:
    target = "c/config.toml"
    machine.put(target, "z = 1\n")
    machine.converge(config(target, 'x = 2, "n.m" = 1, "q.r" = 3'))
    text = machine.path(target).read_text()
    for key in noted:
        text = text.replace(f"\n{key} = ", f"\n# my note\n{key} = ")
    machine.path(target).write_text(text)
    machine.converge(config(target, "x = 2"))
    assert machine.path(target).read_text() == after


@pytest.mark.parametrize(
    ("target", "text"),
    [
        ("c/config.toml", 'model = "a"\nsince = 2024-01-01\nat = 1979-05-27T07:32:00Z\n'),
        ("c/app.yaml", "model: a\nsince: 2024-01-01\n"),
    ],
)
def test_dates_and_times_in_a_file_are_kept_and_do_not_stop_the_merge(
    machine: Machine, target: str, text: str
) -> None:
    machine.put(target, text)
    machine.converge(config(target, '"model" = "b"'))
    assert machine.path(target).read_text() == text.replace("a\n", "b\n", 1).replace('"a"', '"b"')


@pytest.mark.parametrize(
    ("target", "text"),
    [
        ("c/config.toml", "timeout = inf  # mine\nratio = nan\nlimits = [1.0, -inf]\n"),
        ("c/app.yaml", "timeout: .inf  # mine\nratio: .nan\nlimits:\n  low: -.inf\n"),
    ],
)
def test_an_undeclared_nan_or_infinity_is_left_alone_and_blocks_nothing(
    machine: Machine, target: str, text: str
) -> None:
    machine.put(target, text)
    machine.converge(config(target, '"model" = "b"') + OTHER)
    assert machine.path(target).read_text().startswith(text)
    assert machine.path("other.txt").read_text() == "other"


def test_a_yaml_file_nested_too_deeply_is_a_person_s_matter_not_a_crash(machine: Machine) -> None:
    deep = "".join("  " * i + f"k{i}:\n" for i in range(300)) + "  " * 300 + "v: 1\n"
    machine.put("c/app.yaml", deep)
    action = machine.action(config("c/app.yaml", '"k" = 1'), "c")
    assert action.type is T.DRIFT_CONFLICT and "nested too deeply" in action.summary


def test_dropping_a_key_that_overrides_a_yaml_merge_key_leaves_the_inherited_value(
    machine: Machine,
) -> None:
    target = "c/app.yaml"
    machine.put(target, "base: &base\n  host: a\n  port: 1\ndev:\n  <<: *base\n  debug: true\n")
    machine.converge(config(target, '"dev.port" = 5'))
    machine.converge(config(target, '"other" = 1'))
    assert machine.load(target)["dev"]["port"] == 1


@pytest.mark.parametrize("newline", ["\n", "\r\n"], ids=["lf", "crlf"])
def test_a_table_trueup_made_goes_without_a_trace_whatever_the_line_ends(
    machine: Machine, newline: str
) -> None:
    machine.put("c/config.toml", f"z = 1{newline}")
    machine.converge(config("c/config.toml", '"x" = 2, "n.m" = 1'))
    machine.converge(config("c/config.toml", '"x" = 2'))
    assert machine.path("c/config.toml").read_bytes() == f"z = 1{newline}x = 2{newline}".encode()


def test_a_kept_block_scalar_left_last_keeps_its_blank_lines_and_gains_no_end_marker(
    machine: Machine,
) -> None:
    """A ``|+`` scalar's trailing blank lines are its value: dropping the keys trueup
    added after it gives the file back as it was, without ruamel's ``...``."""
    text = "x:\n  z: 2\nlit: |+\n  keep\n\n"
    machine.put("c/c.yaml", text)
    machine.converge(config("c/c.yaml", '"x.y" = 1, "new" = 2'))
    assert machine.load("c/c.yaml")["lit"] == "keep\n\n"
    machine.converge(OTHER)
    assert machine.path("c/c.yaml").read_text() == text


def test_a_first_key_trueup_put_above_the_first_table_goes_with_its_blank_line(
    machine: Machine,
) -> None:
    machine.put("c/config.toml", "[x]\nz = 1\n")
    machine.converge(config("c/config.toml", '"arr" = [1, 2], "x.y" = 1'))
    assert machine.path("c/config.toml").read_text().startswith("arr = [1, 2]\n\n[x]\n")
    machine.converge(OTHER)
    assert machine.path("c/config.toml").read_text() == "[x]\nz = 1\n"


def test_a_line_appended_after_trueups_keys_keeps_its_newline_when_they_go(
    machine: Machine,
) -> None:
    """Only the file as it was comes back without a final newline: a person's
    line after trueup's keys is not cut short."""
    machine.put("c/c.toml", "a = 1")
    machine.converge(config("c/c.toml", '"b" = 2'))
    machine.put("c/c.toml", machine.path("c/c.toml").read_text() + "c = 3\n")
    machine.apply(OTHER)
    assert machine.path("c/c.toml").read_text() == "a = 1\nc = 3\n"


@pytest.mark.parametrize(
    ("target", "text", "keys"),
    [
        ("c/c.toml", "[t]\nb = 2\n[u]\nc = 1\n", '"t.x.n" = 1'),  # a sub-table mid-file
        ("c/c.toml", "a = 1\n[t]\nb = 2", '"new.k" = 1'),  # no final newline
        ("c/c.toml", "[t]\nb = 2\n\n# end of file\n", '"new.k" = 1'),
        ("c/c.toml", "a = 1\n\n\n", '"new.k" = 1'),  # trailing blank lines
        ("c/c.yaml", "a: 1\n\n\n", '"new.k" = 1'),
        ("c/c.json", '{"a": 1}', '"new.k" = 1'),
        # A table that held only trueup's keys, spelt with a space inside when empty.
        ("c/c.json", '{\n  "a": { },\n  "b": [ ]\n}\n', '"a.x" = 1'),
        ("c/c.toml", "a = { }\nb = 1\n", '"a.x" = 1'),
        ("c/c.yaml", "a: { }\nb: 1\n", '"a.x" = 1'),
    ],
    ids=[
        "sub-table",
        "open-end",
        "end-comment",
        "trailing-blanks",
        "yaml",
        "json",
        "json-empty-spelt",
        "toml-empty-spelt",
        "yaml-empty-spelt",
    ],
)
def test_a_file_trueups_keys_leave_is_given_back_byte_for_byte(
    machine: Machine, target: str, text: str, keys: str
) -> None:
    """The spacing trueup put around its keys goes with them."""
    machine.put(target, text)
    machine.converge(config(target, keys))
    assert machine.path(target).read_text() != text
    machine.converge(OTHER)
    assert machine.path(target).read_text() == text


def test_a_key_inside_a_persons_flow_mapping_over_several_lines_needs_a_person(
    machine: Machine,
) -> None:
    """ruamel writes a flow mapping on one line: the person's layout and comments
    inside it would be lost for good."""
    text = "a: 1\nt: {\n  x: 1,  # why x\n  y: 2\n}\n"
    machine.put("c/app.yaml", text)
    body = config("c/app.yaml", '"t.n" = 3')
    action = machine.action(body, "c")
    assert action.type is T.HUMAN_ACTION
    assert "t is a flow mapping written over several lines" in action.summary
    machine.apply(body)
    assert machine.path("c/app.yaml").read_text() == text
    one_line = "a: 1\nt: {x: 1, y: 2}\n"  # on one line, nothing is lost: set as usual
    machine.put("c/app.yaml", one_line)
    machine.converge(body)
    assert machine.load("c/app.yaml")["t"] == {"x": 1, "y": 2, "n": 3}
