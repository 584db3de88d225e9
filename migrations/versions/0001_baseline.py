"""The catalog: session files, their searchable text, usage facts with their rollups, machines, catalog facts.

Revision ID: 0001_baseline
Revises:
Create Date: 2026-12-03

The catalog is derived data: a catalog made by an older sessdex (any revision before this one) is emptied and
indexed again from the session files (sessdex.catalog.store.migrate), never migrated. This revision is
self-contained (it imports nothing of sessdex), so that it never changes when the product code does.

SQLite: the full-text indexes are FTS5 tables over external content (`messages.text`; `session_files.title`
and `first_message`), kept in step by the indexer rather than by triggers (FTS5 flushes its pending terms at
every statement journal a trigger opens, which made bulk indexing several times slower).

PostgreSQL: paths, folders and ids compare byte-wise (COLLATE "C", as SQLite and Python compare them, so that
range conditions select the same rows on both); full text is a generated `tsvector` per message and per
session (title weighted above the first message) with GIN indexes, fed to the `simple` configuration after
ASCII punctuation becomes spaces and accents go (`unaccent`), so that words split as SQLite's unicode61
tokenizer splits them; the substring search goes through trigram indexes.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision: str = "0001_baseline"
down_revision: str | None = None
branch_labels: str | None = None
depends_on: str | None = None

SQLITE_FTS = (
    "CREATE VIRTUAL TABLE message_fts USING fts5("
    "text, content='messages', content_rowid='id', tokenize='unicode61 remove_diacritics 2')",
    "CREATE VIRTUAL TABLE session_fts USING fts5("
    "title, first_message, content='session_files', content_rowid='id', "
    "tokenize='unicode61 remove_diacritics 2')",
    # Merge 16 segments at a time instead of 4: a third less work while indexing a large corpus.
    "INSERT INTO message_fts(message_fts, rank) VALUES ('automerge', 16)",
)

PUNCTUATION = "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~"


def _words(column: str) -> str:
    """The tsvector of a text column's words: ASCII punctuation becomes spaces, accents go, then `simple`."""
    return (f"to_tsvector('simple'::regconfig, sessdex_fold(translate({column}, "
            f"'{PUNCTUATION.replace(chr(39), chr(39) * 2)}', '{' ' * len(PUNCTUATION)}')))")


POSTGRESQL_SEARCH = (
    # unaccent() is only STABLE (its dictionary could change); a generated column needs an IMMUTABLE function.
    "CREATE EXTENSION IF NOT EXISTS unaccent",
    "CREATE FUNCTION sessdex_fold(text) RETURNS text LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE "
    "SET search_path FROM CURRENT AS $$ SELECT unaccent('unaccent'::regdictionary, $1) $$",
    "ALTER TABLE messages ADD COLUMN text_tsv tsvector GENERATED ALWAYS AS (" + _words("text") + ") STORED",
    "CREATE INDEX ix_messages_text_tsv ON messages USING gin (text_tsv)",
    "ALTER TABLE session_files ADD COLUMN search_tsv tsvector GENERATED ALWAYS AS ("
    "setweight(" + _words("coalesce(title, '')") + ", 'A') || "
    "setweight(" + _words("coalesce(first_message, '')") + ", 'B')) STORED",
    "CREATE INDEX ix_session_files_search_tsv ON session_files USING gin (search_tsv)",
    "CREATE EXTENSION IF NOT EXISTS pg_trgm",
    "CREATE INDEX ix_messages_text_trgm ON messages USING gin (text gin_trgm_ops)",
    "CREATE INDEX ix_session_files_title_trgm ON session_files USING gin (title gin_trgm_ops)",
    "CREATE INDEX ix_session_files_first_message_trgm ON session_files USING gin (first_message gin_trgm_ops)",
)

_TOKENS = ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens")


