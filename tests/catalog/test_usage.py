"""`sessdex usage`: every report's --json equals the sums this test computes from the JSONL files itself.

The expected figures never go through sessdex: `expected_report` reads each file line by line with the
stdlib json module, finds the header, the assistant messages with usage, the local day of each (with
zoneinfo), drops an entry a fork copied from its parent (same id and timestamp as an entry of the
session its header's `parentSession` names), and sums. The catalog (fresh, kept by a real `sessdex watch`
process while files grow, and upgraded from revision 0001) and the file scan (`--catalog off`) must both
give exactly those answers (costs to floating-point rounding).
"""

from __future__ import annotations

import contextlib
import functools
import json
import math
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from datetime import date, datetime, timedelta
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from gen_corpus import generate_corpus

from sessdex.catalog.index.reconcile import read_heartbeat
from sessdex.catalog.store.compiled_sql import SCHEMA_REVISION
from sessdex.catalog.store.location import resolve_location
from sessdex.catalog.tui.width import display_width
from sessdex.core.paths import documented_project_dir_name
from tests.cli_support import run_cli

REPO = Path(__file__).resolve().parents[2]
ZONE = "Pacific/Auckland"  # far from UTC: local days differ from UTC days for half of each day
NOW = 1_771_236_000.0  # 2026-02-16T10:00:00Z
KINDS = ("daily", "weekly", "monthly", "session", "project", "model")
FIGURES = ("input", "output", "cacheRead", "cacheWrite", "totalTokens", "messages", "sessions")


# -- the independent reference ----------------------------------------------------------------------------

def _records(path: Path) -> list[Any]:
    records = []
    for line in path.read_bytes().split(b"\n"):
        if not line.strip():
            continue
        try:
            records.append(json.loads(line, parse_constant=lambda name: 1 / 0))
        except (ValueError, ZeroDivisionError):
            continue
    return records


def _number(value: Any) -> float:
    return value if type(value) in (int, float) and math.isfinite(value) else 0


def _session_file(path: Path) -> dict[str, Any] | None:
    records = _records(path)
    if records and isinstance(records[0], dict) and records[0].get("type") == "title":
        records = records[1:]
    if not records or not isinstance(records[0], dict) or records[0].get("type") != "session" \
            or not isinstance(records[0].get("id"), str):
        return None
    header, entries = records[0], records[1:]
    if not any(isinstance(e, dict) and e.get("type") == "message" for e in entries):
        return None
    facts = []
    zone = ZoneInfo(ZONE)
    for entry in entries:
        message = entry.get("message") if isinstance(entry, dict) and entry.get("type") == "message" else None
        if not isinstance(message, dict) or message.get("role") != "assistant" or not isinstance(message.get("usage"), dict):
            continue
        usage = message["usage"]
        when = datetime.fromisoformat(entry["timestamp"]).astimezone(zone).date()
        cost = usage.get("cost")
        facts.append({
            "key": (entry.get("id"), entry.get("timestamp")), "day": when,
            "model": f"{message.get('provider') or 'unknown'}/{message.get('model') or 'unknown'}",
            "input": _number(usage.get("input")), "output": _number(usage.get("output")),
            "cacheRead": _number(usage.get("cacheRead")), "cacheWrite": _number(usage.get("cacheWrite")),
            "cost": _number(cost.get("total")) if isinstance(cost, dict) else 0})
    cwd = header.get("cwd") if isinstance(header.get("cwd"), str) else ""
    return {"path": str(path), "id": header["id"], "cwd": cwd, "parent": header.get("parentSession"),
            "folder": str(path.parent), "facts": facts}


def counted_files(sessions_root: Path) -> list[dict[str, Any]]:
    """Every session file with its facts, copies of a parent's entries removed."""
    files = [found for path in sorted(sessions_root.rglob("*.jsonl")) if (found := _session_file(path)) is not None]
    every_key = {usage["path"]: {fact["key"] for fact in usage["facts"] if None not in fact["key"]} for usage in files}
    for usage in files:
        parents = [other for other in files if other is not usage and usage["parent"] in (other["id"], other["path"])]
        keys = set().union(*(every_key[parent["path"]] for parent in parents))
        usage["copied"] = sum(fact["key"] in keys for fact in usage["facts"])
        usage["facts"] = [fact for fact in usage["facts"] if fact["key"] not in keys]
    return files


def _row_key(kind: str, usage: dict[str, Any], fact: dict[str, Any]) -> str:
    day: date = fact["day"]
    return {"daily": day.isoformat(), "weekly": (day - timedelta(days=day.weekday())).isoformat(),
            "monthly": day.isoformat()[:7], "session": usage["path"], "project": usage["cwd"],
            "model": fact["model"]}[kind]


def _empty() -> dict[str, Any]:
    return {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "cost": 0.0, "messages": 0, "sessions": set()}


def _add(target: dict[str, Any], usage: dict[str, Any], fact: dict[str, Any]) -> None:
    for name in ("input", "output", "cacheRead", "cacheWrite", "cost"):
        target[name] += fact[name]
    target["messages"] += 1
    target["sessions"].add(usage["path"])


def _finish(figures: dict[str, Any]) -> dict[str, Any]:
    done = {**figures, "sessions": len(figures["sessions"])}
    done["totalTokens"] = done["input"] + done["output"] + done["cacheRead"] + done["cacheWrite"]
    return done


def expected_report(files: list[dict[str, Any]], kind: str, folders: set[str] | None,
                    since: str | None = None, until: str | None = None) -> dict[str, Any]:
    """What `sessdex usage KIND --breakdown --json` must print, keyed by row (the session report by file path)."""
    rows: dict[str, dict[str, Any]] = {}
    total: dict[str, Any] = {"figures": _empty(), "models": {}}
    for usage in files:
        if folders is not None and usage["folder"] not in folders:
            continue
        for fact in usage["facts"]:
            day = fact["day"].isoformat()
            if (since and day < since) or (until and day > until):
                continue
            row = rows.setdefault(_row_key(kind, usage, fact), {"figures": _empty(), "models": {}, "usage": usage})
            for target in (row, total):
                _add(target["figures"], usage, fact)
                _add(target["models"].setdefault(fact["model"], _empty()), usage, fact)
    return {key: {**_finish(row["figures"]), "models": {name: _finish(f) for name, f in row["models"].items()}}
            for key, row in [*rows.items(), ("TOTAL", total)]}


