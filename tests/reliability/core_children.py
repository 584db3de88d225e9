"""Child processes for the core reliability trials: each role is a real process writing a real session.

    python -m tests.reliability.core_children append  AGENT_DIR FILE COUNT   # prints "ACK <id>" per fsynced entry
    python -m tests.reliability.core_children rewrite AGENT_DIR FILE STOP    # renames until STOP exists; "REWRITES n"
    python -m tests.reliability.core_children rename  AGENT_DIR FILE TITLE   # one rename (a full rewrite)
    python -m tests.reliability.core_children create  AGENT_DIR CWD          # a new answered session; prints its path
    python -m tests.reliability.core_children die-mid-rewrite AGENT_DIR FILE # SIGKILLed between temp file and rename
    python -m tests.reliability.core_children slow-rewrite AGENT_DIR FILE STOP # a rewrite paused before its rename
    python -m tests.reliability.core_children agent-append FILE STOP           # like the agent: no lock, fd kept open
    python -m tests.reliability.core_children agent-append-reopen FILE STOP    # the same, opening the path per append
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from pathlib import Path

from sessdex.core.paths import AgentPaths
from sessdex.core.runtime import SessionRuntime
from sessdex.core.session_manager import SessionManager

ASSISTANT = {"role": "assistant", "content": [{"type": "text", "text": "ok"}], "provider": "anthropic",
             "model": "claude-test", "timestamp": 2}


def runtime_for(agent_dir: str) -> SessionRuntime:
    return SessionRuntime(paths=AgentPaths(agent_dir=Path(agent_dir), home=Path(agent_dir).parent),
                          environ={}, tty_path=lambda: None)


def append(agent_dir: str, file: str, count: str) -> None:
    manager = SessionManager.open(file, runtime=runtime_for(agent_dir))
    print("READY", flush=True)
    for n in range(int(count)):
        entry_id = manager.append_message({"role": "user", "content": f"append {n}", "timestamp": n})
        manager.flush()  # fsync: from here on the entry is acknowledged
        print(f"ACK {entry_id}", flush=True)
    manager.close()


def rewrite(agent_dir: str, file: str, stop: str) -> None:
    manager = SessionManager.open(file, runtime=runtime_for(agent_dir))
    rewrites = 0
    while not os.path.exists(stop):
        rewrites += 1
        manager.set_session_name(f"title {rewrites}")
        if rewrites == 1:
            print("REWRITING", flush=True)
        time.sleep(0.005)  # many rewrites while the appender runs, without starving it
    manager.close()
    print(f"REWRITES {rewrites}", flush=True)


def rename(agent_dir: str, file: str, title: str) -> None:
    runtime = runtime_for(agent_dir)
    print("OPENING", flush=True)
    manager = SessionManager.open(file, runtime=runtime)
    manager.set_session_name(title)
    manager.close()


def create(agent_dir: str, cwd: str) -> None:
    manager = SessionManager.create(cwd, runtime=runtime_for(agent_dir))
    manager.append_message({"role": "user", "content": "hello", "timestamp": 1})
    manager.append_message(ASSISTANT)
    manager.close()
    print(manager.get_session_file(), flush=True)


def die_mid_rewrite(agent_dir: str, file: str) -> None:
    manager = SessionManager.open(file, runtime=runtime_for(agent_dir))
    # The moment a kill leaves a temp file behind: written and synced, not yet renamed over the session.
    os.replace = lambda *_args, **_kwargs: os.kill(os.getpid(), signal.SIGKILL)  # type: ignore[assignment]
    manager.set_session_name("never lands")


def slow_rewrite(agent_dir: str, file: str, stop: str) -> None:
    """A rewrite that holds the writers' lock with its temp file written until STOP exists, then renames."""
    real_replace = os.replace

    def replace_when_told(source: str, target: str) -> None:
        print("PAUSED", flush=True)
        while not os.path.exists(stop):
            time.sleep(0.01)
        real_replace(source, target)

    manager = SessionManager.open(file, runtime=runtime_for(agent_dir))
    os.replace = replace_when_told  # type: ignore[assignment]
    manager.set_session_name("slow rewrite")
    manager.close()


def agent_append(file: str, stop: str, *, reopen: bool = False) -> None:
    """Append as the agent does: one write-only append descriptor kept open, fsync per entry, no sessdex lock
    (with `reopen`: the path opened, or created, for each append and closed after its fsync).

    Prints READY once the file is open, "ACK <id>" per fsynced entry, and stops at the first append after
    STOP exists.
    """
    with open(file, "rb") as handle:
        parent = [line for line in handle.read().splitlines() if line.strip()][-1]
    parent_id = json.loads(parent).get("id")
    flags = os.O_WRONLY | os.O_APPEND | os.O_CLOEXEC
    fd = -1 if reopen else os.open(file, flags)
    print("READY", flush=True)
    n = 0
    while not os.path.exists(stop):
        entry_id = f"agent{n:05d}"
        entry = {"type": "message", "id": entry_id, "parentId": parent_id, "timestamp": "2025-01-01T00:00:00.000Z",
                 "message": {"role": "user", "content": f"agent append {n}", "timestamp": n}}
        if reopen:
            fd = os.open(file, flags | os.O_CREAT, 0o600)
        os.write(fd, (json.dumps(entry) + "\n").encode())
        os.fsync(fd)
        if reopen:
            os.close(fd)
        print(f"ACK {entry_id}", flush=True)
        parent_id = entry_id
        n += 1
        time.sleep(0.002)
    if not reopen:
        os.close(fd)


def agent_append_reopen(file: str, stop: str) -> None:
    agent_append(file, stop, reopen=True)


ROLES = {"agent-append": agent_append, "agent-append-reopen": agent_append_reopen, "append": append,
         "rewrite": rewrite, "rename": rename, "create": create, "die-mid-rewrite": die_mid_rewrite,
         "slow-rewrite": slow_rewrite}

if __name__ == "__main__":
    os.umask(int(os.environ.get("TRIAL_UMASK", "022"), 8))
    ROLES[sys.argv[1]](*sys.argv[2:])
