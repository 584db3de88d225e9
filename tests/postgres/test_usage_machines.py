"""`sessdex usage` on one PostgreSQL catalog shared by two machines: each machine's answer by default, the union
of both machines' own SQLite answers with `--machines all`, kept apart through a re-index, a rebuild and the
upgrade from revision 0003.

The two agent dirs and the reference sums are those of tests/catalog/test_usage.py (the laptop, the devbox with
copies of two laptop forks whose parents are on the laptop only, and this project at the same place under the
devbox's home).
"""

from __future__ import annotations

import functools
import json
import math
from typing import Any

import pytest

from sessdex.catalog.store.location import resolve_location
from tests.catalog import test_usage
from tests.catalog.test_usage import (
    KINDS,
    Agent,
    Machines,
    _append,
    _assistant,
    _same_report,
    assert_report_matches,
    check_stored_texts,
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
    _check_stored(machines, capsys, postgres_url, own)


def _check_stored(machines: Machines, capsys, shared: str, own: dict[str, str]) -> None:
    """Each machine's stored --json texts on the server equal its reports summed there, and each report's text
    (and table) equals the one its own SQLite catalog prints (the same rows' texts, in the same order, bytewise)."""
    for machine in ("laptop", "devbox"):
        check_stored_texts(functools.partial(machines.cli, machine), capsys, catalog=shared)
        for kind in KINDS:
            printed = [run_cli(machines.cli(machine, "usage", kind, "--all", "--json", catalog=catalog), capsys).out
                       for catalog in (shared, own[machine])]
            assert _same_report(*map(json.loads, printed)), (machine, kind)
            assert [row.get("session") for row in json.loads(printed[0])["rows"]] == \
                [row.get("session") for row in json.loads(printed[1])["rows"]]
            # The table from the stored cells too (its own SQLite catalog's is the summed table's: test_usage).
            tables = [run_cli(machines.cli(machine, "usage", kind, "--all", catalog=catalog), capsys)
                      for catalog in (shared, own[machine])]
            assert tables[0].code == 0 and tables[0].out == tables[1].out, (machine, kind)


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
        _check_stored(machines, capsys, postgres_url, own)
    _check_against_sqlite(machines, capsys, postgres_url, own)


def _shared_catalog_at(revision: str, machines: Machines, capsys, monkeypatch, postgres_url: str) -> dict[str, str]:
    """Both machines indexed into the server's catalog, then that taken back to `revision`; each machine's own
    SQLite catalog (`_sqlite_catalogs`), to compare with after the upgrade."""
    from alembic import command

    from sessdex.catalog.store.migrate import alembic_on

    own = _sqlite_catalogs(machines, capsys, monkeypatch)
    machines.index(capsys, monkeypatch, catalog=postgres_url)
    with alembic_on(resolve_location(machines.laptop.agent, postgres_url)) as config:
        command.downgrade(config, revision)
    return own


def test_a_shared_catalog_at_revision_0003_upgrades_to_usage_per_machine(machines: Machines, capsys, monkeypatch,
                                                                         postgres_url: str):
    own = _shared_catalog_at("0003_machines", machines, capsys, monkeypatch, postgres_url)
    import psycopg

    with psycopg.connect(postgres_url) as connection:
        assert connection.execute("SELECT version_num FROM alembic_version").fetchone() == ("0003_machines",)
        assert connection.execute("SELECT count(*) FROM information_schema.columns WHERE table_name = 'usage_totals' "
                                  "AND column_name = 'machine'").fetchone() == (0,)
    machines.index(capsys, monkeypatch, catalog=postgres_url)  # upgrades; nothing to index; each records its home
    _check_against_sqlite(machines, capsys, postgres_url, own)


def test_a_shared_catalog_at_revision_0004_upgrades_to_stored_report_texts(machines: Machines, capsys, monkeypatch,
                                                                           postgres_url: str):
    own = _shared_catalog_at("0004_usage_per_machine", machines, capsys, monkeypatch, postgres_url)
    import psycopg

    with psycopg.connect(postgres_url) as connection:
        assert connection.execute("SELECT count(*) FROM information_schema.columns WHERE table_name = 'usage_totals' "
                                  "AND column_name IN ('json', 'label')").fetchone() == (0,)
    _check_stored(machines, capsys, postgres_url, own)  # opening upgrades: the texts are rendered in place
    with psycopg.connect(postgres_url) as connection:
        assert connection.execute("SELECT count(*) FROM usage_totals WHERE model = '' AND json IS NULL").fetchone() == (0,)


def test_every_change_to_usage_rows_on_the_server_drops_their_machines_token_and_stale_cells(postgres_url: str, tmp_path) -> None:
    """The ready reports' invalidation (triggers of 0007_usage_report_tokens) on PostgreSQL: statement-level
    triggers, each dropping the tokens of the machines its rows are of."""
    from sessdex.catalog.store.db import open_catalog
    from tests.catalog.test_report_files import (
        check_every_change_to_usage_rows_drops_their_machines_token,
        check_figures_changed_without_cells_clear_them,
    )

    db = open_catalog(resolve_location(tmp_path, postgres_url), machine="here")
    try:
        check_every_change_to_usage_rows_drops_their_machines_token(db)
        check_figures_changed_without_cells_clear_them(db)
    finally:
        db.close()
