"""One CLI contract, through the real `sessdex` executable: the same session object in
every listing command's --json, error objects on refusal, one table style, colour only on a terminal, and read
commands that create nothing."""

from __future__ import annotations

import json
import os
import pty
import re
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from sessdex.catalog.cli.output import unique_prefix_lengths
from sessdex.catalog.tui.width import display_width
from tests.core.sessiontree import BASE_MS, Tree, assistant, header, make_tree, user

SESSDEX = Path(__file__).resolve().parents[2] / ".venv" / "bin" / "sessdex"
ISO_UTC = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z\Z")
CONTRACT = {"id": str, "path": str, "cwd": str, "title": (str, type(None)), "name": str, "created": str,
            "modified": str, "messageCount": int, "firstMessage": str}
READ_COMMANDS = [["list"], ["list", "--all"], ["recent"], ["resume", "ab12"], ["continue"], ["search", "parser"],
                 ["history", "recent"], ["history", "search", "parser"], ["view", "--print"], ["list", "--json"]]


@dataclass
class Run:
    code: int
    out: str
    err: str


@pytest.fixture
def tree(tmp_path: Path) -> Tree:
    return make_tree(tmp_path)


@pytest.fixture
def sessdex(tree: Tree) -> Callable[..., Run]:
    def run(cwd: Path, *args: str, env: dict[str, str] | None = None, agent_dir: bool = True) -> Run:
        environment = {key: value for key, value in os.environ.items()
                       if key not in ("PI_CODING_AGENT_DIR", "SESSDEX_CATALOG", "COLUMNS", "NO_COLOR", "TMUX_PANE")}
        environment["HOME"] = str(tree.home)
        if agent_dir:
            environment["PI_CODING_AGENT_DIR"] = str(tree.paths.agent_dir)
        environment.update(env or {})
        done = subprocess.run([str(SESSDEX), *args], cwd=cwd, env=environment, capture_output=True, text=True,
                              timeout=60, stdin=subprocess.DEVNULL)
        return Run(done.returncode, done.stdout, done.stderr)
    return run


def populate(tree: Tree) -> None:
    proj, other = tree.project("proj"), tree.project("other")
    tree.session(proj, "ab12000000000001", [user("fix the parser"), assistant("done")], mtime_ms=BASE_MS)
    tree.session(proj, "ab34000000000002", [user("parser again"), assistant("ok")],
                 head=header("ab34000000000002", proj, title="Named\tparser session"), mtime_ms=BASE_MS + 60_000)
    tree.session(other, "cd78000000000004", [user("parser elsewhere"), assistant("fine")], mtime_ms=BASE_MS + 1)


# -- reading creates nothing --------------------------------------------------------------------------------

@pytest.mark.parametrize("args", READ_COMMANDS, ids=" ".join)
def test_read_commands_on_a_fresh_home_say_so_and_create_nothing(tree: Tree, sessdex, args: list[str]) -> None:
    result = sessdex(tree.home, *args, agent_dir=False)
    assert result.code == 1 and result.err.count("\n") == 1 and "does not exist" in result.err, result
    assert result.out == ("" if "--json" not in args else result.out)
    assert list(tree.home.iterdir()) == []
    if "--json" in args:
        assert json.loads(result.out) == {"error": result.err.strip().removeprefix("sessdex: "), "candidates": []}


@pytest.mark.parametrize("args", [["list"], ["search", "x"], ["history", "recent"], ["resume", "ab"]], ids=" ".join)
def test_a_named_agent_dir_that_does_not_exist_is_a_usage_error(tree: Tree, sessdex, args: list[str]) -> None:
    result = sessdex(tree.home, "--agent-dir", "./typo", *args, agent_dir=False)
    assert (result.code, result.out) == (2, "") and "typo does not exist" in result.err
    assert list(tree.home.iterdir()) == []


def test_history_without_a_database_creates_none(tree: Tree, sessdex) -> None:
    tree.paths.agent_dir.mkdir(parents=True)
    for args in (["history", "recent"], ["history", "search", "x"]):
        result = sessdex(tree.home, *args)
        assert result.code == 1 and "no prompt history yet" in result.err
    assert list(tree.paths.agent_dir.iterdir()) == []


# -- one JSON object per session ------------------------------------------------------------------------------

