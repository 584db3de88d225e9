"""Rendering the ready report files (sessdex.catalog.store.report_files) once the catalog's usage rows settle.

`sessdex watch` calls `render_usage_reports` when no change has come for a moment (and not more often than every
few seconds), and `sessdex index` at its end: every `sessdex usage KIND --all --json` of the machine is joined
from the stored row texts (exactly what a reader would join: `sessdex.catalog.store.usage_stored`) and written
under the token of the rows it was read from, made before reading them. The token is read again afterwards:
when a change dropped it meanwhile, the texts may mix two states and nothing is written (the next render
does it).
"""

from __future__ import annotations

from sessdex.catalog.index.reconcile import root_range
from sessdex.catalog.store.db import CatalogDatabase
from sessdex.catalog.store.report_files import (
    new_usage_token,
    remove_report_files,
    report_files_present,
    usage_report_name,
    usage_token,
    write_report_files,
)
from sessdex.catalog.store.usage_stored import joined_usage_json
from sessdex.core.usage_terms import REPORT_KINDS


def render_usage_reports(db: CatalogDatabase, sessions_root: str) -> None:
    """Write the ready `--all --json` reports of the catalog's machine over `sessions_root` for the rows' current
    token, unless they are there, and remove those of earlier tokens.

    A file that cannot be written (a read-only folder, a full disk) only leaves the reports to be joined
    from the rows, as without this cache.
    """
    token = usage_token(db, db.machine) or new_usage_token(db)
    names = [usage_report_name(kind) for kind in REPORT_KINDS]
    params = {**root_range(sessions_root), "machine": db.machine}
    if report_files_present(db, token, names, db.machine, params["root_lo"]):
        return
    bodies = {}
    for kind, name in zip(REPORT_KINDS, names):
        text = joined_usage_json(db, kind, "under_root", params)
        if text is not None:
            bodies[name] = text + b"\n"
    if usage_token(db, db.machine) != token:
        return
    try:
        write_report_files(db.location, token, db.machine, params["root_lo"], bodies)
    except OSError:
        return
    remove_report_files(db.location, keep_token=token)
