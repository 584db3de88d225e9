"""Indexing into an empty catalog through the BulkWriter stores exactly what the ordinary indexer stores.

Every test compares the whole catalog (rows, message rows, every FTS5 token instance) with one built
file by file by `Indexer.index_path`, including when the bulk run has to stop part-way: another
process writing, a path seen twice, a rename during the run, a read error, a database error.
"""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from gen_corpus import generate_corpus

import sessdex.catalog.index.bulk_writer as bulk_module
import sessdex.catalog.index.file_reader as reader_module
import sessdex.catalog.index.indexer as indexer_module
from sessdex.catalog.index.indexer import Indexer, Outcome
from sessdex.catalog.store import fts
from sessdex.catalog.store.db import open_catalog
from sessdex.catalog.store.location import resolve_location
from tests.catalog.catalog_support import (
    assistant,
    header,
    jsonl,
    message,
    user,
    write_file,
)

CWD = "/work/project"
NOW = 1_750_000_000.0


def clock() -> float:
    return NOW


def snapshot(database_path: Path) -> dict[str, Any]:
    """Everything a catalog holds: file rows, message rows, and every token instance of both FTS5 indexes."""
    connection = sqlite3.connect(database_path)
    try:
        for table in fts.FTS_TABLES:
            connection.execute(fts.integrity_check(table))
            connection.execute(f"CREATE VIRTUAL TABLE temp.{table}_terms USING fts5vocab(main, '{table}', 'instance')")
        return {
            "files": connection.execute("SELECT * FROM session_files ORDER BY id").fetchall(),
            "messages": connection.execute("SELECT * FROM messages ORDER BY id").fetchall(),
            "usage_facts": connection.execute("SELECT * FROM usage_facts ORDER BY id").fetchall(),
            **{table: connection.execute(f"SELECT * FROM temp.{table}_terms ORDER BY 1, 2, 3, 4").fetchall()
               for table in fts.FTS_TABLES},
        }
    finally:
        connection.close()


def one_by_one(root: Path, paths: list[Path]) -> dict[str, Any]:
    """The catalog the ordinary indexer builds from `paths`, one file per transaction."""
    location = resolve_location(root)
    database = open_catalog(location)
    try:
        indexer = Indexer(database, clock=clock)
        for path in paths:
            indexer.index_path(path)
    finally:
        database.close()
    return snapshot(location.sqlite_path)


def odd_files(folder: Path) -> list[Path]:
    """Files whose values JSON cannot carry exactly (in rows, texts and usage facts), a head cut inside a number, and a
    long one."""
    big_usage = {"input": 1e308, "output": 1e308, "cost": {"total": 1e308}}
    return [
        write_file(folder / "nul.jsonl", jsonl([header("nul0000000000001", CWD, title="a\x00title"),
                                                user("text with a \x00 NUL inside"), assistant("after")])),
        write_file(folder / "infinite.jsonl", jsonl([header("inf0000000000001", CWD)]
                                                    + [message("assistant", "big", f"a{n:07d}", provider="p",
                                                               model="m", usage=big_usage) for n in range(3)])),
        write_file(folder / "number-head.jsonl", jsonl([header("num0000000000001", CWD, title="x" * 3950)])
                   + b"1234567890123456789\n" + jsonl([user("after a number")])),
        write_file(folder / "surrogate.jsonl", jsonl([header("sur0000000000001", CWD)])
                   + b'{"type":"message","id":"x","message":{"role":"user","content":"bad \\ud800"}} trailing\n'),
        write_file(folder / "long.jsonl", jsonl([header("lon0000000000001", CWD)]
                                                + [user(f"question {n} " + "word " * 200, f"u{n:07d}")
                                                   for n in range(60)])),
        write_file(folder / "nul-usage.jsonl", jsonl([header("nuu0000000000001", CWD)]
                                                     + [message("assistant", "reply", f"n\x00{n:06d}", provider="p\x00",
                                                                model="m", usage={"input": 5, "output": 7})
                                                        for n in range(3)])),
    ]


