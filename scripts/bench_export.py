"""Export and secret-scan speed against reading + parsing the same bytes, both measured in the same run.

    .venv/bin/python scripts/bench_export.py [--messages 20000] [--sessions 200] [--runs 3] [--session FILE]
        [--corpus DIR [--scan-only]]

A generated session (user/assistant turns with Markdown, code fences, tool calls and results, a planted secret every
100 messages) is exported in-process as HTML, Markdown and JSON (redaction on), each figure as a ratio to the
baseline: read the file and orjson-parse every line. The secret scan (`sessdex secrets` logic) of a generated corpus
of small sessions is compared to reading + parsing that corpus. Goal: <= 3x for both.
Two session shapes: Markdown-heavy prose, and the shape of large real sessions (short replies, long tool output).
The 300 MB session and the 10,000-session corpus of the goal:
    scripts/gen_corpus.py --agent-dir D/agent --home D --sessions 1 --projects 1 --total-size 1MB --huge-mb 300 --damaged 0
    scripts/gen_corpus.py --agent-dir C/home/.xcsh/agent --home C/home --sessions 10000 --projects 40 --total-size 400MB --seed 11
then --session D/agent/sessions/*/*.jsonl --corpus C/home/.xcsh/agent/sessions.
Prints best-of-runs CPU seconds (user + system) and ratios, with the load average; on a loaded machine only the
ratios mean anything.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import orjson

from sessdex.catalog.export.html import OUTPUT_LIMIT, iter_html_page
from sessdex.catalog.export.markdown import iter_transcript_json, iter_transcript_markdown
from sessdex.catalog.export.scan import scan_session_file
from sessdex.catalog.export.transcript import load_transcript
from sessdex.core.paths import AgentPaths
from sessdex.core.runtime import SessionRuntime

TEXT = ("Here is the change:\n\n```python\ndef parse(line: str) -> dict:\n    return json.loads(line)\n```\n\n"
        "It handles **every** case; see `parse` and the [docs](https://example.com/docs). ") * 4


# A long command output or file read: most of the bytes of large real sessions are tool results like this one.
TOOL_OUTPUT = "".join(f"{index:6d}  src/module_{index % 97}.py: collected {index * 7 % 1000} items\n" for index in range(400))


def write_session(path: Path, messages: int, shape: str = "prose") -> None:
    """`shape` "prose": Markdown-heavy replies; "tools": short replies and tool results of ~20 KB each."""
    lines = [orjson.dumps({"type": "session", "version": 3, "id": "bench0000000001", "cwd": "/tmp/bench",
                           "timestamp": "2025-01-01T00:00:00.000Z"})]
    parent = None
    for index in range(messages):
        entry_id = f"e{index:08d}"
        secret = " key AKIA" + "IOSFODNN7EXAMPLE" if index % 100 == 0 else ""
        if index % 3 == 0:
            message = {"role": "user", "content": "please fix the parser" + secret, "timestamp": index}
        elif index % 3 == 1:
            message = {"role": "assistant", "model": "claude-bench", "timestamp": index,
                       "content": [{"type": "text", "text": TEXT if shape == "prose" else "Running the tests."},
                                   {"type": "toolCall", "id": f"t{index}", "name": "bash",
                                    "arguments": {"command": "pytest -x tests/"}}],
                       "usage": {"input": 100, "output": 50, "cost": {"total": 0.001}}}
        else:
            message = {"role": "toolResult", "toolCallId": f"t{index - 1}", "toolName": "bash", "timestamp": index,
                       "content": [{"type": "text", "text": (TOOL_OUTPUT if shape == "tools" else "test output line\n" * 40)
                                    + secret}]}
        lines.append(orjson.dumps({"type": "message", "id": entry_id, "parentId": parent,
                                   "timestamp": "2025-01-01T00:00:00.000Z", "message": message}))
        parent = entry_id
    path.write_bytes(b"\n".join(lines) + b"\n")


def read_and_parse(paths: list[Path]) -> None:
    for path in paths:
        for line in path.read_bytes().splitlines():
            if line:
                try:
                    orjson.loads(line)
                except orjson.JSONDecodeError:  # (the benchmark corpus holds a few damaged files on purpose)
                    pass


def best(runs: int, action: Callable[[], object]) -> float:
    """The least CPU time (user + system of this process, which does all the work in one thread) of `runs` runs:
    on a shared, loaded machine wall time mostly measures the other processes."""
    times = []
    for _ in range(runs):
        started = time.process_time()
        action()
        times.append(time.process_time() - started)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=20_000)
    parser.add_argument("--sessions", type=int, default=200)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--session", type=Path, action="append", default=[],
                        help="also export this session file (say, the 300 MB one of scripts/gen_corpus.py --huge-mb 300)")
    parser.add_argument("--corpus", type=Path, default=None,
                        help="scan the session files under this folder instead of a generated corpus (say, the "
                             "10,000-session corpus scripts/bench_serve.py --keep DIR writes: DIR/home/.xcsh/agent/sessions)")
    parser.add_argument("--scan-only", action="store_true", help="measure only the secret scan of the corpus")
    args = parser.parse_args()
    print(f"load average {os.getloadavg()[0]:.2f}; CPU seconds (user + system), best of {args.runs} runs")
    with tempfile.TemporaryDirectory(prefix="sessdex-bench-export-") as folder:
        root = Path(folder)
        runtime = SessionRuntime(paths=AgentPaths.from_env(root / "agent"))

        def export(path: Path, kind: str) -> Callable[[], object]:
            def run() -> object:  # streamed to nowhere, as `export -o FILE` streams to its file
                transcript = load_transcript(path, runtime, cut_outputs=None if kind == "json" else OUTPUT_LIMIT)
                chunks = {"html": iter_html_page, "md": iter_transcript_markdown, "json": iter_transcript_json}[kind]
                return sum(len(chunk) for chunk in chunks(transcript))  # type: ignore[operator]
            return run

        sessions = []
        for shape in () if args.scan_only else ("prose", "tools"):
            big = root / f"big-{shape}.jsonl"
            write_session(big, args.messages, shape)
            sessions.append((f"{shape} session: {big.stat().st_size / 1e6:.1f} MB, {args.messages} messages", big))
        sessions += [] if args.scan_only else [(f"{path}: {path.stat().st_size / 1e6:.1f} MB", path) for path in args.session]
        for title, big in sessions:
            print(title)
            baseline = best(args.runs, lambda path=big: read_and_parse([path]))  # type: ignore[misc]
            print(f"  read + parse            {baseline:8.3f} s   1.00x")
            for kind in ("html", "md", "json"):
                seconds = best(args.runs, export(big, kind))
                print(f"  export --format {kind:<5}   {seconds:8.3f} s   {seconds / baseline:6.2f}x  (goal <= 3x)")
        corpus = sorted(args.corpus.rglob("*.jsonl")) if args.corpus else []
        for index in range(0 if args.corpus else args.sessions):
            path = root / f"s{index:05d}.jsonl"
            write_session(path, 30)
            corpus.append(path)
        base = best(args.runs, lambda: read_and_parse(corpus))
        scan = best(args.runs, lambda: [scan_session_file(path) for path in corpus])
        print(f"corpus: {len(corpus)} sessions; read + parse {base:.3f} s, secret scan {scan:.3f} s "
              f"= {scan / base:.2f}x  (goal <= 3x)")


if __name__ == "__main__":
    main()
