"""Full-text search on a PostgreSQL catalog: the same words match the same sessions as SQLite's FTS5 search.

The migrations give `messages` and `session_files` generated `tsvector` columns with GIN indexes: ASCII
punctuation turned into spaces, accents removed, then the `simple` configuration, so that words are runs
of letters and digits, lower-cased and without accents, as FTS5's unicode61 tokenizer (remove_diacritics)
makes them. The user's text becomes a `tsquery` that cannot be a syntax error: each word is split into
its letter-and-digit runs, quoted, the runs joined as a phrase (`<->`), the last one prefix-matched
(`:*`), and the words ANDed, which is what FTS5 does with a quoted word followed by `*`. Snippets are cut
here in the shape FTS5's `snippet()` gives: a window of at most `tokens` words around the first match,
matched words marked, `…` where the text was cut.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from typing import Any

_TOKEN = re.compile(r"[^\W_]+")

_SCOPE = {
    "directories": "AND session_files.directory IN (:dir0, :dir1, :dir2)",
    "root": "AND session_files.path > :root_lo AND session_files.path < :root_hi",
}
_SESSIONS = """
SELECT session_files.id AS file_id, session_files.title AS title, session_files.first_message AS first_message,
       -ts_rank(session_files.search_tsv, query) AS score
FROM session_files, to_tsquery('simple', sessdex_fold(:query)) AS query
WHERE session_files.search_tsv @@ query AND session_files.header_valid AND session_files.message_count > 0
  AND session_files.machine = :machine {scope}
ORDER BY score, session_files.id LIMIT :rows
"""
_MESSAGES = """
SELECT messages.id AS message_id, messages.file_id AS file_id, -ts_rank(messages.text_tsv, query) AS score
FROM messages JOIN session_files ON session_files.id = messages.file_id, to_tsquery('simple', sessdex_fold(:query)) AS query
WHERE messages.text_tsv @@ query AND session_files.header_valid AND session_files.message_count > 0
  AND session_files.machine = :machine {scope}
ORDER BY score, messages.id LIMIT :rows
"""
_MESSAGE_TEXTS = "SELECT id, text FROM messages WHERE id IN ({ids})"


def word_runs(text: str) -> list[list[str]]:
    """The searchable words of `text`, each as its runs of letters and digits (words without any are dropped)."""
    words = [_TOKEN.findall(word) for word in text.split()]
    return [runs for runs in words if runs]


def _lexeme(run: str) -> str:
    return "'" + run.replace("\\", "\\\\").replace("'", "''") + "'"


def tsquery_text(words: Sequence[Sequence[str]]) -> str | None:
    """A tsquery (for `to_tsquery('simple', ...)`) matching every word, each as a phrase whose last run is a prefix."""
    phrases = []
    for runs in words:
        lexemes = [_lexeme(run) for run in runs]
        lexemes[-1] += ":*"
        phrases.append("(" + " <-> ".join(lexemes) + ")")
    return " & ".join(phrases) or None


def _fold(text: str) -> str:
    """Case and accents folded away, as both catalogs compare words."""
    if text.isascii():
        return text.lower()
    decomposed = unicodedata.normalize("NFKD", text.casefold())
    return "".join(char for char in decomposed if not unicodedata.combining(char))


def _prefixes(words: Sequence[Sequence[str]]) -> tuple[str, ...]:
    return tuple({_fold(run) for runs in words for run in runs})


def snippet(text: str | None, words: Sequence[Sequence[str]], open_mark: str, close_mark: str,
            tokens: int) -> tuple[str, bool]:
    """(FTS5-shaped snippet of `text` for `words`, whether a word matched in it)."""
    if not text:
        return "", False
    prefixes = _prefixes(words)
    found = list(_TOKEN.finditer(text))
    if not found:
        return text, False
    first = next((index for index, match in enumerate(found) if _fold(match.group()).startswith(prefixes)), None)
    start = max(0, min((first or 0) - tokens // 4, len(found) - tokens))
    end = min(len(found), start + max(tokens, 1))
    parts = ["…" if start > 0 else text[:found[0].start()]]
    for index in range(start, end):
        match = found[index]
        if index > start:
            parts.append(text[found[index - 1].end():match.start()])
        word = match.group()
        hit = first is not None and _fold(word).startswith(prefixes)
        parts.append(f"{open_mark}{word}{close_mark}" if hit else word)
    parts.append("…" if end < len(found) else text[found[-1].end():])
    return "".join(parts), first is not None


def search_postgres(db: Any, words: Sequence[Sequence[str]], scopes: Sequence[tuple[str, dict[str, Any]]],
                    limit: int, marks: tuple[str, str], tokens: int) -> list[tuple[int, str, str, float]]:
    """(file_id, field, snippet, score) of the best match of at most `limit` sessions over `scopes` ((kind, params)
    per machine): session matches (title, first message) first, then message matches, each best first.

    At most three round trips to the server: every scope's session ranking together (a pipeline); every scope's
    message ranking together, unless the sessions alone fill `limit` (a common word: ranking its messages is most
    of a search's work); then the texts of the messages chosen (`db` is a
    `sessdex.catalog.store.postgres_reads.PostgresCatalog`).
    """
    query = tsquery_text(words)
    if query is None:
        return []
    # A session has one row per scope (its machine's), so `limit` rows of each scope are enough; a session may have
    # many matching messages, of which only its best is shown.
    session_rows = [row for rows in db.fetch_sql_many(
        [(_SESSIONS.format(scope=_SCOPE[kind]), {**params, "query": query, "rows": limit}) for kind, params in scopes],
        index_scans=True) for row in rows]
    best: dict[int, tuple[str, str, float]] = {}
    for row in sorted(session_rows, key=lambda row: row["score"]):
        if len(best) >= limit:
            break
        if row["file_id"] in best:
            continue
        title, in_title = snippet(row["title"], words, *marks, tokens)
        if in_title:
            best[row["file_id"]] = ("title", title, row["score"])
        else:
            best[row["file_id"]] = ("first_message", snippet(row["first_message"], words, *marks, tokens)[0],
                                    row["score"])
    if len(best) >= limit:
        return [(file_id, field, marked, score) for file_id, (field, marked, score) in best.items()][:limit]
    message_rows = [row for rows in db.fetch_sql_many(
        [(_MESSAGES.format(scope=_SCOPE[kind]), {**params, "query": query, "rows": limit * 20})
         for kind, params in scopes], index_scans=True) for row in rows]
    chosen: dict[int, tuple[int, float]] = {}
    for row in sorted(message_rows, key=lambda row: row["score"]):
        if row["file_id"] not in best:
            chosen.setdefault(row["file_id"], (row["message_id"], row["score"]))
    shown = list(chosen.items())[:max(0, limit - len(best))]
    texts: dict[int, str] = {}
    if shown:
        marks_sql = ", ".join(f":id{index}" for index in range(len(shown)))
        found = db.fetch_sql(_MESSAGE_TEXTS.format(ids=marks_sql),
                             {f"id{index}": message_id for index, (_file, (message_id, _score)) in enumerate(shown)})
        texts = {row["id"]: row["text"] for row in found}
    for file_id, (message_id, score) in shown:
        best[file_id] = ("message", snippet(texts.get(message_id, ""), words, *marks, tokens)[0], score)
    return [(file_id, field, marked, score) for file_id, (field, marked, score) in best.items()][:limit]
