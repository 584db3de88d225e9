"""What the catalog/CLI reliability trials share: a sandboxed agent dir, and `sessdex` run as a real process.

Every trial runs the installed console script (`.venv/bin/sessdex`, i.e. `sessdex.catalog.cli.entry:main`) in
a child process with its own environment, so what is checked is what a user's shell would see: the bytes on
stdout and stderr and the exit status.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import unicodedata
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.core.sessiontree import Tree, make_tree  # noqa: F401 - re-exported for the trials

SESSDEX = Path(sys.executable).with_name("sessdex")
CLEARED_ENV = ("PI_CODING_AGENT_DIR", "SESSDEX_CATALOG", "COLUMNS",
               "KITTY_WINDOW_ID", "TMUX_PANE", "TERM_SESSION_ID", "WT_SESSION")
TRIAL_TIMEOUT_SECONDS = 60
# Control characters a hostile session could carry to a terminal: clipboard write, window title, clear screen.
OSC_CLIPBOARD = "\x1b]52;c;SGVsbG8=\x07"
OSC_TITLE = "\x1b]0;pwned\x07"
CSI_CLEAR = "\x1b[2J"
# A right-to-left override (shows "exe.txt" for "txt.exe") and an isolate, and a zero-width space: they
# change what a title looks like without any control character.
BIDI_SPOOF = "\u202etxt.exe\u2066x\u200b"
HOSTILE = f"evil{OSC_CLIPBOARD}{OSC_TITLE}{CSI_CLEAR}\x9b31m\x7f{BIDI_SPOOF}end"


@dataclass
class Result:
    """Exit status and output of one `sessdex` process (text decoded with surrogateescape)."""

    code: int
    out: str
    err: str

    @property
    def one_line_error(self) -> bool:
        """Exactly one line on stderr, and no traceback."""
        return self.err.count("\n") == 1 and "Traceback" not in self.err


def trial_env(tree: Tree, extra: dict[str, str] | None = None) -> dict[str, str]:
    """The environment of a trial: the user's, minus sessdex's own variables, HOME and TMPDIR in the sandbox."""
    env = {name: value for name, value in os.environ.items() if name not in CLEARED_ENV}
    env.update({"HOME": str(tree.home), "TMPDIR": str(tree.root / "tmp"), "PYTHONWARNINGS": "error"})
    env.update(extra or {})
    return env


def permission_respecting_prefix() -> list[str]:
    """The argv prefix under which file permissions apply to the child: root loses the capabilities that
    bypass them (so a 0555 folder is read-only and a 0000 file unreadable, as for any user)."""
    if os.geteuid() != 0:
        return []
    if shutil.which("setpriv") is None:
        pytest.skip("running as root without setpriv: permissions cannot be made to apply")
    return ["setpriv", "--bounding-set=-dac_override,-dac_read_search"]


def run_sessdex(tree: Tree, *args: str, cwd: Path | None = None, env: dict[str, str] | None = None,
                stdin: str | None = None, umask: int | None = None,
                obey_permissions: bool = False, timeout: float = TRIAL_TIMEOUT_SECONDS) -> Result:
    """Run `sessdex --agent-dir <sandbox> ARGS` in a child process and return what it did.

    `obey_permissions`: run it so that file permissions apply even when the tests run as root.
    """
    extra = dict(env or {})
    argv = [str(SESSDEX), "--agent-dir", str(tree.paths.agent_dir), *args]
    if obey_permissions:
        argv = permission_respecting_prefix() + argv

    def before_exec() -> None:
        if umask is not None:
            os.umask(umask)

    process = subprocess.run(argv, cwd=cwd or tree.home, env=trial_env(tree, extra), capture_output=True,
                             input=(stdin or "").encode(), timeout=timeout, preexec_fn=before_exec)
    return Result(process.returncode, process.stdout.decode("utf-8", "surrogateescape"),
                  process.stderr.decode("utf-8", "surrogateescape"))


def control_characters(text: str) -> list[str]:
    """The C0 (but newline and tab), DEL and C1 characters, lone surrogates, and invisible format characters
    (bidirectional controls, zero-width space; the zero-width joiners emoji need are allowed) in `text`."""
    return [char for char in text if (ord(char) < 0x20 and char not in "\n\t") or 0x7f <= ord(char) <= 0x9f
            or 0xd800 <= ord(char) <= 0xdfff
            or (unicodedata.category(char) == "Cf" and char not in "\u200c\u200d")]
