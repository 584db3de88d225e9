"""The marks file: appended like a session file, read back to each session's current marks, safe against kills."""

from __future__ import annotations

import os
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from sessdex.core.errors import UsageError
from sessdex.core.marks import (
    Marks,
    MarksFileError,
    append_events,
    current_marks,
    file_facts,
    make_event,
    marks_of_facts,
    marks_path,
    read_file_facts,
    valid_tag,
)
from sessdex.core.paths import AgentPaths


@pytest.fixture
def paths(tmp_path: Path) -> AgentPaths:
    agent = tmp_path / "agent"
    agent.mkdir()
    return AgentPaths(agent_dir=agent, home=tmp_path, tmp_dir=tmp_path)


def mark(paths: AgentPaths, session: str, op: str, at: int, machine: str = "here", **fields: object) -> None:
    append_events(paths, [make_event(session, machine, op, now_ms=at, **fields)])


def test_events_add_up_to_the_current_marks(paths: AgentPaths) -> None:
    mark(paths, "s1", "pin", 1)
    mark(paths, "s1", "star", 2)
    mark(paths, "s1", "tag", 3, add=["bug", "wip"])
    mark(paths, "s1", "tag", 4, add=["ui"], remove=["wip"])
    mark(paths, "s1", "note", 5, text="look at the parser")
    mark(paths, "s2", "star", 6)
    mark(paths, "s2", "unstar", 7)
    mark(paths, "s3", "note", 8, text="gone soon")
    mark(paths, "s3", "note", 9, text=None)
    marks = current_marks(paths)
    assert marks == {"s1": Marks(pinned=True, starred=True, tags=("bug", "ui"), note="look at the parser")}
    mark(paths, "s1", "unpin", 10)
    assert current_marks(paths)["s1"].pinned is False


def test_file_and_folder_are_private_whatever_the_umask(paths: AgentPaths) -> None:
    previous = os.umask(0o022)
    try:
        mark(paths, "s1", "pin", 1)
    finally:
        os.umask(previous)
    path = marks_path(paths)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700


def test_a_torn_last_line_is_left_out_and_ended_by_the_next_append(paths: AgentPaths) -> None:
    mark(paths, "s1", "pin", 1)
    path = marks_path(paths)
    with open(path, "ab") as handle:
        handle.write(b'{"session": "s2", "machine": "here", "op": "st')  # a writer killed mid-line
    assert set(current_marks(paths)) == {"s1"}
    mark(paths, "s3", "star", 2)
    facts, bad = read_file_facts(path)
    assert bad == 1 and set(current_marks(paths)) == {"s1", "s3"}
    assert path.read_bytes().endswith(b"\n")


def test_bad_lines_are_skipped_and_counted(paths: AgentPaths) -> None:
    mark(paths, "s1", "pin", 1)
    with open(marks_path(paths), "ab") as handle:
        handle.write(b"not json\n" + b'{"session": "s2", "op": "pin", "time": 1}\n' +  # no machine
                     b'{"session": "s2", "machine": "m", "op": "explode", "time": 1}\n' +
                     b'{"session": "s2", "machine": "m", "op": "tag", "add": ["two words"], "time": 1}\n')
    mark(paths, "s4", "star", 2)
    facts, bad = read_file_facts(marks_path(paths))
    assert bad == 4 and set(current_marks(paths)) == {"s1", "s4"}


def test_within_a_file_the_later_line_wins_even_if_its_clock_went_back(paths: AgentPaths) -> None:
    mark(paths, "s1", "pin", 5_000)
    mark(paths, "s1", "unpin", 1_000)  # the clock was set back meanwhile
    assert "s1" not in current_marks(paths)


def test_across_machines_the_later_mark_wins() -> None:
    laptop, _ = file_facts([make_event("s1", "laptop", "pin", now_ms=10),
                            make_event("s1", "laptop", "tag", now_ms=30, add=["bug"])])
    devbox, _ = file_facts([make_event("s1", "devbox", "unpin", now_ms=20),
                            make_event("s1", "devbox", "tag", now_ms=20, add=["x"], remove=["bug"])])
    assert marks_of_facts([*laptop, *devbox]) == {"s1": Marks(tags=("bug", "x"))}
    assert marks_of_facts([*devbox, *laptop]) == {"s1": Marks(tags=("bug", "x"))}


def test_tags_are_words(paths: AgentPaths) -> None:
    assert valid_tag("Bug") == "bug"
    for bad in ("", "two words", "+x", "-x", "a\x1bb", "x" * 65):
        with pytest.raises(UsageError):
            valid_tag(bad)


def test_never_writes_through_a_symlink_or_into_someone_elses_file(paths: AgentPaths, tmp_path: Path) -> None:
    target = tmp_path / "elsewhere.txt"
    target.write_text("mine\n")
    folder = paths.agent_dir / "sessdex"
    folder.mkdir(mode=0o700)
    (folder / "marks.jsonl").symlink_to(target)
    with pytest.raises(MarksFileError):
        mark(paths, "s1", "pin", 1)
    with pytest.raises(MarksFileError):
        current_marks(paths)
    assert target.read_text() == "mine\n"
    (folder / "marks.jsonl").unlink()
    os.rmdir(folder)
    folder.symlink_to(tmp_path)
    with pytest.raises(MarksFileError):
        mark(paths, "s1", "pin", 1)
    assert not (tmp_path / "marks.jsonl").exists()


