"""Screenshots of every page of `sessdex serve` for the README, made in a real headless Chromium.

Starts `sessdex serve` (the installed console script of this repository's .venv) on a free port over an agent
dir (default: a generated demo corpus in a temporary folder), opens each page and saves one PNG per page:
search (a query typed into the box), projects, a project's sessions, a transcript, usage, prompt history.

    python scripts/screenshot_serve.py [--agent-dir DIR] [--out DIR] [--query WORDS]
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from gen_corpus import generate_corpus  # noqa: E402 (scripts/ is on the path of every script)

from tests.browser_support import headless_chromium  # noqa: E402

SESSDEX = REPO / ".venv" / "bin" / "sessdex"
URL_LINE = re.compile(r"sessdex serve: (http://\S+)")


def start_server(agent_dir: Path, home: Path) -> tuple[subprocess.Popen[str], str]:
    """`sessdex serve --port 0` over `agent_dir`, and the address with the token it printed."""
    # No watcher left behind for a demo corpus in a temporary folder (`sessdex serve` would start one).
    environment = {**os.environ, "PI_CODING_AGENT_DIR": str(agent_dir), "HOME": str(home), "SESSDEX_AUTOWATCH": "0"}
    process = subprocess.Popen([str(SESSDEX), "serve", "--port", "0"], stdout=subprocess.PIPE, text=True,
                               env=environment)
    assert process.stdout is not None
    line = process.stdout.readline()
    found = URL_LINE.search(line)
    if found is None:
        process.terminate()
        raise SystemExit(f"sessdex serve did not print its address: {line!r}")
    return process, found.group(1)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--agent-dir", type=Path, default=None)
    parser.add_argument("--out", type=Path, default=REPO / "bench-out" / "screenshots")
    parser.add_argument("--query", default="migrate")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="sessdex-shots-") as scratch:
        if args.agent_dir is None:
            home = Path(scratch) / "home"
            agent_dir = home / ".xcsh" / "agent"
            generate_corpus(agent_dir, sessions=80, projects=6, total_bytes=8_000_000, seed=7, home=home)
        else:
            agent_dir, home = args.agent_dir, Path.home()
        process, url = start_server(agent_dir, home)
        args.out.mkdir(parents=True, exist_ok=True)
        try:
            with headless_chromium(1280, 1000) as browser:
                base = url.split("/?")[0]
                browser.get(url)  # type: ignore[attr-defined]
                box = browser.find_element("id", "q")  # type: ignore[attr-defined]
                box.send_keys(args.query)
                time.sleep(0.6)
                shots = {"search": None, "projects": "/projects"}
                browser.save_screenshot(str(args.out / "search.png"))  # type: ignore[attr-defined]
                for name, path in shots.items():
                    if path is None:
                        continue
                    browser.get(base + path)  # type: ignore[attr-defined]
                    browser.save_screenshot(str(args.out / f"{name}.png"))  # type: ignore[attr-defined]
                project = browser.find_element("css selector", "#projects tbody a")  # type: ignore[attr-defined]
                project.click()
                browser.save_screenshot(str(args.out / "project.png"))  # type: ignore[attr-defined]
                browser.find_element("css selector", "#sessions tbody a").click()  # type: ignore[attr-defined]
                browser.save_screenshot(str(args.out / "session.png"))  # type: ignore[attr-defined]
                for name, path in (("usage", "/usage"), ("history", "/history?q=a")):
                    browser.get(base + path)  # type: ignore[attr-defined]
                    browser.save_screenshot(str(args.out / f"{name}.png"))  # type: ignore[attr-defined]
        finally:
            process.terminate()
            process.wait(timeout=10)
    for shot in sorted(args.out.glob("*.png")):
        print(shot)
    return 0


if __name__ == "__main__":
    sys.exit(main())
