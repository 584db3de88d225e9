"""Benchmark what the shell integration costs at the prompt: `sessdex init SHELL` (every new shell) and
`sessdex complete-sessions WORD` (every Tab press), each a whole process, against `python -c pass` and
`python -c "import argparse"` measured in the same run, alternating run by run so machine load weighs on all alike.

    .venv/bin/python scripts/bench_shell.py [--workdir /tmp/sessdex-bench-shell] [--sessions 10000] \
        [--projects 40] [--total-size 200MB] [--runs 15]

The corpus (scripts/gen_corpus.py) is generated once into the work dir and indexed (`sessdex index`); later runs
reuse it. Goals: `init` within 2x `python -c pass` and below `python -c "import argparse"`; completion no slower
than `sessdex recent` (+20%). Neither builds the argument parser (tests/catalog/test_shell_init.py).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "scripts"))

from gen_corpus import generate_corpus, parse_size

SESSDEX = str(Path(sys.executable).with_name("sessdex"))


def wall_seconds(argv: list[str], env: dict[str, str]) -> float:
    """Run one process to completion (output discarded, exit 0 required) and time it."""
    started = time.perf_counter()
    done = subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, check=False)
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"{argv} failed: {done.stderr.decode(errors='replace')}")
    return seconds


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workdir", type=Path, default=Path("/tmp/sessdex-bench-shell"))
    parser.add_argument("--sessions", type=int, default=10_000)
    parser.add_argument("--projects", type=int, default=40)
    parser.add_argument("--total-size", default="200MB")
    parser.add_argument("--runs", type=int, default=15)
    options = parser.parse_args(argv)

    agent = options.workdir / "home" / ".xcsh" / "agent"
    env = {**os.environ, "HOME": str(options.workdir / "home"), "PI_CODING_AGENT_DIR": str(agent)}
    env.pop("SESSDEX_CATALOG", None)
    if not (agent / "sessions").is_dir():
        print(f"generating {options.sessions} sessions into {agent} …", file=sys.stderr)
        generate_corpus(agent, sessions=options.sessions, projects=options.projects,
                        total_bytes=parse_size(options.total_size))
    subprocess.run([SESSDEX, "index"], env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    some_id = subprocess.run([SESSDEX, "list", "--all", "--json"], env=env, check=True, capture_output=True,
                             text=True).stdout.split('"id": "', 1)[1][:2]

    commands = {
        "python -c pass": [sys.executable, "-c", "pass"],
        "python -c 'import argparse'": [sys.executable, "-c", "import argparse"],
        "sessdex recent -n 1": [SESSDEX, "recent", "-n", "1"],
        "sessdex init bash": [SESSDEX, "init", "bash"],
        "sessdex init fish": [SESSDEX, "init", "fish"],
        f"sessdex complete-sessions {some_id}": [SESSDEX, "complete-sessions", some_id],
        "sessdex complete-sessions parser": [SESSDEX, "complete-sessions", "parser"],
    }
    times: dict[str, list[float]] = {name: [] for name in commands}
    for _ in range(options.runs):
        for name, command in commands.items():
            times[name].append(wall_seconds(command, env))
    medians = {name: statistics.median(values) * 1000 for name, values in times.items()}
    baseline, parser = medians["python -c pass"], medians["python -c 'import argparse'"]
    print(f"{options.sessions} sessions, median of {options.runs} runs (ms):")
    for name, value in medians.items():
        print(f"  {name:<40} {value:8.1f}   x{value / baseline:5.2f} of python -c pass")
    recent = medians["sessdex recent -n 1"]
    for name, value in medians.items():
        if name.startswith("sessdex init"):
            met = value <= 2 * baseline and value < parser
            print(f"  goal {name}: <= 2x python -c pass and < import argparse: {'MET' if met else 'NOT MET'}")
        elif name.startswith("sessdex complete"):
            met = value <= 1.2 * recent
            print(f"  goal {name}: <= 1.2x sessdex recent ({recent:.1f} ms): {'MET' if met else 'NOT MET'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
