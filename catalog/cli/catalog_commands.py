"""`sessdex index | watch | search | doctor`: build, watch, search and repair the catalog (S17).

The catalog is `<agent dir>/catalog.db` unless `--catalog` / `$SESSDEX_CATALOG` names another file or a
SQLAlchemy URL. It is derived data: every command here may rebuild or repair it, none ever writes to
a session file.
"""

from __future__ import annotations

import json
import os
import sqlite3
import sys
import threading
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import click

from sessdex.catalog.index.indexer import Indexer, read_fold, storable_text
from sessdex.catalog.index.reconcile import Scope, catalog_files, diff, root_range, scan_files
from sessdex.catalog.queries.sessions import Catalog, SearchHit
from sessdex.catalog.store import fts
from sessdex.catalog.store.db import CatalogDatabase, SqliteCatalog, open_catalog, remove_catalog_files
from sessdex.catalog.store.location import CatalogLocation, exclusive_lock, resolve_location
from sessdex.core.discovery import sanitize_display_name, time_ago
from sessdex.core.errors import CatalogError, UsageError
from sessdex.core.paths import AgentPaths
from sessdex.core.summary import SessionSummary

BOLD, NORMAL = "\x1b[1m", "\x1b[22m"


def _agent_paths(ctx: click.Context) -> AgentPaths:
    return AgentPaths.from_env((ctx.find_root().obj or {}).get("agent_dir"))


def _location(ctx: click.Context, paths: AgentPaths) -> CatalogLocation:
    return resolve_location(paths.agent_dir, (ctx.find_root().obj or {}).get("catalog"))


