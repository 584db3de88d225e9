"""Changes to the usage report rows drop their machine's ready-report token (and figures their stale cells):
triggers on `usage_totals`.

Revision ID: 0007_usage_report_tokens
Revises: 0006_usage_table_cells
Create Date: 2026-12-01

`sessdex usage KIND --all --json` prints a ready file named by a token the renderer keeps in `catalog_meta`
(`usage_reports_token:<machine>`, sessdex.catalog.store.report_files) while that token is there. These triggers
delete a machine's token in the same transaction as any insert, update or delete of its usage_totals rows,
whatever process writes them and whatever its version (a `sessdex watch` started before an upgrade keeps
writing with its own code): no file rendered from rows that changed since is ever printed.

A row's figures changed by an UPDATE that does not write its table cells also clear them (`cells`, revision
0006): sessdex renders them again in the same transaction, but a writer from before 0006 never does, and the
table would otherwise print the old figures. A row without cells is summed instead (sessdex.catalog.store.usage_cells).
"""

from __future__ import annotations

from alembic import op

revision: str = "0007_usage_report_tokens"
down_revision: str | None = "0006_usage_table_cells"
branch_labels: str | None = None
depends_on: str | None = None

_TOKEN = "'usage_reports_token:' || "
_FIGURES = ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens", "cost", "messages", "sessions")
_SQLITE_TRIGGERS = ("inserted", "updated", "deleted")
_POSTGRESQL_TRIGGERS = (("usage_totals_inserted_drop_tokens", "INSERT", "NEW"),
                        ("usage_totals_updated_drop_tokens", "UPDATE", "NEW"),
                        ("usage_totals_updated_away_drop_tokens", "UPDATE", "OLD"),
                        ("usage_totals_deleted_drop_tokens", "DELETE", "OLD"))


def upgrade() -> None:
    op.execute("DELETE FROM catalog_meta WHERE \"key\" LIKE 'usage_reports_token:%'")  # (none but a test build's)
    if op.get_context().dialect.name == "sqlite":
        op.execute("CREATE TRIGGER usage_totals_inserted_drop_token AFTER INSERT ON usage_totals BEGIN"
                   f' DELETE FROM catalog_meta WHERE "key" = {_TOKEN}NEW.machine; END')
        op.execute("CREATE TRIGGER usage_totals_updated_drop_token AFTER UPDATE ON usage_totals BEGIN"
                   f' DELETE FROM catalog_meta WHERE "key" IN ({_TOKEN}OLD.machine, {_TOKEN}NEW.machine); END')
        op.execute("CREATE TRIGGER usage_totals_deleted_drop_token AFTER DELETE ON usage_totals BEGIN"
                   f' DELETE FROM catalog_meta WHERE "key" = {_TOKEN}OLD.machine; END')
        op.execute(f"CREATE TRIGGER usage_totals_figures_clear_cells AFTER UPDATE OF {', '.join(_FIGURES)}"
                   " ON usage_totals BEGIN UPDATE usage_totals SET cells = NULL WHERE id = NEW.id; END")
        return
    # PostgreSQL: one statement-level trigger per event, each dropping the tokens of the machines its rows are of.
    op.execute("CREATE FUNCTION usage_totals_drop_tokens() RETURNS trigger LANGUAGE plpgsql"
               " SET search_path FROM CURRENT AS $$ BEGIN"
               f' DELETE FROM catalog_meta WHERE "key" IN (SELECT {_TOKEN}machine FROM changed_rows);'
               " RETURN NULL; END $$")
    for name, event, rows in _POSTGRESQL_TRIGGERS:
        op.execute(f"CREATE TRIGGER {name} AFTER {event} ON usage_totals REFERENCING {rows} TABLE AS changed_rows"
                   " FOR EACH STATEMENT EXECUTE FUNCTION usage_totals_drop_tokens()")
    new, old = (", ".join(f"{row}.{name}" for name in _FIGURES) for row in ("NEW", "OLD"))
    op.execute("CREATE FUNCTION usage_totals_clear_cells() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN"
               f" IF ({new}) IS DISTINCT FROM ({old}) THEN NEW.cells := NULL; END IF; RETURN NEW; END $$")
    op.execute(f"CREATE TRIGGER usage_totals_figures_clear_cells BEFORE UPDATE OF {', '.join(_FIGURES)}"
               " ON usage_totals FOR EACH ROW EXECUTE FUNCTION usage_totals_clear_cells()")


def downgrade() -> None:
    if op.get_context().dialect.name == "sqlite":
        for event in _SQLITE_TRIGGERS:
            op.execute(f"DROP TRIGGER IF EXISTS usage_totals_{event}_drop_token")
        op.execute("DROP TRIGGER IF EXISTS usage_totals_figures_clear_cells")
        return
    for name, _event, _rows in _POSTGRESQL_TRIGGERS:
        op.execute(f"DROP TRIGGER IF EXISTS {name} ON usage_totals")
    op.execute("DROP TRIGGER IF EXISTS usage_totals_figures_clear_cells ON usage_totals")
    op.execute("DROP FUNCTION IF EXISTS usage_totals_drop_tokens()")
    op.execute("DROP FUNCTION IF EXISTS usage_totals_clear_cells()")
