"""Rendering the ready report files (sessdex.catalog.store.report_files) once the catalog's usage rows settle.

`sessdex watch` calls `render_usage_reports` when its usage rows have not changed for a moment, and
`sessdex index` at its end: every `sessdex usage KIND --all --json` of the machine is joined from the stored row
texts (exactly what a reader would join: `sessdex.catalog.store.usage_stored`) and written under the token of
the rows it was read from. The token is read again afterwards: when another writer changed the rows meanwhile,
the texts may mix two states and nothing is written (the next render does it).
"""

from __future__ import annotations

from sessdex.catalog.index.reconcile import root_range
from sessdex.catalog.store.db import CatalogDatabase
from sessdex.catalog.store.report_files import (
    bump_usage_token,
    remove_report_files,
    report_files_present,
    report_header,
    usage_token,
    write_report_files,
)
from sessdex.catalog.store.usage_stored import joined_usage_json, usage_report_name
from sessdex.core.usage_terms import REPORT_KINDS


def render_usage_reports(db: CatalogDatabase, sessions_root: str) -> bool:
    """Write the ready `--all --json` reports of the catalog's machine over `sessions_root` for the rows' current
    token, unless they are there, and remove those of earlier tokens; True when files were written.

    A file that cannot be written (a read-only folder, a full disk) only leaves the reports to be joined
    from the rows, as without this cache.
    """
    token = usage_token(db, db.machine)
    if token is None:  # rows from before tokens (an upgraded catalog), or no usage yet
        with db.write():
            token = bump_usage_token(db)
    names = {kind: usage_report_name(kind) for kind in REPORT_KINDS}
    if report_files_present(db.location, token, names.values()):
        return False
    params = {**root_range(sessions_root), "machine": db.machine}
    bodies = {}
    for kind, name in names.items():
        text = joined_usage_json(db, kind, "under_root", params)
        if text is not None:
            bodies[name] = text + b"\n"
    if usage_token(db, db.machine) != token:
        return False
    try:
        write_report_files(db.location, token, report_header(db.machine, params["root_lo"]), bodies)
    except OSError:
        return False
    remove_report_files(db.location, keep_token=token)
    return bool(bodies)
