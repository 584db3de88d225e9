"""The git repository a directory belongs to, as the folders the picker's "this repository" scope covers: the
main worktree's root and every linked worktree's root (sessions in any subfolder of them count).

Read from the `.git` files themselves, with string paths (no `git` process, no pathlib: the picker asks before
its first frame): a `.git` folder is a main worktree, whose `worktrees/*/gitdir` name the linked ones; a `.git`
file (`gitdir: …/.git/worktrees/x`) is a linked worktree, whose main repository is two levels up from its gitdir.
"""

from __future__ import annotations

import os


def _read_text(path: str) -> str | None:
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            return handle.read(4096).strip()
    except OSError:
        return None


def _top_level(cwd: str) -> str | None:
    """The nearest folder at or above `cwd` holding a `.git` folder or file."""
    folder = cwd
    while True:
        if os.path.exists(os.path.join(folder, ".git")):
            return folder
        parent = os.path.dirname(folder)
        if parent == folder:
            return None
        folder = parent


def _common_git_dir(top: str) -> str | None:
    """The repository's shared `.git` folder for the worktree rooted at `top`."""
    marker = os.path.join(top, ".git")
    if os.path.isdir(marker):
        return marker
    text = _read_text(marker)
    if not text or not text.startswith("gitdir:"):
        return None
    git_dir = os.path.normpath(os.path.join(top, text.removeprefix("gitdir:").strip()))
    common = _read_text(os.path.join(git_dir, "commondir"))
    if common:
        return os.path.normpath(os.path.join(git_dir, common))
    parent = os.path.dirname(git_dir)
    return os.path.dirname(parent) if os.path.basename(parent) == "worktrees" else None


def repository_dirs(cwd: str | os.PathLike[str]) -> list[str] | None:
    """The root of every worktree of the git repository holding `cwd` (main first), None outside a repository."""
    top = _top_level(os.path.abspath(cwd))
    if top is None:
        return None
    common = _common_git_dir(top)
    if common is None:
        return [top]
    roots = [os.path.dirname(common)] if os.path.basename(common) == ".git" else []
    worktrees = os.path.join(common, "worktrees")
    if os.path.isdir(worktrees):
        for name in sorted(os.listdir(worktrees)):
            gitdir = _read_text(os.path.join(worktrees, name, "gitdir"))  # the linked worktree's `.git` file
            if gitdir:
                roots.append(os.path.dirname(os.path.normpath(gitdir)))
    if top not in roots:
        roots.append(top)
    return list(dict.fromkeys(roots))


def under_any(path: str, roots: list[str]) -> bool:
    """True when `path` is one of `roots` or inside one."""
    return any(path == root or path.startswith(root.rstrip("/") + "/") for root in roots)
