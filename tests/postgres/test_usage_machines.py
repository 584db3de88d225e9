"""`sessdex usage` on one PostgreSQL catalog shared by two machines: each machine's answer by default, the union
of both machines' own SQLite answers with `--machines all`, kept apart through a re-index and a rebuild; a shared
catalog of an older sessdex is emptied and indexed again.

The two agent dirs and the reference sums are those of tests/catalog/test_usage.py (the laptop, the devbox with
copies of two laptop forks whose parents are on the laptop only, and this project at the same place under the
devbox's home).
"""

from __future__ import annotations

import functools
import json
import math
import time
from typing import Any

import pytest

from sessdex.catalog.store.compiled_sql import SCHEMA_REVISION
from tests.catalog import test_usage
from tests.catalog.test_usage import (
    KINDS,
    Agent,
    Machines,
    _append,
    _assistant,
    _same_report,
    assert_report_matches,
    check_plain_reports,
    counted_files,
    expected_report,
)
from tests.cli_support import run_cli

agent = test_usage.agent  # the laptop, in a far time zone (a fixture of test_usage)
local_zone = test_usage.local_zone


@pytest.fixture
def machines(agent: Agent, tmp_path) -> Machines:
    """The laptop and the devbox of tests/catalog/test_usage.py."""
    return Machines(agent, tmp_path)


def _answer(machines: Machines, capsys, machine: str, catalog: str, kind: str, *extra: str,
            every_machine: bool = False) -> dict[str, Any]:
    args = machines.cli(machine, "usage", kind, "--breakdown", "--json", *extra, catalog=catalog)
    result = run_cli(["--machines", "all", *args] if every_machine else args, capsys)
    assert result.code == 0, result.err
    return json.loads(result.out)


