"""The replay harness itself: new recorded cases must run without code changes.

A case is built here in the recording's layout: one path written twice (so `input/` holds only the
second write) and recorded calls with more arguments than sessdex's signatures take.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conformance.harness import load_cases
from tests.conformance.test_conformance import replay_failures

SESSION_ID = "12ab96d53a135a2b"
ENTRY_UUID = "00000000-0000-4000-8000-0000aaaaaaaa"


def write_case(root: Path) -> None:
    """A case that writes $HOME/notes.txt twice and passes extra arguments to three calls."""
    notes = "$HOME/notes.txt"
    notes_result = "$ROOT/home/notes.txt"
    ops = [
        {"op": "writeFile", "path": notes, "content": "first"},
        {"op": "readFile", "path": notes},
        {"op": "writeFile", "path": notes, "content": {"$concat": ["second ", "\ud800", "!"]}},
        {"op": "readFile", "path": notes},
        {"op": "fn", "name": "getRecentSessions", "args": ["$SESSIONS/-proj", 5, {"extra": True}]},
        {"op": "static", "method": "inMemory", "args": ["$HOME/proj", {"an": "options object"}]},
        {"op": "call", "method": "appendModelChange", "args": ["anthropic/x", "default", "a third argument"]},
    ]
    results = [
        {"i": 1, "op": "writeFile", "value": {"path": notes_result, "bytes": 5}},
        {"i": 2, "op": "readFile", "value": {"path": notes_result, "content": "first"}},
        {"i": 3, "op": "writeFile", "value": {"path": notes_result, "input": "input/home/notes.txt", "bytes": 11}},
        {"i": 4, "op": "readFile", "value": {"path": notes_result, "content": "second \ufffd!"}},
        {"i": 5, "op": "fn", "value": []},
        {"i": 6, "op": "static", "value": {"$manager": "m", "sessionId": SESSION_ID}},
        {"i": 7, "op": "call", "value": "aaaaaaaa"},
    ]
    case = root / "cases" / "rewrite_and_extra_arguments"
    (case / "input" / "home").mkdir(parents=True)
    (case / "input" / "home" / "notes.txt").write_bytes("second \ufffd!".encode())
    (case / "case.json").write_text(json.dumps({"name": case.name, "dirs": ["home/proj"], "ops": ops}))
    (case / "expected.json").write_text(json.dumps({
        "case": case.name, "mode": "oracle", "results": results,
        "issued": {"uuid4": [ENTRY_UUID], "snowflake": [SESSION_ID]},
        "files": [{"path": "home/notes.txt", "kind": "file"}, {"path": "home/proj", "kind": "dir"}],
    }))


def test_each_write_takes_its_own_content_and_extra_arguments_are_ignored(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write_case(tmp_path / "cases_root")
    [case] = load_cases(tmp_path / "cases_root")
    assert replay_failures(case, tmp_path, monkeypatch) == []


def test_a_last_write_that_differs_from_input_is_reported(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write_case(tmp_path / "cases_root")
    (tmp_path / "cases_root" / "cases" / "rewrite_and_extra_arguments" / "input" / "home" / "notes.txt").write_bytes(
        b"something else")
    [case] = load_cases(tmp_path / "cases_root")
    failures = replay_failures(case, tmp_path, monkeypatch)
    assert len(failures) == 1 and "differs from input/home/notes.txt" in failures[0]


def test_a_concat_part_that_is_a_ref_to_a_path_becomes_text(tmp_path: Path) -> None:
    from tests.conformance.harness import Case, Replay

    case = Case(tmp_path / "case", {"ops": []}, {"issued": {}})
    replay = Replay(case, tmp_path / "root")
    replay.refs["file"] = replay.sessions / "-proj" / "a.jsonl"
    replay.refs["count"] = 3
    joined = replay.resolve({"$concat": [{"$ref": "file"}, ":", {"$ref": "count"}, "|$HOME"]})
    assert joined == f"{replay.sessions / '-proj' / 'a.jsonl'}:3|{replay.home}"
