"""Generate a realistic xcsh session corpus: session files in both project-dir naming schemes, blobs, damaged files.

Used by the catalog benchmark (10,000 sessions, ~1 GB, one huge session), the demo (a few dozen sessions) and
tests (small corpora holding every edge case). Output is a pure function of the arguments (the agent dir
included: parentSession headers hold absolute paths, and sizes steer later choices): one `random.Random(seed)`
drives every choice and `now` is the only clock.

Layout written: `<agent_dir>/sessions/<project-dir>/<ts>_<16hex id>.jsonl` and
`<agent_dir>/blobs/<sha256 of the raw bytes>`. Files are opened exclusively (`xb`): an existing file is never
overwritten.

    python scripts/gen_corpus.py --agent-dir DIR --sessions N --projects P --total-size 1GB --seed S \
        [--huge-mb 300] [--damaged K] [--home HOME] [--now EPOCH_SECONDS] [--manifest OUT.json]
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import os
import random
import re
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

SNOWFLAKE_EPOCH_MS = 1_420_070_400_000  # 2015-01-01T00:00:00Z
SNOWFLAKE_SEQ_BITS = 22
MAX_PERSIST_CHARS = 500_000  # the agent never writes a longer string; generated strings stay below it
TITLE_LINE_BYTES = 256  # a `title` first line is padded to this many bytes, newline included
MTIME_SPAN_MS = 182 * 86_400_000  # sessions are created over the last ~6 months

KIND_NORMAL = "normal"
SHAPE_MIXED = "mixed"  # turns with tool calls, thinking, images: few large messages (the benchmark corpus)
SHAPE_SMALL_MESSAGES = "small-messages"  # many messages of about SMALL_MESSAGE_CHARS (about 50 per 100 KB session)
SMALL_MESSAGE_CHARS = 2_000
KIND_HUGE = "huge"
# Files that break the format: a lenient loader skips lines or finds no valid header.
DAMAGE_KINDS = ("empty", "no_header", "invalid_header", "torn_tail", "garbage_middle")
# Valid files that are edge cases rather than damage.
EDGE_KINDS = ("header_only", "metadata_only", "legacy_v1", "legacy_v2_hook")
SPECIAL_KINDS = DAMAGE_KINDS + EDGE_KINDS

NAMING_DOCUMENTED = "documented"
NAMING_HOME_RELATIVE = "home_relative"
NAMING_NESTED = "nested"
SCHEME_BOTH = "both"
NESTED_DIR = "deep/nested"

UNKNOWN_ENTRY_TYPES = ("service_tier_change", "title_change", "x_future_marker")

_SIZE_UNITS = {
    "": 1, "b": 1,
    "k": 1000, "kb": 1000, "m": 1000**2, "mb": 1000**2, "g": 1000**3, "gb": 1000**3,
    "kib": 1024, "mib": 1024**2, "gib": 1024**3,
}
_PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
BLOB_REFERENCE = re.compile(rb"blob:sha256:([0-9a-f]{64})")
_LEAF = object()  # default parent: the current leaf


# ----------------------------------------------------------------------------------------------------------------
# Manifest


@dataclass(frozen=True)
class Project:
    """One working directory and the folders under `sessions/` that hold its sessions."""

    cwd: str
    scheme: str  # "documented" | "home_relative" | "both"
    documented_dir: str
    agent_dir: str  # the agent's home-relative name (equals documented_dir outside home and temp)


@dataclass(frozen=True)
class SessionFile:
    """One file written under `sessions/`, with what a lenient loader should find in it.

    Counts are what a loader sees: files without a valid header count 0 entries; skipped garbage and a torn
    last line are not counted.
    """

    path: Path
    session_id: str  # the id in the file name; also the header id when the header is valid
    cwd: str
    project_dir: str  # folder relative to sessions/, e.g. "--home-dev-code-api--", "-code-api", "deep/nested"
    naming: str  # "documented" | "home_relative" | "nested"
    kind: str  # KIND_NORMAL, KIND_HUGE or one of SPECIAL_KINDS
    version: int | None  # header version; None for v1 and for files without a valid header
    message_count: int  # `message` entries on every branch
    entry_count: int  # non-header entries
    size: int
    created_ms: int  # header timestamp (also the file-name timestamp)
    mtime_ns: int
    title: str | None  # effective title: the `title` first line if present, else header.title
    header_title: str | None
    has_title_line: bool
    parent_session: str | None
    first_prompt: str | None  # text of the first user message in file order
    compaction_short_summary: str | None  # shortSummary of the last compaction in file order
    leaf_id: str | None  # id of the last entry (v3/v2 files)
    branch_count: int  # entries whose parentId is not the previous entry's id (branches, resets)
    blob_refs: tuple[str, ...]  # sha256 hex of every blob the file references, in order of first use
    inline_images: int  # small base64 images kept inline

    @property
    def damaged(self) -> bool:
        """True for files that break the JSONL format or lack a valid header."""
        return self.kind in DAMAGE_KINDS

    @property
    def zero_message(self) -> bool:
        """True when a loader finds no message in the file."""
        return self.message_count == 0


@dataclass
class CorpusManifest:
    """Everything `generate_corpus` wrote, for tests and benchmarks to assert against."""

    agent_dir: Path
    home: Path
    seed: int
    now: float
    projects: list[Project]
    sessions: list[SessionFile] = field(default_factory=list)
    blobs: list[Path] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def sessions_root(self) -> Path:
        """The `sessions/` folder."""
        return self.agent_dir / "sessions"

    @property
    def session_bytes(self) -> int:
        """Total size of the session files."""
        return sum(s.size for s in self.sessions)

    @property
    def blob_bytes(self) -> int:
        """Total size of the blob files."""
        return sum(p.stat().st_size for p in self.blobs)

    def of_kind(self, *kinds: str) -> list[SessionFile]:
        """The session files of the given kinds, in generation order."""
        return [s for s in self.sessions if s.kind in kinds]

    def project_dirs(self) -> set[str]:
        """Every folder (relative to sessions/) that holds at least one file."""
        return {s.project_dir for s in self.sessions}

    def to_json(self) -> bytes:
        """The manifest as JSON (paths as strings), for benchmark scripts that run the generator as a CLI."""
        return orjson.dumps(
            {
                "agent_dir": str(self.agent_dir), "home": str(self.home), "seed": self.seed, "now": self.now,
                "seconds": self.seconds,
                "projects": [p.__dict__ for p in self.projects],
                "sessions": [{**s.__dict__, "path": str(s.path), "damaged": s.damaged} for s in self.sessions],
                "blobs": [str(p) for p in self.blobs],
            },
            option=orjson.OPT_INDENT_2,
        )


# ----------------------------------------------------------------------------------------------------------------
# Naming and formats


def documented_dir_name(cwd: str) -> str:
    """Project folder as the documents give it: `--` + cwd without its leading slash, `/ \\ :` -> `-`, + `--`."""
    return "--" + re.sub(r"[/\\:]", "-", cwd.removeprefix("/")) + "--"


def agent_dir_name(cwd: str, home: str, tmp: str = "/tmp") -> str:
    """Project folder as the agent's current code names it: `-a-b` under home, `-` for home, `-tmp-x` under tmp."""
    for base, prefix in ((home.rstrip("/"), "-"), (tmp.rstrip("/"), "-tmp")):
        if cwd == base:
            return prefix
        if cwd.startswith(base + "/"):
            rest = re.sub(r"[/\\:]", "-", cwd[len(base) + 1:])
            return prefix + rest if prefix == "-" else f"{prefix}-{rest}"
    return documented_dir_name(cwd)


