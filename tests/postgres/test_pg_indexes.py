"""The PostgreSQL search columns: no trigram index is kept up to date, and the words a text gives are those of the
baseline's expression (ASCII punctuation through `translate`), down to every ASCII character."""

from __future__ import annotations

from pathlib import Path

from sessdex.catalog.store.db import open_catalog
from sessdex.catalog.store.location import resolve_location
from sessdex.catalog.store.migrate import alembic_on

PUNCTUATION = "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~"
BASELINE_WORDS = ("to_tsvector('simple'::regconfig, sessdex_fold(translate(text, "
                  f"'{PUNCTUATION.replace(chr(39), chr(39) * 2)}', '{' ' * len(PUNCTUATION)}')))")
TEXTS = [
    "".join(chr(code) for code in range(1, 128)),
    *(f"a{chr(code)}b x{chr(code)}{chr(code)}y" for code in range(1, 128)),
    "Crème brûlée, naïve façade: l'été — «½» ©2024 foo-bar.baz/qux@example.com https://x.y/z?q=1&r=2",
    "version 1.2.3 -5.5e+10 <b>tag</b> &amp; under_score path/to/file.py C:\\dir\\file",
]


def _trigram_indexes(url: str) -> set[str]:
    import psycopg

    with psycopg.connect(url) as connection:
        return {row[0] for row in connection.execute(
            "SELECT indexname FROM pg_indexes WHERE schemaname = 'public' AND indexdef LIKE '%gin_trgm_ops%'")}


def _words_differ(url: str) -> list[tuple[str, str, str]]:
    """(text, the column's words, the baseline expression's words) of every text where they differ."""
    import psycopg

    with psycopg.connect(url) as connection:
        connection.execute("CREATE TEMP TABLE probe (LIKE messages INCLUDING GENERATED)")
        with connection.cursor() as cursor:
            cursor.executemany("INSERT INTO probe (id, file_id, seq, pending, text) VALUES (%s, 1, %s, false, %s)",
                               [(index, index, text) for index, text in enumerate(TEXTS)])
        rows = connection.execute(f"SELECT text, text_tsv::text, ({BASELINE_WORDS})::text FROM probe "
                                  "ORDER BY id").fetchall()
    assert len(rows) == len(TEXTS)
    return [row for row in rows if row[1] != row[2]]


def test_no_trigram_index_and_the_words_of_every_ascii_character_are_the_baselines(postgres_url: str,
                                                                                   tmp_path: Path):
    from alembic import command

    location = resolve_location(tmp_path, postgres_url)
    open_catalog(location, machine="here").close()
    assert _trigram_indexes(postgres_url) == set()
    assert _words_differ(postgres_url) == []
    with alembic_on(location) as config:  # down and up again: the indexes come back, then go
        command.downgrade(config, "0003_picker_indexes")
    assert len(_trigram_indexes(postgres_url)) == 3
    assert _words_differ(postgres_url) == []
    with alembic_on(location) as config:
        command.upgrade(config, "head")
    assert _trigram_indexes(postgres_url) == set()
    assert _words_differ(postgres_url) == []
