"""Output that fits: tables within the terminal width, tab-separated when piped, `--json FIELDS`, `-n` / `--all`,
and ids printed as wide as `resume` needs them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import sessdex.core.breadcrumbs as breadcrumbs
from sessdex.catalog.cli.output import Column, render_table
from sessdex.catalog.tui.width import display_width
from tests.cli_support import Outcome, run_cli
from tests.core.sessiontree import BASE_MS, Tree, assistant, header, make_tree, user


@pytest.fixture
def tree(tmp_path: Path, monkeypatch) -> Tree:
    tree = make_tree(tmp_path)
    monkeypatch.setenv("HOME", str(tree.home))
    monkeypatch.setenv("TMPDIR", str(tree.root / "tmp"))
    monkeypatch.delenv("PI_CODING_AGENT_DIR", raising=False)
    monkeypatch.delenv("COLUMNS", raising=False)
    monkeypatch.setattr(breadcrumbs, "current_tty_path", lambda: None)
    return tree


@pytest.fixture
def sessdex(tree: Tree, monkeypatch, capsys):
    def run(cwd: Path, *args: str) -> Outcome:
        monkeypatch.chdir(cwd)
        return run_cli(["--agent-dir", str(tree.paths.agent_dir), *args], capsys)
    return run


def populate(tree: Tree) -> None:
    """proj: two sessions; other: one whose id shares 15 characters with one of proj's."""
    proj, other = tree.project("proj"), tree.project("other")
    tree.session(proj, "ab12000000000001", [user("fix the parser " * 8), assistant("done")], mtime_ms=BASE_MS)
    tree.session(proj, "cd34000000000002", [user("second task"), assistant("ok")],
                 head=header("cd34000000000002", proj, title="Named session"), mtime_ms=BASE_MS + 60_000)
    tree.session(other, "ab12000000000009", [user("elsewhere work"), assistant("fine")], mtime_ms=BASE_MS + 30_000)


def test_piped_tables_are_tab_separated_without_header_or_padding_unless_table(tree: Tree, sessdex) -> None:
    populate(tree)
    piped = sessdex(tree.home / "proj", "list")
    lines = piped.out.splitlines()
    assert len(lines) == 2 and all(line.count("\t") == 6 and "  " not in line for line in lines)
    assert lines[0].split("\t")[5] == "Named session" and lines[0].split("\t")[6] == "~/proj"
    table = sessdex(tree.home / "proj", "list", "--table").out.splitlines()
    assert table[0].split() == ["ID", "MODIFIED", "MSGS", "COST", "TOKENS", "NAME"] and "\t" not in "".join(table)


@pytest.mark.parametrize("columns", [50, 60, 80])
def test_tables_fit_the_width_dropping_columns_by_priority(tree: Tree, sessdex, monkeypatch, columns: int) -> None:
    populate(tree)
    monkeypatch.setenv("COLUMNS", str(columns))
    for args in (("list",), ("list", "--all"), ("recent", "--all"), ("search", "--all", "task")):
        out = sessdex(tree.home / "proj", *args).out.splitlines()
        assert out and all(display_width(line) <= columns for line in out), (args, out)
        assert out[0].split()[0] == "ID" and "NAME" in out[0].split()
    listed = sessdex(tree.home / "proj", "list", "--all").out.splitlines()
    headers = listed[0].split()
    if columns == 50:
        assert "TOKENS" not in headers and "MSGS" not in headers  # the least needed go first
    assert "Named session" in "\n".join(listed)  # the name keeps room to be read


def test_render_table_never_wraps_a_row_even_with_no_column_left_to_drop() -> None:
    lines = render_table([Column("ID"), Column("WIDE"), Column("EXTRA", drop=1)],
                         [["abcdef", "x" * 40, "dropped"]], 20).splitlines()
    assert all(display_width(line) <= 20 for line in lines) and "EXTRA" not in lines[0]


def test_json_fields_select_and_unknown_fields_are_one_usage_line(tree: Tree, sessdex) -> None:
    populate(tree)
    rows = json.loads(sessdex(tree.home / "proj", "list", "--json", "id,name").out)
    assert rows == [{"id": "cd34000000000002", "name": "Named session"},
                    {"id": "ab12000000000001", "name": "fix the parser fix the parser fix the parser fix the parser "
                                                        "fix the parser fix the parser fix the parser fix the parser"}
                    ] or [list(row) for row in rows] == [["id", "name"]] * 2
    everything = json.loads(sessdex(tree.home / "proj", "list", "--json").out)
    assert "cwd" in everything[0] and "messageCount" in everything[0]
    bad = sessdex(tree.home / "proj", "list", "--json", "idd")
    assert bad.code == 2 and bad.out == "" and len(bad.err.splitlines()) == 1
    assert "unknown JSON field 'idd'" in bad.err and "messageCount" in bad.err
    # A word after --json of a command that takes words is still its word; a field list is a field list.
    hits = json.loads(sessdex(tree.home / "proj", "search", "--json", "task").out)
    assert [hit["id"] for hit in hits] == ["cd34000000000002"] and "snippet" in hits[0]
    hits = json.loads(sessdex(tree.home / "proj", "search", "--json", "id,field", "task").out)
    assert hits == [{"id": "cd34000000000002", "field": "first_message"}]
    resumed = json.loads(sessdex(tree.home / "proj", "resume", "--json", "id,action", "cd34").out)
    assert resumed == {"id": "cd34000000000002", "action": "open"}


def test_list_takes_n_and_recent_takes_all(tree: Tree, sessdex) -> None:
    populate(tree)
    assert len(sessdex(tree.home / "proj", "list", "-n", "1").out.splitlines()) == 1
    ids = [row["id"] for row in json.loads(sessdex(tree.home / "proj", "recent", "--all", "--json").out)]
    assert ids == ["cd34000000000002", "ab12000000000009", "ab12000000000001"]
    assert len(json.loads(sessdex(tree.home / "proj", "recent", "--all", "-n", "2", "--json").out)) == 2


def test_ids_are_printed_as_wide_as_resume_needs_among_every_project(tree: Tree, sessdex) -> None:
    populate(tree)
    for args in (("list",), ("search", "parser"), ("list", "--all")):
        first_cells = {line.split("\t")[0] for line in sessdex(tree.home / "proj", *args).out.splitlines()}
        # ab12000000000001 here and ab12000000000009 elsewhere share 15 characters: the whole id is shown.
        assert "ab12000000000001" in first_cells, (args, first_cells)
    printed = sessdex(tree.home / "other", "list").out.split("\t")[0]
    assert sessdex(tree.home / "other", "resume", printed).code == 0


def test_context_and_entries_take_an_id_prefix_as_well_as_a_file(tree: Tree, sessdex) -> None:
    populate(tree)
    by_path = sessdex(tree.home / "proj", "entries", str(next((tree.paths.sessions_root).rglob("*cd34*.jsonl"))))
    by_id = sessdex(tree.home / "proj", "entries", "cd34")
    assert by_id.code == 0 and by_id.out == by_path.out and by_id.out
    context = sessdex(tree.home / "proj", "context", "cd34", "--json")
    assert context.code == 0 and json.loads(context.out)["messages"]
    missing = sessdex(tree.home / "proj", "context", "ffff")
    assert missing.code == 1 and len(missing.err.splitlines()) == 1 and "Traceback" not in missing.err
