"""The one walker of session files (core.paths.session_file_entries) and the one lone-surrogate encoder (core.text)."""

from __future__ import annotations

import os
from pathlib import Path

from sessdex.core.paths import session_file_entries
from sessdex.core.text import without_lone_surrogates


def _names(root: Path, **options: bool) -> list[str]:
    return [os.path.relpath(entry.path, root) for entry in session_file_entries(root, **options)]


def test_the_walker_follows_os_walk_rules(tmp_path: Path) -> None:
    root = tmp_path / "sessions"
    (root / "b-project" / "nested").mkdir(parents=True)
    (root / "a-project").mkdir()
    (root / "folder.jsonl").mkdir()  # a folder named like a session: walked into, never yielded
    for name in ("b-project/2.jsonl", "b-project/1.jsonl", "b-project/nested/3.jsonl", "a-project/4.jsonl",
                 "folder.jsonl/5.jsonl", "z.jsonl", "notes.txt"):
        (root / name).write_text("{}\n")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "6.jsonl").write_text("{}\n")
    (root / "linked-folder").symlink_to(outside)  # a symlink to a folder: never walked into
    (root / "linked.jsonl").symlink_to(outside / "6.jsonl")  # a symlink to a file: yielded
    (root / "dangling.jsonl").symlink_to(tmp_path / "missing")  # yielded; reading it fails later
    os.mkfifo(root / "pipe.jsonl")  # yielded; callers decide from stat what they read

    assert _names(root, ordered=True) == ["dangling.jsonl", "linked.jsonl", "pipe.jsonl", "z.jsonl"]
    assert _names(root, recursive=True, ordered=True) == [
        "dangling.jsonl", "linked.jsonl", "pipe.jsonl", "z.jsonl",
        "a-project/4.jsonl", "b-project/1.jsonl", "b-project/2.jsonl", "b-project/nested/3.jsonl",
        "folder.jsonl/5.jsonl"]
    assert sorted(_names(root, recursive=True)) == sorted(_names(root, recursive=True, ordered=True))
    assert _names(tmp_path / "missing") == []


def test_lone_surrogates_become_replacement_characters_and_pairs_the_character_they_encode() -> None:
    plain = "caf\u00e9 \U0001f600"
    assert without_lone_surrogates(plain) is plain
    assert without_lone_surrogates("ascii") == "ascii"
    assert without_lone_surrogates("bad \ud800 and \udcff end") == "bad \ufffd and \ufffd end"
    assert without_lone_surrogates("pair \ud83d\ude00") == "pair \U0001f600"
    without_lone_surrogates("x \udfff \ud800").encode("utf-8")  # always storable
