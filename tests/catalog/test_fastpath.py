"""The click-free fast path (`cli.fastpath`) answers exactly as the click CLI does, and imports none of its weight.

Every case runs as a real process twice on one generated corpus: through the console-script entry
(`sessdex.catalog.cli.entry.main`, fast path allowed) and with SESSDEX_NO_FASTPATH=1 (the click CLI). stdout,
stderr and the exit code must be equal, and the loaded modules show which path answered.
"""

from __future__ import annotations

import io
import os
import subprocess
import sys
import sysconfig
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from gen_corpus import generate_corpus

from sessdex.catalog.cli.entry import NO_FASTPATH_ENV
from sessdex.catalog.cli.fastpath import CommandLine, parse_command_line
from sessdex.catalog.cli.output import echo
from sessdex.catalog.history.storage import HistoryStorage
from sessdex.catalog.index.content_index import fill_content_index
from sessdex.core.paths import AgentPaths
from tests.catalog.catalog_support import BASE_MS, header, jsonl, open_catalog_for, user, write_file

REPO = Path(__file__).resolve().parents[2]
NOW_MS = BASE_MS + 400 * 86_400_000  # a fixed past: tables show dates, not a "3m ago" that moves
HOSTILE_TITLE = ("\x1b]0;owned\x07 \ue000marked\ue001 \ue002id\ue003 \u200bzero \x1b[2J\x9b31m tab\there "
                 "\U0001f680 \u65e5\u672c \x7f\u2028next line")
HEAVY_MODULES = {"click", "sqlalchemy", "alembic", "prompt_toolkit", "asyncio", "watchdog"}
# Runs the console-script entry and writes the names of the modules it loaded to $MODULES_OUT at exit.
RUNNER = ("import atexit, os, sys\n"
          "sys.path[:0] = [os.environ['IMPORT_ROOT'], os.environ['SITE_PACKAGES']]\n"
          "atexit.register(lambda: open(os.environ['MODULES_OUT'], 'w').write('\\n'.join(sorted(sys.modules))))\n"
          "from sessdex.catalog.cli.entry import main\n"
          "main()\n")
# -- the import budget of the hot commands (issue 12) -----------------------------------------------------
# Every module a hot command may import beyond what the interpreter loaded at start-up. A module missing here
# fails the test: each one costs every shell prompt and editor that runs these commands, so make the import
# lazy (where only some invocations need it) or add it here knowingly.
# The processes run with `python -S` and import sessdex from the source tree (IMPORT_ROOT): no `site`, no
# editable-install finder, whose imports (re, typing, pathlib, ...) would hide ours; `site`'s own (os) are
# imported by RUNNER and counted as start-up.
# No re, json, orjson, pathlib, typing, dataclasses, contextlib, or the pure-Python halves of datetime and
# sqlite3 (core.datetimes, store.sqlite_driver): the API's Path values are made on first read (core.paths.as_path),
# --json is written by cli.json_text.
# Every command: the entry and its parser, the line writer (terminal-safe text, widths, dates).
_ENTRY = {
    "__future__",
    "gc",  # built in: the entry turns the cycle collector off for the hot commands
    "sessdex", "sessdex.catalog", "sessdex.catalog.cli", "sessdex.catalog.cli.entry", "sessdex.catalog.cli.errors",
    "sessdex.catalog.cli.fastpath", "sessdex.catalog.cli.output", "sessdex.catalog.tui",
    "sessdex.catalog.tui.terminal_text", "sessdex.catalog.tui.width", "sessdex.core",
    "sessdex.core.errors", "sessdex.core.paths", "sessdex.core.values",
}
# SQLite's C module, given functools' C statement cache without functools (core.sqlite_driver).
_SQLITE = {"_sqlite3", "_functools", "_operator"}
# (No fcntl: only writers lock.)
_SETTINGS = {"sessdex.catalog.store", "sessdex.catalog.store.location", "sessdex.catalog.store.settings",
             "sessdex.core.sqlite_driver"}
