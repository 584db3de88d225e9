"""Usage report rows' table cells stored ready to print: `usage_totals.cells`.

Revision ID: 0006_usage_table_cells
Revises: 0005_usage_report_text
Create Date: 2026-12-01

Every usage_totals row over all models holds its line of `sessdex usage`'s table (without --json): the label,
the models and the formatted figures, sanitized, joined by a separator no cell holds (sessdex.core.usage_cells),
so that a table of 10,000 sessions formats no figure when it is printed (issue 14). On SQLite the session
report of every project reads its cells in order from an index, as it reads its --json texts. The cells are
derived from the rows already in the catalog: the upgrade renders them from usage_totals and session_files,
without reading a session file. The cell format is sessdex.core.usage_cells's (the one the table prints); the
SQL below is this revision's own copy.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision: str = "0006_usage_table_cells"
down_revision: str | None = "0005_usage_report_text"
branch_labels: str | None = None
depends_on: str | None = None

_FIGURES = "input_tokens, output_tokens, cache_read_tokens, cache_write_tokens, cost, messages, sessions"


def _render_every_row() -> None:
    from sessdex.core.usage_cells import stored_row_cells

    connection = op.get_bind()
    names = {row[0]: tuple(row) for row in connection.execute(sa.text(
        "SELECT id, session_id, path, cwd, title, substr(first_message, 1, 200) FROM session_files"
        " WHERE id IN (SELECT file_id FROM usage_totals WHERE kind = 'session')"))}
    rows = connection.execute(sa.text(
        f"SELECT id, machine, kind, scope, key, model, {_FIGURES}, file_id FROM usage_totals"
        " ORDER BY machine, kind, scope, key, model")).fetchall()
    updates = []
    start = 0
    while start < len(rows):
        end = start + 1
        while end < len(rows) and tuple(rows[end][1:5]) == tuple(rows[start][1:5]):
            end += 1
        row_id, _machine, kind, _scope, key = rows[start][:5]
        group = [tuple(row[5:]) for row in rows[start:end]]
        if group[0][0] == "":
            cells = stored_row_cells(kind, key, group, names.get(group[0][8]) if kind == "session" else None)
            updates.append({"id": row_id, "cells": cells})
        start = end
    if updates:
        connection.execute(sa.text("UPDATE usage_totals SET cells = :cells WHERE id = :id"), updates)


def upgrade() -> None:
    op.add_column("usage_totals", sa.Column("cells", sa.Text(), nullable=True))
    _render_every_row()
    if op.get_context().dialect.name == "sqlite":  # (as 0005's index of the --json texts)
        op.execute("CREATE INDEX ix_usage_totals_session_cells_by_cost ON usage_totals (machine, kind, model,"
                   " cost DESC, label, scope, cells) WHERE kind = 'session' AND model = ''")


def downgrade() -> None:
    op.execute("DROP INDEX IF EXISTS ix_usage_totals_session_cells_by_cost")
    # (ALTER TABLE, not a batch: SQLite's batch copies the table, and would lose 0005's partial index)
    op.execute("ALTER TABLE usage_totals DROP COLUMN cells")
