"""File-scan discovery: list(), list_all(), get_recent_sessions(), find_most_recent_session()."""

from __future__ import annotations

import time
from datetime import UTC, datetime
from pathlib import Path

import pytest

from sessdex.core.discovery import (
    find_most_recent_session,
    get_recent_sessions,
    list_all_sessions,
    list_sessions,
    sanitize_display_name,
    time_ago,
    truncate_name,
)
from tests.core.sessiontree import (
    BASE_MS,
    assistant,
    conversation,
    header,
    jsonl,
    make_tree,
    message,
    user,
    write_file,
)

DAY_MS = 86_400_000


@pytest.fixture
def tree(tmp_path: Path):
    return make_tree(tmp_path)


def ids(infos) -> list[str]:
    return [info.id for info in infos]


# -- list() ----------------------------------------------------------------------------------------

def test_list_returns_session_info_fields(tree) -> None:
    proj = tree.project("proj")
    path = tree.session(proj, "s1", [user("  first q "), assistant("the answer"), user("second", "u0000002")],
                        head=header("s1", proj, title="My title", parentSession="p0"), mtime_ms=BASE_MS + DAY_MS)
    [info] = list_sessions(proj, paths=tree.paths)
    assert info.path == path
    assert (info.id, info.cwd, info.title) == ("s1", str(proj), "My title")
    assert info.message_count == 3
    assert info.first_message == "  first q "
    assert info.all_messages_text == "  first q  the answer second"
    assert info.created == datetime(2025, 1, 1, tzinfo=UTC)
    assert info.modified == datetime(2025, 1, 2, tzinfo=UTC)
    assert info.to_agent_json()["messageCount"] == 3


def test_list_is_newest_modified_first(tree) -> None:
    proj = tree.project("proj")
    for number, offset in (("a", 1), ("b", 3), ("c", 2)):
        tree.session(proj, number, mtime_ms=BASE_MS + offset * DAY_MS)
    assert ids(list_sessions(proj, paths=tree.paths)) == ["b", "c", "a"]


def test_list_leaves_out_zero_message_sessions_unless_asked(tree) -> None:
    proj = tree.project("proj")
    tree.session(proj, "full", mtime_ms=BASE_MS)
    tree.session(proj, "header-only", [], mtime_ms=BASE_MS + DAY_MS)
    tree.session(proj, "metadata", [{"type": "model_change", "id": "m", "parentId": None, "model": "a/b"}])
    assert ids(list_sessions(proj, paths=tree.paths)) == ["full"]
    assert sorted(ids(list_sessions(proj, paths=tree.paths, include_empty=True))) == ["full", "header-only", "metadata"]
    assert ids(list_all_sessions(paths=tree.paths)) == ["full"]


def test_title_falls_back_to_latest_compaction_short_summary(tree) -> None:
    proj = tree.project("proj")
    compactions = [{"type": "compaction", "id": f"c{n}", "parentId": None, "summary": "s", "shortSummary": text}
                   for n, text in enumerate(["old recap", "new recap"])]
    tree.session(proj, "s1", conversation("q") + compactions)
    tree.session(proj, "s2", conversation("q"))
    titles = {info.id: info.title for info in list_sessions(proj, paths=tree.paths)}
    assert titles == {"s1": "new recap", "s2": None}


def test_title_line_wins_over_header_title(tree) -> None:
    proj = tree.project("proj")
    tree.session(proj, "s1", head=header("s1", proj, title="header"), title_line={"type": "title", "title": "slot"})
    assert list_sessions(proj, paths=tree.paths)[0].title == "slot"


def test_first_message_is_no_messages_when_no_user_text(tree) -> None:
    proj = tree.project("proj")
    tree.session(proj, "s1", [assistant("only me", parent=None)])
    [info] = list_sessions(proj, paths=tree.paths)
    assert (info.message_count, info.first_message, info.all_messages_text) == (1, "(no messages)", "only me")


