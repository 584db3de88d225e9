"""Whole usage reports kept ready as files beside the catalog (`<catalog>.reports/`), printed without reading a row.

`sessdex usage KIND --all --json` over 10,000 sessions is megabytes of text. Joining its stored row texts
(`sessdex.catalog.store.usage_stored`) still reads 10,000 rows; printing a file the watcher wrote earlier is one
`sendfile`. Its table (without --json) is kept the same way once a command has laid it out
(`usage-KIND-WIDTH[-bars].txt`: the watcher cannot, as the table's layout is the command line's). The files are
derived data like the catalog, and are used only while they are exactly what the catalog would answer:

- A file is named by a random token the renderer put in `catalog_meta` before reading the rows it renders
  (`new_usage_token`). Every change to a machine's report rows deletes that machine's token in the same
  transaction, by triggers on `usage_totals` (migration 0007_usage_report_tokens): whatever process writes, of
  whatever sessdex version (a `sessdex watch` started before an upgrade), a change makes every earlier file
  unusable in the same commit.
- A file begins with a header line naming the text's format, the machine and the sessions root it is the
  report of, what else it depends on (a table's layout version, Python's, the home folder shown as ~), and the
  body's length; a reader checks all of it (and that the file is a regular file of its own
  user that nobody else may write) before sending the body, so a report of another root, an older format or a
  cut file is never printed.
- Files are written whole under a temporary name, flushed to disk and renamed into place (never changed once
  there); a reader that finds no file of the current token answers from the rows. Stale files are removed by
  the next render (`sessdex.catalog.index.report_cache`).

The folder is 0700 and the files 0600, like everything sessdex creates.
"""

from __future__ import annotations

import os
import sys

TYPE_CHECKING = False  # typing stays off the hot commands' imports (issue 12)
if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping
    from typing import Any

    from sessdex.catalog.store.location import CatalogLocation

REPORTS_SUFFIX = ".reports"
TOKEN_KEY_PREFIX = "usage_reports_token:"
# The header's first words: bumped whenever the text of the reports (sessdex.core.usage_json) changes, so that
# files written by another version are not printed.
_HEADER_PREFIX = b"sessdex usage report 1 "
# Bumped whenever the table's layout changes (sessdex.catalog.cli.output.table_lines, catalog.tui.width, the
# columns and bars of sessdex.catalog.cli.usage_stored_table): kept tables of another layout are not printed.
TABLE_FORMAT = 1
_REGULAR_FILE = 0o100000
_FILE_TYPE_BITS = 0o170000


def reports_dir(location: CatalogLocation) -> str:
    """The folder of a catalog's ready reports (beside a SQLite catalog, or in the agent dir for a server's)."""
    return location.sidecar_file(REPORTS_SUFFIX)


def usage_report_name(kind: str) -> str:
    """The name of the ready file of `sessdex usage KIND --all --json`."""
    return f"usage-{kind}.json"


def table_context(kind: str, home: str) -> str:
    """What a kept table's text depends on beside its rows, width and bars: the layout's version, Python's (its
    Unicode tables measure the widths) and, for the project report, the home folder shown as ~."""
    return f"table {TABLE_FORMAT} python {sys.version_info[0]}.{sys.version_info[1]}" + (
        f" home {home}" if kind == "project" else "")


def usage_table_name(kind: str, width: int | None, bars: bool) -> str:
    """The name of the ready file of `sessdex usage KIND --all`'s table at `width` (None: not cut), with bars or not."""
    return f"usage-{kind}-{width or 0}{'-bars' if bars else ''}.txt"


def usage_token(db: Any, machine: str) -> str | None:
    """The token of `machine`'s current usage rows, or None when they changed since the last one was made."""
    value = db.scalar("meta_get", {"key": TOKEN_KEY_PREFIX + machine})
    return value if isinstance(value, str) and value else None


def new_usage_token(db: Any) -> str:
    """Give the catalog's own machine's usage rows a new token (in a write transaction of its own, before reading
    the rows a report is rendered from): it lasts until they change."""
    token = os.urandom(8).hex()
    key = TOKEN_KEY_PREFIX + db.machine
    with db.write():
        db.execute("meta_delete", {"key": key})
        db.execute("meta_insert", {"key": key, "value": token})
    return token


def report_header(machine: str, root_lo: str, context: str, body_size: int) -> bytes:
    """A report file's first line: the format, the machine and the sessions root (as `root_range` gives it) it
    reports on, what else its text depends on (`context`: a table's home folder, shown as ~), and the length of
    the body that follows."""
    return _HEADER_PREFIX + ascii((machine, root_lo, context, body_size)).encode() + b"\n"  # ascii: one line


def report_file_name(report: str, token: str) -> str:
    """The file of `report` (e.g. "usage-session.json") rendered at `token`."""
    return f"{report}.{token}"


