"""SQLite against PostgreSQL on the same corpus, in one run: the first index, `resume PREFIX`, `list --all` and
`search WORD --all`, each a whole CLI process, with the ratio of each PostgreSQL figure to SQLite's.

    .venv/bin/python scripts/bench_postgres.py [--workdir /tmp/sessdex-bench-pg] [--sessions 2000] [--projects 40] \
        [--total-size 200MB] [--runs 9] [--tcp] [--regular-install] [--skip-index]

A PostgreSQL server is started for the run in a temporary folder, as the test suite starts one
(tests/postgres_server.py), and reached over its Unix socket (`--tcp`: 127.0.0.1). Beside the figures, the floors
they stand on, measured in the same run: `python -c pass`, loading sessdex's libpq reader (what a PostgreSQL
read command pays before its first byte to the server: catalog/store/libpq.py), `python -c "import psycopg"`
(what a command that writes pays, and what the reads paid before the libpq reader) and one round trip
(`SELECT 1`) on an open connection, so that the server's latency and sessdex's own cost are told apart.
Commands run alternately (SQLite, then PostgreSQL), so that other work on the machine weighs on both alike;
medians are printed, of wall time and of the child's CPU time (user + system: the figure to trust when the
machine is loaded). No watcher runs on either
side (SESSDEX_AUTOWATCH=0). `resume` runs twice: from outside every project, and with `--session-dir` (one
project's folder); on PostgreSQL both are answered from the session files (catalog/queries/resume_files.py).
`--regular-install` measures a wheel installed into a scratch venv (scripts/regular_install.py) rather than this
editable install.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "scripts"))

from gen_corpus import generate_corpus, parse_size  # noqa: E402

from tests.postgres_server import USER, PostgresServer, server_bin_dir  # noqa: E402

SEARCH_WORD = "the"
# What a PostgreSQL read command loads before connecting: sessdex's libpq reader and the library itself.
LOAD_LIBPQ = "from sessdex.catalog.store.libpq import load_libpq; assert load_libpq() is not None"


def timed(argv: list[str], cwd: Path, env: dict[str, str]) -> tuple[float, subprocess.CompletedProcess[bytes]]:
    """Wall seconds of one child process, and the process."""
    seconds, _cpu, done = measured(argv, cwd, env)
    return seconds, done


def measured(argv: list[str], cwd: Path, env: dict[str, str]) -> tuple[float, float, subprocess.CompletedProcess[bytes]]:
    """Wall seconds and CPU seconds (user + system) of one child process, and the process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, check=False)
    seconds = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return seconds, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), done


