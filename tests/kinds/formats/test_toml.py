"""TOML editing keeps comments, order and formatting of everything not edited."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest
import tomlkit
from format_cases import property_tests

from trueup.kinds.formats import (
    MISSING,
    ConfigDocument,
    ConfigError,
    KeyPathError,
    UnsupportedValueError,
    load,
)

CODEX_CONFIG = """\
# ~/.codex/config.toml
# Managed partly by trueup; hand edits are welcome.

model = "gpt-5-codex"          # default model for new sessions
model_reasoning_effort = 'high'
approval_policy = "on-request"
sandbox_mode    = "workspace-write"

[sandbox_workspace_write]
network_access = false  # keep the sandbox offline
writable_roots = [
  "/tmp",
  "~/scratch",  # throwaway checkouts
]

# MCP servers -----------------------------------------------------------

[mcp_servers.context7]
command = "npx"
args = ["-y", "@upstash/context7-mcp"]
env = { "LOG_LEVEL" = "info" }

[mcp_servers.github]
command = "github-mcp-server"
startup_timeout_sec = 20

[profiles.fast]
model = "o4-mini"
model_reasoning_effort = "low"
"""


def doc(text: str = CODEX_CONFIG) -> ConfigDocument:
    return load("toml", text, origin="config.toml")


def changed_lines(before: str, after: str) -> list[tuple[str, str]]:
    old, new = before.splitlines(), after.splitlines()
    assert len(old) == len(new)
    return [(a, b) for a, b in zip(old, new, strict=True) if a != b]


# --- round trips and reading -----------------------------------------------------


def test_round_trip_without_edits_is_identical() -> None:
    assert doc().to_text() == CODEX_CONFIG


def test_get_returns_plain_values() -> None:
    document = doc()
    assert document.get(("model",)) == "gpt-5-codex"
    assert type(document.get(("model",))) is str
    assert document.get(("sandbox_workspace_write",)) == {
        "network_access": False,
        "writable_roots": ["/tmp", "~/scratch"],
    }
    env = document.get(("mcp_servers", "context7", "env"))
    assert env == {"LOG_LEVEL": "info"} and type(env) is dict
    timeout = document.get(("mcp_servers", "github", "startup_timeout_sec"))
    assert timeout == 20 and type(timeout) is int
    assert document.get(("mcp_servers", "nope")) is MISSING
    assert document.get(("model", "x")) is MISSING


def test_keys_flat() -> None:
    assert doc().keys_flat() == {
        "model": "gpt-5-codex",
        "model_reasoning_effort": "high",
        "approval_policy": "on-request",
        "sandbox_mode": "workspace-write",
        "sandbox_workspace_write.network_access": False,
        "sandbox_workspace_write.writable_roots": ["/tmp", "~/scratch"],
        "mcp_servers.context7.command": "npx",
        "mcp_servers.context7.args": ["-y", "@upstash/context7-mcp"],
        "mcp_servers.context7.env.LOG_LEVEL": "info",
        "mcp_servers.github.command": "github-mcp-server",
        "mcp_servers.github.startup_timeout_sec": 20,
        "profiles.fast.model": "o4-mini",
        "profiles.fast.model_reasoning_effort": "low",
    }


def test_dates_are_plain_datetime_values() -> None:
    document = doc("when = 2024-05-01T12:30:00Z\nday = 2024-05-01\n")
    assert document.get(("when",)) == dt.datetime(2024, 5, 1, 12, 30, tzinfo=dt.UTC)
    assert type(document.get(("day",))) is dt.date


# --- edits in place --------------------------------------------------------------


def test_setting_existing_values_keeps_trailing_comments_and_quoting() -> None:
    document = doc()
    document.set(("model",), "gpt-5")
    document.set(("model_reasoning_effort",), "medium")
    document.set(("sandbox_workspace_write", "network_access"), True)
    assert changed_lines(CODEX_CONFIG, document.to_text()) == [
        (
            'model = "gpt-5-codex"          # default model for new sessions',
            'model = "gpt-5"          # default model for new sessions',
        ),
        ("model_reasoning_effort = 'high'", "model_reasoning_effort = 'medium'"),
        (
            "network_access = false  # keep the sandbox offline",
            "network_access = true  # keep the sandbox offline",
        ),
    ]


def test_literal_string_falls_back_to_basic_when_it_must() -> None:
    document = doc()
    document.set(("model_reasoning_effort",), "it's")
    assert 'model_reasoning_effort = "it\'s"\n' in document.to_text()


def test_new_keys_go_where_a_person_would_put_them() -> None:
    document = doc()
    document.set(("hide_agent_reasoning",), True)
    document.set(("sandbox_workspace_write", "exclude_tmpdir_env_var"), False)
    document.set(("mcp_servers", "github", "env", "GITHUB_TOKEN"), "${GITHUB_TOKEN}")
    document.set(("mcp_servers", "context7", "env", "DEBUG"), "1")
    document.set(("tui", "notifications"), True)
    document.delete(("profiles", "fast", "model_reasoning_effort"))
    assert (
        document.to_text()
        == """\
