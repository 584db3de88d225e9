"""A transcript as self-contained HTML: one body fragment (reusable by a web page) and a page wrapper around it.

Everything from the session is data: it is escaped, Markdown is rendered with raw HTML switched off and images in
Markdown disabled (a message cannot fetch anything), and only images stored in the session itself are shown, as
`data:` URIs of a known image type. The page carries a Content-Security-Policy that allows no script, no network
and only its own inline style (by hash), so even a renderer bug could not run or fetch anything.
"""

from __future__ import annotations

import base64
import binascii
import functools
import hashlib
import re
from collections.abc import Iterator, Sequence
from typing import Any

import orjson
from markdown_it import MarkdownIt
from pygments import highlight
from pygments.formatters import HtmlFormatter
from pygments.lexer import Lexer
from pygments.lexers import get_lexer_by_name
from pygments.util import ClassNotFound

from sessdex.catalog.export.transcript import Transcript, output_texts, shown_output

# Tool output and arguments longer than this are cut; the full length (of the text as the session holds it) is
# stated beside the cut.
OUTPUT_LIMIT = 20_000
# Text shown in a message (Markdown source) longer than this is cut the same way.
TEXT_LIMIT = 200_000
IMAGE_TYPES = frozenset({"image/png", "image/jpeg", "image/gif", "image/webp"})

# C0/C1 controls (but tab and newline) and the bidirectional overrides/isolates that can reorder what a reader sees.
_UNSAFE_CHARS = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\u200e\u200f\u061c]")

_FORMATTER = HtmlFormatter(nowrap=True, classprefix="hl-")

TRANSCRIPT_CSS = """
:root{color-scheme:light dark;--bg:#fff;--fg:#1f2328;--muted:#59636e;--line:#d1d9e0;--box:#f6f8fa;--user:#ddf4ff;
--err:#cf222e;--mark:#fff8c5}
@media (prefers-color-scheme:dark){:root{--bg:#0d1117;--fg:#e6edf3;--muted:#9198a1;--line:#3d444d;--box:#151b23;
--user:#0c2d4a;--err:#ff7b72;--mark:#3b2e00}}
*{box-sizing:border-box}
body{margin:0;background:var(--bg);color:var(--fg);font:15px/1.5 system-ui,-apple-system,"Segoe UI",sans-serif}
.sx-transcript{max-width:60rem;margin:0 auto;padding:1rem}
.sx-meta{border-bottom:1px solid var(--line);margin-bottom:1rem}
.sx-meta h1{font-size:1.4rem;margin:.2rem 0;overflow-wrap:anywhere}
.sx-meta dl{display:grid;grid-template-columns:max-content 1fr;gap:.1rem 1rem;margin:.5rem 0}
.sx-meta dt{color:var(--muted)}.sx-meta dd{margin:0;overflow-wrap:anywhere}
table.sx-models{border-collapse:collapse;margin:.5rem 0 1rem;font-size:.9rem}
table.sx-models td,table.sx-models th{border:1px solid var(--line);padding:.2rem .5rem;text-align:right}
table.sx-models td:first-child,table.sx-models th:first-child{text-align:left}
.sx-entry{border:1px solid var(--line);border-radius:6px;margin:.7rem 0;padding:.5rem .8rem;overflow-wrap:anywhere}
.sx-user{background:var(--user)}
.sx-head{color:var(--muted);font-size:.8rem;display:flex;gap:.8rem;flex-wrap:wrap}
.sx-role{font-weight:600;color:var(--fg)}
.sx-marker{border:1px dashed var(--line);border-radius:6px;margin:.7rem 0;padding:.4rem .8rem;background:var(--mark)}
details{border:1px solid var(--line);border-radius:4px;margin:.4rem 0;padding:.2rem .5rem;background:var(--box)}
summary{cursor:pointer;color:var(--muted)}
pre{white-space:pre-wrap;overflow-wrap:anywhere;background:var(--box);padding:.5rem;border-radius:4px;
font:13px/1.4 ui-monospace,SFMono-Regular,Menlo,monospace}
code{font-family:ui-monospace,SFMono-Regular,Menlo,monospace}
.sx-error{color:var(--err)}.sx-cut{color:var(--muted);font-style:italic}
img.sx-image{max-width:100%;height:auto;border:1px solid var(--line)}
.sx-branch{margin-left:1rem;border-left:2px solid var(--line);padding-left:.6rem}
@media print{body{background:#fff;color:#000}details{border:none}details>*{display:block}
.sx-entry{break-inside:avoid}}
""" + _FORMATTER.get_style_defs(".sx-transcript") + """
@media (prefers-color-scheme:dark){.sx-transcript pre span{filter:brightness(1.6)}}
"""


