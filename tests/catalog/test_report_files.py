"""The ready usage report files (`<catalog>.reports/`): printed only while they are what the catalog answers.

`sessdex index` and `sessdex watch` render every `sessdex usage KIND --all --json` as a file named by the token
of the usage rows it was read from; a command prints that file instead of joining 10,000 rows. These tests run
real processes on a generated corpus and compare what they print with the report joined from the rows (no
file) and with the files summed independently (`test_usage.expected_report`).
"""

from __future__ import annotations

import ast
import json
import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from sessdex.catalog.store.location import resolve_location
from sessdex.catalog.store.report_files import (
    TOKEN_KEY_PREFIX,
    ReadyReport,
    remove_report_files,
    report_file_name,
    report_header,
    reports_dir,
)
from tests.catalog.test_usage import (  # noqa: F401  (agent and local_zone: the fixtures)
    KINDS,
    ZONE,
    Agent,
    _append,
    _assistant,
    _wait_until,
    agent,
    assert_report_matches,
    counted_files,
    expected_report,
    local_zone,
    running_watch,
)
from tests.cli_support import run_cli


@pytest.fixture
def corpus(request: pytest.FixtureRequest) -> Agent:
    """test_usage's generated agent dir (its `agent` fixture, in its time zone), run from its project folder."""
    made: Agent = request.getfixturevalue("agent")
    return made


def _token(corpus: Agent) -> str | None:
    import sqlite3

    connection = sqlite3.connect(corpus.catalog)
    try:
        rows = connection.execute("SELECT value FROM catalog_meta WHERE key LIKE ?", (TOKEN_KEY_PREFIX + "%",))
        values = [value for value, in rows]
    finally:
        connection.close()
    assert len(values) <= 1, values  # one machine
    return values[0] if values else None


def _reports_dir(corpus: Agent) -> Path:
    return Path(reports_dir(resolve_location(corpus.agent, str(corpus.catalog))))


def _report_file(corpus: Agent, kind: str) -> Path:
    token = _token(corpus)
    assert token is not None
    return _reports_dir(corpus) / report_file_name(f"usage-{kind}.json", token)


