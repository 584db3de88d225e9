"""The indexer: full reads, appends from the stored offset, torn tails, rewrites, renames, deletions, damage."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import sessdex.catalog.index.file_reader as reader_module
import sessdex.catalog.index.indexer as indexer_module
from sessdex.catalog.index.indexer import Indexer, Outcome
from sessdex.catalog.store import fts
from sessdex.catalog.store.db import open_catalog
from sessdex.catalog.store.location import resolve_location
from sessdex.core.discovery import summarize_bytes
from sessdex.core.jsonl import parse_jsonl
from sessdex.core.summary import SessionSummary
from tests.catalog.catalog_support import append_bytes, assistant, header, jsonl, message, user, write_file

CWD = "/work/project"


@pytest.fixture
def db(tmp_path: Path):
    database = open_catalog(resolve_location(tmp_path / "agent"))
    yield database
    database.close()


def expected(path: Path) -> dict[str, Any]:
    """What a whole-file scan finds in `path`."""
    data = path.read_bytes()
    summary, text = summarize_bytes(data)
    return {"header_valid": summary.header_valid, "session_id": summary.session_id, "cwd": summary.cwd,
            "title": summary.title, "message_count": summary.message_count, "first_message": summary.first_message,
            "last_entry_id": summary.last_entry_id, "entry_count": summary.entry_count,
            "unparseable": parse_jsonl(data).bad_records, "text": text}


def stored(db, path: Path) -> dict[str, Any]:
    """What the catalog holds for `path`."""
    row = db.fetchall("file_by_path", {"path": str(path)})[0]
    texts = [r["text"] for r in db.fetchall("message_texts", {"file_id": row["id"]})]
    return {"header_valid": bool(row["header_valid"]), "session_id": row["session_id"], "cwd": row["cwd"],
            "title": row["title"], "message_count": row["message_count"], "first_message": row["first_message"],
            "last_entry_id": row["last_entry_id"], "entry_count": row["entry_count"],
            "unparseable": row["unparseable_lines"] + row["pending_unparseable"], "text": " ".join(texts)}


def assert_fts_in_step(db) -> None:
    """FTS5 verifies both indexes against their content tables (raises when they drifted)."""
    connection = db.writer_connection()
    for table in fts.FTS_TABLES:
        connection.execute(fts.integrity_check(table))


def row_of(db, path: Path):
    rows = db.fetchall("file_by_path", {"path": str(path)})
    return rows[0] if rows else None


def test_full_index_records_the_fold_and_every_message_text(db, tmp_path: Path):
    path = write_file(tmp_path / "s.jsonl", jsonl([header("abc", CWD, title="T"), user("hello there"),
                                                   assistant("general kenobi")]))
    assert Indexer(db).index_path(path) is Outcome.INDEXED
    assert stored(db, path) == expected(path)
    row = row_of(db, path)
    assert (row["size"], row["indexed_offset"], row["input_tokens"], row["cost_total"]) == (path.stat().st_size,) * 2 + (10, 0.25)
    assert row["last_model"] == "anthropic/claude-test"
    assert Indexer(db).index_path(path) is Outcome.UNCHANGED


def test_an_append_reads_only_the_new_bytes(db, tmp_path: Path, monkeypatch):
    path = write_file(tmp_path / "s.jsonl", jsonl([header("abc", CWD), user("first")]))
    Indexer(db).index_path(path)
    old_size = path.stat().st_size
    append_bytes(path, jsonl([assistant("second", "a0000002"), user("third", "u0000003")]))
    offsets = []
    real_read_fold = indexer_module.read_fold
    monkeypatch.setattr(indexer_module, "read_fold", lambda handle, offset, *rest: offsets.append(offset)
                        or real_read_fold(handle, offset, *rest))
    assert Indexer(db).index_path(path) is Outcome.APPENDED
    assert offsets == [old_size]
    assert stored(db, path) == expected(path)
    assert [r["text"] for r in db.fetchall("message_texts", {"file_id": row_of(db, path)["id"]})] == ["first", "second", "third"]


def test_a_torn_last_line_stays_pending_until_completed(db, tmp_path: Path):
    complete = jsonl([header("abc", CWD), user("one")])
    torn_line = jsonl([assistant("two")])
    path = write_file(tmp_path / "s.jsonl", complete + torn_line[:25])
    Indexer(db).index_path(path)
    row = row_of(db, path)
    assert row["indexed_offset"] == len(complete)
    assert stored(db, path) == expected(path)  # the torn tail counts as one unparseable record, as in a scan
    assert row["pending_unparseable"] == 1
    append_bytes(path, torn_line[25:])
    assert Indexer(db).index_path(path) is Outcome.APPENDED
    assert row_of(db, path)["indexed_offset"] == len(complete + torn_line)
    assert stored(db, path) == expected(path)
    assert stored(db, path)["unparseable"] == 0


def test_a_complete_last_line_without_newline_is_shown_but_not_committed(db, tmp_path: Path):
    complete = jsonl([header("abc", CWD), user("one")])
    path = write_file(tmp_path / "s.jsonl", complete + jsonl([assistant("two")])[:-1])
    Indexer(db).index_path(path)
    assert stored(db, path) == expected(path)
    assert row_of(db, path)["indexed_offset"] == len(complete)
    append_bytes(path, b"\n" + jsonl([user("three", "u0000003")]))
    Indexer(db).index_path(path)
    assert stored(db, path) == expected(path)
    assert stored(db, path)["message_count"] == 3


@pytest.mark.parametrize("rewrite", ["shrink", "same_size_new_head", "rename_over", "grown_in_place"])
def test_a_rewritten_file_is_read_again_from_the_start(db, tmp_path: Path, rewrite: str):
    path = write_file(tmp_path / "s.jsonl", jsonl([header("abc", CWD), user("one"), assistant("two")]))
    Indexer(db).index_path(path)
    if rewrite == "shrink":
        path.write_bytes(jsonl([header("abc", CWD), user("one")]))
    elif rewrite == "same_size_new_head":
        data = path.read_bytes()
        path.write_bytes(data.replace(b'"abc"', b'"xyz"'))
    elif rewrite == "rename_over":
        replacement = write_file(tmp_path / "tmp.jsonl.part", jsonl([header("new", CWD), user("fresh")]))
        os.replace(replacement, path)
    else:  # same inode, longer, but the old bytes changed (no newline where the old end was)
        path.write_bytes(jsonl([header("abc", CWD), user("one, edited at length"), assistant("two")]))
    assert Indexer(db).index_path(path) is Outcome.INDEXED
    assert stored(db, path) == expected(path)
    assert_fts_in_step(db)


def test_deleted_files_are_dropped_with_their_text(db, tmp_path: Path):
    path = write_file(tmp_path / "s.jsonl", jsonl([header("abc", CWD), user("findme")]))
    Indexer(db).index_path(path)
    path.unlink()
    assert Indexer(db).index_path(path) is Outcome.REMOVED
    assert row_of(db, path) is None
    assert db.scalar("count_messages") == 0
    assert db.sqlite_reader().execute("SELECT count(*) FROM message_fts WHERE message_fts MATCH 'findme'").fetchone()[0] == 0
    assert_fts_in_step(db)
    assert Indexer(db).index_path(path) is Outcome.ABSENT


def test_a_renamed_file_keeps_its_row_without_being_read_again(db, tmp_path: Path, monkeypatch):
    old = write_file(tmp_path / "a" / "s.jsonl", jsonl([header("abc", CWD), user("one")]))
    Indexer(db).index_path(old)
    file_id = row_of(db, old)["id"]
    new = tmp_path / "b" / "s.jsonl"
    new.parent.mkdir()
    os.rename(old, new)
    monkeypatch.setattr(indexer_module, "read_fold", lambda *args: pytest.fail("a rename must not re-read the file"))
    assert Indexer(db).index_paths([new, old]) == {Outcome.MOVED: 1, Outcome.ABSENT: 1}
    row = row_of(db, new)
    assert (row["id"], row["directory"]) == (file_id, str(new.parent))
    assert row_of(db, old) is None


def test_indexing_never_writes_to_session_files(db, tmp_path: Path):
    path = write_file(tmp_path / "s.jsonl", jsonl([header("abc", CWD), user("one")]) + b'{"torn', 1_700_000_000_000)
    os.chmod(path, 0o444)
    before = (path.read_bytes(), path.stat().st_mtime_ns, path.stat().st_ino)
    Indexer(db).index_path(path)
    Indexer(db).index_path(path, force=True)
    assert (path.read_bytes(), path.stat().st_mtime_ns, path.stat().st_ino) == before


def test_files_without_a_valid_header_are_recorded_as_such(db, tmp_path: Path):
    empty = write_file(tmp_path / "empty.jsonl", b"")
    garbage = write_file(tmp_path / "garbage.jsonl", b"[1, 2]\n" + jsonl([header("abc", CWD)]))
    for path in (empty, garbage):
        Indexer(db).index_path(path)
        assert stored(db, path) == expected(path)
        assert row_of(db, path)["header_valid"] == 0


def test_lone_surrogates_from_damaged_lines_do_not_break_indexing(db, tmp_path: Path):
    path = write_file(tmp_path / "s.jsonl", jsonl([header("abc", CWD)])
                      + b'{"type":"message","id":"x","message":{"role":"user","content":"bad \\ud800 text"}} trailing\n')
    Indexer(db).index_path(path)
    assert stored(db, path)["message_count"] == 1
    assert stored(db, path)["first_message"] == "bad \ufffd text"


def test_usage_sums_that_overflow_survive_an_append(db, tmp_path: Path):
    huge = {"input": 1e308, "output": 1, "cost": {"total": 1e308}}
    records = [header("abc", CWD)] + [message("assistant", "big", f"a{n:07d}", provider="p", model="m", usage=huge)
                                      for n in range(2)]
    path = write_file(tmp_path / "s.jsonl", jsonl(records))
    Indexer(db).index_path(path)
    append_bytes(path, jsonl([message("assistant", "more", "a0000009", provider="p", model="m", usage=huge)]))
    assert Indexer(db).index_path(path) is Outcome.APPENDED
    row = row_of(db, path)
    assert (row["input_tokens"], row["output_tokens"], row["cost_total"]) == (float("inf"), 3, float("inf"))
    assert stored(db, path) == expected(path)


# -- property: any bytes, appended in any pieces, with any chunk size, give what a whole-file scan gives ------

_LINES = [
    jsonl([header("0123456789abcdef", CWD, title="Title")]),
    jsonl([{"type": "title", "title": "From title line"}]),
    jsonl([user("question one")]),
    jsonl([assistant("answer one")]),
    jsonl([{"type": "compaction", "id": "c1", "shortSummary": "short"}]),
    jsonl([{"type": "model_change", "id": "m1", "model": "openai/gpt"}]),
    b"garbage line\n",
    b"\n",
    b'{"type":"message","id":"zz",\n"message":{"role":"user","content":"spans lines"}}\n',
    b'{"a": [1,\n',
    b'{"first":1} {"second":2}\n',
    b"[1, 2, 3]\n",
]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(lines=st.lists(st.sampled_from(_LINES), min_size=0, max_size=12),
       tail=st.sampled_from([b"", b'{"type":"message"', b"partial garbage", jsonl([user("no newline")])[:-1]]),
       cuts=st.lists(st.integers(min_value=0, max_value=2000), max_size=4),
       chunk=st.sampled_from([7, 64, 4 * 1024 * 1024]))
def test_incremental_indexing_equals_a_whole_file_scan(tmp_path_factory, lines, tail, cuts, chunk):
    template = tmp_path_factory.getbasetemp() / "migrated-catalog"
    if not template.exists():
        open_catalog(resolve_location(template)).close()
    root = tmp_path_factory.mktemp("prop")
    shutil.copyfile(template / "catalog.db", root / "catalog.db")
    os.chmod(root / "catalog.db", 0o600)  # a copy gets the umask's mode; sessdex refuses a catalog others can read
    database = open_catalog(resolve_location(root))
    original_chunk = reader_module.CHUNK_BYTES
    reader_module.CHUNK_BYTES = chunk
    try:
        data = jsonl([header("0123456789abcdef", CWD)]) + b"".join(lines) + tail
        path = root / "s.jsonl"
        path.write_bytes(b"")
        written = 0
        for cut in sorted(min(c, len(data)) for c in cuts) + [len(data)]:
            append_bytes(path, data[written:cut])
            written = max(written, cut)
            Indexer(database).index_path(path)
            assert stored(database, path) == expected(path)
        assert_fts_in_step(database)
        path.unlink()
        Indexer(database).index_path(path)
        assert database.scalar("count_messages") == 0
        assert_fts_in_step(database)
    finally:
        reader_module.CHUNK_BYTES = original_chunk
        database.close()


_PIECES = [b'{"a":1}', b"[1,2]", b"   ", b"", b"garbage", b'{"a":', b"1}", b'"\\ud800"', b"NaN", b'{"b":2} {"c":3}',
           b"\r", b'{"x":"y"}\r', b"\xff\xfe", b"{\n", b"}"]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(_PIECES), max_size=12), st.lists(st.sampled_from([b"\n", b""]), min_size=12, max_size=12))
def test_parse_lines_is_exactly_parse_jsonl(pieces, separators):
    data = b"".join(piece + separator for piece, separator in zip(pieces, separators))
    fast, reference = reader_module.parse_lines(data), parse_jsonl(data)
    assert (fast.values, fast.bad_records, fast.torn_tail) == (reference.values, reference.bad_records, reference.torn_tail)


# -- the prefix fold from the full read's values --------------------------------------------------------------

_HEAD_LINES = [
    jsonl([user("a question")]),
    jsonl([assistant("an answer")]),
    jsonl([{"type": "title", "title": "From title line"}]),
    b"1234567890\n",
    b'"a whole string line"\n',
    b"[1, 2, 3]\n",
    b"\n",
    b"  \r\n",
    b"garbage line\n",
    b'{"type":"message","id":"zz",\n"message":{"role":"user","content":"spans lines"}}\n',
    b'{"first":1} {"second":2}\n',
    b'{"x":"bad \\ud800"}\n',
]


@settings(max_examples=300, deadline=None)
@given(first=st.sampled_from([jsonl([header("0123456789abcdef", CWD)]), jsonl([{"type": "title", "title": "T"}]),
                              b"12\n", b"\n"]),
       lines=st.lists(st.sampled_from(_HEAD_LINES), max_size=8), head_length=st.integers(1, 400))
def test_head_values_give_the_prefix_fold_of_summarize_bytes(first, lines, head_length):
    data = first + b"".join(lines) + jsonl([user("the last line")])
    parsed, clean = reader_module._parse_lines(data)
    head = reader_module.HeadValues(min(len(data), head_length))
    head.see(data, parsed.values, clean)
    assert head.head == data[:head_length]
    if head.values is not None:
        summary = SessionSummary()
        summary.feed_all(head.values)
        assert summary.to_state() == summarize_bytes(data[:head_length])[0].to_state()


def test_head_values_are_known_when_the_head_ends_inside_an_object_string_or_array(tmp_path: Path):
    for torn_line in (jsonl([user("x" * 300)]), b'"' + b"y" * 300 + b'"\n', b"[" + b"1," * 150 + b"1]\n"):
        data = jsonl([header("0123456789abcdef", CWD), user("first")]) + torn_line
        parsed, clean = reader_module._parse_lines(data)
        head = reader_module.HeadValues(len(data) - 100)
        head.see(data, parsed.values, clean)
        assert head.values == parsed.values[:2]
    number_cut = jsonl([header("0123456789abcdef", CWD)]) + b"1234567890\n"
    parsed, clean = reader_module._parse_lines(number_cut)
    head = reader_module.HeadValues(len(number_cut) - 4)
    head.see(number_cut, parsed.values, clean)
    assert head.values is None  # a piece of a number is a number: summarize_bytes decides
