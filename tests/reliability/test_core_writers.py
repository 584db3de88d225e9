"""Trials of real processes writing one session: nothing acknowledged is lost, modes are kept,
a killed rewrite leaves nothing behind once the session is opened again."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from sessdex.core.jsonl import parse_jsonl

pytestmark = pytest.mark.reliability

REPO = Path(__file__).resolve().parents[2]
TIMEOUT = 60


def child(*args: str, umask: str = "022") -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO), "TRIAL_UMASK": umask}
    return subprocess.Popen([sys.executable, "-m", "tests.reliability.core_children", *args], cwd=REPO, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def run_child(*args: str, umask: str = "022") -> str:
    process = child(*args, umask=umask)
    out, err = process.communicate(timeout=TIMEOUT)
    assert process.returncode == 0, err
    return out


def new_session(tmp_path: Path, umask: str = "022") -> tuple[Path, Path]:
    """A real answered session made by a child process; returns (agent dir, session file)."""
    agent_dir = tmp_path / "home" / ".xcsh" / "agent"
    project = tmp_path / "home" / "proj"
    project.mkdir(parents=True)
    return agent_dir, Path(run_child("create", str(agent_dir), str(project), umask=umask).strip())


def wait_for_line(process: subprocess.Popen[str], expected: str) -> None:
    assert process.stdout is not None
    line = process.stdout.readline()
    assert line.strip() == expected, (line, process.stderr.read() if process.stderr else "")


def file_records(path: Path) -> list[dict]:
    parsed = parse_jsonl(path.read_bytes())
    assert parsed.bad_records == 0
    return parsed.values


def test_appends_survive_another_process_rewriting_the_session(tmp_path: Path) -> None:
    """A appends 200 entries (fsync each) while B renames the session over and over (temp + rename)."""
    agent_dir, session = new_session(tmp_path)
    stop = tmp_path / "stop"
    rewriter = child("rewrite", str(agent_dir), str(session), str(stop))
    wait_for_line(rewriter, "REWRITING")
    appender = child("append", str(agent_dir), str(session), "200")
    try:
        out, err = appender.communicate(timeout=TIMEOUT)
        assert appender.returncode == 0, err
    finally:
        stop.touch()
        rewriter_out, rewriter_err = rewriter.communicate(timeout=TIMEOUT)
    assert rewriter.returncode == 0, rewriter_err
    acknowledged = [line.split()[1] for line in out.splitlines() if line.startswith("ACK ")]
    assert len(acknowledged) == 200
    rewrites = int(rewriter_out.split()[-1])
    assert rewrites >= 2, "the rewriter must have replaced the file while the appender ran"
    records = file_records(session)
    ids = [record.get("id") for record in records[1:]]
    missing = [entry_id for entry_id in acknowledged if entry_id not in ids]
    assert not missing, f"{len(missing)} of 200 acknowledged entries lost ({rewrites} rewrites)"
    assert len(ids) == len(set(ids)), "an entry was written twice"
    assert records[0]["title"].startswith("title ")


def test_two_rewriters_and_an_appender_keep_every_entry(tmp_path: Path) -> None:
    agent_dir, session = new_session(tmp_path)
    stop = tmp_path / "stop"
    rewriters = [child("rewrite", str(agent_dir), str(session), str(stop)) for _ in range(2)]
    for rewriter in rewriters:
        wait_for_line(rewriter, "REWRITING")
    appender = child("append", str(agent_dir), str(session), "100")
    try:
        out, err = appender.communicate(timeout=TIMEOUT)
        assert appender.returncode == 0, err
    finally:
        stop.touch()
        for rewriter in rewriters:
            rewriter.communicate(timeout=TIMEOUT)
    acknowledged = {line.split()[1] for line in out.splitlines() if line.startswith("ACK ")}
    ids = {record.get("id") for record in file_records(session)[1:]}
    assert len(acknowledged) == 100 and acknowledged <= ids


@pytest.mark.parametrize("mode", [0o600, 0o640])
def test_a_rewrite_keeps_the_session_file_mode(tmp_path: Path, mode: int) -> None:
    agent_dir, session = new_session(tmp_path)
    os.chmod(session, mode)
    run_child("rename", str(agent_dir), str(session), "renamed", umask="022")
    assert stat.S_IMODE(session.stat().st_mode) == mode
    assert file_records(session)[0]["title"] == "renamed"


def test_new_session_files_and_folders_are_private_whatever_the_umask(tmp_path: Path) -> None:
    _agent_dir, session = new_session(tmp_path, umask="000")
    assert stat.S_IMODE(session.stat().st_mode) == 0o600
    assert stat.S_IMODE(session.parent.stat().st_mode) == 0o700


def test_a_rewrite_killed_before_its_rename_leaves_a_temp_file_that_the_next_open_removes(tmp_path: Path) -> None:
    agent_dir, session = new_session(tmp_path)
    before = session.read_bytes()
    killed = child("die-mid-rewrite", str(agent_dir), str(session))
    killed.communicate(timeout=TIMEOUT)
    assert killed.returncode == -9
    leftovers = [p for p in session.parent.iterdir() if p.name.startswith(f".{session.name}.")]
    assert len(leftovers) == 1 and leftovers[0].name.endswith(".tmp")
    assert session.read_bytes() == before
    # The next open removes it under the writers' lock (a live rewrite holds that lock while its temp exists).
    run_child("rename", str(agent_dir), str(session), "after the crash")
    assert not leftovers[0].exists()
    assert sorted(p.name for p in session.parent.iterdir()) == [session.name]
    assert file_records(session)[0]["title"] == "after the crash"


def test_the_appender_ends_a_line_another_process_left_torn(tmp_path: Path) -> None:
    agent_dir, session = new_session(tmp_path)
    stop = tmp_path / "stop"
    appender = child("append", str(agent_dir), str(session), "3")
    out, err = appender.communicate(timeout=TIMEOUT)
    assert appender.returncode == 0, err
    with open(session, "ab") as handle:
        handle.write(b'{"type":"message","id":"torn","par')  # another writer died mid-line
    appender = child("append", str(agent_dir), str(session), "2")
    out, err = appender.communicate(timeout=TIMEOUT)
    assert appender.returncode == 0, err
    parsed = parse_jsonl(session.read_bytes())
    assert parsed.bad_records == 1
    ids = {record.get("id") for record in parsed.values}
    assert all(line.split()[1] in ids for line in out.splitlines() if line.startswith("ACK "))
    assert not stop.exists()
    assert orjson.loads(session.read_bytes().splitlines()[0])["type"] == "session"


def test_opening_a_session_never_removes_the_temp_file_of_a_live_rewrite(tmp_path: Path) -> None:
    agent_dir, session = new_session(tmp_path)
    stop = tmp_path / "stop"
    rewriter = child("slow-rewrite", str(agent_dir), str(session), str(stop))
    wait_for_line(rewriter, "PAUSED")
    [temporary] = [p for p in session.parent.iterdir() if p.name.startswith(f".{session.name}.")]
    opener = child("rename", str(agent_dir), str(session), "opened meanwhile")
    try:
        wait_for_line(opener, "OPENING")
        with pytest.raises(subprocess.TimeoutExpired):
            opener.wait(timeout=0.5)  # it waits for the rewrite's lock before cleaning up
        assert temporary.exists()
    finally:
        stop.touch()
        _out, rewriter_err = rewriter.communicate(timeout=TIMEOUT)
        _out, opener_err = opener.communicate(timeout=TIMEOUT)
    assert rewriter.returncode == 0, rewriter_err
    assert opener.returncode == 0, opener_err
    assert not temporary.exists()
    assert file_records(session)[0]["title"] == "opened meanwhile"


# -- an appender that behaves like the agent: its own process, descriptor kept open, no sessdex lock -----------

def start_agent_appender(tmp_path: Path, session: Path) -> tuple[subprocess.Popen[str], Path]:
    stop = tmp_path / "stop-agent"
    appender = child("agent-append", str(session), str(stop))
    wait_for_line(appender, "READY")
    return appender, stop


def acknowledged_after_stop(appender: subprocess.Popen[str], stop: Path) -> list[str]:
    stop.touch()
    out, err = appender.communicate(timeout=TIMEOUT)
    assert appender.returncode == 0, err
    return [line.split()[1] for line in out.splitlines() if line.startswith("ACK ")]


def assert_none_lost(session: Path, acknowledged: list[str]) -> None:
    assert acknowledged, "the appender must have written while the rewrite was tried"
    ids = {record.get("id") for record in file_records(session)[1:]}
    lost = [entry_id for entry_id in acknowledged if entry_id not in ids]
    assert not lost, f"{len(lost)} of {len(acknowledged)} acknowledged entries lost"


def test_sessdex_rename_refuses_with_one_line_while_the_agent_keeps_the_file_open(tmp_path: Path) -> None:
    agent_dir, session = new_session(tmp_path)
    before = file_records(session)[0]
    appender, stop = start_agent_appender(tmp_path, session)
    try:
        results = [subprocess.run([str(REPO / ".venv" / "bin" / "sessdex"), "--agent-dir", str(agent_dir),
                                   "rename", str(session), f"title {n}"],
                                  capture_output=True, text=True, timeout=TIMEOUT, env={**os.environ, "NO_COLOR": "1"})
                   for n in range(3)]
    finally:
        acknowledged = acknowledged_after_stop(appender, stop)
    for result in results:
        assert result.returncode != 0
        assert len(result.stderr.strip().splitlines()) == 1 and "open for writing" in result.stderr, result.stderr
    assert_none_lost(session, acknowledged)
    assert file_records(session)[0] == before


def test_every_session_manager_rewrite_refuses_while_the_agent_keeps_the_file_open(tmp_path: Path) -> None:
    from sessdex.core.errors import SessionBusyError
    from sessdex.core.paths import AgentPaths
    from sessdex.core.runtime import SessionRuntime
    from sessdex.core.session_manager import SessionManager

    agent_dir, session = new_session(tmp_path)
    runtime = SessionRuntime(paths=AgentPaths(agent_dir=agent_dir, home=agent_dir.parent.parent),
                             environ={}, tty_path=lambda: None)
    appender, stop = start_agent_appender(tmp_path, session)
    try:
        manager = SessionManager.open(session, runtime=runtime)
        with pytest.raises(SessionBusyError):
            manager.set_session_name("renamed while the agent writes")
        assert manager.get_session_name() != "renamed while the agent writes"
        with pytest.raises(SessionBusyError):
            manager.rewrite_entries()
        other = tmp_path / "home" / "other"
        other.mkdir()
        with pytest.raises(SessionBusyError):
            manager.move_to(str(other))
        assert manager.get_session_file() == session and session.exists()
        fork = SessionManager.fork_from(session, str(tmp_path / "home" / "proj"), runtime=runtime)
        fork.close()
        manager.close()
    finally:
        acknowledged = acknowledged_after_stop(appender, stop)
    assert_none_lost(session, acknowledged)
    # Once the agent has closed the file the same rewrites go through and keep every entry.
    manager = SessionManager.open(session, runtime=runtime)
    manager.set_session_name("after the agent exited")
    manager.move_to(str(other))
    moved = manager.get_session_file()
    manager.close()
    assert not session.exists()
    assert_none_lost(moved, acknowledged)


# -- the same appender against trash, restore and forks, and an appender that opens the path for each append ---

SESSDEX = str(REPO / ".venv" / "bin" / "sessdex")
APPENDERS = ["agent-append", "agent-append-reopen"]


def sessdex(agent_dir: Path, *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([SESSDEX, "--agent-dir", str(agent_dir), *args], capture_output=True, text=True,
                          timeout=TIMEOUT, cwd=cwd, env={**os.environ, "NO_COLOR": "1", "SESSDEX_AUTOWATCH": "0"})


def ids_in_agent_dir(agent_dir: Path) -> set[str]:
    """The entry ids of every session file under the agent dir (its sessions and its trash), any line read."""
    ids: set[str] = set()
    for file in agent_dir.rglob("*.jsonl"):
        ids.update(record.get("id") for record in parse_jsonl(file.read_bytes()).values
                   if isinstance(record, dict))
    return ids


def start_appender(role: str, tmp_path: Path, session: Path) -> tuple[subprocess.Popen[str], Path]:
    stop = tmp_path / "stop-agent"
    appender = child(role, str(session), str(stop))
    wait_for_line(appender, "READY")
    return appender, stop


def one_line_refusal(result: subprocess.CompletedProcess[str]) -> bool:
    return (result.returncode != 0 and len(result.stderr.strip().splitlines()) == 1
            and "open for writing" in result.stderr)


@pytest.mark.parametrize("role", APPENDERS)
def test_renames_lose_nothing_an_agent_appends_with_either_way_of_opening(tmp_path: Path, role: str) -> None:
    agent_dir, session = new_session(tmp_path)
    appender, stop = start_appender(role, tmp_path, session)
    try:
        results = [sessdex(agent_dir, "rename", str(session), f"title {n}") for n in range(10)]
    finally:
        acknowledged = acknowledged_after_stop(appender, stop)
    for result in results:
        assert result.returncode == 0 or one_line_refusal(result), result.stderr
    if role == "agent-append":
        assert all(result.returncode != 0 for result in results)
    assert_none_lost(session, acknowledged)


def test_session_manager_rewrites_lose_nothing_an_agent_appends_opening_the_file_each_time(tmp_path: Path) -> None:
    from sessdex.core.errors import SessionBusyError
    from sessdex.core.paths import AgentPaths
    from sessdex.core.runtime import SessionRuntime
    from sessdex.core.session_manager import SessionManager

    agent_dir, session = new_session(tmp_path)
    runtime = SessionRuntime(paths=AgentPaths(agent_dir=agent_dir, home=agent_dir.parent.parent),
                             environ={}, tty_path=lambda: None)
    appender, stop = start_appender("agent-append-reopen", tmp_path, session)
    try:
        manager = SessionManager.open(session, runtime=runtime)
        for n in range(40):
            try:
                manager.set_session_name(f"title {n}")
                manager.rewrite_entries()
            except SessionBusyError:
                pass
        manager.close()
    finally:
        acknowledged = acknowledged_after_stop(appender, stop)
    assert_none_lost(session, acknowledged)
    # A move while the agent appends: what it wrote into the old file before the unlink is in the moved one;
    # what it writes after goes to a new file at the old path (it creates it), so nothing is lost either.
    stop.unlink()
    appender, stop = start_appender("agent-append-reopen", tmp_path, session)
    try:
        manager = SessionManager.open(session, runtime=runtime)
        other = tmp_path / "home" / "other"
        other.mkdir()
        try:
            manager.move_to(str(other))
        except SessionBusyError:
            pass
        manager.close()
    finally:
        acknowledged = acknowledged_after_stop(appender, stop)
    lost = [entry_id for entry_id in acknowledged if entry_id not in ids_in_agent_dir(agent_dir)]
    assert acknowledged and not lost, f"{len(lost)} of {len(acknowledged)} acknowledged entries lost"


@pytest.mark.parametrize("role", APPENDERS)
def test_trash_and_restore_lose_nothing_an_agent_appends(tmp_path: Path, role: str) -> None:
    """Trash refuses with one line while the agent keeps the file open; whatever went through, every
    acknowledged entry is in a session file of the agent dir (its sessions folder or its trash)."""
    agent_dir, session = new_session(tmp_path)
    session_id = file_records(session)[0]["id"]
    appender, stop = start_appender(role, tmp_path, session)
    try:
        trashed = [sessdex(agent_dir, "trash", str(session)) for _ in range(3)]
        restored = [sessdex(agent_dir, "trash", "restore", session_id) for _ in range(3)]
    finally:
        acknowledged = acknowledged_after_stop(appender, stop)
    for result in [*trashed, *restored]:
        assert result.returncode == 0 or len(result.stderr.strip().splitlines()) == 1, result.stderr
    if role == "agent-append":
        assert all(one_line_refusal(result) for result in trashed)
        assert session.exists()
    lost = [entry_id for entry_id in acknowledged if entry_id not in ids_in_agent_dir(agent_dir)]
    assert acknowledged and not lost, f"{len(lost)} of {len(acknowledged)} acknowledged entries lost"


@pytest.mark.parametrize("role", APPENDERS)
def test_resume_forks_lose_nothing_an_agent_appends(tmp_path: Path, role: str) -> None:
    """`resume ID --yes` from another project forks the session: the source, still written by the agent, keeps
    every acknowledged entry, and each fork holds the source's entries as they were when it was made."""
    agent_dir, session = new_session(tmp_path)
    session_id = file_records(session)[0]["id"]
    elsewhere = tmp_path / "home" / "elsewhere"
    elsewhere.mkdir()
    appender, stop = start_appender(role, tmp_path, session)
    try:
        forks = [sessdex(agent_dir, "resume", session_id, "--yes", cwd=elsewhere) for _ in range(3)]
    finally:
        acknowledged = acknowledged_after_stop(appender, stop)
    for result in forks:
        assert result.returncode == 0, result.stderr
        fork = Path(result.stdout.strip().splitlines()[-1])
        assert fork != session and fork.exists() and fork.parent != session.parent
    assert_none_lost(session, acknowledged)