# ~/.codex/config.toml
# Managed partly by trueup; hand edits are welcome.

model = "gpt-5-codex"          # default model for new sessions
model_reasoning_effort = 'high'
approval_policy = "on-request"
sandbox_mode    = "workspace-write"
hide_agent_reasoning = true

[sandbox_workspace_write]
network_access = false  # keep the sandbox offline
writable_roots = [
  "/tmp",
  "~/scratch",  # throwaway checkouts
]
exclude_tmpdir_env_var = false

# MCP servers -----------------------------------------------------------

[mcp_servers.context7]
command = "npx"
args = ["-y", "@upstash/context7-mcp"]
env = { "LOG_LEVEL" = "info", DEBUG = "1" }

[mcp_servers.github]
command = "github-mcp-server"
startup_timeout_sec = 20

[mcp_servers.github.env]
GITHUB_TOKEN = "${GITHUB_TOKEN}"

[profiles.fast]
model = "o4-mini"

[tui]
notifications = true
"""
    )


FIRST_ROOT_KEYS = [
    (
        "# MCP servers I use\n[mcp]\nx = 1\n",
        'model = "m"\nhide = true\n\n# MCP servers I use\n[mcp]\nx = 1\n',
    ),
    (
        "# the file\n\n# one\n# two\n[mcp]\nx = 1\n",
        '# the file\n\nmodel = "m"\nhide = true\n\n# one\n# two\n[mcp]\nx = 1\n',
    ),
    (
        "# c\r\n[mcp]\r\nx = 1\r\n",
        'model = "m"\r\nhide = true\r\n\r\n# c\r\n[mcp]\r\nx = 1\r\n',
    ),
]


@pytest.mark.parametrize(("before", "after"), FIRST_ROOT_KEYS)
def test_a_first_root_key_goes_before_the_comment_that_introduces_the_first_table(
    before: str, after: str
) -> None:
    document = doc(before)
    document.set(("model",), "m")
    document.set(("hide",), True)
    assert document.to_text() == after


def test_a_new_key_goes_above_the_comment_that_runs_into_the_next_table() -> None:
    document = doc("top = 1\n# Settings for b\n[b]\ny = 2\n")
    document.set(("model",), "m")
    assert document.to_text() == 'top = 1\nmodel = "m"\n# Settings for b\n[b]\ny = 2\n'


@pytest.mark.parametrize("before", ["[x.y]\nz = 1\n", "top = 1\n[ x . y ]\nz = 1\n"])
def test_a_header_a_key_brought_to_an_implied_table_goes_with_the_key(before: str) -> None:
    document = doc(before)
    document.set(("x", "q"), 1)
    assert "q = 1" in document.to_text()
    document = doc(document.to_text())  # read again, as a later run does
    document.delete(("x", "q"))
    assert document.to_text() == before


@pytest.mark.parametrize(("before", "after"), FIRST_ROOT_KEYS)
def test_removing_the_first_root_keys_again_gives_back_the_file_as_it_was(
    before: str, after: str
) -> None:
    document = doc(after)  # read again, as a later run does
    document.delete(("hide",))
    document.delete(("model",))
    assert document.to_text() == before


def test_new_tables_with_nested_tables() -> None:
    document = doc()
    document.set(("mcp_servers", "new"), {"command": "uvx", "args": ["srv"], "env": {"A": "1"}})
    document.set(("projects", "/home/me/code"), {"trust_level": "trusted"})
    profiles = CODEX_CONFIG.index("[profiles.fast]")
    assert document.to_text() == (
        CODEX_CONFIG[:profiles]
        + '[mcp_servers.new]\ncommand = "uvx"\nargs = ["srv"]\n\n'
        + '[mcp_servers.new.env]\nA = "1"\n\n'
        + CODEX_CONFIG[profiles:]
        + '\n[projects."/home/me/code"]\ntrust_level = "trusted"\n'
    )


def test_replacing_a_list_and_merging_a_table() -> None:
    document = doc()
    document.set(("sandbox_workspace_write", "writable_roots"), ["/tmp", "~/work"])
    document.set(("profiles", "fast"), {"model": "o3", "approval_policy": "never"})
    assert document.to_text() == CODEX_CONFIG.replace(
        '[\n  "/tmp",\n  "~/scratch",  # throwaway checkouts\n]', '["/tmp", "~/work"]'
    ).replace(
        'model = "o4-mini"\nmodel_reasoning_effort = "low"\n',
        'model = "o3"\napproval_policy = "never"\n',
    )


def test_delete_keeps_surrounding_layout() -> None:
    document = doc()
    document.delete(("mcp_servers", "github"))
    document.delete(("sandbox_mode",))
    document.delete(("model",))
    document.delete(("nope", "nested"))
    assert document.to_text() == CODEX_CONFIG.replace(
        'model = "gpt-5-codex"          # default model for new sessions\n', ""
    ).replace('sandbox_mode    = "workspace-write"\n', "").replace(
        '[mcp_servers.github]\ncommand = "github-mcp-server"\nstartup_timeout_sec = 20\n\n', ""
    )


def test_deleting_the_last_key_keeps_the_table() -> None:
    document = doc("[a]\nx = 1\n\n[b]\ny = 2\n")
    document.delete(("a", "x"))
    assert document.to_text() == "[a]\n\n[b]\ny = 2\n"
    assert document.get(("a",)) == {}


def test_header_less_tables_keep_existing_when_emptied() -> None:
    document = doc("[p.q]\nx = 1\n")
    document.delete(("p", "q"))
    assert document.get(("p",)) == {}
    assert load("toml", document.to_text(), origin="x").get(("p",)) == {}


def test_dotted_keys_are_edited_as_dotted_keys() -> None:
    document = doc("site.name = 'x'  # the name\n[other]\nk = 1\n")
    document.set(("site", "name"), "y")
    document.set(("site", "url"), "https://example.org")
    assert document.to_text() == (
        "site.name = 'y'  # the name\nsite.url = \"https://example.org\"\n[other]\nk = 1\n"
    )


def test_tables_under_dotted_keys_are_written_inline() -> None:
    # A [header] here would capture the plain keys that follow it.
    document = doc("a.b = 1  # c\n[t]\nx = 1\n")
    document.set(("model",), "")
    document.set(("a", "model"), {})
    document.set(("a", "n"), {"x": {"y": 1}})
    assert document.to_text() == (
        'a.b = 1  # c\na.model = {}\na.n = {x = {y = 1}}\nmodel = ""\n[t]\nx = 1\n'
    )
    assert load("toml", document.to_text(), origin="x").get(("model",)) == ""


def test_inserted_keys_can_be_edited_and_deleted_again() -> None:
    document = doc()
    document.set(("sandbox_workspace_write", "extra"), 1)
    document.set(("sandbox_workspace_write", "extra"), 2)
    assert document.get(("sandbox_workspace_write", "extra")) == 2
    document.delete(("sandbox_workspace_write", "extra"))
    document.set(("mcp_servers", "github", "env"), {"A": "1"})
    document.delete(("mcp_servers", "github", "env"))
    assert document.to_text() == CODEX_CONFIG


# --- inline tables ---------------------------------------------------------------


def test_inline_tables_are_rewritten_in_their_own_style() -> None:
    document = doc('x = { a = 1, "b c" = {d = 2} } # keep\n')
    document.set(("x", "b c", "e"), 3)
    assert document.to_text() == 'x = { a = 1, "b c" = {d = 2, e = 3} } # keep\n'
    document.set(("x", "n"), {"q": [1, {"r": 1}]})
    assert (
        document.to_text()
        == 'x = { a = 1, "b c" = {d = 2, e = 3}, n = {q = [1, {r = 1}]} } # keep\n'
    )
    document.delete(("x", "a"))
    document.delete(("x", "b c"))
    document.delete(("x", "n"))
    assert document.to_text() == "x = {} # keep\n"


@pytest.mark.parametrize(
    ("before", "after"),
    [
        ("a = {x=1,y=2}\n", "a = {x=1,y=3,z=4}\n"),
        ("a = {x=1, y=2}\n", "a = {x=1, y=3, z=4}\n"),
        ("a = { x = 1, y = 2 }\n", "a = { x = 1, y = 3, z = 4 }\n"),
        ("a = {}\n", "a = {y = 3, z = 4}\n"),
    ],
)
def test_new_entries_of_an_inline_table_are_spaced_as_its_others(before: str, after: str) -> None:
    document = doc(before)
    document.set(("a", "y"), 3)
    document.set(("a", "z"), 4)
    assert document.to_text() == after


def test_inline_table_with_booleans_is_merged() -> None:
    document = doc("x = {a = true, b = 1}  # c\n")
    document.set(("x",), {"a": True, "b": 2, "d": {}})
    assert document.to_text() == "x = {a = true, b = 2, d = {}}  # c\n"


# --- no-ops ----------------------------------------------------------------------


def test_setting_present_values_changes_nothing() -> None:
    document = doc()
    for key, value in tomlkit.parse(CODEX_CONFIG).unwrap().items():
        document.set((key,), value)
    document.set(("sandbox_workspace_write", "writable_roots"), ("/tmp", "~/scratch"))
    assert document.to_text() == CODEX_CONFIG


def test_same_value_means_same_type() -> None:
    document = doc("a = 1\nb = 1.0\n")
    document.set(("a",), 1)
    document.set(("b",), 1.0)
    assert document.to_text() == "a = 1\nb = 1.0\n"
    document.set(("a",), True)
    document.set(("b",), 1)
    assert document.to_text() == "a = true\nb = 1\n"


# --- new files -------------------------------------------------------------------


def test_building_a_file_from_empty() -> None:
    document = doc("")
    document.set(("model",), "o3")
    document.set(("sandbox", "mode"), "read-only")
    document.set(("mcp_servers", "x", "args"), ["a"])
    assert document.to_text() == (
        'model = "o3"\n\n[sandbox]\nmode = "read-only"\n\n[mcp_servers.x]\nargs = ["a"]\n'
    )


def test_file_without_trailing_newline() -> None:
    document = doc("a = 1")
    document.set(("t", "x"), 1)
    assert document.to_text() == "a = 1\n\n[t]\nx = 1\n"


# --- errors ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "where"),
    [
        ("a = \n", "config.toml:1:5: invalid TOML: Unexpected character"),
        ("a = 1\na = 2\n", 'config.toml:2:1: invalid TOML: Key "a" already exists'),
        ("[t\n", "config.toml:1:3: invalid TOML"),
    ],
)
def test_parse_errors_name_origin_line_and_column(text: str, where: str) -> None:
    with pytest.raises(ConfigError) as info:
        doc(text)
    assert str(info.value).startswith(where)


def test_values_toml_cannot_hold_are_refused() -> None:
    document = doc()
    with pytest.raises(UnsupportedValueError, match="no null"):
        document.set(("model",), None)
    with pytest.raises(UnsupportedValueError, match="no null"):
        document.set(("x",), {"y": [1, None]})
    with pytest.raises(UnsupportedValueError, match="64-bit"):
        document.set(("x",), 2**63)
    assert document.to_text() == CODEX_CONFIG


def test_setting_below_a_scalar_is_refused() -> None:
    with pytest.raises(KeyPathError, match="model holds a string"):
        doc().set(("model", "name"), "x")


# --- properties ------------------------------------------------------------------

FORMAT = "toml"


def dump(data: dict[str, Any]) -> str:
    return tomlkit.dumps(data)


(
    test_property_load_dump_round_trip,
    test_property_set_then_get_and_nothing_else_changes,
    test_property_delete_removes_only_that_key,
) = property_tests(FORMAT, dump)


def test_a_byte_order_mark_is_read_past_and_kept() -> None:
    document = doc('\ufeffmodel = "a"\n')
    assert document.get(("model",)) == "a"
    document.set(("model",), "b")
    assert document.to_text() == '\ufeffmodel = "b"\n'


def test_a_crlf_file_stays_crlf_when_keys_are_added() -> None:
    document = doc('model = "a"\r\n\r\n[tools]\r\nx = 1\r\n')
    document.set(("tools", "y"), 2)
    document.set(("extra",), "e")
    text = document.to_text()
    assert "\n" not in text.replace("\r\n", ""), repr(text)
    assert load("toml", text, origin="c.toml").get(("tools", "y")) == 2


def test_a_multiline_string_keeps_its_own_line_breaks_in_a_crlf_file() -> None:
    document = doc('model = "a"\r\n')
    document.set(("prompt",), "one\ntwo\n")
    assert load("toml", document.to_text(), origin="c.toml").get(("prompt",)) == "one\ntwo\n"


def test_lines_of_a_mixed_file_keep_their_own_endings() -> None:
    text = 'a = 0\r\nb = """\nmulti\r\n"""\n'
    document = doc(text)
    document.set(("a",), 1)
    document.set(("c",), 2)
    assert document.to_text() == 'a = 1\r\nb = """\nmulti\r\n"""\nc = 2\r\n'


@pytest.mark.parametrize(
    ("path", "value", "expected"),
    [
        (("inl", "c"), 3, {"a": {"b": 1}, "c": 3}),
        (("inl", "a", "d"), 4, {"a": {"b": 1, "d": 4}, "c": 2}),
    ],
)
def test_an_inline_table_with_a_dotted_key_keeps_its_values(
    path: tuple[str, ...], value: int, expected: dict[str, Any]
) -> None:
    document = doc("inl = { a.b = 1, c = 2 }\n")
    document.set(path, value)
    assert tomlkit.parse(document.to_text()).unwrap()["inl"] == expected
