"""Where the catalog lives: a `--catalog` value resolved to a URL and, for SQLite, a file;
the sidecar files (locks, watcher heartbeat) beside it; and the engine Alembic and the SQLAlchemy backend use.
"""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Iterator

from sessdex.core.errors import CatalogError, UsageError
from sessdex.core.paths import as_path
from sessdex.core.values import Value

TYPE_CHECKING = False  # typing stays off the hot commands' imports
if TYPE_CHECKING:
    from pathlib import Path
    from typing import Any

CATALOG_ENV = "SESSDEX_CATALOG"
CATALOG_OFF = "off"  # `--catalog off`: list/recent/resume/continue read the files directly
# The machine options' variables (sessdex.catalog.store.machine, read by sessdex.catalog.store.settings).
MACHINE_ENV = "SESSDEX_MACHINE"
MACHINES_ENV = "SESSDEX_MACHINES"  # `all`: answers include every machine's sessions (as --machines all)
CATALOG_FILE_NAME = "catalog.db"
BUSY_TIMEOUT_MS = 10_000
MMAP_BYTES = 256 * 1024 * 1024
_SQLITE_URL_PREFIXES = ("sqlite://", "sqlite+pysqlite://")
_POSTGRESQL_URL_PREFIXES = ("postgresql://", "postgres://", "postgresql+psycopg://")
CONNECT_TIMEOUT_SECONDS = 10
SQLITE_HEADER = b"SQLite format 3\x00"  # the first 16 bytes of every SQLite database file


def _engine_options(url: str) -> dict[str, Any]:
    """Engine options per dialect: a PostgreSQL server that does not answer fails fast instead of hanging."""
    if is_postgresql_url(url):
        return {"connect_args": {"connect_timeout": CONNECT_TIMEOUT_SECONDS}, "pool_pre_ping": True}
    return {}


def is_postgresql_url(url: str) -> bool:
    """True for a `postgresql://` (or `postgresql+psycopg://`) catalog URL."""
    return url.startswith(_POSTGRESQL_URL_PREFIXES)


def sqlalchemy_url(url: str) -> str:
    """The URL SQLAlchemy is given: a bare `postgresql://` means psycopg 3 (SQLAlchemy's default is psycopg2)."""
    if url.startswith(("postgresql://", "postgres://")):
        return "postgresql+psycopg://" + url.split("://", 1)[1]
    return url


class CatalogLocation(Value):
    """A catalog database: its SQLAlchemy URL and, for a SQLite file, the file's path.

    The places are held as strings and given as Paths on first read (`sqlite_path`, `lock_dir`, the
    sidecars); the `*_file` / `*_folder` strings serve the hot commands, which never import pathlib.
    """

    __slots__ = ("url", "sqlite_file", "lock_folder")

    def __init__(self, url: str, sqlite_path: str | os.PathLike[str] | None, lock_dir: str | os.PathLike[str]) -> None:
        self.url = url
        self.sqlite_file: str | None = None if sqlite_path is None else os.fspath(sqlite_path)  # absolute
        self.lock_folder: str = os.fspath(lock_dir)  # absolute

    @property
    def sqlite_path(self) -> Path | None:
        return None if self.sqlite_file is None else as_path(self.sqlite_file)

    @property
    def lock_dir(self) -> Path:
        return as_path(self.lock_folder)

    @property
    def display(self) -> str:
        """The catalog as messages name it: the file, or the URL without its password."""
        if self.sqlite_file is not None:
            return self.sqlite_file
        scheme, sep, rest = self.url.partition("://")
        credentials, at, host = rest.rpartition("@")
        if not at or ":" not in credentials:
            return self.url
        return f"{scheme}{sep}{credentials.split(':', 1)[0]}:***@{host}"

    def sidecar_file(self, suffix: str) -> str:
        """A file next to the catalog (lock, watcher heartbeat) named after it, as a string."""
        base = os.path.basename(self.sqlite_file) if self.sqlite_file is not None else CATALOG_FILE_NAME
        return os.path.join(self.lock_folder, f"{base}{suffix}")

    def sidecar(self, suffix: str) -> Path:
        """A file next to the catalog (lock, watcher heartbeat) named after it."""
        return as_path(self.sidecar_file(suffix))

    @property
    def migrate_lock_path(self) -> Path:
        return self.sidecar(".migrate.lock")

    @property
    def watch_lock_path(self) -> Path:
        """Held by the one `sessdex watch` keeping this catalog current."""
        return self.sidecar(".watch.lock")

    @property
    def watcher_path(self) -> Path:
        return self.sidecar(".watcher")

    def wal_identity(self) -> tuple[int, int] | None:
        """(device, inode) of a SQLite catalog's -wal file, None when there is none.

        SQLite removes that file only when the last connection closes: while one is open, a different
        identity means the file was deleted under it (and what it wrote there is lost to everyone else).
        """
        if self.sqlite_file is None:
            return None
        try:
            result = os.stat(f"{self.sqlite_file}-wal")
        except OSError:
            return None
        return result.st_dev, result.st_ino


