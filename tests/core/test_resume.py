"""--resume resolution and sessdex's stricter rules."""

from __future__ import annotations

import os
from pathlib import Path

import orjson
import pytest

from sessdex.core.discovery import list_all_sessions, list_sessions, sessions_with_id_prefix
from sessdex.core.errors import (
    AmbiguousSessionError,
    ForkSourceNotFoundError,
    SessionInOtherProjectError,
    SessionNotFoundError,
    UsageError,
)
from sessdex.core.resume import ResumeResult, find_session_by_id, is_path_like, resolve_resume
from sessdex.core.summary import SessionInfo
from tests.core.sessiontree import BASE_MS, Tree, header, jsonl, make_tree, user, write_file


@pytest.fixture
def tree(tmp_path: Path) -> Tree:
    return make_tree(tmp_path)


class Recorder:
    """A confirm_fork callback answering `answer` and a fork_session callable, both recording their calls."""

    def __init__(self, answer: bool) -> None:
        self.answer = answer
        self.asked: list[SessionInfo] = []
        self.forked: list[tuple] = []

    def confirm(self, info: SessionInfo) -> bool:
        self.asked.append(info)
        return self.answer

    def fork(self, source: Path, cwd: str, session_dir: Path | None, paths) -> Path:
        self.forked.append((source, cwd, session_dir))
        return Path(cwd) / "forked.jsonl"


def resolve(tree: Tree, value: str, cwd: Path, recorder: Recorder | None = None, session_dir: Path | None = None
            ) -> ResumeResult:
    recorder = recorder or Recorder(answer=False)
    return resolve_resume(value, cwd, session_dir, paths=tree.paths, confirm_fork=recorder.confirm,
                          fork_session=recorder.fork)


# -- path values -------------------------------------------------------------------------------------

@pytest.mark.parametrize(("value", "expected"), [
    ("/abs/s.jsonl", True), ("rel/s", True), ("c:\\x\\s", True), ("s.jsonl", True), ("ab12", False),
    ("ab12.json", False),
])
def test_path_like_values(value: str, expected: bool) -> None:
    assert is_path_like(value) is expected


def test_path_values_are_opened_as_given_without_lookup(tree: Tree) -> None:
    proj = tree.project("proj")
    recorder = Recorder(answer=True)
    assert resolve(tree, "/some/where/x.jsonl", proj, recorder) == ResumeResult("open", Path("/some/where/x.jsonl"))
    assert resolve(tree, "sub/y.jsonl", proj).path == proj / "sub" / "y.jsonl"
    assert resolve(tree, "z.jsonl", proj).path == proj / "z.jsonl"
    assert recorder.asked == [] and recorder.forked == []


def test_empty_value_is_a_usage_error(tree: Tree) -> None:
    with pytest.raises(UsageError):
        resolve(tree, "", tree.project("proj"))


# -- id prefixes -------------------------------------------------------------------------------------

def test_unique_prefix_in_this_project_opens_it(tree: Tree) -> None:
    proj = tree.project("proj")
    path = tree.session(proj, "ab12cd34ef567890")
    tree.session(proj, "ff00000000000000")
    result = resolve(tree, "ab12", proj)
    assert (result.action, result.path, result.session.id) == ("open", path, "ab12cd34ef567890")


def test_session_in_either_naming_scheme_counts_as_this_project(tree: Tree) -> None:
    proj = tree.project("proj")
    path = tree.session(proj, "ab12cd34ef567890", scheme="agent")
    assert resolve(tree, "ab12", proj).path == path


def test_this_project_is_searched_before_other_projects(tree: Tree) -> None:
    proj, other = tree.project("proj"), tree.project("other")
    local = tree.session(proj, "ab1200000000000a", mtime_ms=BASE_MS)
    tree.session(other, "ab1200000000000b", mtime_ms=BASE_MS + 1000)
    recorder = Recorder(answer=True)
    assert resolve(tree, "ab12", proj, recorder).path == local
    assert recorder.asked == []


