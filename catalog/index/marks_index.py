"""The marks file in the catalog: each machine's `<agent dir>/sessdex/marks.jsonl` as that machine's marks rows.

The rows are derived data like every other table: whenever the file's (device, inode, size, mtime_ns) differ from
what the catalog last read (`catalog_meta`, key `marks_file:<machine>`), this machine's rows are replaced by the
file's deciding facts (sessdex.core.marks), in one transaction. The file is small (one line per mark set), so it is
read whole. Every read of marks asks first, by one stat, so a mark set a moment ago shows at once; a rebuild or
`doctor` re-reads it whatever the stat says. Marks are read as the union of every machine's rows.
"""

from __future__ import annotations

import os
import sqlite3

from sessdex.core.errors import CatalogError
from sessdex.core.marks import (
    MarkFact,
    Marks,
    MarksFileError,
    marks_of_facts,
    marks_path_text,
    read_file_facts,
)

TYPE_CHECKING = False  # typing stays off the hot commands' imports
if TYPE_CHECKING:
    from sessdex.catalog.store.db import CatalogDatabase
    from sessdex.core.paths import AgentPaths

MARKS_STATE_KEY = "marks_file:"
ABSENT = "absent"


def _file_state(path: str) -> str:
    """What tells a changed marks file: device, inode, size and mtime (ABSENT when there is none)."""
    try:
        result = os.lstat(path)
    except FileNotFoundError:
        return ABSENT
    return f"{result.st_dev}:{result.st_ino}:{result.st_size}:{result.st_mtime_ns}"


def _file_facts(path: str, state: str) -> list[MarkFact]:
    """The deciding facts of the file (none when it is absent, or not a file sessdex may read)."""
    if state == ABSENT:
        return []
    try:
        return read_file_facts(path)[0]
    except (MarksFileError, OSError):
        return []


def index_marks(db: CatalogDatabase, paths: AgentPaths, *, force: bool = False) -> bool:
    """Bring this machine's marks rows in step with its marks file; True when they were rewritten.

    The file is stat'ed before it is read: a change made while it is read shows as a new state next time.
    """
    path = marks_path_text(paths)
    state = _file_state(path)
    key = MARKS_STATE_KEY + db.machine
    if not force and db.scalar("meta_get", {"key": key}) == state:
        return False
    facts = _file_facts(path, state)
    with db.write():
        db.execute("delete_machine_marks")
        if facts:
            db.executemany("insert_mark", [_row(fact, db.machine) for fact in facts])
        db.execute("meta_delete", {"key": key})
        db.execute("meta_insert", {"key": key, "value": state})
    return True


def _row(fact: MarkFact, machine: str) -> dict[str, object]:
    # The file's facts are this machine's rows, whichever machine wrote the event (a copied file keeps them).
    return {"machine": machine, "session_id": fact.session_id, "kind": fact.kind, "key": fact.key,
            "active": fact.active, "note": fact.text, "time_ms": fact.time_ms, "seq": fact.seq}


def catalog_facts(db: CatalogDatabase, machine: str | None = None) -> list[MarkFact]:
    """The facts the catalog holds: every machine's (or only `machine`'s)."""
    facts = [MarkFact(row_machine, session_id, kind, key, bool(active), note, time_ms, seq)
             for row_machine, session_id, kind, key, active, note, time_ms, seq in db.fetch_tuples("marks_all")]
    return facts if machine is None else [fact for fact in facts if fact.machine == machine]


def fresh_marks(db: CatalogDatabase, paths: AgentPaths) -> dict[str, Marks]:
    """Session id -> current marks over every machine's rows, this machine's made current with its file first.

    A catalog that cannot be written to (read-only, busy) answers with this machine's file read directly.
    """
    path = marks_path_text(paths)
    try:
        index_marks(db, paths)
    except (sqlite3.Error, CatalogError):
        others = [fact for fact in catalog_facts(db) if fact.machine != db.machine]
        return marks_of_facts([*others, *_file_facts(path, _file_state(path))])
    return marks_of_facts(catalog_facts(db))


def marks_disagree(db: CatalogDatabase, paths: AgentPaths) -> bool:
    """`doctor`: whether this machine's marks rows differ from what its marks file says."""
    path = marks_path_text(paths)
    expected = {(f.session_id, f.kind, f.key): (f.active, f.text) for f in _file_facts(path, _file_state(path))}
    stored = {(f.session_id, f.kind, f.key): (f.active, f.text) for f in catalog_facts(db, db.machine)}
    return expected != stored