# A current catalog opened, its freshness checked (a live watcher's heartbeat).
_CATALOG = _SQLITE | _SETTINGS | {
    "errno", "sessdex.catalog.index", "sessdex.catalog.index.reconcile", "sessdex.catalog.queries",
    "sessdex.catalog.queries.open_source", "sessdex.catalog.queries.sessions", "sessdex.catalog.store.compiled_sql",
    "sessdex.catalog.store.db", "sessdex.catalog.store.fts", "sessdex.catalog.store.machine",
    # only when the freshness pass writes to the catalog (issue 11: what sessdex creates is 0600)
    "sessdex.core.private_files",
}
# Its rows read as SessionInfo (not by `usage`: its reports hold no session object).
_SESSION_ROWS = {"sessdex.catalog.queries.session_infos", "sessdex.core.discovery", "sessdex.core.records",
                 "sessdex.core.summary", "sessdex.core.datetimes", "_datetime"}
# Issue 13: refusals as JSON (read_guard).
_SESSION_COMMANDS = _ENTRY | _CATALOG | _SESSION_ROWS | {"sessdex.catalog.cli.session_commands",
                                                         "sessdex.catalog.cli.read_guard"}
# The listing table: the one display-name rule (naming), dates; each session's cost and tokens are formatted by
# core.discovery (not core.usage: its reports are not a listing's business).
_TABLE = {"sessdex.catalog.queries.naming", "sessdex.catalog.tui.dates",
          "unicodedata"}  # the widths of non-ASCII text only
# collections (with what it imports itself).
_COLLECTIONS = {"collections", "_collections", "itertools", "keyword", "operator", "reprlib"}
# --json only (checked below): the C string encoder of the json package, without the package.
_JSON_OUTPUT = {"_json", "sessdex.catalog.cli.json_text"}
_RE = {"_sre", "copyreg", "enum", "re", "re._casefix", "re._compiler", "re._constants", "re._parser", "functools",
       "types", *_COLLECTIONS}
_PATHLIB = _RE | {"fnmatch", "ipaddress", "ntpath", "pathlib", "urllib", "urllib.parse", "warnings"}
# orjson imports these itself.
_ORJSON = {
    "orjson", "orjson.orjson", "uuid", "_uuid", "platform", "dataclasses", "inspect", "ast", "_ast", "dis", "opcode",
    "_opcode", "token", "tokenize", "linecache", "copy", "weakref", "_weakrefset", "importlib", "warnings",
    "importlib._bootstrap", "importlib._bootstrap_external", "importlib.machinery", "collections.abc", "contextlib",
    "datetime", "math", "_json", "json", "json.decoder", "json.encoder", "json.scanner", *_RE,
}
_USAGE_STORED = _ENTRY | _CATALOG | {
    "gc", "sessdex.catalog.cli.usage_output", "sessdex.core.usage_terms", "sessdex.catalog.store.usage_stored",
    "sessdex.catalog.store.report_files",
    "_json", "sessdex.core.usage_json",  # --json
    "sessdex.catalog.store.usage_cells", "sessdex.catalog.cli.usage_stored_table",  # the table
    "unicodedata",  # its widths of non-Latin text
    # the session table's id prefixes (core.discovery's id_prefix_length)
    *(_SESSION_ROWS - {"sessdex.catalog.queries.session_infos"})}