def test_match_in_another_project_is_forked_on_yes(tree: Tree) -> None:
    proj, other = tree.project("proj"), tree.project("other")
    source = tree.session(other, "cd34000000000000")
    recorder = Recorder(answer=True)
    result = resolve(tree, "cd34", proj, recorder)
    assert [info.id for info in recorder.asked] == ["cd34000000000000"]
    assert recorder.forked == [(source, str(proj), None)]
    assert (result.action, result.path, result.session.path) == ("fork", proj / "forked.jsonl", source)


def test_match_in_another_project_is_refused_on_no(tree: Tree) -> None:
    proj, other = tree.project("proj"), tree.project("other")
    tree.session(other, "cd34000000000000")
    recorder = Recorder(answer=False)
    with pytest.raises(SessionInOtherProjectError) as error:
        resolve(tree, "cd34", proj, recorder)
    assert str(error.value) == f'Session "cd34" is in another project ({other})'
    assert recorder.forked == []


def test_session_with_a_symlinked_cwd_is_not_another_project(tree: Tree) -> None:
    proj = tree.project("proj")
    link = tree.home / "alias"
    link.symlink_to(proj)
    tree.session(link, "ee00000000000000")  # recorded with the symlinked path; both names resolve alike
    recorder = Recorder(answer=False)
    assert resolve(tree, "ee00", proj, recorder).action == "open"
    assert recorder.asked == []


def test_no_match_anywhere_is_not_found(tree: Tree) -> None:
    proj = tree.project("proj")
    tree.session(proj, "ab12000000000000")
    with pytest.raises(SessionNotFoundError) as error:
        resolve(tree, "zz", proj)
    assert str(error.value) == 'Session "zz" not found.'


def test_session_dir_disables_the_search_in_other_projects(tree: Tree) -> None:
    proj, other = tree.project("proj"), tree.project("other")
    tree.session(other, "cd34000000000000")
    custom = tree.root / "custom"
    custom.mkdir()
    with pytest.raises(SessionNotFoundError):
        resolve(tree, "cd34", proj, Recorder(answer=True), session_dir=custom)


def test_session_dir_is_passed_to_the_fork(tree: Tree) -> None:
    proj, other = tree.project("proj"), tree.project("other")
    custom = tree.root / "custom"
    source = custom / "x.jsonl"
    source.parent.mkdir()
    source.write_bytes(tree.session(other, "cd34000000000000").read_bytes())
    recorder = Recorder(answer=True)
    assert resolve(tree, "cd34", proj, recorder, session_dir=custom).action == "fork"
    assert recorder.forked == [(source, str(proj), custom)]


# -- ambiguity and exact ids ----------------------------------------------------------------------

def test_ambiguous_prefix_in_this_project_lists_candidates(tree: Tree) -> None:
    proj = tree.project("proj")
    tree.session(proj, "ab12000000000001", mtime_ms=BASE_MS)
    tree.session(proj, "ab12000000000002", mtime_ms=BASE_MS + 1000)
    tree.session(proj, "cc00000000000000")
    with pytest.raises(AmbiguousSessionError) as error:
        resolve(tree, "ab12", proj)
    assert [info.id for info in error.value.candidates] == ["ab12000000000002", "ab12000000000001"]
    message = str(error.value)
    assert message.startswith('Session "ab12" is ambiguous: it matches 2 sessions:')
    assert "ab12000000000001" in message and "ab12000000000002" in message and str(proj) in message
    assert "question of ab12000000000002" in message


def test_ambiguous_message_shows_at_most_twenty_candidates(tree: Tree) -> None:
    proj = tree.project("proj")
    for number in range(25):
        tree.session(proj, f"ab12{number:012d}", mtime_ms=BASE_MS + number)
    with pytest.raises(AmbiguousSessionError) as error:
        resolve(tree, "ab12", proj)
    assert len(error.value.candidates) == 25
    lines = str(error.value).splitlines()
    assert len(lines) == 22 and lines[-1] == "  ... and 5 more; type more of the id"
    assert lines[1].startswith("  ab12000000000024")


def test_ambiguous_prefix_across_other_projects(tree: Tree) -> None:
    proj, one, two = tree.project("proj"), tree.project("one"), tree.project("two")
    tree.session(one, "ab12000000000001")
    tree.session(two, "ab12000000000002")
    recorder = Recorder(answer=True)
    with pytest.raises(AmbiguousSessionError) as error:
        resolve(tree, "ab12", proj, recorder)
    assert {info.cwd for info in error.value.candidates} == {str(one), str(two)}
    assert recorder.asked == []


