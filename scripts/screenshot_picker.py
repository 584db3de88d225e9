"""A real screenshot of the session picker, as an SVG for the README (docs/picker.svg by default).

Writes a generated corpus to a temporary agent dir, indexes it, runs `sessdex pick` in a tmux window of the given
size with a query typed, captures the pane with its colours (`tmux capture-pane -e`), replays that through pyte (a
VT100 screen emulator, one of the test dependencies) and draws every cell as SVG text: what a terminal shows.

    .venv/bin/python scripts/screenshot_picker.py [--out docs/picker.svg] [--query readme]
"""

from __future__ import annotations

import argparse
import html
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pyte

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "scripts"))

from gen_corpus import generate_corpus  # noqa: E402

COLUMNS, ROWS = 110, 26
CELL_WIDTH, CELL_HEIGHT, FONT_SIZE = 8.4, 17, 14
BACKGROUND, FOREGROUND = "#1e1e2e", "#cdd6f4"
# The 16 ANSI colours as pyte names them (a dark theme's), and the picker's own 256-colour or RGB ones as hex.
NAMED = {"black": "#45475a", "red": "#f38ba8", "green": "#a6e3a1", "brown": "#f9e2af", "yellow": "#f9e2af",
         "blue": "#89b4fa", "magenta": "#f5c2e7", "cyan": "#94e2d5", "white": "#bac2de",
         "brightblack": "#585b70", "brightred": "#f38ba8", "brightgreen": "#a6e3a1", "brightbrown": "#f9e2af",
         "brightyellow": "#f9e2af", "brightblue": "#89b4fa", "brightmagenta": "#f5c2e7", "brightcyan": "#94e2d5",
         "brightwhite": "#a6adc8"}


def colour(value: str, default: str) -> str:
    if value == "default":
        return default
    if value in NAMED:
        return NAMED[value]
    if len(value) == 6 and all(char in "0123456789abcdefABCDEF" for char in value):
        return f"#{value}"
    return default


def tmux(socket: str, *args: str) -> str:
    return subprocess.run(["tmux", "-S", socket, *args], check=True, capture_output=True, text=True,
                          timeout=20).stdout


def capture_picker(agent_dir: Path, catalog: Path, cwd: Path, query: str, socket: str) -> str:
    """The pane's text with its escape sequences, once the picker shows the query's matches."""
    sessdex = REPO / ".venv" / "bin" / "sessdex"
    environment = {"HOME": str(agent_dir.parents[1]), "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
                   "TERM": "xterm-256color", "PI_CODING_AGENT_DIR": str(agent_dir), "SESSDEX_CATALOG": str(catalog),
                   "LANG": "C.UTF-8"}
    exports = " ".join(f"{name}='{value}'" for name, value in environment.items())
    tmux(socket, "-f", "/dev/null", "new-session", "-d", "-s", "shot", "-x", str(COLUMNS), "-y", str(ROWS),
         "-c", str(cwd), f"env -i {exports} {sessdex} pick --all")
    try:
        deadline = time.monotonic() + 30
        while "Pick a session" not in tmux(socket, "capture-pane", "-p", "-t", "shot"):
            if time.monotonic() > deadline:
                raise SystemExit("the picker never showed")
            time.sleep(0.1)
        tmux(socket, "send-keys", "-t", "shot", "-l", query)
        time.sleep(1.5)  # the query's ranking and the content search settle
        return tmux(socket, "capture-pane", "-e", "-p", "-t", "shot")
    finally:
        subprocess.run(["tmux", "-S", socket, "kill-server"], check=False, capture_output=True, timeout=10)


def svg_of(captured: str) -> str:
    """The captured pane replayed on an emulated screen, drawn cell by cell."""
    screen = pyte.Screen(COLUMNS, ROWS)
    # One line per row, each ended by a newline: the last one's would scroll the screen by a line.
    pyte.Stream(screen).feed(captured.removesuffix("\n").replace("\n", "\r\n"))
    width, height = COLUMNS * CELL_WIDTH + 20, ROWS * CELL_HEIGHT + 44
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width:.0f}" height="{height:.0f}" '
             f'viewBox="0 0 {width:.0f} {height:.0f}" font-family="DejaVu Sans Mono, Menlo, Consolas, monospace" '
             f'font-size="{FONT_SIZE}">',
             f'<rect width="100%" height="100%" rx="8" fill="{BACKGROUND}"/>',
             *(f'<circle cx="{18 + 18 * n}" cy="14" r="5" fill="{fill}"/>'
               for n, fill in enumerate(("#f38ba8", "#f9e2af", "#a6e3a1"))),
             f'<text x="{width / 2:.0f}" y="18" fill="#6c7086" text-anchor="middle">sessdex pick</text>']
    top = 34
    for y in range(ROWS):
        line = screen.buffer[y]
        baseline = top + y * CELL_HEIGHT + FONT_SIZE - 2
        for x in range(COLUMNS):
            char = line[x]
            fg, bg = colour(char.fg, FOREGROUND), colour(char.bg, BACKGROUND)
            if char.reverse:
                fg, bg = bg, fg
            left = 10 + x * CELL_WIDTH
            if bg != BACKGROUND:
                parts.append(f'<rect x="{left:.1f}" y="{top + y * CELL_HEIGHT}" width="{CELL_WIDTH + 0.2:.1f}" '
                             f'height="{CELL_HEIGHT}" fill="{bg}"/>')
            if char.data.strip():
                style = (' font-weight="bold"' if char.bold else "") + (
                    ' text-decoration="underline"' if char.underscore else "")
                parts.append(f'<text x="{left:.1f}" y="{baseline}" fill="{fg}"{style}>{html.escape(char.data)}</text>')
    parts.append("</svg>")
    return "\n".join(parts) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=REPO / "docs" / "picker.svg", help="the SVG to write")
    parser.add_argument("--query", default="readme", help="what to type into the picker")
    args = parser.parse_args(argv)
    if shutil.which("tmux") is None:
        raise SystemExit("tmux is needed (scripts/system_packages.sh installs it)")
    scratch = Path(tempfile.mkdtemp(prefix="sessdex-shot-"))
    try:
        home = scratch / "home"
        agent_dir = home / ".xcsh" / "agent"
        corpus = generate_corpus(agent_dir, sessions=300, projects=12, total_bytes=6_000_000, seed=4, home=home,
                                 now=time.time())
        catalog = scratch / "catalog.db"
        subprocess.run([str(REPO / ".venv" / "bin" / "sessdex"), "--agent-dir", str(agent_dir), "--catalog",
                        str(catalog), "index"], check=True, capture_output=True, timeout=300)
        cwd = Path(corpus.projects[0].cwd)
        cwd.mkdir(parents=True, exist_ok=True)
        captured = capture_picker(agent_dir, catalog, cwd, args.query, str(scratch / "tmux.sock"))
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(svg_of(captured))
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
