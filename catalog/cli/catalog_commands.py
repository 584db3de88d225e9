"""`sessdex index | watch | doctor`: build, watch and repair the catalog.

The catalog is `<agent dir>/catalog.db` unless `--catalog` / `$SESSDEX_CATALOG` names another file or a
SQLAlchemy URL. It is derived data: every command here may rebuild or repair it, none ever writes to
a session file.
"""

from __future__ import annotations

import argparse
import os
import sys
import threading
import time
from typing import TYPE_CHECKING

from sessdex.catalog.cli.output import echo, echo_json
from sessdex.catalog.cli.progress import ProgressBar
from sessdex.catalog.index.content_index import ContentProgress, content_backlog, fill_content_index
from sessdex.catalog.index.marks_index import index_marks
from sessdex.catalog.index.reconcile import Scope, catalog_files, diff, index_files, index_lock, scan_files
from sessdex.catalog.index.watcher import refuse_while_watched
from sessdex.catalog.store.db import open_catalog, remove_catalog_files
from sessdex.catalog.store.settings import Settings
from sessdex.catalog.tui.terminal_text import terminal_text

if TYPE_CHECKING:
    from sessdex.catalog.index.doctor import DoctorReport
    from sessdex.catalog.store.db import CatalogDatabase


# -- index ----------------------------------------------------------------------------------------------

def index_changes(db: CatalogDatabase, scope: Scope, *, show_progress: bool) -> tuple[int, int, int, int]:
    """Index what changed in `scope` with a progress bar (by bytes); return (files, bytes, vanished, failed)."""
    on_disk = scan_files(scope)
    changed, vanished = diff(on_disk, catalog_files(db, scope))
    sizes = {path: key[2] for path in changed if (key := on_disk[path]) is not None}
    total = sum(sizes.values())
    with index_lock(db.location), ProgressBar(total, "Indexing", hidden=not show_progress) as bar:
        failures = index_files(db, [*sorted(changed), *vanished], retry_among=on_disk, defer_text=True,
                               progress=lambda path, _outcome: bar.update(sizes.get(path, 0)))
    return len(changed), total, len(vanished), len(failures)


def fill_content(db: CatalogDatabase, *, show_progress: bool) -> None:
    """Complete the content (message text, usage facts) a first index by a read command left for later, with a
    progress bar (a bar per backlog: see catalog.index.content_index)."""
    while (backlog := content_backlog(db)) is not None:
        unit = backlog.unit
        label = "Indexing message text and usage" if unit == "sessions" else "Indexing message text"
        with ProgressBar(backlog.total, label, hidden=not show_progress) as bar:
            bar.update(backlog.done)

            def advance(progress: ContentProgress, bar: ProgressBar = bar, unit: str = unit) -> None:
                if progress.unit == unit:
                    bar.update(progress.done - bar.pos)

            fill_content_index(db, progress=advance)


def _add_content_options(parser: argparse.ArgumentParser) -> None:
    """--no-content / --content: whether this machine's rows carry message text (remembered in the catalog)."""
    parser.add_argument("--no-content", dest="content", action="store_false", default=None,
                        help="Index metadata only (titles, first messages, counts, usage): no conversation "
                             "text in the catalog (remembered for this machine; text stored before is deleted).")
    parser.add_argument("--content", dest="content", action="store_true", default=None,
                        help="Index message text again after --no-content.")
    parser.add_argument("--redact", action="store_true", default=None,
                        help="Keep detected secrets out of the catalog's text (replaced by [REDACTED:<kind>]); the "
                             "session files are unchanged. Remembered in the catalog: later index and watch runs "
                             "redact without the flag. Also on with SESSDEX_REDACT=1. Text indexed before stays "
                             "until --rebuild.")
    parser.add_argument("--no-redact", dest="redact", action="store_false",
                        help="Forget a remembered --redact: text indexed from now on is stored as it is.")