IMPORT_BUDGET: dict[str, set[str]] = {
    "list": _SESSION_COMMANDS | _TABLE | _JSON_OUTPUT,
    # issue 13: `recent` prints the listing table of `list`
    "recent": _SESSION_COMMANDS | _TABLE | _JSON_OUTPUT,
    # --json names the session as the tables do (naming)
    "resume": _SESSION_COMMANDS | _JSON_OUTPUT | {"sessdex.core.resume", "sessdex.catalog.queries.naming"},
    # The terminal's breadcrumb, read as session files are: a regular file only, never blocking.
    "continue": _SESSION_COMMANDS | _JSON_OUTPUT | {"sessdex.core.breadcrumbs", "sessdex.core.regular_files"},
    "search": _ENTRY | _CATALOG | _SESSION_ROWS | _TABLE | _JSON_OUTPUT | {
        "sessdex.catalog.cli.search_commands", "sessdex.catalog.index.content_index",
        "collections.abc", *_COLLECTIONS},  # content_index's Callable at run time (collections.abc loads collections)
    "history": _ENTRY | _SETTINGS | _SQLITE | {
        "sessdex.catalog.cli.search_commands", "sessdex.catalog.history", "sessdex.catalog.history.search",
        "sessdex.core.text", "_heapq", "heapq", "sessdex.core.datetimes", "_datetime", *_RE,
        # --json only: prints through orjson (which imports uuid, platform, dataclasses and json)
        *_ORJSON},
    # A report the catalog stores ready: --json from the ready report files or the stored row texts
    # (store.usage_stored, core.usage_json), the table from the row cells (store.usage_cells,
    # cli.usage_stored_table); no core.usage. (test_usage checks that `usage KIND --all` loads no _SESSION_ROWS
    # but for the session table's id prefixes.)
    "usage": _USAGE_STORED,
    # A report summed here (--breakdown, --since/--until, a project in two folders): queries.usage and its table
    # (cli.usage_table) load core.usage, and dates (--since) core.datetimes.
    "usage summed": _USAGE_STORED | _SESSION_ROWS | {
        "sessdex.catalog.cli.usage_table", "sessdex.catalog.queries.usage", "sessdex.core.usage", "sessdex.core.text",
        "sessdex.core.usage_cells", "math",  # (core.usage's)
        "collections.abc", *_COLLECTIONS},  # queries.usage's Sequence at run time
}
# `--catalog off` reads the session files themselves: the JSONL parser (core.jsonl: dataclasses, typing) and
# orjson are its work, and reading only regular files without blocking (core.regular_files) with text every
# terminal can print (core.text).
FILE_SCAN_BUDGET = {"sessdex.catalog.queries.file_scan", "sessdex.catalog.queries.source", "sessdex.core.jsonl",
                    "sessdex.core.regular_files", "sessdex.core.text",
                    *_ORJSON, *_PATHLIB, "_typing", "typing", "typing.io", "typing.re"}
UNSET = ("PI_CODING_AGENT_DIR", "SESSDEX_CATALOG", NO_FASTPATH_ENV, "COLUMNS", "_SESSDEX_COMPLETE",
         "KITTY_WINDOW_ID", "TMUX_PANE", "TERM_SESSION_ID", "WT_SESSION")


@dataclass(frozen=True)
class Case:
    """One invocation: where it runs (a key of Corpus.places), its argv, extra environment, who should answer."""

    place: str
    args: tuple[str, ...]
    fast: bool
    env: tuple[tuple[str, str], ...] = ()
    with_agent_dir: bool = True
    budget: str | None = None  # the IMPORT_BUDGET entry, when not the command's


@dataclass
class Run:
    """One finished process."""

    code: int
    out: str
    err: str
    modules: set[str] = field(default_factory=set)

    @property
    def top_level_modules(self) -> set[str]:
        return {name.split(".")[0] for name in self.modules}


@dataclass
class Corpus:
    """A generated agent dir with a current catalog, and the ids and folders the cases use."""

    root: Path
    paths: AgentPaths
    places: dict[str, Path]
    local_id: str  # a session of the "project" place
    other_id: str  # a session of another project
    ambiguous_prefix: str  # matches several sessions across projects
    title_word: str  # the first word of a title in the "project" place


