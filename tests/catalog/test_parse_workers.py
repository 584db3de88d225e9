"""A bulk run whose files are read by parse worker processes writes the catalog the single-process run writes.

Every table is compared whole (rows in rowid order, FTS5 shadow tables included), on a generated corpus
with hostile files among the ordinary ones; a worker that dies part-way and a run interrupted by Ctrl+C
leave no process behind, and the files not committed are indexed the ordinary way.
"""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from gen_corpus import generate_corpus

import sessdex.catalog.index.indexer as indexer_module
import sessdex.catalog.index.parse_workers as workers_module
from sessdex.catalog.index.content_index import fill_content_index
from sessdex.catalog.index.indexer import Indexer, Outcome
from sessdex.catalog.store.db import open_catalog
from sessdex.catalog.store.location import resolve_location
from tests.catalog.catalog_support import assistant, header, jsonl, user, write_file
from tests.catalog.test_bulk_writer import assert_same_content, odd_files, snapshot

CWD = "/work/project"
NOW = 1_750_000_000.0


def clock() -> float:
    return NOW


def hostile_files(folder: Path) -> list[Path]:
    """Damaged, deep, binary, empty and not-a-file paths, beside the odd values of test_bulk_writer."""
    deep = b"[" * 300 + b"]" * 300
    folder.mkdir(parents=True, exist_ok=True)
    fifo = folder / "fifo.jsonl"
    os.mkfifo(fifo)
    (folder / "directory.jsonl").mkdir()
    return [
        *odd_files(folder),
        write_file(folder / "damaged.jsonl", jsonl([header("dam0000000000001", CWD), user("before")])
                   + b'{"type":"message", broken\n{"a": [1, 2,\n3]}\n' + jsonl([assistant("after damage")])),
        write_file(folder / "deep.jsonl", jsonl([header("dee0000000000001", CWD)]) + deep + b"\n"
                   + jsonl([user("after a deep line " + "{" * 400)])),
        write_file(folder / "binary.jsonl", bytes(range(256)) * 40),
        write_file(folder / "empty.jsonl", b""),
        write_file(folder / "torn.jsonl", jsonl([header("tor0000000000001", CWD), user("whole")])
                   + b'{"type":"message","id":"x","message":{"role":"user","content":"torn'),
        write_file(folder / "no-header.jsonl", jsonl([user("no header here")])),
        fifo,
        folder / "directory.jsonl",
    ]


@pytest.fixture
def corpus(tmp_path: Path) -> list[Path]:
    agent = tmp_path / "agent"
    generate_corpus(agent, sessions=60, projects=4, total_bytes=900_000, seed=5, home=tmp_path / "home", now=NOW)
    generated = sorted((agent / "sessions").rglob("*.jsonl"))
    hostile = hostile_files(agent / "sessions" / "hostile")
    # Hostile files among the ordinary ones (so that both workers meet some), and a path that does not exist.
    return [*generated[:20], *hostile[:6], *generated[20:40], *hostile[6:], *generated[40:],
            agent / "sessions" / "missing.jsonl"]


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


def index_into(root: Path, paths: list[Path], **options: Any) -> tuple[dict[Outcome, int], list[tuple[str, str]]]:
    """Index `paths` into a new catalog under `root`; (counts, failures)."""
    database = open_catalog(resolve_location(root))
    try:
        indexer = Indexer(database, clock=clock, **options)
        counts = indexer.index_paths(paths)
        return counts, [(failure.path, failure.reason) for failure in indexer.failures]
    finally:
        database.close()


@pytest.fixture
def started_workers(monkeypatch) -> list[workers_module.ParseWorkers]:
    """Every ParseWorkers a test starts (to check that their processes ended)."""
    started: list[workers_module.ParseWorkers] = []
    real_start = workers_module.ParseWorkers.start.__func__  # type: ignore[attr-defined]

    def start(cls, *args: Any, **options: Any) -> workers_module.ParseWorkers:
        workers = real_start(cls, *args, **options)
        started.append(workers)
        return workers

    monkeypatch.setattr(workers_module.ParseWorkers, "start", classmethod(start))
    return started


def processes(workers: list[workers_module.ParseWorkers]) -> list[Any]:
    return [channel.process for each in workers for channel in each._channels]