@pytest.fixture
def corpus(tmp_path: Path) -> list[Path]:
    agent = tmp_path / "agent"
    generate_corpus(agent, sessions=40, projects=3, total_bytes=600_000, seed=11, home=tmp_path / "home", now=NOW)
    paths = sorted((agent / "sessions").rglob("*.jsonl"))
    return [*paths, *odd_files(agent / "sessions" / "odd"), agent / "sessions" / "missing.jsonl"]


@pytest.fixture
def bulk_calls(monkeypatch) -> list[int]:
    """Counts files written by a BulkWriter (so that a test knows the bulk path ran)."""
    calls: list[int] = []
    real_add_file = bulk_module.BulkWriter.add_file
    monkeypatch.setattr(bulk_module.BulkWriter, "add_file",
                        lambda self, file_id, columns: calls.append(file_id) or real_add_file(self, file_id, columns))
    return calls


def bulk_index(root: Path, paths: list[Path], **options: Any) -> tuple[dict[Outcome, int], list[str], dict[str, Any]]:
    """Index `paths` into a new catalog under `root` with index_paths; (counts, progress reports, snapshot)."""
    location = resolve_location(root)
    database = open_catalog(location)
    reported: list[str] = []
    try:
        counts = Indexer(database, clock=clock).index_paths(
            paths, progress=options.get("progress") or (lambda path, _outcome: reported.append(path)))
    finally:
        database.close()
    return counts, reported, snapshot(location.sqlite_path)


@pytest.mark.parametrize("part_chars", [bulk_module.PART_CHARS, 300])
def test_a_bulk_run_stores_exactly_what_indexing_file_by_file_stores(tmp_path, corpus, bulk_calls, monkeypatch,
                                                                     part_chars):
    monkeypatch.setattr(bulk_module, "PART_CHARS", part_chars)  # 300: a file's texts span several statements
    monkeypatch.setattr(indexer_module, "BATCH_FILES", 7)
    counts, reported, bulk = bulk_index(tmp_path / "bulk", corpus)
    assert counts == {Outcome.INDEXED: len(corpus) - 1, Outcome.ABSENT: 1}
    assert reported == [str(path) for path in corpus]
    assert len(bulk_calls) == len(corpus) - 1
    assert bulk == one_by_one(tmp_path / "reference", corpus)
    assert {"text with a \x00 NUL inside", "after a number"} <= {row[4] for row in bulk["messages"]}
    assert column(tmp_path / "bulk", corpus[-6], "input_tokens") == float("inf")
    assert column(tmp_path / "bulk", corpus[-7], "title") == "a\x00title"
    assert {row[4] for row in bulk["usage_facts"] if row[4] and "\x00" in row[4]} == {f"n\x00{n:06d}" for n in range(3)}


def test_the_bulk_connection_gets_its_cache_and_checkpoint_settings_back(tmp_path, corpus, monkeypatch):
    seen: list[tuple[int, int]] = []
    real_write = bulk_module.BulkWriter._write

    def write(self, part):
        seen.append(tuple(self._connection.execute(f"PRAGMA {name}").fetchone()[0] for name in bulk_module.BULK_PRAGMAS))
        real_write(self, part)

    monkeypatch.setattr(bulk_module.BulkWriter, "_write", write)
    location = resolve_location(tmp_path / "bulk")
    database = open_catalog(location)
    try:
        connection = database.sqlite_writer()
        before = [connection.execute(f"PRAGMA {name}").fetchone()[0] for name in bulk_module.BULK_PRAGMAS]
        Indexer(database, clock=clock).index_paths(corpus, progress=lambda _path, _outcome: None)
        after = [connection.execute(f"PRAGMA {name}").fetchone()[0] for name in bulk_module.BULK_PRAGMAS]
    finally:
        database.close()
    assert seen and set(seen) == {tuple(bulk_module.BULK_PRAGMAS.values())}
    assert after == before != list(bulk_module.BULK_PRAGMAS.values())


