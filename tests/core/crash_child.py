"""Child process for the crash test: appends and flushes entries forever, reporting each flushed id."""

from __future__ import annotations

import sys
from pathlib import Path

from sessdex.core.paths import AgentPaths
from sessdex.core.runtime import SessionRuntime
from sessdex.core.session_manager import SessionManager


def main(root: str) -> None:
    base = Path(root)
    runtime = SessionRuntime(paths=AgentPaths(agent_dir=base / "agent", home=base, tmp_dir=base),
                             environ={}, tty_path=lambda: None)
    manager = SessionManager.create(str(base), runtime=runtime)
    manager.append_message({"role": "user", "content": "go"})
    manager.append_message({"role": "assistant", "content": [{"type": "text", "text": "ok"}]})
    manager.flush()
    print(f"FILE {manager.get_session_file()}", flush=True)
    n = 0
    while True:
        n += 1
        entry_id = manager.append_message({"role": "user", "content": f"line {n} " + "x" * (n % 700)})
        if n % 50 == 0:
            manager.set_session_name(f"name {n}")
        manager.flush()
        print(f"FLUSHED {entry_id}", flush=True)


if __name__ == "__main__":
    main(sys.argv[1])
