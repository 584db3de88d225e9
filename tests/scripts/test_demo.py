"""The main job a newcomer runs (`scripts/run` -> scripts/demo.py) works end to end on a fresh home."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_the_demo_runs_every_command_on_a_fresh_home(tmp_path: Path) -> None:
    env = {key: value for key, value in os.environ.items()
           if key not in ("PI_CODING_AGENT_DIR", "SESSDEX_CATALOG")}
    env["HOME"] = str(tmp_path)
    result = subprocess.run([sys.executable, str(REPO / "scripts" / "demo.py")], cwd=tmp_path, env=env,
                            capture_output=True, text=True, check=False, timeout=300)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    for command in ("$ sessdex index", "$ sessdex list", "$ sessdex resume", "$ sessdex search", "$ sessdex usage",
                    "$ sessdex usage --line", "$ sessdex history search"):
        assert command in result.stdout
    assert "demo:" not in result.stderr
    steps = result.stdout.split("\n$ sessdex ")[1:]
    assert all(len(step.splitlines()) <= 20 for step in steps[:-1])  # a screenful each
    assert "\t" not in result.stdout  # tables laid out as on a terminal, not tab-separated
    assert "CACHE READ" in result.stdout and "models: " in result.stdout  # the usage report
    last = result.stdout.rstrip().splitlines()[-1]
    assert last == "Next, to open the picker on this corpus, keep it:  ./scripts/run --demo --keep"
    assert not list(tmp_path.iterdir()), "the demo writes its corpus to a temporary folder, not to HOME"