@pytest.mark.parametrize("count", [1, 2])
@pytest.mark.parametrize("defer_content", [False, True])
def test_parse_workers_write_exactly_the_catalog_of_the_single_process_run(tmp_path, corpus, monkeypatch,
                                                                             started_workers, count, defer_content):
    monkeypatch.setattr(indexer_module, "BATCH_FILES", 9)
    monkeypatch.setattr(workers_module, "SHARE_BYTES", 30_000)  # many shares: the workers take turns
    single = index_into(tmp_path / "single", corpus, parse_workers=0, defer_content=defer_content)
    assert not started_workers
    parallel = index_into(tmp_path / "parallel", corpus, parse_workers=count, defer_content=defer_content)
    assert len(processes(started_workers)) == count
    assert all(process.returncode is not None for process in processes(started_workers))
    assert parallel == single
    assert single[0][Outcome.ABSENT] == 3  # the missing path, the FIFO and the directory
    reference, catalog = whole_catalog(resolve_location(tmp_path / "single").sqlite_path), \
        whole_catalog(resolve_location(tmp_path / "parallel").sqlite_path)
    assert catalog == reference
    assert len(catalog["session_files"]) == len(corpus) - 3
    if defer_content:  # listings first: the content comes with content_index, and then equals a full index's
        assert not catalog["messages"] and not catalog["usage_facts"]
        fill_content(tmp_path / "single")
        fill_content(tmp_path / "parallel", parse_workers=count)  # the files read again by workers
        index_into(tmp_path / "full", corpus, parse_workers=0)
        reference = whole_catalog(resolve_location(tmp_path / "full").sqlite_path)
        catalog = whole_catalog(resolve_location(tmp_path / "parallel").sqlite_path)
        for whole in (reference, catalog):  # the same entries (snapshot below), built in other steps
            for table in [name for name in whole if name.startswith("message_fts_")]:
                del whole[table]
        assert catalog == reference
        assert snapshot(resolve_location(tmp_path / "parallel").sqlite_path) == \
            snapshot(resolve_location(tmp_path / "full").sqlite_path)
    assert catalog["usage_facts"]
    assert any(row[4] == "after damage" for row in catalog["messages"])


def fill_content(root: Path, parse_workers: int = 0, **options: Any) -> None:
    """Complete the content a listing-first index left for later (as `sessdex index` does)."""
    database = open_catalog(resolve_location(root))
    try:
        assert fill_content_index(database, chunk_bytes=40_000, parse_workers=parse_workers, **options)
    finally:
        database.close()


def test_a_row_gone_while_workers_read_the_content_leaves_the_rest_to_this_process(tmp_path, corpus, started_workers):
    files = [path for path in corpus if path.is_file() and path.suffix == ".jsonl"]
    index_into(tmp_path / "parallel", files, parse_workers=0, defer_content=True)
    gone = files[-5]

    def remove_one(progress: Any) -> None:  # between two chunks, as a watcher would
        if gone.exists():
            os.unlink(gone)
            database = open_catalog(resolve_location(tmp_path / "parallel"))
            try:
                Indexer(database, clock=clock).index_path(gone)
            finally:
                database.close()

    fill_content(tmp_path / "parallel", parse_workers=1, progress=remove_one)
    assert not gone.exists() and len(processes(started_workers)) == 1
    assert all(process.returncode is not None for process in processes(started_workers))
    index_into(tmp_path / "full", [path for path in files if path != gone], parse_workers=0)
    assert_same_content(snapshot(resolve_location(tmp_path / "parallel").sqlite_path),
                        snapshot(resolve_location(tmp_path / "full").sqlite_path))