def test_another_writer_during_the_run_sends_the_rest_the_ordinary_way(tmp_path, corpus, bulk_calls, monkeypatch):
    monkeypatch.setattr(indexer_module, "BATCH_FILES", 5)
    location = resolve_location(tmp_path / "bulk")
    database = open_catalog(location)
    other = open_catalog(location)
    reported: list[str] = []

    def progress(path: str, _outcome: Outcome) -> None:
        reported.append(path)
        if len(reported) == 6:  # batch 1 is sent: another process indexes a file this run comes to later
            Indexer(other, clock=clock).index_path(corpus[20])

    try:
        counts = Indexer(database, clock=clock).index_paths(corpus, progress=progress)
    finally:
        other.close()
        database.close()
    assert reported == [str(path) for path in corpus]
    assert counts == {Outcome.INDEXED: len(corpus) - 2, Outcome.UNCHANGED: 1, Outcome.ABSENT: 1}
    assert len(bulk_calls) < len(corpus) - 2
    assert_same_content(snapshot(location.sqlite_path), one_by_one(tmp_path / "reference", corpus))


def column(root: Path, path: Path, name: str) -> Any:
    """One column of the row of `path` in the catalog under `root`."""
    connection = sqlite3.connect(resolve_location(root).sqlite_path)
    try:
        return connection.execute(f"SELECT {name} FROM session_files WHERE path = ?", (str(path),)).fetchone()[0]
    finally:
        connection.close()


def assert_same_content(actual: dict[str, Any], expected: dict[str, Any]) -> None:
    """Equal catalogs up to row ids (a run that stopped part-way numbers rows in another order)."""
    def by_path(snap: dict[str, Any]) -> dict[str, Any]:
        path_of = {row[0]: row[1] for row in snap["files"]}
        texts = {}
        for row in snap["messages"]:
            texts.setdefault(path_of[row[1]], []).append(row[2:])
        return {"files": sorted(row[1:] for row in snap["files"]), "texts": texts,
                "terms": sorted(row[0] for row in snap["message_fts"])}
    assert by_path(actual) == by_path(expected)


def test_a_path_given_twice_and_hard_links(tmp_path, bulk_calls):
    folder = tmp_path / "s"
    first = write_file(folder / "a.jsonl", jsonl([header("a000000000000001", CWD), user("alpha")]))
    linked = folder / "b.jsonl"
    os.link(first, linked)
    paths = [first, linked, first]
    counts, reported, bulk = bulk_index(tmp_path / "bulk", paths)
    assert counts == {Outcome.INDEXED: 2, Outcome.UNCHANGED: 1}
    assert reported == [str(path) for path in paths]
    assert len(bulk_calls) == 2
    assert bulk == one_by_one(tmp_path / "reference", paths)


def test_a_file_renamed_during_the_run_keeps_its_row(tmp_path):
    folder = tmp_path / "s"
    old = write_file(folder / "a.jsonl", jsonl([header("a000000000000001", CWD), user("alpha")]))
    other = write_file(folder / "b.jsonl", jsonl([header("b000000000000001", CWD), user("beta")]))
    new = folder / "c.jsonl"

    def progress(path: str, _outcome: Outcome) -> None:
        if path == str(old):
            os.rename(old, new)

    counts, _reported, bulk = bulk_index(tmp_path / "bulk", [old, other, new], progress=progress)
    assert counts == {Outcome.INDEXED: 2, Outcome.MOVED: 1}
    assert [row[:2] for row in bulk["files"]] == [(1, str(new)), (2, str(other))]


def test_a_read_error_sends_the_batch_the_ordinary_way(tmp_path, corpus, monkeypatch):
    monkeypatch.setattr(indexer_module, "BATCH_FILES", 4)
    real_fold_chunks = reader_module.fold_chunks
    failed = []

    def flaky_fold_chunks(handle, *args, **kwargs):
        if handle.name == str(corpus[9]) and not failed:
            failed.append(handle.name)
            raise OSError(5, "Input/output error")
        return real_fold_chunks(handle, *args, **kwargs)

    monkeypatch.setattr(reader_module, "fold_chunks", flaky_fold_chunks)  # the bulk run's reader
    counts, reported, bulk = bulk_index(tmp_path / "bulk", corpus)
    assert failed and counts == {Outcome.INDEXED: len(corpus) - 1, Outcome.ABSENT: 1}
    assert reported == [str(path) for path in corpus]
    assert bulk == one_by_one(tmp_path / "reference", corpus)


