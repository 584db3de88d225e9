"""Trials: one bad file never kills `watch` and never fails `index`, `doctor`, `list` or `search`.

The bad files are those the hostile trials found: a line nested 1,100 deep, the integer 10**400 in a usage
figure, an mtime in year 5000, a folder whose name is not UTF-8, a FIFO and a symlink to /dev/zero named
like sessions (never opened: they would block or never end). Each is skipped or clamped, counted and
reported by `doctor`; the good files around it are indexed as always.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from tests.core.sessiontree import BASE_MS, assistant, header, jsonl, user, write_file
from tests.reliability.catalog_support import SESSDEX, Tree, make_tree, run_sessdex, trial_env

pytestmark = pytest.mark.reliability

YEAR_5000_NS = 95_617_584_000 * 10**9


def _deep_line() -> bytes:
    return b'{"type":"message","id":"d1","parentId":null,"x":' + b"[" * 1100 + b"]" * 1100 + b"}\n"


def _huge_usage_line() -> bytes:
    huge = str(10**400)
    return (b'{"type":"message","id":"a1","parentId":"u0000001","timestamp":"2025-01-01T00:00:00.000Z",'
            b'"message":{"role":"assistant","content":[{"type":"text","text":"x"}],"provider":"p","model":"m",'
            b'"usage":{"input":' + huge.encode() + b',"output":1,"cacheRead":0,"cacheWrite":0,'
            b'"cost":{"total":' + huge.encode() + b"}}}}\n")


def write_bad_file(tree: Tree, kind: str, project: Path) -> Path:
    """One bad session file of `kind` in the project's folder (or, for `undecodable`, a folder beside it)."""
    folder = tree.project_dir(project)
    session_id = f"bad-{kind}"
    good_lines = jsonl([header(session_id, project), user(f"{kind} question")])
    if kind == "deep":
        return write_file(folder / f"x_{session_id}.jsonl", good_lines + _deep_line())
    if kind == "huge-integer":
        return write_file(folder / f"x_{session_id}.jsonl", good_lines + _huge_usage_line())
    if kind == "year-5000":
        path = write_file(folder / f"x_{session_id}.jsonl", good_lines)
        os.utime(path, ns=(YEAR_5000_NS, YEAR_5000_NS))
        return path
    if kind == "fifo":
        path = folder / f"x_{session_id}.jsonl"
        folder.mkdir(parents=True, exist_ok=True)
        os.mkfifo(path)
        return path
    if kind == "link-to-dev-zero":
        path = folder / f"x_{session_id}.jsonl"
        folder.mkdir(parents=True, exist_ok=True)
        path.symlink_to("/dev/zero")
        return path
    assert kind == "undecodable"
    undecodable = os.fsdecode(os.fsencode(str(tree.paths.sessions_root)) + b"/bad-\xff-folder")
    return write_file(Path(undecodable) / f"x_{session_id}.jsonl", good_lines)


BAD_KINDS = ["deep", "huge-integer", "year-5000", "undecodable", "fifo", "link-to-dev-zero"]


@pytest.fixture
def tree(tmp_path: Path) -> Tree:
    tree = make_tree(tmp_path)
    tree.session(tree.project("proj"), "good0000000000001", [user("parser work"), assistant("done")], mtime_ms=BASE_MS)
    return tree


@pytest.mark.parametrize("kind", BAD_KINDS)
def test_index_doctor_list_and_search_survive_a_bad_file(tree: Tree, kind: str) -> None:
    project = tree.project("proj")
    write_bad_file(tree, kind, project)
    for args in (("index",), ("list",), ("list", "--all"), ("search", "parser"), ("recent",), ("doctor",),
                 ("doctor", "--check")):
        result = run_sessdex(tree, *args, cwd=project)
        assert result.code == 0, (kind, args, result.err)
        assert "Traceback" not in result.err, (kind, args, result.err)
        if args[0] in ("list", "search", "recent"):
            assert "good0000" in result.out, (kind, args, result.out)
    if kind in ("huge-integer", "year-5000"):  # clamped, not skipped: the session is listed like any other
        assert f"bad-{kind}" in run_sessdex(tree, "list", "--all", "--json", cwd=project).out
    report = json.loads(run_sessdex(tree, "doctor", "--json", cwd=project).out)
    assert report["needs_repair"] is False
    if kind == "undecodable":  # in the catalog like any other session (tests/reliability/test_odd_names.py)
        assert report["files"] == 2 and not report["missing"] and not report["orphaned"]
    elif kind == "deep":
        # Unless the parser takes the line as unparseable, the file is reported as one sessdex cannot read.
        assert report["unindexable"] or report["damaged"]


def _start_watch(tree: Tree, project: Path) -> subprocess.Popen[str]:
    watch = subprocess.Popen([str(SESSDEX), "--agent-dir", str(tree.paths.agent_dir), "watch"], cwd=project,
                             env=trial_env(tree), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 30
    while not (tree.paths.agent_dir / "catalog.db.watcher").exists():
        assert time.monotonic() < deadline and watch.poll() is None, "watch did not start"
        time.sleep(0.05)
    return watch


def _listed_ids(tree: Tree, project: Path) -> str:
    return run_sessdex(tree, "list", "--all", "--json", cwd=project).out


def test_watch_survives_bad_files_and_indexes_the_good_one_after_them(tree: Tree) -> None:
    project = tree.project("proj")
    watch = _start_watch(tree, project)
    try:
        for kind in BAD_KINDS:
            write_bad_file(tree, kind, project)
        time.sleep(0.5)  # the bad files are handled first, in their own batch
        tree.session(project, "late0000000000002", [user("written after the bad ones"), assistant("ok")])
        deadline = time.monotonic() + 20
        while "late0000000000002" not in _listed_ids(tree, project):
            assert watch.poll() is None, "watch died"
            assert time.monotonic() < deadline, "the good file was not indexed"
            time.sleep(0.2)
        assert watch.poll() is None, "watch died"
    finally:
        watch.send_signal(signal.SIGTERM)
        _, err = watch.communicate(timeout=30)
    assert "Traceback" not in err, err
    assert watch.returncode == 0, err