def test_a_worker_that_dies_sends_the_rest_the_ordinary_way(tmp_path, corpus, monkeypatch, started_workers):
    monkeypatch.setattr(indexer_module, "BATCH_FILES", 5)
    location = resolve_location(tmp_path / "parallel")
    database = open_catalog(location)
    reported: list[str] = []

    def progress(path: str, _outcome: Outcome) -> None:
        reported.append(path)
        if len(reported) == 7:
            started_workers[0]._channels[0].process.kill()

    try:
        counts = Indexer(database, clock=clock, parse_workers=1).index_paths(corpus, progress=progress)
    finally:
        database.close()
    assert reported == [str(path) for path in corpus]
    assert counts[Outcome.ABSENT] == 3 and sum(counts.values()) == len(corpus)
    assert all(process.returncode is not None for process in processes(started_workers))
    index_into(tmp_path / "single", corpus, parse_workers=0)
    assert_same_content(snapshot(location.sqlite_path), snapshot(resolve_location(tmp_path / "single").sqlite_path))


def test_ctrl_c_during_a_run_with_workers_leaves_no_process_and_only_whole_batches(tmp_path, corpus, monkeypatch,
                                                                                  started_workers):
    monkeypatch.setattr(indexer_module, "BATCH_FILES", 10)
    location = resolve_location(tmp_path / "parallel")
    database = open_catalog(location)

    def interrupt(path: str, _outcome: Outcome) -> None:
        if path == str(corpus[14]):
            raise KeyboardInterrupt

    try:
        with pytest.raises(KeyboardInterrupt):
            Indexer(database, clock=clock, parse_workers=2).index_paths(corpus, progress=interrupt)
        assert all(process.returncode is not None for process in processes(started_workers))
        assert database.scalar("count_files") == 10
    finally:
        database.close()


def test_only_a_run_of_enough_bytes_starts_workers(tmp_path, monkeypatch):
    paths = [write_file(tmp_path / f"{name}.jsonl", jsonl([header(f"{name}00000000000001", CWD), user("x" * 3000)]))
             for name in "abcd"]
    monkeypatch.setattr(workers_module, "available_cpus", lambda: 4)
    assert workers_module.parse_worker_count([str(path) for path in paths]) == 0
    monkeypatch.setattr(workers_module, "PARALLEL_MIN_BYTES", 6000)
    assert workers_module.parse_worker_count([str(path) for path in paths]) == min(3, workers_module.MAX_WORKERS)
    monkeypatch.setattr(workers_module, "available_cpus", lambda: 1)
    assert workers_module.parse_worker_count([str(path) for path in paths]) == 0


def test_workers_that_cannot_start_leave_the_bulk_run_to_the_indexing_process(tmp_path, corpus, monkeypatch,
                                                                            started_workers):
    index_into(tmp_path / "single", corpus, parse_workers=0)
    monkeypatch.setattr(workers_module.sys, "executable", "/bin/false")  # an interpreter that runs nothing
    counts, failures = index_into(tmp_path / "parallel", corpus, parse_workers=1)
    assert started_workers and all(process.returncode is not None for process in processes(started_workers))
    assert counts[Outcome.INDEXED] == len(corpus) - 3 and not failures
    assert whole_catalog(resolve_location(tmp_path / "parallel").sqlite_path) == \
        whole_catalog(resolve_location(tmp_path / "single").sqlite_path)


def test_an_interrupted_listing_first_index_leaves_a_catalog_that_completes_to_a_full_one(tmp_path, corpus,
                                                                                        monkeypatch, started_workers):
    monkeypatch.setattr(indexer_module, "BATCH_FILES", 5)
    database = open_catalog(resolve_location(tmp_path / "parallel"))

    def interrupt(path: str, _outcome: Outcome) -> None:
        if path == str(corpus[14]):
            raise KeyboardInterrupt

    try:
        with pytest.raises(KeyboardInterrupt):
            Indexer(database, clock=clock, parse_workers=1, defer_content=True).index_paths(corpus, progress=interrupt)
        assert database.scalar("count_files") == 10 and database.scalar("count_messages") == 0  # two batches
        assert not fill_content_index(database, chunk_bytes=1, deadline=0)  # usable: a chunk of its content follows
        Indexer(database, clock=clock, defer_content=True).index_paths(corpus)  # the next command: the rest
        assert fill_content_index(database)
    finally:
        database.close()
    assert all(process.returncode is not None for process in processes(started_workers))
    index_into(tmp_path / "full", corpus, parse_workers=0)
    assert_same_content(snapshot(resolve_location(tmp_path / "parallel").sqlite_path),
                        snapshot(resolve_location(tmp_path / "full").sqlite_path))
