"""The catalog answers exactly as the file scan does, on a generated corpus holding every edge case.

Each query of core.discovery / core.resume is run both ways, through both catalog backends, before and
after the files change underneath (appends, a torn line, a shrink, a rename, a deletion, a new file).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from gen_corpus import generate_corpus

from sessdex.catalog.queries.sessions import Catalog
from sessdex.core import discovery, resume
from sessdex.core.errors import SessdexError
from sessdex.core.paths import AgentPaths
from tests.catalog.catalog_support import (
    BASE_MS,
    append_bytes,
    assistant,
    header,
    jsonl,
    open_catalog_for,
    recent_fields,
    session_fields,
    user,
    write_file,
)

NOW_MS = BASE_MS + 400 * 86_400_000


def _edge_cases(paths: AgentPaths, project: str) -> None:
    """Hand-made files the generator does not produce: ties, nesting, symlinks, big headers, odd names."""
    folder = paths.sessions_root / paths.project_dir_name(project)
    tie = BASE_MS + 5_000
    write_file(folder / "tie-b.jsonl", jsonl([header("aaaa000000000001", project), user("tie b")]), tie)
    write_file(folder / "tie-a.jsonl", jsonl([header("aaaa000000000002", project), user("tie a")]), tie)
    write_file(folder / "zero.jsonl", jsonl([header("bbbb000000000001", project, title="no messages yet")]), tie + 1)
    big_title = "T" * 5000  # the header does not fit in the 4 KB prefix: a valid session, absent from recent
    write_file(folder / "bigheader.jsonl", jsonl([header("cccc000000000001", project, title=big_title),
                                                  user("after a big header")]), tie + 2)
    write_file(folder / "titleline.jsonl", jsonl([{"type": "title", "title": "From the title line"},
                                                  header("cccc000000000002", project, title="header title"),
                                                  user("q"), assistant("a")]), tie + 3)
    write_file(folder / "torn.jsonl", jsonl([header("dddd000000000001", project), user("before torn")])
               + b'{"type":"message","id":"x1"', tie + 4)
    write_file(folder / "spanning.jsonl", jsonl([header("dddd000000000002", project)])
               + b'{"type":"message","id":"m1",\n"message":{"role":"user","content":"value spans lines"}}\n'
               + b'{"a":1} trailing\n' + jsonl([user("after")]), tie + 5)
    write_file(folder / "notes.txt", b"not a session", tie + 6)
    (folder / "folder.jsonl").mkdir(parents=True, exist_ok=True)
    write_file(paths.sessions_root / "deep" / "nested" / "n.jsonl",
               jsonl([header("eeee000000000001", project), user("nested deep")]), tie + 7)
    target = write_file(paths.agent_dir / "outside" / "linked-target.jsonl",
                        jsonl([header("ffff000000000001", project), user("through a symlink")]), tie + 8)
    os.symlink(target, folder / "link.jsonl")
    os.symlink(folder, paths.sessions_root / "symlinked-folder")  # not descended into, as os.walk does


def _outcome(function: Callable[[], Any]) -> Any:
    try:
        value = function()
    except SessdexError as exc:
        candidates = [session_fields(c) for c in getattr(exc, "candidates", [])]
        return ("error", type(exc).__name__, str(exc), candidates)
    return ("ok", session_fields(value))


def assert_parity(paths: AgentPaths, catalog: Catalog, cwds: list[str]) -> int:
    """Compare every query both ways; return how many comparisons were made."""
    compared = 0
    for include_empty in (False, True):
        assert [session_fields(i) for i in catalog.list_all_sessions(include_empty=include_empty)] == \
            [session_fields(i) for i in discovery.list_all_sessions(paths=paths, include_empty=include_empty)]
        compared += 1
    ids: set[str] = set()
    for cwd in cwds:
        for include_empty in (False, True):
            scanned = discovery.list_sessions(cwd, paths=paths, include_empty=include_empty)
            assert [session_fields(i) for i in catalog.list_sessions(cwd, include_empty=include_empty)] == \
                [session_fields(i) for i in scanned]
            ids.update(info.id for info in scanned)
            # `recent` builds only the sessions it prints (and reads about as many rows)
            for limit in (1, 2, 5):
                assert [session_fields(i) for i in catalog.list_sessions(cwd, include_empty=include_empty,
                                                                         limit=limit)] == \
                    [session_fields(i) for i in scanned[:limit]]
            compared += 1
        folders = discovery.project_session_dirs(cwd, None, paths)
        for limit in (1, 3, 1000):
            assert [recent_fields(r) for r in catalog.recent_sessions_in(folders, limit, now_ms=NOW_MS)] == \
                [recent_fields(r) for r in discovery.recent_sessions_in(folders, limit, now_ms=NOW_MS)]
            compared += 1
        for folder in folders:
            newest = discovery.find_most_recent_session(folder)
            assert catalog.most_recent_session_in([folder]) == newest
            # what `sessdex continue` prints, read without pathlib or the stored state
            assert catalog.most_recent_session_file([folder]) == (None if newest is None else str(newest))
            assert [recent_fields(r) for r in catalog.recent_sessions_in([folder], now_ms=NOW_MS)] == \
                [recent_fields(r) for r in discovery.get_recent_sessions(folder, now_ms=NOW_MS)]
            compared += 2
    # Prefixes of every length class: ambiguous (1-2 chars), usually unique (4), exact ids, and no match.
    sample = sorted(ids)[::max(1, len(ids) // 12)]
    probes = {session_id[:length] for session_id in sample for length in (1, 2, 4, 16)} | {"zzzz", "aaaa0000"}
    for cwd in cwds[:2]:
        for probe in sorted(probes):
            assert _outcome(lambda p=probe, c=cwd: catalog.find_session_by_id(p, c)) == \
                _outcome(lambda p=probe, c=cwd: resume.find_session_by_id(p, c, paths=paths)), probe
            compared += 1
    return compared


def _mutate(paths: AgentPaths, cwd: str) -> None:
    folder = paths.sessions_root / paths.project_dir_name(cwd)
    append_bytes(folder / "tie-a.jsonl", jsonl([assistant("appended answer"), user("second question", "u2")]))
    append_bytes(folder / "torn.jsonl", b',"message":{"role":"assistant","content":"completed"}}\n')
    (folder / "spanning.jsonl").write_bytes(jsonl([header("dddd000000000002", cwd)]))  # shrunk in place
    os.rename(folder / "tie-b.jsonl", folder / "renamed.jsonl")
    (folder / "zero.jsonl").unlink()
    write_file(folder / "brand-new.jsonl", jsonl([header("aaaa000000000009", cwd), user("brand new")]))
    append_bytes(folder / "titleline.jsonl", b"half a line")


@pytest.mark.parametrize("backend", ["auto", "sqlalchemy"])
def test_catalog_queries_equal_file_scan_queries(tmp_path: Path, backend: str):
    paths = AgentPaths(agent_dir=tmp_path / "home" / ".xcsh" / "agent", home=tmp_path / "home", tmp_dir=Path("/tmp"))
    manifest = generate_corpus(paths.agent_dir, sessions=45, projects=4, total_bytes=1_500_000, seed=7,
                               home=paths.home, now=NOW_MS / 1000)
    assert {s.kind for s in manifest.sessions} >= {"empty", "no_header", "invalid_header", "torn_tail",
                                                   "garbage_middle", "header_only", "legacy_v1"}
    cwds = sorted({project.cwd for project in manifest.projects})
    edge_project = cwds[0]
    _edge_cases(paths, edge_project)
    with open_catalog_for(paths, backend) as catalog:
        assert assert_parity(paths, catalog, cwds) > 50
        _mutate(paths, edge_project)
        assert_parity(paths, catalog, cwds)


def test_parity_with_the_agents_home_relative_folder_names(tmp_path: Path):
    paths = AgentPaths(agent_dir=tmp_path / "home" / ".xcsh" / "agent", home=tmp_path / "home",
                       tmp_dir=tmp_path / "tmp", naming="agent")
    project = str(tmp_path / "home" / "proj")
    write_file(paths.sessions_root / "-proj" / "a.jsonl", jsonl([header("1234000000000001", project), user("agent")]),
               BASE_MS)
    documented = paths.sessions_root / f"--{project.lstrip('/').replace('/', '-')}--"
    write_file(documented / "b.jsonl", jsonl([header("1234000000000002", project), user("documented")]), BASE_MS + 1)
    with open_catalog_for(paths) as catalog:
        assert [i.id for i in catalog.list_sessions(project)] == ["1234000000000002", "1234000000000001"]
        assert assert_parity(paths, catalog, [project]) > 0


def test_a_line_deeper_than_the_file_scan_reads_counts_alike_in_the_catalog(tmp_path: Path) -> None:
    """orjson reads 1,024 levels, core's parser fewer: the catalog must skip the same deep line the file scan skips."""
    paths = AgentPaths.from_env(tmp_path / "agent")
    folder = paths.project_session_dir("/p")
    folder.mkdir(parents=True)
    deep = "[" * 300 + "]" * 300
    lines = ['{"type":"session","version":3,"id":"aaaa000000000001","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/p"}',
             '{"type":"message","id":"m1","parentId":null,"timestamp":"2026-01-01T00:00:01.000Z",'
             '"message":{"role":"user","content":"first"}}',
             '{"type":"message","id":"m2","parentId":"m1","timestamp":"2026-01-01T00:00:02.000Z",'
             f'"message":{{"role":"user","content":"deep","extra":{deep}}}}}',
             '{"type":"message","id":"m3","parentId":"m1","timestamp":"2026-01-01T00:00:03.000Z",'
             '"message":{"role":"user","content":"third"}}']
    (folder / "2026-01-01T00-00-00-000Z_aaaa000000000001.jsonl").write_text("\n".join(lines) + "\n")
    scanned = discovery.list_sessions("/p", paths=paths)
    with Catalog(paths) as catalog:
        listed = catalog.list_sessions("/p")
    assert [info.message_count for info in scanned] == [2]
    assert [info.message_count for info in listed] == [info.message_count for info in scanned]
