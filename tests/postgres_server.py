"""A real PostgreSQL server for the tests, started in a temporary directory and stopped afterwards.

The server is the distribution's (Debian's `postgresql` package, which `scripts/test` installs): `initdb` and
`pg_ctl` from its bin folder. PostgreSQL refuses to run as root, and CI runs the tests as root, so then
the server runs as `nobody` (through `runuser`) in a folder it owns. It listens on 127.0.0.1 at a free
port with password authentication (so a wrong password is a real refusal) and fsync off (tests only).
Each test gets a database of its own (`create_database`).
"""

from __future__ import annotations

import contextlib
import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
from pathlib import Path

USER = "sessdex"
PASSWORD = "sessdex-test-password"
UNPRIVILEGED_USER = "nobody"


def server_bin_dir() -> Path | None:
    """The folder holding initdb and pg_ctl (Debian keeps them out of PATH), or None when not installed."""
    candidates = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=lambda p: int(p.split("/")[4]))
    if candidates:
        return Path(candidates[-1]).parent
    found = shutil.which("initdb")
    return Path(found).resolve().parent if found else None


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on (at the time of asking)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class PostgresServer:
    """One server in its own temporary folder; `start`/`stop` may be called again (a restart keeps the data)."""

    def __init__(self, bin_dir: Path) -> None:
        self.bin_dir = bin_dir
        self.base = Path(tempfile.mkdtemp(prefix="sessdex-pg-"))
        self.data = self.base / "data"
        self.log = self.base / "server.log"
        self.port = free_port()
        self._as_root = os.geteuid() == 0
        if self._as_root:
            account = pwd.getpwnam(UNPRIVILEGED_USER)
            os.chown(self.base, account.pw_uid, account.pw_gid)
        password_file = self.base / "password"
        password_file.write_text(PASSWORD + "\n", encoding="utf-8")
        if self._as_root:
            os.chown(password_file, account.pw_uid, account.pw_gid)
        self._run("initdb", "-D", str(self.data), "-U", USER, "--pwfile", str(password_file), "--auth-local=trust",
                  "--auth-host=scram-sha-256", "--encoding=UTF8", "--locale=C.UTF-8", "--no-instructions")
        password_file.unlink()

    def _run(self, program: str, *args: str) -> None:
        command = [str(self.bin_dir / program), *args]
        if self._as_root:
            command = ["runuser", "-u", UNPRIVILEGED_USER, "--", *command]
        subprocess.run(command, check=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, cwd=self.base,
                       timeout=120)

    def start(self) -> None:
        """Start the server and wait until it accepts connections."""
        options = (f"-p {self.port} -k {self.base} -c listen_addresses=127.0.0.1 -c fsync=off "
                   "-c synchronous_commit=off -c full_page_writes=off")
        self._run("pg_ctl", "-D", str(self.data), "-l", str(self.log), "-o", options, "-w", "-t", "60", "start")

    def stop(self) -> None:
        """Stop the server at once (connections are cut, as when a server goes down)."""
        self._run("pg_ctl", "-D", str(self.data), "-m", "fast", "-w", "-t", "60", "stop")

    def url(self, database: str = "postgres", *, password: str = PASSWORD) -> str:
        """A `postgresql://` URL for `database` over TCP with the given password."""
        return f"postgresql://{USER}:{password}@127.0.0.1:{self.port}/{database}"

    def create_database(self, name: str) -> str:
        """Create an empty database and return its URL."""
        import psycopg

        with psycopg.connect(self.url(), autocommit=True) as connection:
            connection.execute(f'CREATE DATABASE "{name}"')
        return self.url(name)

    def destroy(self) -> None:
        """Stop the server if it runs and remove its folder."""
        with contextlib.suppress(subprocess.CalledProcessError):
            self.stop()
        shutil.rmtree(self.base, ignore_errors=True)