def _unique_prefix(session_id: str, ids: list[str]) -> str:
    length = 8
    while sum(1 for other in ids if other.startswith(session_id[:length])) > 1:
        length += 1
    return session_id[:length]


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Corpus:
    root = tmp_path_factory.mktemp("fastpath")
    (root / "import-root").mkdir()
    (root / "import-root" / "sessdex").symlink_to(REPO)  # the package, importable without the editable finder
    home = root / "home"
    paths = AgentPaths(agent_dir=home / ".xcsh" / "agent", home=home, tmp_dir=root / "tmp")
    (root / "tmp").mkdir()
    manifest = generate_corpus(paths.agent_dir, sessions=30, projects=3, total_bytes=200_000, seed=5, home=home,
                               now=NOW_MS / 1000)
    valid = [s for s in manifest.sessions if not s.damaged and s.message_count > 0]
    by_project: dict[str, list] = {}
    for session in valid:
        by_project.setdefault(session.cwd, []).append(session)
    project, other = sorted(by_project, key=lambda cwd: -len(by_project[cwd]))[:2]
    # A session whose title and first message hold what a terminal acts on, and what it must show as it is.
    write_file(paths.project_session_dir(project) / "hostile.jsonl",
               jsonl([header("9" * 16, project, title=HOSTILE_TITLE), user(HOSTILE_TITLE)]), NOW_MS + 60_000)
    with open_catalog_for(paths) as catalog:  # creates the catalog and indexes every file
        catalog.list_all_sessions()
        # A first index leaves message text and usage facts for later (content_index): the budgets are those of a
        # complete catalog (a search or usage that completes one also reads session files, once).
        assert fill_content_index(catalog._database())
    with HistoryStorage.open(agent_dir=paths.agent_dir, batch_delay=0) as history:
        for number, prompt in enumerate(("deploy the api", "fix the deploy script", "why is the parser slow")):
            history.add(prompt, str(root / "not-a-project") if number else "/elsewhere")
    ids = sorted(s.session_id for s in manifest.sessions)
    places = {"project": Path(project), "other": Path(other), "outside": root / "not-a-project"}
    for place in places.values():
        place.mkdir(parents=True, exist_ok=True)
    # Snowflake ids share their leading digits: the first one is a prefix of every id of the corpus.
    assert len({s.session_id[0] for s in valid}) == 1
    titled = next(s for s in by_project[project] if s.title)
    return Corpus(root, paths, places, _unique_prefix(by_project[project][0].session_id, ids),
                  _unique_prefix(by_project[other][0].session_id, ids), valid[0].session_id[0],
                  titled.title.split()[0])


def _run(corpus: Corpus, case: Case, *, fast_path: bool, index: int) -> Run:
    modules_file = corpus.root / f"modules-{index}-{int(fast_path)}.txt"
    env = {name: value for name, value in os.environ.items() if name not in UNSET}
    env.update({"HOME": str(corpus.paths.home), "TMPDIR": str(corpus.paths.tmp_dir),
                "MODULES_OUT": str(modules_file), **_import_env(corpus), **dict(case.env)})
    if not fast_path:
        env[NO_FASTPATH_ENV] = "1"
    args = [*(("--agent-dir", str(corpus.paths.agent_dir)) if case.with_agent_dir else ()), *case.args]
    process = subprocess.run([sys.executable, "-S", "-c", RUNNER, *args], cwd=corpus.places[case.place], env=env,
                             stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60)
    return Run(process.returncode, process.stdout, process.stderr, set(modules_file.read_text().split()))


def _import_env(corpus: Corpus) -> dict[str, str]:
    """Where RUNNER (run with `python -S`) imports sessdex and its dependencies from."""
    return {"IMPORT_ROOT": str(corpus.root / "import-root"), "SITE_PACKAGES": sysconfig.get_paths()["purelib"]}