def _apply_redaction(args: argparse.Namespace, settings: Settings) -> None:
    """--redact / --no-redact are remembered in the catalog (the indexer reads it there, see
    sessdex.catalog.index.indexer.redaction_remembered); --redact also reaches the file reader (and any process
    this one starts) through the environment at once."""
    if args.redact is None:
        return
    from sessdex.catalog.index.file_reader import REDACT_VARIABLE
    from sessdex.catalog.index.indexer import remember_redaction

    db = open_catalog(settings.location(), machine=settings.machine_name)
    try:
        remember_redaction(db, args.redact)
    finally:
        db.close()
    if args.redact:
        os.environ[REDACT_VARIABLE] = "1"
    else:
        os.environ.pop(REDACT_VARIABLE, None)


def open_machine_catalog(settings: Settings, content: bool | None) -> CatalogDatabase:
    """The catalog for writing this machine's rows: its name stored in the agent dir, its record (and the
    --content choice) in the catalog."""
    from sessdex.catalog.index.machines import register_machine
    from sessdex.catalog.store.machine import remember_machine

    remember_machine(settings.paths.agent_dir, settings.machine_name)
    db = open_catalog(settings.location(), machine=settings.machine_name)
    try:
        register_machine(db, os.path.abspath(settings.paths.sessions_root), content=content,
                         home=os.path.abspath(settings.paths.home))
    except BaseException:
        db.close()
        raise
    return db


def add_index_arguments(parser: argparse.ArgumentParser) -> None:
    parser.description = "Bring the catalog up to date with the session files (only what changed, unless --rebuild)."
    parser.add_argument("--rebuild", action="store_true",
                        help="Delete the catalog (on a server: this machine's rows) and index every session file again.")
    _add_content_options(parser)


def _require_agent_dir(settings: Settings) -> None:
    """Refuse with one line when the agent dir does not exist: sessdex never creates the agent's own folder
    (a mistyped --agent-dir would otherwise become an empty agent dir with a catalog in it)."""
    from sessdex.core.errors import UsageError

    agent_dir = os.fspath(settings.paths.agent_dir)
    if not os.path.isdir(agent_dir):
        raise UsageError(f"the agent dir {agent_dir} does not exist; sessdex does not create it (nothing to index)")


def run_index(args: argparse.Namespace, settings: Settings) -> int:
    _require_agent_dir(settings)
    paths, location = settings.paths, settings.location()
    rebuild, content = args.rebuild, args.content
    if rebuild:
        refuse_while_watched(location, "rebuild the catalog")
        if location.sqlite_path is not None:
            remove_catalog_files(location)
    _apply_redaction(args, settings)  # (after a rebuild's removal, which would forget it)
    started = time.perf_counter()
    files, size, vanished, failed, total_files, machine = _index_once(
        settings, content, Scope.of(root=paths.sessions_root), rebuild=rebuild)
    from sessdex.core.storage import sweep_stale_temporaries

    swept = sweep_stale_temporaries(paths.sessions_root)  # left by rewrites that were killed
    if swept:
        echo(f"sessdex: removed {len(swept)} temp file(s) left by interrupted rewrites", err=True)
    skipped = f" {failed} file(s) could not be read and were skipped (see `sessdex doctor`)." if failed else ""
    echo(f"Indexed {files} file(s) ({size / 1e6:.1f} MB), dropped {vanished} vanished, in "
         f"{time.perf_counter() - started:.1f} s; the catalog {location.display} holds {total_files} file(s) "
         f"of machine {machine}.{skipped}", err=True)
    return 0


def _index_once(settings: Settings, content: bool | None, scope: Scope, *, rebuild: bool,
                attempts: int = 2) -> tuple[int, int, int, int, int, str]:
    """index_changes on the catalog, and once more when its -wal file was deleted meanwhile (what the run
    wrote there was lost): (files, bytes, vanished, failed, this machine's files in the catalog, machine)."""
    location = settings.location()
    db = open_machine_catalog(settings, content)
    try:
        if rebuild and location.sqlite_path is None:
            from sessdex.catalog.index.usage_writer import forget_machine_usage

            with db.write():
                db.execute("delete_machine_files")
                forget_machine_usage(db)
        writer = db.sqlite_writer()  # opened now (SQLite makes the -wal file), so the file can be watched
        if writer is not None:
            writer.execute("SELECT 1 FROM session_files LIMIT 1").fetchall()
        wal = location.wal_identity()
        files, size, vanished, failed = index_changes(db, scope, show_progress=sys.stderr.isatty())
        fill_content(db, show_progress=sys.stderr.isatty())
        index_marks(db, settings.paths, force=rebuild)
        total_files = db.scalar("count_machine_files")
        pulled_away = wal is not None and location.wal_identity() != wal
    finally:
        db.close()
    if pulled_away and attempts > 1:
        echo("sessdex: the catalog's WAL file was removed while indexing; indexing again", err=True)
        again = _index_once(settings, content, scope, rebuild=False, attempts=attempts - 1)
        return files + again[0], size + again[1], vanished + again[2], again[3], again[4], again[5]
    return files, size, vanished, failed, total_files, db.machine


