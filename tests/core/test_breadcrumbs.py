"""Terminal breadcrumbs and the --continue target."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import sessdex.core.breadcrumbs as breadcrumbs
from sessdex.core.breadcrumbs import (
    breadcrumb_path,
    read_breadcrumb,
    resolve_continue_target,
    terminal_id,
    write_breadcrumb,
)
from tests.core.sessiontree import BASE_MS, make_tree

TMUX = {"TMUX_PANE": "%7"}


@pytest.fixture
def tree(tmp_path: Path):
    return make_tree(tmp_path)


# -- terminal ids ----------------------------------------------------------------------------------

def test_tty_path_comes_first() -> None:
    env = {"KITTY_WINDOW_ID": "3", "TMUX_PANE": "%1", "TERM_SESSION_ID": "w0", "WT_SESSION": "g"}
    assert terminal_id(env, "/dev/pts/4") == "pts-4"
    assert terminal_id(env, "/dev/ttys003") == "ttys003"
    assert terminal_id(env, "/dev/..") == "kitty-3"  # never a name that leaves the breadcrumb folder


@pytest.mark.parametrize(("env", "expected"), [
    ({"KITTY_WINDOW_ID": "3", "TMUX_PANE": "%1", "TERM_SESSION_ID": "w0", "WT_SESSION": "g"}, "kitty-3"),
    ({"TMUX_PANE": "%1", "TERM_SESSION_ID": "w0", "WT_SESSION": "g"}, "tmux-%1"),
    ({"TERM_SESSION_ID": "w0t0p0:ABC-123", "WT_SESSION": "g"}, "term-w0t0p0_ABC-123"),
    ({"WT_SESSION": "5f1e/../x"}, "wt-5f1e_.._x"),
    ({"KITTY_WINDOW_ID": "", "WT_SESSION": "g"}, "wt-g"),
    ({}, None),
])
def test_env_sources_in_priority_order(env: dict[str, str], expected: str | None) -> None:
    assert terminal_id(env, None) == expected


def test_defaults_read_os_environ_and_detect_the_tty(monkeypatch) -> None:
    for name in ("KITTY_WINDOW_ID", "TMUX_PANE", "TERM_SESSION_ID", "WT_SESSION"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("WT_SESSION", "abc")
    monkeypatch.setattr(breadcrumbs, "current_tty_path", lambda: None)
    assert terminal_id() == "wt-abc"
    monkeypatch.setattr(breadcrumbs, "current_tty_path", lambda: "/dev/pts/9")
    assert terminal_id() == "pts-9"


# -- writing and reading ---------------------------------------------------------------------------

def test_write_then_read_round_trip(tree) -> None:
    proj = tree.project("proj")
    session = tree.session(proj, "s1")
    write_breadcrumb(tree.paths, proj, session, env=TMUX, tty_path=None)
    crumb = tree.paths.terminal_sessions_dir / "tmux-%7"
    assert crumb.read_text() == f"{proj}\n{session}\n"
    assert read_breadcrumb(tree.paths, proj, env=TMUX, tty_path=None) == session
    assert sorted(os.listdir(crumb.parent)) == ["tmux-%7"]


def test_each_terminal_has_its_own_breadcrumb(tree) -> None:
    proj = tree.project("proj")
    first, second = tree.session(proj, "s1"), tree.session(proj, "s2")
    write_breadcrumb(tree.paths, proj, first, env={"TMUX_PANE": "%1"}, tty_path=None)
    write_breadcrumb(tree.paths, proj, second, env={"TMUX_PANE": "%2"}, tty_path=None)
    assert read_breadcrumb(tree.paths, proj, env={"TMUX_PANE": "%1"}, tty_path=None) == first
    assert read_breadcrumb(tree.paths, proj, env={"TMUX_PANE": "%2"}, tty_path=None) == second


def test_no_terminal_means_no_breadcrumb(tree) -> None:
    proj = tree.project("proj")
    write_breadcrumb(tree.paths, proj, tree.session(proj, "s1"), env={}, tty_path=None)
    assert not tree.paths.terminal_sessions_dir.exists()
    assert read_breadcrumb(tree.paths, proj, env={}, tty_path=None) is None


def test_writing_never_fails_the_caller(tree) -> None:
    proj = tree.project("proj")
    tree.paths.agent_dir.mkdir(parents=True)
    tree.paths.terminal_sessions_dir.write_text("a file where the folder should be")
    write_breadcrumb(tree.paths, proj, proj / "x.jsonl", env=TMUX, tty_path=None)
    assert tree.paths.terminal_sessions_dir.read_text() == "a file where the folder should be"


def test_breadcrumb_for_another_cwd_is_ignored(tree) -> None:
    proj, other = tree.project("proj"), tree.project("other")
    write_breadcrumb(tree.paths, other, tree.session(other, "s1"), env=TMUX, tty_path=None)
    assert read_breadcrumb(tree.paths, proj, env=TMUX, tty_path=None) is None


def test_breadcrumb_cwd_is_compared_after_resolving_symlinks(tree) -> None:
    proj = tree.project("proj")
    link = tree.home / "link-to-proj"
    link.symlink_to(proj)
    session = tree.session(proj, "s1")
    write_breadcrumb(tree.paths, link, session, env=TMUX, tty_path=None)
    assert read_breadcrumb(tree.paths, proj, env=TMUX, tty_path=None) == session


def test_breadcrumb_to_a_missing_file_is_ignored(tree) -> None:
    proj = tree.project("proj")
    write_breadcrumb(tree.paths, proj, tree.project_dir(proj) / "never-written.jsonl", env=TMUX, tty_path=None)
    assert read_breadcrumb(tree.paths, proj, env=TMUX, tty_path=None) is None


@pytest.mark.parametrize("content", [b"", b"only one line\n", b"\n\n", b"\xff\xfe\n\xff\n"])
def test_malformed_breadcrumb_is_ignored(tree, content: bytes) -> None:
    proj = tree.project("proj")
    tree.paths.terminal_sessions_dir.mkdir(parents=True)
    breadcrumb_path(tree.paths, "tmux-%7").write_bytes(content)
    assert read_breadcrumb(tree.paths, proj, env=TMUX, tty_path=None) is None


# -- resolve_continue_target() ---------------------------------------------------------------------

def test_valid_breadcrumb_wins_over_a_newer_session(tree) -> None:
    proj = tree.project("proj")
    crumbed = tree.session(proj, "crumbed", mtime_ms=BASE_MS)
    tree.session(proj, "newer", mtime_ms=BASE_MS + 10_000)
    write_breadcrumb(tree.paths, proj, crumbed, env=TMUX, tty_path=None)
    assert resolve_continue_target(proj, paths=tree.paths, env=TMUX, tty_path=None) == crumbed


def test_invalid_breadcrumb_falls_back_to_newest_project_file(tree) -> None:
    proj, other = tree.project("proj"), tree.project("other")
    write_breadcrumb(tree.paths, other, tree.session(other, "elsewhere", mtime_ms=BASE_MS + 99_000),
                     env=TMUX, tty_path=None)
    tree.session(proj, "old", mtime_ms=BASE_MS)
    newest = tree.session(proj, "newest-empty", [], scheme="agent", mtime_ms=BASE_MS + 5_000)
    assert resolve_continue_target(proj, paths=tree.paths, env=TMUX, tty_path=None) == newest


def test_nothing_to_continue_gives_none(tree) -> None:
    proj = tree.project("proj")
    assert resolve_continue_target(proj, paths=tree.paths, env=TMUX, tty_path=None) is None


def test_session_dir_limits_the_fallback(tree) -> None:
    proj = tree.project("proj")
    tree.session(proj, "in-project", mtime_ms=BASE_MS + 9_000)
    custom = tree.root / "custom"
    custom.mkdir()
    assert resolve_continue_target(proj, custom, paths=tree.paths, env={}, tty_path=None) is None
    assert resolve_continue_target(proj, paths=tree.paths, env={}, tty_path=None) is not None
