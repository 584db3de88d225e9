"""Files of sessdex's own that already exist when it starts: another user's, readable by others, or symlinks.

sessdex runs as a real process against a sandbox; the planted files are made by this test (running as root it
hands them to the `nobody` uid, as another user of a shared folder would have made them).
"""

from __future__ import annotations

import os
import sqlite3
import stat
from pathlib import Path

import pytest

from tests.core.sessiontree import BASE_MS, assistant, user
from tests.reliability.catalog_support import Tree, make_tree, run_sessdex

pytestmark = pytest.mark.reliability

OTHER_UID = 65534  # nobody


@pytest.fixture
def tree(tmp_path: Path) -> Tree:
    tree = make_tree(tmp_path)
    project = tree.project("proj")
    tree.session(project, "ab12000000000001", [user("private words"), assistant("ok")], mtime_ms=BASE_MS)
    return tree


def _plant(path: Path, data: bytes, mode: int, *, foreign: bool) -> None:
    path.write_bytes(data)
    path.chmod(mode)
    if foreign:
        if os.geteuid() != 0:
            pytest.skip("only root can make a file another user owns")
        os.chown(path, OTHER_UID, OTHER_UID)


def _sqlite_bytes(tmp_path: Path) -> bytes:
    scratch = tmp_path / "scratch.db"
    connection = sqlite3.connect(scratch)
    connection.execute("CREATE TABLE t (x)")
    connection.close()
    return scratch.read_bytes()


@pytest.mark.parametrize("foreign", [True, False])
def test_a_catalog_readable_by_others_with_data_is_refused_with_one_line(tree: Tree, tmp_path: Path,
                                                                        foreign: bool) -> None:
    catalog = tree.paths.agent_dir / "catalog.db"
    data = _sqlite_bytes(tmp_path)
    _plant(catalog, data, 0o666 if foreign else 0o644, foreign=foreign)
    result = run_sessdex(tree, "index")
    assert result.code == 2 and result.one_line_error, result.err
    assert ("another user" in result.err) if foreign else ("chmod 600" in result.err)
    assert catalog.read_bytes() == data
    assert not (tree.paths.agent_dir / "catalog.db-wal").exists()


def test_an_empty_catalog_and_wal_of_another_user_are_replaced_by_private_ones(tree: Tree) -> None:
    agent_dir = tree.paths.agent_dir
    for name in ("catalog.db", "catalog.db-wal"):
        _plant(agent_dir / name, b"", 0o666, foreign=True)
    result = run_sessdex(tree, "index")
    assert result.code == 0, result.err
    catalog = agent_dir / "catalog.db"
    assert catalog.stat().st_uid == os.geteuid() and stat.S_IMODE(catalog.stat().st_mode) == 0o600
    wal = agent_dir / "catalog.db-wal"
    if wal.exists():
        assert wal.stat().st_uid == os.geteuid() and stat.S_IMODE(wal.stat().st_mode) == 0o600
    assert "private words" in run_sessdex(tree, "list", cwd=tree.project("proj")).out


def test_a_wal_of_another_user_holding_data_is_refused(tree: Tree) -> None:
    agent_dir = tree.paths.agent_dir
    assert run_sessdex(tree, "index").code == 0
    _plant(agent_dir / "catalog.db-wal", b"x" * 4096, 0o666, foreign=True)
    for command in (("index",), ("list",)):
        result = run_sessdex(tree, *command, cwd=tree.project("proj"))
        assert result.code == 2 and result.one_line_error, (command, result.err)
        assert "catalog.db-wal" in result.err
    assert (agent_dir / "catalog.db-wal").read_bytes() == b"x" * 4096


def test_an_own_empty_catalog_readable_by_others_is_made_private(tree: Tree) -> None:
    catalog = tree.paths.agent_dir / "catalog.db"
    _plant(catalog, b"", 0o666, foreign=False)
    assert run_sessdex(tree, "index").code == 0
    assert stat.S_IMODE(catalog.stat().st_mode) == 0o600


@pytest.mark.parametrize(("sidecar", "command"), [("catalog.db", ("index",)), ("catalog.db", ("list",)),
                                                  ("catalog.db.watch.lock", ("index", "--rebuild")),
                                                  ("catalog.db.migrate.lock", ("index",))])
def test_no_write_follows_a_symlink_planted_as_a_catalog_file(tree: Tree, tmp_path: Path, sidecar: str,
                                                             command: tuple[str, ...]) -> None:
    victim = tmp_path / "victim.db"
    victim.write_bytes(_sqlite_bytes(tmp_path))
    before = victim.read_bytes()
    link = tree.paths.agent_dir / sidecar
    link.symlink_to(victim)
    result = run_sessdex(tree, *command, cwd=tree.project("proj"))
    assert result.code == 2 and result.one_line_error, result.err
    assert "symlink" in result.err
    assert victim.read_bytes() == before
    assert link.is_symlink()


def test_a_catalog_folder_other_users_can_write_into_is_refused(tree: Tree, tmp_path: Path) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    result = run_sessdex(tree, "--catalog", str(shared / "catalog.db"), "index")
    assert result.code == 2 and result.one_line_error, result.err
    assert "chmod 700" in result.err
    assert list(shared.iterdir()) == []


def test_checking_an_open_catalog_keeps_its_connections_locks(tmp_path: Path) -> None:
    """The private-file checks of a catalog this process already has open (a watcher opening its writer after its
    reader, or reopening) must not drop the connection's locks: another process's connection, closing, would take
    itself for the last one and delete the -wal, and later writes from here would be seen by no one else."""
    import subprocess
    import sys

    from sessdex.core.private_files import check_private_database

    path = tmp_path / "catalog.db"
    check_private_database(path)
    ours = sqlite3.connect(path, isolation_level=None)
    try:
        ours.execute("PRAGMA journal_mode = WAL")
        ours.execute("CREATE TABLE t (x)")
        ours.execute("INSERT INTO t VALUES (1)")
        check_private_database(path)  # the -wal and -shm exist now, as the catalog itself
        other = "import sqlite3, sys; c = sqlite3.connect(sys.argv[1]); c.execute('SELECT * FROM t').fetchall(); c.close()"
        subprocess.run([sys.executable, "-c", other, str(path)], check=True)
        ours.execute("INSERT INTO t VALUES (2)")
        assert (tmp_path / "catalog.db-wal").exists()
        reader = sqlite3.connect(path)
        try:
            assert reader.execute("SELECT count(*) FROM t").fetchone() == (2,)
        finally:
            reader.close()
    finally:
        ours.close()
