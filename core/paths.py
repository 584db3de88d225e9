"""Where the agent keeps things: the agent dir, project session directories and session file names."""

from __future__ import annotations

import os

from sessdex.core.errors import UsageError

# Plain classes and string operations here, no dataclasses, re, typing or pathlib: every hot command imports
# this module (the README's start-up budget). The Path values of the API are made on first use.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable, Iterator
    from pathlib import Path
    from typing import Literal

    ProjectDirNaming = Literal["documented", "agent"]

AGENT_DIR_ENV = "PI_CODING_AGENT_DIR"
SESSION_SUFFIX = ".jsonl"


def as_path(value: str | os.PathLike[str]) -> Path:
    """`value` as a Path, pathlib imported only now (it, re and urllib.parse would cost every hot command)."""
    from pathlib import Path

    return value if isinstance(value, Path) else Path(value)


def default_agent_dir_text() -> str:
    """The agent dir as a string: `$PI_CODING_AGENT_DIR` when set, else `~/.xcsh/agent`."""
    configured = os.environ.get(AGENT_DIR_ENV)
    if configured:
        return os.path.expanduser(configured)
    return os.path.join(os.path.expanduser("~"), ".xcsh", "agent")


def default_agent_dir() -> Path:
    """The agent dir: `$PI_CODING_AGENT_DIR` when set, else `~/.xcsh/agent`."""
    return as_path(default_agent_dir_text())


def _default_tmp_dir_text() -> str:
    for variable in ("TMPDIR", "TMP", "TEMP"):
        configured = os.environ.get(variable)
        if configured:
            return configured
    return "/tmp"


def current_directory() -> str:
    """The process's current directory; a UsageError (not a traceback) when it was deleted under us."""
    try:
        return os.getcwd()
    except FileNotFoundError as exc:
        raise UsageError("the current directory no longer exists (it was deleted); cd to another one") from exc


def absolute_path(path: str | os.PathLike[str]) -> str:
    """`os.path.abspath`, with the clear error of `current_directory` when a relative path cannot be resolved."""
    text = os.fspath(path)
    return os.path.normpath(text) if os.path.isabs(text) else os.path.normpath(os.path.join(current_directory(), text))


def default_tmp_dir() -> Path:
    """The temporary directory the agent names `-tmp…` projects after: $TMPDIR, $TMP, $TEMP, else /tmp
    (what the agent's runtime reports), read at call time."""
    return as_path(_default_tmp_dir_text())


def _canonical(path: str | os.PathLike[str]) -> str:
    """Absolute, normalized and symlink-resolved form of a path (need not exist).

    A Windows path recorded by an agent on another machine (`C:\\Users\\x`) is kept as it is.
    """
    text = os.fspath(path)
    if _has_windows_drive(text):
        return text
    return os.path.realpath(absolute_path(text))


def _has_windows_drive(text: str) -> bool:
    """`C:\\…` or `C:/…`: an ASCII drive letter, a colon and a separator."""
    return len(text) >= 3 and text[0].isascii() and text[0].isalpha() and text[1] == ":" and text[2] in "\\/"


def _dashes(text: str) -> str:
    return text.replace("/", "-").replace("\\", "-").replace(":", "-")


def documented_project_dir_name(cwd: str | os.PathLike[str]) -> str:
    """The documented `--<cwd without leading slash, / \\ : as ->--` directory name for a project."""
    return "--" + _dashes(_canonical(cwd).lstrip("/")) + "--"


def agent_project_dir_name(cwd: str | os.PathLike[str], home: str | os.PathLike[str],
                           tmp_dir: str | os.PathLike[str]) -> str:
    """The agent's home-relative name: `-a-b` for ~/a/b, `-` for ~, `-tmp-x` under the temp dir, else documented."""
    resolved = _canonical(cwd)
    for base, prefix in ((_canonical(home), "-"), (_canonical(tmp_dir), "-tmp")):
        if resolved == base:
            return prefix
        if resolved.startswith(base.rstrip("/") + "/"):
            relative = resolved[len(base.rstrip("/")) + 1:]
            return ("-" if prefix == "-" else prefix + "-") + _dashes(relative)
    return documented_project_dir_name(resolved)


def session_file_name(timestamp_iso: str, session_id: str) -> str:
    """`<ISO time with : and . as ->_<session id>.jsonl`."""
    return f"{timestamp_iso.replace(':', '-').replace('.', '-')}_{session_id}.jsonl"