CHILD = """
import sys
from sessdex.core.marks import append_events, make_event
from sessdex.core.paths import AgentPaths
paths = AgentPaths(agent_dir=sys.argv[1], home=sys.argv[1], tmp_dir=sys.argv[1])
n = 0
while True:
    n += 1
    append_events(paths, [make_event(f"s{n}", "here", "tag", add=[f"t{n % 97}", "x" * (n % 60 + 1)])])
    print(n, flush=True)
"""


@pytest.mark.parametrize("delay", [0.15, 0.4])
def test_a_kill_mid_write_loses_at_most_that_mark(paths: AgentPaths, delay: float) -> None:
    child = subprocess.Popen([sys.executable, "-c", CHILD, str(paths.agent_dir)], stdout=subprocess.PIPE, text=True)
    assert child.stdout is not None
    acknowledged = 0
    try:
        first = child.stdout.readline()
        assert first, "the child wrote nothing"
        acknowledged = int(first)
        deadline = time.monotonic() + delay
        while time.monotonic() < deadline:
            line = child.stdout.readline()
            if not line:
                break
            acknowledged = int(line)
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait()
        child.stdout.close()
    marks = current_marks(paths)
    assert all(f"s{n}" in marks for n in range(1, acknowledged + 1))  # every acknowledged mark is there
    # The file is still usable: a later append lands on its own line and is read back.
    mark(paths, "after", "pin", int(time.time() * 1000))
    facts, bad = read_file_facts(marks_path(paths))
    assert bad <= 1 and current_marks(paths)["after"].pinned


# A writer that stops half-way through the line of session "victim", with the writers' lock held, and waits to
# be killed: the state a SIGKILL in the middle of a marks write leaves.
TORN_CHILD = """
import os, sys, time
from sessdex.core.marks import append_events, make_event
from sessdex.core.paths import AgentPaths
paths = AgentPaths(agent_dir=sys.argv[1], home=sys.argv[1], tmp_dir=sys.argv[1])
real_write = os.write

def half_then_hang(fd, data):
    if b'"victim"' in bytes(data):
        written = real_write(fd, bytes(data)[: len(data) // 2])
        print("torn", flush=True)
        time.sleep(120)
        return written
    return real_write(fd, data)

os.write = half_then_hang
append_events(paths, [make_event("victim", "here", "note", text="lost with the kill " * 4)])
"""

WAITING_CHILD = """
import sys
from sessdex.core.marks import append_events, make_event
from sessdex.core.paths import AgentPaths
paths = AgentPaths(agent_dir=sys.argv[1], home=sys.argv[1], tmp_dir=sys.argv[1])
append_events(paths, [make_event("waiter", "here", "star")])
print("done", flush=True)
"""


def test_a_kill_in_the_middle_of_a_write_loses_only_that_mark(paths: AgentPaths) -> None:
    for n in range(5):
        mark(paths, f"kept{n}", "pin", 1000 + n)
    before = marks_path(paths).read_bytes()
    torn = subprocess.Popen([sys.executable, "-c", TORN_CHILD, str(paths.agent_dir)], stdout=subprocess.PIPE,
                            text=True)
    waiter = None
    try:
        assert torn.stdout is not None and torn.stdout.readline() == "torn\n"
        data = marks_path(paths).read_bytes()
        assert data.startswith(before) and len(data) > len(before) and not data.endswith(b"\n")  # half a line
        # Another writer waits for the lock the torn one holds, and goes on once the kernel drops it.
        waiter = subprocess.Popen([sys.executable, "-c", WAITING_CHILD, str(paths.agent_dir)],
                                  stdout=subprocess.PIPE, text=True)
        time.sleep(0.5)
        assert waiter.poll() is None and marks_path(paths).read_bytes() == data  # blocked on the lock
        assert set(current_marks(paths)) == {f"kept{n}" for n in range(5)}  # a reader skips the torn line
    finally:
        torn.send_signal(signal.SIGKILL)
        torn.wait()
        torn.stdout.close()  # type: ignore[union-attr]
        if waiter is not None:
            out, _err = waiter.communicate(timeout=30)
            assert out == "done\n"
    marks = current_marks(paths)
    assert set(marks) == {*(f"kept{n}" for n in range(5)), "waiter"} and marks["waiter"].starred
    assert all(marks[f"kept{n}"].pinned for n in range(5))
    data = marks_path(paths).read_bytes()
    assert data.startswith(before) and data.endswith(b"\n")
    facts, bad = read_file_facts(marks_path(paths))
    assert bad == 1  # the torn half, ended by the next append, is one bad line and nothing else
    mark(paths, "after", "pin", int(time.time() * 1000))
    assert current_marks(paths)["after"].pinned