def test_list_reads_both_project_folder_schemes(tmp_path: Path) -> None:
    for naming in ("documented", "agent"):
        tree = make_tree(tmp_path / naming, naming)
        proj = tree.project("proj")
        tree.session(proj, "doc", scheme="documented")
        tree.session(proj, "agent", scheme="agent")
        assert tree.project_dir(proj, "documented") != tree.project_dir(proj, "agent")
        assert sorted(ids(list_sessions(proj, paths=tree.paths))) == ["agent", "doc"]


def test_list_with_session_dir_reads_only_that_folder(tree) -> None:
    proj = tree.project("proj")
    tree.session(proj, "in-project")
    custom = tree.root / "custom"
    write_file(custom / "x_custom.jsonl", jsonl([header("custom", proj), *conversation("q")]))
    assert ids(list_sessions(proj, custom, paths=tree.paths)) == ["custom"]
    assert ids(list_sessions(proj, paths=tree.paths)) == ["in-project"]


def test_list_does_not_include_other_projects(tree) -> None:
    tree.session(tree.project("one"), "s-one")
    tree.session(tree.project("two"), "s-two")
    assert ids(list_sessions(tree.home / "one", paths=tree.paths)) == ["s-one"]


def test_list_all_walks_every_folder_including_nested(tree) -> None:
    tree.session(tree.project("one"), "s-one", mtime_ms=BASE_MS + 3 * DAY_MS)
    tree.session(tree.project("two"), "s-two", scheme="agent", mtime_ms=BASE_MS + 2 * DAY_MS)
    nested = tree.paths.sessions_root / "deep" / "nested" / "2025_s-nested.jsonl"
    write_file(nested, jsonl([header("s-nested", "/elsewhere"), *conversation("q")]), BASE_MS + DAY_MS)
    write_file(tree.paths.sessions_root / "notes.txt", b"not a session")
    assert ids(list_all_sessions(paths=tree.paths)) == ["s-one", "s-two", "s-nested"]


def test_list_all_of_missing_root_is_empty(tree) -> None:
    assert list_all_sessions(paths=tree.paths) == []
    assert list_sessions(tree.home / "nowhere", paths=tree.paths) == []


@pytest.mark.parametrize("content", [
    b"",
    b"\x00\xff\xfe binary garbage \x89PNG\n",
    jsonl([{"type": "session", "id": 1234, "cwd": "/p"}, user("q")]),
    jsonl([{"type": "message", "id": "x"}, header("late", "/p"), user("q")]),
    jsonl([[1, 2], header("arr", "/p"), user("q")]),
    b'{"type":"session","id":"torn","cwd":"/p"',
])
def test_files_without_a_valid_header_are_listed_nowhere(tree, content: bytes) -> None:
    proj = tree.project("proj")
    tree.session(proj, "good", mtime_ms=BASE_MS)
    broken = write_file(tree.project_dir(proj) / "2025_broken.jsonl", content, BASE_MS + DAY_MS)
    assert ids(list_sessions(proj, paths=tree.paths, include_empty=True)) == ["good"]
    assert ids(list_all_sessions(paths=tree.paths, include_empty=True)) == ["good"]
    assert [item.session_id for item in get_recent_sessions(broken.parent, 10)] == ["good"]
    assert find_most_recent_session(broken.parent) == tree.project_dir(proj) / "2025-01-01T00-00-00-000Z_good.jsonl"


def test_non_object_records_and_garbage_lines_do_not_hide_a_session(tree) -> None:
    proj = tree.project("proj")
    body = (jsonl([header("s1", proj), user("good 1")]) + b"{not json\n42\nnull\n[1]\n"
            + jsonl([assistant("good 2", parent="u0000001")]) + b'{"type":"message","id":"torn"')
    write_file(tree.project_dir(proj) / "s1.jsonl", body)
    [info] = list_sessions(proj, paths=tree.paths)
    assert (info.message_count, info.all_messages_text) == (2, "good 1 good 2")