def test_trash_and_restore_across_file_systems_lose_nothing_an_agent_appends_opening_the_file_each_time(
        tmp_path: Path) -> None:
    """sessions/ on another file system (a tmpfs): trash and restore copy, fsync and unlink; what the agent
    wrote into the file between the copy and the unlink is in the copy too."""
    import shutil
    import tempfile

    shared_memory = Path("/dev/shm")
    if not shared_memory.is_dir() or os.stat(shared_memory).st_dev == os.stat(tmp_path).st_dev:
        pytest.skip("no tmpfs on another device than the test's folder")
    agent_dir, session = new_session(tmp_path)
    elsewhere = Path(tempfile.mkdtemp(dir=shared_memory))
    try:
        sessions = agent_dir / "sessions"
        shutil.copytree(sessions, elsewhere / "sessions")
        shutil.rmtree(sessions)
        sessions.symlink_to(elsewhere / "sessions")
        session_id = file_records(session)[0]["id"]
        appender, stop = start_appender("agent-append-reopen", tmp_path, session)
        try:
            results = []
            for _ in range(5):
                results.append(sessdex(agent_dir, "trash", str(session)))
                results.append(sessdex(agent_dir, "trash", "restore", session_id))
        finally:
            acknowledged = acknowledged_after_stop(appender, stop)
        assert any(result.returncode == 0 for result in results)
        for result in results:
            assert result.returncode == 0 or len(result.stderr.strip().splitlines()) == 1, result.stderr
        ids = ids_in_agent_dir(agent_dir) | ids_in_agent_dir(elsewhere)
        lost = [entry_id for entry_id in acknowledged if entry_id not in ids]
        assert acknowledged and not lost, f"{len(lost)} of {len(acknowledged)} acknowledged entries lost"
    finally:
        shutil.rmtree(elsewhere, ignore_errors=True)
