"""The package's shape: one `sessdex` namespace, rooms whose imports only flow downwards, no import cycle."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

import pytest

import sessdex

REPO = Path(__file__).resolve().parents[2]
PACKAGE_DIRS = {"sessdex.core": REPO / "core", "sessdex.catalog": REPO / "catalog",
                "sessdex.migrations": REPO / "migrations"}
# A room may import its own modules and the rooms below it, never one above or beside it.
ROOM_RANKS = {
    "sessdex.core": 0,
    "sessdex.catalog.store": 1,
    "sessdex.migrations": 1,
    "sessdex.catalog.history": 1,
    "sessdex.catalog.secrets": 1,
    "sessdex.catalog.index": 2,
    "sessdex.catalog.queries": 3,
    "sessdex.catalog.export": 4,
    "sessdex.catalog.tui": 4,
    "sessdex.catalog.mcp": 4,
    "sessdex.catalog.web": 4,
    "sessdex.catalog.cli": 5,
    "sessdex.catalog": 6,  # only `python -m sessdex.catalog`
}
# mcp answers, the web pages and the viewer read transcripts with the export room's one reader (export never imports
# them).
ALLOWED_BESIDE = {("sessdex.migrations", "sessdex.catalog.store"), ("sessdex.catalog.store", "sessdex.migrations"),
                  ("sessdex.catalog.mcp", "sessdex.catalog.export"), ("sessdex.catalog.web", "sessdex.catalog.export"),
                 ("sessdex.catalog.tui", "sessdex.catalog.export")}


def _modules() -> dict[str, Path]:
    found = {}
    for package, folder in PACKAGE_DIRS.items():
        for path in folder.rglob("*.py"):
            parts = path.relative_to(folder).with_suffix("").parts
            if parts[-1] == "__init__":
                parts = parts[:-1]
            found[".".join((package, *parts))] = path
    return found


def _imports(path: Path, module: str) -> set[str]:
    """Every sessdex module `path` imports, at module level or inside functions."""
    names: set[str] = set()
    is_package = path.name == "__init__.py"
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = module.split(".")
                anchor = anchor[: len(anchor) - node.level + (1 if is_package else 0)]
                base = ".".join(anchor + ([base] if base else []))
            names.add(base)
            names.update(f"{base}.{alias.name}" for alias in node.names)
    return {name for name in names if name.startswith("sessdex.")}


def _room(module: str) -> str:
    return max((room for room in ROOM_RANKS if module == room or module.startswith(room + ".")), key=len)


def _graph() -> dict[str, set[str]]:
    modules = _modules()
    return {module: {name for name in _imports(path, module) if name in modules and name != module}
            for module, path in modules.items()}


def test_every_module_is_under_sessdex() -> None:
    for path in _modules().values():
        for line in path.read_text(encoding="utf-8").splitlines():
            stripped = line.strip()
            for top in ("core", "catalog", "migrations"):
                assert not stripped.startswith((f"import {top}", f"from {top}.", f"from {top} import")), (path, line)


def test_imports_flow_downwards() -> None:
    upward = []
    for module, imported in _graph().items():
        room = _room(module)
        for name in imported:
            target = _room(name)
            if target == room or (room, target) in ALLOWED_BESIDE:
                continue
            if ROOM_RANKS[target] >= ROOM_RANKS[room]:
                upward.append(f"{module} -> {name}")
    assert upward == []


def test_core_never_imports_catalog() -> None:
    assert [f"{m} -> {n}" for m, ns in _graph().items() if m.startswith("sessdex.core")
            for n in ns if not n.startswith("sessdex.core")] == []


def test_no_import_cycle() -> None:
    graph = _graph()
    state: dict[str, int] = {}
    cycles: list[list[str]] = []

    def visit(module: str, stack: list[str]) -> None:
        state[module] = 1
        stack.append(module)
        for name in sorted(graph[module]):
            if state.get(name) == 1:
                cycles.append(stack[stack.index(name):] + [name])
            elif name not in state:
                visit(name, stack)
        stack.pop()
        state[module] = 2

    for module in sorted(graph):
        if module not in state:
            visit(module, [])
    assert cycles == []


def test_public_api_is_pinned() -> None:
    assert sorted(sessdex.__all__) == sorted([
        "AgentPaths", "AgentSession", "AmbiguousSessionError", "BlobStore", "Catalog", "CatalogError", "FileScan",
        "FileSessionStorage", "HistoryError", "HistoryStorage", "MemorySessionStorage", "PersistenceError",
        "RecentSessionInfo", "SessdexError", "SessionFileError", "SessionInfo", "SessionInOtherProjectError",
        "SessionManager", "SessionNotFoundError", "SessionRuntime", "UsageError", "__version__",
        "build_session_context", "find_most_recent_session", "get_recent_sessions", "list_all_sessions",
        "list_sessions", "open_catalog", "resolve_resume",
    ])


@pytest.mark.parametrize("name", sorted(set(sessdex.__all__) - {"__version__"}))
def test_public_names_resolve(name: str) -> None:
    value = getattr(sessdex, name)
    assert getattr(value, "__module__", "").startswith("sessdex.")


def test_version_comes_from_the_package_metadata() -> None:
    from importlib.metadata import version

    assert sessdex.__version__ == version("sessdex")


def test_version_option_prints_the_package_version() -> None:
    from importlib.metadata import version

    result = subprocess.run([sys.executable, "-m", "sessdex.catalog", "--version"], capture_output=True, text=True,
                            check=False)
    assert (result.returncode, result.stdout.strip()) == (0, f"sessdex {version('sessdex')}")


def test_help_texts_need_no_spec() -> None:
    """`--help` of every command reads without the spec: no "(S15)"-style references."""
    from sessdex.catalog.cli.commands import COMMANDS

    commands = [[], *([name] for name in COMMANDS), ["history", "search"], ["trash"]]
    for args in commands:
        result = subprocess.run([sys.executable, "-m", "sessdex.catalog", *args, "--help"], capture_output=True,
                                text=True, check=False)
        assert result.returncode == 0, (args, result.stderr)
        assert not re.search(r"\bS\d{1,2}\b", result.stdout), (args, result.stdout)


# "issue 12", "issues 11-15", "(S10)", "(spec S10, S18)": pointers a reader without the tracker or the spec cannot
# follow. The README's spec map is the one place that maps the spec to modules.
_REFERENCE = re.compile(r"\b[Ii]ssues? \d+|\(S\d{1,2}(?:, S\d{1,2})*\)|\bspec S\d{1,2}\b|^\s*# -- S\d{1,2}:", re.MULTILINE)


def test_code_comments_and_docstrings_cite_no_issue_or_spec_part() -> None:
    generated = {"compiled_sql.py", "postgres_sql.py"}
    found = []
    for folder in ("core", "catalog", "migrations", "tests", "scripts"):
        for path in sorted((REPO / folder).rglob("*.py")):
            if path.name in generated or path == Path(__file__).resolve():
                continue
            for match in _REFERENCE.finditer(path.read_text(encoding="utf-8")):
                found.append(f"{path.relative_to(REPO)}: {match.group(0).strip()}")
    assert found == []
