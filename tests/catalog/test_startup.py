"""The hot commands' start-up budget, through the installed `sessdex` console script: none of them imports a heavy
module (the database toolkit, the picker's terminal toolkit, the watcher, asyncio); the parser imports only the
chosen command's module; and the answers themselves are what the commands promise.

Every case runs as a real process of the console script pip installed (the venv's `bin/sessdex`, what a shell
prompt or an editor runs) with PYTHONPROFILEIMPORTTIME=1, whose report on stderr names every module imported.
Speed itself is measured by scripts/bench_catalog.py, never by a timed test.
"""

from __future__ import annotations

import io
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from gen_corpus import generate_corpus

from sessdex.catalog.cli.commands import COMMANDS
from sessdex.catalog.cli.output import echo
from sessdex.catalog.history.storage import HistoryStorage
from sessdex.catalog.index.content_index import fill_content_index
from sessdex.core.paths import AgentPaths
from tests.catalog.catalog_support import BASE_MS, header, jsonl, open_catalog_for, user, write_file

REPO = Path(__file__).resolve().parents[2]
SESSDEX = Path(sys.executable).parent / "sessdex"  # the console script of the venv running the tests
NOW_MS = BASE_MS + 400 * 86_400_000  # a fixed past: tables show dates, not a "3m ago" that moves
HOSTILE_TITLE = ("\x1b]0;owned\x07 \ue000marked\ue001 \ue002id\ue003 \u200bzero \x1b[2J\x9b31m tab\there "
                 "\U0001f680 \u65e5\u672c \x7f\u2028next line")
# What no hot command may import: each costs a shell prompt or an editor tens of milliseconds at every run, and
# none is needed to answer from a current catalog (SQLite through the standard library).
HEAVY_MODULES = {"sqlalchemy", "alembic", "prompt_toolkit", "watchdog", "asyncio", "psycopg", "click"}
COMMAND_MODULES = {f"sessdex.catalog.cli.{module}" for module, _summary in COMMANDS.values()}
UNSET = ("PI_CODING_AGENT_DIR", "SESSDEX_CATALOG", "SESSDEX_MACHINE", "SESSDEX_MACHINES", "COLUMNS",
         "KITTY_WINDOW_ID", "TMUX_PANE", "TERM_SESSION_ID", "WT_SESSION", "PYTHONPROFILEIMPORTTIME")
IMPORT_REPORT = "import time:"


@dataclass(frozen=True)
class Case:
    """One invocation: where it runs (a key of Corpus.places), its argv, extra environment, and whether it is a
    hot command (held to HEAVY_MODULES)."""

    place: str
    args: tuple[str, ...]
    hot: bool = True
    env: tuple[tuple[str, str], ...] = ()
    with_agent_dir: bool = True


@dataclass
class Run:
    """One finished process: its status and output, and the modules it imported."""

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
    root = tmp_path_factory.mktemp("startup")
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
        # A first index leaves message text and usage facts for later (content_index): the runs are those of a
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


def _environment(corpus: Corpus, extra: dict[str, str]) -> dict[str, str]:
    env = {name: value for name, value in os.environ.items() if name not in UNSET}
    return {**env, "HOME": str(corpus.paths.home), "TMPDIR": str(corpus.paths.tmp_dir), **extra}


def _run(corpus: Corpus, case: Case) -> Run:
    """`case` through the installed console script, the modules it imported read from its import-time report.

    (The report names what `import` statements load: the command's own module, which the parser loads with
    importlib.import_module, is left out, but everything it imports is in.)"""
    env = _environment(corpus, {"PYTHONPROFILEIMPORTTIME": "1", **dict(case.env)})
    args = [*(("--agent-dir", str(corpus.paths.agent_dir)) if case.with_agent_dir else ()), *case.args]
    process = subprocess.run([str(SESSDEX), *args], cwd=corpus.places[case.place], env=env, stdin=subprocess.DEVNULL,
                             capture_output=True, text=True, timeout=60)
    report = [line for line in process.stderr.splitlines(keepends=True) if line.startswith(IMPORT_REPORT)]
    err = "".join(line for line in process.stderr.splitlines(keepends=True) if not line.startswith(IMPORT_REPORT))
    # `import time: <self us> | <cumulative us> | <indented name>` (the first line is the column titles)
    modules = {line.split("|")[2].strip() for line in report[1:]}
    return Run(process.returncode, process.stdout, err, modules)


