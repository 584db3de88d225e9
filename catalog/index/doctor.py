"""`sessdex doctor`'s checks and repairs: the catalog compared with the session files, and fixed from them.

The catalog is derived data: a repair re-indexes files, drops rows of vanished files, rebuilds the
full-text indexes or, when the catalog cannot be opened at all, moves it aside and builds a new one.
Session files are only ever read.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sessdex.catalog.index.content_index import fill_content_index
from sessdex.catalog.index.file_reader import catalog_text
from sessdex.catalog.index.indexer import Indexer, open_session_file, read_fold, storable_text, stores_content
from sessdex.catalog.index.marks_index import index_marks, marks_disagree
from sessdex.catalog.index.reconcile import Scope, catalog_files, diff, root_range, scan_files
from sessdex.catalog.index.watcher import refuse_while_watched
from sessdex.catalog.store.db import CatalogNotWritableError, open_catalog
from sessdex.catalog.store.location import CatalogLocation
from sessdex.core.errors import CatalogError, CatalogUnavailableError
from sessdex.core.paths import AgentPaths, path_from_text
from sessdex.core.summary import SessionSummary

if TYPE_CHECKING:
    from sessdex.catalog.store.db import CatalogDatabase


@dataclass
class DoctorReport:
    """What `sessdex doctor` found; `needs_repair` is about the catalog only, never about the files."""

    catalog: str
    catalog_unreadable: str | None = None
    integrity_errors: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    stale: list[str] = field(default_factory=list)
    orphaned: list[str] = field(default_factory=list)
    misread: list[str] = field(default_factory=list)
    no_header: list[str] = field(default_factory=list)
    damaged: dict[str, int] = field(default_factory=dict)
    unreadable: list[str] = field(default_factory=list)
    unindexable: dict[str, str] = field(default_factory=dict)  # path -> why reading it fails
    files: int = 0
    marks_stale: bool = False  # this machine's marks rows differ from its marks file
    repaired: list[str] = field(default_factory=list)

    @property
    def needs_repair(self) -> bool:
        return bool(self.catalog_unreadable or self.integrity_errors or self.missing or self.stale
                    or self.orphaned or self.misread or self.marks_stale)

    def to_json(self) -> dict[str, Any]:
        """The report as `sessdex doctor --json` prints it."""
        return {**self.__dict__, "needs_repair": self.needs_repair}


def _row_disagrees(db: CatalogDatabase, row: Any) -> bool:
    """Re-read the file exactly as the indexer would and compare with what the catalog holds for it."""
    counts = [0]

    def count(texts: list[str], _pending: bool) -> None:
        counts[0] += len(texts)

    with open_session_file(row["path"]) as handle:
        result = read_fold(handle, 0, row["size"], SessionSummary(), 0, count)
    visible = result.visible
    expected = (visible.header_valid, storable_text(visible.session_id), visible.message_count,
                catalog_text(visible.title), catalog_text(visible.first_message),
                result.committed_bad + result.pending_bad, result.committed_offset,
                counts[0] if stores_content(db) else 0)  # --no-content: no message rows by design
    stored = (bool(row["header_valid"]), row["session_id"], row["message_count"], row["title"], row["first_message"],
              row["unparseable_lines"] + row["pending_unparseable"], row["indexed_offset"],
              len(db.fetchall("message_texts", {"file_id": row["id"]})))
    return expected != stored


def diagnose(db: CatalogDatabase, paths: AgentPaths, *, reread: bool) -> DoctorReport:
    """Compare the catalog with the files below the sessions root (and, with `reread`, with their content)."""
    # FTS5 checks message_fts against every message row: an unfinished first index would read as damage.
    fill_content_index(db)
    report = DoctorReport(db.location.display, integrity_errors=db.integrity_errors())
    scope = Scope.of(root=paths.sessions_root)
    on_disk = scan_files(scope)
    in_catalog = catalog_files(db, scope)
    report.files = len(on_disk)
    report.marks_stale = marks_disagree(db, paths)
    changed, report.orphaned = diff(on_disk, in_catalog)
    report.missing = [path for path in changed if path not in in_catalog]
    report.stale = [path for path in changed if path in in_catalog]
    for stats_row in db.fetchall("stats_under_root", root_range(os.path.abspath(paths.sessions_root))):
        path = path_from_text(stats_row["path"])  # the catalog's stored form, as the scan names the file
        if path in changed or path not in on_disk:
            continue
        row = db.fetchall("file_by_path", {"path": stats_row["path"]})[0]
        if not os.access(path, os.R_OK):
            report.unreadable.append(path)
            continue
        if reread:
            try:
                if _row_disagrees(db, row):
                    report.misread.append(path)
            except Exception as exc:  # one file's content: the catalog keeps it as unreadable
                report.unindexable[path] = _reason(exc)
                continue
        if not row["header_valid"]:
            report.no_header.append(path)
        bad = row["unparseable_lines"] + row["pending_unparseable"]
        if bad:
            report.damaged[path] = bad
    return report


def _reason(exc: BaseException) -> str:
    lines = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {lines[0]}" if lines else type(exc).__name__


def repair(db: CatalogDatabase, report: DoctorReport, paths: AgentPaths | None = None) -> None:
    """Fix the catalog from the files: index missing and stale files, drop orphans, re-read misreads, rebuild FTS."""
    indexer = Indexer(db)
    if report.missing or report.stale or report.orphaned:
        indexer.index_paths([*report.missing, *report.stale, *report.orphaned])
        report.repaired.append(f"indexed {len(report.missing) + len(report.stale)} file(s), "
                               f"dropped {len(report.orphaned)} vanished")
    for path in report.misread:
        indexer.index_path(path, force=True)
    if report.misread:
        report.repaired.append(f"re-read {len(report.misread)} misread file(s)")
    for failure in indexer.failures:
        report.unindexable[failure.path] = failure.reason
    if report.marks_stale and paths is not None and index_marks(db, paths, force=True):
        report.repaired.append("re-read the marks file")
    if report.integrity_errors and db.rebuild_full_text():
        report.repaired.append("rebuilt the full-text indexes")


def _move_aside(location: CatalogLocation) -> Path:
    assert location.sqlite_path is not None
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    target = location.sqlite_path.with_name(f"{location.sqlite_path.name}.corrupt-{stamp}")
    os.replace(location.sqlite_path, target)
    for suffix in ("-wal", "-shm"):
        leftover = Path(f"{location.sqlite_path}{suffix}")
        if leftover.exists():
            os.replace(leftover, Path(f"{target}{suffix}"))
    return target


def run_doctor(location: CatalogLocation, paths: AgentPaths, *, check_only: bool, reread: bool,
               machine: str | None = None) -> DoctorReport:
    """Check the catalog at `location` against the files of `paths` and, unless `check_only`, repair it.

    A catalog that cannot be opened is moved aside and rebuilt (never with `check_only`, which raises
    the CatalogError instead, as it does for a catalog that is not a SQLite file or does not exist).
    """
    unreadable = None
    try:
        db = open_catalog(location, machine=machine)
    except (CatalogUnavailableError, CatalogNotWritableError):
        raise  # the catalog is fine, or cannot be told: never moved aside for a permission problem
    except CatalogError as exc:
        if check_only or location.sqlite_path is None or not location.sqlite_path.exists():
            raise
        unreadable = str(exc)
        refuse_while_watched(location, "repair the catalog")
        moved = _move_aside(location)
        db = open_catalog(location, machine=machine)
        unreadable += f" (moved aside to {moved})"
    try:
        report = diagnose(db, paths, reread=reread)
        report.catalog_unreadable = unreadable
        if not check_only and (report.needs_repair or unreadable):
            repair(db, report, paths)
            if unreadable:
                report.repaired.append("rebuilt the catalog from the session files")
        still_broken = not check_only and bool(report.integrity_errors) and bool(db.integrity_errors())
    finally:
        db.close()
    if still_broken and location.sqlite_path is not None:
        # Rebuilding the full-text indexes did not cure it: the catalog is derived data, built again.
        refuse_while_watched(location, "repair the catalog")
        moved = _move_aside(location)
        db = open_catalog(location, machine=machine)
        try:
            Indexer(db).index_paths(scan_files(Scope.of(root=paths.sessions_root)).keys())
        finally:
            db.close()
        report.repaired.append(f"rebuilt the catalog from the session files (the damaged one moved aside to {moved})")
    if not check_only:
        from sessdex.core.storage import sweep_stale_temporaries

        swept = sweep_stale_temporaries(paths.sessions_root)
        if swept:
            report.repaired.append(f"removed {len(swept)} temp file(s) left by interrupted rewrites")
    return report
