"""Usage facts: one row per assistant message with usage, their per-file, per-day, per-model rollup, and
every report's rows summed ahead.

Revision ID: 0002_usage_facts
Revises: 0001
Create Date: 2026-12-01

The new tables start empty: the upgrade clears every file's stat so that the next freshness pass
(or `sessdex watch`) reads each session file again and fills them; the listing columns are rewritten
with the same values on the way.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision: str = "0002_usage_facts"
down_revision: str | None = "0001"
branch_labels: str | None = None
depends_on: str | None = None

_TOKEN_COLUMNS = ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens", "cost")


def upgrade() -> None:
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
        *(sa.Column(name, sa.Float(), nullable=False) for name in _TOKEN_COLUMNS),
        sa.ForeignKeyConstraint(["file_id"], ["session_files.id"], ondelete="CASCADE",
                                name="fk_usage_facts_file_id_session_files"),
        sa.PrimaryKeyConstraint("id", name="pk_usage_facts"),
    )
    op.create_index("ix_usage_facts_file_id_entry_id", "usage_facts", ["file_id", "entry_id"])
    op.create_table(
        "usage_rollup",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("file_id", sa.Integer(), nullable=False),
        sa.Column("directory", sa.Text(), nullable=False),
        sa.Column("cwd", sa.Text(), nullable=False),
        sa.Column("day_local", sa.Text(), nullable=False),
        sa.Column("week_local", sa.Text(), nullable=False),
        sa.Column("provider", sa.Text(), nullable=False),
        sa.Column("model", sa.Text(), nullable=False),
        *(sa.Column(name, sa.Float(), nullable=False) for name in _TOKEN_COLUMNS),
        sa.Column("messages", sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(["file_id"], ["session_files.id"], ondelete="CASCADE",
                                name="fk_usage_rollup_file_id_session_files"),
        sa.PrimaryKeyConstraint("id", name="pk_usage_rollup"),
    )
    op.create_index("ix_usage_rollup_file_id", "usage_rollup", ["file_id"])
    op.create_index("ix_usage_rollup_directory_day_local", "usage_rollup", ["directory", "day_local"])
    op.create_table(
        "usage_totals",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("kind", sa.Text(), nullable=False),
        sa.Column("scope", sa.Text(), nullable=False),
        sa.Column("key", sa.Text(), nullable=False),
        sa.Column("model", sa.Text(), nullable=False),
        sa.Column("file_id", sa.Integer(), nullable=True),
        *(sa.Column(name, sa.Float(), nullable=False) for name in _TOKEN_COLUMNS),
        sa.Column("messages", sa.Integer(), nullable=False),
        sa.Column("sessions", sa.Integer(), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_usage_totals"),
    )
    op.create_index("ix_usage_totals_kind_scope_key_model", "usage_totals", ["kind", "scope", "key", "model"],
                    unique=True)
    op.create_index("ix_session_files_parent_session", "session_files", ["parent_session"])
    # Facts exist only for files read from now on. Make every file look changed (a size of -1 never matches
    # a stat) and its head different (so the change is not taken for an append): the next freshness pass,
    # or `sessdex watch`, reads each file again from the start.
    op.execute("UPDATE session_files SET size = -1, head_digest = ''")


def downgrade() -> None:
    op.drop_index("ix_session_files_parent_session", table_name="session_files")
    op.drop_index("ix_usage_totals_kind_scope_key_model", table_name="usage_totals")
    op.drop_table("usage_totals")
    op.drop_index("ix_usage_rollup_directory_day_local", table_name="usage_rollup")
    op.drop_index("ix_usage_rollup_file_id", table_name="usage_rollup")
    op.drop_table("usage_rollup")
    op.drop_index("ix_usage_facts_file_id_entry_id", table_name="usage_facts")
    op.drop_table("usage_facts")
