"""Which machine this agent dir belongs to: the name every catalog row written from here carries.

Several machines may share one catalog (a PostgreSQL database): each writes only its own rows and reads,
by default, only them. The name is `--machine NAME` / `$SESSDEX_MACHINE`, else the one stored in
`<agent dir>/sessdex-machine` (written once, by the first command that indexes with a name), else the
host name. Storing it keeps the rows of an agent dir under one name even if the host is renamed.
"""

from __future__ import annotations

import os

from sessdex.catalog.store.compiled_sql import SQL
from sessdex.catalog.store.location import MACHINE_ENV, MACHINES_ENV
from sessdex.core.errors import UsageError

TYPE_CHECKING = False  # pathlib stays off the hot commands' imports
if TYPE_CHECKING:
    from collections.abc import Mapping
    from pathlib import Path
    from typing import Any

MACHINE_FILE_NAME = "sessdex-machine"
ALL_MACHINES = "all"
MAX_MACHINE_CHARS = 200


def host_name() -> str:
    """This computer's host name (what `ssh HOST` would reach), without importing socket."""
    return os.uname().nodename or "localhost"


# The statements that take a `machine` parameter (those about session_files rows).
_MACHINE_STATEMENTS = frozenset(name for name, sql in SQL.items() if ":machine" in sql)


def with_machine(name: str, params: Mapping[str, Any] | None, machine: str) -> Mapping[str, Any]:
    """`params` for statement `name`, with `machine` added when the statement takes one and the caller gave none."""
    if name not in _MACHINE_STATEMENTS:
        return params or {}
    if params is None:
        return {"machine": machine}
    return params if "machine" in params else {"machine": machine, **params}


def validate_machine(name: str) -> str:
    """A machine name as given by the user, or a UsageError: printable, one line, not `all`."""
    if not name or len(name) > MAX_MACHINE_CHARS or not name.isprintable() or name != name.strip():
        raise UsageError(f"--machine must be a short printable name without surrounding spaces, not {name!r}")
    if name == ALL_MACHINES:
        raise UsageError("--machine cannot be `all` (that word selects every machine in --machines)")
    return name


def wants_all_machines(configured: str | None = None) -> bool:
    """True when `--machines` (else `$SESSDEX_MACHINES`) is `all`; `this` or nothing means this machine only."""
    value = configured or os.environ.get(MACHINES_ENV) or "this"
    if value not in (ALL_MACHINES, "this"):
        raise UsageError(f"--machines takes `this` or `all`, not {value!r}")
    return value == ALL_MACHINES


def machine_file(agent_dir: str | os.PathLike[str]) -> Path:
    """Where the agent dir's machine name is stored."""
    from pathlib import Path

    return Path(agent_dir).expanduser() / MACHINE_FILE_NAME


def stored_machine(agent_dir: str | os.PathLike[str]) -> str | None:
    """The machine name stored in the agent dir, or None when none is (or it cannot be read)."""
    try:
        stored = os.path.join(os.path.expanduser(os.fspath(agent_dir)), MACHINE_FILE_NAME)
        with open(stored, encoding="utf-8") as handle:
            name = handle.read(MAX_MACHINE_CHARS + 2).strip()
    except (OSError, UnicodeDecodeError):
        return None
    try:
        return validate_machine(name)
    except UsageError:
        return None


def resolve_machine(agent_dir: str | os.PathLike[str], configured: str | None = None) -> str:
    """This agent dir's machine: `configured` (--machine), `$SESSDEX_MACHINE`, the stored name, else the host name."""
    value = configured or os.environ.get(MACHINE_ENV) or None
    if value is not None:
        return validate_machine(value)
    return stored_machine(agent_dir) or host_name()


def remember_machine(agent_dir: str | os.PathLike[str], name: str) -> None:
    """Store `name` as the agent dir's machine unless one is stored already (0600, written atomically)."""
    target = machine_file(agent_dir)
    if stored_machine(agent_dir) is not None or not target.parent.is_dir():
        return
    from sessdex.core.private_files import write_private_text  # writers only: off the read path

    temporary = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    try:
        write_private_text(temporary, name + "\n")
        os.link(temporary, target)  # never replaces a name another process stored meanwhile
    except OSError:
        pass  # best effort (a name stored meanwhile stays): the name is looked up again next time
    finally:
        try:
            temporary.unlink()
        except OSError:
            pass