def _iso(moment: datetime) -> str:
    moment = moment.astimezone(UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def _refuse_while_watched(location: CatalogLocation, action: str) -> None:
    try:
        with exclusive_lock(location.sidecar(".watch.lock"), blocking=False):
            return
    except BlockingIOError:
        raise CatalogError(f"`sessdex watch` is running on {location.display}; stop it before you {action}") from None


# -- index ----------------------------------------------------------------------------------------------

def index_changes(db: CatalogDatabase, scope: Scope, *, show_progress: bool) -> tuple[int, int, int]:
    """Index what changed in `scope` with a progress bar (by bytes); return (files, bytes, vanished)."""
    on_disk = scan_files(scope)
    changed, vanished = diff(on_disk, catalog_files(db, scope))
    sizes = {path: key[2] for path in changed if (key := on_disk[path]) is not None}
    total = sum(sizes.values())
    indexer = Indexer(db)
    with click.progressbar(length=max(total, 1), label="Indexing", file=sys.stderr, show_eta=True,
                           show_percent=True, width=30, hidden=not show_progress) as bar:
        indexer.index_paths([*sorted(changed), *vanished], progress=lambda path, _outcome: bar.update(sizes.get(path, 0)))
    return len(changed), total, len(vanished)


@click.command("index")
@click.option("--rebuild", is_flag=True, help="Delete the catalog and index every session file again.")
@click.pass_context
def index_command(ctx: click.Context, rebuild: bool) -> None:
    """Bring the catalog up to date with the session files (only what changed, unless --rebuild)."""
    paths = _agent_paths(ctx)
    location = _location(ctx, paths)
    if rebuild:
        _refuse_while_watched(location, "rebuild the catalog")
        remove_catalog_files(location)
    started = time.perf_counter()
    db = open_catalog(location)
    try:
        files, size, vanished = index_changes(db, Scope.of(root=paths.sessions_root), show_progress=sys.stderr.isatty())
        total_files = db.scalar("count_files")
    finally:
        db.close()
    click.echo(f"Indexed {files} file(s) ({size / 1e6:.1f} MB), dropped {vanished} vanished, in "
               f"{time.perf_counter() - started:.1f} s; the catalog {location.display} holds {total_files} file(s).",
               err=True)


# -- watch -----------------------------------------------------------------------------------------------

@click.command("watch")
@click.option("--poll", is_flag=True, help="Poll the files every second instead of using inotify.")
@click.pass_context
def watch_command(ctx: click.Context, poll: bool) -> None:
    """Keep the catalog current as sessions change, until Ctrl+C or SIGTERM.

    While it runs, read commands trust the catalog and skip their own freshness check.
    """
    from sessdex.catalog.index.watcher import Watcher, _native_observer, _polling_observer, stop_on_signals

    paths = _agent_paths(ctx)
    location = _location(ctx, paths)
    watcher = Watcher(paths.sessions_root, location,
                      observer_factory=_polling_observer if poll else _native_observer)
    stop = threading.Event()
    with stop_on_signals(stop):
        stats = watcher.run(stop)
    click.echo(f"sessdex watch: stopped after {stats.batches} batch(es), {stats.files_indexed} file update(s).",
               err=True)


# -- search ----------------------------------------------------------------------------------------------

def hit_json(hit: SearchHit) -> dict[str, Any]:
    """A search hit for `--json`: the session's fields plus where it matched and the snippet."""
    info = hit.session
    return {"id": info.id, "path": str(info.path), "cwd": info.cwd, "title": info.title,
            "firstMessage": info.first_message, "messageCount": info.message_count,
            "modified": _iso(info.modified), "field": hit.field, "snippet": hit.snippet}


def _one_line(text: str) -> str:
    return " ".join(text.split())


@click.command("search")
@click.argument("words", nargs=-1, required=True)
@click.option("--all", "all_projects", is_flag=True, help="Search every project, not only this one.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON (matches marked with [ and ]).")
@click.option("-n", "--limit", type=click.IntRange(min=1), default=20, show_default=True, help="At most this many sessions.")
@click.option("--session-dir", type=click.Path(file_okay=False, path_type=Path),
              help="Search this session folder instead of the project's folders.")
@click.pass_context
def search_command(ctx: click.Context, words: tuple[str, ...], all_projects: bool, as_json: bool, limit: int,
                   session_dir: Path | None) -> None:
    """Sessions whose title, first message or any message matches WORDS (every word, as a prefix).

    The words are taken literally: quotes, parentheses, AND/OR/NEAR and * have no special meaning.
    """
    if all_projects and session_dir is not None:
        raise UsageError("--all and --session-dir cannot be combined")
    paths = _agent_paths(ctx)
    styled = not as_json and sys.stdout.isatty()
    highlight = (BOLD, NORMAL) if styled else ("[", "]")
    with Catalog.open(paths, (ctx.find_root().obj or {}).get("catalog")) as catalog:
        hits = catalog.search(" ".join(words), None if all_projects else os.getcwd(), session_dir, limit=limit,
                              highlight=highlight)
        if as_json:
            click.echo(json.dumps([hit_json(hit) for hit in hits], ensure_ascii=False, indent=2))
            return
        if not hits:
            click.echo("No matching sessions", err=True)
            return
        now_ms = time.time() * 1000
        for hit in hits:
            info = hit.session
            label = sanitize_display_name(info.title or info.first_message)
            ago = time_ago(info.modified.timestamp() * 1000, now_ms)
            click.echo(f"{info.id}  {ago}  {label}  ({info.cwd})")
            click.echo(f"    {hit.field}: {_one_line(hit.snippet)}")


# -- doctor ----------------------------------------------------------------------------------------------

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
    files: int = 0
    repaired: list[str] = field(default_factory=list)

    @property
    def needs_repair(self) -> bool:
        return bool(self.catalog_unreadable or self.integrity_errors or self.missing or self.stale
                    or self.orphaned or self.misread)


def _integrity_errors(db: CatalogDatabase) -> list[str]:
    if not isinstance(db, SqliteCatalog):
        return []
    errors = []
    connection = db.writer_connection()
    result = [row[0] for row in connection.execute("PRAGMA quick_check")]
    if result != ["ok"]:
        errors += [f"sqlite: {line}" for line in result]
    for table in fts.FTS_TABLES:
        try:
            connection.execute(fts.integrity_check(table))
        except sqlite3.DatabaseError as exc:
            errors.append(f"{table}: {exc}")
    return errors


def _row_disagrees(db: CatalogDatabase, row: Any) -> bool:
    """Re-read the file exactly as the indexer would and compare with what the catalog holds for it."""
    counts = [0]

    def count(texts: list[str], _pending: bool) -> None:
        counts[0] += len(texts)

    with open(row["path"], "rb") as handle:
        result = read_fold(handle, 0, row["size"], SessionSummary(), 0, count)
    visible = result.visible
    expected = (visible.header_valid, storable_text(visible.session_id), visible.message_count,
                storable_text(visible.title), storable_text(visible.first_message),
                result.committed_bad + result.pending_bad, result.committed_offset, counts[0])
    stored = (bool(row["header_valid"]), row["session_id"], row["message_count"], row["title"], row["first_message"],
              row["unparseable_lines"] + row["pending_unparseable"], row["indexed_offset"],
              len(db.fetchall("message_texts", {"file_id": row["id"]})))
    return expected != stored


def diagnose(db: CatalogDatabase, paths: AgentPaths, *, reread: bool) -> DoctorReport:
    """Compare the catalog with the files below the sessions root (and, with `reread`, with their content)."""
    report = DoctorReport(db.location.display, integrity_errors=_integrity_errors(db))
    scope = Scope.of(root=paths.sessions_root)
    on_disk = scan_files(scope)
    in_catalog = catalog_files(db, scope)
    report.files = len(on_disk)
    changed, report.orphaned = diff(on_disk, in_catalog)
    report.missing = [path for path in changed if path not in in_catalog]
    report.stale = [path for path in changed if path in in_catalog]
    for stats_row in db.fetchall("stats_under_root", root_range(os.path.abspath(paths.sessions_root))):
        path = stats_row["path"]
        if path in changed or path not in on_disk:
            continue
        row = db.fetchall("file_by_path", {"path": path})[0]
        if not os.access(path, os.R_OK):
            report.unreadable.append(path)
            continue
        if not row["header_valid"]:
            report.no_header.append(path)
        bad = row["unparseable_lines"] + row["pending_unparseable"]
        if bad:
            report.damaged[path] = bad
        if reread and _row_disagrees(db, row):
            report.misread.append(path)
    return report


def repair(db: CatalogDatabase, report: DoctorReport) -> None:
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
    if report.integrity_errors and isinstance(db, SqliteCatalog):
        connection = db.writer_connection()
        for table in fts.FTS_TABLES:
            connection.execute(fts.rebuild(table))
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


def _print_report(report: DoctorReport, check_only: bool) -> None:
    echo = lambda text="": click.echo(text)  # noqa: E731
    echo(f"catalog: {report.catalog}")
    echo(f"session files: {report.files}")
    if report.catalog_unreadable:
        echo(f"catalog unreadable: {report.catalog_unreadable}")
    for error in report.integrity_errors:
        echo(f"catalog integrity: {error}")
    for label, items in (("not in the catalog", report.missing), ("changed since indexed", report.stale),
                         ("in the catalog but gone", report.orphaned), ("misread by the catalog", report.misread)):
        echo(f"{label}: {len(items)}")
        for path in items[:20]:
            echo(f"  {path}")
        if len(items) > 20:
            echo(f"  ... and {len(items) - 20} more")
    echo(f"files without a valid session header (listed nowhere): {len(report.no_header)}")
    for path in report.no_header:
        echo(f"  {path}")
    echo(f"files with unparseable lines (skipped): {len(report.damaged)}")
    for path, count in report.damaged.items():
        echo(f"  {path}: {count} line(s)")
    if report.unreadable:
        echo(f"unreadable files: {len(report.unreadable)}")
        for path in report.unreadable:
            echo(f"  {path}")
    if report.repaired:
        echo("repaired: " + "; ".join(report.repaired))
    elif report.needs_repair and check_only:
        echo("the catalog needs repair: run `sessdex doctor` (session files are never modified)")
    else:
        echo("the catalog is consistent with the session files")


@click.command("doctor")
@click.option("--check", "check_only", is_flag=True, help="Only report; exit 1 when the catalog needs repair.")
@click.option("--quick", is_flag=True, help="Compare stat only; do not re-read every file.")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@click.pass_context
def doctor_command(ctx: click.Context, check_only: bool, quick: bool, as_json: bool) -> None:
    """Check the catalog against the session files and repair it (never the files).

    Reports files the catalog lacks, has stale or misreads, rows of vanished files, damaged session
    files (no valid header, unparseable lines) and catalog corruption. An unreadable catalog is moved
    aside and rebuilt.
    """
    paths = _agent_paths(ctx)
    location = _location(ctx, paths)
    db: CatalogDatabase | None = None
    unreadable = None
    try:
        db = open_catalog(location)
    except CatalogError as exc:
        if check_only or location.sqlite_path is None or not location.sqlite_path.exists():
            raise
        unreadable = str(exc)
        _refuse_while_watched(location, "repair the catalog")
        moved = _move_aside(location)
        db = open_catalog(location)
        unreadable += f" (moved aside to {moved})"
    try:
        report = diagnose(db, paths, reread=not quick)
        report.catalog_unreadable = unreadable
        if not check_only and (report.needs_repair or unreadable):
            repair(db, report)
            if unreadable:
                report.repaired.append("rebuilt the catalog from the session files")
    finally:
        db.close()
    if as_json:
        payload = {**report.__dict__, "needs_repair": report.needs_repair}
        click.echo(json.dumps(payload, ensure_ascii=False, indent=2))
    else:
        _print_report(report, check_only)
    if check_only and report.needs_repair:
        ctx.exit(1)

