"""The catalog's tables as SQLAlchemy Core metadata: the single source of truth for its schema.

Alembic migrations create and upgrade the database to match this metadata (a test runs Alembic's
`check`); the statements in `sessdex.catalog.store.statements` are built on these tables and compiled once into
`sessdex.catalog.store.compiled_sql` for the fast read path. The FTS5 tables (`message_fts`, `session_fts`) and the
triggers that keep them in sync are SQLite-only: migrations create them by hand and autogenerate
ignores them (see `is_fts_table`).
"""

from __future__ import annotations

from sqlalchemy import (
    BigInteger,
    Boolean,
    Column,
    Float,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    Table,
    Text,
    UniqueConstraint,
)

NAMING_CONVENTION = {
    "ix": "ix_%(table_name)s_%(column_0_N_name)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}

FTS_TABLE_PREFIXES = ("message_fts", "session_fts")

metadata = MetaData(naming_convention=NAMING_CONVENTION)

# One row per session file the indexer has seen. The stat columns decide freshness; `indexed_offset`
# is where the next append is read from (the start of a torn last line, if any); `summary_state` is
# the JSON state of core.summary.SessionSummary after the bytes up to `indexed_offset`. The visible
# columns (message_count, title, ...) also include the pending tail, exactly as a file scan sees it.
# `prefix_state` is the fold of the file's first 4 KB (what get_recent_sessions reads), NULL when that
# prefix holds no valid header.
session_files = Table(
    "session_files",
    metadata,
    Column("id", Integer, primary_key=True),
    # The machine whose file this is (sessdex.catalog.store.machine): a path is unique per machine only.
    Column("machine", Text, nullable=False),
    Column("path", Text, nullable=False),
    Column("directory", Text, nullable=False),
    Column("device", BigInteger, nullable=False),
    Column("inode", BigInteger, nullable=False),
    Column("size", BigInteger, nullable=False),
    Column("mtime_ns", BigInteger, nullable=False),
    Column("indexed_offset", BigInteger, nullable=False),
    Column("head_length", Integer, nullable=False),
    Column("head_digest", Text, nullable=False),
    Column("summary_state", Text, nullable=False),
    Column("unparseable_lines", Integer, nullable=False),
    Column("pending_unparseable", Integer, nullable=False),
    Column("header_valid", Boolean, nullable=False),
    Column("session_id", Text),
    Column("cwd", Text),
    Column("title", Text),
    Column("header_title", Text),
    Column("short_summary", Text),
    Column("parent_session", Text),
    Column("created", Text),
    Column("message_count", Integer, nullable=False),
    Column("entry_count", Integer, nullable=False),
    Column("first_message", Text),
    Column("prefix_state", Text),
    Column("last_entry_id", Text),
    Column("last_model", Text),
    Column("input_tokens", BigInteger, nullable=False),
    Column("output_tokens", BigInteger, nullable=False),
    Column("cache_read_tokens", BigInteger, nullable=False),
    Column("cache_write_tokens", BigInteger, nullable=False),
    Column("cost_total", Float, nullable=False),
    Column("indexed_at_ms", BigInteger, nullable=False),
    # Both indexes below cover the freshness pass's columns, so it never reads the (large) rows.
    UniqueConstraint("machine", "path"),
    # Named by hand: the conventional names would pass PostgreSQL's 63-character limit.
    Index("ix_session_files_machine_directory", "machine", "directory", "mtime_ns", "path", "device", "inode", "size"),
    Index("ix_session_files_machine_path", "machine", "path", "device", "inode", "size", "mtime_ns"),
    Index("ix_session_files_machine_session_id", "machine", "session_id"),
    Index("ix_session_files_machine_device_inode", "machine", "device", "inode"),
    Index(None, "machine", "parent_session"),  # a file's forks, whose copied usage depends on it
    # The picker's first screen: the newest rows of a machine without sorting (and reading) every row.
    Index("ix_session_files_machine_mtime_ns", "machine", "mtime_ns", "path"),
    # The picker's count and id prefix length: every listable row's id without reading the (large) rows.
    Index("ix_session_files_machine_path_listable", "machine", "path", "header_valid", "message_count", "session_id"),
)

# The searchable text of every record, in file order. Rows with `pending` set come from an
# unterminated last line and are replaced when the indexer next reads that file.
messages = Table(
    "messages",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("file_id", Integer, ForeignKey("session_files.id", ondelete="CASCADE"), nullable=False),
    Column("seq", Integer, nullable=False),
    Column("pending", Boolean, nullable=False),
    Column("text", Text, nullable=False),
    Index(None, "file_id", "seq"),
)

# One row per assistant message with usage (core.usage.UsageFact), in files with a valid header. `copied`
# marks an entry a fork or branched session copied from its parent (counted in the parent only);
# `pending` rows come from an unterminated last line, like pending `messages`.
usage_facts = Table(
    "usage_facts",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("file_id", Integer, ForeignKey("session_files.id", ondelete="CASCADE"), nullable=False),
    Column("pending", Boolean, nullable=False),
    Column("copied", Boolean, nullable=False),
    Column("entry_id", Text),
    Column("entry_timestamp", Text),
    Column("ts_ms", BigInteger, nullable=False),
    Column("day_utc", Text, nullable=False),
    Column("day_local", Text, nullable=False),
    Column("week_local", Text, nullable=False),
    Column("provider", Text, nullable=False),
    Column("model", Text, nullable=False),
    Column("input_tokens", Float, nullable=False),
    Column("output_tokens", Float, nullable=False),
    Column("cache_read_tokens", Float, nullable=False),
    Column("cache_write_tokens", Float, nullable=False),
    Column("cost_nanos", BigInteger, nullable=False),  # in nano-dollars (sessdex.core.usage.cost_nanos)
    Index(None, "file_id", "entry_id"),
)

# The counted (not copied) facts of each file summed per local day and model: what the usage reports
# read, so that a report over 10,000 sessions reads a few small rows per session instead of every message.
# `machine`, `directory` and `cwd` repeat the file's (rebuilt with its rollup whenever the file's row
# changes), so that the reports filter and group without reading the wide `session_files` rows.
# (usage_facts carry no machine of their own: they are only ever reached through their file.)
usage_rollup = Table(
    "usage_rollup",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("file_id", Integer, ForeignKey("session_files.id", ondelete="CASCADE"), nullable=False),
    Column("machine", Text, nullable=False),
    Column("directory", Text, nullable=False),
    Column("cwd", Text, nullable=False),
    Column("day_local", Text, nullable=False),
    Column("week_local", Text, nullable=False),
    Column("provider", Text, nullable=False),
    Column("model", Text, nullable=False),
    Column("input_tokens", Float, nullable=False),
    Column("output_tokens", Float, nullable=False),
    Column("cache_read_tokens", Float, nullable=False),
    Column("cache_write_tokens", Float, nullable=False),
    Column("cost_nanos", BigInteger, nullable=False),
    Column("messages", Integer, nullable=False),
    Index(None, "file_id"),
    Index("ix_usage_rollup_machine_directory_day_local", "machine", "directory", "day_local"),
)

# Every report's rows summed ahead (without --since/--until), per `machine`: per `kind` (daily, weekly,
# monthly, project, model, session, total) and `key` (the day, week, month, cwd, "provider/model", file id,
# or ""), over all models (`model` "") and per model, for one folder (`scope` = a directory) and for all of
# the machine's files (`scope` ""; session rows are kept per folder only). `sessions` counts the files with
# facts under the key: a file is in one folder of one machine, so folders and machines add up. The indexer
# keeps it in step with `usage_rollup` by subtracting a file's old rollup and adding its new one, so a
# report reads its result rows only.
usage_totals = Table(
    "usage_totals",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("machine", Text, nullable=False),
    Column("kind", Text, nullable=False),
    Column("scope", Text, nullable=False),
    Column("key", Text, nullable=False),
    Column("model", Text, nullable=False),
    Column("file_id", Integer),  # the session rows' file, for the session report's names
    Column("input_tokens", Float, nullable=False),
    Column("output_tokens", Float, nullable=False),
    Column("cache_read_tokens", Float, nullable=False),
    Column("cache_write_tokens", Float, nullable=False),
    Column("cost_nanos", BigInteger, nullable=False),
    Column("messages", Integer, nullable=False),
    Column("sessions", Integer, nullable=False),
    Index(None, "machine", "kind", "scope", "key", "model", unique=True),
)

# The session report's rows: one per session file with counted usage, its names and its figures summed over its
# rollup rows, and `models`, the JSON array of its models' names (`sessdex.core.usage.model_names`: by
# "provider/model", without the provider). The indexer writes a file's row again whenever it refreshes the file's
# rollup (its names change only with its row, which refreshes it), so the report reads these narrow rows alone
# instead of joining every wide `session_files` row and every per-model row.
usage_sessions = Table(
    "usage_sessions",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("file_id", Integer, ForeignKey("session_files.id", ondelete="CASCADE"), nullable=False),
    Column("machine", Text, nullable=False),
    Column("directory", Text, nullable=False),
    Column("session_id", Text),
    Column("path", Text, nullable=False),
    Column("cwd", Text, nullable=False),
    Column("title", Text),
    Column("first_message", Text),  # its start only (FIRST_MESSAGE_CHARS), as the report shows it
    Column("input_tokens", Float, nullable=False),
    Column("output_tokens", Float, nullable=False),
    Column("cache_read_tokens", Float, nullable=False),
    Column("cache_write_tokens", Float, nullable=False),
    Column("cost_nanos", BigInteger, nullable=False),
    Column("messages", Integer, nullable=False),
    Column("models", Text, nullable=False),
    Index(None, "file_id", unique=True),
    Index(None, "machine", "directory"),
)

# Small facts about the catalog itself (for example the sessions root of the last full scan).
catalog_meta = Table(
    "catalog_meta",
    metadata,
    Column("key", Text, primary_key=True),
    Column("value", Text, nullable=False),
)


# Every machine that wrote to the catalog: where its sessions live (to scope its rows) and the host to reach
# it at; `content` is false when it indexes metadata only (`--no-content`: no message text in the catalog).
# `home` is its home directory (NULL until it writes with sessdex 0004 or later): another machine finds the
# same project there by the path relative to the home (sessdex.catalog.queries.machine_scope).
machines = Table(
    "machines",
    metadata,
    Column("name", Text, primary_key=True),
    Column("host", Text, nullable=False),
    Column("sessions_root", Text, nullable=False),
    Column("content", Boolean, nullable=False),
    Column("home", Text),
)

# The marks (pins, stars, tags, notes) each machine's marks file holds (sessdex.core.marks): one row per machine,
# session id, `kind` ("pin", "star", "tag", "note") and `key` (the tag, else ""), the latest fact of that file about
# it. Rebuilt from the file whenever it changes (sessdex.catalog.index.marks_index); every machine sees the union,
# the latest fact across the machines deciding.
session_marks = Table(
    "session_marks",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("machine", Text, nullable=False),
    Column("session_id", Text, nullable=False),
    Column("kind", Text, nullable=False),
    Column("key", Text, nullable=False),
    Column("active", Boolean, nullable=False),
    Column("note", Text),
    Column("time_ms", BigInteger, nullable=False),
    Column("seq", Integer, nullable=False),
    Index(None, "machine", "session_id", "kind", "key", unique=True),
)

# PostgreSQL keeps its full-text columns (generated tsvectors) and their GIN / trigram indexes out of the
# metadata: they exist on that dialect only, made by migration 0003, and autogenerate ignores them.
PG_SEARCH_COLUMNS = ("text_tsv", "search_tsv")
PG_SEARCH_INDEX_SUFFIXES = ("_tsv", "_trgm")


def is_pg_search_object(name: str | None) -> bool:
    """True for PostgreSQL's generated search columns and their indexes, which autogenerate must ignore."""
    return name is not None and (name in PG_SEARCH_COLUMNS or name.endswith(PG_SEARCH_INDEX_SUFFIXES))


def is_fts_table(name: str | None) -> bool:
    """True for the hand-made FTS5 tables and their shadow tables, which autogenerate must ignore."""
    return name is not None and name.startswith(FTS_TABLE_PREFIXES)
