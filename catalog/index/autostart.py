"""The watcher is always there: a read command that finds none starts one, detached, for its agent dir.

Why this design (and not a systemd user unit or a launchd agent): it needs nothing from the user and nothing
from the machine. A user who followed the README's first steps runs `xr` or `sessdex resume` from a shell; the
first such command finds no live watcher (no fresh heartbeat, see `reconcile.read_heartbeat`), starts
`python -m sessdex.catalog.index.autostart` in a new session with no terminal, and answers at once on its own
(the watcher's initial scan holds the index lock: the command reads what it needs meanwhile). From then on every
read trusts the watcher's heartbeat and skips its own freshness pass: the warm path. A service manager would also
need an installation step the README must teach, differs per platform, and is absent in containers and over SSH.

The rules:
- one per agent dir and catalog: the watcher's own lock (`<catalog>.watch.lock`) lets one run; a started one that
  finds it taken exits quietly. `<catalog>.autowatch` holds the pid of the last one started, so that the commands
  run during its start do not start more;
- it exits after IDLE_SECONDS without a change to a session file ($SESSDEX_AUTOWATCH_IDLE: seconds); the next read
  command starts another;
- opt-out: SESSDEX_AUTOWATCH=0. It is never started under CI ($CI) or pytest ($PYTEST_CURRENT_TEST) unless
  SESSDEX_AUTOWATCH=1 asks for it, nor with `--catalog off`, nor for a catalog on a server, nor before the agent
  dir has a sessions folder;
- its log goes to `<catalog>.autowatch.log` (0600, written anew at each start).

This module is on the hot commands' path: it imports only the standard library's os at import time, and costs
one stat (the heartbeat) when a watcher runs.
"""

from __future__ import annotations

import os

TYPE_CHECKING = False  # typing stays off the hot commands' imports
if TYPE_CHECKING:
    import threading

    from sessdex.catalog.store.location import CatalogLocation

AUTOWATCH_ENV = "SESSDEX_AUTOWATCH"
IDLE_ENV = "SESSDEX_AUTOWATCH_IDLE"
IDLE_SECONDS = 30 * 60.0
MARKER_SUFFIX = ".autowatch"
LOG_SUFFIX = ".autowatch.log"


def autostart_wanted(environ: os._Environ[str] | dict[str, str] = os.environ) -> bool:
    """Whether read commands may start a watcher: SESSDEX_AUTOWATCH=1 yes, =0 no, unset: not under CI or pytest."""
    chosen = environ.get(AUTOWATCH_ENV, "")
    if chosen in ("0", "1"):
        return chosen == "1"
    return not environ.get("CI") and not environ.get("PYTEST_CURRENT_TEST")


def ensure_watcher(location: CatalogLocation, sessions_root: str, agent_dir: str, machine: str | None) -> bool:
    """Start a detached watcher for this catalog when none is live and none was just started; True when started.

    Never raises: a read command answers whatever happens here."""
    if location.sqlite_file is None or not autostart_wanted():
        return False
    from sessdex.catalog.index.reconcile import read_heartbeat

    if read_heartbeat(location) is not None or not os.path.isdir(sessions_root):
        return False
    marker = location.sidecar_file(MARKER_SUFFIX)
    if _started_one_alive(marker):
        return False
    try:
        return _spawn(location, sessions_root, agent_dir, machine, marker)
    except OSError:
        return False


def _started_one_alive(marker: str) -> bool:
    """Whether the watcher last started (its pid in the marker file) still runs."""
    try:
        with open(marker, encoding="utf-8") as handle:
            pid = int(handle.read().strip() or "0")
        if pid <= 0:
            return False
        os.kill(pid, 0)
    except (OSError, ValueError, OverflowError):
        return False
    return True


def _spawn(location: CatalogLocation, sessions_root: str, agent_dir: str, machine: str | None, marker: str) -> bool:
    import subprocess
    import sys

    from sessdex.core.private_files import open_private

    if not sys.executable:
        return False
    log_fd = open_private(location.sidecar_file(LOG_SUFFIX), os.O_WRONLY | os.O_TRUNC | os.O_NOFOLLOW)
    try:
        if os.fstat(log_fd).st_uid != os.geteuid():
            return False  # a file of ours someone else owns: refused
        argv = [sys.executable, "-P", "-m", "sessdex.catalog.index.autostart", agent_dir, location.url,
                sessions_root, machine or ""]
        process = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log_fd, stderr=log_fd, cwd="/",
                                   start_new_session=True, close_fds=True)
    finally:
        os.close(log_fd)
    marker_fd = open_private(marker, os.O_WRONLY | os.O_TRUNC | os.O_NOFOLLOW)
    with os.fdopen(marker_fd, "w", encoding="utf-8") as handle:
        handle.write(f"{process.pid}\n")
    # Never waited for: it outlives this command, and init reaps it. Marked as done so that the Popen object does
    # not warn, when it is collected, about a child still running.
    process.returncode = 0
    return True


def idle_seconds(environ: os._Environ[str] | dict[str, str] = os.environ) -> float:
    """How long a started watcher waits for a change before it exits ($SESSDEX_AUTOWATCH_IDLE, else IDLE_SECONDS)."""
    try:
        chosen = float(environ.get(IDLE_ENV, ""))
    except ValueError:
        return IDLE_SECONDS
    return chosen if chosen > 0 else IDLE_SECONDS


def _stop_when_idle(watcher: object, stop: threading.Event, idle: float) -> None:
    """Set `stop` once the watcher has applied no batch for `idle` seconds (its initial scan counts as activity)."""
    import time

    last_batches = -1
    quiet_since = time.monotonic()
    while not stop.wait(min(1.0, idle / 4)):
        batches = watcher.stats.batches  # type: ignore[attr-defined]
        if batches != last_batches or not watcher.ready.is_set():  # type: ignore[attr-defined]
            last_batches, quiet_since = batches, time.monotonic()
        elif time.monotonic() - quiet_since >= idle:
            stop.set()


def run_started_watcher(agent_dir: str, catalog_url: str, sessions_root: str, machine: str | None) -> int:
    """The detached process: watch until idle (or SIGTERM); exit 0 quietly when another watcher runs already."""
    import threading

    from sessdex.catalog.index.watcher import Watcher, stop_on_signals
    from sessdex.catalog.store.location import resolve_location
    from sessdex.catalog.store.machine import remember_machine, resolve_machine
    from sessdex.core.errors import CatalogError
    from sessdex.core.paths import AgentPaths

    location = resolve_location(agent_dir, catalog_url)
    machine = resolve_machine(agent_dir, machine or None)
    paths = AgentPaths.from_env(agent_dir)
    remember_machine(paths.agent_dir, machine)
    watcher = Watcher(sessions_root, location, machine=machine, home=os.path.abspath(paths.home))
    stop = threading.Event()
    idle = threading.Thread(target=_stop_when_idle, args=(watcher, stop, idle_seconds()), daemon=True,
                            name="sessdex-autowatch-idle")
    idle.start()
    try:
        with stop_on_signals(stop):
            watcher.run(stop)
    except CatalogError as exc:
        print(f"sessdex: {exc}", flush=True)  # another watcher keeps the catalog: nothing to do
    finally:
        stop.set()
        idle.join()
    return 0


if __name__ == "__main__":
    import sys

    sys.exit(run_started_watcher(sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4] if len(sys.argv) > 4 else None))
