"""Fixtures for core tests: a throwaway agent dir and a runtime that points at it."""

from __future__ import annotations

from pathlib import Path

import pytest

from sessdex.core.paths import AgentPaths
from sessdex.core.runtime import SessionRuntime


@pytest.fixture
def agent_paths(tmp_path: Path) -> AgentPaths:
    home = tmp_path / "home"
    (home / "proj").mkdir(parents=True)
    (tmp_path / "tmp").mkdir()
    return AgentPaths(agent_dir=home / ".xcsh" / "agent", home=home, tmp_dir=tmp_path / "tmp")


@pytest.fixture
def runtime(agent_paths: AgentPaths) -> SessionRuntime:
    return SessionRuntime(paths=agent_paths, environ={}, tty_path=lambda: None)


@pytest.fixture
def project(agent_paths: AgentPaths) -> str:
    return str(agent_paths.home / "proj")


USER = {"role": "user", "content": "hello there", "timestamp": 1735689601000}
ASSISTANT = {"role": "assistant", "content": [{"type": "text", "text": "hi"}], "provider": "anthropic",
             "model": "claude-test", "usage": {"input": 10, "output": 5, "cacheRead": 0, "cacheWrite": 0,
                                               "cost": {"total": 0.001}}, "timestamp": 1735689602000}