def assert_report_matches(printed: dict[str, Any], expected: dict[str, Any], kind: str) -> None:
    """The CLI's JSON report equals the expected sums, row by row and model by model, in the report's order."""
    key_field = "period" if kind in ("daily", "weekly", "monthly") else kind
    got = {(row["path"] if kind == "session" else row[key_field]): row for row in printed["rows"]}
    got["TOTAL"] = printed["totals"]
    # Every report names a model without its provider: `claude-opus-4-1`, never `anthropic/claude-opus-4-1`.
    expected = {(key.split("/", 1)[1] if kind == "model" and key != "TOTAL" else key): want
                for key, want in expected.items()}
    assert set(got) == set(expected), kind
    for key, want in expected.items():
        row = got[key]
        assert {name: row[name] for name in FIGURES} == {name: want[name] for name in FIGURES}, (kind, key)
        assert math.isclose(row["cost"], want["cost"], rel_tol=1e-9, abs_tol=1e-9), (kind, key)
        assert row["models"] == [name.split("/", 1)[1] for name in sorted(want["models"])], (kind, key)
        split = {item["model"]: item for item in row["breakdown"]}
        assert set(split) == {name.split("/", 1)[1] for name in want["models"]}
        for name, figures in want["models"].items():
            shown = split[name.split("/", 1)[1]]
            assert {f: shown[f] for f in FIGURES} == {f: figures[f] for f in FIGURES}, (kind, key, name)
            assert math.isclose(shown["cost"], figures["cost"], rel_tol=1e-9, abs_tol=1e-9)
    keys = [row[key_field] for row in printed["rows"]]
    if kind in ("daily", "weekly", "monthly"):
        assert keys == sorted(keys)
    else:
        costs = [row["cost"] for row in printed["rows"]]
        assert costs == sorted(costs, reverse=True)


# -- fixtures ----------------------------------------------------------------------------------------------

@pytest.fixture
def local_zone(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Run the test (and the processes it starts) in ZONE, so that local days are not UTC days."""
    monkeypatch.setenv("TZ", ZONE)
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()


class Agent:
    """A generated agent dir with forks, its catalog file, and a project folder to run commands in."""

    def __init__(self, root: Path) -> None:
        self.home = root / "home"
        self.agent = self.home / ".xcsh" / "agent"
        self.manifest = generate_corpus(self.agent, sessions=45, projects=3, total_bytes=1_500_000, seed=7,
                                        home=self.home, now=NOW, fork_rate=0.35)
        self.catalog = root / "catalog.db"
        valid = [s for s in self.manifest.sessions if not s.damaged and s.message_count]
        by_cwd: dict[str, list[Any]] = {}
        for session in valid:
            by_cwd.setdefault(session.cwd, []).append(session)
        self.project = Path(max(by_cwd, key=lambda cwd: len(by_cwd[cwd])))
        self.project.mkdir(parents=True, exist_ok=True)
        project = next(p for p in self.manifest.projects if p.cwd == str(self.project))
        # The project's folders in both naming schemes (its sessions in the nested folder are not among them).
        self.project_folders = {str(self.agent / "sessions" / name) for name in (project.documented_dir, project.agent_dir)}

    @property
    def sessions_root(self) -> Path:
        return self.agent / "sessions"

    def cli(self, *args: str, catalog: str | None = None) -> list[str]:
        return ["--agent-dir", str(self.agent), "--catalog", catalog or str(self.catalog), *args]


@pytest.fixture
def agent(tmp_path: Path, local_zone: None, monkeypatch: pytest.MonkeyPatch) -> Agent:
    made = Agent(tmp_path)
    monkeypatch.chdir(made.project)
    monkeypatch.setenv("HOME", str(made.home))
    return made


def _report(agent: Agent, capsys: pytest.CaptureFixture[str], kind: str, *extra: str,
            catalog: str | None = None) -> dict[str, Any]:
    result = run_cli(agent.cli("usage", kind, "--breakdown", "--json", *extra, catalog=catalog), capsys)
    assert result.code == 0, result.err
    return json.loads(result.out)


def check_plain_reports(cli: Callable[..., list[str]], capsys: pytest.CaptureFixture[str],
                        catalog: str | None = None) -> None:
    """Every report's --json without --breakdown equals the --breakdown report (the one the other checks compare
    with the files) without its breakdowns, to the last bit of every cost."""
    for kind in KINDS:
        for extra in (("--all",), ()):
            plain = run_cli(cli("usage", kind, "--json", *extra, catalog=catalog), capsys)
            full = run_cli(cli("usage", kind, "--breakdown", "--json", *extra, catalog=catalog), capsys)
            assert plain.code == full.code == 0, plain.err + full.err
            summed = json.loads(full.out)
            for row in [*summed["rows"], summed["totals"]]:
                del row["breakdown"]
            assert json.loads(plain.out) == summed, (kind, extra)


# Titles, first messages, folders and model names a table must show as one safe line each, at the right width.
HOSTILE_TITLES = ("\x1b]0;owned\x07 title\twith tabs\r\nsecond line", "日本語のタイトル 🚀👩‍👩‍👧 テスト",
                  "مرحبا بالعالم \u202eעברית\u202c", "a very long title " * 30, "   ", None)
HOSTILE_MODELS = (("evil\x1b[31m", "模型\u202e-rtl\x07"), ("anthropic", "claude\nopus"), ("openai", "gpt-5"),
                  ("google", "gemini-2.5-pro\x9b"))


def add_hostile_sessions(agent: Agent) -> Path:
    """Sessions with hostile titles and model names in a project of their own (its one folder), and sessions whose
    cwds are hostile (a control character, wide text, none, the home itself); the hostile project's folder."""
    project = agent.home / "hostile proj"
    project.mkdir(parents=True, exist_ok=True)
    folder = agent.sessions_root / documented_project_dir_name(project)
    cwds = [str(agent.home / "proj\x1bname"), "/opt/自分の\u202eproject", "", str(agent.home), str(project)]
    for index, title in enumerate((*HOSTILE_TITLES, *[None] * len(cwds))):
        # ids sharing a long prefix (the table shows longer prefixes), one with a control character in its prefix
        session_id = f"abcdef{index:010x}" if index != 3 else "abcdef\x1b[31m000003"
        cwd = str(project) if index < len(HOSTILE_TITLES) else cwds[index - len(HOSTILE_TITLES)]
        head = {"type": "session", "version": 3, "id": session_id, "timestamp": "2026-02-10T08:00:00.000Z",
                "cwd": cwd, **({"title": title} if title is not None else {})}
        first = {"type": "message", "id": f"u{index:07d}", "parentId": None, "timestamp": "2026-02-10T08:00:00.000Z",
                 "message": {"role": "user", "content": f"first\x1b[2J message {index}\n\u2028of 日本 {index}"}}
        messages = [_assistant(f"h{index:03d}{step:04d}", f"2026-02-{10 + step % 5:02d}T0{step % 10}:30:00.000Z",
                               *HOSTILE_MODELS[(index + step) % len(HOSTILE_MODELS)],
                               [0.0, 0.001, 12345.678, 0.5 * index, 3.25][(index + step) % 5])
                    for step in range(index % 4 + 1)]
        messages[0]["message"]["usage"]["input"] = 2_500_000_000 if index == 2 else 999 * index
        target = folder if index < len(HOSTILE_TITLES) else agent.sessions_root / "hostile-cwds"
        target.mkdir(parents=True, exist_ok=True)
        _append(target / f"2026-02-10T08-00-00-000Z_abcdef{index:010x}.jsonl", [head, first, *messages])
    return project


TABLE_WIDTHS = (None, 30, 80, 132, 400)


