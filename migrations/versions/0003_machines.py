"""Machines: every session file row names the machine it came from; PostgreSQL gets its own full-text search.

Revision ID: 0003_machines
Revises: 0002_usage_facts
Create Date: 2026-12-01

- `session_files.machine` (existing rows: this machine, as the caller of the upgrade names it, else the
  host name); a path is unique per machine; the indexes lead with the machine, since every query of the
  catalog is about one machine's rows.
- `machines`: each machine's sessions root, host, and whether it stores message text.
- PostgreSQL only: paths and ids compare byte-wise (COLLATE "C", as SQLite and Python compare them, so
  that the range conditions on them select what they select on SQLite), and full text is a generated
  `tsvector` per message and per session (title weighted above the first message) with GIN indexes.
  The text is fed to the `simple` configuration with ASCII punctuation turned into spaces and accents
  removed (the `unaccent` extension, shipped with PostgreSQL) first, so
  that words are split as SQLite's unicode61 tokenizer splits them (letters and digits runs): the same
  queries match the same sessions on both.

Migrations are never edited once released: change the schema with a new, small, named revision.
"""

from __future__ import annotations

import os

import sqlalchemy as sa
from alembic import context, op

revision: str = "0003_machines"
down_revision: str | None = "0002_usage_facts"
branch_labels: str | None = None
depends_on: str | None = None

PUNCTUATION = "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~"


def _words(column: str) -> str:
    """The tsvector of a text column's words: ASCII punctuation becomes spaces, accents go (as FTS5's
    remove_diacritics does), then the `simple` configuration."""
    return (f"to_tsvector('simple'::regconfig, sessdex_fold(translate({column}, "
            f"'{PUNCTUATION.replace(chr(39), chr(39) * 2)}', '{' ' * len(PUNCTUATION)}')))")


POSTGRESQL_UP = (
    # unaccent() is only STABLE (its dictionary could change); a generated column needs an IMMUTABLE function.
    "CREATE EXTENSION IF NOT EXISTS unaccent",
    "CREATE FUNCTION sessdex_fold(text) RETURNS text LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE "
    "SET search_path FROM CURRENT AS $$ SELECT unaccent('unaccent'::regdictionary, $1) $$",
    "ALTER TABLE session_files ALTER COLUMN path TYPE text COLLATE \"C\"",
    "ALTER TABLE session_files ALTER COLUMN directory TYPE text COLLATE \"C\"",
    "ALTER TABLE session_files ALTER COLUMN session_id TYPE text COLLATE \"C\"",
    "ALTER TABLE messages ADD COLUMN text_tsv tsvector GENERATED ALWAYS AS ("
    + _words("text") + ") STORED",
    "CREATE INDEX ix_messages_text_tsv ON messages USING gin (text_tsv)",
    "ALTER TABLE session_files ADD COLUMN search_tsv tsvector GENERATED ALWAYS AS ("
    "setweight(" + _words("coalesce(title, '')") + ", 'A') || "
    "setweight(" + _words("coalesce(first_message, '')") + ", 'B')) STORED",
    "CREATE INDEX ix_session_files_search_tsv ON session_files USING gin (search_tsv)",
    # The substring fallback of search (`mit` in `commit`): ILIKE through trigram indexes.
    "CREATE EXTENSION IF NOT EXISTS pg_trgm",
    "CREATE INDEX ix_messages_text_trgm ON messages USING gin (text gin_trgm_ops)",
    "CREATE INDEX ix_session_files_title_trgm ON session_files USING gin (title gin_trgm_ops)",
    "CREATE INDEX ix_session_files_first_message_trgm ON session_files USING gin (first_message gin_trgm_ops)",
)
POSTGRESQL_DOWN = (
    "DROP INDEX IF EXISTS ix_session_files_first_message_trgm",
    "DROP INDEX IF EXISTS ix_session_files_title_trgm",
    "DROP INDEX IF EXISTS ix_messages_text_trgm",
    "DROP INDEX IF EXISTS ix_session_files_search_tsv",
    "ALTER TABLE session_files DROP COLUMN IF EXISTS search_tsv",
    "DROP INDEX IF EXISTS ix_messages_text_tsv",
    "ALTER TABLE messages DROP COLUMN IF EXISTS text_tsv",
    "DROP FUNCTION IF EXISTS sessdex_fold(text)",
)

OLD_INDEXES = {
    "ix_session_files_directory_mtime_ns_path_device_inode_size": ["directory", "mtime_ns", "path", "device", "inode",
                                                                   "size"],
    "ix_session_files_path_device_inode_size_mtime_ns": ["path", "device", "inode", "size", "mtime_ns"],
    "ix_session_files_session_id": ["session_id"],
    "ix_session_files_device_inode": ["device", "inode"],
}


def _this_machine() -> str:
    """The machine existing rows belong to: what sessdex passed in, else the host name."""
    return context.config.attributes.get("machine") or os.uname().nodename or "localhost"


def upgrade() -> None:
    op.create_table(
        "machines",
        sa.Column("name", sa.Text(), nullable=False),
        sa.Column("host", sa.Text(), nullable=False),
        sa.Column("sessions_root", sa.Text(), nullable=False),
        sa.Column("content", sa.Boolean(), nullable=False),
        sa.PrimaryKeyConstraint("name", name="pk_machines"),
    )
    for name in OLD_INDEXES:
        op.drop_index(name, table_name="session_files")
    with op.batch_alter_table("session_files") as batch:
        batch.add_column(sa.Column("machine", sa.Text(), nullable=False, server_default=_this_machine()))
        batch.drop_constraint("uq_session_files_path", type_="unique")
        batch.create_unique_constraint("uq_session_files_machine_path", ["machine", "path"])
    with op.batch_alter_table("session_files") as batch:
        batch.alter_column("machine", server_default=None, existing_type=sa.Text(), existing_nullable=False)
    op.create_index("ix_session_files_machine_directory", "session_files",
                    ["machine", "directory", "mtime_ns", "path", "device", "inode", "size"])
    op.create_index("ix_session_files_machine_path", "session_files",
                    ["machine", "path", "device", "inode", "size", "mtime_ns"])
    op.create_index("ix_session_files_machine_session_id", "session_files", ["machine", "session_id"])
    op.create_index("ix_session_files_machine_device_inode", "session_files", ["machine", "device", "inode"])
    if op.get_context().dialect.name == "postgresql":
        for statement in POSTGRESQL_UP:
            op.execute(statement)


def downgrade() -> None:
    if op.get_context().dialect.name == "postgresql":
        for statement in POSTGRESQL_DOWN:
            op.execute(statement)
    for name in ("ix_session_files_machine_device_inode", "ix_session_files_machine_session_id",
                 "ix_session_files_machine_path",
                 "ix_session_files_machine_directory"):
        op.drop_index(name, table_name="session_files")
    # Rows of other machines cannot live in the old schema (a path was unique): only this machine's are kept.
    for statement in ("DELETE FROM messages WHERE file_id IN (SELECT id FROM session_files WHERE machine != :machine)",
                      "DELETE FROM session_files WHERE machine != :machine"):
        op.execute(sa.text(statement).bindparams(machine=_this_machine()))
    with op.batch_alter_table("session_files") as batch:
        batch.drop_constraint("uq_session_files_machine_path", type_="unique")
        batch.create_unique_constraint("uq_session_files_path", ["path"])
        batch.drop_column("machine")
    for name, columns in OLD_INDEXES.items():
        op.create_index(name, "session_files", columns)
    op.drop_table("machines")