def _cases(corpus: Corpus) -> list[Case]:
    local, other, ambiguous = corpus.local_id, corpus.other_id, corpus.ambiguous_prefix
    agent = str(corpus.paths.agent_dir)
    catalog_file = str(corpus.paths.agent_dir / "catalog.db")
    return [
        Case("project", ("list",), fast=True),
        Case("project", ("list", "--json"), fast=True),
        Case("outside", ("list", "--all"), fast=True),
        Case("outside", ("list", "--json", "--all"), fast=True, env=(("COLUMNS", "70"),)),
        Case("project", ("recent",), fast=True),
        Case("project", ("recent", "-n", "2", "--json"), fast=True),
        Case("project", ("recent", "--limit=3"), fast=True, env=(("COLUMNS", "50"),)),
        Case("project", ("resume", local), fast=True),
        Case("project", ("resume", "--json", local, "--yes"), fast=True),
        Case("outside", ("resume", "--no-fork", other), fast=True),  # another project: refused, exit 1
        Case("outside", ("resume", other), fast=True),  # no terminal to ask on: refused, exit 1
        Case("outside", ("resume", "ffffffffff"), fast=True),  # unknown prefix
        Case("outside", ("resume", ambiguous), fast=True),  # ambiguous prefix: the candidates listed
        Case("project", ("resume", "-y", "--no-fork", local), fast=True),  # usage error, exit 2
        Case("project", ("resume", "new.jsonl", "--json"), fast=True),  # a path that does not exist yet
        Case("project", ("continue",), fast=True),
        Case("outside", ("continue", "--json"), fast=True),  # nothing to continue, exit 1
        Case("project", ("--catalog", catalog_file, "list"), fast=True),
        Case("other", ("recent",), fast=True, env=(("PI_CODING_AGENT_DIR", agent), ("SESSDEX_CATALOG", "off")),
             with_agent_dir=False),
        Case("project", ("search", corpus.title_word), fast=True),
        Case("outside", ("search", "--all", "--json", corpus.title_word), fast=True),
        Case("outside", ("search", "-n", "1", "--all", corpus.title_word, "zzzznothing"), fast=True),
        Case("outside", ("history", "search", "deploy"), fast=True),
        Case("outside", ("history", "search", "--json", "-n", "1", "deploy"), fast=True),
        Case("outside", ("history", "search", "--here", "the"), fast=True),
        # (the project's usage is in two folders, one per naming scheme: summed)
        Case("project", ("usage",), fast=True, budget="usage summed"),
        Case("outside", ("usage", "model", "--all", "--json"), fast=True),
        Case("outside", ("usage", "session", "--all"), fast=True, env=(("COLUMNS", "100"),)),
        Case("outside", ("usage", "project", "--all"), fast=True),
        Case("project", ("usage", "weekly", "--since=2020-01-01", "--until", "20991231", "--breakdown"), fast=True,
             env=(("COLUMNS", "120"),), budget="usage summed"),
        Case("project", ("usage", "--since", "yesterday"), fast=True),  # usage error, exit 2
        Case("project", ("usage", "hourly"), fast=True),  # usage error, exit 2
        # Shapes the fast path leaves to click.
        Case("project", ("search", "--session-dir", str(corpus.places["other"]), corpus.title_word), fast=False),
        Case("project", ("search", "--catalog", "off", corpus.title_word), fast=False),
        Case("outside", ("history", "recent"), fast=False),
        Case("outside", ("history", "search"), fast=False),
        Case("project", ("usage", "daily", "monthly"), fast=False),
        Case("project", ("recent", "-n", "0"), fast=False),
        Case("project", ("recent", "-n", "x"), fast=False),
        Case("project", ("list", "--session-dir", str(corpus.places["other"])), fast=False),
        Case("project", ("resume",), fast=False),  # the picker: without a terminal, the list on stderr
        Case("project", ("list", "-h"), fast=False),
        # An agent dir that is a file: click refuses it (the catalog named too, so that one would open).
        Case("project", ("--agent-dir", catalog_file, "--catalog", catalog_file, "list"), fast=False,
             with_agent_dir=False),
        # Another program's SQLite database named as the catalog: not a catalog at the current revision, so click
        # refuses it (the fast path does not probe its tables itself).
        Case("project", ("--catalog", str(corpus.paths.agent_dir / "history.db"), "list"), fast=False),
        # A catalog to create: click does it (the first run), after which it is current for the second.
        Case("project", ("--catalog", str(corpus.root / "new-catalog.db"), "list"), fast=False),
    ]


