"""`sessdex prune` on a generated corpus moves exactly the sessions a reference computed here says, and
`sessdex trash restore` brings each back byte for byte.

The reference never goes through sessdex: which files are sessions (a valid header) and how many messages each
holds come from the generator's manifest, sizes and modification times from `os.stat`, and the marks are the
ones this test sets. A session is pruned when it matches every condition, carries no mark and was not changed
in the last 10 minutes (a live agent may have it open).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from gen_corpus import DAMAGE_KINDS, generate_corpus

from tests.catalog.test_marks_cli import SESSDEX

LIVE_SECONDS = 10 * 60
NO_HEADER = {"empty", "no_header", "invalid_header"}  # damaged so that there is no session at all


def run(home: Path, agent: Path, *args: str) -> subprocess.CompletedProcess[str]:
    environment = {**os.environ, "HOME": str(home), "PI_CODING_AGENT_DIR": str(agent), "SESSDEX_MACHINE": "here"}
    return subprocess.run([str(SESSDEX), *args], cwd=home, env=environment, capture_output=True, text=True,
                          timeout=120)


def snapshot(root: Path) -> dict[str, bytes]:
    return {str(path.relative_to(root)): path.read_bytes() for path in root.rglob("*.jsonl")}


def test_prune_moves_exactly_the_reference_and_restore_brings_each_back(tmp_path: Path) -> None:
    home = tmp_path / "home"
    agent = home / ".xcsh" / "agent"
    manifest = generate_corpus(agent, sessions=48, projects=3, total_bytes=900_000, seed=26, home=home,
                               now=time.time())
    assert set(DAMAGE_KINDS) & {s.kind for s in manifest.sessions}  # damaged files are there to be left alone
    sessions = [s for s in manifest.sessions if s.kind not in NO_HEADER]
    now = time.time()
    by_size = sorted((s for s in sessions if s.message_count), key=lambda s: s.size)
    # Marks on small sessions (which --smaller-than would take otherwise): each kind of mark protects.
    marked = {by_size[0].session_id: ["pin"], by_size[1].session_id: ["star"], by_size[2].session_id: ["tag", "+keep"],
              by_size[3].session_id: ["note", "read", "later"], by_size[4].session_id: ["pin"]}
    for session_id, command in marked.items():
        done = run(home, agent, command[0], session_id, *command[1:])
        assert done.returncode == 0, done.stderr
    done = run(home, agent, "unpin", by_size[4].session_id)  # unpinned again: no mark left
    assert done.returncode == 0
    del marked[by_size[4].session_id]
    # Live sessions: changed seconds ago (left alone), and one changed 15 minutes ago (fair game).
    live = {by_size[5].session_id, by_size[6].session_id}
    for session in (by_size[5], by_size[6]):
        os.utime(session.path, (now - 30, now - 30))
    os.utime(by_size[7].path, (now - 15 * 60, now - 15 * 60))
    before = snapshot(manifest.sessions_root)
    info = {s.session_id: s for s in sessions}

    def reference(select: Any) -> set[str]:
        chosen = set()
        for session_id, session in info.items():
            if not session.path.exists():
                continue
            result = session.path.stat()
            if session_id in marked or now - result.st_mtime < LIVE_SECONDS:
                continue
            if select(session, result):
                chosen.add(session_id)
        return chosen

    moved: set[str] = set()
    threshold = sorted(s.size for s in sessions)[len(sessions) // 2]
    project = manifest.projects[0].cwd
    runs: list[tuple[list[str], Any]] = [
        (["--empty"], lambda s, st: s.message_count == 0),
        (["--smaller-than", str(threshold)], lambda s, st: st.st_size < threshold),
        (["--older-than", "60d", "--project", project], lambda s, st: now - st.st_mtime >= 60 * 86400
         and s.cwd == project),
    ]
    for args, select in runs:
        expected = reference(select)
        assert not expected & (set(marked) | live)
        dry = run(home, agent, "prune", *args, "--dry-run", "--json")
        assert dry.returncode == 0, dry.stderr
        assert {row["id"] for row in json.loads(dry.stdout)} == expected, args
        done = run(home, agent, "prune", *args, "--yes", "--json")
        assert done.returncode == 0, done.stderr
        answer = json.loads(done.stdout)
        assert {row["id"] for row in answer} == expected, args
        assert all(row["marks"] == {"pinned": False, "starred": False, "tags": [], "note": None} for row in answer)
        assert all(not info[session_id].path.exists() for session_id in expected)
        report = done.stderr.strip().splitlines()
        assert len(report) == 1 if not expected else report[-1].startswith(f"Moved {len(expected)} session(s)")
        assert expected, args  # each run has something to do
        moved |= expected
    left = {session_id for session_id, session in info.items() if session.path.exists()}
    assert left == set(info) - moved and set(marked) | live <= left
    assert snapshot(manifest.sessions_root) != before
    done = run(home, agent, "trash", "restore", *sorted(moved), "--json")
    assert done.returncode == 0, done.stderr
    assert sorted(row["id"] for row in json.loads(done.stdout)) == sorted(moved)
    assert snapshot(manifest.sessions_root) == before


def test_prune_leaves_a_session_an_agent_keeps_open_however_old(tmp_path: Path) -> None:
    home = tmp_path / "home"
    agent = home / ".xcsh" / "agent"
    manifest = generate_corpus(agent, sessions=6, projects=1, total_bytes=30_000, seed=3, home=home,
                               now=time.time() - 200 * 86400)
    sessions = [s for s in manifest.sessions if s.kind not in NO_HEADER]
    held = sessions[0]
    # An agent-like writer: the file open write-only in append mode, idle (nothing written for months).
    holder = subprocess.Popen([sys.executable, "-c", "import sys, time\nf = open(sys.argv[1], 'ab')\n"
                               "print('open', flush=True)\ntime.sleep(60)", str(held.path)],
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "open\n"
        done = run(home, agent, "prune", "--older-than", "30d", "--yes", "--json")
        assert done.returncode == 0, done.stderr
        assert {row["id"] for row in json.loads(done.stdout)} == {s.session_id for s in sessions[1:]}
        assert held.path.exists()
    finally:
        holder.kill()
        holder.wait()
        holder.stdout.close()  # type: ignore[union-attr]
    done = run(home, agent, "prune", "--older-than", "30d", "--yes", "--json")
    assert [row["id"] for row in json.loads(done.stdout)] == [held.session_id]  # once the agent has exited
