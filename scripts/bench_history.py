#!/usr/bin/env python3
"""Benchmark the prompt history: search latency on a large history.db and add() latency.

    .venv/bin/python scripts/bench_history.py                     # 1,000,000 prompts in a temp dir
    .venv/bin/python scripts/bench_history.py --db bench-out/history.db   # keep the file and reuse it

The database is built once with the agent's schema (FTS kept by its trigger) in a single transaction;
a file that already holds at least --prompts rows is reused as it is. Prints figures, asserts nothing.
"""

from __future__ import annotations

import argparse
import random
import sqlite3
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from sessdex.catalog.history.storage import HistoryStorage

COMMON_WORDS = (
    "the", "a", "to", "and", "of", "in", "for", "is", "it", "this", "that", "with", "on", "be", "can", "add",
    "fix", "test", "tests", "make", "use", "file", "files", "function", "code", "error", "when", "not",
    "from", "run", "should", "we", "why", "how", "what", "update", "change", "remove", "refactor", "create",
    "new", "check", "all", "but", "please", "also", "so", "if", "into", "see", "work", "build", "type",
    "types", "config", "value", "values", "return", "data", "list", "class", "method", "api", "call",
    "server", "client", "request", "response", "query", "database", "table", "index", "cache", "commit",
    "branch", "merge", "rebase", "push", "pull", "diff", "log", "git", "npm", "cargo", "python", "rust",
    "typescript", "import", "export", "module", "package", "version", "release", "docs", "readme", "comment",
    "comments", "line", "lines", "logic", "handler", "event", "stream", "async", "await", "promise", "thread",
    "lock", "queue", "worker", "timeout", "retry", "failure", "bug", "crash", "panic", "stack", "trace",
    "debug", "print", "output", "input", "parse", "parser", "token", "lexer", "schema", "migration", "model",
    "view", "component", "render", "state", "props", "hook", "effect", "style", "layout", "button", "form",
    "field", "user", "session", "history", "prompt", "search", "filter", "sort", "page", "limit", "offset",
    "cursor", "batch", "flush", "close", "open",
)
PROJECTS = 50  # prompt shares follow 1/rank: project-00 has ~22%, project-09 ~2%, project-49 ~0.4%
SYLLABLES = (
    "ka", "ri", "to", "mi", "na", "so", "ve", "lu", "po", "de", "zi", "ra", "mo", "te", "chi", "ba", "gu",
    "ne", "fa", "lo", "xi", "qu", "war", "tor", "ent", "ion", "ant", "ex", "pre", "sub", "tra", "ver", "com",
    "per", "dis", "con",
)


def pseudo_words(rng: random.Random, count: int) -> list[str]:
    """A long tail of invented identifiers and words, so rare terms exist as in real prompts."""
    words = set()
    while len(words) < count:
        words.add("".join(rng.choice(SYLLABLES) for _ in range(rng.randint(2, 4))))
    return sorted(words)


