"""The one catalog-or-files seam: choosing the source from the settings, and both sources answering alike."""

from __future__ import annotations

from pathlib import Path

import pytest

from sessdex.catalog.queries.file_scan import FileScan
from sessdex.catalog.queries.open_source import open_session_source
from sessdex.catalog.queries.picker_source import PickerSource
from sessdex.catalog.queries.sessions import Catalog
from sessdex.catalog.queries.source import MATCH_OPEN
from sessdex.catalog.store.settings import Settings
from sessdex.core.paths import AgentPaths
from tests.catalog.catalog_support import BASE_MS, assistant, header, jsonl, sandbox_paths, user, write_file


@pytest.fixture
def paths(tmp_path: Path) -> AgentPaths:
    paths = sandbox_paths(tmp_path)
    for name, session_id, words, offset in (("proj", "aa11000000000001", "deploy the zebra", 0),
                                            ("proj", "bb22000000000002", "nothing here", 1000),
                                            ("other", "cc33000000000003", "zebra elsewhere", 2000)):
        cwd = paths.home / name
        cwd.mkdir(exist_ok=True)
        write_file(paths.project_session_dir(cwd) / f"{session_id}.jsonl",
                   jsonl([header(session_id, str(cwd)), user("hello"), assistant(words)]), BASE_MS + offset)
    return paths


def test_settings_take_the_option_else_a_non_empty_variable(monkeypatch, tmp_path: Path) -> None:
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(tmp_path / "env-agent"))
    monkeypatch.setenv("SESSDEX_CATALOG", "off")
    from_env = Settings.resolve()
    assert (from_env.agent_dir, from_env.catalog, from_env.catalog_off) == (str(tmp_path / "env-agent"), "off", True)
    assert from_env.paths.agent_dir == tmp_path / "env-agent"
    given = Settings.resolve(str(tmp_path / "opt-agent"), str(tmp_path / "c.db"))
    assert given.paths.agent_dir == tmp_path / "opt-agent" and given.location().sqlite_path == tmp_path / "c.db"
    monkeypatch.setenv("SESSDEX_CATALOG", "")
    assert Settings.resolve(str(tmp_path)).location().sqlite_path == tmp_path / "catalog.db"


def test_catalog_off_gives_the_file_scan_and_creates_no_catalog(paths: AgentPaths) -> None:
    for only_if_ready in (False, True):
        with open_session_source(Settings("ignored", "off", paths=paths), only_if_ready=only_if_ready) as source:
            assert isinstance(source, FileScan)
            assert [info.id for info in source.list_sessions(str(paths.home / "proj"))] == [
                "bb22000000000002", "aa11000000000001"]
    assert not (paths.agent_dir / "catalog.db").exists()


def test_only_if_ready_declines_a_catalog_that_needs_creating(paths: AgentPaths) -> None:
    assert open_session_source(Settings(paths=paths), only_if_ready=True) is None
    assert not (paths.agent_dir / "catalog.db").exists()
    with open_session_source(Settings(paths=paths)) as created:  # creates it at the current schema
        assert isinstance(created, Catalog)
    with open_session_source(Settings(paths=paths), only_if_ready=True) as ready:
        assert isinstance(ready, Catalog)


def test_an_unusable_catalog_warns_once_and_falls_back_to_the_files(paths: AgentPaths, tmp_path: Path) -> None:
    broken = tmp_path / "broken.db"
    # A damaged SQLite database (a file that is not one at all is refused outright: --catalog never takes it).
    broken.write_bytes(b"SQLite format 3\x00" + b"this is not sqlite" * 100)
    warnings: list[str] = []
    source = open_session_source(Settings(catalog=str(broken), paths=paths), warn=warnings.append)
    with source:
        assert isinstance(source, FileScan)
        assert len(source.list_all_sessions()) == 3
    assert len(warnings) == 1 and warnings[0].endswith("; reading the session files directly")
    assert open_session_source(Settings(catalog=str(broken), paths=paths), only_if_ready=True) is None


@pytest.mark.parametrize("all_projects", [False, True])
def test_catalog_and_file_scan_give_the_picker_the_same_rows_and_matches(paths: AgentPaths, all_projects: bool) -> None:
    cwd = str(paths.home / "proj")
    with Catalog(paths) as catalog, FileScan(paths) as scan:
        assert catalog.bring_up_to_date(cwd, None, all_projects=all_projects)  # the first pass indexes the files
        assert not catalog.bring_up_to_date(cwd, None, all_projects=all_projects)
        assert not scan.bring_up_to_date(cwd, None, all_projects=all_projects)
        rows = catalog.picker_rows(cwd, None, all_projects=all_projects)
        assert rows == scan.picker_rows(cwd, None, all_projects=all_projects) != []
        from_catalog = catalog.content_matches("zebra", cwd, None, all_projects=all_projects)
        from_files = scan.content_matches("zebra", cwd, None, all_projects=all_projects)
        assert set(from_catalog) == set(from_files) == {
            row.path for row in rows if row.session_id in ("aa11000000000001", "cc33000000000003")}
        assert all(MATCH_OPEN in snippet for snippet in [*from_catalog.values(), *from_files.values()])


def test_the_picker_source_checks_each_scope_once_and_closes_its_source(paths: AgentPaths) -> None:
    cwd = str(paths.home / "proj")
    picker = PickerSource(Catalog(paths), cwd)
    assert [row.session_id for row in picker.rows("project")] == ["bb22000000000002", "aa11000000000001"]
    assert not picker.refresh("project")  # the empty snapshot was already brought up to date
    write_file(paths.project_session_dir(cwd) / "dd44000000000004.jsonl",
               jsonl([header("dd44000000000004", cwd), user("late")]), BASE_MS + 5000)
    assert not picker.refresh("project")  # one snapshot: a scope is checked once
    assert picker.refresh("all")  # the other scope is checked now, and sees the new file
    assert picker.rows("project")[0].session_id == "dd44000000000004"
    picker.close()
    assert picker.source.db is None