def snowflake_id(created_ms: int, seq: int) -> str:
    """16 lowercase hex chars: ms since 2015-01-01 shifted left 22 bits, plus a sequence."""
    value = ((created_ms - SNOWFLAKE_EPOCH_MS) << SNOWFLAKE_SEQ_BITS) | (seq & ((1 << SNOWFLAKE_SEQ_BITS) - 1))
    return f"{value:016x}"


def iso_ms(ms: int) -> str:
    """ISO-8601 UTC with milliseconds, e.g. 2026-02-16T10:20:30.000Z."""
    seconds, millis = divmod(ms, 1000)
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(seconds)) + f".{millis:03d}Z"


def session_file_name(created_ms: int, session_id: str) -> str:
    """`<ts>_<id>.jsonl` with `:` and `.` of the ISO time replaced by `-`."""
    return iso_ms(created_ms).replace(":", "-").replace(".", "-") + f"_{session_id}.jsonl"


def parse_size(text: str) -> int:
    """Parse `1GB`, `300MB`, `2MiB`, `4096` into bytes (KB/MB/GB decimal, KiB/MiB/GiB binary)."""
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([a-zA-Z]*)\s*", text)
    if not match or match.group(2).lower() not in _SIZE_UNITS:
        raise ValueError(f"not a size: {text!r} (use e.g. 1GB, 300MB, 2MiB)")
    return int(float(match.group(1)) * _SIZE_UNITS[match.group(2).lower()])


# ----------------------------------------------------------------------------------------------------------------
# Text material

_WORDS = (
    "index catalog session entry parent leaf branch tree header title cwd project folder blob image token usage "
    "cost model provider thinking level compaction summary label custom message prompt history search picker "
    "resume continue fork migrate rewrite flush fsync rename atomic writer reader parser lenient torn line json "
    "schema table column query filter sort limit offset cursor cache watcher event debounce queue worker thread "
    "lock retry timeout error warning trace stack frame test fixture assert mock patch coverage benchmark latency "
    "throughput memory buffer stream chunk batch commit rollback migration alembic sqlalchemy sqlite fts5 trigger "
    "refactor rename extract inline function class method module package import export config option flag default "
    "path file directory symlink home temp permission owner mode size mtime inode hash sha256 digest encode decode "
    "utf8 unicode escape quote newline tab space regex pattern match group replace split join strip format render "
    "terminal keyboard arrow page enter escape select cancel exit status code signal process pid spawn pipe shell "
    "bash python typescript rust golang docker compose deploy release version changelog readme docs api endpoint "
    "request response header body payload client server socket port host proxy auth credential secret rotate"
).split()
_UNICODE_WORDS = (
    "café", "naïve", "über", "Größe", "façade", "jalapeño", "Łódź", "日本語", "テスト", "中文字符", "한국어",
    "Ελληνικά", "русский", "हिन्दी", "العربية", "עברית", "🚀", "✅", "→", "≥", "½", "—", "“quoted”", "emoji😀",
)
_LABELS = ("checkpoint", "before-refactor", "good", "bug-repro", "v1", "✓ works", "try again", "baseline")
_CUSTOM_TYPES = ("git-checkpoint", "todo-state", "lsp-cache", "plan-tracker", "pr-review")
_RULES = ("no-console-log", "prefer-const", "tests-first", "small-commits", "no-any", "docstrings")
_TOOLS = ("read", "bash", "edit", "write", "grep", "find", "ls")
_MODELS = (  # provider, model, api, $/Mtok input, output, cacheRead, cacheWrite
    ("anthropic", "claude-sonnet-4-5", "anthropic-messages", 3.0, 15.0, 0.3, 3.75),
    ("anthropic", "claude-opus-4-1", "anthropic-messages", 15.0, 75.0, 1.5, 18.75),
    ("anthropic", "claude-haiku-4-5", "anthropic-messages", 1.0, 5.0, 0.1, 1.25),
    ("openai", "gpt-5", "openai-responses", 1.25, 10.0, 0.125, 0.0),
    ("openai", "gpt-5-mini", "openai-responses", 0.25, 2.0, 0.025, 0.0),
    ("google", "gemini-2.5-pro", "google-generative-ai", 1.25, 10.0, 0.31, 0.0),
)
_THINKING_LEVELS = ("off", "minimal", "low", "medium", "high", "xhigh")
_PROJECT_NAMES = (
    "api", "web", "cli", "infra", "docs", "billing", "search", "auth", "mobile", "etl", "ml-pipeline", "site",
    "dotfiles", "notes", "game", "compiler", "parser", "bot", "dashboard", "gateway",
)
_ORGS = ("acme", "initech", "umbrella", "hooli", "globex", "oss")
_ODD_PROJECT_NAMES = ("web.app", "my project", "café-bot", "v2.0-rewrite", "colon:name")