def generate_rows(total: int, seed: int = 7) -> list[tuple[str, int, str]]:
    """`total` prompts (text, created_at, cwd) spread over three years, oldest first."""
    rng = random.Random(seed)
    vocabulary = [*COMMON_WORDS, *pseudo_words(rng, 50_000)]
    # Zipf-like weights: the common words dominate, the invented tail is rare.
    weights = [1.0 / (rank + 1) ** 1.05 for rank in range(len(vocabulary))]
    cumulative = list(_accumulate(weights))
    projects = [f"/home/dev/src/project-{n:02d}" for n in range(PROJECTS)]
    project_weights = list(_accumulate([1.0 / (rank + 1) for rank in range(PROJECTS)]))  # a few big ones
    now = int(time.time())
    created_at = now - 3 * 365 * 86400
    step = (now - created_at) // total
    rows = []
    lengths = [rng.randint(3, 40) for _ in range(total)]
    words = rng.choices(vocabulary, cum_weights=cumulative, k=sum(lengths))
    cwds = rng.choices(projects, cum_weights=project_weights, k=total)
    position = 0
    for length, cwd in zip(lengths, cwds):
        chunk = words[position:position + length]
        position += length
        if length > 20 and rng.random() < 0.3:
            chunk.insert(length // 2, "\n")
        created_at += rng.randint(1, 2 * step)
        rows.append((" ".join(chunk).replace(" \n ", "\n"), created_at, cwd))
    return rows


def _accumulate(values: list[float]) -> list[float]:
    total, out = 0.0, []
    for value in values:
        total += value
        out.append(total)
    return out


def build_database(path: Path, total: int) -> None:
    """Create the agent schema through HistoryStorage, then bulk-insert `total` prompts in one transaction."""
    HistoryStorage.open(path).close()
    connection = sqlite3.connect(path, isolation_level=None)
    have = connection.execute("SELECT count(*) FROM history").fetchone()[0]
    if have >= total:
        print(f"reusing {path} ({have:,} prompts)")
        connection.close()
        return
    if have:
        sys.exit(f"{path} holds {have:,} prompts, fewer than --prompts {total:,}: remove it first")
    started = time.perf_counter()
    rows = generate_rows(total)
    generated = time.perf_counter()
    connection.execute("PRAGMA synchronous = OFF")
    connection.execute("BEGIN")
    connection.executemany("INSERT INTO history (prompt, created_at, cwd) VALUES (?, ?, ?)", rows)
    connection.execute("COMMIT")
    connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    connection.close()
    size = path.stat().st_size / 2**20
    print(f"built {path}: {total:,} prompts, {size:,.0f} MiB "
          f"(generate {generated - started:.1f} s, insert+FTS {time.perf_counter() - generated:.1f} s)")


def sample_queries(path: Path, count: int, seed: int = 11) -> list[str]:
    """Queries a user would type: 1-3 consecutive words of a stored prompt, the last one cut to a prefix."""
    rng = random.Random(seed)
    connection = sqlite3.connect(path)
    top = connection.execute("SELECT max(id) FROM history").fetchone()[0]
    queries = []
    while len(queries) < count:
        row = connection.execute("SELECT prompt FROM history WHERE id = ?", (rng.randint(1, top),)).fetchone()
        words = row[0].split()
        size = rng.randint(1, min(3, len(words)))
        start = rng.randint(0, len(words) - size)
        picked = words[start:start + size]
        last = picked[-1]
        picked[-1] = last[:rng.randint(3, len(last))] if len(last) > 3 else last
        queries.append(" ".join(picked))
    connection.close()
    return queries


def timed(function, *args, **kwargs) -> tuple[float, object]:
    started = time.perf_counter()
    value = function(*args, **kwargs)
    return time.perf_counter() - started, value


def report(label: str, seconds: list[float], unit: str = "ms") -> None:
    scale = 1e3 if unit == "ms" else 1e6
    ordered = sorted(seconds)
    p90 = ordered[int(len(ordered) * 0.9) - 1] if len(ordered) >= 10 else ordered[-1]
    print(f"  {label:<40} median {statistics.median(ordered) * scale:8.2f} {unit}   "
          f"p90 {p90 * scale:8.2f} {unit}   max {ordered[-1] * scale:8.2f} {unit}   (n={len(ordered)})")


def bench_search(path: Path, queries: list[str], limit: int) -> None:
    with HistoryStorage.open(path) as history:
        for query in queries[:20]:  # warm the page cache
            history.search(query, limit)
        print(f"search (limit {limit}), sampled user queries:")
        durations, empty = [], 0
        for query in queries:
            seconds, hits = timed(history.search, query, limit)
            durations.append(seconds)
            empty += not hits
        report("search(query)", durations)
        print(f"  queries with no hit: {empty}/{len(queries)}")
        print("search(query, cwd=<project>) (--here); queries sampled from all projects often miss in one,")
        print("and a miss falls back to a substring scan, so figures are given without that fallback too:")
        for label, project in (("project with ~22%", 0), ("project with ~2%", 9), ("project with ~0.4%", 49)):
            cwd = f"/home/dev/src/project-{project:02d}"
            report(f"{label}", [timed(history.search, q, limit, cwd)[0] for q in queries])
            report(f"{label}, no substring fallback",
                   [timed(history.search, q, limit, cwd, substring_fallback=False)[0] for q in queries])
        report("recent()", [timed(history.recent, limit)[0] for _ in range(200)])
        print("single queries (median of 5 runs):")
        for label, query in (("very common word 'the'", "the"), ("common prefix 'fi'", "fi"),
                             ("two common words 'fix test'", "fix test"), ("rare word", "kariwar"),
                             ("infix 'mmi' (substring fallback)", "mmi"),
                             ("no match at all (full scan)", "zzqqxx"),
                             ("hostile 'NEAR(\"a* OR -b'", 'NEAR("a* OR -b'),
                             ("10,000-character query", "x" * 10_000)):
            runs = [timed(history.search, query, limit) for _ in range(5)]
            print(f"  {label:<40} {statistics.median(r[0] for r in runs) * 1e3:8.2f} ms   {len(runs[0][1])} hit(s)")


def bench_add(directory: Path, count: int) -> None:
    path = directory / "add-bench.db"
    with HistoryStorage.open(path) as history:
        history.add("warm-up")
        history.flush()
        durations = []
        for n in range(count):
            started = time.perf_counter()
            history.add(f"prompt number {n} about something")
            durations.append(time.perf_counter() - started)
        print(f"add() ({count:,} distinct prompts, writer thread batching every 100 ms):")
        report("add() returns to the caller", durations, unit="us")
        seconds, _ = timed(history.flush)
        print(f"  flush() of what was still queued: {seconds * 1e3:.1f} ms")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--prompts", type=int, default=1_000_000)
    parser.add_argument("--db", type=Path, help="history.db to build (or reuse); default: a temp dir")
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--limit", type=int, default=20)
    parser.add_argument("--adds", type=int, default=50_000, help="add() calls to time (0: skip)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="sessdex-bench-history-") as scratch:
        path = args.db or Path(scratch) / "history.db"
        path.parent.mkdir(parents=True, exist_ok=True)
        build_database(path, args.prompts)
        bench_search(path, sample_queries(path, args.queries), args.limit)
        if args.adds:
            bench_add(Path(scratch), args.adds)


if __name__ == "__main__":
    main()
