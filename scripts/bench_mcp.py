"""Per-call latency of `sessdex mcp`'s tools against the same CLI command, both measured in the same run.

    .venv/bin/python scripts/bench_mcp.py [--workdir /tmp/sessdex-bench-mcp] [--sessions 10000] [--projects 300] \
        [--total-size 1.07GB] [--huge-mb 300] [--runs 15]

sessdex is installed as users install it (a wheel of this work tree in a scratch venv, scripts/regular_install.py);
the corpus (scripts/gen_corpus.py) is generated once into the work dir, indexed, and its prompt history back-filled
(`sessdex history import`). The server runs as a subprocess (`sessdex mcp`, stdio) driven by the MCP SDK's client,
which keeps it and its catalog open; each tool call is timed from the client (the JSON-RPC round trip included)
against the whole CLI process that gives the same answer (`--json`), and `python -c pass` is the start-up floor.
Goal of the issue: a call takes at most 50 ms more than the CLI command. Medians of `--runs` calls (after one
warm-up call each) and their p95; on a loaded machine compare the figures of one run only.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import orjson

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "scripts"))

from bench_catalog import common_word  # noqa: E402
from gen_corpus import generate_corpus, parse_size  # noqa: E402
from regular_install import install_regular  # noqa: E402

BUDGET_MS = 50.0


def median_and_p95(samples: list[float]) -> tuple[float, float]:
    ordered = sorted(samples)
    return statistics.median(ordered), ordered[min(len(ordered) - 1, int(len(ordered) * 0.95))]


def time_process(argv: list[str], cwd: Path, env: dict[str, str], runs: int) -> list[float]:
    """Wall milliseconds of `runs` whole processes (each must succeed)."""
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        result = subprocess.run(argv, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        times.append((time.perf_counter() - started) * 1000)
        if result.returncode != 0:
            raise SystemExit(f"failed: {' '.join(argv)}\n{result.stderr.decode(errors='replace')}")
    return times


async def time_calls(command: list[str], cwd: Path, env: dict[str, str], calls: dict[str, tuple[str, dict[str, Any]]],
                     runs: int) -> dict[str, list[float]]:
    """Milliseconds of `runs` calls of each tool on one running server, after a warm-up call each."""
    from mcp import Client, StdioServerParameters

    params = StdioServerParameters(command=command[0], args=command[1:], cwd=str(cwd), env=env)
    found: dict[str, list[float]] = {}
    async with Client(params, read_timeout_seconds=600) as client:
        for label, (tool, arguments) in calls.items():
            result = await client.call_tool(tool, arguments)
            if result.is_error:
                raise SystemExit(f"{label}: {result.content[0].text}")
            samples = []
            for _ in range(runs):
                started = time.perf_counter()
                await client.call_tool(tool, arguments)
                samples.append((time.perf_counter() - started) * 1000)
            found[label] = samples
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workdir", type=Path, default=Path("/tmp/sessdex-bench-mcp"))
    parser.add_argument("--sessions", type=int, default=10_000)
    parser.add_argument("--projects", type=int, default=300)
    parser.add_argument("--total-size", type=parse_size, default=parse_size("1.07GB"))
    parser.add_argument("--huge-mb", type=float, default=300.0)
    parser.add_argument("--seed", type=int, default=3)
    parser.add_argument("--runs", type=int, default=15)
    args = parser.parse_args()

    workdir = args.workdir.resolve()
    workdir.mkdir(parents=True, exist_ok=True)
    python = install_regular(workdir / "regular-install")
    sessdex = str(Path(python).with_name("sessdex"))
    agent, home = workdir / "agent", workdir / "home"
    env = {**{key: value for key, value in os.environ.items() if not key.startswith("SESSDEX_")},
           "HOME": str(home), "PI_CODING_AGENT_DIR": str(agent)}
    if not (agent / "sessions").exists():
        manifest = generate_corpus(agent, sessions=args.sessions, projects=args.projects,
                                   total_bytes=args.total_size, seed=args.seed, huge_bytes=int(args.huge_mb * 1e6),
                                   home=home)
        (workdir / "manifest.json").write_bytes(manifest.to_json())
        print(f"corpus: generated in {manifest.seconds:.1f} s", flush=True)
    manifest = orjson.loads((workdir / "manifest.json").read_bytes())
    sessions = manifest["sessions"]
    print(f"corpus: {len(sessions)} files, {sum(s['size'] for s in sessions) / 1e6:.1f} MB, "
          f"{len(manifest['projects'])} projects, in {workdir}", flush=True)
    base = [sessdex, "--agent-dir", str(agent)]
    started = time.perf_counter()
    subprocess.run([*base, "index"], env=env, check=True, stdout=subprocess.DEVNULL)
    if not (agent / "history.db").exists():
        subprocess.run([*base, "history", "import"], env=env, check=True, stdout=subprocess.DEVNULL)
    print(f"catalog and history ready in {time.perf_counter() - started:.1f} s", flush=True)

    # The project with the most sessions (run from its folder, as an agent starts the server in its project), the
    # median-sized session of it (by a unique id prefix), and a word of most sessions' text.
    valid = [s for s in sessions if s["kind"] == "normal" and s["message_count"]]
    by_project: dict[str, list[dict[str, Any]]] = {}
    for item in valid:
        by_project.setdefault(item["cwd"], []).append(item)
    cwd_text, mine = max(by_project.items(), key=lambda pair: len(pair[1]))
    cwd = Path(cwd_text)
    cwd.mkdir(parents=True, exist_ok=True)
    target = sorted(mine, key=lambda s: s["size"])[len(mine) // 2]
    prefix = target["session_id"][:12]
    word = common_word(agent / "catalog.db")
    print(f"project {cwd} ({len(mine)} sessions), session {prefix} ({target['size'] / 1e3:.0f} kB), word {word!r}",
          flush=True)

    pairs: dict[str, tuple[tuple[str, dict[str, Any]], list[str]]] = {
        "list_sessions": (("list_sessions", {"limit": 20}), ["list", "--json"]),
        f"search_sessions {word}": (("search_sessions", {"query": word, "limit": 20}), ["search", word, "--json"]),
        f"search_sessions {word} --all": (("search_sessions", {"query": word, "all_projects": True, "limit": 20}),
                                          ["search", word, "--all", "--json"]),
        f"search_prompts {word}": (("search_prompts", {"query": word}), ["history", "search", word, "--json"]),
        "usage_report daily": (("usage_report", {"kind": "daily"}), ["usage", "--json"]),
        "usage_report model --all": (("usage_report", {"kind": "model", "all_projects": True}),
                                     ["usage", "model", "--all", "--json"]),
        f"read_session {prefix} transcript": (("read_session", {"session": prefix, "view": "transcript"}),
                                              ["export", prefix, "--format", "md"]),
        f"read_session {prefix} context": (("read_session", {"session": prefix, "view": "context"}),
                                           ["context", target["path"], "--json"]),
    }
    floor = statistics.median(time_process([python, "-c", "pass"], cwd, env, args.runs))
    cli = {label: statistics.median(time_process([*base, *argv], cwd, env, args.runs))
           for label, (_call, argv) in pairs.items()}
    calls = asyncio.run(time_calls([*base, "mcp"], cwd, env, {label: call for label, (call, _argv) in pairs.items()},
                                   args.runs))
    print(f"\n`python -c pass`: {floor:.1f} ms (median of {args.runs})\n")
    print(f"{'tool call':44} {'median':>8} {'p95':>8} {'CLI':>8} {'call/CLI':>9}  goal: call <= CLI + {BUDGET_MS:.0f} ms")
    failed = 0
    for label, samples in calls.items():
        median, p95 = median_and_p95(samples)
        ok = median <= cli[label] + BUDGET_MS
        failed += not ok
        print(f"{label:44} {median:7.1f}ms {p95:7.1f}ms {cli[label]:7.1f}ms {median / cli[label]:8.2f}x  "
              f"{'ok' if ok else 'OVER'}")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
