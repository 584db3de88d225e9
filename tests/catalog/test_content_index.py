"""The two-phase first index: listings first, message text and usage after; complete, it equals a full index."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from gen_corpus import generate_corpus

from sessdex.catalog.index.content_index import content_backlog, fill_content_index
from sessdex.catalog.index.indexer import Indexer
from sessdex.catalog.index.reconcile import Scope, reconcile
from sessdex.catalog.queries.sessions import Catalog
from sessdex.catalog.store import fts
from sessdex.catalog.store.db import open_catalog
from sessdex.catalog.store.location import resolve_location
from sessdex.core.paths import AgentPaths
from tests.catalog.catalog_support import append_bytes, assistant, jsonl
from tests.catalog.test_bulk_writer import snapshot
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

def whole_catalog(database_path: Path) -> dict[str, Any]:
    """Every row of every table of a SQLite catalog, in rowid order (FTS5 shadow tables included)."""
    connection = sqlite3.connect(database_path)
    try:
        tables = [row[0] for row in connection.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name")]
        whole = {}
        for table in tables:
            if table in ("message_fts", "session_fts"):
                continue  # virtual tables: their content is the shadow tables'
            try:
                whole[table] = connection.execute(f"SELECT * FROM {table} ORDER BY rowid").fetchall()
            except sqlite3.OperationalError:  # WITHOUT ROWID: read in primary key order
                whole[table] = connection.execute(f"SELECT * FROM {table}").fetchall()
        if "catalog_meta" in whole:
            whole["catalog_meta"] = sorted(whole["catalog_meta"])
        return whole
    finally:
        connection.close()



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


def usage_by_path(catalog_file: Path) -> tuple[list[tuple], list[tuple]]:
    """The usage facts by (path, position) and the rollup rows by path (row ids left out, as in content_index)."""
    connection = sqlite3.connect(catalog_file)
    try:
        facts = sorted(connection.execute(
            "SELECT f.path, u.pending, u.copied, u.entry_id, u.entry_timestamp, u.ts_ms, u.day_utc, u.day_local, "
            "u.provider, u.model, u.input_tokens, u.output_tokens, u.cost_nanos FROM usage_facts u "
            "JOIN session_files f ON f.id = u.file_id"))
        rollup = sorted(tuple("" if value is None else value for value in row) for row in connection.execute(
            "SELECT f.path, r.* FROM usage_rollup r JOIN session_files f ON f.id = r.file_id"))
    finally:
        connection.close()
    return facts, [row[:1] + row[3:] for row in rollup]  # without the rollup's own id and file id


def inline_index(agent: Path, catalog_file: Path, **options) -> None:
    """Index every file of `agent` into a new catalog with its content written along (the reference)."""
    db = _open(catalog_file)
    try:
        Indexer(db, **options).index_paths(_session_files(agent))
        assert content_backlog(db) is None
    finally:
        db.close()


def test_a_first_index_by_a_read_command_writes_listings_first_and_filling_equals_a_full_index(
        agent: Path, tmp_path: Path) -> None:
    deferred_file = tmp_path / "deferred.db"
    db = _open(deferred_file)
    try:
        reconcile(db, Scope.of(root=agent / "sessions"))  # what a read command runs on an empty catalog
        progress = content_backlog(db)
        files = len(_session_files(agent))
        assert (progress.done, progress.total, progress.unit, progress.percent) == (0, files, "sessions", 0)
        assert db.scalar("count_files") == files  # listings are complete already
        assert db.scalar("count_messages") == 0
        assert db.sqlite_reader().execute("SELECT count(*) FROM usage_facts").fetchone()[0] == 0
        seen: list[tuple[int, int, str]] = []
        assert fill_content_index(db, chunk_bytes=20_000,
                                  progress=lambda done: seen.append((done.done, done.total, done.unit)))
        assert content_backlog(db) is None
        assert seen[-1] == (files, files, "sessions") and len(seen) > 5
    finally:
        db.close()
    reference_file = tmp_path / "inline.db"
    inline_index(agent, reference_file)
    assert content_index(deferred_file) == content_index(reference_file)
    assert usage_by_path(deferred_file) == usage_by_path(reference_file)


@pytest.mark.parametrize("chunk_bytes", [50_000, 1 << 30])  # chunks ended by size, or by FILL_ROWS files
def test_a_listing_first_index_and_its_fill_write_exactly_the_catalog_of_a_full_index(agent: Path, tmp_path: Path,
                                                                                      monkeypatch, chunk_bytes) -> None:
    import sessdex.catalog.index.indexer as indexer_module

    monkeypatch.setattr(indexer_module, "FILL_ROWS", 7)
    deferred_file = tmp_path / "deferred.db"
    db = _open(deferred_file)
    try:
        Indexer(db, clock=lambda: 1_750_000_000.0, defer_content=True).index_paths(
            _session_files(agent))
        chunks: list[int] = []
        assert fill_content_index(db, chunk_bytes=chunk_bytes, progress=lambda done: chunks.append(done.done))
        assert len(chunks) >= len(_session_files(agent)) // 7
    finally:
        db.close()
    reference_file = tmp_path / "inline.db"
    inline_index(agent, reference_file, clock=lambda: 1_750_000_000.0)
    deferred, reference = whole_catalog(deferred_file), whole_catalog(reference_file)
    # message_fts holds the same entries (snapshot) but was built in other steps: its b-tree pages differ.
    for catalog in (deferred, reference):
        for table in [name for name in catalog if name.startswith("message_fts_")]:
            del catalog[table]
    assert deferred == reference
    assert snapshot(deferred_file) == snapshot(reference_file)


def test_changes_while_the_content_is_unfinished_leave_it_equal_to_a_full_rebuild(agent: Path,
                                                                                  tmp_path: Path) -> None:
    deferred_file = tmp_path / "deferred.db"
    db = _open(deferred_file)
    files = _session_files(agent)
    try:
        reconcile(db, Scope.of(root=agent / "sessions"))
        fill_content_index(db, chunk_bytes=1, deadline=0)  # one file only: the others are still waiting
        assert content_backlog(db).done == 1
        appended, rewritten, deleted, last, grown = files[3], files[10], files[20], files[-1], files[25]
        append_bytes(Path(appended), jsonl([assistant("a zeppelin landed on the roof", "z0000001")]))
        Path(rewritten).write_bytes(Path(files[0]).read_bytes())
        os.unlink(deleted)
        os.unlink(last)
        Indexer(db).index_paths([appended, rewritten, deleted, last])  # the ordinary way, as the watcher does
        # Changed and not indexed again yet: the fill reads it whole, as it is now.
        append_bytes(Path(grown), jsonl([assistant("a blimp over the harbour", "b0000001")]))
        assert content_backlog(db) is not None
        assert fill_content_index(db)
    finally:
        db.close()
    reference_file = tmp_path / "inline.db"
    inline_index(agent, reference_file)
    entries, rows = content_index(deferred_file)
    assert (entries, rows) == content_index(reference_file)
    assert usage_by_path(deferred_file) == usage_by_path(reference_file)
    assert {"zeppelin", "blimp"} <= {term for _path, _seq, term, _offset in entries}


def test_an_earlier_versions_message_text_backlog_is_completed(agent: Path, tmp_path: Path) -> None:
    catalog_file = tmp_path / "catalog.db"
    inline_index(agent, catalog_file)
    db = _open(catalog_file)
    try:
        connection = db.writer_connection()
        with db.write():  # as a first index of an earlier version left it: message rows without their entries
            total = db.scalar("count_messages")
            connection.execute("INSERT INTO message_fts(message_fts) VALUES ('delete-all')")
            fts.write_backlog(connection, 1, 0, total)
        progress = content_backlog(db)
        assert (progress.done, progress.total, progress.unit) == (0, total, "messages")
        seen: list[int] = []
        assert fill_content_index(db, chunk_rows=97, progress=lambda done: seen.append(done.done))
        assert content_backlog(db) is None and seen[-1] == total and len(seen) == -(-total // 97)
    finally:
        db.close()
    reference_file = tmp_path / "inline.db"
    inline_index(agent, reference_file)
    assert content_index(catalog_file) == content_index(reference_file)


def test_search_completes_a_small_backlog_and_reports_an_unfinished_one(agent: Path, tmp_path: Path,
                                                                       monkeypatch, capsys) -> None:
    catalog_file = tmp_path / "catalog.db"
    base = ["--agent-dir", str(agent), "--catalog", str(catalog_file)]
    monkeypatch.chdir(tmp_path)
    assert run_cli([*base, "list", "--all"], capsys).code == 0  # the first index, by a read command
    db = _open(catalog_file)
    try:
        assert content_backlog(db).done == 0
    finally:
        db.close()
    import sessdex.catalog.index.content_index as content_module
    import sessdex.catalog.queries.sessions as sessions_module

    monkeypatch.setattr(sessions_module, "SEARCH_FILL_SECONDS", 0.0)
    monkeypatch.setattr(content_module, "CHUNK_ROWS", 10)
    monkeypatch.setattr(content_module, "CHUNK_BYTES", 1)
    unfinished = run_cli([*base, "search", "--all", "the"], capsys)
    assert unfinished.code == 0 and "message-text index is " in unfinished.err and "% built" in unfinished.err
    assert "(1 of 40 sessions)" in unfinished.err
    monkeypatch.setattr(sessions_module, "SEARCH_FILL_SECONDS", 60.0)
    finished = run_cli([*base, "search", "--all", "the"], capsys)
    assert finished.code == 0 and "message-text index" not in finished.err
    assert "\tmessage\t" in finished.out  # message text is searched once it is indexed


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


def test_before_the_content_is_read_a_sessions_text_comes_from_its_file_and_a_change_is_read_whole(
        agent: Path, tmp_path: Path) -> None:
    paths = AgentPaths(agent_dir=agent, home=tmp_path / "home", tmp_dir=tmp_path)
    catalog_file = tmp_path / "catalog.db"
    location = resolve_location(agent, str(catalog_file))
    with Catalog(paths, location) as catalog:
        early = {str(info.path): info.all_messages_text for info in catalog.list_all_sessions()}
    appended = next(path for path in _session_files(agent) if early.get(path))
    db = _open(catalog_file)
    try:
        assert content_backlog(db) is not None and db.scalar("count_messages") == 0
        append_bytes(Path(appended), jsonl([assistant("a zeppelin landed on the roof", "z0000001")]))
        Indexer(db).index_paths([appended])  # the ordinary way, as the watcher does: the whole file, not the append
        file_id = db.fetchall("file_by_path", {"path": appended})[0]["id"]
        seqs = [row[0] for row in db.sqlite_reader().execute("SELECT seq FROM messages WHERE file_id = ? ORDER BY seq",
                                                             (file_id,))]
        assert seqs == list(range(len(seqs))) and len(seqs) > 1
    finally:
        db.close()
    with Catalog(paths, location) as catalog:
        middle = {str(info.path): info.all_messages_text for info in catalog.list_all_sessions()}
        assert fill_content_index(catalog._database())
        late = {str(info.path): info.all_messages_text for info in catalog.list_all_sessions()}
    assert middle == late and any(late.values())
    assert {path: text for path, text in early.items() if path != appended} == \
        {path: text for path, text in late.items() if path != appended}
    assert late[appended] == early[appended] + " a zeppelin landed on the roof"


def test_usage_completes_a_small_backlog_and_says_how_far_an_unfinished_one_is(agent: Path, tmp_path: Path,
                                                                              monkeypatch, capsys) -> None:
    import sessdex.catalog.index.content_index as content_module
    import sessdex.catalog.queries.sessions as sessions_module

    monkeypatch.chdir(tmp_path)
    reference = ["--agent-dir", str(agent), "--catalog", str(tmp_path / "reference.db")]
    assert run_cli([*reference, "index"], capsys).code == 0
    expected = run_cli([*reference, "usage", "daily", "--all", "--json"], capsys)
    assert expected.code == 0 and expected.out.count('"cost"') > 3
    base = ["--agent-dir", str(agent), "--catalog", str(tmp_path / "catalog.db")]
    assert run_cli([*base, "list", "--all"], capsys).code == 0  # the first index, by a read command
    monkeypatch.setattr(sessions_module, "SEARCH_FILL_SECONDS", 0.0)
    monkeypatch.setattr(content_module, "CHUNK_BYTES", 1)
    unfinished = run_cli([*base, "usage", "daily", "--all", "--json"], capsys)
    assert unfinished.code == 0 and "usage figures are incomplete: 2% of the content index is built (1 of 40 " \
        "sessions)" in unfinished.err
    blocks = run_cli([*base, "usage", "blocks", "--json"], capsys)  # the billing blocks are summed from it too
    assert blocks.code == 0 and "usage figures are incomplete: " in blocks.err
    monkeypatch.setattr(sessions_module, "SEARCH_FILL_SECONDS", 60.0)
    finished = run_cli([*base, "usage", "daily", "--all", "--json"], capsys)
    assert finished.code == 0 and "incomplete" not in finished.err
    assert finished.out == expected.out


def test_content_after_no_content_is_read_in_chunks_from_the_backlog_and_equals_a_full_index(
        agent: Path, tmp_path: Path, monkeypatch, capsys) -> None:
    catalog_file = tmp_path / "catalog.db"
    base = ["--agent-dir", str(agent), "--catalog", str(catalog_file)]
    monkeypatch.chdir(tmp_path)
    assert run_cli([*base, "index", "--no-content"], capsys).code == 0
    from sessdex.catalog.index.machines import register_machine

    db = _open(catalog_file)
    try:
        assert db.scalar("count_messages") == 0
        stats_before = db.sqlite_reader().execute("SELECT id, mtime_ns, head_digest FROM session_files").fetchall()
        register_machine(db, str(agent / "sessions"), content=True)
        # The rows keep what was read (no file is read again from the start): only their content is queued.
        assert db.sqlite_reader().execute("SELECT id, mtime_ns, head_digest FROM session_files").fetchall() == stats_before
        progress = content_backlog(db)
        assert (progress.done, progress.total, progress.unit) == (0, len(stats_before), "sessions")
    finally:
        db.close()
    assert run_cli([*base, "index", "--content"], capsys).code == 0
    db = _open(catalog_file)
    try:
        assert content_backlog(db) is None
    finally:
        db.close()
    reference_file = tmp_path / "inline.db"
    inline_index(agent, reference_file)
    assert content_index(catalog_file) == content_index(reference_file)
    assert usage_by_path(catalog_file) == usage_by_path(reference_file)


def test_a_full_first_index_leaves_the_full_text_entries_for_after_and_search_answers_as_the_full_index(
        agent: Path, tmp_path: Path, monkeypatch, capsys) -> None:
    import sessdex.catalog.index.content_index as content_module
    import sessdex.catalog.index.text_fill as text_fill
    import sessdex.catalog.queries.sessions as sessions_module

    monkeypatch.chdir(tmp_path)
    reference_file = tmp_path / "reference.db"
    inline_index(agent, reference_file)
    reference = ["--agent-dir", str(agent), "--catalog", str(reference_file)]
    catalog_file = tmp_path / "catalog.db"
    base = ["--agent-dir", str(agent), "--catalog", str(catalog_file)]
    db = _open(catalog_file)
    try:
        Indexer(db, defer_text=True).index_paths(_session_files(agent))  # as `sessdex index` runs its first pass
        total = db.scalar("count_messages")
        progress = content_backlog(db)
        assert (progress.done, progress.total, progress.unit) == (0, total, "messages")
        assert content_backlog(db, text=False) is None  # message rows and usage facts are all there
        assert db.sqlite_reader().execute("SELECT count(*) FROM message_fts_idx").fetchone()[0] == 0
    finally:
        db.close()
    assert usage_by_path(catalog_file) == usage_by_path(reference_file)
    usage = run_cli([*base, "usage", "daily", "--all", "--json"], capsys)
    assert usage.code == 0 and "incomplete" not in usage.err
    assert usage.out == run_cli([*reference, "usage", "daily", "--all", "--json"], capsys).out
    db = _open(catalog_file)
    try:
        assert content_backlog(db).done == 0  # usage left the full-text entries alone
    finally:
        db.close()
    # A search in that phase finishes the full-text entries before it answers, whatever its time slice.
    monkeypatch.setattr(sessions_module, "SEARCH_FILL_SECONDS", 0.0)
    monkeypatch.setattr(content_module, "CHUNK_ROWS", 10)
    expected = run_cli([*reference, "search", "--all", "the", "--json"], capsys)
    assert expected.code == 0 and '"message"' in expected.out
    found = run_cli([*base, "search", "--all", "the", "--json"], capsys)
    assert found.code == 0 and "message-text index" not in found.err
    assert found.out == expected.out
    db = _open(catalog_file)
    try:
        assert content_backlog(db) is None
        config = dict(db.sqlite_reader().execute("SELECT k, v FROM message_fts_config").fetchall())
        assert config.get("hashsize", text_fill.DEFAULT_HASH_BYTES) == text_fill.DEFAULT_HASH_BYTES
    finally:
        db.close()
    assert content_index(catalog_file) == content_index(reference_file)


def test_index_alone_leaves_no_full_text_backlog(agent: Path, tmp_path: Path) -> None:
    catalog_file = tmp_path / "catalog.db"
    inline_index(agent, catalog_file)  # Indexer.index_paths without defer_text fills message_fts itself
    db = _open(catalog_file)
    try:
        assert fts.read_backlog(db.sqlite_reader()) is None
        assert db.sqlite_reader().execute("SELECT count(*) FROM message_fts_idx").fetchone()[0] > 0
    finally:
        db.close()