def median_ms(values: list[float]) -> float:
    return statistics.median(values) * 1000


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workdir", type=Path, default=Path("/tmp/sessdex-bench-pg"))
    parser.add_argument("--sessions", type=int, default=2000)
    parser.add_argument("--projects", type=int, default=40)
    parser.add_argument("--total-size", type=parse_size, default=parse_size("200MB"))
    parser.add_argument("--runs", type=int, default=9)
    parser.add_argument("--tcp", action="store_true", help="reach the server over TCP instead of its Unix socket")
    parser.add_argument("--regular-install", action="store_true", help="measure a wheel installed into a scratch venv")
    parser.add_argument("--skip-index", action="store_true", help="no index figures (the catalogs are still made)")
    args = parser.parse_args()

    workdir: Path = args.workdir
    workdir.mkdir(parents=True, exist_ok=True)
    agent = workdir / "agent"
    if not (agent / "sessions").exists():
        print(f"generating {args.sessions} sessions into {agent} ...", flush=True)
        generate_corpus(agent, sessions=args.sessions, projects=args.projects, total_bytes=args.total_size, seed=1)
    python = sys.executable
    if args.regular_install:
        from regular_install import install_regular

        python = str(install_regular(workdir / "regular-install"))
    sessdex = [python, "-m", "sessdex.catalog"]
    bin_dir = server_bin_dir()
    if bin_dir is None:
        raise SystemExit("the PostgreSQL server is not installed (apt-get install postgresql)")
    server = PostgresServer(bin_dir)
    results: list[str] = []
    try:
        server.start()
        database = f"bench_{os.getpid()}"
        tcp_url = server.create_database(database)
        url = tcp_url if args.tcp else f"postgresql://{USER}@/{database}?host={server.base}&port={server.port}"
        sqlite_db = workdir / f"catalog-{os.getpid()}.db"
        env = {key: value for key, value in os.environ.items() if key not in ("SESSDEX_CATALOG", "SESSDEX_MACHINES")}
        env["SESSDEX_MACHINE"] = "bench"
        env["SESSDEX_AUTOWATCH"] = "0"  # no watcher on either side: each command checks freshness itself
        clis = {"sqlite": [*sessdex, "--agent-dir", str(agent), "--catalog", str(sqlite_db)],
                "postgresql": [*sessdex, "--agent-dir", str(agent), "--catalog", url]}
        outside = workdir / "not-a-project"
        outside.mkdir(exist_ok=True)

        index_seconds = {}
        for name, cli in clis.items():
            seconds, done = timed([*cli, "index"], outside, env)
            if done.returncode != 0:
                raise SystemExit(f"index on {name} failed: {done.stderr.decode()[-500:]}")
            index_seconds[name] = seconds
        if not args.skip_index:
            results.append(f"first index: SQLite {index_seconds['sqlite']:.1f} s, PostgreSQL "
                           f"{index_seconds['postgresql']:.1f} s "
                           f"({index_seconds['postgresql'] / index_seconds['sqlite']:.2f}x)")
            print(results[-1], flush=True)

        listing = timed([*clis["sqlite"], "list", "--all", "--json"], outside, env)[1].stdout
        sessions = json.loads(listing)
        target = sessions[len(sessions) // 2]
        target_id, target_folder = target["id"][:8], os.path.dirname(target["path"])
        # From outside every project (every project is looked at: each file's first lines are read when the files
        # answer), and in the session's project folder (`--session-dir`: that folder alone).
        commands = {f"resume {target_id}": ["resume", "--no-fork", target_id],
                    f"resume --session-dir FOLDER {target_id}": ["resume", "--no-fork", "--session-dir", target_folder,
                                                                  target_id],
                    "list --all": ["list", "--all"], f"search {SEARCH_WORD} --all": ["search", SEARCH_WORD, "--all"]}
        libpq_floor = "python -c 'load the libpq reader'"
        floors: dict[str, list[float]] = {"python -c pass": [], libpq_floor: [], "python -c 'import psycopg'": []}
        floor_cpu: dict[str, list[float]] = {label: [] for label in floors}
        times: dict[str, dict[str, list[float]]] = {label: {"sqlite": [], "postgresql": []} for label in commands}
        cpu: dict[str, dict[str, list[float]]] = {label: {"sqlite": [], "postgresql": []} for label in commands}
        results.append(f"load average before the commands: {os.getloadavg()[0]:.2f}")
        for _ in range(args.runs):
            for label, argv in (("python -c pass", [python, "-c", "pass"]),
                                (libpq_floor, [python, "-c", LOAD_LIBPQ]),
                                ("python -c 'import psycopg'", [python, "-c", "import psycopg"])):
                seconds, cpu_seconds, _done = measured(argv, outside, env)
                floors[label].append(seconds)
                floor_cpu[label].append(cpu_seconds)
            for label, command in commands.items():
                for name, cli in clis.items():
                    seconds, cpu_seconds, done = measured([*cli, *command], outside, env)
                    if done.returncode not in (0, 1):
                        raise SystemExit(f"{label} on {name} failed: {done.stderr.decode()[-500:]}")
                    times[label][name].append(seconds)
                    cpu[label][name].append(cpu_seconds)
        import psycopg

        with psycopg.connect(url, autocommit=True) as connection:
            connection.execute("SELECT 1")
            trips = []
            for _ in range(200):
                started = time.perf_counter()
                connection.execute("SELECT 1").fetchall()
                trips.append(time.perf_counter() - started)
        for label, values in floors.items():
            results.append(f"{label}: median {median_ms(values):.0f} ms wall, {median_ms(floor_cpu[label]):.0f} ms CPU")
        trip_ms = median_ms(trips)
        results.append(f"one round trip (SELECT 1) on an open connection: median {trip_ms:.3f} ms")
        python_ms = median_ms(floors["python -c pass"])
        libpq_ms = median_ms(floors[libpq_floor])
        for label, by_backend in times.items():
            sqlite_ms, postgres_ms = median_ms(by_backend["sqlite"]), median_ms(by_backend["postgresql"])
            sqlite_cpu, postgres_cpu = median_ms(cpu[label]["sqlite"]), median_ms(cpu[label]["postgresql"])
            results.append(f"sessdex {label}: SQLite {sqlite_ms:.0f} ms, PostgreSQL {postgres_ms:.0f} ms wall "
                           f"({postgres_ms / sqlite_ms:.2f}x); CPU SQLite {sqlite_cpu:.0f} ms, PostgreSQL "
                           f"{postgres_cpu:.0f} ms ({postgres_cpu / sqlite_cpu:.2f}x); PostgreSQL - SQLite = "
                           f"{(postgres_ms - sqlite_ms) / trip_ms:.0f} round trips; above the floors (SQLite - "
                           f"python -c pass, PostgreSQL - the libpq reader's load): {sqlite_ms - python_ms:.0f} ms, "
                           f"{postgres_ms - libpq_ms:.0f} ms")
    finally:
        server.destroy()
    results.append(f"load average at the end: {os.getloadavg()[0]:.2f} (other work on the machine inflates wall times)")
    print("\nresults")
    for line in results:
        print(" ", line)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
