"""Where this project's sessions are on another machine sharing the catalog (`--machines all` without `--all`).

A project is the folder its sessions are in, named from its working directory (core.paths: the documented
`--home-alice-proj--`, or the agent's home-relative `-proj`). Another machine's folders are named from
*its* paths, so the same project is found there by two rules, both of which name the same project with
certainty whenever the user's layout does:

1. the folder of the same name under its sessions root: the same absolute directory (documented naming) or
   the same directory relative to the home (the agent's naming);
2. the same directory relative to the home directory, when both machines recorded theirs
   (`machines.home`): `~/proj` on a laptop (`/Users/alice/proj`) is `~/proj` on a devbox
   (`/home/alice/proj`), as the agent's own home-relative naming already treats it. Its folder under
   either naming scheme is looked at.

Not used, because they would mix projects that merely look alike: the git repository root's name
(`api`, `web`, `dotfiles`: unrelated repositories share names, and another machine's repository cannot be
read from here to compare remotes), folders under the temporary directory, and a project outside the home
directory on one machine but not the other (only rule 1 applies to it).
"""

from __future__ import annotations

import os
from collections.abc import Sequence

from sessdex.core.paths import agent_project_dir_name, documented_project_dir_name


def _relative_to_home(cwd: str, home: str) -> str | None:
    """`cwd` relative to `home` ("" for the home itself), None outside it (both canonical)."""
    if cwd == home:
        return ""
    prefix = home.rstrip("/") + "/"
    return cwd[len(prefix):] if cwd.startswith(prefix) else None


def folders_on_machine(folders: Sequence[str], sessions_root: str, *, machine_root: str,
                       cwd: str | None = None, home: str | None = None,
                       machine_home: str | None = None) -> list[str]:
    """The folders of another machine (sessions root `machine_root`, home `machine_home`) holding the same
    project as `folders` here (under `sessions_root`; the project at `cwd`, home `home`), without repeats.

    Rule 1 translates each folder by its place under the sessions root; rule 2, with `cwd` and both homes
    known, names the folders of the same home-relative directory there.
    """
    root = os.path.abspath(sessions_root)
    prefix = root.rstrip("/") + "/"
    theirs_root = machine_root.rstrip("/")
    found = []
    for folder in folders:
        if folder.startswith(prefix):
            found.append(theirs_root + "/" + folder[len(prefix):])
        elif folder == root:
            found.append(machine_root)
    if cwd is not None and home and machine_home:
        relative = _relative_to_home(os.path.realpath(cwd), os.path.realpath(home))
        if relative is not None:
            theirs = os.path.join(machine_home, relative) if relative else machine_home
            # Their directory is under their home, so the agent's naming takes it home-relative (the temporary
            # directory, the third argument, is never reached).
            for name in (documented_project_dir_name(theirs), agent_project_dir_name(theirs, machine_home, machine_home)):
                found.append(theirs_root + "/" + name)
    return list(dict.fromkeys(found))
