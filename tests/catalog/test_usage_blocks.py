"""`sessdex usage blocks` and `sessdex usage --line` equal the 5-hour blocks this test computes from the JSONL itself.

The reference reads every session file with the stdlib json module, keeps the assistant messages with usage,
drops an entry a fork copied from its parent (same id and timestamp as an entry of the session its header's
`parentSession` names), sorts the rest by time and cuts them into blocks as ccusage does: a block starts at its
first message's UTC hour and a message more than five hours after the block's start, or after the message before
it, starts the next one. The sessions are written around the real clock, since a block's state depends on now.
"""

from __future__ import annotations

import functools
import json
import math
import os
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from gen_corpus import generate_corpus

from tests.cli_support import run_cli

HOUR = 3600.0
FIVE_HOURS = timedelta(hours=5)
ZONE = "Pacific/Auckland"


# -- the independent reference ----------------------------------------------------------------------------

def _figure(usage: dict[str, Any], name: str) -> float:
    figure = usage.get(name)
    return figure if type(figure) in (int, float) and math.isfinite(figure) else 0


def _facts_of(path: Path) -> tuple[dict[str, Any], list[dict[str, Any]]] | None:
    records = []
    for line in path.read_bytes().splitlines():
        try:
            records.append(json.loads(line, parse_constant=lambda name: 1 / 0))
        except (ValueError, ZeroDivisionError):
            continue
    if records and isinstance(records[0], dict) and records[0].get("type") == "title":
        records = records[1:]
    if not records or not isinstance(records[0], dict) or records[0].get("type") != "session" \
            or not isinstance(records[0].get("id"), str):
        return None
    if not any(isinstance(r, dict) and r.get("type") == "message" for r in records[1:]):
        return None
    facts = []
    for entry in records[1:]:
        message = entry.get("message") if isinstance(entry, dict) and entry.get("type") == "message" else None
        if not isinstance(message, dict) or message.get("role") != "assistant" or not isinstance(message.get("usage"), dict):
            continue
        usage = message["usage"]
        value = functools.partial(_figure, usage)
        cost = usage.get("cost")
        total = cost.get("total") if isinstance(cost, dict) else 0
        facts.append({"key": (entry.get("id"), entry.get("timestamp")),
                      "when": datetime.fromisoformat(entry["timestamp"]).astimezone(UTC),
                      "model": f"{message.get('provider') or 'unknown'}/{message.get('model') or 'unknown'}",
                      "tokens": value("input") + value("output") + value("cacheRead") + value("cacheWrite"),
                      "input": value("input"), "output": value("output"),
                      "cost": total if type(total) in (int, float) and math.isfinite(total) else 0})
    return records[0], facts


def reference_facts(sessions_root: Path) -> list[dict[str, Any]]:
    files = []
    for path in sorted(sessions_root.rglob("*.jsonl")):
        found = _facts_of(path)
        if found is not None:
            files.append((path, *found))
    counted = []
    for path, header, facts in files:
        parents = [other for other in files if other[0] != path
                   and header.get("parentSession") in (other[1]["id"], str(other[0]))]
        copied = {fact["key"] for parent in parents for fact in parent[2] if None not in fact["key"]}
        counted += [{**fact, "path": str(path)} for fact in facts if fact["key"] not in copied]
    return sorted(counted, key=lambda fact: fact["when"])


def reference_blocks(facts: list[dict[str, Any]], now: datetime) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    for fact in facts:
        current = blocks[-1] if blocks else None
        if current is None or fact["when"] - current["start"] > FIVE_HOURS or fact["when"] - current["last"] > FIVE_HOURS:
            current = {"start": fact["when"].replace(minute=0, second=0, microsecond=0), "first": fact["when"],
                       "facts": []}
            blocks.append(current)
        current["last"] = fact["when"]
        current["facts"].append(fact)
    for block in blocks:
        block["end"] = block["start"] + FIVE_HOURS
        block["tokens"] = sum(fact["tokens"] for fact in block["facts"])
        block["cost"] = sum(fact["cost"] for fact in block["facts"])
        block["active"] = False
    if blocks:
        last = blocks[-1]
        last["active"] = now < last["end"] and now - last["last"] < FIVE_HOURS
        minutes = (last["last"] - last["first"]).total_seconds() / 60
        if last["active"] and minutes > 0:
            remaining = max(0.0, (last["end"] - now).total_seconds() / 60)
            last["projected_tokens"] = last["tokens"] + last["tokens"] / minutes * remaining
            last["projected_cost"] = last["cost"] + last["cost"] / minutes * remaining
    return blocks


