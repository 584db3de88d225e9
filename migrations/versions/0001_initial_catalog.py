"""Initial catalog: session files, their searchable message text, catalog facts, and the FTS5 indexes.

Revision ID: 0001
Revises:
Create Date: 2025-03-01

Migrations are never edited once released: change the schema with a new, small, named revision.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision: str = "0001"
down_revision: str | None = None
branch_labels: str | None = None
depends_on: str | None = None

# FTS5 is SQLite-only and invisible to autogenerate, so it is created by hand here. Both indexes use
# external content (the text is stored once, in `messages` / `session_files`). They are kept in sync by
# the indexer (catalog/indexer.py) rather than by triggers: FTS5 flushes its pending terms at every
# statement journal a trigger opens, which made bulk indexing several times slower.
FTS_SQL = (
    "CREATE VIRTUAL TABLE message_fts USING fts5("
    "text, content='messages', content_rowid='id', tokenize='unicode61 remove_diacritics 2')",
    "CREATE VIRTUAL TABLE session_fts USING fts5("
    "title, first_message, content='session_files', content_rowid='id', "
    "tokenize='unicode61 remove_diacritics 2')",
    # Merge 16 segments at a time instead of 4: a third less work while indexing a large corpus.
    "INSERT INTO message_fts(message_fts, rank) VALUES ('automerge', 16)",
)

FTS_DROP_SQL = (
    "DROP TABLE IF EXISTS session_fts",
    "DROP TABLE IF EXISTS message_fts",
)


def upgrade() -> None:
    op.create_table(
        "session_files",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("path", sa.Text(), nullable=False),
        sa.Column("directory", sa.Text(), nullable=False),
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
        sa.Column("session_id", sa.Text(), nullable=True),
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
        sa.Column("input_tokens", sa.BigInteger(), nullable=False),
        sa.Column("output_tokens", sa.BigInteger(), nullable=False),
        sa.Column("cache_read_tokens", sa.BigInteger(), nullable=False),
        sa.Column("cache_write_tokens", sa.BigInteger(), nullable=False),
        sa.Column("cost_total", sa.Float(), nullable=False),
        sa.Column("indexed_at_ms", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_session_files"),
        sa.UniqueConstraint("path", name="uq_session_files_path"),
    )
    op.create_index("ix_session_files_directory_mtime_ns_path_device_inode_size", "session_files",
                    ["directory", "mtime_ns", "path", "device", "inode", "size"])
    op.create_index("ix_session_files_path_device_inode_size_mtime_ns", "session_files",
                    ["path", "device", "inode", "size", "mtime_ns"])
    op.create_index("ix_session_files_session_id", "session_files", ["session_id"])
    op.create_index("ix_session_files_device_inode", "session_files", ["device", "inode"])
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
        "catalog_meta",
        sa.Column("key", sa.Text(), nullable=False),
        sa.Column("value", sa.Text(), nullable=False),
        sa.PrimaryKeyConstraint("key", name="pk_catalog_meta"),
    )
    if op.get_context().dialect.name == "sqlite":
        for statement in FTS_SQL:
            op.execute(statement)


def downgrade() -> None:
    if op.get_context().dialect.name == "sqlite":
        for statement in FTS_DROP_SQL:
            op.execute(statement)
    op.drop_table("catalog_meta")
    op.drop_index("ix_messages_file_id_seq", table_name="messages")
    op.drop_table("messages")
    op.drop_index("ix_session_files_device_inode", table_name="session_files")
    op.drop_index("ix_session_files_session_id", table_name="session_files")
    op.drop_index("ix_session_files_path_device_inode_size_mtime_ns", table_name="session_files")
    op.drop_index("ix_session_files_directory_mtime_ns_path_device_inode_size", table_name="session_files")
    op.drop_table("session_files")
