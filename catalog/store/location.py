"""Where the catalog lives: a `--catalog` value resolved to a URL and, for SQLite, a file;
the sidecar files (locks, watcher heartbeat) beside it; and the engine Alembic and the SQLAlchemy backend use.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NamedTuple

from sessdex.core.errors import CatalogError

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


def _engine_options(url: str) -> dict[str, Any]:
    """Engine options per dialect: a PostgreSQL server that does not answer fails fast instead of hanging."""
    if url.startswith(_POSTGRESQL_URL_PREFIXES):
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


class CatalogLocation(NamedTuple):
    """A catalog database: its SQLAlchemy URL and, for a SQLite file, the file's path."""

    url: str
    sqlite_path: Path | None
    lock_dir: Path

    @property
    def display(self) -> str:
        """The catalog as messages name it: the file, or the URL without its password."""
        if self.sqlite_path is not None:
            return str(self.sqlite_path)
        scheme, sep, rest = self.url.partition("://")
        credentials, at, host = rest.rpartition("@")
        if not at or ":" not in credentials:
            return self.url
        return f"{scheme}{sep}{credentials.split(':', 1)[0]}:***@{host}"

    def sidecar(self, suffix: str) -> Path:
        """A file next to the catalog (lock, watcher heartbeat) named after it."""
        base = self.sqlite_path.name if self.sqlite_path is not None else CATALOG_FILE_NAME
        return self.lock_dir / f"{base}{suffix}"

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


def _sqlite_path_from_url(url: str) -> Path | None:
    """The file a `sqlite:///relative` or `sqlite:////absolute` URL names; None for other dialects."""
    if not url.startswith(_SQLITE_URL_PREFIXES):
        return None
    rest = url.split("://", 1)[1]
    if not rest.startswith("/") or rest in ("/", "/:memory:"):
        raise CatalogError(f"the catalog must be a database file, not {url!r}")
    return Path(rest[1:].split("?", 1)[0]).expanduser().absolute()


def resolve_location(agent_dir: str | os.PathLike[str], configured: str | None = None) -> CatalogLocation:
    """The catalog `configured` names (a path or a SQLAlchemy URL), else `<agent dir>/catalog.db`.

    The environment is not read here: `sessdex.catalog.store.settings.Settings` resolves `$SESSDEX_CATALOG`.
    """
    value = configured or None
    if value == CATALOG_OFF:
        raise CatalogError("the catalog is turned off (--catalog off / SESSDEX_CATALOG=off)")
    if value is None:
        path = (Path(agent_dir).expanduser() / CATALOG_FILE_NAME).absolute()
        return CatalogLocation(url=f"sqlite:///{path}", sqlite_path=path, lock_dir=path.parent)
    if "://" in value:
        url_path = _sqlite_path_from_url(value)
        lock_dir = url_path.parent if url_path is not None else Path(agent_dir).expanduser().absolute()
        return CatalogLocation(url=value if url_path is None else f"sqlite:///{url_path}", sqlite_path=url_path,
                               lock_dir=lock_dir)
    path = Path(value).expanduser().absolute()
    return CatalogLocation(url=f"sqlite:///{path}", sqlite_path=path, lock_dir=path.parent)


# -- locks -------------------------------------------------------------------------------------------

@contextlib.contextmanager
def exclusive_lock(path: Path, *, blocking: bool = True) -> Iterator[int]:
    """Hold an exclusive `flock` on `path` (created if needed); raise BlockingIOError when busy and not blocking."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
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
