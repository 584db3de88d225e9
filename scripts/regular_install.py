"""Install sessdex from the work tree as a regular (non-editable) wheel into a scratch venv, for benchmarks.

The development venv installs sessdex editable, and the editable finder costs every process start-up
several milliseconds that a user's `pip install sessdex` does not pay. Benchmarks of start-up therefore
run the `sessdex` of a scratch venv built here: the wheel is built from a clean copy of the work tree
(as from a fresh clone) and installed with its bytecode compiled; the dependencies (SQLAlchemy, Alembic,
...) are read from the running interpreter's site-packages through a `.pth` line (a plain path: the
editable sessdex there is not seen).

    .venv/bin/python scripts/regular_install.py DEST   # prints DEST/bin/python
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
_IGNORED = (".git", ".venv", "build", "dist", "*.egg-info", "__pycache__", ".hypothesis", "bench-out")


def _run(*args: str | Path) -> str:
    result = subprocess.run([str(arg) for arg in args], capture_output=True, text=True, check=False)
    if result.returncode != 0:
        raise SystemExit(f"failed: {' '.join(map(str, args))}\n{result.stdout}{result.stderr}")
    return result.stdout


def install_regular(dest: Path) -> Path:
    """Build the wheel from the work tree and install it into a new venv at `dest`; the venv's python."""
    dest = dest.resolve()
    if dest.exists():
        shutil.rmtree(dest)
    source, wheels, venv = dest / "source", dest / "wheels", dest / "venv"
    shutil.copytree(REPO, source, ignore=shutil.ignore_patterns(*_IGNORED))
    _run(sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation", "--wheel-dir",
         wheels, source)
    (wheel,) = wheels.glob("sessdex-*.whl")
    _run(sys.executable, "-m", "venv", "--without-pip", venv)
    python = venv / "bin" / "python"
    site = Path(_run(python, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))").strip())
    (site / "_sessdex_deps.pth").write_text(sysconfig.get_path("purelib") + "\n")
    _run(sys.executable, "-m", "pip", "--python", python, "install", "--quiet", "--no-deps", "--no-index",
         "--compile", wheel)
    shutil.rmtree(source)
    probe = "import sessdex, sys; print(sessdex.__file__)"
    where = _run(python, "-c", probe).strip()
    if not where.startswith(str(site)):
        raise SystemExit(f"the scratch venv imports sessdex from {where}, not from its own site-packages")
    return python


if __name__ == "__main__":
    if len(sys.argv) != 2:
        raise SystemExit(__doc__)
    print(install_regular(Path(sys.argv[1])))
