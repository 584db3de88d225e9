"""The main job, for a newcomer: sessdex on your own sessions, or on a generated demo corpus.

With sessions under the agent dir (`$PI_CODING_AGENT_DIR` or ~/.xcsh/agent) it only reads them.
Otherwise it writes a demo agent dir in a temporary folder: a few sessions made through sessdex's
own SessionManager (branches, a compaction, labels, an image) and a generated corpus. Then: index, list,
search, resume, the usage report and the prompt history, at most a screenful each, and the next command to
type (with --keep, the one that opens the picker on the kept corpus).
"""

from __future__ import annotations

import argparse
import base64
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "scripts"))

from gen_corpus import generate_corpus  # noqa: E402

from sessdex.core.paths import AgentPaths, default_agent_dir  # noqa: E402
from sessdex.core.runtime import SessionRuntime  # noqa: E402
from sessdex.core.session_manager import SessionManager  # noqa: E402

PNG_PIXEL = base64.b64encode(bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
    "1f15c4890000000d49444154789c6360000002000154a24f5d0000000049454e44ae426082") * 40).decode()


def assistant(text: str, model: str = "claude-sonnet-4-5") -> dict:
    return {"role": "assistant", "content": [{"type": "text", "text": text}], "provider": "anthropic",
            "model": model, "usage": {"input": 120, "output": 40, "cacheRead": 0, "cacheWrite": 0,
                                      "cost": {"total": 0.0021}}}


def user(text: str) -> dict:
    return {"role": "user", "content": text}


def write_demo_sessions(agent_dir: Path, home: Path) -> list[Path]:
    """A handful of sessions that use every feature the store has."""
    runtime = SessionRuntime(paths=AgentPaths(agent_dir=agent_dir, home=home, tmp_dir=home))
    files = []
    project = home / "src" / "webshop"
    project.mkdir(parents=True, exist_ok=True)
    with SessionManager.create(str(project), runtime=runtime) as manager:
        manager.append_model_change("anthropic/claude-sonnet-4-5")
        manager.append_thinking_level_change("medium")
        first = manager.append_message(user("Why does the checkout test fail on CI only?"))
        manager.append_message(assistant("The test depends on the local timezone; CI runs in UTC."))
        manager.append_label_change(first, "flaky-test")
        question = manager.append_message(user("Fix it by freezing the clock."))
        manager.append_message(assistant("Done: the test now freezes time at 2025-01-01T00:00:00Z."))
        manager.branch_with_summary(question, "Tried mocking datetime globally; too invasive, abandoned.")
        manager.append_message(user("Instead, inject a clock into CheckoutService."))
        manager.append_message(assistant("CheckoutService now takes a Clock; the test passes a fixed one."))
        manager.append_compaction("We fixed a timezone-dependent checkout test by injecting a clock.",
                                  "Checkout clock fix", manager.get_leaf_id(), 18000)
        manager.append_message(user([{"type": "text", "text": "Here is the failing screenshot"},
                                     {"type": "image", "data": PNG_PIXEL, "mimeType": "image/png"}]))
        manager.append_message(assistant("The screenshot shows the old price format; fixed in formatPrice()."))
        manager.append_mode_change("plan", {"planFile": "PLAN.md"})
        manager.set_session_name("Checkout test: inject a clock")
        files.append(manager.get_session_file())
    other = home / "src" / "infra"
    other.mkdir(parents=True, exist_ok=True)
    for prompt, answer in (("Write a Terraform module for the S3 bucket", "Module written in modules/s3."),
                           ("Rotate the staging TLS certificate", "Certificate rotated; expires 2026-03-01.")):
        with SessionManager.create(str(other), runtime=runtime) as manager:
            manager.append_message(user(prompt))
            manager.append_message(assistant(answer, model="claude-haiku-4-5"))
            files.append(manager.get_session_file())
    return files


FAILED_COMMANDS: list[str] = []
SCREENFUL = 18  # the lines of output each step shows at most


def sessdex(agent_dir: Path, *args: str, catalog: Path | None = None, cwd: Path = REPO) -> None:
    """Run the real CLI, as a user would (in `cwd`, with the catalog at `catalog` when given), and show at most a
    screenful of what it prints; a command that fails is remembered, and the demo then ends with status 1."""
    print(f"\n$ sessdex {' '.join(args)}", flush=True)
    options = ["--catalog", str(catalog)] if catalog is not None else []
    # Tables as on a terminal of this width (captured output would otherwise be tab-separated).
    environment = {**os.environ, "COLUMNS": str(shutil.get_terminal_size((100, 24)).columns)}
    environment.setdefault("SESSDEX_AUTOWATCH", "0")  # no background watcher on a catalog the demo deletes
    result = subprocess.run([sys.executable, "-m", "sessdex.catalog", "--agent-dir", str(agent_dir), *options, *args],
                            cwd=cwd, check=False, capture_output=True, text=True, env=environment)
    lines = (result.stdout + result.stderr).splitlines()
    print("\n".join(lines[:SCREENFUL]))
    if len(lines) > SCREENFUL:
        print(f"... ({len(lines) - SCREENFUL} more lines)")
    if result.returncode != 0:
        FAILED_COMMANDS.append(f"sessdex {' '.join(args)} (exit {result.returncode})")


