"""Prompt history on real SQLite files: the agent's schema, background adds, search, import, failures."""

from __future__ import annotations

import gc
import logging
import sqlite3
import subprocess
import sys
import textwrap
import threading
from pathlib import Path
from unittest import mock

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sessdex.catalog.history import search as history_search
from sessdex.catalog.history.search import SearchScratch, search_prompts
from sessdex.catalog.history.storage import (
    HistoryError,
    HistoryStorage,
    HistoryWriteError,
    ImportedPrompt,
    trim_prompt,
)

REPO = Path(__file__).resolve().parents[2]

# The agent's DDL exactly as its history.db stores it (recorded in the conformance cases' sqliteDump).
AGENT_DDL = """
CREATE TABLE history (
\tid INTEGER PRIMARY KEY AUTOINCREMENT,
\tprompt TEXT NOT NULL,
\tcreated_at INTEGER NOT NULL DEFAULT (CAST(strftime('%s','now') AS INTEGER)),
\tcwd TEXT
);
CREATE INDEX idx_history_created_at ON history(created_at DESC);
CREATE VIRTUAL TABLE history_fts USING fts5(prompt, content='history', content_rowid='id');
CREATE TRIGGER history_ai AFTER INSERT ON history BEGIN
\tINSERT INTO history_fts(rowid, prompt) VALUES (new.id, new.prompt);
\tEND;
"""

HOSTILE_QUERIES = [
    '"', "'", '""', 'say "hi', "AND", "OR", "NOT", "a AND b", "a OR b", "*", "a*", "**", "NEAR(", "NEAR(a b, 2)",
    "(", ")", "((a)", "a)", "-", "-a", "a - b", "^a", "prompt:a", "{a b}:c", "🎉", "🎉 a", "\x00", "a\x00b",
    "%", "_", "100%_", "\\", "x" * 10_000, "a " * 5_000, "\udcff",
]


def agent_database(path: Path) -> sqlite3.Connection:
    """A history.db created the way the agent creates it (WAL, its DDL), left open as the agent would."""
    connection = sqlite3.connect(path, isolation_level=None)
    connection.execute("PRAGMA journal_mode = WAL")
    connection.executescript(AGENT_DDL)
    return connection


def schema_of(path: Path) -> list[tuple]:
    connection = sqlite3.connect(path)
    try:
        return connection.execute("SELECT type, name, tbl_name, sql FROM sqlite_master ORDER BY type, name").fetchall()
    finally:
        connection.close()


def rows_of(path: Path) -> list[tuple]:
    connection = sqlite3.connect(path)
    try:
        return connection.execute("SELECT id, prompt, created_at, cwd FROM history ORDER BY id").fetchall()
    finally:
        connection.close()


def fts_integrity_ok(path: Path) -> None:
    connection = sqlite3.connect(path)
    try:
        connection.execute("INSERT INTO history_fts(history_fts) VALUES ('integrity-check')")
    finally:
        connection.close()


