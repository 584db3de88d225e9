"""PostgreSQL: no trigram indexes, and the full-text words computed four times faster.

Revision ID: 0004_pg_indexes
Revises: 0003_picker_indexes
Create Date: 2026-12-07

A first index of a machine's files spent most of the server's time on two things no reader needed:

- the trigram (`pg_trgm`) indexes. Those of `session_files.title` and `first_message` are used by no statement
  (the substring search tests `coalesce(title, '') ILIKE ...`, an expression those indexes do not cover). That of
  `messages.text` served only the substring search, which runs when the user asks for it (`search --substring`)
  and full text found nothing; without it that search reads the messages, as it does on SQLite (about 0.1 s per
  10 MB of message text), and a first index costs half as much server time.
- `translate()` turning ASCII punctuation into spaces before the words are cut: it compares every character
  with each of the 32 punctuation characters, and took more than half of the time of the generated `tsvector`
  columns. `regexp_replace` with the same 32 characters as one bracket expression gives the same text in a
  quarter of the time. The generated columns are made again with it (PostgreSQL 15 cannot change a generated
  column's expression in place), with their GIN indexes; the words are the same, so search answers do not change.

SQLite is unchanged. Self-contained (it imports nothing of sessdex).
"""

from __future__ import annotations

from alembic import op

revision: str = "0004_pg_indexes"
down_revision: str | None = "0003_picker_indexes"
branch_labels: str | None = None
depends_on: str | None = None

PUNCTUATION = "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~"
# The same 32 characters as ranges of one bracket expression: ! to /, : to @, [ to ` and { to ~.
PUNCTUATION_CLASS = "[!-/:-@[-`{-~]"


def _words(column: str) -> str:
    """The tsvector of a text column's words: ASCII punctuation becomes spaces, accents go, then `simple`."""
    return f"to_tsvector('simple'::regconfig, sessdex_fold(regexp_replace({column}, '{PUNCTUATION_CLASS}', ' ', 'g')))"


def _words_before(column: str) -> str:
    """The expression of revision 0001_baseline (for the downgrade)."""
    return (f"to_tsvector('simple'::regconfig, sessdex_fold(translate({column}, "
            f"'{PUNCTUATION.replace(chr(39), chr(39) * 2)}', '{' ' * len(PUNCTUATION)}')))")


def _search_columns(baseline: bool) -> tuple[str, ...]:
    """The generated search columns made again (with the baseline's expression or this revision's), and their GIN
    indexes."""
    words = _words_before if baseline else _words
    return (
        "ALTER TABLE messages DROP COLUMN text_tsv",
        "ALTER TABLE messages ADD COLUMN text_tsv tsvector GENERATED ALWAYS AS (" + words("text") + ") STORED",
        "CREATE INDEX ix_messages_text_tsv ON messages USING gin (text_tsv)",
        "ALTER TABLE session_files DROP COLUMN search_tsv",
        "ALTER TABLE session_files ADD COLUMN search_tsv tsvector GENERATED ALWAYS AS ("
        "setweight(" + words("coalesce(title, '')") + ", 'A') || "
        "setweight(" + words("coalesce(first_message, '')") + ", 'B')) STORED",
        "CREATE INDEX ix_session_files_search_tsv ON session_files USING gin (search_tsv)",
    )


UPGRADE = (
    "DROP INDEX IF EXISTS ix_messages_text_trgm",
    "DROP INDEX IF EXISTS ix_session_files_title_trgm",
    "DROP INDEX IF EXISTS ix_session_files_first_message_trgm",
    *_search_columns(baseline=False),
)

DOWNGRADE = (
    *_search_columns(baseline=True),
    "CREATE INDEX ix_messages_text_trgm ON messages USING gin (text gin_trgm_ops)",
    "CREATE INDEX ix_session_files_title_trgm ON session_files USING gin (title gin_trgm_ops)",
    "CREATE INDEX ix_session_files_first_message_trgm ON session_files USING gin (first_message gin_trgm_ops)",
)


def upgrade() -> None:
    if op.get_context().dialect.name == "postgresql":
        for statement in UPGRADE:
            op.execute(statement)


def downgrade() -> None:
    if op.get_context().dialect.name == "postgresql":
        for statement in DOWNGRADE:
            op.execute(statement)
