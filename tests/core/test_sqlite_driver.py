"""core.sqlite_driver: SQLite's C module loaded without functools, its statement cache still working."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

# Runs in `python -S` (nothing has loaded functools), imports sessdex from the source tree through a symlink.
CHILD = """
import sys
sys.path.insert(0, sys.argv[1])
from sessdex.core.sqlite_driver import sqlite3
loaded = sorted(name for name in ("functools", "collections", "operator") if name in sys.modules)
connection = sqlite3.connect(":memory:")
connection.execute("CREATE TABLE t (n INTEGER)")
# More distinct statements than the cache holds (128), each run twice: cached ones are reused, evicted ones rebuilt.
for round_ in range(2):
    for n in range(300):
        connection.execute(f"INSERT INTO t VALUES ({n} + ?)", (round_,))
total = connection.execute("SELECT count(*), sum(n) FROM t").fetchone()
import functools
print(loaded, sqlite3.__name__, total, callable(functools.reduce), functools.lru_cache.__module__ == "functools")
"""


def test_sqlite_loads_without_functools_and_caches_statements(tmp_path: Path) -> None:
    (tmp_path / "sessdex").symlink_to(REPO)
    result = subprocess.run([sys.executable, "-S", "-c", CHILD, str(tmp_path)], capture_output=True, text=True,
                            check=True)
    expected_sum = sum(range(300)) * 2 + 300
    assert result.stdout.split("\n")[0] == f"[] _sqlite3 (600, {expected_sum}) True True"


def test_an_interpreter_with_functools_loaded_uses_it_unchanged(tmp_path: Path) -> None:
    (tmp_path / "sessdex").symlink_to(REPO)
    code = ("import sys, functools; sys.path.insert(0, sys.argv[1]); real = functools.lru_cache\n"
            "from sessdex.core.sqlite_driver import sqlite3\n"
            "print(sys.modules['functools'].lru_cache is real, sqlite3.connect(':memory:').execute('SELECT 1')"
            ".fetchone())")
    result = subprocess.run([sys.executable, "-S", "-c", code, str(tmp_path)], capture_output=True, text=True,
                            check=True)
    assert result.stdout.strip() == "True (1,)"
