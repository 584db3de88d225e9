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
    for command in ("$ sessdex index", "$ sessdex list", "$ sessdex resume", "$ sessdex search"):
        assert command in result.stdout
    assert not list(tmp_path.iterdir()), "the demo writes its corpus to a temporary folder, not to HOME"