def test_an_unopenable_file_is_recorded_as_the_ordinary_way_records_it(tmp_path, monkeypatch, bulk_calls):
    folder = tmp_path / "s"
    paths = [write_file(folder / f"{name}.jsonl", jsonl([header(f"{name}00000000000001", CWD), user(name)]))
             for name in ("a", "b")]

    real_open = indexer_module.open_session_file

    def refusing_open(path):
        if str(path) == str(paths[0]):
            raise PermissionError(13, "Permission denied")
        return real_open(path)

    monkeypatch.setattr(indexer_module, "open_session_file", refusing_open)  # the ordinary way's
    monkeypatch.setattr(reader_module, "open_session_file", refusing_open)  # the bulk run's
    _counts, _reported, bulk = bulk_index(tmp_path / "bulk", paths)
    assert len(bulk_calls) == 2
    assert bulk == one_by_one(tmp_path / "reference", paths)
    assert column(tmp_path / "bulk", paths[0], "header_valid") == 0


def test_a_database_error_in_the_writer_reaches_the_caller_and_nothing_is_half_written(tmp_path, corpus,
                                                                                       monkeypatch):
    monkeypatch.setattr(bulk_module, "INSERT_MESSAGES_JSON", "INSERT INTO no_such_table VALUES (?)")
    location = resolve_location(tmp_path / "bulk")
    database = open_catalog(location)
    try:
        with pytest.raises(sqlite3.OperationalError, match="no_such_table"):
            Indexer(database).index_paths(corpus)
        assert database.scalar("count_files") == 0 and database.scalar("count_messages") == 0
    finally:
        database.close()


def test_an_interrupted_run_keeps_only_whole_batches(tmp_path, corpus, monkeypatch):
    monkeypatch.setattr(indexer_module, "BATCH_FILES", 10)
    location = resolve_location(tmp_path / "bulk")
    database = open_catalog(location)

    def interrupt(path: str, _outcome: Outcome) -> None:
        if path == str(corpus[14]):
            raise KeyboardInterrupt

    try:
        with pytest.raises(KeyboardInterrupt):
            Indexer(database, clock=clock).index_paths(corpus, progress=interrupt)
        assert database.scalar("count_files") == 10
        assert Indexer(database, clock=clock).index_paths(corpus)[Outcome.UNCHANGED] == 10
    finally:
        database.close()
    assert_same_content(snapshot(location.sqlite_path), one_by_one(tmp_path / "reference", corpus))


def test_the_usage_refresh_after_a_bulk_run_is_set_based(tmp_path, corpus, monkeypatch):
    # Summing the usage rows after a bulk run costs a few statements whatever the number of files: a statement per
    # session (10,000 of them in a large first index) is what made it slow.
    statements: list[int] = []
    real_refresh = indexer_module.refresh_all_usage

    def counted_refresh(db: Any) -> None:
        seen: list[str] = []
        connection = db.sqlite_writer()
        connection.set_trace_callback(seen.append)
        try:
            real_refresh(db)
        finally:
            connection.set_trace_callback(None)
        statements.append(len(seen))

    monkeypatch.setattr(indexer_module, "refresh_all_usage", counted_refresh)
    sessions = [path for path in corpus if path.parent.name != "odd" and path.exists()]
    bulk_index(tmp_path / "few", sessions[:5])
    bulk_index(tmp_path / "many", sessions)
    few, many = statements
    assert len(sessions) >= 30
    forks = sum(1 for path in sessions if b'"parentSession"' in path.read_bytes()[:4096])
    assert many <= few + 2 * forks  # only a fork's copies are marked one file at a time