def _check_every_report(agent: Agent, capsys: pytest.CaptureFixture[str], catalog: str | None = None) -> None:
    files = counted_files(agent.sessions_root)
    for kind in KINDS:
        assert_report_matches(_report(agent, capsys, kind, "--all", catalog=catalog),
                              expected_report(files, kind, None), kind)
        assert_report_matches(_report(agent, capsys, kind, catalog=catalog),
                              expected_report(files, kind, agent.project_folders), kind)


# -- tests -------------------------------------------------------------------------------------------------

def test_the_corpus_has_forks_whose_copied_entries_the_reference_drops(agent: Agent) -> None:
    files = counted_files(agent.sessions_root)
    forks = [usage for usage in files if usage["parent"]]
    assert any(usage["copied"] for usage in forks if usage["parent"].startswith("/"))  # branched: by path
    assert any(usage["copied"] for usage in forks if not usage["parent"].startswith("/"))  # fork: by id
    assert len({fact["model"] for usage in files for fact in usage["facts"]}) >= 4
    assert len({fact["model"].split("/")[0] for usage in files for fact in usage["facts"]}) >= 3


def test_every_report_from_the_catalog_and_from_the_files_equals_the_files_summed(agent: Agent, capsys) -> None:
    _check_every_report(agent, capsys)
    _check_every_report(agent, capsys, catalog="off")
    check_plain_reports(agent.cli, capsys)
    check_plain_reports(agent.cli, capsys, catalog="off")
    for kind in KINDS:  # the sums are exact: the catalog's text is the files', byte for byte
        for extra in (("--all",), ()):
            assert (run_cli(agent.cli("usage", kind, "--breakdown", "--json", *extra), capsys).out
                    == run_cli(agent.cli("usage", kind, "--breakdown", "--json", *extra, catalog="off"), capsys).out)


def summed_table(agent: Agent, kind: str, cwd: Path, all_projects: bool, width: int | None) -> str:
    """The table of the catalog's summed report, bars on a width."""
    from sessdex.catalog.cli.usage_table import usage_table
    from sessdex.catalog.queries.sessions import open_catalog
    from sessdex.core.usage_terms import DateRange

    with open_catalog(str(agent.agent), str(agent.catalog)) as catalog:
        report = catalog.usage_report(kind, cwd, all_projects=all_projects, days=DateRange(None, None))
    return usage_table(report, width, breakdown=False, bars=width is not None, tsv=width is None) + "\n"


def test_the_table_shows_hostile_names_as_one_safe_line_each_at_every_width(agent: Agent, capsys,
                                                                            monkeypatch) -> None:
    hostile = add_hostile_sessions(agent)
    run_cli(agent.cli("index"), capsys)
    for cwd, scope in ((agent.project, ("--all",)), (hostile, ())):
        monkeypatch.chdir(cwd)
        for kind in KINDS:
            for columns in (None, 72, 200):
                if columns is None:
                    monkeypatch.delenv("COLUMNS", raising=False)
                else:
                    monkeypatch.setenv("COLUMNS", str(columns))
                printed = run_cli(agent.cli("usage", kind, *scope), capsys)
                assert printed.code == 0 and printed.err == ""
                assert printed.out == summed_table(agent, kind, cwd, bool(scope), columns), (kind, scope, columns)
    shown = run_cli(agent.cli("usage", "session"), capsys).out
    assert "\x1b" not in shown and "日本語のタイトル" in shown and "~/proj" not in shown
    assert "abcdef\ufffd[31m0" in shown  # the id's control character shown as U+FFFD
    assert "~/proj name" in run_cli(agent.cli("usage", "project", "--all"), capsys).out  # ESC became a space