def test_exact_full_id_finds_a_session_without_messages(tree: Tree) -> None:
    proj = tree.project("proj")
    empty = tree.session(proj, "ab12000000000000", [])
    assert resolve(tree, "ab12000000000000", proj).path == empty
    with pytest.raises(SessionNotFoundError):
        resolve(tree, "ab12", proj)


def test_exact_full_id_of_empty_session_in_a_session_dir(tree: Tree) -> None:
    proj = tree.project("proj")
    custom = tree.root / "custom"
    source = tree.session(proj, "ab12000000000000", [])
    custom.mkdir()
    (custom / source.name).write_bytes(source.read_bytes())
    assert resolve(tree, "ab12000000000000", proj, session_dir=custom).path == custom / source.name


def test_exact_id_wins_over_longer_ids_sharing_it_as_prefix(tree: Tree) -> None:
    proj = tree.project("proj")
    exact = tree.session(proj, "ab12")
    tree.session(proj, "ab12ff")
    assert resolve(tree, "ab12", proj).path == exact
    with pytest.raises(AmbiguousSessionError):
        resolve(tree, "ab1", proj)


def test_broken_files_never_match(tree: Tree) -> None:
    proj = tree.project("proj")
    broken = tree.project_dir(proj) / "2025_ab12000000000000.jsonl"
    broken.parent.mkdir(parents=True)
    broken.write_bytes(orjson.dumps({"type": "session", "id": 5}) + b"\n")
    with pytest.raises(SessionNotFoundError):
        find_session_by_id("ab12", proj, paths=tree.paths)


# -- the real fork -------------------------------------------------------------------------------------

def test_default_fork_writes_a_copy_into_this_project(tree: Tree) -> None:
    proj, other = tree.project("proj"), tree.project("other")
    source = tree.session(other, "cd34000000000000")
    result = resolve_resume("cd34", proj, paths=tree.paths, confirm_fork=lambda info: True)
    assert result.action == "fork" and result.session.path == source
    assert result.path.parent == tree.paths.project_session_dir(proj)
    lines = [orjson.loads(line) for line in result.path.read_bytes().splitlines()]
    header = next(line for line in lines if line.get("type") == "session")
    assert header["cwd"] == str(proj) and header["parentSession"] == "cd34000000000000"
    assert [line["message"]["role"] for line in lines if line.get("type") == "message"] == ["user", "assistant"]


def test_a_source_gone_before_the_fork_is_an_error_not_an_empty_session(tree: Tree) -> None:
    proj, other = tree.project("proj"), tree.project("other")
    source = tree.session(other, "cd34000000000000")

    def answer_after_the_file_is_gone(info: SessionInfo) -> bool:
        source.unlink()
        return True

    with pytest.raises(ForkSourceNotFoundError, match="gone"):
        resolve_resume("cd34", proj, paths=tree.paths, confirm_fork=answer_after_the_file_is_gone)
    assert list(tree.paths.project_session_dir(proj).glob("*.jsonl")) == []


# -- the id lookup reads files whole only when their first lines leave the id possible --------------------