def show_catalog(agent_dir: Path, catalog: Path, *, demo: bool) -> Path | None:
    """Index the sessions, then list, search, resume and the usage reports from the catalog; the project folder the
    listings ran in (None without sessions)."""
    from sessdex.catalog.queries.sessions import Catalog
    from sessdex.catalog.store.settings import Settings

    sessdex(agent_dir, "index", catalog=catalog)
    with Catalog.from_settings(Settings(agent_dir, str(catalog))) as opened:
        newest = next(iter(opened.list_all_sessions()), None)
    if newest is None:
        return None
    cwd = Path(newest.cwd) if newest.cwd and Path(newest.cwd).is_dir() else REPO
    sessdex(agent_dir, "list", "-n", "10", catalog=catalog, cwd=cwd)
    words = [word for word in newest.first_message.split() if word.isalpha() and len(word) > 3]
    sessdex(agent_dir, "search", "--all", "-n", "5", "clock" if demo else (words[-1] if words else newest.id[:8]),
            catalog=catalog, cwd=cwd)
    sessdex(agent_dir, "resume", "--no-fork", newest.id, catalog=catalog, cwd=cwd)
    sessdex(agent_dir, "usage", "monthly", "--all", catalog=catalog, cwd=cwd)
    sessdex(agent_dir, "usage", "--line", catalog=catalog, cwd=cwd)
    return cwd


def has_sessions(agent_dir: Path) -> bool:
    sessions = agent_dir / "sessions"
    return sessions.is_dir() and any(sessions.rglob("*.jsonl"))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--demo", action="store_true", help="use a generated demo corpus even if you have sessions")
    parser.add_argument("--keep", action="store_true", help="keep the generated demo agent dir (to open the picker on it)")
    args = parser.parse_args(argv)
    agent_dir = default_agent_dir()
    demo = args.demo or not has_sessions(agent_dir)
    scratch = Path(tempfile.mkdtemp(prefix="sessdex-demo-"))
    if demo:
        agent_dir = scratch / "home" / ".xcsh" / "agent"
        print(f"No sessions of yours used: writing a demo agent dir in {agent_dir}")
        write_demo_sessions(agent_dir, scratch / "home")
        corpus = generate_corpus(agent_dir, sessions=400, projects=20, total_bytes=12_000_000, seed=1,
                                 home=scratch / "home")
        print(f"...and a generated corpus: {len(corpus.sessions)} sessions in {len(corpus.projects)} projects, "
              f"{corpus.session_bytes / 1e6:.1f} MB, a few of them damaged on purpose")
    else:
        print(f"Reading your sessions in {agent_dir} (nothing is written there; the catalog goes to {scratch})")
    catalog = scratch / "catalog.db"
    try:
        cwd = show_catalog(agent_dir, catalog, demo=demo)
        if demo:
            sessdex(agent_dir, "history", "import")
            sessdex(agent_dir, "history", "search", "clock")
    finally:
        if not args.keep:
            shutil.rmtree(scratch, ignore_errors=True)
    for failed in FAILED_COMMANDS:
        print(f"demo: {failed} failed", file=sys.stderr)
    print()
    sessdex_command = REPO / ".venv" / "bin" / "sessdex"
    if not demo:
        print(f'Next: eval "$({sessdex_command} init bash)"   then type xr in a project folder (or press Alt+J)')
    elif args.keep:
        where = f"cd {shlex.quote(str(cwd))} && " if cwd is not None else ""
        print("Next, the picker on this corpus (type to filter, Tab: every project, Enter prints the file, Esc quits):")
        print(f"  {where}{sessdex_command} --agent-dir {shlex.quote(str(agent_dir))} "
              f"--catalog {shlex.quote(str(catalog))} pick")
    else:
        print("Next, to open the picker on this corpus, keep it:  ./scripts/run --demo --keep")
    return 1 if FAILED_COMMANDS else 0


if __name__ == "__main__":
    os.environ.setdefault("PYTHONDONTWRITEBYTECODE", "1")
    sys.exit(main())
