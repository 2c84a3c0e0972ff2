"""The tool kind: a CLI at an exact version, installed by one recipe, never guessed.

The package managers here are stand-in scripts on PATH that install a stand-in
tool (a script printing its version): real processes, run as trueup runs the
real ones.
"""

from __future__ import annotations

import hashlib
import http.server
import shutil
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from machine import Machine

from trueup.errors import UsageError
from trueup.model import ActionType as T
from trueup.model import Outcome


def _script(path: Path, body: str) -> Path:
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(0o755)
    return path


def tool_printing(path: Path, version: str) -> Path:
    return _script(path, f'echo "mytool version {version} (build abc)"\n')


@pytest.fixture
def bin_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A folder first on PATH holding the stand-in package managers."""
    folder = tmp_path / "bin"
    folder.mkdir()
    # Only what the stand-ins use besides: no real package manager is found.
    system = tmp_path / "system"
    system.mkdir()
    (system / "chmod").symlink_to(shutil.which("chmod") or "/bin/chmod")
    monkeypatch.setenv("PATH", f"{folder}:{system}")
    # `uv tool install NAME==VERSION` installs a tool printing VERSION.
    _script(
        folder / "uv",
        'spec="$3"; name="${spec%%==*}"; version="${spec#*==}"\n'
        f'printf \'#!/bin/sh\\necho "%s version %s (build abc)"\\n\' "$name" "$version" '
        f'> "{folder}/$name"\n'
        f'chmod 755 "{folder}/$name"\n'
        'echo "installed $spec"\n',
    )
    return folder


TOOL = """
[[resource]]
id = "mytool"
kind = "tool"
target = "mytool"
version = "{version}"
recipe = [{{ manager = "uv", package = "mytool" }}]
"""


def declared(version: str = "1.2.0", extra: str = "") -> str:
    return TOOL.format(version=version) + extra


def test_a_missing_tool_is_installed_by_its_recipe_then_verified(
    machine: Machine, bin_dir: Path
) -> None:
    action = machine.action(declared(), "mytool")
    assert action.type is T.INSTALL_TOOL
    assert "uv tool install mytool==1.2.0" in action.summary
    result = machine.apply(declared())
    assert result is not None and result.outcome is Outcome.CONVERGED
    [done] = result.results
    assert done.evidence is not None and done.evidence.method == "executable-present"
    assert (bin_dir / "mytool").exists()
    assert machine.action(declared(), "mytool").type is T.NO_OP


def test_a_tool_already_at_the_version_is_left_alone(machine: Machine, bin_dir: Path) -> None:
    tool_printing(bin_dir / "mytool", "1.2.0")
    assert machine.action(declared(), "mytool").type is T.NO_OP


def test_a_version_trueup_did_not_install_is_drift_until_overwrite(
    machine: Machine, bin_dir: Path
) -> None:
    tool_printing(bin_dir / "mytool", "1.1.9")
    action = machine.action(declared(), "mytool")
    assert action.type is T.DRIFT_CONFLICT
    assert "1.1.9 is installed (not installed by trueup)" in action.summary
    assert "--overwrite mytool" in action.summary
    assert "1.1.9" in (bin_dir / "mytool").read_text()  # left as it is
    machine.converge(declared(), force=("mytool",))
    assert "1.2.0" in (bin_dir / "mytool").read_text()


def test_a_version_bump_upgrades_what_trueup_installed(machine: Machine, bin_dir: Path) -> None:
    machine.converge(declared("1.2.0"))
    assert machine.action(declared("1.3.0"), "mytool").type is T.INSTALL_TOOL
    machine.converge(declared("1.3.0"))
    assert "1.3.0" in (bin_dir / "mytool").read_text()


def test_a_tool_changed_by_hand_after_trueup_installed_it_is_drift(
    machine: Machine, bin_dir: Path
) -> None:
    machine.converge(declared("1.2.0"))
    tool_printing(bin_dir / "mytool", "2.0.0")
    action = machine.action(declared("1.2.0"), "mytool")
    assert action.type is T.DRIFT_CONFLICT
    assert "changed since trueup installed it" in action.summary


def test_no_recipe_that_can_run_here_is_a_human_action_naming_the_command(
    machine: Machine, bin_dir: Path
) -> None:
    body = declared().replace('manager = "uv"', 'manager = "npm"')
    action = machine.action(body, "mytool")
    assert action.type is T.HUMAN_ACTION
    assert "npm install --global mytool@1.2.0" in action.summary


def test_no_recipe_for_this_platform_is_a_human_action(machine: Machine, bin_dir: Path) -> None:
    body = declared().replace('manager = "uv"', 'manager = "winget", platform = "windows"')
    action = machine.action(body, "mytool")
    assert action.type is T.HUMAN_ACTION
    assert "no recipe installs mytool 1.2.0 on linux" in action.summary


def test_two_recipes_that_could_both_run_are_ambiguous_never_a_guess(
    machine: Machine, bin_dir: Path
) -> None:
    _script(bin_dir / "pipx", "exit 1\n")
    two = 'recipe = [{ manager = "pipx", package = "mytool" }, { manager = "uv", package = "mytool" }]'
    body = declared().replace('recipe = [{ manager = "uv", package = "mytool" }]', two)
    action = machine.action(body, "mytool")
    assert action.type is T.HUMAN_ACTION
    assert "ambiguous: pipx, uv could each install" in action.summary
    assert 'set prefer = "pipx"' in action.summary
    chosen = machine.action(body + 'prefer = "uv"\n', "mytool")
    assert chosen.type is T.INSTALL_TOOL and "uv tool install" in chosen.summary


def test_a_tool_that_needs_a_login_is_a_human_action_with_the_login_command(
    machine: Machine, bin_dir: Path, tmp_path: Path
) -> None:
    tool_printing(bin_dir / "mytool", "1.2.0")
    flag = tmp_path / "logged-in"
    _script(bin_dir / "mytool-auth", f'test -f "{flag}"\n')
    login = 'login = { check = ["mytool-auth"], command = "mytool auth login" }\n'
    action = machine.action(declared(extra=login), "mytool")
    assert action.type is T.HUMAN_ACTION
    assert "needs a login: run `mytool auth login`" in action.summary
    flag.write_text("")
    assert machine.action(declared(extra=login), "mytool").type is T.NO_OP


def test_a_failing_installer_fails_the_run_without_its_output(
    machine: Machine, bin_dir: Path
) -> None:
    _script(bin_dir / "uv", "echo 'secret build log'; exit 1\n")
    result = machine.apply(declared())
    assert result is not None and result.outcome is Outcome.FAILED
    assert "installing mytool 1.2.0 failed (exit 1)" in result.message
    assert "uv tool install mytool==1.2.0" in result.message
    assert "secret build log" not in result.message


def test_an_install_that_leaves_another_version_fails_verification(
    machine: Machine, bin_dir: Path
) -> None:
    _script(
        bin_dir / "uv",
        f'printf \'#!/bin/sh\\necho "mytool 0.9.0"\\n\' > "{bin_dir}/mytool"; '
        f'chmod 755 "{bin_dir}/mytool"\n',
    )
    result = machine.apply(declared())
    assert result is not None and result.outcome is Outcome.FAILED
    assert "mytool 1.2.0 was installed, but found: 0.9.0" in result.message


def test_a_dropped_tool_is_forgotten_and_never_uninstalled(machine: Machine, bin_dir: Path) -> None:
    machine.converge(declared())
    action = machine.action("", "mytool")
    assert action.type is T.REMOVE_RESOURCE and "never uninstalls" in action.summary
    machine.converge("")
    assert (bin_dir / "mytool").exists()
    assert machine.plan("").actions == ()


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[str, bytes]]:
    """A loopback HTTP server holding one binary: (its URL, its bytes)."""
    folder = tmp_path / "www"
    folder.mkdir()
    data = b"#!/bin/sh\necho 'dl 3.1.4'\n"
    (folder / "dl").write_bytes(data)

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def __init__(self, *args, **kwargs):  # type: ignore[no-untyped-def]
            super().__init__(*args, directory=str(folder), **kwargs)

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Quiet)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}/dl", data
    server.shutdown()


def download(url: str, sha: str) -> str:
    return f"""