def _iso(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def assert_blocks_match(printed: list[dict[str, Any]], expected: list[dict[str, Any]], elapsed: float) -> None:
    """The JSON rows equal the reference's blocks; a projection to the drift of the clock over `elapsed` seconds."""
    assert [(row["start"], row["end"], row["active"]) for row in printed] \
        == [(_iso(block["start"]), _iso(block["end"]), block["active"]) for block in expected]
    for row, block in zip(printed, expected):
        assert row["totalTokens"] == block["tokens"]
        assert row["messages"] == len(block["facts"])
        assert row["sessions"] == len({fact["path"] for fact in block["facts"]})
        assert row["models"] == [name.split("/", 1)[1] for name in sorted({fact["model"] for fact in block["facts"]})]
        assert math.isclose(row["cost"], block["cost"], rel_tol=1e-9, abs_tol=1e-9)
        if "projected_cost" in block:
            minutes = (block["last"] - block["first"]).total_seconds() / 60
            drift = elapsed / 60 * (block["cost"] / minutes + block["tokens"] / minutes) + 1e-6
            assert abs(row["projection"]["cost"] - block["projected_cost"]) <= drift
            assert abs(row["projection"]["totalTokens"] - block["projected_tokens"]) <= drift + 1
        else:
            assert row["projection"] is None


# -- a hand-made history around the real clock ------------------------------------------------------------

class History:
    """Sessions written with entries at given times (hours before now), each file's mtime its last entry's; read
    through a SQLite catalog (`catalog` "sqlite") or from the files (`catalog` "off")."""

    def __init__(self, root: Path, catalog: str = "off") -> None:
        self.agent = root / "home" / ".xcsh" / "agent"
        self.catalog = catalog if catalog == "off" else str(root / "catalog.db")
        self.now = time.time()
        self.count = 0

    def session(self, hours_ago: list[float], *, project: str = "--work-a--", cost: float = 0.01,
                model: str = "claude-opus-4-1", parent: Path | None = None, copy: int = 0) -> Path:
        """A session whose assistant messages are at `hours_ago`; with `parent`, its first `copy` entries are
        copies of the parent's (a fork)."""
        self.count += 1
        session_id = f"{0x1000000000000000 + self.count:016x}"
        folder = self.agent / "sessions" / project
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"2026-01-01T00-00-00-000Z_{session_id}.jsonl"
        stamp = lambda hours: datetime.fromtimestamp(self.now - hours * HOUR, UTC)  # noqa: E731
        header: dict[str, Any] = {"type": "session", "version": 3, "id": session_id,
                                  "timestamp": _iso(stamp(max(hours_ago) + 0.01)), "cwd": "/work/" + project.strip("-")}
        lines = []
        if parent is not None:
            header["parentSession"] = str(parent)
            lines += parent.read_text().splitlines()[1:1 + copy]
        last = lines[-1] if lines else None
        parent_id = json.loads(last)["id"] if last else None
        for number, hours in enumerate(hours_ago):
            user_id, reply_id = f"{self.count:04x}{2 * number:04x}", f"{self.count:04x}{2 * number + 1:04x}"
            when = stamp(hours)
            lines.append(json.dumps({"type": "message", "id": user_id, "parentId": parent_id,
                                     "timestamp": _iso(when - timedelta(seconds=5)),
                                     "message": {"role": "user", "content": "hello"}}))
            lines.append(json.dumps({"type": "message", "id": reply_id, "parentId": user_id, "timestamp": _iso(when),
                                     "message": {"role": "assistant", "provider": "anthropic", "model": model,
                                                 "content": [{"type": "text", "text": "hi"}],
                                                 "usage": {"input": 1000 + number, "output": 200, "cacheRead": 300,
                                                           "cacheWrite": 7, "cost": {"total": cost}}}}))
            parent_id = reply_id
        path.write_text("\n".join([json.dumps(header), *lines]) + "\n")
        newest = self.now - min(hours_ago) * HOUR
        os.utime(path, (newest, newest))
        return path

    def cli(self, *args: str) -> list[str]:
        return ["--agent-dir", str(self.agent), "--catalog", self.catalog, *args]


@pytest.fixture
def zone(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("TZ", ZONE)
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()


@pytest.fixture(params=["off", "sqlite"])
def history(tmp_path: Path, zone: None, request: pytest.FixtureRequest) -> History:
    made = History(tmp_path, request.param)
    # Long ago: a block of two sessions, then a message 4h59m after the block's start (same block), then one past
    # the block's five hours (a new block although the gap is short).
    made.session([200.0, 199.5, 196.2], project="--work-old--")
    made.session([199.0, 195.3, 194.9], project="--work-b--", model="gpt-5")
    # A day and a half of work every two hours, never a five-hour gap: the chain reaches back past a day.
    made.session([40.0 - 2 * step for step in range(8)], project="--work-b--", cost=0.02)
    made.session([24.0 - 2 * step for step in range(9)], cost=0.03)
    # The active block: a session and a fork of it that copies its first two messages, both going on now.
    parent = made.session([2.5, 1.5, 0.5], cost=0.25)
    made.session([0.4, 0.1], parent=parent, copy=4, cost=0.5)
    return made


def _blocks_json(history: History, capsys: pytest.CaptureFixture[str], *extra: str) -> tuple[list[dict[str, Any]], float]:
    before = time.time()
    result = run_cli(history.cli("usage", "blocks", "--json", *extra), capsys)
    assert result.code == 0, result.err
    return json.loads(result.out)["rows"], time.time() - before


def test_blocks_equal_the_reference_with_the_active_blocks_projection(history: History, capsys) -> None:
    facts = reference_facts(history.agent / "sessions")
    printed, elapsed = _blocks_json(history, capsys)
    expected = reference_blocks(facts, datetime.fromtimestamp(time.time(), UTC))
    assert_blocks_match(printed, expected, elapsed)
    assert expected[-1]["active"] and "projected_cost" in expected[-1]
    assert len(expected) >= 4 and not any(block["active"] for block in expected[:-1])
    # The fork's copies count once: the active block holds the parent's 3 messages and the fork's own 2.
    assert len(expected[-1]["facts"]) == 5


def test_since_keeps_the_blocks_that_begin_on_those_days_with_the_chain_of_the_whole_history(history: History,
                                                                                              capsys) -> None:
    day = datetime.fromtimestamp(history.now - 30 * HOUR).strftime("%Y-%m-%d")
    printed, elapsed = _blocks_json(history, capsys, "--since", day)
    everything = reference_blocks(reference_facts(history.agent / "sessions"), datetime.fromtimestamp(time.time(), UTC))
    expected = [block for block in everything if block["first"].astimezone().strftime("%Y-%m-%d") >= day]
    assert expected and len(expected) < len(everything)
    assert_blocks_match(printed, expected, elapsed)


def test_the_line_says_todays_cost_and_tokens_and_the_active_block(history: History, capsys) -> None:
    result = run_cli(history.cli("usage", "--line"), capsys)
    assert result.code == 0 and result.err == ""
    now = datetime.fromtimestamp(time.time(), UTC)
    facts = reference_facts(history.agent / "sessions")
    today = now.astimezone().date()
    todays = [fact for fact in facts if fact["when"].astimezone().date() == today]
    active = reference_blocks(facts, now)[-1]
    left = active["end"] - now
    line = result.out.strip()
    assert "\n" not in line and len(line) <= 80
    cost = sum(fact["cost"] for fact in todays)
    tokens = sum(fact["tokens"] for fact in todays)
    assert line.startswith(f"today ${cost:,.2f} {tokens / 1e3:.1f}k tokens · block ${active['cost']:,.2f} ")
    minutes = int(left.total_seconds() // 60)
    assert any(f" {shown // 60}h {shown % 60:02d}m left" in line for shown in (minutes, minutes - 1))
    assert line.endswith(f"→ ${active['projected_cost']:,.2f}")


def test_without_an_active_block_the_line_says_so(tmp_path: Path, zone: None, capsys) -> None:
    history = History(tmp_path)
    history.session([30.0, 29.0])
    assert run_cli(history.cli("usage", "--line"), capsys).out.strip().endswith("· no active block")
    assert run_cli(history.cli("usage", "--line", "--json"), capsys).code == 2


def test_the_table_names_each_model_one_way_and_the_active_blocks_projection(history: History, capsys,
                                                                             monkeypatch) -> None:
    monkeypatch.setenv("COLUMNS", "120")
    shown = run_cli(history.cli("usage", "blocks"), capsys).out
    assert "anthropic/" not in shown and "claude-opus-4-1" in shown and "gpt-5" in shown
    assert "left" in shown.splitlines()[-2]
    assert shown.splitlines()[-1].startswith("active block: $")
    for kind in ("daily", "session", "project", "model"):
        table = run_cli(history.cli("usage", kind, "--all"), capsys).out
        assert "anthropic/" not in table and "openai/" not in table, kind
    monkeypatch.setenv("COLUMNS", "60")
    narrow = run_cli(history.cli("usage", "blocks"), capsys).out.splitlines()
    assert all(len(line) <= 60 for line in narrow[:-1])


@pytest.mark.parametrize("catalog", ["off", "catalog.db"])
def test_blocks_of_a_generated_corpus_with_forks_equal_the_reference(tmp_path: Path, zone: None, capsys,
                                                                     catalog: str) -> None:
    agent = tmp_path / "home" / ".xcsh" / "agent"
    generate_corpus(agent, sessions=40, projects=3, total_bytes=800_000, seed=11, home=tmp_path / "home",
                    now=time.time() - 600, fork_rate=0.3)
    before = time.time()
    catalog = catalog if catalog == "off" else str(tmp_path / catalog)
    result = run_cli(["--agent-dir", str(agent), "--catalog", catalog, "usage", "blocks", "--json"], capsys)
    printed = json.loads(result.out)["rows"]
    expected = reference_blocks(reference_facts(agent / "sessions"), datetime.fromtimestamp(time.time(), UTC))
    assert len(expected) > 5
    assert_blocks_match(printed, expected, time.time() - before)


@pytest.mark.parametrize("catalog", ["off", "sqlite"])
def test_a_chain_of_blocks_days_long_is_read_back_to_its_start(tmp_path: Path, zone: None, capsys,
                                                               catalog: str) -> None:
    history = History(tmp_path, catalog)
    history.session([300.0, 299.0])
    # Three days of a message every 100 minutes in sessions of a few hours each, never a five-hour gap: where
    # each block starts depends on the first of them, read although its files are days old.
    hours = [72.0 - step * 100 / 60 for step in range(44)]
    for start in range(0, len(hours), 4):
        history.session(hours[start:start + 4], project=f"--work-{start % 3}--")
    for since_hours in (20, 50):
        day = datetime.fromtimestamp(history.now - since_hours * HOUR).strftime("%Y-%m-%d")
        printed, elapsed = _blocks_json(history, capsys, "--since", day)
        everything = reference_blocks(reference_facts(history.agent / "sessions"),
                                      datetime.fromtimestamp(time.time(), UTC))
        expected = [block for block in everything if block["first"].astimezone().strftime("%Y-%m-%d") >= day]
        assert expected
        assert_blocks_match(printed, expected, elapsed)
    line = run_cli(history.cli("usage", "--line"), capsys).out
    active = reference_blocks(reference_facts(history.agent / "sessions"), datetime.fromtimestamp(time.time(), UTC))[-1]
    assert active["active"] and f"block ${active['cost']:,.2f} " in line


def test_every_report_names_each_model_in_its_json_as_its_table_does(history: History, capsys, monkeypatch) -> None:
    """One name per model in every report, JSON and table alike: the agent's model id without its provider."""
    monkeypatch.setenv("COLUMNS", "200")
    models = {"claude-opus-4-1", "gpt-5"}
    for kind in ("daily", "weekly", "monthly", "session", "project", "model", "blocks"):
        args = ("usage", kind) if kind == "blocks" else ("usage", kind, "--all")
        extra = () if kind == "blocks" else ("--breakdown",)
        printed = run_cli(history.cli(*args, "--json", *extra), capsys).out
        report = json.loads(printed)
        named = {name for row in report["rows"] for name in row["models"]}
        named |= {split["model"] for row in report["rows"] for split in row.get("breakdown", ())}
        if kind == "model":
            named |= {row["model"] for row in report["rows"]}
            assert [row["model"] for row in report["rows"]] == sorted(models, key=lambda name: name != "claude-opus-4-1")
        assert named == models, kind
        assert "anthropic/" not in printed and "openai/" not in printed, kind
        table = run_cli(history.cli(*args), capsys).out
        for name in models:
            assert name in table, (kind, name)
        assert "anthropic/" not in table and "openai/" not in table, kind