def _usage(corpus: Agent, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[bytes]:
    """`sessdex usage ARGS` in a real process, its output a pipe (the way a ready file is sent)."""
    return subprocess.run([sys.executable, "-m", "sessdex.catalog", *corpus.cli("usage", *args)], cwd=corpus.project,
                          env={**os.environ, "TZ": ZONE, **(env or {})}, capture_output=True, timeout=60)


def _joined(corpus: Agent, kind: str) -> bytes:
    """The report joined from the rows: what a command prints when no ready file answers."""
    saved = {path: path.read_bytes() for path in _reports_dir(corpus).iterdir()}
    for path in saved:
        path.unlink()
    try:
        result = _usage(corpus, kind, "--all", "--json")
    finally:
        for path, data in saved.items():
            path.write_bytes(data)
            path.chmod(0o600)
    assert result.returncode == 0, result.stderr
    return result.stdout


def _assert_counts_the_files(corpus: Agent, capsys: pytest.CaptureFixture[str], printed: bytes, kind: str) -> None:
    """A plain --all --json report equals the --breakdown one (always summed from the rows, never a ready file)
    without its breakdowns, and that equals the files summed by the test itself."""
    full = run_cli(corpus.cli("usage", kind, "--all", "--breakdown", "--json"), capsys)
    assert full.code == 0, full.err
    summed = json.loads(full.out)
    assert_report_matches(summed, expected_report(counted_files(corpus.sessions_root), kind, None), kind)
    for row in [*summed["rows"], summed["totals"]]:
        del row["breakdown"]
    assert json.loads(printed) == summed, kind


def test_index_renders_every_report_as_a_private_file_printed_as_the_rows_answer(corpus: Agent, capsys) -> None:
    assert run_cli(corpus.cli("index"), capsys).code == 0
    folder = _reports_dir(corpus)
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    for kind in KINDS:
        path = _report_file(corpus, kind)
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
        printed = _usage(corpus, kind, "--all", "--json")
        assert printed.returncode == 0, printed.stderr
        assert printed.stdout == _joined(corpus, kind) == path.read_bytes().split(b"\n", 1)[1]
        _assert_counts_the_files(corpus, capsys, printed.stdout, kind)
    assert sorted(path.name for path in folder.iterdir()) == sorted(_report_file(corpus, kind).name for kind in KINDS)


def _header_fields(path: Path) -> tuple[str, str, str]:
    """(machine, sessions root, context) a report file's header names."""
    header = path.read_bytes().split(b"\n", 1)[0]
    machine, root_lo, context, _size = ast.literal_eval(header.decode().split(" ", 4)[4])
    return machine, root_lo, context


def test_the_command_prints_the_ready_file_itself(corpus: Agent, capsys) -> None:
    """What is printed is the file's body (a changed body is printed changed), after its header only."""
    run_cli(corpus.cli("index"), capsys)
    path = _report_file(corpus, "session")
    body = path.read_bytes().split(b"\n", 1)[1]
    marked = body.replace(b'"sessions": 1', b'"sessions": 1 ', 1)
    assert marked != body
    path.write_bytes(report_header(*_header_fields(path), len(marked)) + marked)
    assert _usage(corpus, "session", "--all", "--json").stdout == marked
    # In-process (an output without a descriptor) the same file is read and printed.
    assert run_cli(corpus.cli("usage", "session", "--all", "--json"), capsys).out.encode() == marked


def test_a_file_of_another_root_machine_format_or_length_or_not_a_private_regular_file_is_never_printed(
        corpus: Agent, capsys, tmp_path: Path) -> None:
    run_cli(corpus.cli("index"), capsys)
    path = _report_file(corpus, "daily")
    machine, root_lo, _context = _header_fields(path)
    header, body = path.read_bytes().split(b"\n", 1)
    joined = _joined(corpus, "daily")
    assert joined == body
    fake = b'{"report": "daily", "rows": []}\n'
    unprinted = {
        "another root": report_header(machine, root_lo.replace("/sessions/", "/other/"), "", len(fake)) + fake,
        "another machine": report_header(machine + "x", root_lo, "", len(fake)) + fake,
        "another context": report_header(machine, root_lo, "/home/else", len(fake)) + fake,
        "another format": header.replace(b"sessdex usage report 1 ", b"sessdex usage report 0 ") + b"\n" + body,
        "cut short": header + b"\n" + body[:-1],
        "longer": header + b"\n" + body + b" ",
        "no header": body,
    }
    for case, data in unprinted.items():
        path.write_bytes(data)
        assert _usage(corpus, "daily", "--all", "--json").stdout == joined, case
    path.write_bytes(header + b"\n" + body)
    path.chmod(0o620)  # another user could have written it
    assert _usage(corpus, "daily", "--all", "--json").stdout == joined
    path.unlink()
    elsewhere = tmp_path / "report"
    elsewhere.write_bytes(report_header(machine, root_lo, "", len(fake)) + fake)
    elsewhere.chmod(0o600)
    path.symlink_to(elsewhere)  # a link is never followed
    assert _usage(corpus, "daily", "--all", "--json").stdout == joined
    path.unlink()
    os.mkfifo(path, 0o600)  # never opened for a read that could block
    assert _usage(corpus, "daily", "--all", "--json").stdout == joined
    path.unlink()
    path.mkdir()
    assert _usage(corpus, "daily", "--all", "--json").stdout == joined


def test_a_closed_output_ends_the_ready_and_the_joined_report_alike(corpus: Agent, capsys) -> None:
    run_cli(corpus.cli("index"), capsys)
    outcomes = []
    for ready in (True, False):
        if not ready:
            shutil.rmtree(_reports_dir(corpus))
        reader, writer = os.pipe()
        os.close(reader)  # every write to stdout fails with EPIPE
        try:
            result = subprocess.run([sys.executable, "-m", "sessdex.catalog", *corpus.cli("usage", "session", "--all",
                                                                                          "--json")],
                                    cwd=corpus.project, env={**os.environ, "TZ": ZONE}, stdout=writer,
                                    stderr=subprocess.PIPE, timeout=60)
        finally:
            os.close(writer)
        outcomes.append((result.returncode, result.stderr))
    assert outcomes[0] == outcomes[1] == (1, b"")


def test_a_render_during_which_the_rows_change_writes_no_file(corpus: Agent, capsys, monkeypatch) -> None:
    """The renderer reads the rows after making their token; a change meanwhile drops the token, and the texts it
    read (perhaps from before and after the change) are not written."""
    import sessdex.catalog.index.report_cache as report_cache
    from sessdex.catalog.store.db import open_catalog
    run_cli(corpus.cli("index"), capsys)
    shutil.rmtree(_reports_dir(corpus))
    joined = report_cache.joined_usage_json
    db = open_catalog(resolve_location(corpus.agent, str(corpus.catalog)))
    try:
        def changed_meanwhile(*args: object) -> bytes | None:
            with db.write():  # a change to the usage rows (adding nothing is a change all the same)
                db.executemany("usage_totals_add", [_total_row(db.machine, sessions=0, figure=0)])
            return joined(*args)  # type: ignore[arg-type]

        monkeypatch.setattr(report_cache, "joined_usage_json", changed_meanwhile)
        report_cache.render_usage_reports(db, str(corpus.sessions_root))
        assert not _reports_dir(corpus).exists() or not list(_reports_dir(corpus).iterdir())
        monkeypatch.setattr(report_cache, "joined_usage_json", joined)
        report_cache.render_usage_reports(db, str(corpus.sessions_root))
        assert all(_report_file(corpus, kind).exists() for kind in KINDS)
    finally:
        db.close()


def test_a_change_the_command_indexes_itself_is_never_answered_from_an_older_file(corpus: Agent, capsys) -> None:
    """Without a watcher the command indexes what changed before answering: the rows' token changes with them,
    so the file rendered before no longer answers, and the next render removes it."""
    run_cli(corpus.cli("index"), capsys)
    old = _report_file(corpus, "session")
    files = counted_files(corpus.sessions_root)
    plain = next(usage for usage in files if not usage["parent"])
    _append(Path(plain["path"]), [_assistant("e0000099", "2026-02-16T09:30:00.000Z", "openai", "gpt-5", 3.5)])
    for kind in KINDS:
        printed = _usage(corpus, kind, "--all", "--json")
        assert printed.returncode == 0, printed.stderr
        _assert_counts_the_files(corpus, capsys, printed.stdout, kind)
    assert old.exists() and _token(corpus) is None
    run_cli(corpus.cli("index"), capsys)
    assert not old.exists() and _report_file(corpus, "session").exists()
    assert _usage(corpus, "session", "--all", "--json").stdout == _joined(corpus, "session")


def test_a_rebuild_removes_the_files_and_renders_them_again(corpus: Agent, capsys) -> None:
    run_cli(corpus.cli("index"), capsys)
    old = _report_file(corpus, "model")
    (_reports_dir(corpus) / "notes.txt").write_text("mine")  # not a report file: never removed
    assert run_cli(corpus.cli("index", "--rebuild"), capsys).code == 0
    assert not old.exists() and _report_file(corpus, "model").exists()
    assert (_reports_dir(corpus) / "notes.txt").read_text() == "mine"


def test_remove_report_files_keeps_the_current_token_and_other_names(tmp_path: Path) -> None:
    location = resolve_location(tmp_path, str(tmp_path / "catalog.db"))
    folder = Path(reports_dir(location))
    folder.mkdir()
    keep, old = "0123456789abcdef", "fedcba9876543210"
    names = [report_file_name("usage-daily.json", keep), report_file_name("usage-daily.json", old),
             report_file_name("usage-model.json", old) + ".123.tmp", "usage-daily.json.short", "README"]
    for name in names:
        (folder / name).write_text("x")
    removed = remove_report_files(location, keep_token=keep)
    assert sorted(Path(path).name for path in removed) == sorted(names[1:3])
    assert sorted(path.name for path in folder.iterdir()) == sorted([names[0], *names[3:]])


@pytest.mark.parametrize("target", ["pipe", "file", "appended file"])
def test_a_ready_report_is_sent_whole_after_its_header(tmp_path: Path, target: str) -> None:
    source = tmp_path / "report"
    body = os.urandom(300_000)
    source.write_bytes(b"header\n" + body)
    fd = os.open(source, os.O_RDONLY)
    report = ReadyReport(fd, 7, len(body))
    try:
        assert report.read() == body
        if target != "pipe":
            (tmp_path / "out").write_bytes(b"before\n")
            # (sendfile cannot write to a file open for appending: the body is then read and written)
            with open(tmp_path / "out", "ab" if target == "appended file" else "r+b") as out:
                out.seek(7)
                report.send(out.fileno())
            assert (tmp_path / "out").read_bytes() == b"before\n" + body
        else:
            reader = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdout.buffer.write(sys.stdin.buffer.read())"],
                                      stdin=subprocess.PIPE, stdout=subprocess.PIPE)
            assert reader.stdin is not None
            try:
                report.send(reader.stdin.fileno())
            finally:
                reader.stdin.close()
            assert reader.stdout is not None
            with reader.stdout:
                assert reader.stdout.read() == body
            assert reader.wait(timeout=30) == 0
    finally:
        report.close()


