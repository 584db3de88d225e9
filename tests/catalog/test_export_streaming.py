"""Export reads a session entry by entry: bounded memory on a large file, the same output as the whole-file loader,
and no half-written output file when an export stops part-way."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from sessdex.catalog.export.html import render_html_page
from sessdex.catalog.export.markdown import render_transcript_json, render_transcript_markdown
from sessdex.catalog.export.transcript import _load_whole, load_transcript
from sessdex.core.runtime import SessionRuntime
from tests.core.sessiontree import BASE_MS, make_tree

SESSDEX = Path(__file__).resolve().parents[2] / ".venv" / "bin" / "sessdex"
SESSION_ID = "cd34000000000001"
AWS_KEY = "AKIA" + "IOSFODNN7EXAMPLE"


def session_lines(count: int, payload: int) -> list[bytes]:
    """A header and `count` entries on the main branch (tool results of `payload` characters), a session name, and a
    side branch forked early; the main branch ends the file, so it is the default leaf."""
    lines = [orjson.dumps({"type": "session", "version": 3, "id": SESSION_ID, "cwd": "/tmp/p",
                           "timestamp": "2025-01-01T00:00:00.000Z"})]
    parent = None
    for index in range(count):
        entry_id = f"e{index:07d}"
        if index % 2 == 0:
            message = {"role": "user", "content": f"question {index} key {AWS_KEY}", "timestamp": index}
        else:
            message = {"role": "toolResult", "toolCallId": "t", "toolName": "bash", "timestamp": index,
                       "content": [{"type": "text", "text": f"out {index} " + "x" * payload}]}
        lines.append(orjson.dumps({"type": "message", "id": entry_id, "parentId": parent,
                                   "timestamp": "2025-01-01T00:00:00.000Z", "message": message}))
        parent = entry_id
        if index == 2:
            lines.append(orjson.dumps({"type": "message", "id": "side0001", "parentId": "e0000001",
                                       "timestamp": "2025-01-01T00:00:00.000Z",
                                       "message": {"role": "user", "content": "a side branch"}}))
            lines.append(orjson.dumps({"type": "session_info", "id": "n0000001", "parentId": parent,
                                       "name": "Streamed"}))
            parent = "n0000001"
    return lines


def outputs(path: Path, runtime: SessionRuntime, *, whole: bool, **options: object) -> tuple[str, str, bytes]:
    load = _load_whole if whole else load_transcript
    transcript = (load(path, runtime, options.get("leaf_id"), bool(options.get("all_branches")), True) if whole
                  else load(path, runtime, **options))  # type: ignore[operator]
    return render_html_page(transcript), render_transcript_markdown(transcript), render_transcript_json(transcript)


@pytest.mark.parametrize("options", [{}, {"all_branches": True}, {"leaf_id": "side"}])
def test_streamed_export_equals_the_whole_file_loader(tmp_path: Path, options: dict[str, object]) -> None:
    tree = make_tree(tmp_path)
    runtime = SessionRuntime(paths=tree.paths)
    path = tmp_path / "s.jsonl"
    path.write_bytes(b"\n".join(session_lines(40, 50)) + b"\n")
    streamed = outputs(path, runtime, whole=False, **options)
    assert streamed == outputs(path, runtime, whole=True, **options)
    html, markdown, document = streamed
    assert AWS_KEY not in html + markdown and AWS_KEY.encode() not in document
    assert "<title>Streamed</title>" in html and ("a side branch" in html) == bool(options)
    parsed = json.loads(document)
    transcript = load_transcript(path, runtime, **options)  # type: ignore[arg-type]
    assert transcript.shown[2:5] == list(transcript.shown)[2:5] and transcript.shown[-1] == parsed["entries"][-1]
    assert parsed["title"] == "Streamed" and parsed["entries"][0]["id"] == "e0000000"


def test_old_and_damaged_files_are_loaded_whole_as_the_agent_would(tmp_path: Path) -> None:
    tree = make_tree(tmp_path)
    runtime = SessionRuntime(paths=tree.paths)
    lines = session_lines(6, 10)
    damaged = tmp_path / "damaged.jsonl"  # a value spread over two lines: the lenient parser reads it whole
    damaged.write_bytes(b"\n".join([*lines[:3], b'{"type":"message","id":"m1","parentId":"e0000001",',
                                    b'"message":{"role":"user","content":"split value"}}', *lines[3:]]) + b"\n")
    assert "split value" in render_transcript_markdown(load_transcript(damaged, runtime, all_branches=True))
    old = tmp_path / "v1.jsonl"  # version 1: no ids; the agent assigns them on load
    old.write_bytes(orjson.dumps({"type": "session", "id": SESSION_ID, "cwd": "/tmp/p", "timestamp": "2025"})
                    + b"\n" + orjson.dumps({"type": "message", "message": {"role": "user", "content": "v1 text"}})
                    + b"\n")
    transcript = load_transcript(old, runtime)
    assert "v1 text" in render_transcript_markdown(transcript) and len(transcript.shown) == 1


# Runs a command as its only child and prints that child's peak resident memory in KiB.
_PEAK = ("import resource, subprocess, sys; done = subprocess.run(sys.argv[1:], capture_output=True); "
         "sys.stderr.write(done.stderr.decode()); "
         "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss if done.returncode == 0 else -1)")


def peak_rss_mib(*command: str, env: dict[str, str]) -> float:
    done = subprocess.run([sys.executable, "-c", _PEAK, *command], env=env, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0 and int(done.stdout) > 0, done.stderr
    return int(done.stdout) / 1024


def test_export_of_a_large_session_stays_in_bounded_memory(tmp_path: Path) -> None:
    """A 115 MB session exports within a small fixed amount of memory: the entries are never all held."""
    tree = make_tree(tmp_path)
    project = tree.project("proj")
    path = project / f"2025-01-01T00-00-00-000Z_{SESSION_ID}.jsonl"
    with path.open("wb") as handle:
        for line in session_lines(12_000, 20_000):
            handle.write(line + b"\n")
    os.utime(path, (BASE_MS / 1000, BASE_MS / 1000))
    size_mib = path.stat().st_size / (1 << 20)
    assert size_mib > 100
    env = {**os.environ, "HOME": str(tree.home), "PI_CODING_AGENT_DIR": str(tree.paths.agent_dir)}
    for kind in ("md", "json", "html"):
        out = tmp_path / f"out.{kind}"
        peak = peak_rss_mib(str(SESSDEX), "export", str(path), "--format", kind, "-o", str(out), env=env)
        assert out.stat().st_size > 1_000_000
        # Holding the file's bytes alone would take size_mib; its parsed entries several times that.
        assert peak < 100, (kind, peak, size_mib)


def test_an_export_stopped_part_way_leaves_no_output_file(tmp_path: Path) -> None:
    from sessdex.catalog.cli.export_commands import write_output
    from sessdex.core.errors import UsageError

    def chunks_then_failure():  # type: ignore[no-untyped-def]
        yield b"<!DOCTYPE html>"
        raise OSError(28, "No space left on device")

    target = tmp_path / "page.html"
    with pytest.raises(UsageError, match="No space left"):
        write_output(str(target), chunks_then_failure(), force=False)
    assert sorted(os.listdir(tmp_path)) == []
    target.write_text("kept")
    with pytest.raises(UsageError):
        write_output(str(target), chunks_then_failure(), force=True)
    assert target.read_text() == "kept" and sorted(os.listdir(tmp_path)) == ["page.html"]


def test_a_damaged_line_the_first_pass_did_not_parse_is_read_as_a_whole_load_reads_it(tmp_path: Path) -> None:
    # A torn write followed by the next append: two entries on one line, which the first pass takes by its first
    # bytes without parsing. The lenient parser keeps the line's first value; the streamed export must too.
    tree = make_tree(tmp_path)
    runtime = SessionRuntime(paths=tree.paths)
    lines = session_lines(6, 10)
    glued = lines[3] + lines[4]
    path = tmp_path / "glued.jsonl"
    path.write_bytes(b"\n".join([*lines[:3], glued, *lines[5:]]) + b"\n")
    streamed = outputs(path, runtime, whole=False, all_branches=True)
    assert streamed == outputs(path, runtime, whole=True, all_branches=True)
    assert "question 2 key" in streamed[1]


def test_only_lines_where_a_rule_may_match_are_redacted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Lines holding a rule's keyword only as an ordinary word ("token", "secret", "keyboard") are handed over as
    # read: no rule runs on them. The line holding a real secret is still redacted.
    from sessdex.catalog.export import transcript as transcript_module

    tree = make_tree(tmp_path)
    runtime = SessionRuntime(paths=tree.paths)
    texts = ["the token expired, refresh it", "a secret to nobody", "the keyboard layout", f"key {AWS_KEY}"]
    lines = [orjson.dumps({"type": "session", "version": 3, "id": SESSION_ID, "cwd": "/tmp/p",
                           "timestamp": "2025-01-01T00:00:00.000Z"})]
    for index, text in enumerate(texts):
        lines.append(orjson.dumps({"type": "message", "id": f"e{index}", "parentId": f"e{index - 1}" if index else None,
                                   "timestamp": "2025-01-01T00:00:00.000Z",
                                   "message": {"role": "user", "content": text}}))
    path = tmp_path / "words.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n")
    redacted: list[str] = []
    real_redact_value = transcript_module.redact_value

    def counting(value: object, keywords: tuple[str, ...] | None = None) -> object:
        if isinstance(value, dict) and "message" in value:
            redacted.append(str(value["message"]["content"]))
        return real_redact_value(value, keywords)

    monkeypatch.setattr(transcript_module, "redact_value", counting)
    markdown = render_transcript_markdown(load_transcript(path, runtime))
    assert redacted == [f"key {AWS_KEY}"]
    assert AWS_KEY not in markdown and "[REDACTED:aws-access-key]" in markdown and "the token expired" in markdown
