"""Usage per machine: the usage rollup and the pre-summed report rows name the machine they belong to; every
machine records its home directory.

Revision ID: 0004_usage_per_machine
Revises: 0003_machines
Create Date: 2026-12-01

- `usage_rollup.machine` and `usage_totals.machine` (the usage tables of 0002 summed every machine sharing
  a catalog together, so `sessdex usage` could neither default to this machine nor keep machines apart).
  Both tables are derived data: the upgrade makes them again from `usage_facts` and `session_files` in SQL,
  without reading a session file. On the way the fork copies are marked again within each machine only (a
  parent session of the same id or path on another machine no longer counts).
- `machines.home`: where another machine finds the same project (`~/proj` there as here).
- `session_files (machine, parent_session)` replaces the index on `parent_session`: a file's forks are looked
  for on its machine.

The SQL below is this revision's own, frozen copy of what the indexer computes (sessdex.catalog.index.usage_writer):
migrations are never edited once released.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision: str = "0004_usage_per_machine"
down_revision: str | None = "0003_machines"
branch_labels: str | None = None
depends_on: str | None = None

_FIGURES = ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens", "cost")

# Report kind -> the usage_totals key of a rollup row (SQL over usage_rollup), as in 0002's reports.
_TOTAL_KEYS = {
    "daily": "day_local",
    "weekly": "week_local",
    "monthly": "substr(day_local, 1, 7)",
    "project": "cwd",
    "model": "provider || '/' || model",
    "session": "CAST(file_id AS TEXT)",
    "total": None,
}


def _rollup_table(with_machine: bool) -> None:
    op.create_table(
        "usage_rollup",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("file_id", sa.Integer(), nullable=False),
        *([sa.Column("machine", sa.Text(), nullable=False)] if with_machine else []),
        sa.Column("directory", sa.Text(), nullable=False),
        sa.Column("cwd", sa.Text(), nullable=False),
        sa.Column("day_local", sa.Text(), nullable=False),
        sa.Column("week_local", sa.Text(), nullable=False),
        sa.Column("provider", sa.Text(), nullable=False),
        sa.Column("model", sa.Text(), nullable=False),
        *(sa.Column(name, sa.Float(), nullable=False) for name in _FIGURES),
        sa.Column("messages", sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(["file_id"], ["session_files.id"], ondelete="CASCADE",
                                name="fk_usage_rollup_file_id_session_files"),
        sa.PrimaryKeyConstraint("id", name="pk_usage_rollup"),
    )
    op.create_index("ix_usage_rollup_file_id", "usage_rollup", ["file_id"])
    if with_machine:
        op.create_index("ix_usage_rollup_machine_directory_day_local", "usage_rollup",
                        ["machine", "directory", "day_local"])
    else:
        op.create_index("ix_usage_rollup_directory_day_local", "usage_rollup", ["directory", "day_local"])


def _totals_table(with_machine: bool) -> None:
    op.create_table(
        "usage_totals",
        sa.Column("id", sa.Integer(), nullable=False),
        *([sa.Column("machine", sa.Text(), nullable=False)] if with_machine else []),
        sa.Column("kind", sa.Text(), nullable=False),
        sa.Column("scope", sa.Text(), nullable=False),
        sa.Column("key", sa.Text(), nullable=False),
        sa.Column("model", sa.Text(), nullable=False),
        sa.Column("file_id", sa.Integer(), nullable=True),
        *(sa.Column(name, sa.Float(), nullable=False) for name in _FIGURES),
        sa.Column("messages", sa.Integer(), nullable=False),
        sa.Column("sessions", sa.Integer(), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_usage_totals"),
    )
    if with_machine:
        op.create_index("ix_usage_totals_machine_kind_scope_key_model", "usage_totals",
                        ["machine", "kind", "scope", "key", "model"], unique=True)
    else:
        op.create_index("ix_usage_totals_kind_scope_key_model", "usage_totals", ["kind", "scope", "key", "model"],
                        unique=True)


def _mark_copies(same_machine: bool) -> None:
    """Mark every fork's facts copied from its parent session (named by id or by path), within one machine
    (`same_machine`, this revision) or across them (before it).

    One EXISTS per way of naming the parent, so that each finds the parent through an index
    (`machine, session_id` / `machine, path`) rather than by reading every file row for every fact.
    """
    machine = "parent_file.machine = child.machine AND " if same_machine else ""

    def copied_from(parent_column: str) -> str:
        return (" EXISTS (SELECT 1 FROM session_files child"
                " JOIN session_files parent_file ON " + machine +
                f"parent_file.{parent_column} = child.parent_session AND parent_file.id <> child.id"
                " JOIN usage_facts parent_fact ON parent_fact.file_id = parent_file.id"
                "  AND parent_fact.entry_id = usage_facts.entry_id"
                "  AND parent_fact.entry_timestamp = usage_facts.entry_timestamp"
                " WHERE child.id = usage_facts.file_id)")

    op.execute("UPDATE usage_facts SET copied = (" + copied_from("session_id") + " OR" + copied_from("path") + ")"
               " WHERE file_id IN (SELECT id FROM session_files WHERE parent_session IS NOT NULL)")


def _fill_rollup(with_machine: bool) -> None:
    machine = ["f.machine"] if with_machine else []
    columns = ", ".join(["file_id", *(["machine"] if with_machine else []), "directory", "cwd", "day_local",
                         "week_local", "provider", "model", *_FIGURES, "messages"])
    group = ", ".join(["u.file_id", *machine, "f.directory", "f.cwd", "u.day_local", "u.week_local", "u.provider",
                       "u.model"])
    sums = ", ".join(f"sum(u.{name})" for name in _FIGURES)
    op.execute(f"INSERT INTO usage_rollup ({columns}) "
               f"SELECT u.file_id, {''.join(name + ', ' for name in machine)}f.directory, coalesce(f.cwd, ''), "
               f"u.day_local, u.week_local, u.provider, u.model, {sums}, count(*) "
               f"FROM usage_facts u JOIN session_files f ON f.id = u.file_id WHERE NOT u.copied GROUP BY {group}")


def _fill_totals(with_machine: bool) -> None:
    """Every report's rows summed from the rollup (per machine with `with_machine`)."""
    sums = ", ".join(f"sum({name})" for name in _FIGURES)
    for kind, key in _TOTAL_KEYS.items():
        for per_folder in (False, True):
            if kind == "session" and not per_folder:
                continue
            for per_model in (False, True):
                if kind == "model" and per_model:
                    continue
                group = [name for name, used in (("machine", with_machine), ("directory", per_folder),
                                                 (key or "", key is not None), ("provider", per_model),
                                                 ("model", per_model), ("file_id", kind == "session")) if used]
                values = [*(["machine"] if with_machine else []), f"'{kind}'", "directory" if per_folder else "''",
                          key or "''", "provider || '/' || model" if per_model else "''",
                          "file_id" if kind == "session" else "NULL", sums, "sum(messages)",
                          "count(DISTINCT file_id)"]
                columns = ", ".join([*(["machine"] if with_machine else []), "kind", "scope", "key", "model",
                                     "file_id", *_FIGURES, "messages", "sessions"])
                grouping = f" GROUP BY {', '.join(group)}" if group else " HAVING count(*) > 0"
                op.execute(f"INSERT INTO usage_totals ({columns}) SELECT {', '.join(values)} FROM usage_rollup"
                           + grouping)


