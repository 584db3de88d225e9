"""The id width of listings, kept in the catalog by the watcher and read by listings.

A listing prints ids at the width at which every session `resume` looks at (this machine's, every project's) has its
own prefix. Computing it reads every id: at 100,000 sessions that is most of a listing's time. The watcher keeps it
in catalog_meta under ID_WIDTH_KEY (plus the machine) as "WIDTH STAMP", or "none STAMP" when the catalog cannot tell
(it holds files outside the sessions root), STAMP being the highest session_files id when it was computed. A file
indexed since by anyone raises that id: the stored width is then not used until the watcher computes it again.
Light on imports: listings under a watcher read it.
"""

from __future__ import annotations

from sessdex.catalog.index.reconcile import root_range

TYPE_CHECKING = False  # see the README's start-up budget
if TYPE_CHECKING:
    import sqlite3

ID_WIDTH_KEY = "resume_id_width:"
_ID_SEPARATOR = "\x1f"  # a literal: an expression such as char(31) would be evaluated again for every row
# Every session id of this machine's rows in one string (from the index on machine, session_id: no row object made)
# with their number; the files whose header holds none; whether any row lies outside the sessions root.
_SESSION_IDS_SQL = (f"SELECT count(*), group_concat(session_id, '{_ID_SEPARATOR}') FROM session_files "
                    "WHERE machine = ? AND session_id > ''")
# The files without an id are found in the index on (machine, session_id) and their paths read by rowid: asked for
# `path` directly, SQLite walks the covering path index over every row of the machine to find those few.
_WITHOUT_ID_SQL = ("SELECT (SELECT path FROM session_files WHERE id = k.id) FROM session_files AS k "
                   "WHERE machine = ? AND session_id IS NULL UNION ALL "
                   "SELECT (SELECT path FROM session_files WHERE id = k.id) FROM session_files AS k "
                   "WHERE machine = ? AND session_id = ''")
_OUTSIDE_ROOT_SQL = ("SELECT EXISTS (SELECT 1 FROM session_files WHERE machine = ? AND path <= ?) "
                     "OR EXISTS (SELECT 1 FROM session_files WHERE machine = ? AND path >= ?)")
STAMP_SQL = "SELECT coalesce(max(id), 0) FROM session_files"
_STORED_WIDTH_SQL = "SELECT value FROM catalog_meta WHERE key = ?"


def catalog_id_width(reader: sqlite3.Connection, machine: str, sessions_root: str) -> int | None:
    """The id width of listings from the catalog's rows of `machine`: the ids of their headers, and for a file whose
    header holds none the id its name holds (core.paths.session_ids_of_names). None when the catalog holds a file
    outside `sessions_root` (a --session-dir elsewhere, which `resume` does not look at)."""
    from sessdex.core.discovery import id_prefix_length
    from sessdex.core.paths import session_ids_of_names

    bounds = root_range(sessions_root)
    if reader.execute(_OUTSIDE_ROOT_SQL, (machine, bounds["root_lo"], machine, bounds["root_hi"])).fetchone()[0]:
        return None
    count, joined = reader.execute(_SESSION_IDS_SQL, (machine,)).fetchone()
    known = joined.split(_ID_SEPARATOR) if joined else []
    if len(known) != count:  # an id that holds the separator
        known = [row[0] for row in reader.execute(
            "SELECT session_id FROM session_files WHERE machine = ? AND session_id > ''", (machine,))]
    known += session_ids_of_names(row[0] for row in reader.execute(_WITHOUT_ID_SQL, (machine, machine)))
    return id_prefix_length(known)


def watched_id_width(reader: sqlite3.Connection, machine: str, sessions_root: str) -> int | None:
    """The id width of listings under a live watcher: the one it stored when nothing was indexed since (two small
    reads), else computed from the rows (`catalog_id_width`)."""
    row = reader.execute(_STORED_WIDTH_SQL, (ID_WIDTH_KEY + machine,)).fetchone()
    if row is not None:
        width, _, stamp = row[0].partition(" ")
        if stamp == str(reader.execute(STAMP_SQL).fetchone()[0]):
            return None if width == "none" else int(width)
    return catalog_id_width(reader, machine, sessions_root)