def _cases(corpus: Corpus) -> list[Case]:
    local, other, ambiguous = corpus.local_id, corpus.other_id, corpus.ambiguous_prefix
    agent = str(corpus.paths.agent_dir)
    catalog_file = str(corpus.paths.agent_dir / "catalog.db")
    return [
        Case("project", ("list",)),
        Case("project", ("list", "--json")),
        Case("outside", ("list", "--all")),
        Case("outside", ("list", "--json", "--all"), env=(("COLUMNS", "70"),)),
        Case("outside", ("list", "--all", "--machines", "all")),  # a global option after the command
        Case("project", ("recent",)),
        Case("project", ("recent", "-n", "2", "--json")),
        Case("project", ("recent", "--limit=3"), env=(("COLUMNS", "50"),)),
        Case("project", ("resume", local)),
        Case("project", ("resume", "--json", local, "--yes")),
        Case("outside", ("resume", "--no-fork", other)),  # another project: refused, exit 1
        Case("outside", ("resume", other)),  # no terminal to ask on: refused, exit 1
        Case("outside", ("resume", "ffffffffff")),  # unknown prefix
        Case("outside", ("resume", ambiguous)),  # ambiguous prefix: the candidates listed
        Case("project", ("resume", "-y", "--no-fork", local)),  # usage error, exit 2
        Case("project", ("resume", "new.jsonl", "--json")),  # a path that does not exist yet
        Case("project", ("continue",)),
        Case("outside", ("continue", "--json")),  # nothing to continue, exit 1
        Case("project", ("--catalog", catalog_file, "list")),
        Case("other", ("recent",), env=(("PI_CODING_AGENT_DIR", agent), ("SESSDEX_CATALOG", "off")),
             with_agent_dir=False),
        Case("project", ("search", corpus.title_word)),
        Case("outside", ("search", "--all", "--json", corpus.title_word)),
        Case("outside", ("search", "-n", "1", "--all", corpus.title_word, "zzzznothing")),
        Case("outside", ("history", "search", "deploy")),
        Case("outside", ("history", "search", "--json", "-n", "1", "deploy")),
        Case("outside", ("history", "search", "--here", "the")),
        Case("project", ("usage",)),
        Case("outside", ("usage", "model", "--all", "--json")),
        Case("outside", ("usage", "session", "--all"), env=(("COLUMNS", "100"),)),
        Case("outside", ("usage", "project", "--all")),
        Case("project", ("usage", "--line")),  # in a shell prompt: the budget of resume
        Case("project", ("usage", "weekly", "--since=2020-01-01", "--until", "20991231", "--breakdown"),
             env=(("COLUMNS", "120"),)),
        Case("project", ("usage", "--since", "yesterday")),  # usage error, exit 2
        Case("project", ("usage", "hourly")),  # usage error, exit 2
        Case("project", ("recent", "-n", "0")),  # usage error, exit 2
        Case("project", ("lsit",)),  # a mistyped command, exit 2
        # Not held to the budget: what these need is theirs to import.
        Case("project", ("resume",), hot=False),  # the picker: without a terminal, the list on stderr
        Case("project", ("list", "-h"), hot=False),
        Case("project", ("--catalog", str(corpus.root / "new-catalog.db"), "list"), hot=False),  # to create
    ]