class Clock:
    def __init__(self, now: float = 1_740_823_200.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "agent" / "history.db"


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def history(db_path: Path, clock: Clock):
    storage = HistoryStorage.open(db_path, clock=clock)
    yield storage
    storage.close()


def add_all(history: HistoryStorage, clock: Clock, prompts: list[tuple[str, str | None]]) -> None:
    """Add prompts one second apart, then wait for them to land."""
    for prompt, cwd in prompts:
        clock.now += 1
        history.add(prompt, cwd)
    history.flush()


# -- schema and sharing the agent's file -------------------------------------------------------------

def test_fresh_database_is_identical_to_the_agents(tmp_path: Path) -> None:
    agent_path = tmp_path / "agent.db"
    agent_database(agent_path).close()
    ours = tmp_path / "new" / "history.db"
    HistoryStorage.open(ours).close()
    assert schema_of(ours) == schema_of(agent_path)
    connection = sqlite3.connect(ours)
    assert connection.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert connection.execute("PRAGMA user_version").fetchone()[0] == 0
    connection.close()


def test_open_by_agent_dir_creates_it(tmp_path: Path) -> None:
    agent_dir = tmp_path / "home" / ".xcsh" / "agent"
    with HistoryStorage.open(agent_dir=agent_dir) as history:
        assert history.path == agent_dir / "history.db"
    assert (agent_dir / "history.db").is_file()


def test_existing_agent_database_stays_usable_by_the_agent(tmp_path: Path) -> None:
    path = tmp_path / "history.db"
    agent = agent_database(path)
    agent.execute("INSERT INTO history (prompt, cwd) VALUES ('deploy the staging server', '/srv/app')")
    before = schema_of(path)
    with HistoryStorage.open(path) as history:
        assert [e.prompt for e in history.search("staging")] == ["deploy the staging server"]
        history.add("rotate the deploy keys", "/srv/app")
        history.flush()
        # The agent writes while sessdex holds the file open.
        agent.execute("INSERT INTO history (prompt, cwd) VALUES ('deploy again', '/srv/app')")
        assert [e.prompt for e in history.search("deploy")] == [
            "deploy again", "rotate the deploy keys", "deploy the staging server"]
    assert schema_of(path) == before
    agent.execute("INSERT INTO history (prompt) VALUES ('after sessdex closed')")
    hits = agent.execute("SELECT rowid FROM history_fts WHERE history_fts MATCH 'sessdex'").fetchall()
    assert len(hits) == 1
    agent.close()
    fts_integrity_ok(path)


def test_a_file_that_is_not_a_database_is_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "history.db"
    path.write_bytes(b"this is not sqlite" * 100)
    with pytest.raises(HistoryError, match="cannot open the prompt history"):
        HistoryStorage.open(path)
    assert path.read_bytes() == b"this is not sqlite" * 100


def test_a_foreign_history_table_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "history.db"
    connection = sqlite3.connect(path)
    connection.execute("CREATE TABLE history (line TEXT)")
    connection.close()
    with pytest.raises(HistoryError, match="not a prompt history"):
        HistoryStorage.open(path)


# -- add ------------------------------------------------------------------------------------------------

def test_trim_is_javascripts() -> None:
    assert trim_prompt("\ufeff\u00a0 hi \u3000\n") == "hi"
    assert trim_prompt("\x1chi\x1c") == "\x1chi\x1c"  # Python whitespace, not JavaScript's
    assert trim_prompt("a  \r\n  b") == "a  \r\n  b"


def test_add_trims_ignores_empty_and_drops_consecutive_repeats(history: HistoryStorage, clock: Clock,
                                                               db_path: Path) -> None:
    add_all(history, clock, [("  alpha \n", "/p"), ("alpha", "/p"), ("alpha", "/other"), ("   ", None),
                             ("beta", None), ("alpha", None), ("gamma one  \r\n  two\t", None)])
    assert [(row[1], row[3]) for row in rows_of(db_path)] == [
        ("alpha", "/p"), ("beta", None), ("alpha", None), ("gamma one  \r\n  two", None)]


def test_repeat_cache_is_seeded_from_the_newest_stored_prompt(db_path: Path, clock: Clock) -> None:
    with HistoryStorage.open(db_path, clock=clock) as history:
        add_all(history, clock, [("delta one", None), ("delta two", None), ("delta one", None)])
    with HistoryStorage.open(db_path, clock=clock) as history:
        add_all(history, clock, [("delta one", None), ("epsilon", None)])
    assert [row[1] for row in rows_of(db_path)] == ["delta one", "delta two", "delta one", "epsilon"]


def test_add_does_not_wait_for_sqlite(db_path: Path, clock: Clock) -> None:
    with HistoryStorage.open(db_path, clock=clock, batch_delay=60) as history:
        history.add("queued prompt")
        assert history.recent() == []
        assert rows_of(db_path) == []
        history.flush()
        assert [e.prompt for e in history.recent()] == ["queued prompt"]


def test_prompts_land_on_their_own_after_the_batch_delay(db_path: Path) -> None:
    with HistoryStorage.open(db_path, batch_delay=0.05) as history:
        history.add("lands by itself")
        for _ in range(200):
            if history.recent():
                break
            threading.Event().wait(0.01)
        assert [e.prompt for e in history.recent()] == ["lands by itself"]


def test_created_at_comes_from_the_clock_at_add_time(history: HistoryStorage, clock: Clock) -> None:
    clock.now = 1_700_000_000.9
    history.add("stamped")
    clock.now = 1_800_000_000
    history.flush()
    assert history.recent()[0].created_at == 1_700_000_000


def test_unencodable_text_is_stored_with_replacement_characters(history: HistoryStorage) -> None:
    history.add("broken \udcff byte", "/dir/\udcfe")
    history.flush()
    entry = history.recent()[0]
    assert (entry.prompt, entry.cwd) == ("broken \ufffd byte", "/dir/\ufffd")
    assert history.search("broken", cwd="/dir/\udcfe")[0].id == entry.id


def test_a_full_queue_is_written_at_close(db_path: Path, clock: Clock) -> None:
    history = HistoryStorage.open(db_path, clock=clock, batch_delay=3600)
    for n in range(3000):
        history.add(f"prompt {n}", "/p")
    history.close()
    rows = rows_of(db_path)
    assert [row[1] for row in rows] == [f"prompt {n}" for n in range(3000)]
    fts_integrity_ok(db_path)


def test_an_unclosed_storage_is_drained_when_collected(db_path: Path) -> None:
    history = HistoryStorage.open(db_path, batch_delay=3600)
    history.add("not closed by its owner")
    del history
    gc.collect()
    assert [row[1] for row in rows_of(db_path)] == ["not closed by its owner"]


def test_closed_storage_refuses_use(history: HistoryStorage) -> None:
    history.close()
    history.close()  # idempotent
    with pytest.raises(HistoryError, match="closed"):
        history.add("late")
    with pytest.raises(HistoryError, match="closed"):
        history.recent()


def test_threads_adding_at_once(db_path: Path) -> None:
    with HistoryStorage.open(db_path, batch_delay=0.001) as history:
        def add_many(name: str) -> None:
            for n in range(250):
                history.add(f"{name} {n}")

        workers = [threading.Thread(target=add_many, args=(f"thread-{k}",)) for k in range(4)]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join()
    prompts = [row[1] for row in rows_of(db_path)]
    for k in range(4):
        assert [p for p in prompts if p.startswith(f"thread-{k} ")] == [f"thread-{k} {n}" for n in range(250)]


def test_two_processes_adding_at_once(db_path: Path) -> None:
    HistoryStorage.open(db_path).close()
    script = textwrap.dedent("""
        import sys
        from sessdex.catalog.history.storage import HistoryStorage
        name, path = sys.argv[1], sys.argv[2]
        with HistoryStorage.open(path, batch_delay=0.001) as history:
            for n in range(300):
                history.add(f"{name} prompt {n}", "/" + name)
                if n % 50 == 0:
                    history.flush()
    """)
    children = [subprocess.Popen([sys.executable, "-c", script, name, str(db_path)], cwd=REPO,
                                 stderr=subprocess.PIPE, text=True) for name in ("left", "right")]
    for child in children:
        _, err = child.communicate(timeout=60)
        assert child.returncode == 0, err
    prompts = [row[1] for row in rows_of(db_path)]
    for name in ("left", "right"):
        assert [p for p in prompts if p.startswith(name)] == [f"{name} prompt {n}" for n in range(300)]
    assert len({row[0] for row in rows_of(db_path)}) == 600
    fts_integrity_ok(db_path)
    with HistoryStorage.open(db_path) as history:
        assert len(history.search("prompt", limit=1000)) == 600


# -- write failures -------------------------------------------------------------------------------------

def test_a_locked_database_is_reported_and_nothing_is_lost(db_path: Path, caplog) -> None:
    history = HistoryStorage.open(db_path, batch_delay=0, busy_timeout=0.05)
    blocker = sqlite3.connect(db_path, isolation_level=None)
    blocker.execute("BEGIN IMMEDIATE")
    try:
        with caplog.at_level(logging.ERROR, logger="sessdex.catalog.history.storage"):
            history.add("first")
            with pytest.raises(HistoryWriteError, match="1 prompt"):
                history.flush()
            with pytest.raises(HistoryWriteError):
                history.flush()  # still locked: still reported
        assert len([r for r in caplog.records if "could not write" in r.getMessage()]) == 1
    finally:
        blocker.execute("ROLLBACK")
        blocker.close()
    history.add("second")
    history.close()
    assert [row[1] for row in rows_of(db_path)] == ["first", "second"]


def test_the_next_add_reports_a_background_failure(db_path: Path) -> None:
    history = HistoryStorage.open(db_path, batch_delay=0, busy_timeout=0.05)
    blocker = sqlite3.connect(db_path, isolation_level=None)
    blocker.execute("BEGIN IMMEDIATE")
    try:
        history.add("first")
        for _ in range(500):  # wait until the writer has tried and failed
            if history._writer._failures:
                break
            threading.Event().wait(0.01)
        with pytest.raises(HistoryWriteError, match="could not write"):
            history.add("second")  # queued all the same
    finally:
        blocker.execute("ROLLBACK")
        blocker.close()
    history.close()
    assert [row[1] for row in rows_of(db_path)] == ["first", "second"]


def test_a_prompt_that_can_never_be_written_is_reported_at_close(db_path: Path) -> None:
    HistoryStorage.open(db_path).close()
    connection = sqlite3.connect(db_path)
    connection.execute("CREATE TRIGGER refuse BEFORE INSERT ON history WHEN new.prompt = 'poison' "
                       "BEGIN SELECT RAISE(ABORT, 'refused'); END")
    connection.close()
    history = HistoryStorage.open(db_path, batch_delay=3600)
    history.add("poison")
    with pytest.raises(HistoryWriteError, match=r"refused \(1 prompt\(s\) still queued\)"):
        history.close()
    assert history.closed


# -- recent and search ----------------------------------------------------------------------------------

@pytest.fixture
def sample(history: HistoryStorage, clock: Clock) -> HistoryStorage:
    add_all(history, clock, [
        ("git commit -m 'fix'  \r\n  second line", "/home/u/proj"),
        ("run the tests", "/home/u/proj"),
        ("git commit -m 'fix'\n  second line", "/home/u/other"),
        ("refactor commitment logic", None),
        ("École: traduire le résumé", "/home/u/fr"),
        ("गिट कमिट हिंदी में", "/home/u/hi"),
        ("line one\r\nline two", None),
    ])
    return history


def test_recent_is_newest_first_and_limits(sample: HistoryStorage) -> None:
    assert [e.id for e in sample.recent(3)] == [7, 6, 5]
    assert sample.recent(0) == [] and sample.recent(-5) == []
    assert len(sample.recent(10**30)) == 7


def test_search_prefix_and_all_terms_required(sample: HistoryStorage) -> None:
    assert [e.id for e in sample.search("git com")] == [3, 1]
    assert [e.id for e in sample.search("commit")] == [4, 3, 1]
    assert [e.id for e in sample.search("RUN tests")] == [2]
    assert [e.id for e in sample.search("tests run")] == [2]
    assert [e.id for e in sample.search("commit", limit=1)] == [4]
    assert sample.search("run zebra") == []


def test_search_folds_case_and_diacritics_and_splits_on_punctuation(sample: HistoryStorage) -> None:
    assert [e.id for e in sample.search("ecole resume")] == [5]
    assert [e.id for e in sample.search("ÉCOLE")] == [5]
    assert [e.id for e in sample.search("line-two")] == [7]
    assert [e.id for e in sample.search("कमिट")] == [6]


def test_search_by_cwd(sample: HistoryStorage) -> None:
    assert [e.id for e in sample.search("commit", cwd="/home/u/proj")] == [1]
    assert sample.search("commit", cwd="/nowhere") == []


def test_snippets_highlight_the_matched_words(sample: HistoryStorage) -> None:
    hit = sample.search("git com")[0]
    assert hit.snippet == "git commit -m 'fix'   second line"
    assert [hit.snippet[a:b] for a, b in hit.highlights] == ["git", "commit"]
    assert hit.to_json()["highlights"] == [[0, 3], [4, 10]]


def test_substring_fallback_finds_words_inside_words(sample: HistoryStorage) -> None:
    hits = sample.search("mit")
    assert [e.id for e in hits] == [4, 3, 1]
    assert [hits[0].snippet[a:b] for a, b in hits[0].highlights] == ["mit"]
    assert sample.search("mit", substring_fallback=False) == []
    assert [e.id for e in sample.search("MIT ment")] == [4]


def test_empty_queries_and_limits(sample: HistoryStorage) -> None:
    assert sample.search("   ") == []
    assert sample.search("commit", limit=0) == []
    assert sample.search("commit", limit=-1) == []


@pytest.mark.parametrize("query", HOSTILE_QUERIES, ids=range(len(HOSTILE_QUERIES)))
def test_hostile_queries_never_raise(sample: HistoryStorage, query: str) -> None:
    for fallback in (True, False):
        hits = sample.search(query, substring_fallback=fallback)
        assert all(hit.id in range(1, 8) for hit in hits)


def test_ascii_query_with_fts_operators_is_plain_words(sample: HistoryStorage) -> None:
    assert [e.id for e in sample.search('"run" AND (tests')] == []  # "and" is a required word here
    assert [e.id for e in sample.search('run* "tests"')] == [2]


# -- the search planner against a brute-force FTS5 query ----------------------------------------------

WORDS = ["commit", "comment", "common", "run", "runner", "test", "tests", "École", "école", "ecole", "résumé",
         "Straße", "中文", "हिंदी", "emoji🎉", "fix-up", "a", "the", "x_y", "100%"]


def reference_search(connection: sqlite3.Connection, query: str, limit: int, cwd: str | None) -> list[int]:
    """Independent answer: FTS5 itself tokenizes each word of the query; each a phrase, last token a prefix."""
    scratch = sqlite3.connect(":memory:")
    scratch.execute("CREATE VIRTUAL TABLE q USING fts5(t)")
    scratch.execute("CREATE VIRTUAL TABLE v USING fts5vocab(q, 'instance')")
    phrases = []
    for word in query.split():
        scratch.execute("DELETE FROM q")
        scratch.execute("INSERT INTO q(rowid, t) VALUES (1, ?)", (word,))
        tokens = [row[0] for row in scratch.execute("SELECT term FROM v ORDER BY offset")]
        if tokens:
            phrases.append(" ".join(tokens))
    scratch.close()
    if not phrases:
        return []
    match = " AND ".join('"' + phrase.replace('"', '""') + '"*' for phrase in phrases)
    rows = connection.execute(
        "SELECT h.id, h.cwd FROM history h WHERE h.id IN (SELECT rowid FROM history_fts WHERE history_fts MATCH ?) "
        "ORDER BY h.created_at DESC, h.id DESC", (match,)).fetchall()
    return [row_id for row_id, row_cwd in rows if cwd is None or row_cwd == cwd][:limit]


prompt_strategy = st.lists(st.sampled_from(WORDS), min_size=1, max_size=6).map(" ".join)
query_strategy = st.lists(st.sampled_from(WORDS).flatmap(lambda w: st.integers(1, len(w)).map(lambda n: w[:n])),
                          min_size=1, max_size=3).map(" ".join)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rows=st.lists(st.tuples(prompt_strategy, st.integers(0, 40), st.sampled_from([None, "/a", "/b"])),
                     min_size=1, max_size=60),
       query=query_strategy, limit=st.integers(1, 8), cwd=st.sampled_from([None, "/a"]),
       scan_budget=st.integers(0, 40), bound_check=st.booleans())
