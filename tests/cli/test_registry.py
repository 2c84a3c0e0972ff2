"""The lazy command table: every row is a command, ``--help`` lists them all without
importing them, and a profile command never loads the org, team or fake-server code."""

from __future__ import annotations

import click
import pytest
from world import TRUEUP, World

from trueup.cli.registry import LAZY_COMMANDS, load


@pytest.mark.parametrize("name", list(LAZY_COMMANDS))
def test_every_row_loads_the_command_it_names_with_the_help_it_shows(name: str) -> None:
    command = load(name)
    assert isinstance(command, click.Command) and command.name == name
    assert command.get_short_help_str(limit=200) == LAZY_COMMANDS[name].help


def test_help_lists_every_command_with_its_line_and_imports_none(world: World) -> None:
    code, modules = world.modules("--help")
    assert code == 0
    assert not {row.target.partition(":")[0] for row in LAZY_COMMANDS.values()} & modules
    shown = world.run("--help", env={"COLUMNS": "80"})
    assert shown.code == 0, shown.err
    listed = commands_listed(shown.out)
    for name, row in LAZY_COMMANDS.items():  # whole, wrapped, never cut short
        assert listed[name].split() == row.help.split(), name


def commands_listed(help_text: str) -> dict[str, str]:
    """The Commands section of a group's help: each name and its line, unwrapped."""
    section = help_text[help_text.index("Commands:") :].split("\n\n")[0].splitlines()[1:]
    listed: dict[str, str] = {}
    name = ""
    for line in section:
        head = line[2:]
        if head and not head.startswith(" "):  # a name at the left: a new command
            name, _, line = head.partition(" ")
            listed[name] = ""
        listed[name] += " " + line.strip()
    return listed


def test_a_lazy_command_runs_and_answers_its_own_help(world: World) -> None:
    shown = world.run("org", "--help")
    assert shown.code == 0 and "plan" in shown.out and "--install-completion" not in shown.out
    assert world.run("org", "plan", "--help", "--json").json["command"] == "org plan"
    listed = world.run("jobs", "list", "--json")
    assert listed.code == 0, listed.err
    assert listed.json["command"] == "jobs list"


def test_a_mistyped_command_is_matched_against_the_lazy_ones_too(world: World) -> None:
    shown = world.run("orgg")
    assert shown.code == 2 and "Did you mean 'org'?" in shown.err


def test_plan_imports_no_org_team_or_fake_server_code(world: World, profile: str) -> None:
    code, modules = world.modules("plan", profile, "--root", str(world.root))
    assert code == 0
    elsewhere = ("trueup.org", "trueup.providers", "trueup.testing")
    assert not [m for m in modules if m.startswith(elsewhere)]
    assert not {row.target.partition(":")[0] for row in LAZY_COMMANDS.values()} & modules


def test_shell_completion_offers_the_lazy_commands_and_their_subcommands(world: World) -> None:
    def complete(words: str) -> list[str]:
        env = {"_TRUEUP_COMPLETE": "bash_complete", "COMP_WORDS": words}
        done = world.call([TRUEUP], {**env, "COMP_CWORD": str(len(words.split()) - 1)})
        assert done.returncode == 0, done.stderr
        return done.stdout.splitlines()

    assert "plain,org" in complete("trueup or")
    assert "plain,plan" in complete("trueup org pl")
    assert "plain,--root" in complete("trueup sync --ro")
