"""Verification methods: each kind takes those that fit it, the rest are refused at load;
a command may be required to print something, its output never kept."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from trueup.engine import Engine
from trueup.errors import UsageError
from trueup.model import Outcome

HEAD = '[profile]\nid = "v"\nname = "V"\n'


def profile(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "profile.toml"
    path.write_text(HEAD + body)
    return path


def file_with(verify: str, extra: str = 'content = "hello\\n"') -> str:
    return f"""
[[resource]]
id = "f"
kind = "file"
target = "f.txt"
{extra}
verify = {verify}
"""


CREDENTIAL = """
[[resource]]
id = "c"
kind = "credential"
target = "credentials/c"
store = "env"
name = "SOME_TOKEN"
verify = {verify}
"""


@pytest.fixture
def root(tmp_path: Path) -> Path:
    folder = tmp_path / "root"
    folder.mkdir()
    return folder


@pytest.mark.parametrize(
    ("body", "refusal"),
    [
        (
            file_with('{ method = "credential-present" }'),
            "field 'verify.method': 'credential-present' does not fit a file; "
            "expected one of digest, symlink, command",
        ),
        (
            CREDENTIAL.format(verify='{ method = "digest" }'),
            "'digest' does not fit a credential; expected one of credential-present, command",
        ),
        (file_with('{ method = "symlink" }'), "'symlink' verifies a declared link; add link"),
        (file_with('{ method = "command" }'), "method 'command' needs command"),
        (file_with('{ expect_contains = "ok" }'), "expect_contains needs command"),
        (file_with('{ method = "magic" }'), "verify.method"),
    ],
)
def test_a_method_that_does_not_fit_is_refused_at_load(
    engine: Engine, tmp_path: Path, root: Path, body: str, refusal: str
) -> None:
    with pytest.raises(UsageError, match=r"resource '[fc]'") as refused:
        engine.plan(profile(tmp_path, body), root)
    assert refusal in refused.value.message


def test_methods_that_fit_are_accepted(engine: Engine, tmp_path: Path, root: Path) -> None:
    body = file_with('{ method = "symlink" }', 'link = "elsewhere"') + CREDENTIAL.format(
        verify='{ method = "credential-present" }'
    )
    planned = engine.plan(profile(tmp_path, body), root).plan
    assert {a.resource_id for a in planned.actions} == {"f", "c"}


def printing(text: str) -> str:
    return f'["{sys.executable}", "-c", "print({text!r})"]'


def test_a_command_must_print_what_is_expected(engine: Engine, tmp_path: Path, root: Path) -> None:
    good = file_with(f'{{ command = {printing("status: ok")}, expect_contains = "status: ok" }}')
    prepared = engine.prepare(profile(tmp_path, good), root)
    result = engine.apply(prepared, prepared.plan)
    assert result is not None and result.outcome is Outcome.CONVERGED
    [done] = result.results
    assert done.evidence is not None and done.evidence.method == "command"


def test_output_without_the_expected_text_fails_and_restores_without_showing_it(
    engine: Engine, tmp_path: Path, root: Path
) -> None:
    # The output holds "token=abc", the command only its halves.
    command = f'["{sys.executable}", "-c", "print(\'tok\' + \'en=abc status: down\')"]'
    bad = file_with(f'{{ command = {command}, expect_contains = "up" }}')
    prepared = engine.prepare(profile(tmp_path, bad), root)
    result = engine.apply(prepared, prepared.plan)
    assert result is not None and result.outcome is Outcome.FAILED
    assert "output does not contain 'up'" in result.message
    assert "token=abc" not in result.message  # the output itself is never shown or kept
    assert not (root / "f.txt").exists()  # restored: the run was one transaction
