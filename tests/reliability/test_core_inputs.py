"""Trials of hostile files against core, through real `sessdex` processes where a command is involved:
one bad line or file is skipped and counted, never fails a command about the others; nothing
blocks on a FIFO or reads a device; refused inputs end with one line and the right status."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from sessdex.core.paths import AgentPaths, documented_project_dir_name
from tests.core.sessiontree import BASE_MS, assistant, header, jsonl, user, write_file

pytestmark = pytest.mark.reliability

REPO = Path(__file__).resolve().parents[2]
TIMEOUT = 30
GOOD_ID = "0123456789abcdef"


class Agent:
    """A throwaway agent dir with one project and one good session in it."""

    def __init__(self, tmp_path: Path, catalog: str = "off") -> None:
        self.catalog = catalog
        self.home = tmp_path / "home"
        self.project = self.home / "proj"
        self.project.mkdir(parents=True)
        self.paths = AgentPaths(agent_dir=self.home / ".xcsh" / "agent", home=self.home, tmp_dir=tmp_path)
        self.folder = self.paths.sessions_root / documented_project_dir_name(self.project)
        self.good = self.session(GOOD_ID, [user("the good one"), assistant("fine")], BASE_MS)

    def session(self, session_id: str, entries: list, mtime_ms: int = BASE_MS + 1000, name: str | None = None,
                folder: Path | None = None) -> Path:
        path = (folder or self.folder) / (name or f"2025-01-01T00-00-00-000Z_{session_id}.jsonl")
        return write_file(path, jsonl([header(session_id, self.project), *entries]), mtime_ms)

    def run(self, *args: str, cwd: Path | None = None, env: dict[str, str] | None = None,
            prefix: tuple[str, ...] = ()) -> subprocess.CompletedProcess[str]:
        """`sessdex --agent-dir AGENT --catalog CATALOG ARGS` as a real process, killed if it hangs."""
        command = [*prefix, sys.executable, "-m", "sessdex.catalog", "--agent-dir", str(self.paths.agent_dir),
                   "--catalog", self.catalog, *args]
        environment = {key: value for key, value in os.environ.items()
                       if key not in ("TMUX_PANE", "KITTY_WINDOW_ID", "TERM_SESSION_ID", "WT_SESSION")}
        environment.update({"HOME": str(self.home), "PYTHONPATH": str(REPO), **(env or {})})
        return subprocess.run(command, cwd=cwd or self.project, env=environment, capture_output=True, text=True,
                              timeout=TIMEOUT, stdin=subprocess.DEVNULL)


@pytest.fixture
def agent(tmp_path: Path) -> Agent:
    return Agent(tmp_path)


def one_line(text: str) -> str:
    lines = text.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in text, text
    return lines[0]


def deep(depth: int) -> bytes:
    return b'{"type":"custom","id":"deep0001","parentId":null,"data":' + b"[" * depth + b"]" * depth + b"}\n"


HOSTILE_LINES = {
    "nested-1100": deep(1100),
    "nested-900": deep(900),
    "nested-300": deep(300),  # orjson reads it, but writes nothing deeper than 254
    "int-10**400": b'{"type":"message","id":"big00001","parentId":null,"message":{"role":"assistant","content":[],'
                   b'"provider":"p","model":"m","usage":{"input":1' + b"0" * 400 + b"}}}\n",
    "int--10**400-in-data": b'{"type":"custom","id":"big00002","parentId":null,"data":[-1' + b"0" * 400 + b"]}\n",
}


@pytest.mark.parametrize("line", HOSTILE_LINES, ids=list(HOSTILE_LINES))
def test_a_hostile_line_is_skipped_and_counted_by_every_command(agent: Agent, line: str) -> None:
    session = agent.session("feedfacecafebeef", [user("before"), assistant("answer")])
    with open(session, "ab") as handle:
        handle.write(HOSTILE_LINES[line])
        handle.write(jsonl([user("after the bad line", "u0000002", "a0000001")]))
    listed = agent.run("list", "--json")
    assert listed.returncode == 0, listed.stderr
    assert {item["id"] for item in orjson.loads(listed.stdout)} >= {GOOD_ID, "feedfacecafebeef"}
    entries = agent.run("entries", str(session))
    assert entries.returncode == 0, entries.stderr
    assert entries.stdout.count("message") == 3 and "1 unparseable line(s) skipped" in entries.stderr
    as_json = agent.run("entries", "--json", str(session))
    assert as_json.returncode == 0 and len(orjson.loads(as_json.stdout)) == 3, as_json.stderr
    context = agent.run("context", "--json", str(session))
    assert context.returncode == 0, context.stderr
    assert [m["role"] for m in orjson.loads(context.stdout)["messages"]] == ["user", "assistant", "user"]
    resumed = agent.run("resume", "feedface")
    assert resumed.returncode == 0 and resumed.stdout.strip() == str(session), resumed.stderr
    opened = subprocess.run([sys.executable, "-c", OPEN_AND_APPEND, str(agent.paths.agent_dir), str(session)],
                            capture_output=True, text=True, timeout=TIMEOUT, env={**os.environ, "PYTHONPATH": str(REPO)})
    assert opened.returncode == 0, opened.stderr
    assert opened.stdout.split() == ["bad=1", "entries=3"]


OPEN_AND_APPEND = """
import sys
from pathlib import Path
from sessdex.core.paths import AgentPaths
from sessdex.core.runtime import SessionRuntime
from sessdex.core.session_manager import SessionManager
runtime = SessionRuntime(paths=AgentPaths(agent_dir=Path(sys.argv[1])), environ={}, tty_path=lambda: None)
manager = SessionManager.open(sys.argv[2], runtime=runtime)
print(f"bad={manager.bad_records}", f"entries={len(manager.get_entries())}")
manager.append_message({"role": "user", "content": "appended", "timestamp": 1})
manager.close()
"""


def special_files(agent: Agent, tmp_path: Path) -> None:
    fifo = tmp_path / "a-fifo"
    os.mkfifo(fifo)
    os.mkfifo(agent.folder / "2030-01-01T00-00-00-000Z_ffff000000000001.jsonl")
    (agent.folder / "2030-01-01T00-00-00-000Z_ffff000000000002.jsonl").symlink_to(fifo)
    (agent.folder / "2030-01-01T00-00-00-000Z_ffff000000000003.jsonl").symlink_to("/dev/zero")
    all_projects = agent.paths.sessions_root / "elsewhere"
    all_projects.mkdir()
    (all_projects / "2030-01-01T00-00-00-000Z_ffff000000000004.jsonl").symlink_to("/dev/zero")


def test_fifos_and_devices_named_like_sessions_neither_hang_nor_exhaust_memory(agent: Agent, tmp_path: Path) -> None:
    special_files(agent, tmp_path)
    for command in (["list"], ["list", "--all"], ["recent"], ["continue"], ["resume", GOOD_ID[:6]]):
        result = agent.run(*command)  # a hang is a TimeoutExpired, a device read a MemoryError
        assert result.returncode == 0, (command, result.stderr)
        assert "ffff" not in result.stdout, command
    for name in ("2030-01-01T00-00-00-000Z_ffff000000000001.jsonl", "2030-01-01T00-00-00-000Z_ffff000000000003.jsonl"):
        for command in ("entries", "context"):
            result = agent.run(command, str(agent.folder / name))
            assert result.returncode == 2, result
            assert one_line(result.stderr).startswith("sessdex:")
        resumed = agent.run("resume", str(agent.folder / name))
        assert resumed.returncode == 1 and "not a regular file" in one_line(resumed.stderr)


@pytest.mark.parametrize("catalog", ["off", "catalog.db"])
def test_dot_files_and_headers_without_a_usable_id_are_never_sessions(tmp_path: Path, catalog: str) -> None:
    agent = Agent(tmp_path, catalog if catalog == "off" else str(tmp_path / catalog))
    agent.session("d0t0000000000001", [user("a dot file"), assistant("x")], name=".2025_d0t0000000000001.jsonl")
    agent.session("", [user("empty id"), assistant("x")], name="2025_empty.jsonl")
    path = agent.folder / "2025_numeric.jsonl"
    write_file(path, jsonl([{**header("x", agent.project), "id": 12345}, user("numeric id"), assistant("x")]),
               BASE_MS + 5000)
    for command in (["list", "--json"], ["list", "--all", "--json"], ["recent", "--json"]):
        result = agent.run(*command)
        assert result.returncode == 0, result.stderr
        assert [item["id"] for item in orjson.loads(result.stdout)] == [GOOD_ID], command
    continued = agent.run("continue")
    assert continued.stdout.strip() == str(agent.good)


def test_a_file_with_a_byte_order_mark_lists_opens_and_takes_appends(agent: Agent) -> None:
    path = agent.folder / "2025-01-02T00-00-00-000Z_b0b0b0b0b0b0b0b0.jsonl"
    write_file(path, b"\xef\xbb\xbf" + jsonl([header("b0b0b0b0b0b0b0b0", agent.project), user("with a bom"),
                                             assistant("yes")]), BASE_MS + 9000)
    listed = agent.run("list", "--json")
    assert [item["id"] for item in orjson.loads(listed.stdout)] == ["b0b0b0b0b0b0b0b0", GOOD_ID]
    opened = subprocess.run([sys.executable, "-c", OPEN_AND_APPEND, str(agent.paths.agent_dir), str(path)],
                            capture_output=True, text=True, timeout=TIMEOUT, env={**os.environ, "PYTHONPATH": str(REPO)})
    assert opened.returncode == 0, opened.stderr
    assert opened.stdout.split() == ["bad=0", "entries=2"]
    assert [p.name for p in agent.folder.iterdir() if "corrupt" in p.name] == []
    entries = agent.run("entries", "--json", str(path))
    assert [e["message"]["content"] for e in orjson.loads(entries.stdout)][-1] == "appended"


def test_resume_refuses_an_existing_file_that_is_not_a_session(agent: Agent) -> None:
    notes = agent.project / "notes.txt"
    notes.write_text("my own notes\n")
    for value in ("./notes.txt", str(notes)):
        result = agent.run("resume", value)
        assert result.returncode == 1 and result.stdout == ""
        assert "not a session file" in one_line(result.stderr)
    assert notes.read_text() == "my own notes\n"
    fresh = agent.run("resume", "./new.jsonl")
    assert fresh.returncode == 0 and fresh.stdout.strip() == str(agent.project / "new.jsonl")


def test_opening_a_non_session_file_outside_sessions_never_touches_it(agent: Agent) -> None:
    notes = agent.project / "notes.jsonl"
    notes.write_bytes(b'{"my":"data"}\n')
    result = subprocess.run([sys.executable, "-c", OPEN_AND_APPEND, str(agent.paths.agent_dir), str(notes)],
                            capture_output=True, text=True, timeout=TIMEOUT, env={**os.environ, "PYTHONPATH": str(REPO)})
    assert result.returncode == 1 and "NotASessionError" in result.stderr
    assert notes.read_bytes() == b'{"my":"data"}\n'
    assert sorted(p.name for p in agent.project.iterdir()) == ["notes.jsonl"]
    inside = agent.folder / "2025_headerless.jsonl"
    inside.write_bytes(b'{"my":"data"}\n')
    result = subprocess.run([sys.executable, "-c", OPEN_AND_APPEND, str(agent.paths.agent_dir), str(inside)],
                            capture_output=True, text=True, timeout=TIMEOUT, env={**os.environ, "PYTHONPATH": str(REPO)})
    assert result.returncode == 0, result.stderr
    [moved] = [p for p in agent.folder.iterdir() if ".corrupt-" in p.name]
    assert moved.read_bytes() == b'{"my":"data"}\n'


def test_continue_never_prints_a_breadcrumb_target_outside_the_sessions_folder(agent: Agent) -> None:
    outside = agent.home / "2025-01-01T00-00-00-000Z_0000000000000bad.jsonl"
    write_file(outside, jsonl([header("0000000000000bad", agent.project), user("planted"), assistant("x")]))
    crumbs = agent.paths.terminal_sessions_dir
    crumbs.mkdir(parents=True)
    (crumbs / "tmux-%9").write_text(f"{agent.project}\n{outside}\n")
    result = agent.run("continue", env={"TMUX_PANE": "%9"})
    assert result.returncode == 0 and result.stdout.strip() == str(agent.good)
    (crumbs / "tmux-%9").write_text(f"{agent.project}\n{agent.good}\n")
    assert agent.run("continue", env={"TMUX_PANE": "%9"}).stdout.strip() == str(agent.good)


def test_a_deleted_current_directory_is_one_clear_error(agent: Agent, tmp_path: Path) -> None:
    gone = tmp_path / "gone"
    gone.mkdir()
    script = ("import os, sys\nos.chdir(sys.argv[1]); os.rmdir(sys.argv[1])\n"
              "from sessdex.core.errors import SessdexError\n"
              "from sessdex.core.session_manager import SessionManager\n"
              "for attempt in (lambda: SessionManager.in_memory(), lambda: SessionManager.open('x.jsonl'),\n"
              "                lambda: SessionManager.create('.')):\n"
              "    try:\n        attempt()\n    except SessdexError as exc:\n        print(exc.exit_code, exc)\n")
    result = subprocess.run([sys.executable, "-c", script, str(gone)], capture_output=True, text=True, timeout=TIMEOUT,
                            env={**os.environ, "PYTHONPATH": str(REPO)})
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert len(lines) == 3 and all(line.startswith("2 the current directory no longer exists") for line in lines)


def unreadable_prefix() -> tuple[str, ...]:
    """Run as a user file permissions apply to: root drops the capabilities that bypass them."""
    if os.geteuid() != 0:
        return ()
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.skip("running as root without setpriv: a mode-000 file stays readable")
    return (setpriv, "--bounding-set=-dac_override,-dac_read_search")


def test_an_unreadable_session_is_one_line_for_entries_and_skipped_by_listings(agent: Agent) -> None:
    prefix = unreadable_prefix()
    locked = agent.session("10c4ed0000000001", [user("locked"), assistant("x")], BASE_MS + 5000)
    os.chmod(locked, 0)
    try:
        # Core's side of `entries`: loading says so in one SessionFileError (the CLI prints it as one line).
        script = ("import sys\nfrom pathlib import Path\nfrom sessdex.core.errors import SessionFileError\n"
                  "from sessdex.core.session_manager import load_session_file\n"
                  "from sessdex.core.storage import FileSessionStorage\n"
                  "try:\n    load_session_file(Path(sys.argv[1]), FileSessionStorage(), None, str)\n"
                  "except SessionFileError as exc:\n    print(exc.exit_code, exc)\n")
        loaded = subprocess.run([*prefix, sys.executable, "-c", script, str(locked)], text=True, capture_output=True,
                                timeout=TIMEOUT, env={**os.environ, "PYTHONPATH": str(REPO)})
        assert one_line(loaded.stdout) == f"2 {locked}: cannot read it (Permission denied)", loaded.stderr
        listed = agent.run("list", "--json", prefix=prefix)
        assert listed.returncode == 0, listed.stderr
        assert [item["id"] for item in orjson.loads(listed.stdout)] == [GOOD_ID]
        script = ("import sys\nfrom pathlib import Path\nfrom sessdex.core.paths import AgentPaths\n"
                  "from sessdex.core.discovery import list_all_sessions\nskipped = []\n"
                  "infos = list_all_sessions(paths=AgentPaths(agent_dir=Path(sys.argv[1])), skipped=skipped)\n"
                  "print(len(infos), [(p.name, reason) for p, reason in skipped])\n")
        counted = subprocess.run([*prefix, sys.executable, "-c", script, str(agent.paths.agent_dir)], text=True,
                                 capture_output=True, timeout=TIMEOUT, env={**os.environ, "PYTHONPATH": str(REPO)})
        assert counted.stdout.strip() == f"1 [('{locked.name}', 'Permission denied')]", counted.stderr
    finally:
        os.chmod(locked, 0o600)
