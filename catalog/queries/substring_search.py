"""The search fallback when full text finds nothing: every word as a case-insensitive substring (`mit` in `commit`).

As the prompt-history search falls back to substrings, so can the catalog's search: a session matches when
each word is inside its title, its first message or one of its messages. Both catalogs read the scope's texts
(no index covers substrings: keeping trigram indexes up to date cost a PostgreSQL first index half of its
server time, for a search that runs only when asked for and full text found nothing): `ILIKE` on PostgreSQL,
`instr` on the lower-cased text on SQLite (ASCII case folding only). Sessions come newest first.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sessdex.catalog.store import fts

_MATCHES = """
SELECT session_files.id AS file_id, session_files.title AS title, session_files.first_message AS first_message
FROM session_files
WHERE session_files.header_valid AND session_files.message_count > 0 {scope} AND {terms}
ORDER BY session_files.mtime_ns DESC, session_files.path LIMIT :rows
"""
_MESSAGE_WITH = """
SELECT text FROM messages WHERE messages.file_id = :file_id AND {term} ORDER BY messages.seq LIMIT 1
"""


def _contains(dialect: str, expression: str, param: str) -> str:
    if dialect == "postgresql":
        return f"{expression} ILIKE :{param}"
    return f"instr(lower({expression}), :{param}) > 0"


def _pattern(dialect: str, term: str) -> str:
    if dialect == "postgresql":
        return "%" + term.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
    return term


def _term_condition(dialect: str, param: str) -> str:
    return ("(" + _contains(dialect, "coalesce(session_files.title, '')", param)
            + " OR " + _contains(dialect, "coalesce(session_files.first_message, '')", param)
            + " OR EXISTS (SELECT 1 FROM messages WHERE messages.file_id = session_files.id AND "
            + _contains(dialect, "messages.text", param) + "))")


def substring_matches(run: Any, dialect: str, terms: Sequence[str], scopes: Sequence[tuple[str, dict[str, Any]]],
                      limit: int, snippet_of: Any) -> list[tuple[int, str, str, float]]:
    """(file_id, field, snippet, 0.0) of at most `limit` sessions holding every lower-cased term, newest first.

    `run(sql, params)` returns rows as mappings; `snippet_of(text, terms)` cuts a marked excerpt.
    """
    params = {f"term{index}": _pattern(dialect, term) for index, term in enumerate(terms)}
    condition = " AND ".join(_term_condition(dialect, name) for name in params)
    found: list[tuple[int, str, str, float]] = []
    for kind, scope_params in scopes:
        scope_sql = fts.SCOPE_ROOT if kind == "root" else fts.SCOPE_DIRECTORIES
        sql = _MATCHES.format(scope=scope_sql, terms=condition)
        for row in run(sql, {**scope_params, **params, "rows": limit}):
            found.append((row["file_id"], *_where(run, dialect, row, terms, params, snippet_of), 0.0))
    return found[:limit]


def _where(run: Any, dialect: str, row: Any, terms: Sequence[str], params: dict[str, str],
           snippet_of: Any) -> tuple[str, str]:
    """(field, snippet) of the first place the first term is found in a matching session."""
    for field in ("title", "first_message"):
        text = row[field] or ""
        if terms[0] in text.lower():
            return field, snippet_of(text, terms)
    messages = run(_MESSAGE_WITH.format(term=_contains(dialect, "messages.text", "term0")),
                   {"file_id": row["file_id"], "term0": params["term0"]})
    return "message", snippet_of(messages[0]["text"], terms) if messages else ""