def test_only_jsonl_files_are_sessions(tree) -> None:
    proj = tree.project("proj")
    good = tree.session(proj, "good", mtime_ms=BASE_MS)
    folder = good.parent
    (folder / "folder.jsonl").mkdir()
    (folder / "dangling.jsonl").symlink_to(folder / "missing")
    moved_aside = write_file(folder / f"{good.name}.corrupt-2025-01-02T00-00-00-000Z",
                             jsonl([header("aside", proj), *conversation("q")]), BASE_MS + DAY_MS)
    write_file(folder / "notes.txt", moved_aside.read_bytes(), BASE_MS + DAY_MS)
    assert ids(list_sessions(proj, paths=tree.paths)) == ["good"]
    assert ids(list_all_sessions(paths=tree.paths)) == ["good"]
    assert [item.session_id for item in get_recent_sessions(folder, 10)] == ["good"]
    assert find_most_recent_session(folder) == good


# -- get_recent_sessions() -------------------------------------------------------------------------

def recent_names(folder: Path, limit: int | None = 10) -> list[str]:
    return [item.full_name for item in get_recent_sessions(folder, limit)]


def test_recent_name_priority_title_prompt_id_file_name(tree) -> None:
    proj = tree.project("proj")
    folder = tree.project_dir(proj)
    tree.session(proj, "t", head=header("t", proj, title="The title"), mtime_ms=BASE_MS + 6)
    tree.session(proj, "p", [user("the prompt"), assistant("a")], mtime_ms=BASE_MS + 5)
    tree.session(proj, "only-assistant", [assistant("reply", parent=None)], mtime_ms=BASE_MS + 4)
    tree.session(proj, "empty", [], mtime_ms=BASE_MS + 3)
    tree.session(proj, "blank-title", [user("   ")], head=header("blank-title", proj, title=" \n "),
                 mtime_ms=BASE_MS + 2)
    write_file(folder / "2025_blank-id.jsonl", jsonl([header("\x01", proj)]), BASE_MS + 1)
    write_file(folder / "2025_no-id.jsonl", jsonl([header("", proj)]), BASE_MS + 1)  # no session at all
    assert recent_names(folder) == ["The title", "the prompt", "only-assistant", "empty", "blank-title",
                                    "2025_blank-id"]


def test_recent_names_are_cleaned_and_cut_to_40_characters(tree) -> None:
    proj = tree.project("proj")
    long_prompt = "x" * 45
    tree.session(proj, "a", head=header("a", proj, title="  Multi\nline title  "), mtime_ms=BASE_MS + 3)
    tree.session(proj, "b", [user("\tbell\x07 and\x1b esc\r\nnext line")], mtime_ms=BASE_MS + 2)
    tree.session(proj, "c", [user(long_prompt)], mtime_ms=BASE_MS + 1)
    items = get_recent_sessions(tree.project_dir(proj), 10)
    assert [item.full_name for item in items] == ["Multi", "bell  and  esc", long_prompt]
    assert items[2].name == "x" * 39 + "…"
    assert items[0].name == "Multi"


def test_recent_reads_only_the_first_4_kb(tree) -> None:
    proj = tree.project("proj")
    padding = {"type": "custom", "id": "pad", "parentId": None, "customType": "x", "data": "p" * 4200}
    tree.session(proj, "late-prompt", [padding, user("too far")])
    tree.session(proj, "big-prompt", [user("BIG " + "q" * 5000)])
    names = {item.session_id: item.full_name for item in get_recent_sessions(tree.project_dir(proj), 10)}
    assert names == {"late-prompt": "late-prompt", "big-prompt": "big-prompt"}
    # list() reads whole files and finds both prompts
    firsts = {info.id: info.first_message[:7] for info in list_sessions(proj, paths=tree.paths)}
    assert firsts == {"late-prompt": "too far", "big-prompt": "BIG qqq"}