# The ASCII ones of those characters, as bytes: ASCII text (most tool output) is cleaned by a C-speed byte
# deletion, many times faster than the regular expression's scan.
_UNSAFE_ASCII = bytes((*range(0x00, 0x09), *range(0x0b, 0x20), 0x7f))


def clean(text: str) -> str:
    """`text` without control and bidirectional-override characters (tab and newline kept)."""
    if text.isascii():
        raw = text.encode("ascii")
        kept = raw.translate(None, _UNSAFE_ASCII)
        return text if len(kept) == len(raw) else kept.decode("ascii")
    return _UNSAFE_CHARS.sub("", text)


# What `html.escape(text, quote=True)` replaces, in its order ("&" first).
_HTML_SPECIALS = (("&", "&amp;"), ("<", "&lt;"), (">", "&gt;"), ('"', "&quot;"), ("'", "&#x27;"))


def _escape_html(text: str) -> str:
    """`html.escape(text, quote=True)`, done as fast on text that holds few of its characters: each is looked for
    first (a search many times faster than a `replace` that finds nothing), so tool output without any costs a few
    searches instead of five copies."""
    for special, entity in _HTML_SPECIALS:
        if special in text:
            text = text.replace(special, entity)
    return text


def escape(text: Any) -> str:
    """Any value as cleaned, escaped HTML text."""
    return _escape_html(clean(text if isinstance(text, str) else str(text)))


def _cut(texts: Sequence[str], limit: int) -> tuple[str, str]:
    """The output `texts` (joined by newlines) cut to `limit` characters and cleaned, and a note stating its full
    length when it was cut. The cut comes first: only what is shown is cleaned and escaped."""
    shown, length = shown_output(texts, limit)
    note = f'<p class="sx-cut">… cut: showing {limit:,} of {length:,} characters</p>' if length is not None else ""
    return clean(shown), note


# Code blocks longer than this are shown escaped but not coloured: Pygments' lexers are regular-expression driven and
# would make a page of large pasted files slow to export, while such blocks are read by scrolling, not by colour.
HIGHLIGHT_LIMIT = 20_000


@functools.lru_cache(maxsize=256)
def _lexer(language: str) -> Lexer | None:
    """The Pygments lexer for a fence's language name, or None; looked up once per name (the lookup scans every
    lexer's aliases and the installed plugins)."""
    try:
        return get_lexer_by_name(language)
    except ClassNotFound:
        return None


def _highlight(code: str, language: str, _attrs: Any) -> str:
    name = language.strip().split()[0] if language.strip() else ""
    lexer = _lexer(name) if name and len(code) <= HIGHLIGHT_LIMIT else None
    if lexer is None:
        return ""  # markdown-it escapes the code itself
    return str(highlight(code, lexer, _FORMATTER))


def _markdown() -> MarkdownIt:
    renderer = MarkdownIt("commonmark", {"html": False, "highlight": _highlight})
    renderer.enable("table").enable("strikethrough")
    renderer.disable("image")  # a message's own image links would be fetches; only stored images are shown
    return renderer


_MD = _markdown()


# Text in which Markdown could mean anything but paragraphs: a character outside letters, digits, spaces and
# plain punctuation (so no emphasis, code, link, HTML, entity, escape or table), a line starting with a digit, a
# space or a dash (lists, indented code, rules, setext headings), or a line ending with a space (hard breaks).
_NOT_PLAIN = re.compile(r"[^\w .,;:?!'\"/%@$()\n-]|_|^[\d -]|[ ]$", re.MULTILINE)
_PARAGRAPH_BREAK = re.compile(r"\n{2,}")


def _plain_paragraphs(text: str) -> str | None:
    """What markdown-it renders for `text` when it is plain paragraphs, without running it; None otherwise.

    Most messages (prompts, short replies, notes) are plain prose, and the Markdown engine is the slowest step of
    an export: this cheap check and `<p>` wrapping give the very same HTML for them.
    """
    if _NOT_PLAIN.search(text):
        return None
    paragraphs = [part for part in _PARAGRAPH_BREAK.split(text.strip("\n")) if part]
    return "".join(f"<p>{part.replace(chr(34), '&quot;')}</p>\n" for part in paragraphs)


def render_markdown(text: str) -> str:
    """Session Markdown as safe HTML (raw HTML shown as text, unsafe link schemes refused by markdown-it)."""
    shown, note = _cut((text,), TEXT_LIMIT)
    plain = _plain_paragraphs(shown)
    return (plain if plain is not None else str(_MD.render(shown))) + note


