"""A transcript as Markdown for pasting into issues: fenced code, tool calls and thinking in `<details>`.

Session text goes into fences longer than any backtick run inside it, so it can never close its fence; text placed
in HTML (`<summary>`) is escaped, so a message holding `</details>` stays text.
"""

from __future__ import annotations

import html
import json
import re
from collections.abc import Iterator, Sequence
from typing import Any

import orjson

from sessdex.catalog.export.html import OUTPUT_LIMIT, clean
from sessdex.catalog.export.transcript import Transcript, output_texts, shown_output


def fence(text: str, language: str = "") -> str:
    """`text` in a backtick fence longer than any backtick run in it."""
    # (the membership test first: it is a C-speed byte search, the regular expression a slow scan)
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0) if "`" in text else 0
    ticks = "`" * max(3, longest + 1)
    return f"{ticks}{language}\n{text}\n{ticks}\n"


def _cut(texts: Sequence[str]) -> str:
    """The output `texts` (joined by newlines) fenced, cut first to OUTPUT_LIMIT characters with its full length
    stated, as the HTML page cuts it."""
    shown, length = shown_output(texts, OUTPUT_LIMIT)
    fenced = fence(clean(shown))
    return fenced if length is None else fenced + f"\n*… cut: showing {OUTPUT_LIMIT:,} of {length:,} characters*\n"


def _details(summary: str, body: str) -> str:
    return f"<details><summary>{html.escape(clean(summary))}</summary>\n\n{body}\n</details>\n"


def _blocks(content: Any) -> list[Any]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return content if isinstance(content, list) else []


def _json_text(value: Any) -> str:
    return value if isinstance(value, str) else orjson.dumps(value, option=orjson.OPT_INDENT_2).decode("utf-8")


def render_entry_markdown(entry: dict[str, Any]) -> str:
    kind = entry.get("type")
    if kind == "message" and isinstance(entry.get("message"), dict):
        message = entry["message"]
        role = str(message.get("role") or "message")
        if role == "toolResult":
            texts = output_texts(message.get("content"))
            label = "Tool error" if message.get("isError") else "Tool result"
            return _details(f"{label}: {message.get('toolName') or 'tool'}", _cut(texts))
        if role == "bashExecution":
            output = message.get("output")
            return _details(f"Shell: {message.get('command') or ''}",
                            _cut((output if isinstance(output, str) else str(output or ""),)))
        head = f"### {role}"
        if message.get("model"):
            head += f" · {clean(str(message['model']))}"
        if entry.get("timestamp"):
            head += f" · {clean(str(entry['timestamp']))}"
        parts = [head + "\n"]
        for block in _blocks(message.get("content")):
            if not isinstance(block, dict):
                continue
            if block.get("type") == "text" and isinstance(block.get("text"), str):
                parts.append(clean(block["text"]) + "\n")
            elif block.get("type") == "thinking" and isinstance(block.get("thinking"), str):
                parts.append(_details("Thinking", clean(block["thinking"])))
            elif block.get("type") == "toolCall":
                parts.append(_details(f"Tool call: {block.get('name') or 'tool'}",
                                      _cut((_json_text(block.get("arguments")),))))
            elif block.get("type") == "image":
                parts.append("*[image]*\n")
        return "\n".join(parts)
    if kind == "compaction":
        return "---\n*Context compacted*\n\n" + _details("Compaction summary", clean(str(entry.get("summary") or "")))
    if kind == "branch_summary":
        return "---\n*Returned from a branch*\n\n" + _details("Branch summary", clean(str(entry.get("summary") or "")))
    if kind == "model_change":
        return f"*Model changed to `{clean(str(entry.get('model') or ''))}`*\n"
    return ""


def iter_transcript_markdown(transcript: Transcript) -> Iterator[str]:
    """The transcript as Markdown, in pieces as the entries are read."""
    header = transcript.header
    lines = [f"# {clean(transcript.title or 'Session ' + str(header.get('id', '')))}", ""]
    for key, value in (("Session", header.get("id")), ("Project", header.get("cwd")),
                       ("Started", header.get("timestamp"))):
        if value:
            lines.append(f"- **{key}:** {clean(str(value))}")
    for name, totals in sorted(transcript.models.items()):
        lines.append(f"- **{clean(name)}:** {totals.messages} replies, {totals.input:,} in / {totals.output:,} out "
                     f"tokens, ${totals.cost:.4f}")
    lines.append("")
    yield "\n".join(lines) + "\n"
    first = True
    for entry in transcript.shown:
        part = render_entry_markdown(entry)
        if part:
            yield part if first else "\n" + part
            first = False


def render_transcript_markdown(transcript: Transcript) -> str:
    return "".join(iter_transcript_markdown(transcript))


def iter_transcript_json(transcript: Transcript) -> Iterator[bytes]:
    """The header and the shown entries (blobs resolved) as one JSON document (indented), in pieces."""
    head = {"header": transcript.header, "title": transcript.title, "leafId": transcript.leaf_id,
            "allBranches": transcript.all_branches}
    opening = orjson.dumps(head, option=orjson.OPT_INDENT_2)
    yield opening[:-2] + b',\n  "entries": ['  # the document without its closing "\n}", the entries to follow
    separator = b"\n    "
    for entry in transcript.shown:
        # Each entry indented one level further; JSON text never holds a raw newline, so this only re-indents.
        yield separator + _entry_json(entry).replace(b"\n", b"\n    ")
        separator = b",\n    "
    yield (b"\n  ]\n}\n" if separator != b"\n    " else b"]\n}\n")


def _entry_json(entry: dict[str, Any]) -> bytes:
    try:
        return orjson.dumps(entry, option=orjson.OPT_INDENT_2)
    except TypeError:  # a lone surrogate from a lenient read: the stdlib writes it escaped
        return json.dumps(entry, indent=2).encode("ascii")


def render_transcript_json(transcript: Transcript) -> bytes:
    return b"".join(iter_transcript_json(transcript))
