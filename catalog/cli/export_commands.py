"""`sessdex export SESSION` (HTML, Markdown or JSON, secrets redacted) and `sessdex secrets` (where secrets are)."""

from __future__ import annotations

import argparse
import contextlib
import os
import stat
import sys
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from sessdex.catalog.cli.output import echo, echo_json
from sessdex.core.errors import UsageError

if TYPE_CHECKING:
    from sessdex.catalog.store.settings import Settings

FORMATS = ("html", "md", "json")


def add_export_arguments(parser: argparse.ArgumentParser) -> None:
    parser.description = ("Export the session SESSION (an id prefix or a file) as one self-contained HTML page, "
                          "Markdown or JSON. Detected secrets are replaced by [REDACTED:<kind>] unless --no-redact.")
    parser.add_argument("value", metavar="SESSION", help="An id prefix or a session file.")
    parser.add_argument("--format", choices=FORMATS, default=None,
                        help="Output format (default: from the -o file's suffix, else html).")
    parser.add_argument("-o", "--output", metavar="FILE", default=None,
                        help="Write to FILE (created 0600; an existing file only with --force); '-' for stdout.")
    parser.add_argument("--force", action="store_true", help="Replace an existing output FILE.")
    parser.add_argument("--leaf", metavar="ID", default=None, help="Show the branch ending at entry ID (id prefix).")
    parser.add_argument("--all-branches", action="store_true", help="Show every branch of the session tree.")
    parser.add_argument("--no-redact", dest="redact", action="store_false",
                        help="Keep detected secrets in the output (a warning is printed).")


def _format_for(args: argparse.Namespace) -> str:
    if args.format:
        return str(args.format)
    suffix = os.path.splitext(args.output or "")[1].lower()
    return {".md": "md", ".markdown": "md", ".json": "json"}.get(suffix, "html")


def write_output(target: str, chunks: Iterable[bytes], *, force: bool) -> None:
    """Write `chunks` to `target` as a new 0600 file; an existing file is replaced only with `force`, and only if it
    is a regular file of yours (a symlink is never followed).

    The chunks go to a temporary file beside the target, which takes the target's name only once it is whole: an
    export that fails half-way (a full disk, Ctrl+C) leaves no half-written file and the old one untouched.
    """
    folder = os.path.dirname(os.path.abspath(target))
    _check_replaceable(target, force)
    try:
        fd, temporary = tempfile.mkstemp(prefix=".sessdex-export-", dir=folder)
    except OSError as exc:
        raise UsageError(f"cannot write {target}: {exc.strerror or exc}") from exc
    try:
        with os.fdopen(fd, "wb") as handle:
            for chunk in chunks:
                handle.write(chunk)
            handle.flush()
            os.fsync(handle.fileno())
        if force:
            _check_replaceable(target, force)
            os.replace(temporary, target)
        else:
            os.link(temporary, target)  # fails if the name was taken meanwhile: nothing is overwritten
            os.unlink(temporary)
    except FileExistsError as exc:
        os.unlink(temporary)
        raise UsageError(f"{target} exists; pass --force to replace it") from exc
    except BaseException as exc:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        if isinstance(exc, OSError):
            raise UsageError(f"cannot write {target}: {exc.strerror or exc}") from exc
        raise


def _check_replaceable(target: str, force: bool) -> None:
    try:
        info = os.lstat(target)
    except FileNotFoundError:
        return
    except OSError as exc:
        raise UsageError(f"cannot write {target}: {exc.strerror or exc}") from exc
    if not force:
        raise UsageError(f"{target} exists; pass --force to replace it")
    if not stat.S_ISREG(info.st_mode) or info.st_uid != os.getuid():
        raise UsageError(f"{target} is not a regular file of yours; refusing to write it")


def run_export(args: argparse.Namespace, settings: Settings) -> int:
    from sessdex.catalog.cli.manage_commands import find_session
    from sessdex.catalog.export.html import OUTPUT_LIMIT, iter_html_page
    from sessdex.catalog.export.markdown import iter_transcript_json, iter_transcript_markdown
    from sessdex.catalog.export.transcript import load_transcript
    from sessdex.core.resume import is_path_like
    from sessdex.core.runtime import SessionRuntime

    # A path is read by the export itself (which checks that it is a session file) in one streaming pass.
    path = Path(os.path.abspath(os.path.expanduser(args.value))) if is_path_like(args.value) else \
        find_session(settings, args.value).path
    if not args.redact:
        echo("sessdex: warning: --no-redact: the export keeps any secret the session holds", err=True)
    kind = _format_for(args)
    try:
        # HTML and Markdown show only the head of a long tool output: it is cut (and redacted) as it is read.
        transcript = load_transcript(path, SessionRuntime(paths=settings.paths), leaf_id=args.leaf,
                                     all_branches=args.all_branches, redact_secrets=args.redact,
                                     cut_outputs=None if kind == "json" else OUTPUT_LIMIT)
    except (ValueError, LookupError) as exc:
        raise UsageError(str(exc)) from exc
    chunks: Iterable[bytes]
    if kind == "json":
        chunks = iter_transcript_json(transcript)
    elif kind == "md":
        chunks = (text.encode("utf-8", "replace") for text in iter_transcript_markdown(transcript))
    else:
        chunks = (text.encode("utf-8", "replace") for text in iter_html_page(transcript))
    if args.output in (None, "-"):
        sys.stdout.flush()
        for chunk in chunks:
            sys.stdout.buffer.write(chunk)
        sys.stdout.buffer.flush()
    else:
        write_output(args.output, chunks, force=args.force)
    return 0


def add_secrets_arguments(parser: argparse.ArgumentParser) -> None:
    parser.description = ("List which sessions hold which kinds of secret and where (entry id, field); the secrets "
                          "themselves are never printed.")
    parser.add_argument("value", metavar="SESSION", nargs="?", default=None, help="An id prefix or a session file.")
    parser.add_argument("--all", action="store_true", help="Scan every session on this machine.")
    parser.add_argument("--json", dest="as_json", action="store_true", help="Print the findings as JSON.")


def run_secrets(args: argparse.Namespace, settings: Settings) -> int:
    from sessdex.catalog.cli.manage_commands import find_session
    from sessdex.catalog.export.scan import scan_session_file
    from sessdex.core.discovery import list_all_sessions

    if args.all == (args.value is not None):
        raise UsageError("name one SESSION or pass --all")
    paths = [info.path for info in list_all_sessions(paths=settings.paths)] if args.all else \
        [find_session(settings, args.value).path]
    findings = []
    unreadable = 0
    for path in paths:
        found = scan_session_file(path)
        if found is None:
            unreadable += 1
            continue
        findings.extend(found)
    if args.as_json:
        echo_json({"findings": [item.as_json() for item in findings], "scanned": len(paths),
                   "unreadable": unreadable})
    else:
        for item in findings:
            echo(f"{item.path}\t{item.entry_id}\t{item.field}\t{item.kind}")
        echo(f"{len(findings)} secret(s) in {len({item.path for item in findings})} of {len(paths)} session(s)"
             + (f"; {unreadable} unreadable" if unreadable else ""), err=True)
    return 1 if findings else 0