def upgrade() -> None:
    postgresql = op.get_context().dialect.name == "postgresql"
    bytewise = sa.Text(collation="C") if postgresql else sa.Text()
    op.create_table(
        "session_files",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("path", bytewise, nullable=False),
        sa.Column("directory", bytewise, nullable=False),
        sa.Column("device", sa.BigInteger(), nullable=False),
        sa.Column("inode", sa.BigInteger(), nullable=False),
        sa.Column("size", sa.BigInteger(), nullable=False),
        sa.Column("mtime_ns", sa.BigInteger(), nullable=False),
        sa.Column("indexed_offset", sa.BigInteger(), nullable=False),
        sa.Column("head_length", sa.Integer(), nullable=False),
        sa.Column("head_digest", sa.Text(), nullable=False),
        sa.Column("summary_state", sa.Text(), nullable=False),
        sa.Column("unparseable_lines", sa.Integer(), nullable=False),
        sa.Column("pending_unparseable", sa.Integer(), nullable=False),
        sa.Column("header_valid", sa.Boolean(), nullable=False),
        sa.Column("session_id", bytewise, nullable=True),
        sa.Column("cwd", sa.Text(), nullable=True),
        sa.Column("title", sa.Text(), nullable=True),
        sa.Column("header_title", sa.Text(), nullable=True),
        sa.Column("short_summary", sa.Text(), nullable=True),
        sa.Column("parent_session", sa.Text(), nullable=True),
        sa.Column("created", sa.Text(), nullable=True),
        sa.Column("message_count", sa.Integer(), nullable=False),
        sa.Column("entry_count", sa.Integer(), nullable=False),
        sa.Column("first_message", sa.Text(), nullable=True),
        sa.Column("prefix_state", sa.Text(), nullable=True),
        sa.Column("last_entry_id", sa.Text(), nullable=True),
        sa.Column("last_model", sa.Text(), nullable=True),
        *(sa.Column(name, sa.BigInteger(), nullable=False) for name in _TOKENS),
        sa.Column("cost_total", sa.Float(), nullable=False),
        sa.Column("indexed_at_ms", sa.BigInteger(), nullable=False),
        sa.Column("machine", sa.Text(), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_session_files"),
        sa.UniqueConstraint("machine", "path", name="uq_session_files_machine_path"),
    )
    op.create_index("ix_session_files_machine_directory", "session_files",
                    ["machine", "directory", "mtime_ns", "path", "device", "inode", "size"])
    op.create_index("ix_session_files_machine_path", "session_files",
                    ["machine", "path", "device", "inode", "size", "mtime_ns"])
    op.create_index("ix_session_files_machine_session_id", "session_files", ["machine", "session_id"])
    op.create_index("ix_session_files_machine_device_inode", "session_files", ["machine", "device", "inode"])
    op.create_index("ix_session_files_machine_parent_session", "session_files", ["machine", "parent_session"])
    op.create_table(
        "messages",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("file_id", sa.Integer(), nullable=False),
        sa.Column("seq", sa.Integer(), nullable=False),
        sa.Column("pending", sa.Boolean(), nullable=False),
        sa.Column("text", sa.Text(), nullable=False),
        sa.ForeignKeyConstraint(["file_id"], ["session_files.id"], ondelete="CASCADE",
                                name="fk_messages_file_id_session_files"),
        sa.PrimaryKeyConstraint("id", name="pk_messages"),
    )
    op.create_index("ix_messages_file_id_seq", "messages", ["file_id", "seq"])
    op.create_table(
        "usage_facts",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("file_id", sa.Integer(), nullable=False),
        sa.Column("pending", sa.Boolean(), nullable=False),
        sa.Column("copied", sa.Boolean(), nullable=False),
        sa.Column("entry_id", sa.Text(), nullable=True),
        sa.Column("entry_timestamp", sa.Text(), nullable=True),
        sa.Column("ts_ms", sa.BigInteger(), nullable=False),
        sa.Column("day_utc", sa.Text(), nullable=False),
        sa.Column("day_local", sa.Text(), nullable=False),
        sa.Column("week_local", sa.Text(), nullable=False),
        sa.Column("provider", sa.Text(), nullable=False),
        sa.Column("model", sa.Text(), nullable=False),
        *(sa.Column(name, sa.Float(), nullable=False) for name in _TOKENS),
        sa.Column("cost_nanos", sa.BigInteger(), nullable=False),
        sa.ForeignKeyConstraint(["file_id"], ["session_files.id"], ondelete="CASCADE",
                                name="fk_usage_facts_file_id_session_files"),
        sa.PrimaryKeyConstraint("id", name="pk_usage_facts"),
    )
    op.create_index("ix_usage_facts_file_id_entry_id", "usage_facts", ["file_id", "entry_id"])
    op.create_table(
        "usage_rollup",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("file_id", sa.Integer(), nullable=False),
        sa.Column("machine", sa.Text(), nullable=False),
        sa.Column("directory", bytewise, nullable=False),
        sa.Column("cwd", sa.Text(), nullable=False),
        sa.Column("day_local", sa.Text(), nullable=False),
        sa.Column("week_local", sa.Text(), nullable=False),
        sa.Column("provider", sa.Text(), nullable=False),
        sa.Column("model", sa.Text(), nullable=False),
        *(sa.Column(name, sa.Float(), nullable=False) for name in _TOKENS),
        sa.Column("cost_nanos", sa.BigInteger(), nullable=False),
        sa.Column("messages", sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(["file_id"], ["session_files.id"], ondelete="CASCADE",
                                name="fk_usage_rollup_file_id_session_files"),
        sa.PrimaryKeyConstraint("id", name="pk_usage_rollup"),
    )
    op.create_index("ix_usage_rollup_file_id", "usage_rollup", ["file_id"])
    op.create_index("ix_usage_rollup_machine_directory_day_local", "usage_rollup",
                    ["machine", "directory", "day_local"])
    op.create_table(
        "usage_totals",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("machine", sa.Text(), nullable=False),
        sa.Column("kind", sa.Text(), nullable=False),
        sa.Column("scope", bytewise, nullable=False),
        sa.Column("key", sa.Text(), nullable=False),
        sa.Column("model", sa.Text(), nullable=False),
        sa.Column("file_id", sa.Integer(), nullable=True),
        *(sa.Column(name, sa.Float(), nullable=False) for name in _TOKENS),
        sa.Column("cost_nanos", sa.BigInteger(), nullable=False),
        sa.Column("messages", sa.Integer(), nullable=False),
        sa.Column("sessions", sa.Integer(), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_usage_totals"),
    )
    op.create_index("ix_usage_totals_machine_kind_scope_key_model", "usage_totals",
                    ["machine", "kind", "scope", "key", "model"], unique=True)
    op.create_table(
        "catalog_meta",
        sa.Column("key", sa.Text(), nullable=False),
        sa.Column("value", sa.Text(), nullable=False),
        sa.PrimaryKeyConstraint("key", name="pk_catalog_meta"),
    )
    op.create_table(
        "machines",
        sa.Column("name", sa.Text(), nullable=False),
        sa.Column("host", sa.Text(), nullable=False),
        sa.Column("sessions_root", sa.Text(), nullable=False),
        sa.Column("content", sa.Boolean(), nullable=False),
        sa.Column("home", sa.Text(), nullable=True),
        sa.PrimaryKeyConstraint("name", name="pk_machines"),
    )
    for statement in POSTGRESQL_SEARCH if postgresql else SQLITE_FTS:
        op.execute(statement)


def downgrade() -> None:
    dialect = op.get_context().dialect.name
    if dialect == "sqlite":
        op.execute("DROP TABLE IF EXISTS session_fts")
        op.execute("DROP TABLE IF EXISTS message_fts")
    for table in ("machines", "catalog_meta", "usage_totals", "usage_rollup", "usage_facts", "messages",
                  "session_files"):
        op.drop_table(table)
    if dialect == "postgresql":
        op.execute("DROP FUNCTION IF EXISTS sessdex_fold(text)")
