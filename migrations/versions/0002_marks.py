"""The marks of every machine's marks file: pins, stars, tags and notes per session id.

Revision ID: 0002_marks
Revises: 0001_baseline
Create Date: 2026-12-07

Derived data like the rest of the catalog: the rows are rebuilt from `<agent dir>/sessdex/marks.jsonl` whenever
that file changes. Self-contained (it imports nothing of sessdex).
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision: str = "0002_marks"
down_revision: str | None = "0001_baseline"
branch_labels: str | None = None
depends_on: str | None = None


def upgrade() -> None:
    postgresql = op.get_context().dialect.name == "postgresql"
    bytewise = sa.Text(collation="C") if postgresql else sa.Text()
    op.create_table(
        "session_marks",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("machine", sa.Text(), nullable=False),
        sa.Column("session_id", bytewise, nullable=False),
        sa.Column("kind", sa.Text(), nullable=False),
        sa.Column("key", sa.Text(), nullable=False),
        sa.Column("active", sa.Boolean(), nullable=False),
        sa.Column("note", sa.Text(), nullable=True),
        sa.Column("time_ms", sa.BigInteger(), nullable=False),
        sa.Column("seq", sa.Integer(), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_session_marks"),
    )
    op.create_index("ix_session_marks_machine_session_id_kind_key", "session_marks",
                    ["machine", "session_id", "kind", "key"], unique=True)


def downgrade() -> None:
    op.drop_index("ix_session_marks_machine_session_id_kind_key", table_name="session_marks")
    op.drop_table("session_marks")
    op.execute("DELETE FROM catalog_meta WHERE key LIKE 'marks_file:%'")