def test_another_output_encoding_gets_the_same_report_as_joined(corpus: Agent, capsys) -> None:
    run_cli(corpus.cli("index"), capsys)
    env = {"PYTHONIOENCODING": "latin-1:backslashreplace"}
    ready = _usage(corpus, "project", "--all", "--json", env=env)
    saved = {path: path.read_bytes() for path in _reports_dir(corpus).iterdir()}
    for path in saved:
        path.unlink()
    joined = _usage(corpus, "project", "--all", "--json", env=env)
    assert ready.returncode == joined.returncode == 0
    assert ready.stdout == joined.stdout


@pytest.mark.slow
def test_the_watcher_renders_the_reports_again_once_changes_settle(corpus: Agent, capsys) -> None:
    run_cli(corpus.cli("index"), capsys)
    before = _report_file(corpus, "session")
    with running_watch(corpus):
        plain = next(usage for usage in counted_files(corpus.sessions_root) if not usage["parent"])
        _append(Path(plain["path"]), [_assistant("e0000098", "2026-02-16T09:31:00.000Z", "google", "gemini-2.5-pro",
                                                 1.5)])
        _wait_until(lambda: _token(corpus) is not None and not before.exists()
                    and _report_file(corpus, "session").exists())
        for kind in KINDS:
            printed = _usage(corpus, kind, "--all", "--json")
            assert printed.stdout == _report_file(corpus, kind).read_bytes().split(b"\n", 1)[1]
            _assert_counts_the_files(corpus, capsys, printed.stdout, kind)


