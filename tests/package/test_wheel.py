"""The built wheel: only `sessdex/` inside, and it installs beside a distribution that ships its own
top-level `core`, `catalog` and `migrations` without either one breaking the other."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
TOY_PACKAGES = ("core", "catalog", "migrations")


def _run(*args: str | os.PathLike[str], env: dict[str, str] | None = None,
         cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    result = subprocess.run([str(arg) for arg in args], capture_output=True, text=True, check=False, env=env, cwd=cwd)
    assert result.returncode == 0, (args, result.stdout, result.stderr)
    return result


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    # Built from a clean copy, as from a fresh clone: no build/ or egg-info left in the work tree.
    source = out / "source"
    shutil.copytree(REPO, source, ignore=shutil.ignore_patterns(".git", ".venv", "build", "dist", "*.egg-info",
                                                                "__pycache__", ".hypothesis", "bench-out"))
    _run(sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation", "--wheel-dir", out,
         source)
    (built,) = out.glob("sessdex-*.whl")
    return built


def _toy_wheel(folder: Path) -> Path:
    """A distribution `toy-clash` whose top-level packages are named like sessdex's folders."""
    source = folder / "toy"
    for name in TOY_PACKAGES:
        (source / name).mkdir(parents=True)
        (source / name / "__init__.py").write_text(f"OWNER = 'toy-{name}'\n")
    (source / "pyproject.toml").write_text(
        '[build-system]\nrequires = ["setuptools>=77"]\nbuild-backend = "setuptools.build_meta"\n'
        '[project]\nname = "toy-clash"\nversion = "1.0"\n'
        '[tool.setuptools]\npackages = ["core", "catalog", "migrations"]\n')
    _run(sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation", "--wheel-dir", folder,
         source)
    (built,) = folder.glob("toy_clash-*.whl")
    return built


def test_the_wheel_holds_only_the_sessdex_package(wheel: Path) -> None:
    names = zipfile.ZipFile(wheel).namelist()
    tops = {name.split("/", 1)[0] for name in names}
    assert tops == {"sessdex", wheel.name.split("-")[0] + "-" + wheel.name.split("-")[1] + ".dist-info"}
    for expected in ("sessdex/__init__.py", "sessdex/py.typed", "sessdex/core/session_manager.py",
                     "sessdex/catalog/cli/entry.py", "sessdex/migrations/env.py", "sessdex/migrations/script.py.mako",
                     "sessdex/migrations/versions/0001_baseline.py"):
        assert expected in names


def test_installs_beside_a_package_with_the_same_folder_names(wheel: Path, tmp_path: Path) -> None:
    venv = tmp_path / "venv"
    _run(sys.executable, "-m", "venv", "--without-pip", venv)
    python = venv / "bin" / "python"
    site = Path(_run(python, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))").stdout.strip())
    # sessdex's dependencies come from the test environment's site-packages (read as a plain path, so its
    # editable sessdex is not seen); sessdex itself and the toy come from their wheels.
    (site / "_deps.pth").write_text(sysconfig.get_path("purelib") + "\n")
    pip = [sys.executable, "-m", "pip", "--python", python, "install", "--quiet", "--no-deps", "--no-index"]
    _run(*pip, _toy_wheel(tmp_path))
    _run(*pip, wheel)

    probe = ("import sessdex, sessdex.core.session_manager, core, catalog, migrations\n"
             f"assert sessdex.__file__.startswith({str(site)!r}), sessdex.__file__\n"
             "print(core.OWNER, catalog.OWNER, migrations.OWNER)\n")
    assert _run(python, "-c", probe, cwd=tmp_path).stdout.split() == ["toy-core", "toy-catalog", "toy-migrations"]

    agent = tmp_path / "agent"
    (agent / "sessions").mkdir(parents=True)
    sessdex = venv / "bin" / "sessdex"
    assert _run(sessdex, "--version").stdout.startswith("sessdex ")
    # The catalog's Alembic migrations run from the installed package, not from the toy's `migrations`.
    env = {**os.environ, "PI_CODING_AGENT_DIR": str(agent)}
    env.pop("SESSDEX_CATALOG", None)
    _run(sessdex, "index", "--rebuild", env=env, cwd=tmp_path)
    assert (agent / "catalog.db").is_file()

    _run(sys.executable, "-m", "pip", "--python", python, "uninstall", "--quiet", "--yes", "toy-clash")
    assert _run(python, "-c", "import sessdex.catalog.store.migrate; print('ok')", cwd=tmp_path).stdout.strip() == "ok"