@pytest.fixture(scope="module")
def runs(corpus: Corpus) -> list[tuple[Case, Run]]:
    """Every case run through the console script, two at a time."""
    with ThreadPoolExecutor(max_workers=2) as pool:
        cases = _cases(corpus)
        return list(zip(cases, pool.map(lambda case: _run(corpus, case), cases)))


def test_the_hot_commands_answer_as_they_promise(runs) -> None:
    outcomes = {case.args: (run.code, run.out, run.err) for case, run in runs}
    assert outcomes[("list",)][0] == 0 and "\t" in outcomes[("list",)][1]  # piped: tab-separated
    # The hostile title is listed, without a character a terminal acts on (tables are echoed as sanitized text).
    for args in (("list",), ("recent",), ("list", "--all"), ("recent", "--limit=3")):
        out = outcomes[args][1]
        assert args[0] == "recent" or "owned" in out  # (a `recent` case of another project comes last)
        assert not any(ord(char) < 32 and char not in "\n\t" or 0x7f <= ord(char) < 0xa0 for char in out)
    assert outcomes[("list", "--all", "--machines", "all")][:2] == outcomes[("list", "--all")][:2]
    assert {code for args, (code, _, _) in outcomes.items() if args[0] == "resume" and len(args) > 1} == {0, 1, 2}
    ambiguous = next(err for args, (_, _, err) in outcomes.items() if args[:1] == ("resume",) and "ambiguous" in err)
    assert ambiguous.startswith("sessdex: Session ") and ambiguous.count("\n") > 2
    assert any("pass --yes" in err and "--own-dir" in err for _, _, err in outcomes.values())
    for args, start in ((("recent", "-n", "0"), "sessdex recent: "), (("usage", "hourly"), "sessdex: "),
                        (("lsit",), "sessdex: no such command 'lsit'; did you mean 'list'?")):
        code, out, err = outcomes[args]
        assert (code, out) == (2, "") and err.startswith(start) and err.count("\n") == 1, (args, err)
    searched = [out for args, (code, out, _) in outcomes.items() if args[0] == "search" and code == 0 and out]
    assert len(searched) >= 2 and all("[" in out for out in searched)  # hits, with the match marked
    assert outcomes[("history", "search", "deploy")][1].count("\n") == 2
    here = outcomes[("history", "search", "--here", "the")][1]
    assert here.count("\n") == 2 and "deploy the api" not in here  # the one sent elsewhere is left out
    assert all("Traceback" not in err for _, _, err in outcomes.values())


def test_no_hot_command_imports_a_heavy_module(runs) -> None:
    heavy = {case.args: run.top_level_modules & HEAVY_MODULES for case, run in runs if case.hot}
    assert {args: found for args, found in heavy.items() if found} == {}
    # The report names what the command imports once it runs, not only what the interpreter starts with.
    listed = next(run for case, run in runs if case.args == ("list",))
    assert {"_sqlite3", "sessdex.catalog.cli.session_commands", "sessdex.catalog.queries.sessions"} <= listed.modules


def test_the_prompt_line_imports_only_the_usage_sums_beyond_what_resume_imports(runs) -> None:
    """`usage --line` runs in a shell prompt, as often as `resume`: besides sessdex's own usage modules it imports
    nothing `resume` does not (no dataclasses, inspect or ast, whose import costs more than the line's work)."""
    line = next(run for case, run in runs if case.args == ("usage", "--line"))
    resume = next(run for case, run in runs if case.args[0] == "resume" and len(case.args) == 2 and case.hot)
    assert line.code == 0 and line.out.startswith("today $"), line.err
    # typing: the usage fact is a NamedTuple (resume no longer imports typing at all).
    beyond = {name for name in line.modules - resume.modules if not name.startswith("sessdex.")}
    assert beyond - {"typing", "_typing"} == set()