def check_every_change_to_usage_rows_drops_their_machines_token(db: Any) -> None:
    """Inserting, updating or deleting a machine's usage_totals rows (any writer: here the statements themselves,
    outside sessdex's indexer) drops that machine's token and leaves another machine's; other writes leave both."""
    from sessdex.catalog.store.report_files import TOKEN_KEY_PREFIX, usage_token

    machines = (db.machine, "elsewhere")

    def give_tokens() -> None:
        with db.write():
            for machine in machines:
                db.execute("meta_delete", {"key": TOKEN_KEY_PREFIX + machine})
                db.execute("meta_insert", {"key": TOKEN_KEY_PREFIX + machine, "value": f"{machine}-token"})

    def row(sessions: int) -> dict[str, Any]:
        return _total_row(db.machine, sessions=sessions, figure=1, kind="daily", key="2026-02-16")

    for statement, values in (("usage_totals_insert_missing", row(1)), ("usage_totals_add", row(1)),
                              ("usage_totals_add", _total_row(db.machine, sessions=-2, figure=-2, kind="daily",
                                                              key="2026-02-16")),
                              ("usage_totals_prune", row(0))):
        give_tokens()
        with db.write():
            db.executemany(statement, [values])
        assert (usage_token(db, machines[0]), usage_token(db, machines[1])) == (None, "elsewhere-token"), statement
    give_tokens()
    with db.write():
        db.executemany("usage_totals_prune", [row(0)])  # no row left to delete: nothing changed
        db.execute("meta_delete", {"key": "something else"})
    assert (usage_token(db, machines[0]), usage_token(db, machines[1])) == (f"{db.machine}-token", "elsewhere-token")