def _absolute(path: str) -> str:
    """`Path(path).expanduser().absolute()` as a string: `~` expanded, made absolute, empty and `.` parts
    dropped; `..` kept and no symlink resolved, as pathlib does."""
    path = os.path.expanduser(path)
    if not path.startswith("/"):
        path = os.path.join(os.getcwd(), path)
    lead = "//" if path.startswith("//") and not path.startswith("///") else "/"
    return lead + "/".join(part for part in path.split("/") if part not in ("", "."))


def _sqlite_path_from_url(url: str) -> str | None:
    """The file a `sqlite:///relative` or `sqlite:////absolute` URL names; None for other dialects."""
    if not url.startswith(_SQLITE_URL_PREFIXES):
        return None
    rest = url.split("://", 1)[1]
    if not rest.startswith("/") or rest in ("/", "/:memory:") or rest.startswith("/:memory:?"):
        raise UsageError(f"--catalog {url!r}: the catalog must be a database file, not an in-memory database")
    return _absolute(rest[1:].split("?", 1)[0])


def resolve_location(agent_dir: str | os.PathLike[str], configured: str | None = None, *,
                     probe_tables: bool = True) -> CatalogLocation:
    """The catalog `configured` names (a path or a SQLAlchemy URL), else `<agent dir>/catalog.db`.

    The environment is not read here: `sessdex.catalog.store.settings.Settings` resolves `$SESSDEX_CATALOG`.
    A named SQLite file must be absent or a SQLite database (`check_named_catalog_file`): sessdex may
    rebuild or move aside its catalog, and must never do that to a file that is something else.
    `probe_tables=False` leaves out opening the file to look for another program's tables: for a caller that
    reads the catalog's revision itself and uses the file only when it is the current one (the fast path).
    """
    value = configured or None
    if value == CATALOG_OFF:
        raise CatalogError("the catalog is turned off (--catalog off / SESSDEX_CATALOG=off)")
    if value is None:
        path = _absolute(os.path.join(os.fspath(agent_dir), CATALOG_FILE_NAME))
        return CatalogLocation(url=f"sqlite:///{path}", sqlite_path=path, lock_dir=os.path.dirname(path))
    if "://" in value:
        url_path = _sqlite_path_from_url(value)
        if url_path is not None:
            check_named_catalog_file(url_path, probe_tables=probe_tables)
        lock_dir = os.path.dirname(url_path) if url_path is not None else _absolute(os.fspath(agent_dir))
        return CatalogLocation(url=value if url_path is None else f"sqlite:///{url_path}", sqlite_path=url_path,
                               lock_dir=lock_dir)
    path = _absolute(value)
    check_named_catalog_file(path, probe_tables=probe_tables)
    return CatalogLocation(url=f"sqlite:///{path}", sqlite_path=path, lock_dir=os.path.dirname(path))


