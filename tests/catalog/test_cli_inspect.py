"""`sessdex context` and `sessdex entries` as a user runs them: real files, real process, exit codes."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

CASES = Path(__file__).resolve().parents[1] / "conformance" / "data" / "cases"
REPO = Path(__file__).resolve().parents[2]


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "sessdex.catalog", *args], cwd=REPO, capture_output=True, text=True)


def test_context_json_matches_the_recorded_agent_context() -> None:
    case = CASES / "all_entry_types"
    session = next((case / "files").rglob("*.jsonl"))
    expected = json.loads((case / "expected.json").read_text())["results"][23]["value"]["context"]
    result = run("context", str(session), "--json")
    assert result.returncode == 0, result.stderr
    context = json.loads(result.stdout)
    for key in ("selectedMCPToolNames", "hasPersistedMCPToolSelection"):
        expected.pop(key)
    assert context == json.loads(json.dumps(expected).replace("$ROOT", "/tmp/omp-oracle-root"))


def test_context_at_an_earlier_leaf(tmp_path: Path) -> None:
    session = next((CASES / "branch_tree_and_reload_leaf" / "files").rglob("*.jsonl"))
    entries = json.loads(run("entries", str(session), "--json").stdout)
    first_id = entries[0]["id"]
    context = json.loads(run("context", str(session), "--leaf", first_id, "--json").stdout)
    assert context["messages"] == [entries[0]["message"]]
    unknown = run("context", str(session), "--leaf", "nope", "--json")
    assert unknown.returncode == 2 and "nope" in unknown.stderr


def test_entries_are_migrated_but_the_file_is_not_written(tmp_path: Path) -> None:
    source = next((CASES / "migration_v1" / "input").rglob("*.jsonl"))
    copy = tmp_path / "v1.jsonl"
    copy.write_bytes(source.read_bytes())
    result = run("entries", str(copy), "--json")
    assert result.returncode == 0, result.stderr
    entries = json.loads(result.stdout)
    assert [e["parentId"] for e in entries[1:]] == [e["id"] for e in entries[:-1]]
    assert copy.read_bytes() == source.read_bytes()


@pytest.mark.parametrize("content", [None, b"", b"not json at all\n", b'{"type":"message"}\n'])
def test_bad_files_give_one_line_and_status_2(tmp_path: Path, content: bytes | None) -> None:
    target = tmp_path / "bad.jsonl"
    if content is not None:
        target.write_bytes(content)
    for command in ("context", "entries"):
        result = run(command, str(target), "--json")
        assert result.returncode == 2
        assert result.stdout == ""
        assert len(result.stderr.strip().splitlines()) == 1 and "Traceback" not in result.stderr
