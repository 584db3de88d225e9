"""The settings every command shares, resolved once: the agent dir, the catalog and the machines.

`--agent-dir` (else `$PI_CODING_AGENT_DIR`), `--catalog` (else `$SESSDEX_CATALOG`), `--machine` (else
`$SESSDEX_MACHINE`) and `--machines` (else `$SESSDEX_MACHINES`) are read here and nowhere else; an empty
variable counts as unset. The command-line parser builds one `Settings` and hands it to the command, which
opens the catalog (or the file scan) from it.
"""

from __future__ import annotations

import os

from sessdex.catalog.store.location import (
    CATALOG_ENV,
    CATALOG_OFF,
    MACHINE_ENV,
    MACHINES_ENV,
    CatalogLocation,
    resolve_location,
)
from sessdex.core.paths import AGENT_DIR_ENV, AgentPaths


class Settings:
    """The agent dir and the catalog a command works on (None: the default)."""

    __slots__ = ("agent_dir", "catalog", "machine", "machines", "_paths")

    def __init__(self, agent_dir: str | os.PathLike[str] | None = None, catalog: str | None = None, *,
                 paths: AgentPaths | None = None, machine: str | None = None, machines: str | None = None) -> None:
        """Settings taken as given (`paths`: the agent dir's layout when already known; `Settings.resolve`
        also reads the environment)."""
        if paths is not None:
            agent_dir = paths.agent_dir
        self.agent_dir: str | None = None if agent_dir is None else os.fspath(agent_dir)
        self.catalog = catalog
        self.machine = machine  # --machine as given (None: the stored name, else the host name)
        self.machines = machines  # --machines: "this" (None) or "all"
        self._paths = paths

    @classmethod
    def resolve(cls, agent_dir: str | os.PathLike[str] | None = None, catalog: str | None = None, *,
                paths: AgentPaths | None = None, machine: str | None = None, machines: str | None = None) -> Settings:
        """The options as given, else their environment variables when set and not empty, else the defaults."""
        if paths is None:
            agent_dir = agent_dir or os.environ.get(AGENT_DIR_ENV) or None
        return cls(agent_dir, catalog or os.environ.get(CATALOG_ENV) or None, paths=paths,
                   machine=machine or os.environ.get(MACHINE_ENV) or None,
                   machines=machines or os.environ.get(MACHINES_ENV) or None)

    @property
    def catalog_off(self) -> bool:
        """True for `--catalog off`: read the session files directly."""
        return self.catalog == CATALOG_OFF

    @property
    def paths(self) -> AgentPaths:
        """The agent dir's layout (sessions root, project folders)."""
        if self._paths is None:
            self._paths = AgentPaths.from_env(self.agent_dir)
        return self._paths

    @property
    def machine_name(self) -> str:
        """This agent dir's machine: --machine, else the name stored in the agent dir, else the host name."""
        from sessdex.catalog.store.machine import resolve_machine

        return resolve_machine(self.paths.agent_dir_text, self.machine)

    @property
    def all_machines(self) -> bool:
        """True for `--machines all`: answers hold every machine's sessions, not only this one's."""
        from sessdex.catalog.store.machine import wants_all_machines

        return wants_all_machines(self.machines)

    def location(self, *, probe_tables: bool = True) -> CatalogLocation:
        """Where the catalog is; CatalogError when it is turned off or not a usable database name
        (`probe_tables`: see `resolve_location`)."""
        return resolve_location(self.paths.agent_dir_text, self.catalog, probe_tables=probe_tables)

    def __repr__(self) -> str:
        return (f"Settings(agent_dir={self.agent_dir!r}, catalog={self.catalog!r}, machine={self.machine!r}, "
                f"machines={self.machines!r})")