def test_planner_gives_exactly_the_fts5_answer(rows, query, limit, cwd, scan_budget, bound_check) -> None:
    # created_at is random, so ids are not in time order (as after an import): the stop bound must hold.
    connection = sqlite3.connect(":memory:", isolation_level=None)
    connection.executescript(AGENT_DDL)
    connection.executemany("INSERT INTO history (prompt, created_at, cwd) VALUES (?, ?, ?)", rows)
    scratch = SearchScratch()
    try:
        with mock.patch.object(history_search, "_check_pays", lambda *args: bound_check):
            hits = search_prompts(connection, scratch, query, limit, cwd, substring_fallback=False,
                                  scan_budget=scan_budget)
        assert [hit.id for hit in hits] == reference_search(connection, query, limit, cwd)
    finally:
        scratch.close()
        connection.close()


@settings(max_examples=300, deadline=None)
@given(prompt=st.text(alphabet=st.characters(max_codepoint=127), max_size=40),
       query=st.text(alphabet=st.characters(max_codepoint=127), min_size=1, max_size=12))
def test_python_ascii_test_agrees_with_fts5(prompt: str, query: str) -> None:
    scratch = SearchScratch()
    try:
        terms = scratch.phrases(query)
        if terms:
            expected = scratch.matching([(1, prompt)], history_search.fts_match_expression(terms)) == {1}
            assert history_search._TermTests(terms).all_match(prompt.lower()) == expected
    finally:
        scratch.close()