def _pre(texts: Sequence[str], limit: int = OUTPUT_LIMIT) -> str:
    shown, note = _cut(texts, limit)
    return f"<pre>{_escape_html(shown)}</pre>{note}"


def _image(block: dict[str, Any]) -> str:
    mime = block.get("mimeType")
    data = block.get("data")
    if mime not in IMAGE_TYPES or not isinstance(data, str):
        return '<p class="sx-cut">[image not shown: no stored image data]</p>'
    try:
        raw = base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        return '<p class="sx-cut">[image not shown: its data is not valid base64]</p>'
    encoded = base64.b64encode(raw).decode("ascii")
    return f'<img class="sx-image" alt="image from the session" src="data:{mime};base64,{encoded}">'


def _json_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    try:
        return orjson.dumps(value, option=orjson.OPT_INDENT_2).decode("utf-8")
    except TypeError:
        return str(value)


def _details(summary: str, body: str, *, css: str = "") -> str:
    extra = f' class="{css}"' if css else ""
    return f"<details{extra}><summary>{summary}</summary>{body}</details>"


def _content_blocks(content: Any) -> list[Any]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return content if isinstance(content, list) else []


def _render_blocks(content: Any) -> str:
    parts: list[str] = []
    for block in _content_blocks(content):
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        if kind == "text" and isinstance(block.get("text"), str):
            parts.append(render_markdown(block["text"]))
        elif kind == "thinking":
            text = str(block["thinking"]) if isinstance(block.get("thinking"), str) else ""
            parts.append(_details("Thinking", render_markdown(text)))
        elif kind == "toolCall":
            name = escape(block.get("name") or "tool")
            parts.append(_details(f"Tool call: <code>{name}</code>", _pre((_json_text(block.get("arguments")),))))
        elif kind == "image":
            parts.append(_image(block))
    return "".join(parts)


def _head(role: str, entry: dict[str, Any], model: Any = None) -> str:
    bits = [f'<span class="sx-role">{escape(role)}</span>']
    if model:
        bits.append(f"<span>{escape(model)}</span>")
    if entry.get("timestamp"):
        bits.append(f"<time>{escape(entry['timestamp'])}</time>")
    bits.append(f'<span class="sx-id">{escape(entry.get("id", ""))}</span>')
    return f'<div class="sx-head">{"".join(bits)}</div>'


def render_entry_html(entry: dict[str, Any]) -> str:
    """One entry as an HTML block, or "" for entries a reader does not need (settings changes, labels)."""
    kind = entry.get("type")
    anchor = f' id="e-{escape(entry.get("id", ""))}"'
    if kind == "message" and isinstance(entry.get("message"), dict):
        message = entry["message"]
        role = message.get("role")
        if role == "toolResult":
            name = escape(message.get("toolName") or "tool")
            body = _pre(output_texts(message.get("content")))
            body += "".join(_image(b) for b in _content_blocks(message.get("content"))
                            if isinstance(b, dict) and b.get("type") == "image")
            css = "sx-error" if message.get("isError") else ""
            label = "Tool error" if message.get("isError") else "Tool result"
            return f'<div class="sx-entry sx-tool"{anchor}>{_details(f"{label}: <code>{name}</code>", body, css=css)}</div>'
        if role == "bashExecution":
            command = escape(message.get("command") or "")
            output = message.get("output")
            body = _pre((output if isinstance(output, str) else str(output or ""),))
            return f'<div class="sx-entry sx-tool"{anchor}>{_details(f"Shell: <code>{command}</code>", body)}</div>'
        css = "sx-user" if role == "user" else "sx-assistant"
        body = _render_blocks(message.get("content"))
        if message.get("errorMessage"):
            body += f'<p class="sx-error">{escape(message["errorMessage"])}</p>'
        return (f'<div class="sx-entry {css}"{anchor}>{_head(str(role or "message"), entry, message.get("model"))}'
                f"{body}</div>")
    if kind == "compaction":
        summary = str(entry["summary"]) if isinstance(entry.get("summary"), str) else ""
        tokens = entry.get("tokensBefore")
        note = f" ({tokens:,} tokens before)" if isinstance(tokens, int) else ""
        return (f'<div class="sx-marker"{anchor}>Context compacted{escape(note)}'
                f'{_details("Compaction summary", render_markdown(summary))}</div>')
    if kind == "branch_summary":
        summary = str(entry["summary"]) if isinstance(entry.get("summary"), str) else ""
        return (f'<div class="sx-marker"{anchor}>Returned from a branch'
                f'{_details("Branch summary", render_markdown(summary))}</div>')
    if kind == "custom_message" and entry.get("display") is not False:
        return (f'<div class="sx-entry sx-custom"{anchor}>{_head(str(entry.get("customType") or "note"), entry)}'
                f"{_render_blocks(entry.get('content'))}</div>")
    if kind == "model_change":
        return f'<div class="sx-marker"{anchor}>Model changed to <code>{escape(entry.get("model", ""))}</code></div>'
    return ""


