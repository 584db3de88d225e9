"""`resume ID` on a catalog server, answered from this machine's session files when they settle it.

Why: a resume on a PostgreSQL catalog pays, before its first byte to the server, for importing the driver
(psycopg and what it imports: about a hundred milliseconds of CPU, several times everything else the command
does). Yet what `resume ID` answers for this machine alone is a function of this machine's session files: the
catalog holds their summaries and answers exactly as the file scan does (the parity tests hold it to that), and
the file scan's id lookup reads only the first lines of each file of the scope, then whole the few whose
header leaves the id possible (`sessdex.core.discovery.id_prefix_files`).

So the files answer, with the catalog left unopened, unless the answer needs what only the catalog holds:
- other machines' sessions (`--machines all`): `files_settle_resume` says no, and the CLI opens the catalog;
- marks (`--json`, `--keep-marks`): a session's marks made on another machine live only in the catalog, so the
  CLI opens the catalog (`sessdex.catalog.cli.read_guard.resume_source`);
- the files to read whole hold more than WHOLE_READ_BUDGET bytes (a short prefix matching many sessions, a very
  large session): then the catalog's rows answer sooner than the files, and `FilesFirst` asks the catalog.
A catalog that is on a SQLite file answers every resume itself: it costs no driver import.
"""

from __future__ import annotations

import os

from sessdex.catalog.store.location import is_postgresql_url

TYPE_CHECKING = False  # typing stays off the hot commands' imports
if TYPE_CHECKING:
    from collections.abc import Callable

    from sessdex.catalog.queries.source import SessionSource
    from sessdex.catalog.store.settings import Settings
    from sessdex.core.marks import Marks
    from sessdex.core.paths import AgentPaths
    from sessdex.core.summary import SessionInfo

# Reading and folding a session file whole costs about 5 to 10 ms per MB; the driver import and the round
# trips of the catalog's answer cost about what reading 10 to 30 MB does.
WHOLE_READ_BUDGET = 8 << 20


def files_settle_resume(settings: Settings) -> bool:
    """True when `resume ID` without marks is answered from this machine's files first (`FilesFirst`): the catalog
    is on a PostgreSQL server and only this machine's sessions are asked for."""
    return (settings.catalog is not None and is_postgresql_url(settings.catalog)
            and not settings.all_machines)


class _OverBudget(Exception):
    """The files of a scope would cost more to read than the catalog's answer."""


class FilesFirst:
    """What `resume` asks of its source (`find_session_by_id`, `marks`), answered from the session files; the
    catalog `open_catalog` opens answers over the budget, and gives the marks."""

    def __init__(self, paths: AgentPaths, open_catalog: Callable[[], SessionSource]) -> None:
        self.paths = paths
        self._open_catalog = open_catalog
        self._catalog: SessionSource | None = None

    def __enter__(self) -> FilesFirst:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def close(self) -> None:
        if self._catalog is not None:
            self._catalog.close()
            self._catalog = None

    def _source(self) -> SessionSource:
        if self._catalog is None:
            self._catalog = self._open_catalog()
        return self._catalog

    def marks(self) -> dict[str, Marks]:
        """Every session's marks, from the catalog (it holds other machines' marks too)."""
        return self._source().marks()

    def find_session_by_id(self, value: str, cwd: str | os.PathLike[str],
                           session_dir: str | os.PathLike[str] | None = None) -> SessionInfo:
        """sessdex.core.resume.find_session_by_id on the files, or the catalog's answer over WHOLE_READ_BUDGET."""
        from sessdex.core.resume import find_session_by_id

        try:
            return find_session_by_id(value, cwd, session_dir, paths=self.paths, lookup=self._within_budget)
        except _OverBudget:
            return self._source().find_session_by_id(value, cwd, session_dir)

    def _within_budget(self, prefix: str, cwd: str | os.PathLike[str] | None,
                       session_dir: str | os.PathLike[str] | None) -> list[SessionInfo]:
        from sessdex.core.discovery import id_prefix_files, sessions_in_files

        files = list(id_prefix_files(prefix, cwd, session_dir, paths=self.paths))
        if sum(size for _path, _mtime, size in files) > WHOLE_READ_BUDGET:
            raise _OverBudget
        return sessions_in_files(files, prefix)
