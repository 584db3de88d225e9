"""Choosing the `SessionSource` for a command: the catalog, else the session files themselves.

The one place that decides between `Catalog` and `FileScan`, for the CLI, the shell completion, the picker and
the viewer alike: the file scan on request (`--catalog off`), or, after one warning, when the catalog
cannot be opened (the file scan stays the reference and the fallback). Opening the catalog for a command (not
for shell completion) also makes sure a watcher keeps it current (`sessdex.catalog.index.autostart`).
"""

from __future__ import annotations

import sqlite3

from sessdex.catalog.queries.sessions import Catalog
from sessdex.catalog.store.db import current_sqlite_catalog
from sessdex.catalog.store.settings import Settings
from sessdex.core.errors import CatalogError, CatalogUnavailableError

TYPE_CHECKING = False  # typing stays off the hot commands' imports
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Literal, overload

    from sessdex.catalog.queries.source import SessionSource
else:
    def overload(function):  # typing.overload's run-time effect, without importing typing
        return function


@overload
def open_session_source(settings: Settings, *, warn: Callable[[str], None] | None = None,
                        only_if_ready: Literal[False] = False) -> SessionSource: ...


@overload
def open_session_source(settings: Settings, *, warn: Callable[[str], None] | None = None,  # noqa: F811 (overload)
                        only_if_ready: bool) -> SessionSource | None: ...


def open_session_source(settings: Settings, *, warn: Callable[[str], None] | None = None,  # noqa: F811 (overload)
                        only_if_ready: bool = False) -> SessionSource | None:
    """The catalog the settings name, or the file scan when the catalog is off or (after `warn`) unusable.

    A SQLite catalog file at the current schema revision is opened as it is (no schema work, no SQLAlchemy).
    With `only_if_ready`, None instead of anything else: a catalog that is not such a file (missing, older,
    another database) or cannot be opened; shell completion uses this to answer without creating anything.
    """
    if settings.catalog_off:
        return _file_scan(settings)
    ready = ready_catalog(settings)
    if ready is not None or only_if_ready:
        if ready is not None and not only_if_ready:
            _ensure_watcher(ready)
        return ready
    try:
        catalog = Catalog.from_settings(settings)
        _ensure_watcher(catalog)
        return catalog
    except CatalogUnavailableError:
        raise  # a server the user named cannot be reached: its other machines' sessions are not in the files here
    except CatalogError as exc:
        if warn is not None:
            warn(f"{exc}; reading the session files directly")
        return _file_scan(settings)


def ready_catalog(settings: Settings) -> Catalog | None:
    """The catalog when it is a SQLite file at the current schema revision, else None."""
    try:
        # A named file is not opened a second time to look for another program's tables: a catalog at the current
        # revision is ours, and anything else is left to Catalog.from_settings, which checks it.
        location = settings.location(probe_tables=False)
        database = (current_sqlite_catalog(location, settings.machine_name) if location.sqlite_file is not None
                    else None)
    except (CatalogError, sqlite3.DatabaseError, OSError):
        return None
    if database is None:
        return None
    return Catalog(settings.paths, location, database=database, all_machines=settings.all_machines)


def _ensure_watcher(catalog: Catalog) -> None:
    """A watcher for the catalog, started in the background when none runs (catalog.index.autostart)."""
    from sessdex.catalog.index.autostart import ensure_watcher

    ensure_watcher(catalog.location, catalog.sessions_root, catalog.paths.agent_dir_text, catalog.machine)


def _file_scan(settings: Settings) -> SessionSource:
    # Imported only when the files are read directly: a catalog answer never needs it.
    from sessdex.catalog.queries.file_scan import FileScan

    return FileScan(settings.paths)
