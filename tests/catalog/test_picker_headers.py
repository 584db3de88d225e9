"""The picker's first screen on a catalog that holds nothing yet: the newest files, each read from its first 4 KB."""

from __future__ import annotations

from pathlib import Path

from sessdex.catalog.queries.picker_source import headers_first_screen
from sessdex.catalog.queries.source import PickerRow
from sessdex.core.discovery import list_all_sessions, list_sessions
from tests.core.sessiontree import BASE_MS, assistant, jsonl, make_tree, user, write_file


def _shown(row: PickerRow) -> tuple:
    return row.path, row.session_id, row.cwd, row.title, row.first_message, row.modified_ms


def test_the_newest_sessions_are_the_file_scans_first_rows_from_their_heads(tmp_path: Path) -> None:
    tree = make_tree(tmp_path)
    proj, other = tree.project("proj"), tree.project("other")
    for index in range(12):
        tree.session(proj if index % 3 else other, f"ab{index:014d}", [user(f"task {index}"), assistant("done")],
                     mtime_ms=BASE_MS + index * 1000)
    # The newest file is long: only its head is read, and it is still the first row.
    long_file = tree.session(proj, "cc00000000000001",
                             [user("long one"), *[assistant("x" * 2000, entry_id=f"a{n:07d}") for n in range(200)]],
                             mtime_ms=BASE_MS + 99_000)
    # No message within its head: not a row (the picker lists sessions with messages), still an id.
    tree.session(proj, "dd00000000000002", [], mtime_ms=BASE_MS + 98_000)
    # Not a session (no valid header), newer than all.
    write_file(tree.project_dir(proj) / "2025-01-01T00-00-00-000Z_ee00000000000003.jsonl",
               jsonl([user("no header")]), BASE_MS + 200_000)
    folder = str(tree.project_dir(proj))
    rows, ids = headers_first_screen([folder], recursive=False, limit=5)
    expected = [PickerRow.from_info(info) for info in list_sessions(proj, paths=tree.paths) if info.message_count][:5]
    assert [_shown(row) for row in rows] == [_shown(row) for row in expected]
    assert rows[0].path == str(long_file) and rows[0].message_count < 201  # counted within the head only
    assert len(ids) == 8 + 3 and "cc00000000000001" in ids
    every, all_ids = headers_first_screen([str(tree.paths.sessions_root)], recursive=True, limit=50)
    scan = [PickerRow.from_info(info) for info in list_all_sessions(paths=tree.paths) if info.message_count]
    assert [row.path for row in every] == [row.path for row in scan] and len(all_ids) == 12 + 3


def test_an_empty_folder_gives_an_empty_screen(tmp_path: Path) -> None:
    tree = make_tree(tmp_path)
    assert headers_first_screen([str(tree.project_dir(tree.project("none")))], recursive=False, limit=5) == ([], [])