def test_since_and_until_keep_the_local_days_between(agent: Agent, capsys) -> None:
    files = counted_files(agent.sessions_root)
    days = sorted({fact["day"].isoformat() for usage in files for fact in usage["facts"]})
    since, until = days[len(days) // 4], days[3 * len(days) // 4]
    for catalog in (None, "off"):
        for kind in ("daily", "session"):
            printed = _report(agent, capsys, kind, "--all", "--since", since, "--until", until.replace("-", ""),
                              catalog=catalog)
            assert_report_matches(printed, expected_report(files, kind, None, since, until), kind)


def test_bad_report_names_and_dates_are_usage_errors(agent: Agent, capsys) -> None:
    for args in (("hourly",), ("--since", "yesterday"), ("--since", "2026-02-10", "--until", "2026-02-01")):
        result = run_cli(agent.cli("usage", *args), capsys)
        assert result.code == 2 and result.out == ""
        assert result.err.count("\n") == 1 and "Traceback" not in result.err


def test_the_table_has_a_total_row_and_bars_on_a_terminal_width(agent: Agent, capsys, monkeypatch) -> None:
    monkeypatch.setenv("COLUMNS", "160")
    lines = run_cli(agent.cli("usage", "monthly", "--all"), capsys).out.splitlines()
    assert lines[0].split()[:2] == ["MONTH", "MODELS"] and lines[-1].startswith("TOTAL")
    assert any("█" in line for line in lines[1:-1]) and "█" not in lines[-1]
    monkeypatch.delenv("COLUMNS")
    piped = run_cli(agent.cli("usage", "monthly", "--all"), capsys).out
    assert "█" not in piped and piped.splitlines()[-1].startswith("TOTAL")


def test_the_table_fits_narrow_terminals_and_names_models_one_way_once(agent: Agent, capsys, monkeypatch) -> None:
    for columns in (50, 60):
        monkeypatch.setenv("COLUMNS", str(columns))
        for kind in ("daily", "session", "model"):
            lines = run_cli(agent.cli("usage", kind, "--all"), capsys).out.splitlines()
            assert all(display_width(line) <= columns for line in lines), (kind, columns)
            assert lines[0].split()[-1] == "COST" and lines[-1].startswith("TOTAL")
    monkeypatch.setenv("COLUMNS", "200")
    models = run_cli(agent.cli("usage", "model", "--all"), capsys).out
    assert "/" not in models  # `claude-opus-4-1`, as the MODELS cells name it, never `anthropic/claude-opus-4-1`
    daily = run_cli(agent.cli("usage", "daily", "--all"), capsys).out.splitlines()
    cells = [line.split("  ")[1] for line in daily[1:-1] if "  " in line]
    assert "same" in [cell.strip() for cell in cells] or len(set(cells)) == len(cells)
    for previous, line in zip(daily[1:-2], daily[2:-1]):
        assert previous.split("  ")[1] != line.split("  ")[1] or line.split("  ")[1].strip() == "same"
    fields = json.loads(run_cli(agent.cli("usage", "--all", "--json", "period,cost"), capsys).out)
    assert all(list(row) == ["period", "cost"] for row in fields["rows"]) and list(fields["totals"]) == ["period",
                                                                                                          "cost"]


def test_list_json_carries_each_sessions_cost_and_tokens(agent: Agent, capsys) -> None:
    by_path = {}
    for path in agent.sessions_root.rglob("*.jsonl"):
        found = _session_file(path)
        if found is not None:  # the session's own totals: every assistant message in its file, copies included
            records = [r for r in _records(path) if isinstance(r, dict) and r.get("type") == "message"
                       and r["message"].get("role") == "assistant"]
            by_path[str(path)] = (sum(r["message"]["usage"]["cost"]["total"] for r in records),
                                  sum(r["message"]["usage"][k] for r in records
                                      for k in ("input", "output", "cacheRead", "cacheWrite")))
    for catalog in (None, "off"):
        rows = json.loads(run_cli(agent.cli("list", "--all", "--json", catalog=catalog), capsys).out)
        assert len(rows) == len(by_path)
        for row in rows:
            cost, tokens = by_path[row["path"]]
            assert row["totalTokens"] == tokens and math.isclose(row["cost"], cost, rel_tol=1e-9, abs_tol=1e-12)


def _same_report(one: Any, other: Any) -> bool:
    """Equal reports, costs (summed in another order, so maybe not to the last bit) within rounding."""
    if isinstance(one, dict) and isinstance(other, dict):
        return one.keys() == other.keys() and all(
            math.isclose(one[key], other[key], rel_tol=1e-9, abs_tol=1e-9) if key == "cost"
            else _same_report(one[key], other[key]) for key in one)
    if isinstance(one, list) and isinstance(other, list):
        return len(one) == len(other) and all(_same_report(a, b) for a, b in zip(one, other))
    return bool(one == other)


def _append(path: Path, records: list[dict[str, Any]], *, newline: bool = True) -> None:
    data = b"\n".join(json.dumps(record).encode() for record in records) + (b"\n" if newline else b"")
    with open(path, "ab") as handle:
        handle.write(data)


def _assistant(entry_id: str, stamp: str, provider: str, model: str, cost: float) -> dict[str, Any]:
    return {"type": "message", "id": entry_id, "parentId": None, "timestamp": stamp,
            "message": {"role": "assistant", "content": [{"type": "text", "text": "appended"}], "provider": provider,
                        "model": model, "usage": {"input": 1000, "output": 200, "cacheRead": 50, "cacheWrite": 7,
                                                  "cost": {"total": cost}}}}


def _wait_until(condition: Callable[[], bool], timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "the catalog did not catch up"
        time.sleep(0.1)


@contextlib.contextmanager
def running_watch(agent: Agent) -> Iterator[None]:
    """A real `sessdex watch` process keeping the agent's catalog current (its heartbeat published) for the block."""
    watcher = subprocess.Popen([sys.executable, "-m", "sessdex.catalog", *agent.cli("watch")], cwd=REPO,
                               env={**os.environ, "TZ": ZONE}, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        _wait_until(lambda: read_heartbeat(resolve_location(agent.agent, str(agent.catalog))) is not None
                    or watcher.poll() is not None)
        assert watcher.poll() is None
        yield
    finally:
        watcher.send_signal(signal.SIGINT)
        try:
            watcher.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            watcher.kill()
            watcher.communicate()


@pytest.mark.slow
def test_reports_follow_appends_and_new_forks_while_sessdex_watch_runs(agent: Agent, capsys) -> None:
    run_cli(agent.cli("index"), capsys)
    env = {**os.environ, "TZ": ZONE}
    with running_watch(agent):
        files = counted_files(agent.sessions_root)
        plain = next(usage for usage in files if not usage["parent"] and usage["folder"] in agent.project_folders)
        fork = next(usage for usage in files if usage["parent"] and usage["parent"].startswith("/"))
        parent_path = Path(fork["parent"])
        parent = _records(parent_path)
        # 1. a new assistant message in an ordinary session, the last line still without its newline;
        _append(Path(plain["path"]), [_assistant("e0000001", "2026-02-16T09:30:00.000Z", "openai", "gpt-5", 0.5)],
                newline=False)
        # 2. the parent grows, and its branched fork copies that new entry too (counted once, in the parent);
        grown = _assistant("e0000002", "2026-02-15T23:30:00.000Z", "anthropic", "claude-opus-4-1", 1.25)
        _append(parent_path, [grown])
        _append(Path(fork["path"]), [grown, _assistant("e0000003", "2026-02-16T01:00:00.000Z", "google",
                                                       "gemini-2.5-pro", 0.75)])
        # 3. a new fork of the parent (by id) copying every entry, then one of its own;
        new_fork = Path(agent.sessions_root / Path(plain["path"]).parent.name / "2026-02-16T09-40-00-000Z_1fffffffffffffff.jsonl")
        header = {"type": "session", "version": 3, "id": "1fffffffffffffff", "timestamp": "2026-02-16T09:40:00.000Z",
                  "cwd": plain["cwd"], "parentSession": parent[0 if parent[0]["type"] == "session" else 1]["id"]}
        entries = [record for record in _records(parent_path) if record.get("type") not in ("session", "title")]
        _append(new_fork, [header, *entries, _assistant("e0000004", "2026-02-16T09:41:00.000Z", "openai",
                                                        "gpt-5-mini", 0.125)])
        # 4. the torn line of step 1 ends, and another message follows it.
        with open(plain["path"], "ab") as handle:
            handle.write(b"\n")
        _append(Path(plain["path"]), [_assistant("e0000005", "2026-02-16T09:50:00.000Z", "openai", "gpt-5", 2.0)])

        def caught_up() -> bool:
            now = counted_files(agent.sessions_root)
            try:
                for kind in ("daily", "session", "model"):
                    assert_report_matches(_report(agent, capsys, kind, "--all"), expected_report(now, kind, None), kind)
                    assert_report_matches(_report(agent, capsys, kind), expected_report(now, kind, agent.project_folders),
                                          kind)
            except AssertionError:
                return False
            return True

        _wait_until(caught_up)
        check_plain_reports(agent.cli, capsys)
        now = counted_files(agent.sessions_root)
        assert next(u for u in now if u["path"] == str(new_fork))["copied"] == len(
            next(u for u in files if u["path"] == str(parent_path))["facts"]) + 1
        _check_every_report(agent, capsys)
        # The fast path (a real process) answers the same while the watcher keeps the catalog current.
        fast = subprocess.run([sys.executable, "-c", "from sessdex.catalog.cli.entry import main; main()",
                               *agent.cli("usage", "weekly", "--all", "--breakdown", "--json")], cwd=agent.project,
                              env=env, capture_output=True, text=True, timeout=60)
        assert fast.returncode == 0, fast.stderr
        assert_report_matches(json.loads(fast.stdout), expected_report(now, "weekly", None), "weekly")


def test_the_sqlalchemy_backend_runs_the_same_report_statements(agent: Agent, capsys) -> None:
    from sessdex.catalog.queries.sessions import Catalog
    from sessdex.core.paths import AgentPaths
    from sessdex.core.usage_terms import DateRange

    run_cli(agent.cli("index"), capsys)
    paths = AgentPaths(agent_dir=agent.agent, home=agent.home)
    files = counted_files(agent.sessions_root)
    location = resolve_location(agent.agent, str(agent.catalog))
    with Catalog(paths, location, backend="sqlalchemy") as catalog:
        for kind in KINDS:
            for all_projects, folders in ((True, None), (False, agent.project_folders)):
                report = catalog.usage_report(kind, agent.project, all_projects=all_projects, days=DateRange())
                assert_report_matches(report.to_json(True), expected_report(files, kind, folders), kind)


def test_control_characters_in_names_never_reach_the_table(tmp_path: Path, local_zone: None, capsys,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    agent_dir = tmp_path / "agent"
    folder = agent_dir / "sessions" / "--p--"
    folder.mkdir(parents=True)
    evil = _assistant("e0000001", "2026-02-16T09:30:00.000Z", "evil\x1b[31m", "m\x07odel", 0.5)
    _append(folder / "s.jsonl", [{"type": "session", "version": 3, "id": "abcdef0123456789",
                                  "timestamp": "2026-02-16T09:00:00.000Z", "cwd": "/p\x1b]0;x\x07"}, evil])
    monkeypatch.setenv("COLUMNS", "200")
    for kind in KINDS:
        for catalog in (str(tmp_path / "catalog.db"), "off"):
            result = run_cli(["--agent-dir", str(agent_dir), "--catalog", catalog, "usage", kind, "--all",
                              "--breakdown"], capsys)
            assert result.code == 0 and "$0.50" in result.out
            assert not any(char in result.out for char in "\x1b\x07"), (kind, result.out)


def test_control_characters_in_names_are_escaped_in_json_from_the_catalog_and_the_files(tmp_path: Path, local_zone: None,
                                                                         capsys) -> None:
    agent_dir = tmp_path / "agent"
    folder = agent_dir / "sessions" / "--p--"
    folder.mkdir(parents=True)
    evil = _assistant("e0000001", "2026-02-16T09:30:00.000Z", "evil\x1b[31m", "m\x9bodel\x7f", 0.5)
    _append(folder / "s.jsonl", [{"type": "session", "version": 3, "id": "abcdef0123456789",
                                  "timestamp": "2026-02-16T09:00:00.000Z", "cwd": "/p\x1b]0;x\x07",
                                  "title": "t\u0085itle\u2028\ud800"}, evil])
    for kind in KINDS:
        printed = set()
        for catalog in (str(tmp_path / "catalog.db"), "off"):
            for extra in ((), ("--breakdown",)):
                result = run_cli(["--agent-dir", str(agent_dir), "--catalog", catalog, "usage", kind, "--all",
                                  "--json", *extra], capsys)
                assert result.code == 0
                assert not any(char in result.out for char in "\x1b\x07\x9b\x7f\x85"), (kind, result.out)
                report = json.loads(result.out)
                assert report["totals"]["models"] == ["m\x9bodel\x7f"]  # named without its provider
                if kind == "session":
                    assert report["rows"][0]["cwd"] == "/p\x1b]0;x\x07"
                    assert report["rows"][0]["title"] == "t\u0085itle\u2028\ufffd"  # a lone surrogate: U+FFFD
                if not extra:
                    printed.add(result.out)
        assert len(printed) == 1, kind  # the catalog's text is the file scan's, byte for byte


def _session_costs(agent_dir: Path, capsys, catalog: str) -> dict[str, tuple[int, float]]:
    printed = json.loads(run_cli(["--agent-dir", str(agent_dir), "--catalog", catalog, "usage", "session", "--all",
                                  "--json"], capsys).out)
    return {row["session"]: (row["messages"], round(row["cost"], 6)) for row in printed["rows"]}


def test_a_fork_of_a_fork_counts_each_entry_once_whatever_the_order_files_arrive_in(
        tmp_path: Path, local_zone: None, capsys) -> None:
    agent_dir = tmp_path / "agent"
    folder = agent_dir / "sessions" / "--p--"
    folder.mkdir(parents=True)
    catalog = str(tmp_path / "catalog.db")

    def header(session_id: str, parent: str | None = None) -> dict[str, Any]:
        return {"type": "session", "version": 3, "id": session_id, "timestamp": "2026-02-16T09:00:00.000Z",
                "cwd": "/p", **({"parentSession": parent} if parent else {})}

    own = {name: [_assistant(f"{name}000000{n}", f"2026-02-16T0{n}:00:00.000Z", "p", "m", cost)
                  for n, cost in enumerate(costs)]
           for name, costs in (("a", (1.0, 2.0)), ("b", (4.0,)), ("c", (8.0,)))}
    grand, parent, child = folder / "g.jsonl", folder / "p.jsonl", folder / "c.jsonl"
    _append(grand, [header("a000000000000001"), *own["a"]])
    # The child is a branched session of the parent (named by path), which is a fork of the grandparent (by id).
    _append(child, [header("c000000000000003", str(parent)), *own["a"], *own["b"], *own["c"]])
    reference = _session_costs(agent_dir, capsys, "off")  # no parent file yet: the child counts what it holds
    assert reference == {"a000000000000001": (2, 3.0), "c000000000000003": (4, 15.0)}
    assert _session_costs(agent_dir, capsys, catalog) == reference

    _append(parent, [header("b000000000000002", "a000000000000001"), *own["a"], *own["b"]])
    expected = {"a000000000000001": (2, 3.0), "b000000000000002": (1, 4.0), "c000000000000003": (1, 8.0)}
    assert _session_costs(agent_dir, capsys, "off") == expected
    assert _session_costs(agent_dir, capsys, catalog) == expected  # the child was re-marked when its parent came

    parent.unlink()  # the copies the child holds count in the child again, as a file scan counts them
    assert _session_costs(agent_dir, capsys, catalog) == _session_costs(agent_dir, capsys, "off") == reference


def test_sessions_indexed_from_outside_the_sessions_root_stay_out_of_every_projects_report(
        tmp_path: Path, local_zone: None, capsys) -> None:
    agent_dir, outside = tmp_path / "agent", tmp_path / "elsewhere"
    (agent_dir / "sessions" / "--p--").mkdir(parents=True)
    outside.mkdir()
    for folder, session_id, cost in ((agent_dir / "sessions" / "--p--", "a000000000000001", 1.0),
                                     (outside, "b000000000000002", 100.0)):
        _append(folder / f"{session_id}.jsonl", [
            {"type": "session", "version": 3, "id": session_id, "timestamp": "2026-02-16T09:00:00.000Z", "cwd": "/p"},
            _assistant("e0000001", "2026-02-16T09:30:00.000Z", "p", "m", cost)])
    catalog = str(tmp_path / "catalog.db")
    listed = run_cli(["--agent-dir", str(agent_dir), "--catalog", catalog, "list", "--session-dir", str(outside)], capsys)
    assert listed.code == 0 and "b0000000" in listed.out  # the outside session is in the catalog now
    for kind in KINDS:
        reports = [json.loads(run_cli(["--agent-dir", str(agent_dir), "--catalog", source, "usage", kind, "--all",
                                       "--json"], capsys).out) for source in (catalog, "off")]
        assert _same_report(*reports) and reports[0]["totals"]["cost"] == 1.0


def test_the_session_report_names_each_session_alike_from_the_catalog_and_from_the_files(agent: Agent, capsys) -> None:
    names = ("session", "path", "cwd", "title", "firstMessage")
    for extra in ((), ("--since", "2000-01-01")):  # the sums kept ahead, and the rollup summed on demand
        reports = [_report(agent, capsys, "session", "--all", *extra, catalog=catalog) for catalog in (None, "off")]
        named = [{row["path"]: tuple(row[name] for name in names) for row in report["rows"]} for report in reports]
        assert named[0] == named[1] and len(named[0]) > 20
        assert all(first is None or len(first) <= 200 for _, _, _, _, first in named[0].values())
        assert any(title is None and first for _, _, _, title, first in named[0].values())


# -- machines: one catalog shared by two agent dirs ------------------------------------------------------------

class Machines:
    """The `agent` fixture's dir as machine `laptop`, and another generated agent dir as machine `devbox`, with
    its own home, indexed into the same SQLite catalog file. The devbox also holds copies of two laptop forks
    (one naming its parent by id, one by path) whose parents are on the laptop only: on the devbox they copied
    nothing, so they count in full there."""

    def __init__(self, laptop: Agent, root: Path) -> None:
        self.laptop = laptop
        self.devbox_home = root / "devbox" / "home"
        self.devbox_agent = self.devbox_home / ".xcsh" / "agent"
        generate_corpus(self.devbox_agent, sessions=30, projects=3, total_bytes=900_000, seed=8,
                        home=self.devbox_home, now=NOW, fork_rate=0.35)
        forks = [usage for usage in counted_files(laptop.sessions_root) if usage["parent"] and usage["copied"]]
        for parent_by_path in (False, True):
            fork = next(usage for usage in forks if usage["parent"].startswith("/") == parent_by_path)
            copy = self.devbox_root / Path(fork["folder"]).name / Path(fork["path"]).name
            copy.parent.mkdir(parents=True, exist_ok=True)
            copy.write_bytes(Path(fork["path"]).read_bytes())
        # The laptop's project (under its home) at the same place under the devbox's home: the devbox's folder
        # for it is named from its own home (documented naming), unlike any folder of the laptop.
        relative = laptop.project.relative_to(laptop.home)
        self.devbox_project_folder = self.devbox_root / ("--" + str(self.devbox_home / relative).lstrip("/")
                                                         .replace("/", "-") + "--")
        self.devbox_project_folder.mkdir()
        _append(self.devbox_project_folder / "2026-02-16T08-00-00-000Z_d0000000000000aa.jsonl", [
            {"type": "session", "version": 3, "id": "d0000000000000aa", "timestamp": "2026-02-16T08:00:00.000Z",
             "cwd": str(self.devbox_home / relative)},
            _assistant("e0000001", "2026-02-16T08:30:00.000Z", "openai", "gpt-5", 0.5),
            _assistant("e0000002", "2026-02-16T08:40:00.000Z", "anthropic", "claude-opus-4-1", 1.5)])

    @property
    def devbox_root(self) -> Path:
        return self.devbox_agent / "sessions"

    def cli(self, machine: str, *args: str, catalog: str | None = None) -> list[str]:
        agent_dir = self.laptop.agent if machine == "laptop" else self.devbox_agent
        return ["--agent-dir", str(agent_dir), "--catalog", catalog or str(self.laptop.catalog), "--machine", machine,
                *args]

    def index(self, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
              catalog: str | None = None) -> None:
        for machine, home in (("laptop", self.laptop.home), ("devbox", self.devbox_home)):
            monkeypatch.setenv("HOME", str(home))  # the home each machine records
            assert run_cli(self.cli(machine, "index", catalog=catalog), capsys).code == 0
        monkeypatch.setenv("HOME", str(self.laptop.home))


@pytest.fixture
def machines(agent: Agent, tmp_path: Path) -> Machines:
    return Machines(agent, tmp_path)


def _machine_report(machines: Machines, capsys, machine: str, kind: str, *extra: str,
                    catalog: str | None = None) -> dict[str, Any]:
    """`sessdex usage KIND ...` run as `machine`: that machine's sessions only."""
    result = run_cli(machines.cli(machine, "usage", kind, "--breakdown", "--json", *extra, catalog=catalog), capsys)
    assert result.code == 0, result.err
    return json.loads(result.out)


def _check_machines(machines: Machines, capsys, catalog: str | None = None, *, homes_known: bool = True) -> None:
    """Every report of each machine, and of both with --machines all (the project too when both machines
    recorded their home) equals the files summed."""
    laptop, devbox = counted_files(machines.laptop.sessions_root), counted_files(machines.devbox_root)
    both = laptop + devbox
    project = machines.laptop.project_folders
    for kind in KINDS:
        assert_report_matches(_machine_report(machines, capsys, "laptop", kind, "--all", catalog=catalog),
                              expected_report(laptop, kind, None), kind)
        assert_report_matches(_machine_report(machines, capsys, "devbox", kind, "--all", catalog=catalog),
                              expected_report(devbox, kind, None), kind)
        assert_report_matches(_machine_report(machines, capsys, "laptop", kind, catalog=catalog),
                              expected_report(laptop, kind, project), kind)
        for machine in ("laptop", "devbox"):
            assert_report_matches(_machine_report_all(machines, capsys, machine, kind, "--all", catalog=catalog),
                                  expected_report(both, kind, None), kind)
        if not homes_known:
            continue
        # This project on every machine: the devbox's folder of the same home-relative directory.
        assert_report_matches(_machine_report_all(machines, capsys, "laptop", kind, catalog=catalog),
                              expected_report(both, kind, project | {str(machines.devbox_project_folder)}), kind)


def _machine_report_all(machines: Machines, capsys, machine: str, kind: str, *extra: str,
                        catalog: str | None = None) -> dict[str, Any]:
    """`sessdex --machines all usage KIND ...` run as `machine`."""
    args = machines.cli(machine, "usage", kind, "--breakdown", "--json", *extra, catalog=catalog)
    result = run_cli(["--machines", "all", *args], capsys)
    assert result.code == 0, result.err
    return json.loads(result.out)


def test_usage_defaults_to_this_machine_and_machines_all_adds_every_machines(machines: Machines, capsys,
                                                                             monkeypatch) -> None:
    machines.index(capsys, monkeypatch)
    _check_machines(machines, capsys)
    laptop, devbox = counted_files(machines.laptop.sessions_root), counted_files(machines.devbox_root)
    # The laptop forks copied to the devbox count in full there: their parents are on another machine.
    copies = [usage for usage in devbox if usage["parent"] and Path(usage["path"]).name in
              {Path(fork["path"]).name for fork in laptop if fork["copied"]}]
    assert len(copies) == 2 and all(usage["copied"] == 0 for usage in copies)
    # With a date range the rollup is summed per machine (not the sums kept ahead).
    days = sorted({fact["day"].isoformat() for usage in laptop + devbox for fact in usage["facts"]})
    since, until = days[len(days) // 4], days[3 * len(days) // 4]
    for kind in ("daily", "session", "project"):
        assert_report_matches(_machine_report_all(machines, capsys, "laptop", kind, "--all", "--since", since,
                                                  "--until", until),
                              expected_report(laptop + devbox, kind, None, since, until), kind)
        assert_report_matches(_machine_report(machines, capsys, "devbox", kind, "--all", "--since", since,
                                              "--until", until),
                              expected_report(devbox, kind, None, since, until), kind)


def test_the_session_table_says_which_machine_each_session_is_on(machines: Machines, capsys, monkeypatch) -> None:
    machines.index(capsys, monkeypatch)
    devbox_ids = {usage["id"] for usage in counted_files(machines.devbox_root) if usage["facts"]}
    result = run_cli(["--machines", "all", *machines.cli("laptop", "usage", "session", "--all", "--table")], capsys)
    assert result.code == 0, result.err
    header, *rows = result.out.splitlines()
    assert header.split()[-1] == "MACHINE"
    on_devbox = [row for row in rows if row.split()[-1] == "devbox"]
    assert on_devbox and len(on_devbox) == len(devbox_ids)
    assert all(any(row.startswith(session_id[:4]) for session_id in devbox_ids) for row in on_devbox)
    alone = run_cli(machines.cli("laptop", "usage", "session", "--all", "--table"), capsys)
    assert alone.code == 0 and "MACHINE" not in alone.out.splitlines()[0]


def test_reindexing_one_machine_leaves_the_other_machines_usage_alone(machines: Machines, capsys,
                                                                      monkeypatch) -> None:
    machines.index(capsys, monkeypatch)
    devbox_before = {kind: _machine_report(machines, capsys, "devbox", kind, "--all") for kind in KINDS}
    laptop_files = counted_files(machines.laptop.sessions_root)
    # The laptop's parent of a fork goes (its fork counts its copies again), and a session grows.
    fork = next(usage for usage in laptop_files if usage["parent"] and usage["copied"]
                and not usage["parent"].startswith("/"))
    parent = next(usage for usage in laptop_files if usage["id"] == fork["parent"])
    Path(parent["path"]).unlink()
    _append(Path(fork["path"]), [_assistant("e00000ff", "2026-02-16T09:30:00.000Z", "openai", "gpt-5", 3.0)])
    assert run_cli(machines.cli("laptop", "index"), capsys).code == 0
    for kind in KINDS:
        assert _machine_report(machines, capsys, "devbox", kind, "--all") == devbox_before[kind]
    _check_machines(machines, capsys)
    for machine in ("laptop", "devbox"):
        check_plain_reports(functools.partial(machines.cli, machine), capsys)


def test_usage_takes_machines_before_or_after_the_command(machines: Machines, capsys, monkeypatch) -> None:
    from sessdex.catalog.cli.commands import parse_command_line

    assert parse_command_line(["--machines", "all", "usage", "--json"]).machines == "all"
    assert parse_command_line(["usage", "--machines", "all"]).machines == "all"
    assert parse_command_line(["--machines=this", "list"]).machines == "this"
    assert run_cli(["--machines", "some", "usage"], capsys).code == 2
    machines.index(capsys, monkeypatch)
    env = {**os.environ, "TZ": ZONE}
    both = counted_files(machines.laptop.sessions_root) + counted_files(machines.devbox_root)
    fast = subprocess.run([sys.executable, "-c", "from sessdex.catalog.cli.entry import main; main()",
                           "--machines", "all", *machines.cli("laptop", "usage", "weekly", "--all", "--breakdown",
                                                              "--json")],
                          cwd=machines.laptop.project, env=env, capture_output=True, text=True, timeout=60)
    assert fast.returncode == 0, fast.stderr
    assert_report_matches(json.loads(fast.stdout), expected_report(both, "weekly", None), "weekly")



# Costs whose float sum depends on the order they are added in (0.1 + 0.2 + 0.3 != 0.3 + 0.2 + 0.1).
ORDER_SENSITIVE_COSTS = (0.1, 0.2, 0.3, 0.7, 1e-7, 0.15, 0.45, 1 / 3, 2.675, 1e-9, 0.05, 123.456)


def _costly_sessions(agent_dir: Path, order: list[int]) -> None:
    """One session per cost, all on one day and model, written in `order` (their mtimes follow it)."""
    folder = agent_dir / "sessions" / "--p--"
    folder.mkdir(parents=True, exist_ok=True)
    for position, index in enumerate(order):
        session_id = f"c{index:015d}"
        path = folder / f"2026-02-16T09-00-{index:02d}-000Z_{session_id}.jsonl"
        _append(path, [{"type": "session", "version": 3, "id": session_id, "timestamp": "2026-02-16T09:00:00.000Z",
                        "cwd": "/p"},
                       _assistant(f"e{index:07d}", "2026-02-16T09:30:00.000Z", "p", "m", ORDER_SENSITIVE_COSTS[index]),
                       _assistant(f"f{index:07d}", "2026-02-16T09:31:00.000Z", "p", "m",
                                  ORDER_SENSITIVE_COSTS[-1 - index])])
        os.utime(path, ns=(1_700_000_000_000_000_000 + position * 10**9,) * 2)


def _usage_outputs(agent_dir: Path, catalog: str, capsys) -> dict[tuple[str, bool], str]:
    outputs = {}
    for kind in KINDS:
        for breakdown in (False, True):
            result = run_cli(["--agent-dir", str(agent_dir), "--catalog", catalog, "usage", kind, "--all", "--json",
                              *(["--breakdown"] if breakdown else [])], capsys)
            assert result.code == 0, result.err
            outputs[(kind, breakdown)] = result.out
    return outputs


def test_a_report_is_the_same_bytes_from_the_catalog_and_from_the_files_whatever_the_order(
        tmp_path: Path, local_zone: None, capsys) -> None:
    forwards = list(range(len(ORDER_SENSITIVE_COSTS)))
    backwards = forwards[::-1]
    assert sum(ORDER_SENSITIVE_COSTS[index] for index in forwards) != sum(
        ORDER_SENSITIVE_COSTS[index] for index in backwards)  # a plain float sum would differ
    printed = []
    agent_dir = tmp_path / "agent"
    for name, order in (("forwards", forwards), ("backwards", backwards)):
        shutil.rmtree(agent_dir, ignore_errors=True)
        _costly_sessions(agent_dir, order)
        printed.append(_usage_outputs(agent_dir, "off", capsys))
        printed.append(_usage_outputs(agent_dir, str(tmp_path / name / "catalog.db"), capsys))
        # The catalog subtracts a changed file's old share and adds its new one: still the same bytes.
        changed = sorted((agent_dir / "sessions" / "--p--").iterdir())[order[3]]
        _append(changed, [_assistant("g0000001", "2026-02-16T09:40:00.000Z", "p", "m", 0.1)])
        after = _usage_outputs(agent_dir, str(tmp_path / name / "catalog.db"), capsys)
        assert after == _usage_outputs(agent_dir, "off", capsys)
        changed.write_text(changed.read_text().rsplit("\n", 2)[0] + "\n")  # the appended entry goes again
        assert _usage_outputs(agent_dir, str(tmp_path / name / "catalog.db"), capsys) == printed[-1]
    assert all(outputs == printed[0] for outputs in printed)
    totals = json.loads(printed[0][("daily", False)])["totals"]
    assert totals["cost"] == 2 * sum(round(cost * 10**9) for cost in ORDER_SENSITIVE_COSTS) / 10**9  # nano-dollars


def _retire(catalog: Path, revision: str) -> None:
    """Make an indexed catalog look as a release before the baseline left it: its revision, a column and a
    trigger of that time."""
    import sqlite3

    connection = sqlite3.connect(catalog)
    try:
        connection.execute("UPDATE alembic_version SET version_num = ?", (revision,))
        connection.execute("ALTER TABLE usage_totals ADD COLUMN json TEXT")
        connection.execute("ALTER TABLE usage_facts RENAME COLUMN cost_nanos TO cost")
        connection.execute("CREATE TRIGGER usage_totals_deleted_drop_token AFTER DELETE ON usage_totals BEGIN "
                           "DELETE FROM catalog_meta WHERE key = 'x'; END")
        connection.commit()
    finally:
        connection.close()


@pytest.mark.parametrize("revision", ["0001", "0004_usage_per_machine", "0007_usage_report_tokens"])
def test_a_catalog_at_a_retired_revision_is_rebuilt_from_the_files_with_one_line(agent: Agent, capsys,
                                                                                revision: str) -> None:
    import sqlite3

    assert run_cli(agent.cli("index"), capsys).code == 0
    _retire(agent.catalog, revision)
    reports = Path(f"{agent.catalog}.reports")  # the ready reports of those releases, beside the catalog
    reports.mkdir(mode=0o700)
    (reports / "usage-daily.json").write_text("{}")
    first = run_cli(agent.cli("usage", "daily", "--all", "--json"), capsys)
    assert first.code == 0
    notice = [line for line in first.err.splitlines() if "older sessdex" in line]
    assert len(notice) == 1 and revision in notice[0] and "indexed again" in notice[0]
    assert first.out == run_cli(agent.cli("usage", "daily", "--all", "--json", catalog="off"), capsys).out
    again = run_cli(agent.cli("usage", "daily", "--all", "--json"), capsys)
    assert "older sessdex" not in again.err and again.out == first.out
    assert not reports.exists()
    connection = sqlite3.connect(agent.catalog)
    try:
        assert connection.execute("SELECT version_num FROM alembic_version").fetchall() == [(SCHEMA_REVISION,)]
        assert "json" not in {row[1] for row in connection.execute("PRAGMA table_info(usage_totals)")}
        assert not connection.execute("SELECT name FROM sqlite_master WHERE type = 'trigger'").fetchall()
    finally:
        connection.close()


# -- the session report's rows kept ahead (usage_sessions) ---------------------------------------------------

def _session_outputs(agent: Agent, capsys, catalog: str | None = None) -> list[str]:
    """`usage session --json` (one row per session, printed from the rows kept ahead) of every project and of
    this one."""
    outputs = []
    for extra in (("--all",), ()):
        result = run_cli(agent.cli("usage", "session", "--json", *extra, catalog=catalog), capsys)
        assert result.code == 0, result.err
        outputs.append(result.out)
    return outputs


def test_the_session_rows_follow_appends_rewrites_moves_and_deletions_to_the_files_bytes(agent: Agent,
                                                                                        capsys) -> None:
    assert run_cli(agent.cli("index"), capsys).code == 0
    assert _session_outputs(agent, capsys) == _session_outputs(agent, capsys, catalog="off")
    files = counted_files(agent.sessions_root)
    plain = [usage for usage in files if not usage["parent"] and usage["facts"]]
    fork = next(usage for usage in files if usage["parent"] and usage["copied"]
                and not usage["parent"].startswith("/"))
    parent = next(usage for usage in files if usage["id"] == fork["parent"])
    appended, rewritten, moved = [Path(usage["path"]) for usage in plain if usage["path"] != parent["path"]][:3]
    _append(appended, [_assistant("e0000001", "2026-02-16T09:30:00.000Z", "openai", "gpt-5-new", 0.5)])
    lines = rewritten.read_text().splitlines(keepends=True)
    rewritten.write_text("".join(lines[:max(2, len(lines) // 2)]))  # shorter: read again from its start
    moved.rename(moved.with_name("2026-02-16T09-59-00-000Z_" + moved.name.split("_", 1)[1]))
    Path(parent["path"]).unlink()  # its fork counts the entries it copied again
    assert run_cli(agent.cli("index"), capsys).code == 0
    assert _session_outputs(agent, capsys) == _session_outputs(agent, capsys, catalog="off")
    assert _session_rows_kept(agent.catalog) > 20


def _session_rows_kept(catalog: Path) -> int:
    """The number of usage_sessions rows, checked to be one per file with a rollup row."""
    import sqlite3

    connection = sqlite3.connect(catalog)
    try:
        rows = connection.execute("SELECT count(*) FROM usage_sessions").fetchone()[0]
        files = connection.execute("SELECT count(DISTINCT file_id) FROM usage_rollup").fetchone()[0]
    finally:
        connection.close()
    assert rows == files
    return rows


def test_a_catalog_at_revision_0004_gets_its_session_rows_from_its_rollup(agent: Agent, capsys) -> None:
    import sqlite3

    from alembic import command

    from sessdex.catalog.store.migrate import alembic_on

    assert run_cli(agent.cli("index"), capsys).code == 0
    expected = _session_outputs(agent, capsys)
    location = resolve_location(agent.agent, str(agent.catalog))
    with alembic_on(location) as config:
        command.downgrade(config, "0004_pg_indexes")
    connection = sqlite3.connect(agent.catalog)
    try:
        tables = {row[0] for row in connection.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        assert "usage_sessions" not in tables and "usage_totals" in tables
    finally:
        connection.close()
    first = run_cli(agent.cli("usage", "session", "--all", "--json"), capsys)  # upgrades the catalog
    assert first.code == 0 and "older sessdex" not in first.err
    assert [first.out, *_session_outputs(agent, capsys)[1:]] == expected == _session_outputs(agent, capsys, "off")
    assert _session_rows_kept(agent.catalog) > 20


def test_the_session_rows_of_every_machine_say_whose_they_are(machines: Machines, capsys, monkeypatch) -> None:
    machines.index(capsys, monkeypatch)

    def every_machine(*args: str, catalog: str | None = None) -> list[str]:
        return ["--machines", "all", *machines.cli("laptop", *args, catalog=catalog)]

    check_plain_reports(every_machine, capsys)
    result = run_cli(every_machine("usage", "session", "--all", "--json"), capsys)
    assert result.code == 0, result.err
    rows = json.loads(result.out)["rows"]
    devbox_ids = {usage["id"] for usage in counted_files(machines.devbox_root) if usage["facts"]}
    assert {row["session"] for row in rows if row.get("machine") == "devbox"} == devbox_ids
    assert all(list(row)[:6] == ["session", "path", "cwd", "title", "firstMessage", "machine"]
               for row in rows if "machine" in row)
    costs = [row["cost"] for row in rows]
    assert costs == sorted(costs, reverse=True)