@pytest.fixture(scope="module")
def runs(corpus: Corpus) -> list[tuple[Case, Run, Run]]:
    """Every case run through the entry (fast path allowed) and then through click only, two cases at a time."""
    def both(numbered: tuple[int, Case]) -> tuple[Case, Run, Run]:
        index, case = numbered
        return case, _run(corpus, case, fast_path=True, index=index), _run(corpus, case, fast_path=False, index=index)

    with ThreadPoolExecutor(max_workers=2) as pool:
        return list(pool.map(both, enumerate(_cases(corpus))))


def test_the_fast_path_prints_and_exits_exactly_as_click_does(runs) -> None:
    differing = [case.args for case, fast, click in runs
                 if (fast.code, fast.out, fast.err) != (click.code, click.out, click.err)]
    assert differing == []
    outcomes = {case.args: (fast.code, fast.out, fast.err) for case, fast, _ in runs}
    # The cases do reach the outcomes they are meant to exercise.
    assert outcomes[("list",)][0] == 0 and outcomes[("list",)][1].startswith("ID ")
    # The hostile title is listed, without a character a terminal acts on (tables are echoed as sanitized text).
    for args in (("list",), ("recent",), ("list", "--all"), ("recent", "--limit=3")):
        out = outcomes[args][1]
        assert args[0] == "recent" or "owned" in out  # (a `recent` case of another project comes last)
        assert not any(ord(char) < 32 and char != "\n" or 0x7f <= ord(char) < 0xa0 for char in out)
    assert {code for args, (code, _, _) in outcomes.items() if args[0] == "resume" and len(args) > 1} == {0, 1, 2}
    ambiguous = next(err for args, (_, _, err) in outcomes.items() if args[:1] == ("resume",) and "ambiguous" in err)
    assert ambiguous.startswith("sessdex: Session ") and ambiguous.count("\n") > 2
    assert any("Pass --yes" in err for _, _, err in outcomes.values())
    code, _, err = outcomes[("recent", "-n", "0")]
    assert code == 2 and err.startswith("sessdex recent: ") and err.count("\n") == 1
    searched = [out for args, (code, out, _) in outcomes.items() if args[0] == "search" and code == 0 and out]
    assert len(searched) >= 2 and all("[" in out for out in searched)  # hits, with the match marked
    assert outcomes[("history", "search", "deploy")][1].count("\n") == 2
    here = outcomes[("history", "search", "--here", "the")][1]
    assert here.count("\n") == 2 and "deploy the api" not in here  # the one sent elsewhere is left out


def test_each_shape_is_answered_by_the_path_meant_for_it(runs) -> None:
    wrong = [(case.args, case.fast) for case, fast, click in runs
             if ("click" not in fast.modules) != case.fast or "click" not in click.modules]
    assert wrong == []


def test_the_fast_path_imports_no_heavy_module(runs) -> None:
    for case, fast, _ in runs:
        if not case.fast:
            continue
        assert fast.top_level_modules & HEAVY_MODULES == set(), case.args


@pytest.fixture(scope="module")
def startup_modules(corpus: Corpus) -> set[str]:
    """The modules `python -S` has loaded before any sessdex code runs, with what RUNNER imports itself."""
    env = {name: value for name, value in os.environ.items() if name not in UNSET}
    code = "import atexit, os, sys; print('\\n'.join(sys.modules))"
    return set(subprocess.run([sys.executable, "-S", "-c", code], cwd=corpus.places["outside"], env=env, check=True,
                              capture_output=True, text=True).stdout.split())


def test_each_hot_command_imports_only_its_budget(runs, startup_modules: set[str]) -> None:
    over: dict[tuple[str, ...], set[str]] = {}
    budgets_used = set()
    for case, fast, _ in runs:
        if not case.fast:
            continue
        command = case.budget or next(arg for arg in case.args if arg in IMPORT_BUDGET)
        budgets_used.add(command)
        file_scan = ("SESSDEX_CATALOG", "off") in case.env
        budget = IMPORT_BUDGET[command] | (FILE_SCAN_BUDGET if file_scan else set())
        extra = fast.modules - startup_modules - budget
        if "--json" not in case.args:  # (the file scan's orjson imports json, and with it _json)
            extra |= fast.modules & (_JSON_OUTPUT - ({"_json"} if file_scan else set()))
        if extra:
            over[case.args] = extra
    assert not over, "\n".join(f"{' '.join(args)}: {' '.join(sorted(extra))}" for args, extra in over.items())
    assert budgets_used == set(IMPORT_BUDGET)  # every hot command was run