SUBSTRING_WORDS = ["Commit", "commitment", "100%", "50_50", "back\\slash", "a%b", "naïve", "中文", "x"]


def reference_substring(rows: list[tuple], words: list[str], limit: int, cwd: str | None) -> list[int]:
    """Brute force: every word inside the prompt, ASCII case-insensitively; newest first."""
    lower = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")
    hits = [(created_at, row_id) for row_id, (prompt, created_at, row_cwd) in enumerate(rows, start=1)
            if (cwd is None or row_cwd == cwd) and all(w.translate(lower) in prompt.translate(lower) for w in words)]
    return [row_id for _, row_id in sorted(hits, reverse=True)][:limit]


@settings(max_examples=150, deadline=None)
@given(rows=st.lists(st.tuples(st.lists(st.sampled_from(SUBSTRING_WORDS), min_size=1, max_size=4).map(" ".join),
                               st.integers(0, 20), st.sampled_from([None, "/a"])), min_size=1, max_size=40),
       words=st.lists(st.sampled_from(SUBSTRING_WORDS).flatmap(
           lambda w: st.tuples(st.integers(0, len(w) - 1), st.integers(1, len(w))).map(lambda ab: w[ab[0]:ab[0] + ab[1]])),
           min_size=1, max_size=3),
       limit=st.integers(1, 6), cwd=st.sampled_from([None, "/a"]), window=st.integers(1, 50))