class AgentPaths:
    """The agent's directory layout, resolved once: every path sessdex reads or writes derives from here.

    `agent_dir`, `home` and `tmp_dir` are Paths (made on first read when given as strings); the `*_text`
    twins are the same places as strings, for the hot commands, which never import pathlib. Immutable,
    compared and hashed by its four fields.
    """

    __slots__ = ("_agent_dir", "_home", "_tmp_dir", "naming")
    _agent_dir: str | os.PathLike[str]
    _home: str | os.PathLike[str]
    _tmp_dir: str | os.PathLike[str] | None
    naming: ProjectDirNaming

    def __init__(self, agent_dir: str | os.PathLike[str], home: str | os.PathLike[str] | None = None,
                 tmp_dir: str | os.PathLike[str] | None = None, naming: ProjectDirNaming = "documented") -> None:
        """The layout under `agent_dir`; `home` defaults to the user's home directory; `tmp_dir` None:
        $TMPDIR or the system's, looked up when first needed."""
        set_field = object.__setattr__
        set_field(self, "_agent_dir", agent_dir)
        set_field(self, "_home", os.path.expanduser("~") if home is None else home)
        set_field(self, "_tmp_dir", tmp_dir)
        set_field(self, "naming", naming)

    def _path_of(self, field: str) -> Path:
        value = getattr(self, field)
        path = as_path(value)
        if path is not value:
            object.__setattr__(self, field, path)
        return path

    @property
    def agent_dir(self) -> Path:
        return self._path_of("_agent_dir")

    @property
    def home(self) -> Path:
        return self._path_of("_home")

    @property
    def tmp_dir(self) -> Path | None:
        return None if self._tmp_dir is None else self._path_of("_tmp_dir")

    @property
    def agent_dir_text(self) -> str:
        return os.fspath(self._agent_dir)

    def _fields(self) -> tuple[object, ...]:
        return (self.agent_dir, self.home, self.tmp_dir, self.naming)

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"cannot assign to field {name!r}: AgentPaths is immutable")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"cannot delete field {name!r}: AgentPaths is immutable")

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return self._fields() == other._fields()

    def __hash__(self) -> int:
        return hash(self._fields())

    def __repr__(self) -> str:
        return (f"AgentPaths(agent_dir={self.agent_dir!r}, home={self.home!r}, tmp_dir={self.tmp_dir!r}, "
                f"naming={self.naming!r})")

    @classmethod
    def from_env(cls, agent_dir: str | os.PathLike[str] | None = None,
                 naming: ProjectDirNaming = "documented") -> AgentPaths:
        """Layout for the current environment (HOME, TMPDIR, PI_CODING_AGENT_DIR), read at call time."""
        return cls(
            agent_dir=os.path.expanduser(os.fspath(agent_dir)) if agent_dir else default_agent_dir_text(),
            home=os.path.expanduser("~"),
            naming=naming,
        )

    @property
    def sessions_root(self) -> Path:
        return self.agent_dir / "sessions"

    @property
    def sessions_root_text(self) -> str:
        return os.path.join(self.agent_dir_text, "sessions")

    @property
    def blobs_dir(self) -> Path:
        return self.agent_dir / "blobs"

    @property
    def terminal_sessions_dir(self) -> Path:
        return self.agent_dir / "terminal-sessions"

    @property
    def history_db(self) -> Path:
        return self.agent_dir / "history.db"

    def _tmp_dir_text(self) -> str:
        return _default_tmp_dir_text() if self._tmp_dir is None else os.fspath(self._tmp_dir)

    def project_dir_name(self, cwd: str | os.PathLike[str]) -> str:
        """The directory name this layout writes a project's sessions into."""
        if self.naming == "agent":
            return agent_project_dir_name(cwd, self._home, self._tmp_dir_text())
        return documented_project_dir_name(cwd)

    def project_session_dir(self, cwd: str | os.PathLike[str]) -> Path:
        """Where new sessions of the project at `cwd` are written."""
        return self.sessions_root / self.project_dir_name(cwd)

    def project_session_folders(self, cwd: str | os.PathLike[str]) -> list[str]:
        """Every directory that may hold the project's sessions, as strings: both naming schemes, writing one first."""
        names = [self.project_dir_name(cwd), documented_project_dir_name(cwd),
                 agent_project_dir_name(cwd, self._home, self._tmp_dir_text())]
        root = self.sessions_root_text
        return [os.path.join(root, name) for name in dict.fromkeys(names)]

    def project_session_dirs(self, cwd: str | os.PathLike[str]) -> list[Path]:
        """Every directory that may hold the project's sessions: both naming schemes, writing one first."""
        return [as_path(folder) for folder in self.project_session_folders(cwd)]


