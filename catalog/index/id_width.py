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


def joined_ids(reader: sqlite3.Connection, joined_sql: str, rows_sql: str, params: tuple[str, ...]) -> list[str]:
    """The session ids `rows_sql` selects, read through `joined_sql` (their count and the ids joined by
    _ID_SEPARATOR: one string instead of a row object per id); row by row only when an id holds the separator."""
    count, joined = reader.execute(joined_sql, params).fetchone()
    ids = joined.split(_ID_SEPARATOR) if joined else []
    if len(ids) != count:  # an id that holds the separator
        ids = [row[0] for row in reader.execute(rows_sql, params)]
    return ids


def catalog_id_width(reader: sqlite3.Connection, machine: str, sessions_root: str) -> int | None:
    """The id width of listings from the catalog's rows of `machine`: the ids of their headers, and for a file whose
    header holds none the id its name holds (core.paths.session_ids_of_names). None when the catalog holds a file
    outside `sessions_root` (a --session-dir elsewhere, which `resume` does not look at)."""
    from sessdex.core.discovery import id_prefix_length
    from sessdex.core.paths import session_ids_of_names

    bounds = root_range(sessions_root)
    if reader.execute(_OUTSIDE_ROOT_SQL, (machine, bounds["root_lo"], machine, bounds["root_hi"])).fetchone()[0]:
        return None
    known = joined_ids(reader, _SESSION_IDS_SQL,
                       "SELECT session_id FROM session_files WHERE machine = ? AND session_id > ''", (machine,))
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


# -- the picker's every-project scope ---------------------------------------------------------------------------
# The picker's first frame shows how many sessions the every-project scope lists and their ids at the width that
# tells them apart: reading every id for that is most of the first frame's time at 100,000 sessions. The watcher keeps
# both in catalog_meta under PICKER_FIGURES_KEY (plus the machine) as "COUNT WIDTH STAMP", STAMP being
# `_PICKER_STAMP_SQL`'s answer when they were computed: the highest session_files id (a file indexed since) and the
# newest mtime of the machine's files (a session appended to since, which may have become listable). The picker's
# application reads every row and repaints exact figures, so a stored figure that a removal by another process
# left out of date shows for one frame only.
PICKER_FIGURES_KEY = "picker_every_project:"
# The listable sessions of the machine below the root (a valid header, a message), as the picker lists them.
_LISTABLE_IDS_SQL = (f"SELECT count(*), group_concat(session_id, '{_ID_SEPARATOR}') FROM session_files "
                     "WHERE header_valid = 1 AND message_count >= 1 AND machine = ? AND path > ? AND path < ?")
_LISTABLE_ID_ROWS_SQL = ("SELECT session_id FROM session_files "
                         "WHERE header_valid = 1 AND message_count >= 1 AND machine = ? AND path > ? AND path < ?")
# Two reads of indexes (the rowid's end, the end of the index on machine, mtime).
_PICKER_STAMP_SQL = ("SELECT (SELECT coalesce(max(id), 0) FROM session_files), "
                     "(SELECT coalesce(max(mtime_ns), 0) FROM session_files WHERE machine = ?)")


def every_project_figures(reader: sqlite3.Connection, machine: str, sessions_root: str) -> tuple[int, int]:
    """(how many, id width) of the sessions the picker lists for every project of `machine`: those below
    `sessions_root` with a valid header and at least one message."""
    from sessdex.core.discovery import id_prefix_length

    bounds = root_range(sessions_root)
    params = (machine, bounds["root_lo"], bounds["root_hi"])
    ids = joined_ids(reader, _LISTABLE_IDS_SQL, _LISTABLE_ID_ROWS_SQL, params)
    return len(ids), id_prefix_length(ids)


def picker_stamp(reader: sqlite3.Connection, machine: str) -> str:
    """What the stored figures of the every-project scope are stamped with (see PICKER_FIGURES_KEY)."""
    highest, newest = reader.execute(_PICKER_STAMP_SQL, (machine,)).fetchone()
    return f"{highest}:{newest}"


def stored_every_project_figures(reader: sqlite3.Connection, machine: str) -> tuple[int, int] | None:
    """`every_project_figures` as the watcher stored them, when no file was indexed or appended to since (three
    small reads); None otherwise."""
    row = reader.execute(_STORED_WIDTH_SQL, (PICKER_FIGURES_KEY + machine,)).fetchone()
    if row is None:
        return None
    count, width, stamp = (row[0].split(" ") + ["", "", ""])[:3]
    if not (count.isdigit() and width.isdigit()) or stamp != picker_stamp(reader, machine):
        return None
    return int(count), int(width)


def picker_figures_value(count: int, width: int, stamp: str) -> str:
    """The catalog_meta value under PICKER_FIGURES_KEY for these figures."""
    return f"{count} {width} {stamp}"