def test_substring_fallback_matches_brute_force(rows, words, limit, cwd, window) -> None:
    connection = sqlite3.connect(":memory:", isolation_level=None)
    connection.executescript(AGENT_DDL)
    connection.executemany("INSERT INTO history (prompt, created_at, cwd) VALUES (?, ?, ?)", rows)
    try:
        with mock.patch.object(history_search, "_SUBSTRING_WINDOW_ROWS", window):
            hits = history_search._substring_search(connection, words, limit, cwd)
        assert [hit.id for hit in hits] == reference_substring(rows, [w for w in words if w], limit, cwd)
    finally:
        connection.close()


# -- import ---------------------------------------------------------------------------------------------

def test_import_is_idempotent_and_leaves_the_repeat_cache_alone(history: HistoryStorage, clock: Clock,
                                                                db_path: Path) -> None:
    add_all(history, clock, [("already typed", "/p")])
    stamp = int(clock.now)
    imported = [ImportedPrompt("old prompt", "/p", 1_600_000_000), ImportedPrompt("  older prompt ", "/q", 1_500_000_000),
                ImportedPrompt("already typed", "/p", stamp - 3),  # the agent's own row, a moment apart
                ImportedPrompt("", "/p", 1_500_000_000)]
    assert history.import_prompts(imported) == 2
    assert history.import_prompts(imported) == 0
    assert [e.prompt for e in history.recent()] == ["already typed", "old prompt", "older prompt"]
    history.add("already typed", "/p")  # still the last thing typed: dropped
    history.flush()
    assert len(rows_of(db_path)) == 3
    assert [e.prompt for e in history.search("prompt")] == ["old prompt", "older prompt"]
