"""Long tool outputs are cut before they are redacted and rendered: a secret across the cut is still redacted whole,
the note states the output's length as the session holds it, in HTML and Markdown alike."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import orjson
import pytest

from sessdex.catalog.export.html import OUTPUT_LIMIT, render_html_page
from sessdex.catalog.export.markdown import render_transcript_markdown
from sessdex.catalog.export.transcript import _load_whole, load_transcript
from sessdex.catalog.secrets import find_secrets, redact_head
from sessdex.core.runtime import SessionRuntime
from tests.core.sessiontree import BASE_MS, Tree, header, make_tree, message, user

SESSDEX = Path(__file__).resolve().parents[2] / ".venv" / "bin" / "sessdex"
SESSION_ID = "ef56000000000001"
GITHUB_TOKEN = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
AWS_KEY = "AKIA" + "IOSFODNN7EXAMPLE"


def write_session(tree: Tree, *results: dict[str, object]) -> Path:
    path = tree.paths.sessions_root / "p" / f"2025-01-01T00-00-00-000Z_{SESSION_ID}.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    records: list[dict[str, object]] = [header(SESSION_ID, "/tmp/p"), user("go")]
    parent = "u0000001"
    for index, content in enumerate(results):
        entry_id = f"r{index:07d}"
        records.append(message("toolResult", content, entry_id, parent, toolCallId="t", toolName="bash"))
        parent = entry_id
    path.write_bytes(b"".join(orjson.dumps(record) + b"\n" for record in records))
    return path


def exports(tree: Tree, path: Path, *, redact: bool = True, whole: bool = False) -> tuple[str, str]:
    # `whole`: the loader of files that must be read whole (migrated or damaged) cuts and redacts the same way.
    runtime = SessionRuntime(paths=tree.paths)
    transcript = (_load_whole(path, runtime, None, False, redact, OUTPUT_LIMIT) if whole
                  else load_transcript(path, runtime, redact_secrets=redact, cut_outputs=OUTPUT_LIMIT))
    return render_html_page(transcript), render_transcript_markdown(transcript)


def note(length: int) -> tuple[str, str]:
    return (f"cut: showing {OUTPUT_LIMIT:,} of {length:,} characters</p>",
            f"*… cut: showing {OUTPUT_LIMIT:,} of {length:,} characters*")


@pytest.mark.parametrize("whole", [False, True])
@pytest.mark.parametrize("before_cut", [1, 10, len(GITHUB_TOKEN) - 1])
def test_a_secret_across_the_cut_is_redacted_whole(tmp_path: Path, before_cut: int, whole: bool) -> None:
    tree = make_tree(tmp_path)
    text = "x" * (OUTPUT_LIMIT - before_cut - 1) + " " + GITHUB_TOKEN + " T-A-I-L " + "y" * 50_000
    path = write_session(tree, [{"type": "text", "text": text}])
    for page in exports(tree, path, whole=whole):
        assert "[REDACTED:github-token]" in page
        # No piece of the token's own characters (past its prefix) shows.
        assert GITHUB_TOKEN[4:12] not in page and "ghp_a1" not in page and "T-A-I-L" not in page


@pytest.mark.parametrize("whole", [False, True])
def test_the_note_states_the_length_the_session_holds(tmp_path: Path, whole: bool) -> None:
    # A secret before the cut (its marker is longer than it) and control characters (dropped from what is shown)
    # change what is shown, never the stated length.
    tree = make_tree(tmp_path)
    text = f"key {AWS_KEY} \x1b[31mred\x1b[0m " + "z" * 30_000
    path = write_session(tree, [{"type": "text", "text": text}])
    html, markdown = exports(tree, path, whole=whole)
    html_note, markdown_note = note(len(text))
    assert html_note in html and markdown_note in markdown and AWS_KEY not in html + markdown
    assert "[REDACTED:aws-access-key]" in html and "\x1b" not in html + markdown


def test_a_tool_result_of_several_text_blocks_is_one_output(tmp_path: Path) -> None:
    # The blocks are shown joined by newlines and cut as one; a secret across the cut in the second is redacted.
    tree = make_tree(tmp_path)
    first = "a" * 15_000
    second = "b" * (OUTPUT_LIMIT - len(first) - 1 - 5) + " " + GITHUB_TOKEN + " " + "c" * 10_000
    image = {"type": "image", "mimeType": "image/png", "data": "iVBORw0KGgo="}
    path = write_session(tree, [{"type": "text", "text": first}, image, {"type": "text", "text": second},
                                {"type": "text", "text": "last block"}])
    html, markdown = exports(tree, path)
    length = len(first) + 1 + len(second) + 1 + len("last block")
    for page, stated in zip((html, markdown), note(length)):
        assert stated in page and first + "\n" + "b" * 100 in page
        assert "[REDACTED:github-token]" in page and "ghp_" not in page and "last block" not in page


def test_no_redact_still_cuts(tmp_path: Path) -> None:
    tree = make_tree(tmp_path)
    text = GITHUB_TOKEN + " " + "w" * 40_000 + " END-OF-OUTPUT"
    path = write_session(tree, [{"type": "text", "text": text}])
    os.utime(path, (BASE_MS / 1000, BASE_MS / 1000))
    environment = {**os.environ, "HOME": str(tree.home), "PI_CODING_AGENT_DIR": str(tree.paths.agent_dir)}
    for kind, stated in zip(("html", "md"), note(len(text))):
        done = subprocess.run([str(SESSDEX), "export", str(path), "--format", kind, "--no-redact", "-o", "-"],
                              env=environment, capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stderr
        assert stated in done.stdout and GITHUB_TOKEN in done.stdout and "END-OF-OUTPUT" not in done.stdout


@pytest.mark.parametrize("limit", [0, 5, 99, 100, 101, 120, 5_000, 40_000])
def test_redact_head_is_the_head_of_the_whole_redaction(limit: int) -> None:
    # What redact_head keeps is what a redaction of the whole text shows before the cut, a secret across it whole.
    text = ("p" * 100 + " " + GITHUB_TOKEN + " password = 'hunter2hunter2' " + "q" * 39_000 + " " + AWS_KEY
            + " " + "r" * 30_000)
    expected: list[str] = []
    position = 0
    for found in find_secrets(text):
        if found.start >= limit:
            break
        expected += [text[position:found.start], f"[REDACTED:{found.kind}]"]
        position = found.end
    expected.append(text[position:limit] if position < limit else "")
    assert redact_head(text, limit) == "".join(expected)