def test_a_closed_stdout_ends_both_paths_the_same_way(corpus: Corpus) -> None:
    outcomes = []
    for fast_path in (True, False):
        reader, writer = os.pipe()
        os.close(reader)  # every write to stdout fails with EPIPE
        env = {name: value for name, value in os.environ.items() if name not in UNSET}
        env.update({"HOME": str(corpus.paths.home), **({} if fast_path else {NO_FASTPATH_ENV: "1"})})
        try:
            process = subprocess.run([sys.executable, "-m", "sessdex.catalog", "--agent-dir", str(corpus.paths.agent_dir),
                                      "list", "--all"], cwd=REPO, env=env, stdin=subprocess.DEVNULL, stdout=writer,
                                     stderr=subprocess.PIPE, text=True, timeout=60)
        finally:
            os.close(writer)
        outcomes.append((process.returncode, process.stderr))
    assert outcomes[0] == outcomes[1] == (1, "")


def test_echo_writes_what_click_echo_wrote_but_never_a_control_character(capsys: pytest.CaptureFixture[str]) -> None:
    import click

    safe = "cwd /tmp/red/x \u65e5\u672c\ttab"  # wide text and a tab
    hostile = "cwd /tmp/\033[31mred\033[0m/x \033]0;title\a \033]52;c;SGk=\a \x9b2J\x7f"
    for err in (False, True):
        click.echo(safe, err=err)
        by_click = capsys.readouterr()
        echo(safe, err=err)
        assert capsys.readouterr() == by_click
        echo(hostile, err=err)
        written = capsys.readouterr().err if err else capsys.readouterr().out
        assert written == "cwd /tmp/\ufffd[31mred\ufffd[0m/x \ufffd]0;title\ufffd \ufffd]52;c;SGk=\ufffd \ufffd2J\ufffd\n"


def test_echo_on_an_ascii_stream_writes_utf8_as_click_echo_did(monkeypatch: pytest.MonkeyPatch) -> None:
    import click

    written = []
    for writer in (click.echo, echo):
        raw = io.BytesIO()
        stream = io.TextIOWrapper(raw, encoding="ascii", errors="strict")
        monkeypatch.setattr(sys, "stdout", stream)
        writer("caf\u00e9 \u65e5\u672c \udcff")  # accented, wide, and an undecodable file-name byte
        stream.flush()
        written.append(raw.getvalue())
    # Both recover with UTF-8 bytes; the undecodable byte is U+FFFD for echo (terminal_text), "?" for click.
    assert written[0] == "caf\u00e9 \u65e5\u672c ?\n".encode()
    assert written[1] == "caf\u00e9 \u65e5\u672c \ufffd\n".encode()


@pytest.mark.parametrize("argv, expected", [
    (["list"], CommandLine("list", None, None, frozenset())),
    (["--agent-dir", "A", "--catalog=C", "list", "--json", "--all"],
     CommandLine("list", "A", "C", frozenset({"json", "all"}))),
    (["recent", "-n5"], CommandLine("recent", None, None, frozenset(), limit=5)),
    (["recent", "--json", "--limit", "12"], CommandLine("recent", None, None, frozenset({"json"}), limit=12)),
    (["resume", "-y", "ab12", "--json"], CommandLine("resume", None, None, frozenset({"yes", "json"}), "ab12")),
    (["resume", "../x.jsonl", "--no-fork"], CommandLine("resume", None, None, frozenset({"no_fork"}), "../x.jsonl")),
    (["continue"], CommandLine("continue", None, None, frozenset())),
    (["search", "a", "--all", "b", "-n", "3"], CommandLine("search", None, None, frozenset({"all"}), "a b", 3)),
    (["history", "search", "--here", "x", "--json"],
     CommandLine("history search", None, None, frozenset({"here", "json"}), "x")),
    (["usage", "--all", "session", "--since", "2026-01-01", "--until=20260201", "--breakdown"],
     CommandLine("usage", None, None, frozenset({"all", "breakdown"}), "session", None,
                 (("--since", "2026-01-01"), ("--until", "20260201")))),
])
def test_supported_shapes_are_parsed(argv: list[str], expected: CommandLine) -> None:
    assert parse_command_line(argv) == expected