def test_every_listing_prints_the_same_session_object(tree: Tree, sessdex) -> None:
    populate(tree)
    proj = tree.home / "proj"
    listed = json.loads(sessdex(proj, "list", "--all", "--json").out)
    by_id = {row["id"]: row for row in listed}
    for row in listed:
        assert set(CONTRACT) <= set(row) and all(isinstance(row[k], t) for k, t in CONTRACT.items()), row
        assert ISO_UTC.match(row["created"]) and ISO_UTC.match(row["modified"])
    assert by_id["ab34000000000002"]["name"] == "Named parser session"  # one display-name rule
    assert by_id["ab12000000000001"]["name"] == "fix the parser"
    answers = {
        "recent": json.loads(sessdex(proj, "recent", "--json").out),
        "search": json.loads(sessdex(proj, "search", "--all", "parser", "--json").out),
        "resume": [json.loads(sessdex(proj, "resume", "ab12", "--json").out)],
        "continue": [json.loads(sessdex(proj, "continue", "--json").out)],
    }
    for command, rows in answers.items():
        assert rows, command
        for row in rows:
            assert {key: row[key] for key in CONTRACT} == {key: by_id[row["id"]][key] for key in CONTRACT}, command
    assert answers["resume"][0]["action"] == "open" and answers["search"][0]["field"]
    # the file scan answers `recent` with the same objects as the catalog
    assert json.loads(sessdex(proj, "--catalog", "off", "recent", "--json").out) == answers["recent"]


def test_a_refusal_in_json_is_an_error_object(tree: Tree, sessdex) -> None:
    populate(tree)
    ambiguous = sessdex(tree.home / "proj", "resume", "ab", "--json")
    assert ambiguous.code == 1 and "ambiguous" in ambiguous.err
    answer = json.loads(ambiguous.out)
    assert "ambiguous" in answer["error"]
    assert sorted(row["id"] for row in answer["candidates"]) == ["ab12000000000001", "ab34000000000002"]
    assert set(CONTRACT) <= set(answer["candidates"][0])
    missing = sessdex(tree.home / "proj", "resume", "ffff", "--json")
    assert missing.code == 1 and json.loads(missing.out) == {"error": 'Session "ffff" not found.', "candidates": []}
    refused = sessdex(tree.home / "proj", "resume", "cd78", "--no-fork", "--json")
    answer = json.loads(refused.out)
    assert refused.code == 1 and "another project" in answer["error"]
    assert [row["id"] for row in answer["candidates"]] == ["cd78000000000004"]


def test_resume_own_dir_and_shell_give_the_directory_to_run_in(tree: Tree, sessdex) -> None:
    populate(tree)
    proj = tree.home / "proj"
    own = sessdex(proj, "resume", "cd78", "--own-dir", "--shell")
    session = tree.paths.project_session_dir(tree.home / "other") / "2025-01-01T00-00-00-000Z_cd78000000000004.jsonl"
    assert (own.code, own.out) == (0, f"{tree.home / 'other'}\n{session}\n")
    as_json = json.loads(sessdex(proj, "resume", "cd78", "--own-dir", "--json").out)
    assert (as_json["action"], as_json["cwd"], as_json["path"]) == ("open", str(tree.home / "other"), str(session))
    assert sessdex(proj, "resume", "cd78", "--json", "--shell").code == 2


# -- tables -----------------------------------------------------------------------------------------------

def test_narrow_tables_keep_paths_apart_and_search_follows_list(tree: Tree, sessdex) -> None:
    for number, parent in enumerate(("code", "work")):
        folder = tree.project(f"{parent}/clients/acme/typescript-7")
        tree.session(folder, f"ee{number}0000000000001", [user("parser work 👨‍👩‍👧 family"), assistant("ok")],
                     mtime_ms=BASE_MS + number)
    listing = sessdex(tree.home, "list", "--all", env={"COLUMNS": "60"})
    lines = listing.out.splitlines()
    assert all(display_width(line) <= 60 for line in lines), listing.out
    cwds = [line.split("  ")[-1] for line in lines[1:]]
    assert len(set(cwds)) == 2 and all("…" in cwd and cwd.endswith("-7") for cwd in cwds), cwds
    searched = sessdex(tree.home, "search", "--all", "parser", env={"COLUMNS": "60"})
    rows = searched.out.splitlines()
    assert all(display_width(line) <= 60 for line in rows), searched.out
    assert rows[0].split() == lines[0].split()
    assert sorted(row.split()[0] for row in rows[1::2]) == sorted(line.split()[0] for line in lines[1:])


