"""Usage report rows stored ready to print: `usage_totals.json` and `usage_totals.label`.

Revision ID: 0005_usage_report_text
Revises: 0004_usage_per_machine
Create Date: 2026-12-01

Every usage_totals row over all models holds its object in `sessdex usage --json` (a session row with the
session's names from its file row; every string escaped for a terminal) and its order among rows of equal cost
(a session's id, else the key), so that a report of one scope joins stored texts instead of formatting 10,000
rows (issue 14); on SQLite the session report of every project reads its texts in order from an index. Both
are derived from the rows already in the catalog: the upgrade renders them from usage_totals and session_files,
without reading a session file. The text format is sessdex.core.usage_json's (the one --json prints); the SQL
below is this revision's own copy.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision: str = "0005_usage_report_text"
down_revision: str | None = "0004_usage_per_machine"
branch_labels: str | None = None
depends_on: str | None = None

_FIGURES = "input_tokens, output_tokens, cache_read_tokens, cache_write_tokens, cost, messages, sessions"


def _render_every_row() -> None:
    from sessdex.core.usage_json import stored_row_json

    connection = op.get_bind()
    names = {row[0]: tuple(row) for row in connection.execute(sa.text(
        "SELECT id, session_id, path, cwd, title, substr(first_message, 1, 200) FROM session_files"
        " WHERE id IN (SELECT file_id FROM usage_totals WHERE kind = 'session')"))}
    rows = connection.execute(sa.text(
        f"SELECT machine, kind, scope, key, model, {_FIGURES}, file_id FROM usage_totals"
        " ORDER BY machine, kind, scope, key, model")).fetchall()
    updates = []
    start = 0
    while start < len(rows):
        end = start + 1
        while end < len(rows) and tuple(rows[end][:4]) == tuple(rows[start][:4]):
            end += 1
        machine, kind, scope, key = rows[start][:4]
        group = [tuple(row[4:]) for row in rows[start:end]]
        if group[0][0] == "":
            text, label = stored_row_json(kind, key, group, names.get(group[0][8]) if kind == "session" else None)
            updates.append({"machine": machine, "kind": kind, "scope": scope, "key": key, "json": text,
                            "label": label})
        start = end
    if updates:
        connection.execute(sa.text("UPDATE usage_totals SET json = :json, label = :label WHERE machine = :machine"
                                   " AND kind = :kind AND scope = :scope AND key = :key AND model = ''"), updates)


def upgrade() -> None:
    with op.batch_alter_table("usage_totals") as batch:
        batch.add_column(sa.Column("label", sa.Text(), nullable=True))
        batch.add_column(sa.Column("json", sa.Text(), nullable=True))
    _render_every_row()
    if op.get_context().dialect.name == "sqlite":  # (PostgreSQL index entries cannot hold such texts)
        # (kind and model in it too, or SQLite reads each row from the table to check them)
        op.execute("CREATE INDEX ix_usage_totals_sessions_by_cost ON usage_totals (machine, kind, model, cost DESC,"
                   " label, scope, json) WHERE kind = 'session' AND model = ''")


def downgrade() -> None:
    op.execute("DROP INDEX IF EXISTS ix_usage_totals_sessions_by_cost")
    with op.batch_alter_table("usage_totals") as batch:
        batch.drop_column("json")
        batch.drop_column("label")