def check_figures_changed_without_cells_clear_them(db: Any) -> None:
    """A row's figures changed by an UPDATE that does not write its cells (a writer from before the cells existed)
    leave it without cells, so that its table is summed instead of printing the old figures; sessdex's own
    writes set them again after."""
    with db.write():
        db.executemany("usage_totals_insert_missing", [_total_row(db.machine, sessions=1, figure=1)])
    row_id = db.fetch_tuples("usage_totals_of_key", {"kind": "total", "scope": "", "key": ""})[0][9]

    def cells() -> Any:
        return db.fetch_tuples("usage_cells_total", {"scope": "", "machine": db.machine})[0][0]

    with db.write():
        db.executemany("usage_totals_set_text", [{"t_id": row_id, "t_json": "{}", "t_label": "", "t_cells": "c"}])
    assert cells() == "c"
    with db.write():
        db.executemany("usage_totals_add", [_total_row(db.machine, sessions=0, figure=5)])
    assert cells() is None
    with db.write():
        db.executemany("usage_totals_set_text", [{"t_id": row_id, "t_json": "{}", "t_label": "", "t_cells": "d"}])
    assert cells() == "d"


def _total_row(machine: str, *, sessions: int, figure: float, kind: str = "total", key: str = "") -> dict[str, Any]:
    """The parameters of a usage_totals statement (usage_totals_add, _insert_missing, _prune) for one row."""
    figures = {f"t_{name}": figure for name in ("input_tokens", "output_tokens", "cache_read_tokens",
                                                "cache_write_tokens", "cost", "messages")}
    return {"t_machine": machine, "t_kind": kind, "t_scope": "", "t_key": key, "t_model": "", "t_file_id": None,
            **figures, "t_sessions": sessions}


def test_every_change_to_usage_rows_drops_their_machines_token_and_figures_their_stale_cells(tmp_path: Path) -> None:
    from sessdex.catalog.store.db import open_catalog

    db = open_catalog(resolve_location(tmp_path, str(tmp_path / "catalog.db")), machine="here")
    try:
        check_every_change_to_usage_rows_drops_their_machines_token(db)
        check_figures_changed_without_cells_clear_them(db)
    finally:
        db.close()


# -- tables (without --json): kept ready by the command that laid them out ----------------------------------

def _table_file(corpus: Agent, kind: str, name: str = "0") -> Path:
    token = _token(corpus)
    assert token is not None
    return _reports_dir(corpus) / report_file_name(f"usage-{kind}-{name}.txt", token)


def _tables(corpus: Agent, kind: str, env: dict[str, str]) -> tuple[bytes, bytes]:
    """(the table printed with its ready file removed, the table printed next)."""
    for path in _reports_dir(corpus).glob(f"usage-{kind}-*.txt.*"):
        path.unlink()
    first = _usage(corpus, kind, "--all", env=env)
    again = _usage(corpus, kind, "--all", env=env)
    assert first.returncode == again.returncode == 0, first.stderr + again.stderr
    return first.stdout, again.stdout


@pytest.mark.parametrize("columns", [None, "80", "200"])
def test_a_table_laid_out_once_is_kept_and_printed_as_it_is_until_its_rows_change(corpus: Agent, capsys,
                                                                                   columns: str | None) -> None:
    run_cli(corpus.cli("index"), capsys)
    env = {} if columns is None else {"COLUMNS": columns}
    name = "0" if columns is None else f"{columns}-bars"
    for kind in KINDS:
        laid_out, kept = _tables(corpus, kind, env)
        path = _table_file(corpus, kind, name)
        assert kept == laid_out == path.read_bytes().split(b"\n", 1)[1], kind
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
    # Printed from the file: a changed body is printed changed.
    path = _table_file(corpus, "session", name)
    body = path.read_bytes().split(b"\n", 1)[1]
    marked = body.replace(b"TOTAL", b"T0TAL")
    path.write_bytes(report_header(*_header_fields(path), len(marked)) + marked)
    assert _usage(corpus, "session", "--all", env=env).stdout == marked
    # A change drops the token: the table is laid out again (and counts the change), then kept under a new token.
    plain = next(usage for usage in counted_files(corpus.sessions_root) if not usage["parent"])
    _append(Path(plain["path"]), [_assistant("e0000097", "2026-02-16T09:32:00.000Z", "openai", "gpt-5", 100.0)])
    changed = _usage(corpus, "session", "--all", env=env).stdout
    assert changed != body and b"T0TAL" not in changed and _token(corpus) is None
    run_cli(corpus.cli("index"), capsys)
    assert _tables(corpus, "session", env) == (changed, changed)


