"""Terminal breadcrumbs and the `--continue` target.

Each terminal gets a file `<agent>/terminal-sessions/<terminal-id>` holding two lines: the cwd, then
the session file last used there. `--continue` prefers it when its cwd resolves to the current cwd
and its file still exists; otherwise it falls back to the project's newest session file.

Terminal ids: the controlling TTY of stdin (`/dev/pts/3` -> `pts-3`), else `kitty-<KITTY_WINDOW_ID>`,
`tmux-<TMUX_PANE>`, `term-<TERM_SESSION_ID>`, `wt-<WT_SESSION>`. Characters that cannot appear in a
file name are replaced by `_`.
"""

from __future__ import annotations

import os
import sys

from sessdex.core.paths import AgentPaths, as_path, is_session_file_name
from sessdex.core.regular_files import is_regular_file, read_regular_file

# Strings here, Paths only at the API's edge (as_path): `sessdex continue` reads the breadcrumb on every start,
# and pathlib (with re and urllib.parse) would cost it more than the rest of its work.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping
    from pathlib import Path

# Environment variables naming the terminal, in priority order, with the prefix of their terminal id.
TERMINAL_ENV_VARS: tuple[tuple[str, str], ...] = (
    ("KITTY_WINDOW_ID", "kitty"),
    ("TMUX_PANE", "tmux"),
    ("TERM_SESSION_ID", "term"),
    ("WT_SESSION", "wt"),
)

BREADCRUMB_MAX_BYTES = 64 * 1024  # two paths; anything longer is not a breadcrumb sessdex wrote
_FILE_NAME_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._%+@=,-")


class _DetectTty:
    """Sentinel: find the TTY path of stdin at call time."""


DETECT_TTY = _DetectTty()


# Here rather than in core.runtime (which uses it too): importing the runtime's session machinery (threads,
# asyncio, dataclasses) would cost every `sessdex continue` start.
def current_tty_path() -> str | None:
    """The controlling terminal's device path, if stdin is a terminal."""
    try:
        return os.ttyname(sys.stdin.fileno()) if sys.stdin and sys.stdin.isatty() else None
    except (OSError, ValueError, AttributeError):
        return None


def _file_name_safe(text: str) -> str:
    return "".join(char if char in _FILE_NAME_CHARS else "_" for char in text)


def terminal_id(env: Mapping[str, str] | None = None,
                tty_path: str | None | _DetectTty = DETECT_TTY) -> str | None:
    """The id of the current terminal: the TTY path first, then the terminal env variables; None if unknown.

    `env` defaults to `os.environ`; `tty_path` defaults to the TTY of stdin (pass None for "no TTY").
    """
    if isinstance(tty_path, _DetectTty):
        tty_path = current_tty_path()
    if tty_path:
        device = _file_name_safe(tty_path.removeprefix("/dev/").strip("/").replace("/", "-"))
        if device.strip("."):
            return device
    environment = os.environ if env is None else env
    for variable, prefix in TERMINAL_ENV_VARS:
        value = environment.get(variable)
        if value:
            return f"{prefix}-{_file_name_safe(value)}"
    return None


def breadcrumb_path(paths: AgentPaths, terminal: str) -> Path:
    """Where the breadcrumb of terminal `terminal` lives."""
    return as_path(_breadcrumb_file(paths, terminal))


def _breadcrumb_file(paths: AgentPaths, terminal: str) -> str:
    return os.path.join(paths.agent_dir_text, "terminal-sessions", terminal)


def write_breadcrumb(paths: AgentPaths, cwd: str | os.PathLike[str], session_file: str | os.PathLike[str], *,
                     env: Mapping[str, str] | None = None,
                     tty_path: str | None | _DetectTty = DETECT_TTY) -> None:
    """Record that this terminal now uses `session_file` in `cwd`; best effort, never raises."""
    from sessdex.core.private_files import make_private_dirs, open_private

    try:
        terminal = terminal_id(env, tty_path)
        if terminal is None:
            return
        target = _breadcrumb_file(paths, terminal)
        make_private_dirs(os.path.dirname(target))
        content = f"{os.path.abspath(os.fspath(cwd))}\n{os.path.abspath(os.fspath(session_file))}\n"
        temporary = os.path.join(os.path.dirname(target), f".{terminal}.{os.getpid()}.tmp")
        try:
            with open(open_private(temporary, os.O_WRONLY | os.O_TRUNC), "w", encoding="utf-8",
                      errors="surrogateescape") as handle:
                handle.write(content)
            os.replace(temporary, target)
        finally:
            try:
                os.unlink(temporary)  # gone after the rename; left over only when writing failed
            except OSError:
                pass
    except Exception:  # noqa: BLE001 - a breadcrumb must never fail the caller
        return