class _Text:
    """Pregenerated text the writers slice from, so 1 GB costs copies rather than per-word work."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        idents = {f"{a}_{b}" for a in _WORDS[:60] for b in _WORDS[60:120]}
        self.idents = sorted(idents)
        self.code = self._build_code_pool()

    def _build_code_pool(self) -> str:
        rng, words, idents = self.rng, _WORDS, self.idents
        lines: list[str] = []
        size = 0
        while size < 600_000:  # > MAX_PERSIST_CHARS, so any excerpt fits in base + its wrap-around copy
            kind = rng.randrange(6)
            a, b, c = rng.choice(idents), rng.choice(idents), rng.choice(words)
            if kind == 0:
                block = [f"def {a}({b}, {c}=None):", f'    """{c.capitalize()} the {b} for {rng.choice(words)}."""',
                         f"    if {b} is None:", f"        raise ValueError(\"{c} missing: {{{b}!r}}\")",
                         f"    return {c}.{a}({b}) + {rng.randrange(1000)}", ""]
            elif kind == 1:
                block = [f"export async function {a}({b}: string): Promise<{c.capitalize()}> {{",
                         f"  const {c} = await {b}.{rng.choice(words)}({rng.randrange(99)});",
                         f"  if (!{c}) throw new Error(`{a}: ${{{b}}} \\ {rng.choice(_UNICODE_WORDS)}`);",
                         f"  return {c};", "}", ""]
            elif kind == 2:
                block = [f"2026-0{rng.randrange(1, 10)}-1{rng.randrange(10)}T0{rng.randrange(10)}:"
                         f"{rng.randrange(10, 60)}:{rng.randrange(10, 60)}.{rng.randrange(100, 1000)}Z "
                         f"{rng.choice(('INFO', 'WARN', 'DEBUG', 'ERROR'))} {c} {a} "
                         f"id={rng.getrandbits(32):08x} took={rng.randrange(1, 900)}ms"
                         for _ in range(rng.randrange(3, 9))]
            elif kind == 3:
                outcomes = ("PASSED", "PASSED", "PASSED", "FAILED", "SKIPPED")
                block = [f"tests/test_{c}.py::test_{a} {rng.choice(outcomes)} [{rng.randrange(1, 100):3d}%]"
                         for _ in range(rng.randrange(2, 8))]
            elif kind == 4:
                block = [f"## {c.capitalize()} {rng.choice(words)}", "",
                         f"The `{a}` step {rng.choice(words)}s every {b} — see {rng.choice(_UNICODE_WORDS)}.",
                         f"\t- {rng.choice(words)}: \"{rng.choice(words)}\"", ""]
            else:
                block = [f"    {a} = {{\"{c}\": {rng.randrange(10**6)},"
                         f" \"path\": \"C:\\\\src\\\\{b}\"}}",
                         f"    {b}.append({a})  # {' '.join(rng.choices(words, k=6))}"]
            text = "\n".join(block) + "\n"
            lines.append(text)
            size += len(text)
        base = "".join(lines)
        self.code_base_len = len(base)
        return base + base[:MAX_PERSIST_CHARS]  # slices never need to wrap around

    def words(self, lo: int, hi: int) -> str:
        """A run of words, now and then a non-ASCII one."""
        rng = self.rng
        picked = rng.choices(_WORDS, k=rng.randint(lo, hi))
        if rng.random() < 0.2:
            picked[rng.randrange(len(picked))] = rng.choice(_UNICODE_WORDS)
        return " ".join(picked)

    def sentence(self) -> str:
        return self.words(5, 18).capitalize() + self.rng.choice((".", ".", ".", "?", "!", ":"))

    def paragraph(self, lo: int, hi: int) -> str:
        return " ".join(self.sentence() for _ in range(self.rng.randint(lo, hi)))

    def code_excerpt(self, n_chars: int) -> str:
        """`n_chars` of the code pool starting at a line start (n_chars <= MAX_PERSIST_CHARS)."""
        offset = self.rng.randrange(self.code_base_len)
        newline = self.code.find("\n", offset, offset + 400)
        start = newline + 1 if newline >= 0 else offset
        return self.code[start:start + n_chars]

    def prompt(self) -> str:
        rng = self.rng
        shape = rng.random()
        if shape < 0.35:
            return self.words(3, 14) + "?"
        if shape < 0.6:
            return f"{self.sentence()} {self.paragraph(0, 3)}"
        if shape < 0.75:
            return f"{self.sentence()}\n\n```\n{self.code_excerpt(rng.randint(80, 1500))}```\n{self.words(2, 8)}?"
        if shape < 0.85:
            items = "\n".join(f"{i}. {self.sentence()}" for i in range(1, rng.randint(3, 7)))
            return f"{self.sentence()}\n{items}"
        if shape < 0.93:
            return f"Peux-tu corriger «{rng.choice(self.idents)}» — {self.words(4, 10)} {rng.choice(_UNICODE_WORDS)}"
        return f"{self.sentence()} Log:\n{self.code_excerpt(rng.randint(1000, 8000))}"

    def assistant_text(self) -> str:
        rng = self.rng
        text = self.paragraph(1, 4)
        if rng.random() < 0.25:
            text += f"\n\n```python\n{self.code_excerpt(rng.randint(100, 1200))}```\n\n{self.sentence()}"
        if rng.random() < 0.2:
            text += "\n\n" + "\n".join(f"- {self.sentence()}" for _ in range(rng.randint(2, 5)))
        return text

    def short(self, max_chars: int = 60) -> str:
        return self.words(2, 6).capitalize()[:max_chars]


class _Blobs:
    """The blob store: content-addressed raw bytes under `<agent_dir>/blobs/`, with some reuse across sessions."""

    def __init__(self, root: Path, rng: random.Random) -> None:
        self.root = root
        self.rng = rng
        self.paths: dict[str, Path] = {}
        self._made: list[str] = []

    def new_ref(self, clock_ms: int) -> str:
        """sha256 hex of a (possibly reused) fake PNG whose base64 is >= 1024 chars, written once to the store.

        A new blob's mtime is `clock_ms`, so the corpus (mtimes included) depends on the seed alone.
        """
        rng = self.rng
        if self._made and rng.random() < 0.25:
            return rng.choice(self._made)
        raw = _PNG_SIGNATURE + rng.randbytes(rng.randint(800, 48_000))
        digest = hashlib.sha256(raw).hexdigest()
        if digest not in self.paths:
            self.root.mkdir(parents=True, exist_ok=True)
            path = self.root / digest
            if not path.exists():
                path.write_bytes(raw)
                os.utime(path, ns=(clock_ms * 1_000_000, clock_ms * 1_000_000))
            self.paths[digest] = path
            self._made.append(digest)
        return digest

    def inline_data(self) -> str:
        """Base64 of a tiny fake PNG, short enough (< 1024 chars) that the agent keeps it inline."""
        return base64.b64encode(_PNG_SIGNATURE + self.rng.randbytes(self.rng.randint(40, 700))).decode()


# ----------------------------------------------------------------------------------------------------------------
# Writing one file


class _SessionWriter:
    """One session file being written: buffered output, a clock, entry ids, the current root->leaf path."""

    def __init__(self, path: Path, rng: random.Random, start_ms: int, now_ms: int, *, with_ids: bool = True,
                 garbage_after: dict[int, bytes] | None = None) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self._out = path.open("xb", buffering=1 << 20)
        self.rng = rng
        self.clock_ms = start_ms
        self.now_ms = now_ms
        self.with_ids = with_ids
        self._garbage_after = garbage_after or {}
        self.size = 0
        self.lines = 0
        self.ids: list[str] = []
        self._id_set: set[str] = set()
        self.path: list[tuple[str, str]] = []  # (entry id, role or type) from root to leaf
        self.entry_count = 0
        self.message_count = 0
        self.branch_count = 0
        self._last_id: str | None = None
        self.first_prompt: str | None = None
        self.short_summary: str | None = None
        self.blob_refs: list[str] = []
        self.inline_images = 0
        self.context_tokens = 0
        self._copied_parents: dict[str, str | None] = {}
        self._copied_roles: dict[str, str] = {}

    def tick(self, lo_ms: int, hi_ms: int) -> None:
        """Advance the clock, never past now."""
        self.clock_ms = min(self.clock_ms + self.rng.randint(lo_ms, hi_ms), self.now_ms)

    def write_obj(self, obj: dict[str, Any]) -> None:
        self.write_raw(orjson.dumps(obj, option=orjson.OPT_APPEND_NEWLINE))

    def write_raw(self, data: bytes) -> None:
        self._out.write(data)
        self.size += len(data)
        self.lines += 1

    def _new_id(self) -> str:
        while True:
            entry_id = f"{self.rng.getrandbits(32):08x}"
            if entry_id not in self._id_set:
                self._id_set.add(entry_id)
                self.ids.append(entry_id)
                return entry_id

    def append(self, entry_type: str, fields: dict[str, Any], *, role: str | None = None, parent: Any = _LEAF,
               fields_first: bool = False) -> str | None:
        """Write one entry parented on the leaf (or on `parent`); it becomes the leaf. Returns its id."""
        self.tick(300, 90_000)
        entry_id: str | None = None
        if self.with_ids:
            entry_id = self._new_id()
            parent_id = (self.path[-1][0] if self.path else None) if parent is _LEAF else parent
            base = {"type": entry_type, "id": entry_id, "parentId": parent_id, "timestamp": iso_ms(self.clock_ms)}
            if parent_id != self._last_id:
                self.branch_count += 1
            self._last_id = entry_id
            obj = {"type": entry_type, **fields, **base} if fields_first else {**base, **fields}
        else:
            obj = {"type": entry_type, "timestamp": iso_ms(self.clock_ms), **fields}
        self.write_obj(obj)
        self.entry_count += 1
        self.path.append((entry_id or "", role or entry_type))
        if entry_type == "message":
            self.message_count += 1
        garbage = self._garbage_after.get(self.entry_count)
        if garbage is not None:
            self.write_raw(garbage)
        return entry_id

    def append_message(self, message: dict[str, Any]) -> str | None:
        message["timestamp"] = self.clock_ms
        if message["role"] == "user" and self.first_prompt is None:
            content = message["content"]
            self.first_prompt = content if isinstance(content, str) else content[0]["text"]
        return self.append("message", {"message": message}, role=message["role"])

    def adopt(self, record: dict[str, Any], line: bytes) -> None:
        """Account for an entry copied verbatim from another session (see _copy_parent_entries)."""
        entry_id = record["id"]
        self._id_set.add(entry_id)
        self.ids.append(entry_id)
        if record.get("parentId") != self._last_id:
            self.branch_count += 1
        self._last_id = entry_id
        self._copied_parents[entry_id] = record.get("parentId")
        self._copied_roles[entry_id] = (record.get("message") or {}).get("role") or record["type"]
        self.entry_count += 1
        message = record.get("message")
        if record["type"] == "message":
            self.message_count += 1
            if message["role"] == "user" and self.first_prompt is None:
                content = message["content"]
                self.first_prompt = content if isinstance(content, str) else content[0]["text"]
            if isinstance(message.get("content"), list):
                self.inline_images += sum(1 for block in message["content"] if block.get("type") == "image"
                                          and not block["data"].startswith("blob:"))
        elif record["type"] == "compaction" and record.get("shortSummary"):
            self.short_summary = record["shortSummary"]
        for digest in BLOB_REFERENCE.findall(line):
            if digest.decode() not in self.blob_refs:
                self.blob_refs.append(digest.decode())

    def rebuild_path(self) -> None:
        """Make the leaf the last copied entry, with its root->leaf path, as loading the copy would."""
        path: list[tuple[str, str]] = []
        entry_id = self._last_id
        while entry_id is not None and entry_id in self._copied_parents:
            path.append((entry_id, self._copied_roles[entry_id]))
            entry_id = self._copied_parents[entry_id]
        self.path = path[::-1]

    def branch_to(self, index: int) -> str:
        """Move the leaf to `path[index]` (a branch): the next entry parents on it."""
        del self.path[index + 1:]
        return self.path[index][0]

    def reset_leaf(self) -> None:
        """Make the next entry a new root (reset_leaf)."""
        self.path.clear()

    def leaf_id(self) -> str | None:
        return self._last_id

    def close(self) -> None:
        self._out.close()


# ----------------------------------------------------------------------------------------------------------------
# Conversation content


class _Conversation:
    """Writes realistic entries into a `_SessionWriter`: turns of prompts, tool calls and results, plus events."""

    def __init__(self, writer: _SessionWriter, text: _Text, blobs: _Blobs, cwd: str) -> None:
        self.w = writer
        self.text = text
        self.blobs = blobs
        self.rng = writer.rng
        self.cwd = cwd
        self.model = self.rng.choice(_MODELS)

    # --- messages -------------------------------------------------------------------------------------------

    def _image_block(self, inline: bool = False) -> dict[str, str]:
        if inline:
            self.w.inline_images += 1
            return {"type": "image", "data": self.blobs.inline_data(), "mimeType": "image/png"}
        digest = self.blobs.new_ref(self.w.clock_ms)
        if digest not in self.w.blob_refs:
            self.w.blob_refs.append(digest)
        return {"type": "image", "data": f"blob:sha256:{digest}", "mimeType": "image/png"}

    def user(self, *, image: bool = False, inline_image: bool = False) -> None:
        rng, prompt = self.rng, self.text.prompt()
        content: Any = prompt
        if image or inline_image or rng.random() < 0.03:
            content = [{"type": "text", "text": prompt}]
            content.append(self._image_block(inline=inline_image))
            if rng.random() < 0.2:
                content.append(self._image_block())
        elif rng.random() < 0.04:
            content = [{"type": "text", "text": prompt}]
        self.w.tick(5_000, 600_000)
        self.w.context_tokens += len(prompt) // 4
        self.w.append_message({"role": "user", "content": content})

    def _usage(self, out_chars: int) -> dict[str, Any]:
        rng = self.rng
        _, _, _, p_in, p_out, p_cr, p_cw = self.model
        context = self.w.context_tokens + 3_000
        cache_read = int(context * rng.uniform(0.0, 0.9))
        fresh = context - cache_read
        cache_write = int(fresh * rng.uniform(0.0, 0.5)) if p_cw else 0
        tokens_in, tokens_out = fresh - cache_write, max(1, out_chars // 4)
        cost = {"input": tokens_in * p_in / 1e6, "output": tokens_out * p_out / 1e6,
                "cacheRead": cache_read * p_cr / 1e6, "cacheWrite": cache_write * p_cw / 1e6}
        cost = {k: round(v, 8) for k, v in cost.items()}
        cost["total"] = round(sum(cost.values()), 8)
        return {"input": tokens_in, "output": tokens_out, "cacheRead": cache_read, "cacheWrite": cache_write,
                "totalTokens": tokens_in + tokens_out + cache_read + cache_write, "cost": cost}

    def assistant(self, tool_calls: list[dict[str, Any]], *, final: bool = False) -> None:
        rng, text = self.rng, self.text
        provider, model, api = self.model[:3]
        content: list[dict[str, Any]] = []
        if rng.random() < 0.6:
            block: dict[str, Any] = {"type": "thinking", "thinking": text.paragraph(1, 6)}
            if provider == "anthropic":
                block["thinkingSignature"] = base64.b64encode(rng.randbytes(48)).decode()
            content.append(block)
        if final or rng.random() < 0.5:
            content.append({"type": "text", "text": text.assistant_text()})
        content.extend(tool_calls)
        out_chars = sum(len(orjson.dumps(b)) for b in content)
        stop = "toolUse" if tool_calls else "stop"
        message: dict[str, Any] = {"role": "assistant", "content": content, "api": api, "provider": provider,
                                   "model": model, "usage": self._usage(out_chars), "stopReason": stop}
        if final and rng.random() < 0.03:
            message["stopReason"] = rng.choice(("error", "aborted", "length"))
            if message["stopReason"] == "error":
                message["errorMessage"] = f"{rng.choice((429, 500, 529))} {text.words(2, 6)}"
        self.w.tick(2_000, 120_000)
        self.w.context_tokens += out_chars // 4
        self.w.append_message(message)

    def tool_call(self) -> dict[str, Any]:
        rng, text = self.rng, self.text
        name = rng.choice(_TOOLS)
        file_path = f"{self.cwd}/{rng.choice(('src', 'tests', 'lib', 'docs'))}/{rng.choice(text.idents)}.py"
        if name == "read":
            arguments: dict[str, Any] = {"path": file_path}
            if rng.random() < 0.3:
                arguments.update(offset=rng.randint(1, 400), limit=rng.choice((50, 100, 200)))
        elif name == "bash":
            arguments = {"command": rng.choice((f"pytest -q tests/test_{rng.choice(_WORDS)}.py",
                                                f"git diff --stat HEAD~{rng.randint(1, 5)}", "ls -la",
                                                f"rg -n '{rng.choice(text.idents)}' src", "make build"))}
            if rng.random() < 0.3:
                arguments["timeout"] = rng.choice((60, 120, 600))
        elif name == "edit":
            arguments = {"path": file_path, "oldText": text.code_excerpt(rng.randint(20, 400)),
                         "newText": text.code_excerpt(rng.randint(20, 400))}
        elif name == "write":
            arguments = {"path": file_path, "content": text.code_excerpt(rng.randint(200, 4000))}
        elif name == "grep":
            arguments = {"pattern": rng.choice(text.idents), "path": self.cwd}
        else:
            arguments = {"path": self.cwd, "pattern": f"**/*{rng.choice(('.py', '.ts', '.md'))}"}
        prefix = "toolu_" if self.model[0] == "anthropic" else "call_"
        return {"type": "toolCall", "id": f"{prefix}{rng.getrandbits(96):024x}", "name": name, "arguments": arguments}

    def tool_result(self, call: dict[str, Any], n_chars: int) -> None:
        rng = self.rng
        is_error = rng.random() < 0.05
        if is_error:
            content: list[dict[str, Any]] = [{"type": "text", "text": f"Error: {self.text.sentence()}"}]
        elif call["name"] == "read" and rng.random() < 0.03:
            content = [{"type": "text", "text": "Read image file [image/png]"}, self._image_block()]
        else:
            content = [{"type": "text", "text": self.text.code_excerpt(n_chars)}]
        message: dict[str, Any] = {"role": "toolResult", "toolCallId": call["id"], "toolName": call["name"],
                                   "content": content, "isError": is_error}
        if call["name"] == "bash" and not is_error:
            message["details"] = {"exitCode": rng.choice((0, 0, 0, 1)), "durationMs": rng.randint(5, 90_000)}
        self.w.tick(100, 30_000)
        self.w.context_tokens += n_chars // 4
        self.w.append_message(message)

    def turn(self, target: int, *, image: bool = False, inline_image: bool = False) -> None:
        """A user prompt, 0..6 rounds of tool calls and results, and a final answer."""
        rng, w = self.rng, self.w
        self.user(image=image, inline_image=inline_image)
        for _ in range(rng.choice((0, 0, 1) if target < 10_000 else (0, 1, 1, 2, 2, 3, 4, 6))):
            calls = [self.tool_call() for _ in range(rng.choice((1, 1, 1, 2, 3)))]
            self.assistant(calls)
            for call in calls:
                share = target * (0.3 if rng.random() < 0.04 else rng.uniform(0.002, 0.06))
                n_chars = int(min(share, max(60, target - w.size), MAX_PERSIST_CHARS - 50_000))
                self.tool_result(call, max(60, n_chars))
            if w.size >= target:
                break
        self.assistant([], final=True)

    # --- non-message entries ---------------------------------------------------------------------------------

    def session_init(self) -> None:
        rng, text = self.rng, self.text
        tools = sorted(rng.sample(_TOOLS, rng.randint(2, len(_TOOLS))))
        fields: dict[str, Any] = {"systemPrompt": text.paragraph(10, 40), "task": text.paragraph(1, 3),
                                  "tools": tools, "agent": rng.choice(("scout", "reviewer", "planner"))}
        if rng.random() < 0.5:
            fields["outputSchema"] = {"type": "object", "properties": {"summary": {"type": "string"}}}
        if rng.random() < 0.5:
            fields["readOnly"] = True
        self.w.append("session_init", fields)

    def model_change(self, role: str | None = "default") -> None:
        self.model = self.rng.choice(_MODELS)
        fields: dict[str, Any] = {"model": f"{self.model[0]}/{self.model[1]}"}
        if role is not None:
            fields["role"] = role
        self.w.append("model_change", fields)

    def thinking_level_change(self) -> None:
        level = None if self.rng.random() < 0.05 else self.rng.choice(_THINKING_LEVELS)
        self.w.append("thinking_level_change", {"thinkingLevel": level})

    def mode_change(self) -> None:
        if self.rng.random() < 0.7:
            fields = {"mode": "plan", "data": {"planFile": f"{self.cwd}/.plans/{self.rng.choice(_WORDS)}.md"}}
        else:
            fields = {"mode": "none"}
        self.w.append("mode_change", fields)

    def label(self) -> None:
        fields: dict[str, Any] = {"targetId": self.rng.choice(self.w.ids)}
        if self.rng.random() < 0.85:
            fields["label"] = self.rng.choice(_LABELS)
        self.w.append("label", fields)

    def custom(self) -> None:
        rng = self.rng
        data = {"counter": rng.randint(1, 99), "items": [rng.choice(_WORDS) for _ in range(rng.randint(0, 5))]}
        self.w.append("custom", {"customType": rng.choice(_CUSTOM_TYPES), "data": data}, fields_first=True)

    def custom_message(self, *, image: bool = False) -> None:
        rng = self.rng
        content: Any = self.text.paragraph(1, 3)
        if image:
            content = [{"type": "text", "text": content}, self._image_block()]
        fields = {"customType": rng.choice(_CUSTOM_TYPES), "content": content, "display": rng.random() < 0.6,
                  "details": {"source": rng.choice(_WORDS)}, "attribution": rng.choice(("agent", "user"))}
        self.w.append("custom_message", fields, fields_first=True)

    def ttsr_injection(self) -> None:
        self.w.append("ttsr_injection", {"injectedRules": self.rng.sample(_RULES, self.rng.randint(1, 3))})

    def unknown_entry(self) -> None:
        kind = self.rng.choice(UNKNOWN_ENTRY_TYPES)
        if kind == "service_tier_change":
            fields: dict[str, Any] = {"serviceTier": {self.model[0]: self.rng.choice(("priority", "flex"))}}
        elif kind == "title_change":
            fields = {"title": self.text.short(), "source": "auto"}
        else:
            fields = {"payload": {"nested": [1, 2, {"x": self.text.short()}]}, "flag": True}
        self.w.append(kind, fields)

    def compaction(self) -> bool:
        """Append a compaction whose firstKeptEntryId is a user message on the path; False if there is none."""
        rng, w = self.rng, self.w
        candidates = [i for i, (_, role) in enumerate(w.path[:-1]) if role == "user"]
        if not candidates:
            return False
        kept = w.path[rng.choice(candidates[len(candidates) // 2:])][0]
        short = self.text.short()
        fields: dict[str, Any] = {
            "summary": "## Goal\n" + self.text.paragraph(2, 5) + "\n\n## Progress\n" + self.text.paragraph(2, 8),
            "shortSummary": short, "firstKeptEntryId": kept, "tokensBefore": rng.randint(60_000, 190_000),
            "details": {"readFiles": [f"src/{rng.choice(self.text.idents)}.py" for _ in range(rng.randint(0, 4))],
                        "modifiedFiles": [f"src/{rng.choice(self.text.idents)}.py" for _ in range(rng.randint(0, 3))]},
        }
        if rng.random() < 0.2:
            fields["preserveData"] = {"hookState": True}
        if rng.random() < 0.5:
            fields["fromExtension"] = False
        w.append("compaction", fields)
        w.short_summary = short
        w.context_tokens = len(fields["summary"]) // 4
        return True

    def branch(self, *, summary: bool, from_root: bool = False) -> None:
        """Move the leaf back to an earlier message (or the root) and, with `summary`, record a branch_summary."""
        rng, w = self.rng, self.w
        if from_root:
            w.reset_leaf()
            w.append("branch_summary", {"fromId": "root", "summary": self.text.paragraph(1, 3)}, parent=None)
            return
        points = [i for i, (_, role) in enumerate(w.path[:-1]) if role in ("user", "assistant")]
        if not points:
            return
        from_id = w.branch_to(rng.choice(points))
        if summary:
            fields: dict[str, Any] = {"fromId": from_id, "summary": self.text.paragraph(1, 4)}
            if rng.random() < 0.5:
                fields["details"] = {"abandoned": rng.randint(1, 20)}
                fields["fromExtension"] = rng.random() < 0.3
            w.append("branch_summary", fields)


_SHOWCASE_EVENTS = (
    "model_change", "thinking_level_change", "mode_change", "label", "custom", "custom_message",
    "custom_message_image", "ttsr_injection", "unknown", "branch_summary", "branch_summary_root", "branch", "reset",
    "compaction", "image_turn", "inline_image_turn",
)


def _write_conversation(conv: _Conversation, target: int, *, showcase: bool) -> None:
    """Turns and events until the file reaches `target` bytes; a showcase session holds every entry kind."""
    rng, w = conv.rng, conv.w
    if showcase or rng.random() < 0.1:  # a subagent's session starts with its session_init
        conv.session_init()
    if rng.random() < 0.6:
        conv.model_change()
    if rng.random() < 0.15:
        conv.model_change(role=rng.choice(("smol", "slow", "plan", None)))
    if rng.random() < 0.4:
        conv.thinking_level_change()
    if rng.random() < 0.08:
        conv.mode_change()
    pending = list(_SHOWCASE_EVENTS) if showcase else []
    compactions = 0
    while True:
        event = pending.pop(0) if pending else None
        conv.turn(target, image=event == "image_turn", inline_image=event == "inline_image_turn")
        if w.size >= target and not pending:
            break
        if event in ("model_change", "thinking_level_change", "mode_change", "label", "custom",
                     "custom_message", "ttsr_injection"):
            getattr(conv, event)()
        elif event == "custom_message_image":
            conv.custom_message(image=True)
        elif event == "unknown":
            conv.unknown_entry()
        elif event in ("branch_summary", "branch"):
            conv.branch(summary=event == "branch_summary")
        elif event == "branch_summary_root":
            conv.branch(summary=True, from_root=True)
        elif event == "reset":
            w.reset_leaf()
        elif event == "compaction":
            if not conv.compaction():
                pending.append(event)
        r = rng.random()
        long_enough = w.entry_count >= 30 and w.size >= target * (0.5 if compactions == 0 else 0.85)
        if long_enough and compactions < 2 and (compactions == 0 or w.entry_count >= 150):
            compactions += conv.compaction()
        elif r < 0.05:
            conv.label()
        elif r < 0.09:
            conv.custom()
        elif r < 0.12:
            conv.custom_message(image=rng.random() < 0.05)
        elif r < 0.14:
            conv.ttsr_injection()
        elif r < 0.17:
            conv.model_change(role=rng.choice(("default", "default", "smol")))
        elif r < 0.20:
            conv.thinking_level_change()
        elif r < 0.21:
            conv.mode_change()
        elif r < 0.22:
            conv.unknown_entry()
        elif r < 0.26:
            conv.branch(summary=True)
        elif r < 0.29:
            conv.branch(summary=False)
        elif r < 0.292:
            w.reset_leaf()


# ----------------------------------------------------------------------------------------------------------------
# Planning and the special files


@dataclass
class _Plan:
    kind: str
    project: int
    project_dir: str
    naming: str
    created_ms: int
    target: int
    session_id: str = ""
    title: str | None = None
    title_line: str | None = None
    parent_session: str | None = None
    parent_path: Path | None = None  # a fork copies its parent's entries (all of them, or a prefix)
    showcase: bool = False


def _make_projects(rng: random.Random, count: int, home: str) -> list[Project]:
    """`count` distinct cwds: home itself, folders under home (some with odd names), under /tmp and elsewhere."""
    cwds: list[str] = []
    used: set[str] = set()
    for index in range(count):
        for attempt in range(1_000_000):
            name = rng.choice(_PROJECT_NAMES)
            if index % 9 == 4:
                name = rng.choice(_ODD_PROJECT_NAMES)
            elif rng.random() < 0.5:
                name = f"{name}-{rng.choice(_WORDS)}"
            if attempt >= 10:  # the name space is used up: make it unique
                name = f"{name}-{index}"
            org = rng.choice(_ORGS)
            if index == 1:
                cwd = home
            elif index == 7:
                cwd = f"C:\\Users\\dev\\{name}"
            elif index % 11 == 5:
                cwd = f"/tmp/{name}"
            elif index % 6 == 3:
                cwd = rng.choice((f"/srv/{name}", f"/opt/{org}/{name}", f"/var/lib/{name}"))
            else:
                cwd = rng.choice((f"{home}/code/{name}", f"{home}/work/{org}/{name}",
                                  f"{home}/src/github.com/{org}/{name}"))
            if cwd not in used:
                break
        used.add(cwd)
        cwds.append(cwd)
    projects = []
    for index, cwd in enumerate(cwds):
        documented, agent = documented_dir_name(cwd), agent_dir_name(cwd, home)
        if documented == agent:
            scheme = NAMING_DOCUMENTED
        elif index < 3:  # the first projects cover every scheme
            scheme = (SCHEME_BOTH, NAMING_HOME_RELATIVE, NAMING_DOCUMENTED)[index]
        else:
            scheme = rng.choices((NAMING_DOCUMENTED, NAMING_HOME_RELATIVE, SCHEME_BOTH), (45, 40, 15))[0]
        projects.append(Project(cwd=cwd, scheme=scheme, documented_dir=documented, agent_dir=agent))
    return projects


def _heavy_tailed_sizes(rng: random.Random, count: int, budget: int, floor: int) -> list[int]:
    """`count` heavy-tailed sizes summing to about `budget`, none below `floor`."""
    if count == 0:
        return []
    raw = [min(rng.lognormvariate(0.0, 1.6), 3_000.0) for _ in range(count)]
    spare = max(0, budget - count * floor)
    total = sum(raw)
    return [floor + int(spare * r / total) for r in raw]


def _plan_sessions(rng: random.Random, projects: list[Project], *, sessions: int, special: int, huge: bool,
                   fork_rate: float,
                   budget: int, now_ms: int, sessions_root: Path) -> list[_Plan]:
    """Decide every file: kind, project folder, creation time, size target, id, titles, lineage."""
    kinds = [SPECIAL_KINDS[i % len(SPECIAL_KINDS)] for i in range(special)]
    if huge:
        kinds.append(KIND_HUGE)
    kinds += [KIND_NORMAL] * (sessions - len(kinds))
    rng.shuffle(kinds)
    weights = [1.0 / (i + 1) ** 0.8 for i in range(len(projects))]
    # the first project (always "both", under home) gets two sessions, every other one a session, if enough
    owners = [0, *range(len(projects))][:sessions]
    owners += rng.choices(range(len(projects)), weights, k=sessions - len(owners))
    owners = [0 if kind == KIND_HUGE else owner for kind, owner in zip(kinds, owners, strict=True)]
    n_nested = max(1, sessions // 500) if sessions >= 20 else 0
    normal_sizes = iter(_heavy_tailed_sizes(rng, kinds.count(KIND_NORMAL), budget, floor=2_500))
    seen_dirs: dict[int, set[str]] = {}
    plans: list[_Plan] = []
    for index, (kind, owner) in enumerate(zip(kinds, owners, strict=True)):
        project = projects[owner]
        if index >= sessions - n_nested:
            project_dir, naming = NESTED_DIR, NAMING_NESTED
        elif project.scheme == SCHEME_BOTH:
            used = seen_dirs.setdefault(owner, set())
            use_agent = rng.random() < 0.5 if len(used) != 1 else project.documented_dir in used
            project_dir = project.agent_dir if use_agent else project.documented_dir
            naming = NAMING_HOME_RELATIVE if use_agent else NAMING_DOCUMENTED
            used.add(project_dir)
        elif project.scheme == NAMING_HOME_RELATIVE:
            project_dir, naming = project.agent_dir, NAMING_HOME_RELATIVE
        else:
            project_dir, naming = project.documented_dir, NAMING_DOCUMENTED
        created = now_ms - rng.randint(60_000, MTIME_SPAN_MS)
        target = next(normal_sizes) if kind == KIND_NORMAL else 0
        plans.append(_Plan(kind, owner, project_dir, naming, created, target))
    plans.sort(key=lambda p: p.created_ms)
    for seq, plan in enumerate(plans):
        plan.session_id = snowflake_id(plan.created_ms, seq)
    normal = [p for p in plans if p.kind == KIND_NORMAL]
    if normal:  # written first, so later targets pay back what its forced events overshoot
        normal[0].showcase = True
    for index, plan in enumerate(normal):
        r = rng.random()
        if index == 0 or r < 0.12:
            plan.title = _title_text(rng)
        if index == 1 or 0.12 <= r < 0.15:
            plan.title_line = _title_text(rng)
        if index > 2 and rng.random() < fork_rate:
            parent = rng.choice(normal[:index])
            parent_path = sessions_root / parent.project_dir / session_file_name(parent.created_ms, parent.session_id)
            plan.parent_session = parent.session_id if rng.random() < 0.5 else str(parent_path)
            plan.parent_path = parent_path
    return plans


def _title_text(rng: random.Random) -> str:
    words = rng.choices(_WORDS, k=rng.randint(2, 7))
    if rng.random() < 0.15:
        words.append(rng.choice(_UNICODE_WORDS))
    title = " ".join(words).capitalize()
    return title + "\n  second line" if rng.random() < 0.03 else title


def _title_line(title: str, updated_ms: int) -> bytes:
    """A `title` first line as newer agents write it, padded to TITLE_LINE_BYTES."""
    slot = {"type": "title", "v": 1, "title": title, "source": "user", "updatedAt": iso_ms(updated_ms), "pad": ""}
    slot["pad"] = " " * max(0, TITLE_LINE_BYTES - len(orjson.dumps(slot)) - 1)
    return orjson.dumps(slot, option=orjson.OPT_APPEND_NEWLINE)


def _header(plan: _Plan, cwd: str, version: int | None = 3) -> dict[str, Any]:
    header: dict[str, Any] = {"type": "session"}
    if version is not None:
        header["version"] = version
    header.update(id=plan.session_id, timestamp=iso_ms(plan.created_ms), cwd=cwd)
    if plan.title is not None:
        header["title"] = plan.title
        header["titleSource"] = "auto"
    if plan.parent_session is not None:
        header["parentSession"] = plan.parent_session
    return header


def _write_special(w: _SessionWriter, plan: _Plan, conv: _Conversation, cwd: str) -> tuple[int | None, bool]:
    """Write one SPECIAL_KINDS file; returns (header version as a loader sees it, whether entries count)."""
    rng = w.rng
    kind = plan.kind
    if kind == "empty":
        return None, False
    if kind in ("no_header", "invalid_header"):
        if kind == "no_header":
            w.write_raw(b"PK\x03\x04 this is not a session header {\n")
        else:
            w.write_obj({**_header(plan, cwd), "id": int(plan.session_id[:8], 16)})
        conv.turn(3_000)
        return None, False
    if kind == "header_only":
        w.write_obj(_header(plan, cwd))
        return 3, True
    if kind == "metadata_only":
        w.write_obj(_header(plan, cwd))
        conv.session_init()
        conv.model_change()
        conv.thinking_level_change()
        conv.label()
        return 3, True
    if kind == "legacy_v1":
        w.write_obj(_header(plan, cwd, version=None))
        conv.turn(2_000)
        w.append_message({"role": "hookMessage", "customType": "hook", "content": conv.text.sentence(),
                          "display": True})
        kept_line = rng.randint(1, w.lines - 1)  # the header is index 0
        w.append("compaction", {"summary": conv.text.paragraph(2, 4), "firstKeptEntryIndex": kept_line,
                                "tokensBefore": rng.randint(20_000, 90_000)})
        conv.turn(4_000)
        return None, True
    if kind == "legacy_v2_hook":
        w.write_obj(_header(plan, cwd, version=2))
        conv.turn(2_000)
        w.append_message({"role": "hookMessage", "customType": "hook", "content": conv.text.sentence(),
                          "display": rng.random() < 0.5})
        conv.turn(3_000)
        return 2, True
    # torn_tail and garbage_middle: a valid small session around the damage
    w.write_obj(_header(plan, cwd))
    conv.turn(4_000)
    conv.turn(6_000)
    if kind == "torn_tail":
        line = orjson.dumps({"type": "message", "id": "ffffffff", "parentId": w.leaf_id(),
                             "timestamp": iso_ms(w.clock_ms),
                             "message": {"role": "user", "content": conv.text.paragraph(2, 4)}})
        w.write_raw(line[: len(line) // 2])
    return 3, True


def _copy_parent_entries(w: _SessionWriter, parent_path: Path, *, whole: bool) -> None:
    """Copy the entry lines of an earlier session (all of them, or a prefix) as a fork does: same ids, same timestamps."""
    lines = [line for line in parent_path.read_bytes().splitlines() if line]
    records = [orjson.loads(line) for line in lines]
    start = next(index for index, record in enumerate(records) if record.get("type") == "session") + 1
    lines, records = lines[start:], records[start:]
    keep = len(records) if whole or not records else w.rng.randint(1, len(records))
    for line, record in zip(lines[:keep], records[:keep]):
        w.write_raw(line + b"\n")
        w.adopt(record, line)
    w.rebuild_path()


def _garbage_lines() -> dict[int, bytes]:
    """Lines a lenient parser must skip, keyed by the entry they follow (garbage_middle files).

    The agent's parser lets a value span lines, so a cut-off object is followed by a non-JSON line: the
    error lands there and reading resumes after it, instead of the object swallowing the next entry.
    """
    return {
        1: b"this is not json at all\n",
        2: b'{"type":"message","id":"0badf00d","parentId":\nnot json either\n',
        3: b"\xff\xfe\xfd invalid utf-8 \xc3\x28\n",
        4: b"\n",
        5: b"   \t \n",
    }


def _write_huge(w: _SessionWriter, conv: _Conversation, target: int) -> None:
    """Stream a session of about `target` bytes made of large toolResult lines (read of big log files)."""
    rng = w.rng
    conv.model_change()
    conv.user()
    while w.size < target:
        call = {"type": "toolCall", "id": f"toolu_{rng.getrandbits(96):024x}", "name": "read",
                "arguments": {"path": f"{conv.cwd}/logs/{rng.choice(conv.text.idents)}.log"}}
        conv.assistant([call])
        conv.tool_result(call, min(rng.randint(200_000, 480_000), max(1_000, target - w.size)))
        w.context_tokens = min(w.context_tokens, 150_000)
    conv.assistant([], final=True)


# ----------------------------------------------------------------------------------------------------------------
# Entry point


def _default_home(agent_dir: Path) -> Path:
    if agent_dir.name == "agent" and agent_dir.parent.name == ".xcsh":
        return agent_dir.parent.parent
    return Path("/home/dev")


def generate_corpus(agent_dir: Path, *, sessions: int, projects: int, total_bytes: int, seed: int = 0,
                    damaged: int | None = None, huge_bytes: int = 0, home: Path | None = None,
                    now: float | None = None, fork_rate: float = 0.03, shape: str = SHAPE_MIXED) -> CorpusManifest:
    """Write a deterministic corpus of `sessions` files (~`total_bytes` of JSONL) under `agent_dir` and list it.

    The file count is exactly `sessions`: `damaged` special files (default: all nine SPECIAL_KINDS, or
    sessions // 1000 if more, when sessions >= 20; none below) and the huge session (`huge_bytes` > 0, part of
    `total_bytes`) are among them. Blob bytes are not part of `total_bytes`. `home` (default: the parent of
    `.xcsh/agent`, else /home/dev) names the home-relative project folders; `now` (default: the wall clock)
    anchors every timestamp and mtime. A `fork_rate` share of the ordinary sessions are forks: their header names
    an earlier session as `parentSession` (by id: a fork, which copies all its entries; by path: a branched
    session, which copies a prefix of them), and they go on with entries of their own. `shape` SHAPE_SMALL_MESSAGES
    writes the ordinary sessions as alternating user and assistant messages of about SMALL_MESSAGE_CHARS each
    (the cost of indexing follows rows and text, not bytes). Raises FileExistsError rather than overwrite an
    existing file.
    """
    started = time.perf_counter()
    if sessions < 0 or projects < 1 or total_bytes < 0 or huge_bytes < 0:
        raise ValueError("sessions, total_bytes and huge_bytes must be >= 0 and projects >= 1")
    agent_dir = Path(agent_dir)
    home = Path(home) if home is not None else _default_home(agent_dir)
    now = time.time() if now is None else now
    now_ms, now_ns = int(now * 1000), int(now * 1e9)
    if damaged is None:
        damaged = max(len(SPECIAL_KINDS), sessions // 1000) if sessions >= 20 else 0
    damaged = min(damaged, sessions)
    huge = huge_bytes > 0 and sessions > damaged
    rng = random.Random(seed)
    text = _Text(rng)
    blobs = _Blobs(agent_dir / "blobs", rng)
    project_list = _make_projects(rng, projects, str(home))
    budget = max(0, total_bytes - (huge_bytes if huge else 0) - damaged * 8_000)
    sessions_root = agent_dir / "sessions"
    plans = _plan_sessions(rng, project_list, sessions=sessions, special=damaged, huge=huge, fork_rate=fork_rate,
                           budget=budget,
                           now_ms=now_ms, sessions_root=sessions_root)
    manifest = CorpusManifest(agent_dir=agent_dir, home=home, seed=seed, now=now, projects=project_list)
    sessions_root.mkdir(parents=True, exist_ok=True)
    # Targets are rescaled as files are written so that overshoot (whole turns, minimum sizes) is paid back.
    special_estimate = {kind: 8_000 for kind in SPECIAL_KINDS} | {KIND_HUGE: huge_bytes, KIND_NORMAL: 0}
    unwritten_reserve = sum(special_estimate[p.kind] for p in plans)
    unwritten_planned = sum(p.target for p in plans)
    written = 0
    for plan in plans:
        unwritten_reserve -= special_estimate[plan.kind]
        if plan.kind == KIND_NORMAL:
            spare = total_bytes - written - unwritten_reserve
            scale = min(4.0, max(0.25, spare / unwritten_planned)) if unwritten_planned else 1.0
            unwritten_planned -= plan.target
            plan.target = int(plan.target * scale)
        record = _write_session(plan, project_list[plan.project].cwd, sessions_root, rng, text, blobs, now_ms,
                                now_ns, huge_bytes, shape)
        written += record.size
        manifest.sessions.append(record)
    manifest.blobs = [blobs.paths[d] for d in sorted(blobs.paths)]
    manifest.seconds = time.perf_counter() - started
    return manifest


def _write_small_messages(conv: _Conversation, target: int) -> None:
    """Alternating user and assistant messages of about SMALL_MESSAGE_CHARS each until the file reaches `target`."""
    w, text = conv.w, conv.text
    while True:
        conv.w.tick(5_000, 120_000)
        w.append_message({"role": "user", "content": text.paragraph(1, 2)[:SMALL_MESSAGE_CHARS]
                          + " " + text.words(300, 340)[:SMALL_MESSAGE_CHARS // 2]})
        body = (text.paragraph(2, 4) + " " + text.words(300, 340))[:SMALL_MESSAGE_CHARS]
        provider, model, api = conv.model[:3]
        w.tick(2_000, 60_000)
        w.append_message({"role": "assistant", "content": [{"type": "text", "text": body}], "api": api,
                          "provider": provider, "model": model, "usage": conv._usage(len(body)),
                          "stopReason": "stop"})
        if w.size >= target:
            break


def _write_session(plan: _Plan, cwd: str, sessions_root: Path, rng: random.Random, text: _Text, blobs: _Blobs,
                   now_ms: int, now_ns: int, huge_bytes: int, shape: str = SHAPE_MIXED) -> SessionFile:
    path = sessions_root / plan.project_dir / session_file_name(plan.created_ms, plan.session_id)
    garbage = _garbage_lines() if plan.kind == "garbage_middle" else None
    writer = _SessionWriter(path, rng, plan.created_ms, now_ms, with_ids=plan.kind != "legacy_v1",
                            garbage_after=garbage)
    conv = _Conversation(writer, text, blobs, cwd)
    try:
        if plan.kind in SPECIAL_KINDS:
            version, counts = _write_special(writer, plan, conv, cwd)
        else:
            version, counts = 3, True
            if plan.title_line is not None:
                writer.write_raw(_title_line(plan.title_line, plan.created_ms + 1_000))
            writer.write_obj(_header(plan, cwd))
            if plan.parent_path is not None:
                _copy_parent_entries(writer, plan.parent_path, whole=plan.parent_session != str(plan.parent_path))
            if plan.kind == KIND_HUGE:
                _write_huge(writer, conv, huge_bytes)
            elif shape == SHAPE_SMALL_MESSAGES and not plan.showcase:
                _write_small_messages(conv, plan.target)
            else:
                _write_conversation(conv, plan.target, showcase=plan.showcase)
    finally:
        writer.close()
    mtime_ns = min(writer.clock_ms * 1_000_000 + rng.randrange(1_000_000), now_ns)
    os.utime(path, ns=(mtime_ns, mtime_ns))
    has_ids = counts and plan.kind != "legacy_v1"
    return SessionFile(
        path=path, session_id=plan.session_id, cwd=cwd, project_dir=plan.project_dir, naming=plan.naming,
        kind=plan.kind, version=version, message_count=writer.message_count if counts else 0,
        entry_count=writer.entry_count if counts else 0, size=writer.size, created_ms=plan.created_ms,
        mtime_ns=mtime_ns, title=plan.title_line if plan.title_line is not None else plan.title,
        header_title=plan.title if counts else None, has_title_line=plan.title_line is not None,
        parent_session=plan.parent_session, first_prompt=writer.first_prompt if counts else None,
        compaction_short_summary=writer.short_summary, leaf_id=writer.leaf_id() if has_ids else None,
        branch_count=writer.branch_count if has_ids else 0, blob_refs=tuple(writer.blob_refs),
        inline_images=writer.inline_images,
    )


def main(argv: list[str] | None = None) -> int:
    """CLI: generate a corpus and print a one-line summary (files, projects, bytes, seconds)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--agent-dir", type=Path, required=True, help="agent dir to fill (sessions/ and blobs/)")
    parser.add_argument("--sessions", type=int, required=True, help="number of session files, special ones included")
    parser.add_argument("--projects", type=int, required=True, help="number of distinct cwds")
    parser.add_argument("--total-size", type=parse_size, required=True, help="JSONL bytes to aim at, e.g. 1GB")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--huge-mb", type=float, default=0.0, help="add one session of this many MB (10^6 bytes)")
    parser.add_argument("--damaged", type=int, default=None, help="number of damaged/edge-case files")
    parser.add_argument("--home", type=Path, default=None, help="home dir for the agent's project-dir naming")
    parser.add_argument("--now", type=float, default=None, help="epoch seconds to anchor timestamps at")
    parser.add_argument("--manifest", type=Path, default=None, help="also write the manifest as JSON here")
    parser.add_argument("--fork-rate", type=float, default=0.03, help="share of sessions that fork an earlier one")
    parser.add_argument("--shape", choices=(SHAPE_MIXED, SHAPE_SMALL_MESSAGES), default=SHAPE_MIXED,
                        help="mixed turns (default) or many messages of about 2 KB (e.g. 100,000 sessions in 1,000 "
                             "projects: --sessions 100000 --projects 1000 --total-size 800MB --shape small-messages)")
    args = parser.parse_args(argv)
    try:
        manifest = generate_corpus(args.agent_dir, sessions=args.sessions, projects=args.projects,
                                   total_bytes=args.total_size, seed=args.seed, damaged=args.damaged,
                                   huge_bytes=int(args.huge_mb * 1_000_000), home=args.home, now=args.now,
                                   fork_rate=args.fork_rate, shape=args.shape)
    except (ValueError, FileExistsError) as exc:
        print(f"gen_corpus: {exc}", file=sys.stderr)
        return 2
    if args.manifest is not None:
        args.manifest.write_bytes(manifest.to_json())
    print(f"files={len(manifest.sessions)} projects={len(manifest.projects)} dirs={len(manifest.project_dirs())} "
          f"bytes={manifest.session_bytes} ({manifest.session_bytes / 1e6:.1f} MB) blobs={len(manifest.blobs)} "
          f"blob_bytes={manifest.blob_bytes} seconds={manifest.seconds:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
