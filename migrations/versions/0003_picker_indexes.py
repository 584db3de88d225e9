"""Two indexes of session_files for the picker's first screen at 100,000 sessions.

Revision ID: 0003_picker_indexes
Revises: 0002_marks
Create Date: 2026-12-07

The first screen shows the newest rows of a scope and counts every listable row with its id. Without these
indexes both read every (large, several KB) row of the scope: about a second at 100,000 sessions. With them
the newest rows are walked in mtime order, and the ids come from the index alone.
Self-contained (it imports nothing of sessdex).
"""

from __future__ import annotations

from alembic import op

revision: str = "0003_picker_indexes"
down_revision: str | None = "0002_marks"
branch_labels: str | None = None
depends_on: str | None = None


def upgrade() -> None:
    op.create_index("ix_session_files_machine_mtime_ns", "session_files", ["machine", "mtime_ns", "path"])
    op.create_index("ix_session_files_machine_path_listable", "session_files",
                    ["machine", "path", "header_valid", "message_count", "session_id"])


def downgrade() -> None:
    op.drop_index("ix_session_files_machine_path_listable", table_name="session_files")
    op.drop_index("ix_session_files_machine_mtime_ns", table_name="session_files")