@pytest.mark.parametrize("argv", [
    [], ["--help"], ["index"], ["list", "-h"], ["list", "--session-dir", "d"], ["list", "extra"],
    ["list", "--json", "--json"], ["list", "--catalog", "c"], ["--catalog", "c", "--catalog", "d", "list"],
    ["--agent-dir"], ["--agent-dir", "--json", "list"], ["--agent-dir=", "list"], ["--", "list"],
    ["list", "--"], ["recent", "-n", "0"], ["recent", "-n", "+5"], ["recent", "-n", "٥"], ["recent", "-n"],
    ["recent", "-n", "2", "-n", "3"], ["recent", "-n=2"], ["resume"], ["resume", ""], ["resume", "a", "b"],
    ["resume", "-"], ["resume", "--yes=1", "ab"], ["continue", "--session-dir", "d"], ["pick"],
    ["search"], ["search", "--session-dir", "d", "x"], ["search", "-n", "0", "x"], ["search", "--all", "--all", "x"],
    ["history"], ["history", "recent"], ["history", "search"], ["history", "search", "--here=1", "x"],
    ["usage", "daily", "weekly"], ["usage", "--since"], ["usage", "--since", "--json"], ["usage", "--until="],
    ["usage", "--since", "a", "--since", "b"], ["usage", "--limit", "3"],
])
def test_other_shapes_are_left_to_click(argv: list[str]) -> None:
    assert parse_command_line(argv) is None


def test_the_fast_path_runs_without_the_cycle_collector_and_gives_it_back(corpus: Corpus) -> None:
    # The entry turns the collector off, freezes what a fast-path answer of the process's own command line leaves
    # at exit (no last collection), and leaves the collector as it found it; a command click answers runs with it
    # on and nothing frozen, and a caller passing its own arguments (it lives on) gets nothing frozen either.
    probe = ("import gc, os, sys\n"
             "sys.path[:0] = [os.environ['IMPORT_ROOT'], os.environ['SITE_PACKAGES']]\n"
             "from sessdex.catalog.cli.entry import main\n"
             "own, disabled, args = sys.argv[1] == 'own', sys.argv[2] == 'off', sys.argv[3:]\n"
             "sys.argv[1:] = args\n"
             "gc.disable() if disabled else None\n"
             "try:\n    main() if own else main(args)\nexcept SystemExit:\n    pass\n"
             "print('collector', gc.isenabled(), gc.get_freeze_count() > 0, file=sys.stderr)\n")
    env = {name: value for name, value in os.environ.items() if name not in UNSET}
    env.update({"HOME": str(corpus.paths.home), "TMPDIR": str(corpus.paths.tmp_dir), **_import_env(corpus)})
    reports = []
    for caller, collector, command in (("own", "on", "--json"), ("own", "on", "-h"), ("given", "on", "--json"),
                                       ("own", "off", "--json")):
        process = subprocess.run([sys.executable, "-S", "-c", probe, caller, collector,
                                  "--agent-dir", str(corpus.paths.agent_dir), "list", command],
                                 cwd=corpus.places["project"], env=env, stdin=subprocess.DEVNULL, capture_output=True,
                                 text=True, timeout=60)
        reports.append(process.stderr.strip().splitlines()[-1])
    assert reports == ["collector True True", "collector True False", "collector True False",
                       "collector False True"]
