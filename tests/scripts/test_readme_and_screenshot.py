"""The README's first screen is a quick start with a real picture of the picker, made by scripts/screenshot_picker.py
from the picker running in tmux."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def test_the_first_screen_is_a_quick_start_with_the_picker() -> None:
    lines = (REPO / "README.md").read_text().splitlines()
    first_screen = "\n".join(lines[:40])
    for needed in ('eval "$(sessdex init bash)"', "xr ", "Alt+J", "./scripts/run", "watcher", "](docs/picker.svg)"):
        assert needed in first_screen, needed
    assert (REPO / "docs" / "picker.svg").read_text().startswith("<svg")
    assert (REPO / "docs" / "internals.md").exists() and "## Internals" in "\n".join(lines)
    assert "| S14 picker |" in "\n".join(lines)  # the map of the specification stays in the README


def test_every_table_row_of_the_readme_is_a_whole_row() -> None:
    for number, line in enumerate((REPO / "README.md").read_text().splitlines(), 1):
        if line.startswith("|"):
            assert line.rstrip().endswith("|"), f"README.md:{number}: text fused into a table row"


@pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed (scripts/test installs it)")
def test_the_screenshot_is_the_picker_drawn_in_tmux(tmp_path: Path) -> None:
    out = tmp_path / "picker.svg"
    subprocess.run([sys.executable, str(REPO / "scripts" / "screenshot_picker.py"), "--out", str(out),
                    "--query", "readme"], check=True, capture_output=True, timeout=120)
    svg = out.read_text()
    assert svg.startswith("<svg") and svg.rstrip().endswith("</svg>")
    shown = "".join(part.split(">", 1)[1].split("<", 1)[0] for part in svg.split("<text")[1:])
    # (one <text> per drawn character, spaces left out)
    assert "Pickasession" in shown and "readme" in shown and "MODIFIED" in shown and "Ctrl+Dtrash" in shown
    assert 'font-weight="bold"' in svg  # the matched characters, highlighted