class ReadyReport:
    """An open report file: its body (after the header) is `size` bytes from `offset`, printed as it is."""

    __slots__ = ("fd", "offset", "size")

    def __init__(self, fd: int, offset: int, size: int) -> None:
        self.fd, self.offset, self.size = fd, offset, size

    def read(self) -> bytes:
        """The whole body (for an output that is not a plain UTF-8 byte stream)."""
        chunks = []
        offset, end = self.offset, self.offset + self.size
        while offset < end:
            chunk = os.pread(self.fd, end - offset, offset)
            if not chunk:
                raise OSError(f"report file ended {end - offset} bytes early")
            chunks.append(chunk)
            offset += len(chunk)
        return b"".join(chunks)

    def send(self, out_fd: int) -> None:
        """Write the body to `out_fd`: by sendfile (the kernel copies, no 7 MB string is built), else read + write."""
        offset, end = self.offset, self.offset + self.size
        try:
            while offset < end:
                sent = os.sendfile(out_fd, self.fd, offset, end - offset)
                if sent == 0:
                    raise OSError(f"report file ended {end - offset} bytes early")
                offset += sent
            return
        except OSError as exc:
            if offset != self.offset or isinstance(exc, (BrokenPipeError, BlockingIOError)):
                raise
        body = memoryview(self.read())  # an output sendfile cannot write to (EINVAL, e.g. before Linux 2.6.33)
        while body:
            body = body[os.write(out_fd, body):]

    def close(self) -> None:
        os.close(self.fd)

    def __enter__(self) -> ReadyReport:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


def open_ready_report(db: Any, report: str, machine: str, root_lo: str, context: str = "",
                      token: str | None = None) -> ReadyReport | None:
    """The ready file of `report` for `machine`'s sessions under `root_lo` (and `context`) at the catalog's current
    token (or `token`, read already), open; None when there is none (never rendered, or the rows changed since)
    or it is not exactly what was written."""
    if token is None:
        token = usage_token(db, machine)
        if token is None:
            return None
    path = os.path.join(reports_dir(db.location), report_file_name(report, token))
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        status = os.fstat(fd)
        if status.st_mode & _FILE_TYPE_BITS == _REGULAR_FILE and status.st_uid == os.geteuid() \
                and not status.st_mode & 0o022:
            start = os.pread(fd, 4096, 0)
            end = start.find(b"\n") + 1
            body_size = status.st_size - end
            if end and start[:end] == report_header(machine, root_lo, context, body_size):
                return ReadyReport(fd, end, body_size)
    except OSError:
        pass
    os.close(fd)
    return None


def write_report_files(location: CatalogLocation, token: str, machine: str, root_lo: str,
                       bodies: Mapping[str, bytes], context: str = "") -> None:
    """Write each report's file for `token` (0600, in a 0700 folder): whole, on disk, under a temporary name first."""
    from sessdex.core.private_files import PRIVATE_FILE_MODE, make_private_dirs  # writers only: off the read path

    folder = reports_dir(location)
    make_private_dirs(folder)
    for report, body in bodies.items():
        path = os.path.join(folder, report_file_name(report, token))
        temporary = f"{path}.{os.getpid()}.tmp"
        try:
            os.unlink(temporary)  # a leftover of this pid's earlier run: created anew below (O_EXCL)
        except FileNotFoundError:
            pass
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
                     PRIVATE_FILE_MODE)
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(report_header(machine, root_lo, context, len(body)))
                handle.write(body)
                handle.flush()
                os.fsync(handle.fileno())  # a crash never leaves a named file holding less than its header says
            os.replace(temporary, path)
        except BaseException:
            try:
                os.unlink(temporary)
            except FileNotFoundError:
                pass
            raise


def report_files_present(db: Any, token: str, reports: Iterable[str], machine: str, root_lo: str) -> bool:
    """Whether every one of `reports` has its file for `token`, as a reader would take it (`open_ready_report`: a
    file of an older format or another root is not)."""
    for report in reports:
        ready = open_ready_report(db, report, machine, root_lo, "", token)
        if ready is None:
            return False
        ready.close()
    return True


def remove_report_files(location: CatalogLocation, *, keep_token: str | None = None) -> list[str]:
    """Remove the report files (and leftover temporary files) of every token but `keep_token`; the paths removed.

    Only names this module writes are touched: anything else a user put in the folder stays.
    """
    folder = reports_dir(location)
    try:
        names = os.listdir(folder)
    except OSError:
        return []
    removed = []
    for name in names:
        if not _is_report_file_name(name):
            continue
        if keep_token is not None and name.split(".")[2] == keep_token:
            continue  # (its files, and those being written for it)
        path = os.path.join(folder, name)
        try:
            os.unlink(path)
        except OSError:
            continue
        removed.append(path)
    return removed


def _is_report_file_name(name: str) -> bool:
    """`usage-REPORT.json.TOKEN` or `usage-REPORT.txt.TOKEN`, or either followed by `.PID.tmp` (a write cut
    short)."""
    if not name.startswith("usage-"):
        return False
    parts = name.split(".")
    if len(parts) == 5 and parts[4] == "tmp" and parts[3].isdigit():
        parts = parts[:3]
    return len(parts) == 3 and parts[1] in ("json", "txt") and len(parts[2]) == 16 and all(
        char in "0123456789abcdef" for char in parts[2])
