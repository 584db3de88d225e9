"""Suite-wide guards: every test runs with warnings as errors (pyproject) and must not leak threads."""

from __future__ import annotations

import os
import sys
import threading
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
SCRIPTS = REPO / "scripts"
if str(SCRIPTS) not in sys.path:
    sys.path.insert(0, str(SCRIPTS))
# Read commands start a detached watcher outside tests; the processes tests start inherit this opt-out (a test of
# that watcher asks for it). Tests that build an environment from scratch name it themselves.
os.environ["SESSDEX_AUTOWATCH"] = "0"


@pytest.fixture(autouse=True)
def no_leaked_threads():
    """Fail a test that leaves a thread running after it returns (watchers, writers, history workers)."""
    before = set(threading.enumerate())
    yield
    deadline = time.monotonic() + 2.0
    while True:
        leaked = [t for t in threading.enumerate() if t not in before and t.is_alive()]
        if not leaked or time.monotonic() > deadline:
            break
        time.sleep(0.02)
    assert not leaked, f"threads leaked by this test: {[t.name for t in leaked]}"