def _union(kind: str, answers: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """The rows of several machines' answers put together (by key; the session report's rows by path), figures
    and session counts added (a session belongs to one machine), with the totals as row "TOTAL"."""
    key_field = "period" if kind in ("daily", "weekly", "monthly") else kind
    union: dict[str, dict[str, Any]] = {}
    for answer in answers:
        for key, row in [*((r["path"] if kind == "session" else r[key_field], r) for r in answer["rows"]),
                         ("TOTAL", answer["totals"])]:
            into = union.setdefault(key, {"models": set(), "breakdown": {}})
            into["models"] |= set(row["models"])
            for name in ("input", "output", "cacheRead", "cacheWrite", "totalTokens", "cost", "messages", "sessions"):
                into[name] = into.get(name, 0) + row[name]
            for split in row["breakdown"]:
                model = into["breakdown"].setdefault(split["model"], {})
                for name, value in split.items():
                    if name != "model":
                        model[name] = model.get(name, 0) + value
    return union


def _assert_union(kind: str, answer: dict[str, Any], parts: list[dict[str, Any]]) -> None:
    got, want = _union(kind, [answer]), _union(kind, parts)
    assert set(got) == set(want), kind
    for key, row in want.items():
        for name, value in row.items():
            if name in ("cost", "breakdown"):
                continue
            assert got[key][name] == value, (kind, key, name)
        assert math.isclose(got[key]["cost"], row["cost"], rel_tol=1e-9, abs_tol=1e-9), (kind, key)
        assert got[key]["breakdown"].keys() == row["breakdown"].keys()
        for model, figures in row["breakdown"].items():
            for name, value in figures.items():
                assert math.isclose(got[key]["breakdown"][model][name], value, rel_tol=1e-9, abs_tol=1e-9)


def _sqlite_catalogs(machines: Machines, capsys, monkeypatch) -> dict[str, str]:
    """Each machine's own SQLite catalog, indexed by it alone."""
    catalogs = {"laptop": str(machines.laptop.catalog.with_name("laptop.db")),
                "devbox": str(machines.laptop.catalog.with_name("devbox.db"))}
    for machine, home in (("laptop", machines.laptop.home), ("devbox", machines.devbox_home)):
        monkeypatch.setenv("HOME", str(home))
        assert run_cli(machines.cli(machine, "index", catalog=catalogs[machine]), capsys).code == 0
    monkeypatch.setenv("HOME", str(machines.laptop.home))
    return catalogs


def _check_against_sqlite(machines: Machines, capsys, shared: str, own: dict[str, str]) -> None:
    """Every report: by default each machine's own SQLite answer, with --machines all the union of both
    (every project, this project, and a date range summed from the rollup)."""
    for kind in KINDS:
        for extra in (("--all",), ()):
            for machine in ("laptop", "devbox"):
                assert _same_report(_answer(machines, capsys, machine, shared, kind, *extra),
                                    _answer(machines, capsys, machine, own[machine], kind, *extra)), (kind, machine, extra)
        answers = [_answer(machines, capsys, machine, own[machine], kind, "--all") for machine in own]
        for machine in own:
            _assert_union(kind, _answer(machines, capsys, machine, shared, kind, "--all", every_machine=True), answers)
        # This project on both machines: the laptop's folders here, the devbox's folder of the same
        # home-relative directory there (the devbox's other sessions are not in it).
        both = counted_files(machines.laptop.sessions_root) + counted_files(machines.devbox_root)
        folders = machines.laptop.project_folders | {str(machines.devbox_project_folder)}
        assert_report_matches(_answer(machines, capsys, "laptop", shared, kind, every_machine=True),
                              expected_report(both, kind, folders), kind)
    since, until = "2025-12-01", "2026-02-10"
    for kind in ("daily", "session", "model"):
        answers = [_answer(machines, capsys, machine, own[machine], kind, "--all", "--since", since, "--until", until)
                   for machine in own]
        _assert_union(kind, _answer(machines, capsys, "laptop", shared, kind, "--all", "--since", since, "--until",
                                    until, every_machine=True), answers)


def test_usage_on_a_shared_server_is_each_machines_own_answer_or_their_union(machines: Machines, capsys, monkeypatch,
                                                                             postgres_url: str):
    own = _sqlite_catalogs(machines, capsys, monkeypatch)
    machines.index(capsys, monkeypatch, catalog=postgres_url)
    _check_against_sqlite(machines, capsys, postgres_url, own)
    _check_same_bytes(machines, capsys, postgres_url, own)


def _check_same_bytes(machines: Machines, capsys, shared: str, own: dict[str, str]) -> None:
    """Each machine's reports on the server, --json and tables, are the bytes its own SQLite catalog prints (the
    sums are exact on both)."""
    for machine in ("laptop", "devbox"):
        check_plain_reports(functools.partial(machines.cli, machine), capsys, catalog=shared)
        for kind in KINDS:
            for extra in (("--json",), ("--json", "--breakdown"), ()):
                printed = [run_cli(machines.cli(machine, "usage", kind, "--all", *extra, catalog=catalog), capsys)
                           for catalog in (shared, own[machine])]
                assert printed[0].code == 0 and printed[0].out == printed[1].out, (machine, kind, extra)


def test_reindex_and_rebuild_of_one_machine_leave_the_other_machines_usage_alone(machines: Machines, capsys,
                                                                                 monkeypatch, postgres_url: str):
    machines.index(capsys, monkeypatch, catalog=postgres_url)
    devbox = {kind: _answer(machines, capsys, "devbox", postgres_url, kind, "--all") for kind in KINDS}
    laptop_files = counted_files(machines.laptop.sessions_root)
    fork = next(usage for usage in laptop_files if usage["parent"] and usage["copied"])
    _append(next(machines.laptop.sessions_root.rglob(f"*{fork['id']}*.jsonl")),
            [_assistant("e00000ff", "2026-02-16T09:30:00.000Z", "openai", "gpt-5", 3.0)])
    own = _sqlite_catalogs(machines, capsys, monkeypatch)
    for rebuild in ((), ("--rebuild",)):
        assert run_cli(machines.cli("laptop", "index", *rebuild, catalog=postgres_url), capsys).code == 0
        for kind in KINDS:
            assert _answer(machines, capsys, "devbox", postgres_url, kind, "--all") == devbox[kind]  # not one bit moved
        for kind in ("daily", "session"):
            assert _same_report(_answer(machines, capsys, "laptop", postgres_url, kind, "--all"),
                                _answer(machines, capsys, "laptop", own["laptop"], kind, "--all")), (kind, rebuild)
        _check_same_bytes(machines, capsys, postgres_url, own)
    _check_against_sqlite(machines, capsys, postgres_url, own)


def test_a_shared_catalog_of_an_older_sessdex_is_emptied_and_indexed_again(machines: Machines, capsys, monkeypatch,
                                                                             postgres_url: str):
    import psycopg

    own = _sqlite_catalogs(machines, capsys, monkeypatch)
    machines.index(capsys, monkeypatch, catalog=postgres_url)
    with psycopg.connect(postgres_url) as connection:  # what a release before the baseline left
        connection.execute("UPDATE alembic_version SET version_num = '0007_usage_report_tokens'")
        connection.execute("ALTER TABLE usage_totals ADD COLUMN json text")
        connection.execute("CREATE FUNCTION usage_totals_drop_tokens() RETURNS trigger LANGUAGE plpgsql"
                           " AS $$ BEGIN RETURN NULL; END $$")
        connection.execute("CREATE TRIGGER usage_totals_deleted_drop_token AFTER DELETE ON usage_totals"
                           " FOR EACH STATEMENT EXECUTE FUNCTION usage_totals_drop_tokens()")
    first = run_cli(machines.cli("laptop", "usage", "daily", "--all", "--json", catalog=postgres_url), capsys)
    assert first.code == 0
    notice = [line for line in first.err.splitlines() if "older sessdex" in line]
    assert len(notice) == 1 and "0007_usage_report_tokens" in notice[0]
    machines.index(capsys, monkeypatch, catalog=postgres_url)  # the devbox indexes its own files again
    _check_against_sqlite(machines, capsys, postgres_url, own)
    with psycopg.connect(postgres_url) as connection:
        assert connection.execute("SELECT version_num FROM alembic_version").fetchall() == [(SCHEMA_REVISION,)]
        assert connection.execute("SELECT count(*) FROM information_schema.columns WHERE table_name = 'usage_totals'"
                                  " AND column_name = 'json'").fetchone() == (0,)


def test_blocks_and_the_line_on_a_shared_server_are_this_machines_or_every_machines(machines: Machines, capsys,
                                                                                   monkeypatch, postgres_url: str):
    """`usage blocks` and `usage --line` read the catalog `--catalog` names: this machine's sessions alone, or with
    `--machines all` every machine's, whose files are not here; both equal the blocks this test cuts from the
    JSONL of each machine's files (the devbox's copies of laptop forks count in full there: their parents are on
    the laptop only)."""
    from datetime import UTC, datetime

    from tests.catalog.test_usage_blocks import assert_blocks_match, reference_blocks, reference_facts

    machines.index(capsys, monkeypatch, catalog=postgres_url)
    laptop = reference_facts(machines.laptop.sessions_root)
    devbox = reference_facts(machines.devbox_root)
    for every_machine, facts in ((False, laptop), (True, laptop + devbox)):
        args = machines.cli("laptop", "usage", "blocks", "--json", catalog=postgres_url)
        before = time.time()
        result = run_cli(["--machines", "all", *args] if every_machine else args, capsys)
        assert result.code == 0, result.err
        expected = reference_blocks(sorted(facts, key=lambda fact: fact["when"]), datetime.fromtimestamp(time.time(), UTC))
        assert len(expected) > 3
        assert_blocks_match(json.loads(result.out)["rows"], expected, time.time() - before)
    # The devbox's blocks are not the laptop's: without --machines all neither sees the other's.
    alone = run_cli(machines.cli("devbox", "usage", "blocks", "--json", catalog=postgres_url), capsys)
    assert_blocks_match(json.loads(alone.out)["rows"],
                        reference_blocks(devbox, datetime.fromtimestamp(time.time(), UTC)), 60.0)
    line = run_cli(["--machines", "all", *machines.cli("laptop", "usage", "--line", catalog=postgres_url)], capsys)
    assert line.code == 0 and line.out.startswith("today $")
