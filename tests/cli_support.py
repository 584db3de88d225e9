"""Running the sessdex CLI in-process from tests, the way a user's shell would see it."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from sessdex.catalog.cli.entry import main


@dataclass
class Outcome:
    """Exit status, stdout and stderr of one CLI run."""

    code: int
    out: str
    err: str


def run_cli(args: list[str], capsys: pytest.CaptureFixture[str]) -> Outcome:
    """Run `sessdex ARGS` through its real entry point and capture what it printed."""
    with pytest.raises(SystemExit) as exit_info:
        main(args)
    out, err = capsys.readouterr()
    return Outcome(exit_info.value.code, out, err)