def session_ids_of_names(names: Iterable[str]) -> list[str]:
    """The session ids session file names (or paths) carry: `<timestamp>_<sessionId>.jsonl`, the part after the
    last `_` of the name; a name without one carries none."""
    ids = []
    for name in names:
        stem = name.rpartition("/")[2][:-len(SESSION_SUFFIX)]
        _timestamp, separator, session_id = stem.rpartition("_")
        if separator and session_id:
            ids.append(session_id)
    return ids


def is_session_file_name(name: str) -> bool:
    """A `*.jsonl` name that is not a dot-file (temp files of rewrites, editors' files are never sessions)."""
    return name.endswith(SESSION_SUFFIX) and not name.startswith(".")


def session_file_entries(directory: str | os.PathLike[str], *, recursive: bool = False,
                         ordered: bool = False) -> Iterator[os.DirEntry[str]]:
    """The one walker of session files: the entries of `directory` named like sessions (`is_session_file_name`:
    `*.jsonl`, never a dot-file) that are not folders.

    With `recursive`, also those of every subfolder, as `os.walk` goes: into real folders, never into
    symlinks to folders; a folder's own entries come before its subfolders'. `ordered` sorts each folder
    by name. Symlinks to files and other non-folders (FIFOs, dangling links) are yielded: callers decide
    from `entry.stat()` what they read. A folder that cannot be listed is skipped.
    """
    try:
        with os.scandir(directory) as listing:
            entries = list(listing)  # closed before yielding: a deep walk holds no descriptors open
    except OSError:
        return
    if ordered:
        entries.sort(key=lambda entry: entry.name)
    subfolders = []
    for entry in entries:
        named_like_a_session = is_session_file_name(entry.name)
        if not (named_like_a_session or recursive):
            continue
        try:
            is_folder = entry.is_dir()
            if is_folder and recursive and not entry.is_symlink():
                subfolders.append(entry.path)
        except OSError:
            is_folder = False
        if named_like_a_session and not is_folder:
            yield entry
    for subfolder in subfolders:
        yield from session_file_entries(subfolder, recursive=True, ordered=ordered)



# -- paths as text a database holds -------------------------------------------------------------------------

# A file name is bytes; Python reads one that is not valid UTF-8 with each bad byte as a lone surrogate
# (U+DC80..U+DCFF, os.fsdecode's "surrogateescape"), which neither SQLite's nor PostgreSQL's text can hold.
# The stored form writes such a byte as PATH_ESCAPE and two hex digits, and a PATH_ESCAPE of the name itself
# as two of them: every path round-trips, a valid UTF-8 path without PATH_ESCAPE (all real ones) is stored as
# it is, and the form keeps prefixes and "/" so that folder ranges and dirname work on it unchanged.
PATH_ESCAPE = "\ufffe"  # a Unicode noncharacter: valid UTF-8, never in a real name


def path_to_text(path: str) -> str:
    """The stored form of a path (see above); the path itself unless it holds an undecodable byte."""
    if path.isascii():
        return path
    if PATH_ESCAPE not in path:
        try:
            path.encode("utf-8")
            return path
        except UnicodeEncodeError:
            pass
    parts = []
    for char in path:
        if char == PATH_ESCAPE:
            parts.append(PATH_ESCAPE * 2)
        elif "\udc80" <= char <= "\udcff":
            parts.append(f"{PATH_ESCAPE}{ord(char) - 0xDC00:02x}")
        else:
            parts.append(char)
    return "".join(parts)


def path_from_text(text: str) -> str:
    """The path of a stored form made by `path_to_text` (os.fsdecode's form: bad bytes as lone surrogates)."""
    if PATH_ESCAPE not in text:
        return text
    parts = []
    position = 0
    while position < len(text):
        char = text[position]
        if char != PATH_ESCAPE:
            parts.append(char)
            position += 1
        elif text[position + 1:position + 2] == PATH_ESCAPE:
            parts.append(PATH_ESCAPE)
            position += 2
        else:
            try:
                parts.append(chr(0xDC00 + int(text[position + 1:position + 3], 16)))
            except ValueError:  # not a form path_to_text makes: kept as it is
                parts.append(char)
                position += 1
                continue
            position += 3
    return "".join(parts)