def _same_directory(first: str | os.PathLike[str], second: str | os.PathLike[str]) -> bool:
    return os.path.realpath(os.path.abspath(first)) == os.path.realpath(os.path.abspath(second))


def read_breadcrumb(paths: AgentPaths, cwd: str | os.PathLike[str], *,
                    env: Mapping[str, str] | None = None,
                    tty_path: str | None | _DetectTty = DETECT_TTY) -> Path | None:
    """This terminal's breadcrumb target, only if its cwd resolves to `cwd` and the file exists; else None."""
    target = _breadcrumb_target(paths, cwd, env, tty_path)
    return None if target is None else as_path(target)


def _breadcrumb_target(paths: AgentPaths, cwd: str | os.PathLike[str], env: Mapping[str, str] | None,
                       tty_path: str | None | _DetectTty) -> str | None:
    terminal = terminal_id(env, tty_path)
    if terminal is None:
        return None
    try:
        lines = read_regular_file(_breadcrumb_file(paths, terminal), BREADCRUMB_MAX_BYTES).decode(
            "utf-8", "surrogateescape").splitlines()
    except OSError:
        return None
    if len(lines) < 2 or not lines[0] or not lines[1]:
        return None
    recorded_cwd, session_file = lines[0], lines[1]
    if not _same_directory(recorded_cwd, cwd):
        return None
    return session_file if is_agent_session_file(session_file, paths) else None


def is_agent_session_file(path: str | os.PathLike[str], paths: AgentPaths) -> bool:
    """A breadcrumb may only lead to a session-named regular file inside the agent's sessions folder.

    A breadcrumb is a plain file anyone with access to the agent dir can edit: `continue` must not hand
    whatever file it names (outside the agent dir, a dot-file) to the agent.
    """
    if not is_session_file_name(os.path.basename(os.fspath(path))) or not is_regular_file(path):
        return False
    root = os.path.realpath(paths.sessions_root_text).rstrip(os.sep) + os.sep
    return os.path.realpath(path).startswith(root)


def resolve_continue_target(cwd: str | os.PathLike[str], session_dir: str | os.PathLike[str] | None = None, *,
                            paths: AgentPaths, env: Mapping[str, str] | None = None,
                            tty_path: str | None | _DetectTty = DETECT_TTY,
                            most_recent: Callable[[list[str]], str | os.PathLike[str] | None] | None = None,
                            ) -> Path | None:
    """The file `--continue` resumes: the valid breadcrumb, else the project's newest session; None for a new one.

    The newest session is taken by mtime whatever its message count (as the agent does); files
    without a valid header are skipped. `most_recent` finds it among the project's folders (default: by reading
    them, `sessdex.core.discovery.most_recent_session_in`).
    """
    target = continue_target(cwd, session_dir, paths=paths, env=env, tty_path=tty_path, most_recent=most_recent)
    return None if target is None else as_path(target)


def continue_target(cwd: str | os.PathLike[str], session_dir: str | os.PathLike[str] | None = None, *,
                    paths: AgentPaths, env: Mapping[str, str] | None = None,
                    tty_path: str | None | _DetectTty = DETECT_TTY,
                    most_recent: Callable[[list[str]], str | os.PathLike[str] | None] | None = None) -> str | None:
    """`resolve_continue_target` as a string (no pathlib: what `sessdex continue` prints)."""
    crumb = _breadcrumb_target(paths, cwd, env, tty_path)
    if crumb is not None:
        return crumb
    if most_recent is None:
        from sessdex.core.discovery import most_recent_session_in

        most_recent = most_recent_session_in
    folders = [os.fspath(session_dir)] if session_dir is not None else paths.project_session_folders(cwd)
    found = most_recent(folders)
    return None if found is None else os.fspath(found)
