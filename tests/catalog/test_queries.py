"""Catalog queries beyond parity: freshness without a watcher, trusting a live watcher, resume, search, laziness."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sessdex.catalog.queries.sessions import Catalog, fts_query
from sessdex.catalog.store.settings import Settings
from sessdex.core.errors import AmbiguousSessionError, CatalogError, SessionNotFoundError
from sessdex.core.paths import AgentPaths
from tests.catalog.catalog_support import (
    BASE_MS,
    append_bytes,
    assistant,
    header,
    jsonl,
    open_catalog_for,
    sandbox_paths,
    user,
    write_file,
)


@pytest.fixture
def paths(tmp_path: Path) -> AgentPaths:
    return sandbox_paths(tmp_path)


def project(paths: AgentPaths, name: str) -> str:
    folder = paths.home / name
    folder.mkdir(parents=True, exist_ok=True)
    return str(folder)


def session(paths: AgentPaths, cwd: str, session_id: str, *records, mtime_ms: int = BASE_MS, name: str | None = None) -> Path:
    folder = paths.project_session_dir(cwd)
    return write_file(folder / (name or f"{session_id}.jsonl"), jsonl([header(session_id, cwd), *records]), mtime_ms)


# -- the newest sessions (`recent`) ------------------------------------------------------------------------

@pytest.mark.parametrize("backend", ["auto", "sqlalchemy"])
def test_the_newest_sessions_keep_the_file_scan_order_when_mtimes_tie_as_milliseconds(paths: AgentPaths,
                                                                                        backend: str):
    # The file scan orders by mtime in ms as a float, then by path; SQL reads the newest by exact mtime_ns. Three
    # mtimes one nanosecond apart are one float: the oldest of them, first by path, is the second newest.
    cwd = project(paths, "proj")
    base_ns = 1_700_000_000_000_000_000
    assert base_ns / 1_000_000 == (base_ns + 2) / 1_000_000
    files = {}
    for name, mtime_ns in (("c-newest", base_ns + 10**9), ("y-tied", base_ns + 2), ("z-tied", base_ns + 1),
                           ("a-tied", base_ns), ("d-oldest", base_ns - 10**9)):
        files[name] = session(paths, cwd, f"{len(files) + 1:016d}", user(name), name=f"{name}.jsonl")
        os.utime(files[name], ns=(mtime_ns, mtime_ns))
    expected = [files[name] for name in ("c-newest", "a-tied", "y-tied", "z-tied", "d-oldest")]
    with open_catalog_for(paths, backend=backend) as catalog:
        assert [i.path for i in catalog.list_sessions(cwd, include_empty=True)] == expected
        for limit in range(1, 7):
            assert [i.path for i in catalog.list_sessions(cwd, include_empty=True, limit=limit)] == expected[:limit]


# -- freshness ------------------------------------------------------------------------------------------

def test_every_read_sees_changes_made_since_the_last_one(paths: AgentPaths):
    cwd = project(paths, "proj")
    path = session(paths, cwd, "1111000000000001", user("one"))
    with open_catalog_for(paths) as catalog:
        assert [i.message_count for i in catalog.list_sessions(cwd)] == [1]
        append_bytes(path, jsonl([assistant("two")]))
        assert [i.message_count for i in catalog.list_sessions(cwd)] == [2]
        other = session(paths, cwd, "1111000000000002", user("new"), mtime_ms=BASE_MS + 10**12)
        assert [i.path for i in catalog.list_sessions(cwd)] == [other, path]
        path.unlink()
        assert [i.path for i in catalog.list_all_sessions()] == [other]


def test_a_live_watcher_covering_the_scope_makes_reads_skip_the_stat_pass(paths: AgentPaths):
    cwd = project(paths, "proj")
    path = session(paths, cwd, "1111000000000001", user("one"))
    with open_catalog_for(paths) as catalog:
        assert catalog.list_sessions(cwd)[0].message_count == 1
        heartbeat = catalog.location.watcher_path
        heartbeat.write_text(f"{os.getpid()}\n{paths.sessions_root}\n", encoding="utf-8")
        append_bytes(path, jsonl([assistant("two")]))
        # The (pretend) watcher has not indexed the append yet: the read trusts it and does not scan.
        assert catalog.list_sessions(cwd)[0].message_count == 1
        os.utime(heartbeat, (0, 0))  # a heartbeat that went quiet is not trusted
        assert catalog.list_sessions(cwd)[0].message_count == 2
        append_bytes(path, jsonl([user("three", "u3")]))
        heartbeat.write_text(f"{os.getpid()}\n{paths.home / 'elsewhere'}\n", encoding="utf-8")
        assert catalog.list_sessions(cwd)[0].message_count == 3  # a watcher of another root does not count


def test_a_heartbeat_of_a_dead_process_is_ignored(paths: AgentPaths):
    cwd = project(paths, "proj")
    path = session(paths, cwd, "1111000000000001", user("one"))
    with open_catalog_for(paths) as catalog:
        catalog.list_sessions(cwd)
        catalog.location.watcher_path.write_text(f"{2**22 + 12345}\n{paths.sessions_root}\n", encoding="utf-8")
        append_bytes(path, jsonl([assistant("two")]))
        assert catalog.list_sessions(cwd)[0].message_count == 2


def test_all_messages_text_is_loaded_only_when_read_and_even_after_close(paths: AgentPaths):
    cwd = project(paths, "proj")
    session(paths, cwd, "1111000000000001", user("alpha"), assistant("beta"))
    catalog = open_catalog_for(paths)
    info = catalog.list_sessions(cwd)[0]
    assert "_all_messages_text" in info.__dict__ and info.__dict__["_all_messages_text"] is None
    catalog.close()
    assert info.all_messages_text == "alpha beta"


# -- the id width of listings --------------------------------------------------------------------------

def test_under_a_live_watcher_the_id_width_comes_from_the_catalog_not_from_walking_the_files(paths: AgentPaths,
                                                                                             monkeypatch):
    # Ids of two projects that share their first 15 characters (one session has no message: resume looks at it
    # too), and a file without a header whose name holds an id sharing 16 with one of them: 17 tell them apart.
    from sessdex.catalog.queries import session_ids

    here, there = project(paths, "here"), project(paths, "there")
    session(paths, here, "abcdefgh10000001", user("one"), name="2025-01-01T00-00-00-000Z_abcdefgh10000001.jsonl")
    session(paths, there, "abcdefgh20000001", user("two"), name="2025-01-01T00-00-01-000Z_abcdefgh20000001.jsonl")
    session(paths, there, "abcdefgh2000000x", name="2025-01-01T00-00-02-000Z_abcdefgh2000000x.jsonl")
    write_file(paths.project_session_dir(there) / "2025-01-01T00-00-03-000Z_abcdefgh10000001z.jsonl",
               jsonl([user("no header")]), BASE_MS)
    with open_catalog_for(paths) as catalog:
        catalog.list_all_sessions()
        walked = session_ids.resume_id_width(catalog, ["abcdefgh10000001"])
        assert walked == 17
        catalog.location.watcher_path.write_text(f"{os.getpid()}\n{paths.sessions_root}\n", encoding="utf-8")

        def no_walk(_root: str) -> list[str]:
            raise AssertionError("the session files were walked")

        monkeypatch.setattr(session_ids, "ids_from_file_names", no_walk)
        assert catalog.watched_id_width() == walked
        assert session_ids.resume_id_width(catalog, ["abcdefgh10000001"]) == walked


def test_without_a_watcher_of_the_whole_root_the_id_width_is_not_the_catalogs_one(paths: AgentPaths):
    # A listing refreshes only its project's folders: another project's files may be missing from the catalog.
    here = project(paths, "here")
    session(paths, here, "abcdefgh10000001", user("one"))
    with open_catalog_for(paths) as catalog:
        catalog.list_sessions(here)
        assert catalog.watched_id_width() is None
        catalog.location.watcher_path.write_text(f"{os.getpid()}\n{paths.project_session_dir(here)}\n",
                                                 encoding="utf-8")
        assert catalog.watched_id_width() is None
        catalog.location.watcher_path.write_text(f"{os.getpid()}\n{paths.sessions_root}\n", encoding="utf-8")
        assert catalog.watched_id_width() == 8  # one session, and a watcher of every project


# -- resume by id ---------------------------------------------------------------------------------------

def test_resume_lookup_reports_ambiguity_with_every_candidate(paths: AgentPaths):
    cwd = project(paths, "proj")
    session(paths, cwd, "abcd000000000001", user("one"), mtime_ms=BASE_MS)
    session(paths, cwd, "abcd000000000002", user("two"), mtime_ms=BASE_MS + 1)
    with open_catalog_for(paths) as catalog:
        with pytest.raises(AmbiguousSessionError) as error:
            catalog.find_session_by_id("abcd", cwd)
        assert [c.id for c in error.value.candidates] == ["abcd000000000002", "abcd000000000001"]
        assert "abcd000000000001" in str(error.value)
        assert catalog.find_session_by_id("abcd0000000000019"[:16], cwd).id == "abcd000000000001"
        with pytest.raises(SessionNotFoundError, match='Session "ffff" not found.'):
            catalog.find_session_by_id("ffff", cwd)


def test_resume_in_every_project_reads_the_id_range_not_every_row_of_the_root(paths: AgentPaths):
    # Unless the root range hides the path from the planner, SQLite walks the path range of a covering index: every row.
    from sessdex.catalog.queries import sessions as sessions_module

    here, there = project(paths, "here"), project(paths, "there")
    session(paths, there, "5555000000000001", user("elsewhere"))
    session(paths, there, "5556000000000001", user("another"))
    with open_catalog_for(paths) as catalog:
        catalog.list_all_sessions()
        reader = catalog._database().sqlite_reader()
        plan = reader.execute("EXPLAIN QUERY PLAN " + sessions_module.SQL["infos_by_id_under_root"],
                              {"machine": "m", "root_lo": "/", "root_hi": "/~", "id_lo": "5555", "id_hi": "5556",
                               "min_messages": 0}).fetchall()
        assert "ix_session_files_machine_session_id" in str([tuple(row) for row in plan])
        assert [info.id for info in catalog.sessions_with_id_prefix("5555", None)] == ["5555000000000001"]
        assert catalog.find_session_by_id("5556", here).id == "5556000000000001"


def test_resume_falls_back_to_every_project_and_finds_zero_message_sessions_by_full_id(paths: AgentPaths):
    here, there = project(paths, "here"), project(paths, "there")
    session(paths, there, "5555000000000001", user("elsewhere"))
    session(paths, here, "6666000000000001")
    with open_catalog_for(paths) as catalog:
        assert catalog.find_session_by_id("5555", here).cwd == there
        with pytest.raises(SessionNotFoundError):
            catalog.find_session_by_id("5555", here, paths.project_session_dir(here))  # a session dir pins the scope
        with pytest.raises(SessionNotFoundError):
            catalog.find_session_by_id("6666", here)  # a prefix skips sessions without messages
        assert catalog.find_session_by_id("6666000000000001", here).message_count == 0


# -- search ----------------------------------------------------------------------------------------------

def test_search_finds_titles_first_messages_and_any_message_with_highlights(paths: AgentPaths):
    cwd, other = project(paths, "proj"), project(paths, "other")
    write_file(paths.project_session_dir(cwd) / "t.jsonl",
               jsonl([header("1000000000000001", cwd, title="Refactor the parser"), user("hello")]), BASE_MS)
    session(paths, cwd, "1000000000000002", user("hello"), assistant("the flux capacitor needs 1.21 gigawatts"))
    session(paths, other, "1000000000000003", user("where is the flux capacitor?"))
    with open_catalog_for(paths) as catalog:
        [title_hit] = catalog.search("parser", cwd)
        assert (title_hit.session.id, title_hit.field) == ("1000000000000001", "title")
        assert "[parser]" in title_hit.snippet
        [message_hit] = catalog.search("capacitor gigawatts", cwd)
        assert (message_hit.session.id, message_hit.field) == ("1000000000000002", "message")
        assert "[capacitor]" in message_hit.snippet and "[gigawatts]" in message_hit.snippet
        assert {h.session.id for h in catalog.search("flux", None)} == {"1000000000000002", "1000000000000003"}
        assert [h.field for h in catalog.search("flux", other)] == ["first_message"]
        assert [h.session.id for h in catalog.search("capac", cwd)] == ["1000000000000002"]  # words are prefixes
        assert catalog.search("nothing-matches-this", None) == []


def test_search_returns_limit_sessions_however_many_messages_of_one_session_match(paths: AgentPaths):
    cwd = project(paths, "proj")
    # One session whose 300 messages all say "zeppelin" loudly, and three that say it once.
    loud = [assistant("zeppelin zeppelin zeppelin", f"a{number:07d}") for number in range(300)]
    session(paths, cwd, "1000000000000001", user("hello"), *loud)
    for number in range(2, 5):
        session(paths, cwd, f"100000000000000{number}", user("hello"), assistant("a zeppelin and a long sentence "
                                                                                 "about other things", "a0000001"))
    with open_catalog_for(paths) as catalog:
        hits = catalog.search("zeppelin", cwd, limit=3)
        assert len(hits) == 3 and hits[0].session.id == "1000000000000001"  # the best-ranked session first
        assert len({hit.session.id for hit in hits}) == 3
        assert all(hit.field == "message" and "[zeppelin]" in hit.snippet for hit in hits)
        assert len(catalog.search("zeppelin", cwd, limit=10)) == 4


def test_every_projects_search_ranks_in_the_index_first_and_skips_matches_out_of_scope(paths: AgentPaths):
    # Every project's search ranks title matches in the full-text index a page at a time and keeps those in scope:
    # here the best 60 matches (their titles say "orbit" the most) are sessions without a message, never listed,
    # so several pages are ranked; the answer is the join's (fts.SEARCH_SESSIONS), in its order.
    from sessdex.catalog.index.reconcile import root_range
    from sessdex.catalog.queries.sessions import _best_sessions_in_scope
    from sessdex.catalog.store import fts

    cwd = project(paths, "proj")
    folder = paths.project_session_dir(cwd)
    for number in range(60):
        write_file(folder / f"2{number:015d}.jsonl", jsonl([header(f"2{number:015d}", cwd, title="orbit orbit")]),
                   BASE_MS + number)
    for number in range(30):
        title = f"orbit {'and more words ' * (number % 4)}"
        write_file(folder / f"3{number:015d}.jsonl", jsonl([header(f"3{number:015d}", cwd, title=title),
                                                            user("hello")]), BASE_MS + number)
    with open_catalog_for(paths) as catalog:
        hits = catalog.search("orbit", None)
        assert len(hits) == 20 and all(hit.session.id.startswith("3") for hit in hits)
        reader = catalog.db.sqlite_reader()
        scope = {**root_range(catalog.sessions_root), "machine": catalog.machine}
        for limit in (1, 20, 40):
            joined = [(row["file_id"], row["score"]) for row in reader.execute(
                fts.SEARCH_SESSIONS.format(scope=fts.SCOPE_ROOT), {"query": '"orbit"*', "rows": limit, **scope})]
            ranked = [(row["file_id"], row["score"])
                      for row in _best_sessions_in_scope(reader, '"orbit"*', fts.SCOPE_ROOT, scope, limit)]
            assert ranked == joined and len(ranked) == min(limit, 30)


def test_search_sees_deleted_and_appended_sessions_at_once(paths: AgentPaths):
    cwd = project(paths, "proj")
    path = session(paths, cwd, "1000000000000001", user("hello"))
    with open_catalog_for(paths) as catalog:
        assert catalog.search("zebra", cwd) == []
        append_bytes(path, jsonl([assistant("a zebra appears")]))
        assert len(catalog.search("zebra", cwd)) == 1
        path.unlink()
        assert catalog.search("zebra", cwd) == []


@pytest.mark.parametrize("text, expected", [
    ("hello world", '"hello"* "world"*'),
    ('say "hi"', '"say"* """hi"""*'),
    ("a AND b OR NEAR(c)", '"a"* "AND"* "b"* "OR"* "NEAR(c)"*'),
    ("  ()  * - ", None),
])
def test_user_text_becomes_a_quoted_fts_query(text, expected):
    assert fts_query(text) == expected


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=st.text(max_size=40))
def test_no_search_input_is_an_fts_syntax_error(tmp_path_factory, text):
    paths = sandbox_paths(tmp_path_factory.getbasetemp() / "fts-fuzz")
    cwd = project(paths, "proj")
    if not paths.project_session_dir(cwd).exists():
        session(paths, cwd, "1000000000000001", user('quotes " and (parens) and * stars - AND OR NOT'))
    with open_catalog_for(paths) as catalog:
        catalog.search(text, None)


def test_search_needs_a_sqlite_catalog(paths: AgentPaths):
    cwd = project(paths, "proj")
    session(paths, cwd, "1000000000000001", user("hello"))
    with open_catalog_for(paths, backend="sqlalchemy") as catalog:
        assert [i.id for i in catalog.list_sessions(cwd)] == ["1000000000000001"]
        with pytest.raises(CatalogError, match="SQLite"):
            catalog.search("hello", cwd)


def test_catalog_from_settings_uses_the_catalog_option(paths: AgentPaths, tmp_path: Path):
    cwd = project(paths, "proj")
    session(paths, cwd, "1000000000000001", user("hello"))
    with Catalog.from_settings(Settings(catalog=str(tmp_path / "elsewhere.db"), paths=paths)) as catalog:
        assert [i.id for i in catalog.list_sessions(cwd)] == ["1000000000000001"]
        assert [r.session_id for r in catalog.picker_rows(cwd, None, all_projects=True)] == ["1000000000000001"]
    assert (tmp_path / "elsewhere.db").exists()
    assert not (paths.agent_dir / "catalog.db").exists()


def test_an_id_lookup_sees_new_files_and_changed_candidates_without_statting_the_rest(paths: AgentPaths):
    cwd = project(paths, "proj")
    candidate = session(paths, cwd, "abab000000000001")  # no messages yet: a prefix does not find it
    other = session(paths, cwd, "cdcd000000000001", user("other"))
    with open_catalog_for(paths) as catalog:
        catalog.list_sessions(cwd)
        append_bytes(candidate, jsonl([user("now it has one")]))
        append_bytes(other, jsonl([assistant("appended to a non-candidate")]))
        assert catalog.find_session_by_id("abab", cwd).message_count == 1
        fresh = session(paths, cwd, "efef000000000001", user("new file"))
        assert catalog.find_session_by_id("efef", cwd).path == fresh
        db = catalog.db
        assert db.fetchall("file_by_path", {"path": str(other)})[0]["message_count"] == 1  # not looked at
        assert catalog.list_sessions(cwd)[0].message_count in (1, 2)
        assert db.fetchall("file_by_path", {"path": str(other)})[0]["message_count"] == 2  # a listing stats all


def test_an_id_lookup_falls_back_to_the_full_pass_when_a_file_vanished(paths: AgentPaths):
    cwd = project(paths, "proj")
    first = session(paths, cwd, "abab000000000001", user("one"))
    second = session(paths, cwd, "cdcd000000000001", user("two"))
    with open_catalog_for(paths) as catalog:
        catalog.list_sessions(cwd)
        os.replace(first, second)  # a session renamed over another one: second now holds abab...
        assert catalog.find_session_by_id("abab", cwd).path == second
        with pytest.raises(SessionNotFoundError):
            catalog.find_session_by_id("cdcd", cwd)


def test_listing_rows_are_read_as_tuples_of_the_columns_the_statements_select() -> None:
    from sessdex.catalog.queries.session_infos import INFO_COLUMNS as _INFO_COLUMNS
    from sessdex.catalog.store.statements import INFO_COLUMNS

    assert _INFO_COLUMNS == INFO_COLUMNS


def test_the_library_search_bounds_any_query_and_takes_lone_surrogates(paths: AgentPaths):
    cwd = project(paths, "proj")
    session(paths, cwd, "1000000000000002", user("hello"), assistant("the flux capacitor needs 1.21 gigawatts"))
    with open_catalog_for(paths) as catalog:
        assert catalog.search("flux " * 200_000 + "capacitor", cwd)[0].session.id == "1000000000000002"
        assert catalog.search("x" * 1_000_000, cwd) == []
        assert catalog.search("capacitor \udc80", cwd)[0].session.id == "1000000000000002"
        assert catalog.search("\ud800", cwd) == []