def test_widths_count_grapheme_clusters() -> None:
    assert display_width("👨‍👩‍👧") == 2 and display_width("日本") == 4 and display_width("e\u0301") == 1
    assert unique_prefix_lengths(["ab12", "ab34", "cd78"]) == [3, 3, 1]


def test_a_texts_width_is_the_sum_of_its_clusters_widths() -> None:
    """display_width's translation of whole texts (wide characters doubled, zero-width ones dropped, grapheme
    machinery sent the long way) measures what the terminal draws: each cluster measured on its own."""
    import random

    from sessdex.catalog.tui.width import _cluster_width, graphemes

    pieces = ["a", "Z", " ", "é", "ß", "Ł", "ά", "й", "ע", "ب", "द", "ि", "्", "—", "…", "→", "✅", "日", "語", "テ", "국",
              "😀", "🚀", "\u0301", "\u200b", "\u200d", "\ufe0f", "🇫", "🇷", "👩", "\U0001f3fd", "\x00", "\ue000"]
    rng = random.Random(5)
    for _ in range(3000):
        text = "".join(rng.choice(pieces) for _ in range(rng.randint(1, 12)))
        assert display_width(text) == sum(_cluster_width(cluster) for cluster in graphemes(text)), ascii(text)


def test_the_latin_characters_measured_without_unicodedata_are_one_column_wide() -> None:
    import unicodedata

    from sessdex.catalog.tui.width import _plain_width

    for code in range(0x80, 0x300):
        char = chr(code)
        assert unicodedata.combining(char) == 0 and unicodedata.east_asian_width(char) not in ("W", "F"), hex(code)
        assert _plain_width(char) == 1


def _on_a_terminal(tree: Tree, args: list[str], env: dict[str, str]) -> str:
    main, secondary = pty.openpty()
    environment = {**os.environ, "HOME": str(tree.home), "PI_CODING_AGENT_DIR": str(tree.paths.agent_dir),
                   "COLUMNS": "200", **env}
    environment.pop("NO_COLOR", None) if "NO_COLOR" not in env else None
    process = subprocess.Popen([str(SESSDEX), *args], cwd=tree.home / "proj", env=environment, stdout=secondary,
                               stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL)
    os.close(secondary)
    chunks = []
    while True:
        try:
            chunk = os.read(main, 4096)
        except OSError:
            break
        if not chunk:
            break
        chunks.append(chunk)
    process.wait(timeout=30)
    os.close(main)
    return b"".join(chunks).decode()


def test_colour_only_on_a_terminal_without_no_color(tree: Tree, sessdex) -> None:
    populate(tree)
    coloured = _on_a_terminal(tree, ["list"], {})
    assert "\x1b[1;36mab1\x1b[0m2" in coloured and "\x1b[1;36mab3\x1b[0m4" in coloured  # the part resume needs
    assert "\x1b" not in _on_a_terminal(tree, ["list"], {"NO_COLOR": "1"})
    assert "\x1b" not in sessdex(tree.home / "proj", "list").out  # not a terminal


def test_one_exit_status_table_in_help_and_readme(tree: Tree, sessdex) -> None:
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    rows = dict(re.findall(r"^\| (\d+) \| (.+) \|$", readme, re.MULTILINE))
    assert list(rows) == ["0", "1", "2", "130"]
    helped = sessdex(tree.home, "--help").out
    table = helped[helped.index("Exit status:"):]
    statuses = re.findall(r"^\s+(\d+)\s+(\S.*)$", table, re.MULTILINE)
    assert [status for status, _ in statuses] == list(rows)
    for status, meaning in statuses:  # the same first words in both
        assert rows[status].split()[0].strip(",:") == meaning.split()[0].strip(",:"), status


@pytest.mark.parametrize("width", [10, 14, 18, 22, 26, 30, 60])
def test_short_paths_stay_distinct_even_when_they_differ_in_the_middle(width: int) -> None:
    from sessdex.catalog.cli.output import distinct_short_paths

    paths = ["~/code/alpha/clients/acme/typescript-7", "~/code/beta/clients/acme/typescript-7",
             "~/code/x/typescript-6", "~/work/alpha/clients/acme/typescript-7"]
    shown = distinct_short_paths(paths, width)
    assert len(set(shown)) == len(paths) and all(display_width(text) <= width for text in shown), shown
    if width == 30:
        assert shown[:2] == ["~/code/alpha/…/typescript-7", "~/code/beta/…/typescript-7"]