def check_named_catalog_file(path: str, *, probe_tables: bool = True) -> None:
    """Raise UsageError unless `path` is absent, an empty file, or a file starting with the SQLite header.

    A directory, a device, a FIFO, a session file or notes would otherwise be opened, "repaired" or
    replaced as a catalog. Only the first 16 bytes are read, opened without blocking. With `probe_tables`,
    a SQLite database holding another program's tables (and no catalog revision) is refused too.
    """
    try:
        result = os.stat(path)
    except FileNotFoundError:
        return
    except OSError as exc:
        raise UsageError(f"--catalog {path}: {exc.strerror}") from None
    if not stat.S_ISREG(result.st_mode):
        raise UsageError(f"--catalog {path}: not a SQLite database file (it is not a regular file)")
    if result.st_size == 0:
        return  # SQLite's own empty database: nothing in it to lose
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
        try:
            header = os.read(fd, len(SQLITE_HEADER))
        finally:
            os.close(fd)
    except OSError as exc:
        raise UsageError(f"--catalog {path}: {exc.strerror}") from None
    if header != SQLITE_HEADER:
        raise UsageError(f"--catalog {path}: not a SQLite database; sessdex will not use (or overwrite) it")
    if probe_tables and _holds_other_tables(path):
        raise UsageError(f"--catalog {path}: a SQLite database that is not a sessdex catalog (it has tables but "
                         "no catalog revision); sessdex will not use (or overwrite) it")


def _holds_other_tables(path: str) -> bool:
    """True for a readable SQLite database with tables but no Alembic revision: another program's data (the
    agent's history.db, say). A database sessdex cannot read is left to the catalog's own recovery."""
    import sqlite3

    try:
        connection = sqlite3.connect(f"file:{path.replace('%', '%25').replace('?', '%3f').replace('#', '%23')}"
                                     "?mode=ro", uri=True)
        try:
            names = {row[0] for row in connection.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        finally:
            connection.close()
    except sqlite3.DatabaseError:
        return False
    return bool(names) and "alembic_version" not in names


# -- locks -------------------------------------------------------------------------------------------

@contextlib.contextmanager
def exclusive_lock(path: Path, *, blocking: bool = True) -> Iterator[int]:
    """Hold an exclusive `flock` on `path` (created if needed); raise BlockingIOError when busy and not blocking."""
    import fcntl  # only writers lock

    from sessdex.core.private_files import make_private_dirs, open_private

    make_private_dirs(path.parent)
    fd = open_private(path)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | (0 if blocking else fcntl.LOCK_NB))
        yield fd
    finally:
        os.close(fd)



def create_catalog_engine(url: str, *, foreign_keys: bool = True) -> Any:
    """A SQLAlchemy engine for the catalog; SQLite connections get WAL, busy_timeout and real transactions.

    Migrations pass `foreign_keys=False`: SQLite rebuilds a table by dropping it, and with foreign keys on
    that drop would cascade to the rows that refer to it.
    """
    from sqlalchemy import create_engine, event

    engine = create_engine(sqlalchemy_url(url), **_engine_options(url))
    if engine.dialect.name == "sqlite":
        @event.listens_for(engine, "connect")
        def _configure(dbapi_connection, _record) -> None:
            dbapi_connection.isolation_level = None  # let the "begin" hook below emit BEGIN itself
            cursor = dbapi_connection.cursor()
            cursor.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
            cursor.execute("PRAGMA journal_mode = WAL")
            cursor.execute(f"PRAGMA foreign_keys = {'ON' if foreign_keys else 'OFF'}")
            cursor.close()

        @event.listens_for(engine, "begin")
        def _begin(connection) -> None:
            connection.exec_driver_sql("BEGIN")
    return engine
