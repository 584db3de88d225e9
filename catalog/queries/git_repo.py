"""The git repository a directory belongs to, as the folders the picker's "this repository" scope covers: the
main worktree's root and every linked worktree's root (sessions in any subfolder of them count).

Read from the `.git` files themselves (no `git` process: the picker asks on every start): a `.git` folder is a
main worktree, whose `worktrees/*/gitdir` name the linked ones; a `.git` file (`gitdir: …/.git/worktrees/x`)
is a linked worktree, whose main repository is two levels up from its gitdir.
"""

from __future__ import annotations

import os
from pathlib import Path


def _read_text(path: Path) -> str | None:
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            return handle.read(4096).strip()
    except OSError:
        return None


def _top_level(cwd: Path) -> Path | None:
    """The nearest folder at or above `cwd` holding a `.git` folder or file."""
    for folder in (cwd, *cwd.parents):
        if (folder / ".git").exists():
            return folder
    return None


def _common_git_dir(top: Path) -> Path | None:
    """The repository's shared `.git` folder for the worktree rooted at `top`."""
    marker = top / ".git"
    if marker.is_dir():
        return marker
    text = _read_text(marker)
    if not text or not text.startswith("gitdir:"):
        return None
    git_dir = Path(text.removeprefix("gitdir:").strip())
    git_dir = git_dir if git_dir.is_absolute() else (top / git_dir)
    common = _read_text(git_dir / "commondir")
    if common:
        return Path(os.path.normpath(git_dir / common))
    return git_dir.parent.parent if git_dir.parent.name == "worktrees" else None


def repository_dirs(cwd: str | os.PathLike[str]) -> list[str] | None:
    """The root of every worktree of the git repository holding `cwd` (main first), None outside a repository."""
    top = _top_level(Path(os.path.abspath(cwd)))
    if top is None:
        return None
    common = _common_git_dir(top)
    if common is None:
        return [str(top)]
    roots = [str(common.parent)] if common.name == ".git" else []
    worktrees = common / "worktrees"
    if worktrees.is_dir():
        for entry in sorted(worktrees.iterdir()):
            gitdir = _read_text(entry / "gitdir")  # the linked worktree's `.git` file
            if gitdir:
                roots.append(os.path.dirname(os.path.normpath(gitdir)))
    if str(top) not in roots:
        roots.append(str(top))
    return list(dict.fromkeys(roots))


def under_any(path: str, roots: list[str]) -> bool:
    """True when `path` is one of `roots` or inside one."""
    return any(path == root or path.startswith(root.rstrip("/") + "/") for root in roots)