def _meta(transcript: Transcript) -> str:
    header = transcript.header
    title = transcript.title or f"Session {header.get('id', '')}"
    rows = [("Session", header.get("id")), ("Project", header.get("cwd")), ("Started", header.get("timestamp")),
            ("Last entry", transcript.last_timestamp),
            ("Entries", f"{len(transcript.shown)} shown of {len(transcript.entries)}")]
    items = "".join(f"<dt>{escape(key)}</dt><dd>{escape(value)}</dd>" for key, value in rows if value)
    table = ""
    if transcript.models:
        lines = "".join(
            f"<tr><td>{escape(name)}</td><td>{m.messages}</td><td>{m.input:,}</td><td>{m.output:,}</td>"
            f"<td>{m.cache_read:,}</td><td>{m.cache_write:,}</td><td>${m.cost:.4f}</td></tr>"
            for name, m in sorted(transcript.models.items()))
        table = ('<table class="sx-models"><tr><th>Model</th><th>Replies</th><th>Input</th><th>Output</th>'
                 f"<th>Cache read</th><th>Cache write</th><th>Cost</th></tr>{lines}</table>")
    return f'<header class="sx-meta"><h1>{escape(title)}</h1><dl>{items}</dl>{table}</header>'


def iter_transcript_html(transcript: Transcript) -> Iterator[str]:
    """The transcript as an HTML fragment (a `<div class="sx-transcript">`) styled by TRANSCRIPT_CSS, no script,
    in pieces as the entries are read (a large session is never held whole)."""
    yield f'<div class="sx-transcript">{_meta(transcript)}<main>'
    if transcript.all_branches:
        yield from _tree_blocks(transcript)
    else:
        for entry in transcript.shown:
            yield render_entry_html(entry)
    yield "</main></div>"


def render_transcript_html(transcript: Transcript) -> str:
    """The whole fragment of `iter_transcript_html` as one string (for a web page)."""
    return "".join(iter_transcript_html(transcript))


def _tree_blocks(transcript: Transcript) -> Iterator[str]:
    """Every branch: the main line first, then each later branch as an indented block labelled with its fork point."""
    assert transcript.entry_at is not None
    children: dict[Any, list[int]] = {}
    ids = set(transcript.ids)
    for index, parent in enumerate(transcript.parent_ids):
        children.setdefault(parent if parent in ids else None, []).append(index)
    starts: list[tuple[int, Any]] = [(root, None) for root in children.get(None, [])]
    while starts:
        first, fork = starts.pop(0)
        if fork is not None:
            yield (f'<section class="sx-branch"><p class="sx-marker">Branch from '
                   f'<a href="#e-{escape(fork)}">{escape(fork)}</a></p>')
        node: int | None = first
        while node is not None:
            yield render_entry_html(transcript.entry_at(node))
            kids = children.get(transcript.ids[node], [])
            starts.extend((kid, transcript.ids[node]) for kid in kids[1:])
            node = kids[0] if kids else None
        if fork is not None:
            yield "</section>"


def content_security_policy(css: str) -> str:
    """No script, no network, no forms; images only from data URIs; the one inline style by its hash.

    (`frame-ancestors` is left out: browsers ignore it in a `<meta>` policy and log an error.)"""
    digest = base64.b64encode(hashlib.sha256(css.encode("utf-8")).digest()).decode("ascii")
    return (f"default-src 'none'; img-src data:; style-src 'sha256-{digest}'; base-uri 'none'; form-action 'none'")


def iter_html_page(transcript: Transcript) -> Iterator[str]:
    """A whole self-contained HTML document around the transcript fragment, in pieces."""
    title = escape(transcript.title or f"Session {transcript.header.get('id', '')}")
    yield ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
           f'<meta http-equiv="Content-Security-Policy" content="{content_security_policy(TRANSCRIPT_CSS)}">'
           '<meta name="viewport" content="width=device-width,initial-scale=1">'
           '<meta name="referrer" content="no-referrer">'
           f"<title>{title}</title><style>{TRANSCRIPT_CSS}</style></head><body>")
    yield from iter_transcript_html(transcript)
    yield "</body></html>\n"


def render_html_page(transcript: Transcript) -> str:
    """The whole document of `iter_html_page` as one string."""
    return "".join(iter_html_page(transcript))
