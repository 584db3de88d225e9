"""`index --redact`: detected secrets stay out of the catalog (message rows, full-text index, titles), files unchanged."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.catalog.test_export import AWS_KEY, GITHUB_TOKEN, SESSION_ID, sessdex
from tests.core.sessiontree import BASE_MS, Tree, assistant, header, make_tree, user

JWT = "eyJ" + "hbGciOiJIUzI1NiJ9." + "eyJ" + "zdWIiOiIxMjM0NTY3ODkwIn0." + "dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U"
PLANTED = (AWS_KEY, GITHUB_TOKEN, JWT)


def planted_tree(tmp_path: Path) -> tuple[Tree, Path]:
    tree = make_tree(tmp_path)
    proj = tree.project("proj")
    session = tree.session(proj, SESSION_ID, [user("deploy with " + AWS_KEY), assistant("token " + GITHUB_TOKEN + " " + JWT)],
                           mtime_ms=BASE_MS, head=header(SESSION_ID, proj, title="use " + AWS_KEY))
    return tree, session


def catalog_bytes(tree: Tree, *sessions: Path) -> bytes:
    """Every byte sessdex wrote outside the session files (catalog database, its journal and full-text index)."""
    found = b""
    for path in tree.root.rglob("*"):
        if path.is_file() and path not in sessions:
            found += path.read_bytes()
    return found


def test_index_redact_keeps_every_planted_secret_out_of_the_catalog(tmp_path: Path) -> None:
    tree, session = planted_tree(tmp_path)
    before = session.read_bytes()
    done = sessdex(tree, "index", "--redact")
    assert done.returncode == 0, done.stderr
    stored = catalog_bytes(tree, session)
    assert stored and not any(secret.encode() in stored for secret in PLANTED)
    assert b"REDACTED:aws-access-key" in stored
    assert session.read_bytes() == before
    assert SESSION_ID[:8] in sessdex(tree, "search", "deploy").stdout  # the rest of the text is still searchable
    assert "ab12" not in sessdex(tree, "search", "AKIAIOSFODNN7EXAMPLE").stdout


def test_without_redact_the_catalog_holds_the_text(tmp_path: Path) -> None:
    tree, session = planted_tree(tmp_path)
    assert sessdex(tree, "index").returncode == 0
    assert AWS_KEY.encode() in catalog_bytes(tree, session)



def test_doctor_agrees_with_a_redacted_catalog(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    tree, session = planted_tree(tmp_path)
    assert sessdex(tree, "index", "--redact").returncode == 0
    monkeypatch.setenv("SESSDEX_REDACT", "1")  # doctor compares (and repairs) with the same redaction
    done = sessdex(tree, "doctor")
    assert "misread by the catalog: 0" in done.stdout
    assert done.returncode == 0, done.stdout + done.stderr
    assert not any(secret.encode() in catalog_bytes(tree, session) for secret in PLANTED)


def test_redact_is_remembered_by_the_catalog_until_no_redact(tmp_path: Path) -> None:
    tree, session = planted_tree(tmp_path)
    assert sessdex(tree, "index", "--redact").returncode == 0
    later_id = "cd34" + SESSION_ID[4:]
    later = tree.session(tree.project("proj"), later_id, [user("later key " + GITHUB_TOKEN)], mtime_ms=BASE_MS + 5000)
    done = sessdex(tree, "index")  # no flag: the catalog remembers
    assert done.returncode == 0, done.stderr
    stored = catalog_bytes(tree, session, later)
    assert b"later key" in stored and GITHUB_TOKEN.encode() not in stored
    # A read command's quick index of a new file redacts too.
    third = tree.session(tree.project("proj"), "ef56" + SESSION_ID[4:], [user("third " + JWT)], mtime_ms=BASE_MS + 9000)
    assert sessdex(tree, "search", "third").returncode == 0
    stored = catalog_bytes(tree, session, later, third)
    assert b"third" in stored and JWT.encode() not in stored
    # --no-redact forgets the setting: text indexed from then on is stored as it is.
    assert sessdex(tree, "index", "--no-redact").returncode == 0
    fourth = tree.session(tree.project("proj"), "ab78" + SESSION_ID[4:], [user("fourth " + AWS_KEY)],
                          mtime_ms=BASE_MS + 12000)
    assert sessdex(tree, "index").returncode == 0
    stored = catalog_bytes(tree, session, later, third, fourth)
    assert AWS_KEY.encode() in stored