def test_the_parser_imports_only_the_chosen_command_module(runs) -> None:
    for case, run in runs:
        command = next((arg for arg in case.args if arg in COMMANDS), None)
        if command is None or not case.hot:
            continue
        others = run.modules & COMMAND_MODULES - {f"sessdex.catalog.cli.{COMMANDS[command][0]}"}
        # `history search` prints through search_commands, `usage` opens its source as `list` does (read_guard).
        others -= {"sessdex.catalog.cli.search_commands"} if command == "history" else set()
        assert others == set(), (case.args, others)


def test_resume_and_continue_import_no_marks_code_unless_asked_for_json(runs) -> None:
    checked = 0
    for case, run in runs:
        if case.hot and case.args[0] in ("resume", "continue") and not {"--json", "--keep-marks"} & set(case.args):
            assert not {"sessdex.core.marks", "sessdex.catalog.cli.marks_filters"} & run.modules, case.args
            checked += 1
    assert checked >= 2


def test_a_closed_stdout_ends_quietly_with_status_1(corpus: Corpus) -> None:
    reader, writer = os.pipe()
    os.close(reader)  # every write to stdout fails with EPIPE
    try:
        process = subprocess.run([str(SESSDEX), "--agent-dir", str(corpus.paths.agent_dir), "list", "--all"], cwd=REPO,
                                 env=_environment(corpus, {}), stdin=subprocess.DEVNULL, stdout=writer,
                                 stderr=subprocess.PIPE, text=True, timeout=60)
    finally:
        os.close(writer)
    assert (process.returncode, process.stderr) == (1, "")


def test_echo_never_writes_a_control_character(capsys: pytest.CaptureFixture[str]) -> None:
    safe = "cwd /tmp/red/x \u65e5\u672c\ttab"  # wide text and a tab
    hostile = "cwd /tmp/\033[31mred\033[0m/x \033]0;title\a \033]52;c;SGk=\a \x9b2J\x7f"
    for err in (False, True):
        echo(safe, err=err)
        assert capsys.readouterr() == (("", safe + "\n") if err else (safe + "\n", ""))
        echo(hostile, err=err)
        written = capsys.readouterr().err if err else capsys.readouterr().out
        assert written == "cwd /tmp/\ufffd[31mred\ufffd[0m/x \ufffd]0;title\ufffd \ufffd]52;c;SGk=\ufffd \ufffd2J\ufffd\n"


def test_echo_on_an_ascii_stream_writes_utf8(monkeypatch: pytest.MonkeyPatch) -> None:
    raw = io.BytesIO()
    stream = io.TextIOWrapper(raw, encoding="ascii", errors="strict")
    monkeypatch.setattr(sys, "stdout", stream)
    echo("caf\u00e9 \u65e5\u672c \udcff")  # accented, wide, and an undecodable file-name byte
    stream.flush()
    assert raw.getvalue() == "caf\u00e9 \u65e5\u672c \ufffd\n".encode()


def test_only_the_process_own_command_freezes_the_collector(corpus: Corpus) -> None:
    # The console script freezes every object before the process exits (the interpreter's last collection then
    # walks none of them); a caller passing its own arguments lives on, and nothing of it is frozen.
    probe = ("import gc, sys\n"
             "from sessdex.catalog.cli.entry import main\n"
             "own, args = sys.argv[1] == 'own', sys.argv[2:]\n"
             "sys.argv[1:] = args\n"
             "try:\n    main() if own else main(args)\nexcept SystemExit:\n    pass\n"
             "print('collector', gc.isenabled(), gc.get_freeze_count() > 0, file=sys.stderr)\n")
    reports = []
    for caller in ("own", "given"):
        process = subprocess.run([sys.executable, "-c", probe, caller, "--agent-dir", str(corpus.paths.agent_dir),
                                  "list", "--json"], cwd=corpus.places["project"], env=_environment(corpus, {}),
                                 stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60)
        reports.append(process.stderr.strip().splitlines()[-1])
    assert reports == ["collector True True", "collector True False"]
