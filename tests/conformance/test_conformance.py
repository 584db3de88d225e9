"""Replays every recorded conformance case (tests/conformance/data, or $SESSDEX_CONFORMANCE_DIR)."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from tests.conformance.harness import (
    Case,
    Replay,
    compare_files,
    drop_paths,
    first_difference,
    ignored_keys_everywhere,
    load_cases,
    load_sessdex_deviations,
    normalize,
    normalize_expected_root,
    parsed_file_content,
    render,
)

CASES_ROOT = Path(os.environ.get("SESSDEX_CONFORMANCE_DIR") or Path(__file__).parent / "data")
SESSDEX_DEVIATIONS = Path(__file__).parent / "sessdex_deviations.json"
CASES = load_cases(CASES_ROOT, load_sessdex_deviations(SESSDEX_DEVIATIONS))
IGNORED_KEYS = ignored_keys_everywhere(CASES_ROOT)

SNOWFLAKE = re.compile(r"^[0-9a-f]{16}$")
ENTRY_ID = re.compile(r"^[0-9a-f]{8}$")
ISO = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")
FILE_NAME = re.compile(r"^\d{4}-\d\d-\d\dT\d\d-\d\d-\d\d-\d{3}Z_[0-9a-f]{16}\.jsonl$")


def compare_real_formats(results: list[dict]) -> list[str]:
    """Mode `real`: only the formats of ids, timestamps and file names are checked."""
    problems = []
    for result in results:
        value = result.get("value")
        if result["op"] != "snapshot" or not isinstance(value, dict):
            continue
        if not SNOWFLAKE.match(value["sessionId"]):
            problems.append(f"session id {value['sessionId']!r}")
        if not FILE_NAME.match(Path(value["sessionFile"]).name):
            problems.append(f"file name {value['sessionFile']!r}")
        for entry in value.get("entries", []):
            if not ENTRY_ID.match(entry["id"]) or not ISO.match(entry["timestamp"]):
                problems.append(f"entry {entry['id']!r} {entry['timestamp']!r}")
    return problems


@pytest.mark.parametrize("case", CASES, ids=[case.name for case in CASES])
def test_case(case: Case, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    failures = replay_failures(case, tmp_path, monkeypatch)
    assert not failures, f"{case.name}:\n" + "\n".join(failures[:8]) + "\n" + json.dumps(
        case.definition.get("description"))


def replay_failures(case: Case, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Replay `case` in a sandbox under `tmp_path`; every difference from the recording, as text."""
    root = tmp_path / "root"
    root.mkdir()
    real_mode = case.expected.get("mode") == "real"
    replay = Replay(case, root, real_mode=real_mode)
    monkeypatch.setenv("HOME", str(replay.home))
    monkeypatch.setenv("TMPDIR", str(replay.tmp))
    monkeypatch.setenv("TZ", "UTC")
    for variable in ("KITTY_WINDOW_ID", "TMUX_PANE", "TERM_SESSION_ID", "WT_SESSION", "PI_CODING_AGENT_DIR"):
        monkeypatch.delenv(variable, raising=False)
    monkeypatch.chdir(replay.home)

    allowed_mtimes = {op["mtime"] for op in case.definition["ops"] if op.get("op") == "utimes"}
    actual_results = []
    failures = []
    try:
        for op, recorded in zip(case.definition["ops"], case.expected["results"]):
            if "unsupported" in recorded:
                replay.skip_op(op)
                continue
            try:
                value = replay.run_op(op)
                result = {"i": recorded["i"], "op": op["op"], "value": render(value, root)}
            except Exception as exc:  # noqa: BLE001 - an error is a result to compare
                result = {"i": recorded["i"], "op": op["op"], "error": {"name": type(exc).__name__, "message": str(exc)}}
            actual_results.append(result)
            if real_mode:
                continue
            expected_value = normalize_expected_root(recorded, root)
            in_sqlite = op["op"] in ("sqliteDump", "history")
            if "error" in expected_value:
                if "error" not in result:
                    failures.append(f"op {recorded['i']} ({op.get('method') or op['op']}): expected an error "
                                    f"{expected_value['error']}, got {str(result.get('value'))[:300]}")
                continue
            if "error" in result:
                failures.append(f"op {recorded['i']} ({op.get('method') or op['op']}): unexpected error {result['error']}")
                continue
            ignore = [path.removeprefix("value.") for path in case.ignored.get(recorded["i"], [])]
            if "value" in ignore:
                continue
            expected_norm = drop_paths(normalize(parsed_file_content(expected_value.get("value")), allowed_mtimes,
                                                 IGNORED_KEYS, in_sqlite=in_sqlite), ignore)
            actual_norm = drop_paths(normalize(parsed_file_content(result["value"]), allowed_mtimes, IGNORED_KEYS,
                                               in_sqlite=in_sqlite), ignore)
            difference = first_difference(expected_norm, actual_norm)
            if difference:
                failures.append(f"op {recorded['i']} ({op.get('method') or op.get('name') or op['op']}): {difference}")
    finally:
        replay.close()
    if real_mode:
        failures.extend(compare_real_formats(actual_results))
    elif "files" not in case.ignored.get(0, []):
        file_difference = compare_files(case, root)
        if file_difference:
            failures.append(file_difference)
    return failures
