#!/usr/bin/env bash
# Create (or reuse) the project's virtual environment in .venv and install sessdex with its test extras.
# Sourced by scripts/run and scripts/test; re-installs only when pyproject.toml changed.
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
venv="$repo/.venv"
py="${PYTHON:-}"
if [ -z "$py" ]; then
  for candidate in python3.13 python3.12 python3.11 python3; do
    if command -v "$candidate" >/dev/null 2>&1 && "$candidate" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
      py="$candidate"; break
    fi
  done
fi
[ -n "$py" ] || { echo "sessdex needs Python >= 3.11 on PATH" >&2; exit 1; }
stamp="$venv/.sessdex-installed"
if [ ! -x "$venv/bin/python" ]; then
  "$py" -m venv "$venv"
fi
if [ ! -f "$stamp" ] || [ "$repo/pyproject.toml" -nt "$stamp" ]; then
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check --upgrade pip >&2
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check -e "$repo[test]" >&2
  touch "$stamp"
fi
