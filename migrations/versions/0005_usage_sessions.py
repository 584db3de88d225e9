"""The session report's rows kept ahead: one narrow row per session file with counted usage.

Revision ID: 0005_usage_sessions
Revises: 0004_pg_indexes
Create Date: 2026-12-07

`sessdex usage session` printed one row per session by joining every wide `session_files` row (its names) and
reading every per-model `usage_totals` row (its models). `usage_sessions` holds what a row shows: the file's
names, its figures summed over its rollup rows, and `models`, the JSON array of its models' names (sorted by
"provider/model", shown without the provider). The rows of an existing catalog are made here from its rollup
and file rows; from then on the indexer writes a file's row whenever it refreshes the file's rollup.

Self-contained (it imports nothing of sessdex).
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision: str = "0005_usage_sessions"
down_revision: str | None = "0004_pg_indexes"
branch_labels: str | None = None
depends_on: str | None = None

_TOKENS = ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens")
FIRST_MESSAGE_CHARS = 200  # how much of a first message the session report shows


def upgrade() -> None:
    postgresql = op.get_context().dialect.name == "postgresql"
    bytewise = sa.Text(collation="C") if postgresql else sa.Text()
    op.create_table(
        "usage_sessions",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("file_id", sa.Integer(), nullable=False),
        sa.Column("machine", sa.Text(), nullable=False),
        sa.Column("directory", bytewise, nullable=False),
        sa.Column("session_id", bytewise, nullable=True),
        sa.Column("path", bytewise, nullable=False),
        sa.Column("cwd", sa.Text(), nullable=False),
        sa.Column("title", sa.Text(), nullable=True),
        sa.Column("first_message", sa.Text(), nullable=True),
        *(sa.Column(name, sa.Float(), nullable=False) for name in _TOKENS),
        sa.Column("cost_nanos", sa.BigInteger(), nullable=False),
        sa.Column("messages", sa.Integer(), nullable=False),
        sa.Column("models", sa.Text(), nullable=False),
        sa.ForeignKeyConstraint(["file_id"], ["session_files.id"], ondelete="CASCADE",
                                name="fk_usage_sessions_file_id_session_files"),
        sa.PrimaryKeyConstraint("id", name="pk_usage_sessions"),
    )
    op.create_index("ix_usage_sessions_file_id", "usage_sessions", ["file_id"], unique=True)
    op.create_index("ix_usage_sessions_machine_directory", "usage_sessions", ["machine", "directory"])
    _fill()


def _fill() -> None:
    """Make every file's row from the catalog's rollup (figures, models) and file rows (names)."""
    bind = op.get_bind()
    sums: dict[int, list] = {}
    models: dict[int, set[str]] = {}
    for file_id, provider, model, *figures in bind.execute(sa.text(
            "SELECT file_id, provider, model, input_tokens, output_tokens, cache_read_tokens, cache_write_tokens, "
            "cost_nanos, messages FROM usage_rollup")):
        total = sums.setdefault(file_id, [0, 0, 0, 0, 0, 0])
        for index, value in enumerate(figures):
            total[index] += value
        models.setdefault(file_id, set()).add(f"{provider}/{model}")
    # Each model's name as a JSON string, quoted by the database itself (a migration imports no JSON module).
    quote = "to_json(CAST(:name AS TEXT))::text" if op.get_context().dialect.name == "postgresql" else "json_quote(:name)"
    quoted = {name: bind.execute(sa.text(f"SELECT {quote}"), {"name": name}).scalar_one()
              for name in {_model_name(key) for keys in models.values() for key in keys}}
    rows = []
    for file_id, machine, directory, session_id, path, cwd, title, first_message in bind.execute(sa.text(
            "SELECT id, machine, directory, session_id, path, cwd, title, first_message FROM session_files")):
        summed = sums.get(file_id)
        if summed is None:
            continue
        names = ",".join(quoted[_model_name(key)] for key in sorted(models[file_id]))
        rows.append({"file_id": file_id, "machine": machine, "directory": directory, "session_id": session_id,
                     "path": path, "cwd": cwd or "", "title": title,
                     "first_message": None if first_message is None else first_message[:FIRST_MESSAGE_CHARS],
                     **dict(zip(_TOKENS, summed)), "cost_nanos": int(summed[4]), "messages": int(summed[5]),
                     "models": f"[{names}]"})
    if rows:
        table = sa.table("usage_sessions", *(sa.column(name) for name in rows[0]))
        op.bulk_insert(table, rows)


def _model_name(key: str) -> str:
    """A model's name as the reports show it: its "provider/model" key without the provider."""
    return key[key.find("/") + 1:]


def downgrade() -> None:
    op.drop_table("usage_sessions")
