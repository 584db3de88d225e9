"""A PostgreSQL catalog holds files and folders whose names are not valid UTF-8 (in the stored form of
core.paths.path_to_text) and answers about them what the file scan answers."""

from __future__ import annotations

from pathlib import Path

from sessdex.catalog.queries.sessions import Catalog
from sessdex.catalog.store.location import resolve_location
from tests.catalog.test_odd_name_parity import odd_corpus
from tests.catalog.test_parity import assert_parity


def test_the_postgres_catalog_answers_about_odd_names_as_the_file_scan(tmp_path: Path, postgres_url: str) -> None:
    paths, cwds = odd_corpus(tmp_path)
    with Catalog(paths, resolve_location(paths.agent_dir, postgres_url), machine="laptop") as catalog:
        assert catalog.db.dialect == "postgresql"
        assert assert_parity(paths, catalog, cwds) > 10
        assert len(catalog.list_sessions(cwds[1])) == 2
