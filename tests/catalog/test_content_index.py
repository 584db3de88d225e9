"""The two-phase first index: listings first, the message-text index after; complete, it equals an inline index."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

import pytest
from gen_corpus import generate_corpus

from sessdex.catalog.index.content_index import content_backlog, fill_content_index
from sessdex.catalog.index.indexer import Indexer
from sessdex.catalog.index.reconcile import Scope, reconcile
from sessdex.catalog.store import fts
from sessdex.catalog.store.db import open_catalog
from sessdex.catalog.store.location import resolve_location
from tests.catalog.catalog_support import append_bytes, assistant, jsonl
from tests.cli_support import run_cli


@pytest.fixture
def agent(tmp_path: Path) -> Path:
    agent_dir = tmp_path / "agent"
    generate_corpus(agent_dir, sessions=40, projects=3, total_bytes=400_000, seed=11, home=tmp_path / "home")
    return agent_dir


def _session_files(agent: Path) -> list[str]:
    return sorted(str(path) for path in (agent / "sessions").rglob("*.jsonl"))


def _open(path: Path):
    return open_catalog(resolve_location(path.parent, str(path)))


def content_index(catalog_file: Path) -> tuple[set[tuple[str, int, str, int]], set[tuple[str, int, str]]]:
    """What message_fts holds, by (path, seq, term, offset), and the message rows, by (path, seq, text).

    Keyed by path and position rather than row id, so catalogs that numbered their rows differently compare.
    """
    connection = sqlite3.connect(catalog_file)
    try:
        connection.execute("CREATE VIRTUAL TABLE temp.instances USING fts5vocab(main, 'message_fts', 'instance')")
        entries = set(connection.execute(
            "SELECT f.path, m.seq, i.term, i.offset FROM temp.instances i JOIN messages m ON m.id = i.doc "
            "JOIN session_files f ON f.id = m.file_id"))
        orphans = connection.execute("SELECT count(*) FROM temp.instances i LEFT JOIN messages m ON m.id = i.doc "
                                     "WHERE m.id IS NULL").fetchone()[0]
        assert orphans == 0
        rows = set(connection.execute(
            "SELECT f.path, m.seq, m.text FROM messages m JOIN session_files f ON f.id = m.file_id"))
        for table in fts.FTS_TABLES:
            connection.execute(fts.integrity_check(table))  # raises when an index drifted from its rows
    finally:
        connection.close()
    return entries, rows


def inline_index(agent: Path, catalog_file: Path) -> None:
    """Index every file of `agent` into a new catalog with message_fts written along (the reference)."""
    db = _open(catalog_file)
    try:
        Indexer(db).index_paths(_session_files(agent))
        assert content_backlog(db) is None
    finally:
        db.close()


def test_a_first_index_by_a_read_command_leaves_the_text_index_and_filling_it_equals_an_inline_index(
        agent: Path, tmp_path: Path) -> None:
    deferred_file = tmp_path / "deferred.db"
    db = _open(deferred_file)
    try:
        reconcile(db, Scope.of(root=agent / "sessions"))  # what a read command runs on an empty catalog
        indexed, total = content_backlog(db)
        assert indexed == 0 and total == db.scalar("count_messages") > 0
        assert db.sqlite_reader().execute("SELECT count(*) FROM message_fts WHERE message_fts MATCH 'the'").fetchone()[0] \
            == 0
        assert db.scalar("count_files") == len(_session_files(agent))  # listings are complete already
        seen: list[tuple[int, int]] = []
        assert fill_content_index(db, chunk_rows=97, progress=lambda done, of: seen.append((done, of)))
        assert content_backlog(db) is None
        assert seen[-1] == (total, total) and len(seen) == -(-total // 97)
    finally:
        db.close()
    reference_file = tmp_path / "inline.db"
    inline_index(agent, reference_file)
    assert content_index(deferred_file) == content_index(reference_file)


def test_changes_while_the_text_index_is_unfinished_leave_it_equal_to_a_full_rebuild(agent: Path,
                                                                                     tmp_path: Path) -> None:
    deferred_file = tmp_path / "deferred.db"
    db = _open(deferred_file)
    files = _session_files(agent)
    try:
        reconcile(db, Scope.of(root=agent / "sessions"))
        fill_content_index(db, chunk_rows=50, deadline=0)  # one chunk only: most rows are still waiting
        assert content_backlog(db)[0] == 50
        appended, rewritten, deleted, last = files[3], files[10], files[20], files[-1]
        append_bytes(Path(appended), jsonl([assistant("a zeppelin landed on the roof", "z0000001")]))
        Path(rewritten).write_bytes(Path(files[0]).read_bytes())
        os.unlink(deleted)
        os.unlink(last)  # the backlog's last rows go: their ids must not be handed out again
        Indexer(db).index_paths([appended, rewritten, deleted, last])
        assert content_backlog(db) is not None
        assert fill_content_index(db)
    finally:
        db.close()
    reference_file = tmp_path / "inline.db"
    inline_index(agent, reference_file)
    entries, rows = content_index(deferred_file)
    assert (entries, rows) == content_index(reference_file)
    assert any(term == "zeppelin" for _path, _seq, term, _offset in entries)


def test_search_completes_a_small_backlog_and_reports_an_unfinished_one(agent: Path, tmp_path: Path,
                                                                       monkeypatch, capsys) -> None:
    catalog_file = tmp_path / "catalog.db"
    base = ["--agent-dir", str(agent), "--catalog", str(catalog_file)]
    monkeypatch.chdir(tmp_path)
    assert run_cli([*base, "list", "--all"], capsys).code == 0  # the first index, by a read command
    db = _open(catalog_file)
    try:
        assert content_backlog(db)[0] == 0
    finally:
        db.close()
    import sessdex.catalog.index.content_index as content_module
    import sessdex.catalog.queries.sessions as sessions_module

    monkeypatch.setattr(sessions_module, "SEARCH_FILL_SECONDS", 0.0)
    monkeypatch.setattr(content_module, "CHUNK_ROWS", 10)
    unfinished = run_cli([*base, "search", "--all", "the"], capsys)
    assert unfinished.code == 0 and "message-text index is " in unfinished.err and "% built" in unfinished.err
    monkeypatch.setattr(sessions_module, "SEARCH_FILL_SECONDS", 60.0)
    finished = run_cli([*base, "search", "--all", "the"], capsys)
    assert finished.code == 0 and "message-text index" not in finished.err
    assert "message: " in finished.out  # message text is searched once it is indexed


def test_index_completes_the_backlog(agent: Path, tmp_path: Path, monkeypatch, capsys) -> None:
    catalog_file = tmp_path / "catalog.db"
    base = ["--agent-dir", str(agent), "--catalog", str(catalog_file)]
    monkeypatch.chdir(tmp_path)
    assert run_cli([*base, "recent"], capsys).code == 0
    assert run_cli([*base, "index"], capsys).code == 0
    db = _open(catalog_file)
    try:
        assert content_backlog(db) is None
    finally:
        db.close()
    reference_file = tmp_path / "inline.db"
    inline_index(agent, reference_file)
    assert content_index(catalog_file) == content_index(reference_file)
