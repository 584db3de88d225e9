"""The one argument parser (`sessdex.catalog.cli.commands`): what `sessdex` alone and `--help` show, one-line usage
errors, "did you mean" for a mistyped command, and global options before or after the command."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from sessdex.catalog.cli.commands import COMMANDS, parse_command_line
from tests.catalog.catalog_support import BASE_MS, header, jsonl, user, write_file
from tests.cli_support import run_cli


def test_sessdex_alone_lists_the_commands_on_stdout(capsys: pytest.CaptureFixture[str]) -> None:
    result = run_cli([], capsys)
    assert (result.code, result.err) == (0, "")
    assert result.out.startswith("usage: sessdex ")
    for name, (_module, summary) in COMMANDS.items():
        assert f"  {name} " in result.out and summary in result.out


def test_help_lists_the_commands_global_options_and_exit_statuses(capsys: pytest.CaptureFixture[str]) -> None:
    result = run_cli(["--help"], capsys)
    assert result.code == 0
    for text in ("--agent-dir DIR", "--catalog", "--machines {this,all}", "Exit status:", "130  cancelled", *COMMANDS):
        assert text in result.out, text


def test_a_command_help_shows_its_options_and_the_global_ones(capsys: pytest.CaptureFixture[str]) -> None:
    result = run_cli(["recent", "--help"], capsys)
    assert result.code == 0 and result.out.startswith("usage: sessdex recent")
    assert "-n LIMIT, --limit LIMIT" in result.out and "(default 10)" in result.out and "--agent-dir DIR" in result.out


@pytest.mark.parametrize(("args", "line"), [
    (["lsit"], "sessdex: no such command 'lsit'; did you mean 'list'? (see `sessdex --help`)"),
    (["frobnicate"], "sessdex: no such command 'frobnicate' (see `sessdex --help`)"),
    (["list", "--bogus"], "sessdex list: unrecognized arguments: --bogus (see `sessdex list --help`)"),
    (["--bogus", "list"], "sessdex list: unrecognized arguments: --bogus (see `sessdex list --help`)"),
    (["recent", "-n", "0"], "sessdex recent: argument -n/--limit: '0' is not a whole number from 1 to 1000000000 "
                            "(see `sessdex recent --help`)"),
    (["list", "--machines", "some"], "sessdex list: argument --machines: invalid choice: 'some' (choose from 'this', "
                                     "'all') (see `sessdex list --help`)"),
    (["history", "bogus"], "sessdex history: argument COMMAND: invalid choice: 'bogus' (choose from 'recent', "
                           "'search', 'add', 'import') (see `sessdex history --help`)"),
    (["history", "search", "--nope", "x"], "sessdex history search: unrecognized arguments: --nope (see `sessdex "
                                           "history search --help`)"),
    (["search"], "sessdex search: the following arguments are required: WORDS (see `sessdex search --help`)"),
])
def test_a_bad_command_line_is_one_line_and_exit_2(args: list[str], line: str, capsys: pytest.CaptureFixture[str]) -> None:
    result = run_cli(args, capsys)
    assert (result.code, result.out, result.err) == (2, "", line + "\n")


@pytest.mark.parametrize("args", [
    ["--agent-dir", "A", "--catalog=C", "list", "--json"],
    ["list", "--json", "--agent-dir", "A", "--catalog", "C"],
    ["--agent-dir=A", "list", "--catalog=C", "--json"],
])
def test_global_options_go_before_or_after_the_command(args: list[str]) -> None:
    parsed = parse_command_line(args)
    assert (parsed.command, parsed.agent_dir, parsed.catalog, parsed.as_json) == ("list", "A", "C", True)


def test_global_options_after_a_subcommand_of_a_group() -> None:
    parsed = parse_command_line(["history", "search", "word", "--agent-dir", "A", "--machines", "all"])
    assert (parsed.history_command, parsed.query, parsed.agent_dir, parsed.machines) == ("search", ["word"], "A", "all")


def test_the_option_given_after_the_command_wins() -> None:
    assert parse_command_line(["--catalog", "first", "list", "--catalog", "second"]).catalog == "second"


def test_an_agent_dir_given_after_the_command_is_used(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    agent_dir = tmp_path / "agent"
    project = tmp_path / "proj"
    project.mkdir()
    write_file(agent_dir / "sessions" / "--proj--" / "a.jsonl",
               jsonl([header("ab12000000000001", str(project)), user("hello")]), BASE_MS)
    monkeypatch.chdir(project)
    monkeypatch.delenv("PI_CODING_AGENT_DIR", raising=False)
    before = run_cli(["--agent-dir", str(agent_dir), "list", "--all", "--json"], capsys)
    after = run_cli(["list", "--all", "--json", "--agent-dir", str(agent_dir)], capsys)
    assert before.code == after.code == 0 and before.out == after.out
    assert [item["id"] for item in json.loads(after.out)] == ["ab12000000000001"]
    missing = run_cli(["list", "--agent-dir", str(tmp_path / "nowhere")], capsys)
    assert missing.code == 2 and "does not exist" in missing.err  # named on the command line: a usage error


def test_building_the_parser_of_one_command_imports_no_other_command_module() -> None:
    others = sorted({f"sessdex.catalog.cli.{module}" for module, _ in COMMANDS.values()} -
                    {"sessdex.catalog.cli.session_group"})
    probe = ("import sys\n"
             "from sessdex.catalog.cli.commands import parse_command_line\n"
             "parse_command_line(['list', '--json'])\n"
             f"print(sorted(set({others!r}) & set(sys.modules)))\n")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=True)
    assert done.stdout.strip() == "[]"
