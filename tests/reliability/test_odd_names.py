"""Session files and folders whose names are not valid UTF-8 (made through bytes paths): the catalog holds them
like any other, and `list`, `search`, `resume` and `doctor` answer from it what the file scan answers."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from sessdex.core.paths import PATH_ESCAPE, path_from_text, path_to_text
from tests.core.sessiontree import BASE_MS, assistant, header, jsonl, user, write_file
from tests.reliability.catalog_support import Tree, make_tree, run_sessdex

pytestmark = pytest.mark.reliability

ODD_ID = "0dd0000000000001"
PLAIN_ID = "91a1000000000001"


@pytest.mark.parametrize("raw", [b"/plain/path.jsonl", "/caf\u00e9/\u00fc.jsonl".encode(), b"/bad-\xff/x\xfe.jsonl",
                                 PATH_ESCAPE.encode() + b"/\xc3(/" + (PATH_ESCAPE * 2).encode() + b"ff",
                                 b"/\xed\xa0\x80/\xef\xbf\xbe\x80"])
def test_the_stored_form_of_a_path_is_text_and_round_trips(raw: bytes) -> None:
    path = os.fsdecode(raw)
    stored = path_to_text(path)
    stored.encode("utf-8")  # what SQLite and PostgreSQL text can hold
    assert path_from_text(stored) == path
    assert path_to_text(os.path.dirname(path)) == os.path.dirname(stored)  # folders are prefixes of their files
    if path.isascii() or raw == "/caf\u00e9/\u00fc.jsonl".encode():
        assert stored == path  # real names are stored as they are


@pytest.fixture
def tree(tmp_path: Path) -> Tree:
    tree = make_tree(tmp_path)
    project = tree.project("proj")
    tree.session(project, PLAIN_ID, [user("plain oddity search"), assistant("ok")], mtime_ms=BASE_MS)
    return tree


def odd_session(tree: Tree) -> str:
    """A session in a folder and a file whose names hold bytes that are not UTF-8; its path as os.fsdecode
    gives it."""
    folder = os.fsencode(str(tree.paths.sessions_root)) + b"/--odd-\xff-folder--"
    path = os.fsdecode(folder + b"/2025-01-01T00-00-00-000Z_" + ODD_ID.encode() + b"-\xfe.jsonl")
    write_file(Path(path), jsonl([header(ODD_ID, str(tree.home / "proj")), user("oddity in a strange name"),
                                  assistant("ok")]), BASE_MS + 1)
    return path


def listing(tree: Tree, *extra: str) -> list[tuple[str, str, int]]:
    result = run_sessdex(tree, *extra, "list", "--all", "--json")
    assert result.code == 0 and "Traceback" not in result.err, result.err
    return sorted((item["id"], item["path"], item["messageCount"]) for item in json.loads(result.out))


def test_odd_names_are_in_the_catalog_and_every_command_agrees_with_the_file_scan(tree: Tree) -> None:
    odd = odd_session(tree)
    assert run_sessdex(tree, "index").code == 0
    by_files = listing(tree, "--catalog", "off")
    assert (ODD_ID, odd, 2) in by_files
    assert listing(tree) == by_files

    found = run_sessdex(tree, "search", "oddity", "--all", "--json")
    assert found.code == 0, found.err
    assert sorted((item["id"], item["path"]) for item in json.loads(found.out)) == \
        [(ODD_ID, odd), (PLAIN_ID, next(path for id_, path, _ in by_files if id_ == PLAIN_ID))]

    resumed = [run_sessdex(tree, *extra, "resume", ODD_ID, "--own-dir") for extra in ((), ("--catalog", "off"))]
    for result in resumed:
        assert result.code == 0, result.err
        assert result.out.strip() == odd  # the file's own bytes, for the shell that opens it
    shell = run_sessdex(tree, "resume", ODD_ID, "--own-dir", "--shell")
    assert shell.code == 0 and shell.out.splitlines()[-1] == odd, shell.err

    report = json.loads(run_sessdex(tree, "doctor", "--json").out)
    assert report["files"] == 2 and report["needs_repair"] is False
    assert not (report["missing"] or report["stale"] or report["orphaned"])


def test_a_read_command_indexes_an_odd_name_once_and_follows_its_appends(tree: Tree) -> None:
    odd = odd_session(tree)
    assert listing(tree) == listing(tree, "--catalog", "off")  # the first read indexes it
    report = json.loads(run_sessdex(tree, "doctor", "--check", "--json").out)
    assert not (report["missing"] or report["stale"])  # indexed under its own name: not read again and again
    with open(odd, "ab") as handle:
        handle.write(jsonl([user("one more", "u0000002", "a0000001")]))
    assert (ODD_ID, odd, 3) in listing(tree)
    os.unlink(odd)
    assert ODD_ID not in {id_ for id_, _, _ in listing(tree)}


def test_watch_follows_appends_to_an_odd_name_and_a_new_odd_folder(tree: Tree) -> None:
    from tests.reliability.test_catalog_follows import sessdex_watch, wait_for

    odd = odd_session(tree)
    with sessdex_watch(tree):
        wait_for(lambda: (ODD_ID, odd, 2) in listing(tree))
        with open(odd, "ab") as handle:
            handle.write(jsonl([user("one more", "u0000002", "a0000001")]))
        later = os.fsdecode(os.fsencode(str(tree.paths.sessions_root)) + b"/--later-\xfa--/x_0dd0000000000002.jsonl")
        write_file(Path(later), jsonl([header("0dd0000000000002", "/p"), user("later"), assistant("ok")]))
        wait_for(lambda: {(ODD_ID, odd, 3), ("0dd0000000000002", later, 2)} <= set(listing(tree)))
        assert listing(tree) == listing(tree, "--catalog", "off")