def _edge_tree(tree: Tree) -> tuple[Path, Path]:
    """A project and another one whose files try every way a file's first lines can mislead an id lookup."""
    proj, other = tree.project("proj"), tree.project("other")
    folder = tree.project_dir(proj)
    tree.session(proj, "ab12000000000001", mtime_ms=BASE_MS + 1)
    tree.session(proj, "ab12000000000002", records=[], mtime_ms=BASE_MS + 2)  # no messages
    tree.session(proj, "ab34000000000001", title_line={"type": "title", "title": "x" * 5000}, mtime_ms=BASE_MS + 3)
    tree.session(proj, "cd56000000000001", title_line={"type": "title", "title": "short"}, mtime_ms=BASE_MS + 4)
    # named after one id, holding another
    write_file(folder / "2025-01-01T00-00-00-000Z_ab12000000000009.jsonl",
               jsonl([header("ef78000000000001", proj), user("renamed")]), BASE_MS + 5)
    write_file(folder / "2025-01-01T00-00-00-000Z_ef78000000000009.jsonl",
               jsonl([header("ab12000000000003", proj), user("misnamed")]), BASE_MS + 6)
    # a header spanning two lines (the reader joins them), a byte order mark, blank lines first
    write_file(folder / "spanning.jsonl", b'{"type": "session", "version": 3,\n"id": "ab12000000000004", "cwd": "'
               + str(proj).encode() + b'"}\n' + jsonl([user("spanning")]), BASE_MS + 7)
    write_file(folder / "bom.jsonl", b"\xef\xbb\xbf" + jsonl([header("ab12000000000005", proj), user("bom")]),
               BASE_MS + 8)
    write_file(folder / "blank.jsonl", b"\n\n" + jsonl([header("ab12000000000006", proj), user("blank")]),
               BASE_MS + 9)
    # a damaged first line (the reader skips it), then the header
    write_file(folder / "damaged.jsonl", b'{"type": "sess\n' + jsonl([header("ab12000000000007", proj)]), BASE_MS + 10)
    write_file(folder / "empty.jsonl", b"", BASE_MS + 11)
    write_file(folder / "only-header-no-newline.jsonl", jsonl([header("ab12000000000008", proj)])[:-1], BASE_MS + 12)
    write_file(folder / "surrogate.jsonl", b'{"type":"session","id":"ab12\\ud800","cwd":"' + str(proj).encode()
               + b'"}\n' + jsonl([user("surrogate")]), BASE_MS + 13)
    os.mkfifo(folder / "fifo.jsonl")
    tree.session(other, "ab12000000000010", mtime_ms=BASE_MS + 14)
    tree.session(other, "ab56000000000001", mtime_ms=BASE_MS + 15)
    return proj, other


PROBES = ["a", "ab", "ab1", "ab12", "ab12000000000002", "ab12000000000003", "ab12000000000004", "ab12000000000007",
          "ab12000000000008", "ab12000000000009", "ab12\ufffd", "ab34", "ab5", "cd", "ef78", "zz", "ab12000000000010"]


def test_the_id_lookup_equals_filtering_the_whole_listings(tree: Tree) -> None:
    proj, other = _edge_tree(tree)
    for probe in PROBES:
        for cwd in (proj, other):
            whole = [info for info in list_sessions(cwd, paths=tree.paths, include_empty=True)
                     if info.id.startswith(probe)]
            assert sessions_with_id_prefix(probe, cwd, paths=tree.paths) == whole, (probe, cwd)
        everywhere = [info for info in list_all_sessions(paths=tree.paths, include_empty=True)
                      if info.id.startswith(probe)]
        assert sessions_with_id_prefix(probe, None, paths=tree.paths) == everywhere, probe
    assert [info.id for info in sessions_with_id_prefix("ab12", proj, paths=tree.paths)] == [
        "ab12\ufffd", "ab12000000000008", "ab12000000000007", "ab12000000000006", "ab12000000000005",
        "ab12000000000004", "ab12000000000003", "ab12000000000002", "ab12000000000001"]


def test_the_id_lookup_reads_whole_only_the_files_whose_first_lines_leave_the_id_possible(tree: Tree, monkeypatch
                                                                                          ) -> None:
    from sessdex.core import discovery

    proj, _other = _edge_tree(tree)
    read: list[str] = []
    whole_read = discovery.read_session_info

    def recording(path, *args, **kwargs):
        read.append(Path(path).name)
        return whole_read(path, *args, **kwargs)

    monkeypatch.setattr(discovery, "read_session_info", recording)
    assert find_session_by_id("ab34", proj, paths=tree.paths).id == "ab34000000000001"
    # the header beyond the first 4 KB, and the files whose first lines settle nothing
    assert sorted(read) == ["2025-01-01T00-00-00-000Z_ab34000000000001.jsonl", "empty.jsonl",
                            "only-header-no-newline.jsonl"]
    read.clear()
    assert find_session_by_id("cd56", proj, paths=tree.paths).id == "cd56000000000001"
    assert sorted(read) == ["2025-01-01T00-00-00-000Z_ab34000000000001.jsonl",
                            "2025-01-01T00-00-00-000Z_cd56000000000001.jsonl", "empty.jsonl",
                            "only-header-no-newline.jsonl"]