[[resource]]
id = "dl"
kind = "tool"
target = ".local/bin/dl"
version = "3.1.4"
recipe = [{{ manager = "download", url = "{url}", sha256 = "{sha}" }}]
"""


def test_a_download_with_its_pinned_sha256_is_installed_executable(
    machine: Machine, served: tuple[str, bytes], bin_dir: Path
) -> None:
    url, data = served
    body = download(url, hashlib.sha256(data).hexdigest())
    machine.converge(body)
    installed = machine.path(".local/bin/dl")
    assert installed.read_bytes() == data and installed.stat().st_mode & 0o111


def test_a_download_with_another_sha256_installs_nothing(
    machine: Machine, served: tuple[str, bytes], bin_dir: Path
) -> None:
    url, _ = served
    result = machine.apply(download(url, "0" * 64))
    assert result is not None and result.outcome is Outcome.FAILED
    assert "does not have the pinned sha256" in result.message
    assert not machine.path(".local/bin/dl").exists()


def test_a_range_instead_of_an_exact_version_is_refused_at_load(machine: Machine) -> None:
    with pytest.raises(UsageError, match="resource 'mytool': field 'version'"):
        machine.plan(declared("^1.2"))


def test_a_download_to_a_bare_name_is_refused_at_load(machine: Machine) -> None:
    body = download("http://127.0.0.1:1/dl", "0" * 64).replace(".local/bin/dl", "dl")
    with pytest.raises(UsageError, match="field 'target': a download recipe installs to a path"):
        machine.plan(body)


def test_a_download_recipe_without_its_sha256_is_refused_at_load(machine: Machine) -> None:
    body = download("http://127.0.0.1:1/dl", "x").replace(', sha256 = "x"', "")
    with pytest.raises(UsageError, match="needs url and its pinned sha256"):
        machine.plan(body)


def test_a_converged_plan_is_not_remembered_so_a_tool_removed_since_is_seen(
    machine: Machine, bin_dir: Path
) -> None:
    machine.converge(declared())
    assert machine.action(declared(), "mytool").type is T.NO_OP  # no file changed since...
    (bin_dir / "mytool").unlink()  # ...and none under the root changes now either
    assert machine.action(declared(), "mytool").type is T.INSTALL_TOOL