def test_a_project_table_is_kept_for_the_home_it_shows_as_tilde(corpus: Agent, capsys) -> None:
    run_cli(corpus.cli("index"), capsys)
    laid_out, kept = _tables(corpus, "project", {})
    assert kept == laid_out and b"~/" in laid_out
    elsewhere = _usage(corpus, "project", "--all", env={"HOME": "/nonexistent-home"})
    assert elsewhere.returncode == 0 and b"~/" not in elsewhere.stdout  # not the file kept for the other home
    assert str(corpus.home).encode() in elsewhere.stdout
    assert _usage(corpus, "project", "--all").stdout == laid_out


def test_a_table_that_cannot_be_kept_is_printed_all_the_same(corpus: Agent, capsys) -> None:
    run_cli(corpus.cli("index"), capsys)
    laid_out = _usage(corpus, "daily", "--all")
    shutil.rmtree(_reports_dir(corpus))
    _reports_dir(corpus).write_text("not a folder")
    again = _usage(corpus, "daily", "--all")
    assert again.returncode == 0 and again.stdout == laid_out.stdout and again.stderr == b""


def test_a_render_replaces_a_file_a_reader_would_not_take(corpus: Agent, capsys) -> None:
    """A file of the current token in an older format (or cut, or of another root) is not 'there': the next
    render writes it again."""
    run_cli(corpus.cli("index"), capsys)
    path = _report_file(corpus, "session")
    header, body = path.read_bytes().split(b"\n", 1)
    path.write_bytes(header.replace(b"sessdex usage report 1 ", b"sessdex usage report 0 ") + b"\n" + body)
    run_cli(corpus.cli("index"), capsys)
    assert path.read_bytes() == header + b"\n" + body


def test_a_table_whose_rows_change_while_it_is_laid_out_is_not_kept(corpus: Agent, capsys, monkeypatch) -> None:
    import sessdex.catalog.cli.usage_stored_table as usage_stored_table
    from sessdex.catalog.store.db import open_catalog

    run_cli(corpus.cli("index"), capsys)
    lay_out = usage_stored_table.stored_usage_table

    def changed_meanwhile(*args: Any, **options: Any) -> bytes:
        db = open_catalog(resolve_location(corpus.agent, str(corpus.catalog)))
        try:
            with db.write():  # another writer changes the rows (adding nothing is a change all the same)
                db.executemany("usage_totals_add", [_total_row(db.machine, sessions=0, figure=0)])
        finally:
            db.close()
        return lay_out(*args, **options)

    monkeypatch.setattr(usage_stored_table, "stored_usage_table", changed_meanwhile)
    printed = run_cli(corpus.cli("usage", "daily", "--all"), capsys)
    assert printed.code == 0 and printed.out.startswith("DAY")
    assert not list(_reports_dir(corpus).glob("*.txt.*"))


def test_a_kept_table_answers_only_its_own_width_and_scope(corpus: Agent, capsys) -> None:
    run_cli(corpus.cli("index"), capsys)
    narrow = _tables(corpus, "session", {"COLUMNS": "80"})[0]
    for env in ({"COLUMNS": "200"}, {}):
        wide = _usage(corpus, "session", "--all", env=env).stdout
        assert wide != narrow and wide == _usage(corpus, "session", "--all", env=env).stdout
    before = sorted(path.name for path in _reports_dir(corpus).iterdir())
    for args in (("daily",), ("daily", "--all", "--breakdown"), ("daily", "--all", "--since", "2020-01-01")):
        assert _usage(corpus, *args).returncode == 0
    assert sorted(path.name for path in _reports_dir(corpus).iterdir()) == before  # (this project, or summed)
