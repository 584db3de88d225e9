"""A PostgreSQL catalog answers every query as the SQLite catalog (and the file scan) does, on the same corpus.

Listings, id-prefix resume and recent sessions are compared field for field with the file scan (which the
SQLite catalog equals, see tests/catalog/test_parity.py), before and after the files change; search is
compared with the SQLite catalog's search: the same sessions, matched in the same field.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from gen_corpus import generate_corpus

from sessdex.catalog.queries.sessions import Catalog
from sessdex.catalog.store.location import resolve_location
from sessdex.core.paths import AgentPaths
from tests.catalog.catalog_support import BASE_MS, assistant, header, jsonl, user, write_file
from tests.catalog.test_parity import NOW_MS, _edge_cases, _mutate, assert_parity


def _corpus(root: Path) -> tuple[AgentPaths, list[str]]:
    paths = AgentPaths(agent_dir=root / "home" / ".xcsh" / "agent", home=root / "home", tmp_dir=Path("/tmp"))
    manifest = generate_corpus(paths.agent_dir, sessions=45, projects=4, total_bytes=1_500_000, seed=7,
                               home=paths.home, now=NOW_MS / 1000)
    cwds = sorted({project.cwd for project in manifest.projects})
    _edge_cases(paths, cwds[0])
    return paths, cwds


def test_postgres_catalog_queries_equal_file_scan_queries(tmp_path: Path, postgres_url: str):
    paths, cwds = _corpus(tmp_path)
    with Catalog(paths, resolve_location(paths.agent_dir, postgres_url), machine="laptop") as catalog:
        assert catalog.db.dialect == "postgresql"
        assert assert_parity(paths, catalog, cwds) > 50
        _mutate(paths, cwds[0])
        assert assert_parity(paths, catalog, cwds) > 50


def _search_answer(catalog: Catalog, text: str, cwd: str | None) -> list[tuple[str, str]]:
    return sorted((hit.session.id, hit.field) for hit in catalog.search(text, cwd, limit=1000))


SEARCH_WORDS = ["the", "migration", "database", "tie", "after", "nested deep", "symlink", "brand", "DATA",
                "foo.bar", "path/to", "zzzznotthere", "a", "1", "é", "don't", "(", "*", "AND OR NOT"]


def test_postgres_search_finds_what_sqlite_search_finds(tmp_path: Path, postgres_url: str):
    paths, cwds = _corpus(tmp_path)
    folder = paths.sessions_root / paths.project_dir_name(cwds[1])
    write_file(folder / "words.jsonl", jsonl([header("9999000000000001", cwds[1], title="Fix the foo.bar parser"),
                                              user("look at path/to/file.py and the Database"),
                                              assistant("don't panic: café migration")]), BASE_MS + 9)
    with (Catalog(paths, machine="laptop") as sqlite_catalog,
          Catalog(paths, resolve_location(paths.agent_dir, postgres_url), machine="laptop") as postgres_catalog):
        compared = 0
        for text in SEARCH_WORDS:
            for cwd in (None, cwds[0], cwds[1]):
                expected = _search_answer(sqlite_catalog, text, cwd)
                assert _search_answer(postgres_catalog, text, cwd) == expected, (text, cwd)
                compared += bool(expected)
        assert compared > 10
        hits = postgres_catalog.search("foo.bar pars", None, highlight=("<", ">"))
        assert [(hit.session.id, hit.field, hit.snippet) for hit in hits] == [
            ("9999000000000001", "title", "Fix the <foo>.<bar> <parser>")]
        hits = postgres_catalog.search("database", cwds[1], highlight=("<", ">"))
        assert ("9999000000000001", "first_message", "look at path/to/file.py and the <Database>") in [
            (hit.session.id, hit.field, hit.snippet) for hit in hits]


@pytest.mark.parametrize("text", ["", "   ", "()", "*", "'", "\\", '"'])
def test_postgres_search_of_nothing_searchable_is_empty(tmp_path: Path, postgres_url: str, text: str):
    paths, _ = _corpus(tmp_path)
    with Catalog(paths, resolve_location(paths.agent_dir, postgres_url)) as catalog:
        assert catalog.search(text, None) == []


SUBSTRINGS = ["arse", "oo.ba", "ATABAS", "ommi", "afé", "zzzznotthere", "ile.p", "ath/t"]


def test_the_substring_fallback_finds_the_same_sessions_on_both(tmp_path: Path, postgres_url: str):
    paths, cwds = _corpus(tmp_path)
    folder = paths.sessions_root / paths.project_dir_name(cwds[1])
    write_file(folder / "words.jsonl", jsonl([header("9999000000000001", cwds[1], title="Fix the foo.bar parser"),
                                              user("look at path/to/file.py and the Database"),
                                              assistant("don't commit: café migration")]), BASE_MS + 9)
    with (Catalog(paths, machine="laptop") as sqlite_catalog,
          Catalog(paths, resolve_location(paths.agent_dir, postgres_url), machine="laptop") as postgres_catalog):
        found = 0
        for text in SUBSTRINGS:
            for cwd in (None, cwds[1]):
                def answer(catalog: Catalog, text: str = text, cwd: str | None = cwd) -> list[tuple[str, str, str]]:
                    return sorted((hit.session.id, hit.field, hit.snippet)
                                  for hit in catalog.search(text, cwd, limit=1000, substring_fallback=True))
                assert sqlite_catalog.search(text, cwd) == postgres_catalog.search(text, cwd) == [], text
                expected = answer(sqlite_catalog)
                assert answer(postgres_catalog) == expected, (text, cwd)
                found += bool(expected)
        assert found >= 6
        hits = postgres_catalog.search("ommi", cwds[1], highlight=("<", ">"), substring_fallback=True)
        assert ("9999000000000001", "message", "don't c<ommi>t: café migration") in [
            (hit.session.id, hit.field, hit.snippet) for hit in hits]


def test_text_with_nul_characters_is_stored_with_a_replacement_character(tmp_path: Path, postgres_url: str):
    # PostgreSQL text cannot hold NUL; a session that has one in its messages is indexed all the same.
    paths = AgentPaths(agent_dir=tmp_path / "agent", home=tmp_path)
    project = tmp_path / "proj"
    write_file(paths.project_session_dir(project) / "nul.jsonl",
               jsonl([header("7aaa000000000001", project, title="nul\x00title"), user("before\x00after"),
                      assistant("plain")]), BASE_MS)
    with Catalog(paths, resolve_location(paths.agent_dir, postgres_url)) as catalog:
        [info] = catalog.list_sessions(project)
        assert (info.title, info.first_message) == ("nul\ufffdtitle", "before\ufffdafter")
        assert [hit.session.id for hit in catalog.search("after", project)] == ["7aaa000000000001"]