# -- watch -----------------------------------------------------------------------------------------------

class _TerminalSafeLog:
    """The watcher's log (stderr), its lines made terminal-safe like every other output (file names are untrusted)."""

    def write(self, text: str) -> None:
        sys.stderr.write(terminal_text(text, keep_newlines=True))

    def flush(self) -> None:
        sys.stderr.flush()


def add_watch_arguments(parser: argparse.ArgumentParser) -> None:
    parser.description = """\
Keep the catalog current as sessions change, until Ctrl+C or SIGTERM.

While it runs, read commands trust the catalog and skip their own freshness check."""
    parser.add_argument("--poll", action="store_true", help="Poll the files every second instead of using inotify.")
    _add_content_options(parser)


def run_watch(args: argparse.Namespace, settings: Settings) -> int:
    _require_agent_dir(settings)
    _apply_redaction(args, settings)
    from sessdex.catalog.index.watcher import Watcher, _native_observer, _polling_observer, stop_on_signals
    from sessdex.catalog.store.machine import remember_machine

    paths, location = settings.paths, settings.location()
    machine = settings.machine_name
    remember_machine(paths.agent_dir, machine)
    watcher = Watcher(paths.sessions_root, location, log=_TerminalSafeLog(),
                      observer_factory=_polling_observer if args.poll else _native_observer, machine=machine,
                      content=args.content, home=os.path.abspath(paths.home))
    stop = threading.Event()
    with stop_on_signals(stop):
        stats = watcher.run(stop)
    echo(f"sessdex watch: stopped after {stats.batches} batch(es), {stats.files_indexed} file update(s).",
         err=True)
    return 0


# -- doctor ----------------------------------------------------------------------------------------------

def _print_report(report: DoctorReport, check_only: bool) -> None:
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
    if report.unindexable:
        echo(f"files sessdex cannot read (skipped): {len(report.unindexable)}")
        for path, reason in report.unindexable.items():
            echo(f"  {path}: {reason}")
    if report.repaired:
        echo("repaired: " + "; ".join(report.repaired))
    elif report.needs_repair and check_only:
        echo("the catalog needs repair: run `sessdex doctor` (session files are never modified)")
    else:
        echo("the catalog is consistent with the session files")


def add_doctor_arguments(parser: argparse.ArgumentParser) -> None:
    parser.description = """\
Check the catalog against the session files and repair it (never the files).

Reports files the catalog lacks, has stale or misreads, rows of vanished files, damaged session
files (no valid header, unparseable lines) and catalog corruption. An unreadable catalog is moved
aside and rebuilt."""
    parser.add_argument("--check", dest="check_only", action="store_true",
                        help="Only report; exit 1 when the catalog needs repair.")
    parser.add_argument("--quick", action="store_true", help="Compare stat only; do not re-read every file.")
    parser.add_argument("--json", dest="as_json", action="store_true", help="Print the report as JSON.")


def run_doctor(args: argparse.Namespace, settings: Settings) -> int:
    from sessdex.catalog.index import doctor

    _require_agent_dir(settings)
    report = doctor.run_doctor(settings.location(), settings.paths, check_only=args.check_only,
                               reread=not args.quick, machine=settings.machine_name)
    if args.as_json:
        echo_json(report.to_json())
    else:
        _print_report(report, args.check_only)
    return 1 if args.check_only and report.needs_repair else 0

