"""Sessions of a project whose folder name is not valid UTF-8 (a cwd with such bytes), and a file whose name is
not: every catalog query answers about them what the file scan answers (SQLite here; PostgreSQL in
tests/postgres/test_postgres_odd_names.py)."""

from __future__ import annotations

import os
from pathlib import Path

from sessdex.catalog.queries.sessions import Catalog
from sessdex.core.paths import AgentPaths
from tests.catalog.catalog_support import BASE_MS, assistant, header, jsonl, user, write_file
from tests.catalog.test_parity import assert_parity


def odd_corpus(root: Path) -> tuple[AgentPaths, list[str]]:
    """A plain project and a project at a cwd holding the byte 0xff, with files whose names hold 0xfe."""
    paths = AgentPaths(agent_dir=root / "home" / ".xcsh" / "agent", home=root / "home", tmp_dir=Path("/tmp"))
    plain = str(root / "home" / "plain")
    odd = os.fsdecode(os.fsencode(str(root / "home")) + b"/caf\xff")
    for number, cwd in enumerate([plain, odd, odd, plain]):
        folder = paths.sessions_root / paths.project_dir_name(cwd)
        name = os.fsdecode(f"2025-01-01T00-00-0{number}-000Z_0dd000000000000{number}".encode() + b"\xfe.jsonl")
        # JSON holds text: the header names the odd cwd with U+FFFD for its byte, the folder has the byte itself.
        text_cwd = os.fsencode(cwd).decode("utf-8", "replace")
        write_file(folder / name, jsonl([header(f"0dd000000000000{number}", text_cwd), user(f"question {number}"),
                                         assistant("answer")]), BASE_MS + number)
    return paths, [plain, odd]


def test_the_sqlite_catalog_answers_about_odd_names_as_the_file_scan(tmp_path: Path) -> None:
    paths, cwds = odd_corpus(tmp_path)
    with Catalog(paths, machine="laptop") as catalog:
        assert assert_parity(paths, catalog, cwds) > 10
        assert len(catalog.list_sessions(cwds[1])) == 2