def _remake_usage(with_machine: bool) -> None:
    op.drop_table("usage_totals")
    op.drop_table("usage_rollup")
    _rollup_table(with_machine)
    _totals_table(with_machine)
    _mark_copies(same_machine=with_machine)
    _fill_rollup(with_machine)
    _fill_totals(with_machine)
    if with_machine and op.get_context().dialect.name == "postgresql":
        # Compared byte-wise, as session_files.directory is since 0003 (the reports select folder ranges).
        op.execute('ALTER TABLE usage_rollup ALTER COLUMN directory TYPE text COLLATE "C"')
        op.execute('ALTER TABLE usage_totals ALTER COLUMN scope TYPE text COLLATE "C"')


def upgrade() -> None:
    with op.batch_alter_table("machines") as batch:
        batch.add_column(sa.Column("home", sa.Text(), nullable=True))
    # A file's forks are looked for among its machine's files.
    op.drop_index("ix_session_files_parent_session", table_name="session_files")
    op.create_index("ix_session_files_machine_parent_session", "session_files", ["machine", "parent_session"])
    _remake_usage(with_machine=True)


def downgrade() -> None:
    _remake_usage(with_machine=False)
    op.drop_index("ix_session_files_machine_parent_session", table_name="session_files")
    op.create_index("ix_session_files_parent_session", "session_files", ["parent_session"])
    with op.batch_alter_table("machines") as batch:
        batch.drop_column("home")