def test_recent_is_newest_first_limited_and_defaults_to_three(tree) -> None:
    proj = tree.project("proj")
    for offset in range(5):
        tree.session(proj, f"s{offset}", mtime_ms=BASE_MS + offset * 1000)
    folder = tree.project_dir(proj)
    assert [item.session_id for item in get_recent_sessions(folder, 2)] == ["s4", "s3"]
    assert [item.session_id for item in get_recent_sessions(folder)] == ["s4", "s3", "s2"]
    assert [item.session_id for item in get_recent_sessions(folder, None)] == ["s4", "s3", "s2"]
    assert get_recent_sessions(tree.root / "missing") == []


def test_recent_agent_json_shape(tree) -> None:
    proj = tree.project("proj")
    path = tree.session(proj, "s1", mtime_ms=BASE_MS)
    [item] = get_recent_sessions(tree.project_dir(proj), 5, now_ms=BASE_MS + 5 * 60_000)
    assert item.to_agent_json() == {"path": str(path), "mtime": BASE_MS, "fullName": "question of s1",
                                    "name": "question of s1", "timeAgo": "5m ago"}


def test_recent_time_ago_is_computed_when_read(tree) -> None:
    proj = tree.project("proj")
    tree.session(proj, "s1", mtime_ms=int(time.time() * 1000) - 2 * 3_600_000)
    [item] = get_recent_sessions(tree.project_dir(proj), 1)
    assert item.time_ago == "2h ago"


@pytest.mark.parametrize(("elapsed_ms", "expected"), [
    (-5_000, "just now"), (0, "just now"), (59_999, "just now"), (60_000, "1m ago"), (59 * 60_000, "59m ago"),
    (3_600_000, "1h ago"), (23 * 3_600_000 + 3_599_999, "23h ago"), (DAY_MS, "1d ago"), (7 * DAY_MS - 1, "6d ago"),
])
def test_time_ago_buckets(elapsed_ms: int, expected: str) -> None:
    assert time_ago(BASE_MS, BASE_MS + elapsed_ms) == expected


def test_time_ago_after_a_week_is_the_local_date(monkeypatch) -> None:
    monkeypatch.setenv("TZ", "UTC")
    time.tzset()
    try:
        assert time_ago(BASE_MS + 12 * 3_600_000, BASE_MS + 40 * DAY_MS) == "1/1/2025"
        assert time_ago(BASE_MS, BASE_MS + 7 * DAY_MS) == "1/1/2025"
    finally:
        monkeypatch.undo()
        time.tzset()


def test_sanitize_and_truncate_helpers() -> None:
    assert sanitize_display_name("  a\u2028b") == "a"
    assert sanitize_display_name("\x00\x01") == ""
    assert truncate_name("y" * 40) == "y" * 40
    assert truncate_name("y" * 41) == "y" * 39 + "…"


# -- find_most_recent_session() --------------------------------------------------------------------

def test_most_recent_is_newest_by_mtime_even_without_messages(tree) -> None:
    proj = tree.project("proj")
    tree.session(proj, "old", mtime_ms=BASE_MS)
    newest = tree.session(proj, "empty-but-newest", [], mtime_ms=BASE_MS + DAY_MS)
    assert find_most_recent_session(tree.project_dir(proj)) == newest


def test_most_recent_of_missing_or_empty_folder_is_none(tree) -> None:
    assert find_most_recent_session(tree.root / "missing") is None
    (tree.root / "empty").mkdir()
    assert find_most_recent_session(tree.root / "empty") is None


def test_tool_results_count_as_messages_but_add_no_text(tree) -> None:
    proj = tree.project("proj")
    tool_result = message("toolResult", [{"type": "text", "text": "secret output"}], "t0000001", "a0000001")
    tree.session(proj, "s1", conversation("q") + [tool_result])
    [info] = list_sessions(proj, paths=tree.paths)
    assert (info.message_count, info.all_messages_text) == (3, "q answer")
