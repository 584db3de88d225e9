"""Benchmark of `sessdex serve`: search-as-you-type latency and a transcript's first screen, over a generated corpus.

Writes a corpus (default 10,000 sessions) with scripts/gen_corpus.py, indexes it (`sessdex index`), starts
`sessdex serve --port 0` and times over HTTP, each figure beside a baseline of the same run:
- search: every prefix of a few queries as typed (`/search?q=...&partial=1`, what the page's script fetches),
  against the smallest request the server answers (`/static/app.js`: the HTTP round trip itself);
- transcript: the biggest session's page (its first ENTRIES_PER_CHUNK entries rendered), against reading and
  parsing that file's lines with orjson.

    python scripts/bench_serve.py [--sessions 10000] [--total-size 400MB] [--huge-mb 0] [--keep DIR]
"""

from __future__ import annotations

import argparse
import http.client
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import orjson

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from gen_corpus import generate_corpus, parse_size  # noqa: E402

from sessdex.catalog.web.data import SEARCH_RESULTS  # noqa: E402

SESSDEX = REPO / ".venv" / "bin" / "sessdex"
QUERIES = ("migrate config", "watcher debounce", "unicode title", "keyboard")
ROUNDS = 2  # each query typed this many times


class Client:
    """One keep-alive HTTP connection to the server, carrying its token cookie."""

    def __init__(self, url: str) -> None:
        found = re.match(r"http://([\d.]+):(\d+)/\?token=(\S+)", url)
        assert found is not None, url
        self.host, self.port, token = found.group(1), int(found.group(2)), found.group(3)
        self.connection = http.client.HTTPConnection(self.host, self.port, timeout=60)
        self.cookie = f"sessdex-token-{self.port}={token}"

    def get(self, path: str) -> tuple[float, bytes]:
        try:
            return self._get(path)
        except (http.client.RemoteDisconnected, ConnectionError):
            # The server closes a connection left idle for a few seconds (uvicorn's keep-alive timeout): a new one.
            self.connection.close()
            self.connection = http.client.HTTPConnection(self.host, self.port, timeout=60)
            return self._get(path)

    def _get(self, path: str) -> tuple[float, bytes]:
        started = time.perf_counter()
        self.connection.request("GET", path, headers={"Host": f"{self.host}:{self.port}", "Cookie": self.cookie})
        response = self.connection.getresponse()
        body = response.read()
        elapsed = time.perf_counter() - started
        assert response.status == 200, (path, response.status, body[:200])
        return elapsed, body


def _cpu_seconds(pid: int) -> float | None:
    """User + system CPU seconds the process `pid` has used so far (from /proc: Linux only), else None."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _median_ms(samples: list[float]) -> float:
    return statistics.median(samples) * 1000


def _p90_ms(samples: list[float]) -> float:
    return sorted(samples)[int(len(samples) * 0.9)] * 1000


def _typed() -> list[str]:
    """Every prefix of each query as it is typed, ROUNDS times."""
    return [query[:end] for _round in range(ROUNDS) for query in QUERIES for end in range(1, len(query) + 1)]


def _catalog_search_times(agent_dir: Path, home: Path) -> list[float]:
    """Seconds of `Catalog.search` for each keystroke in this process: what the server's search costs at least."""
    from sessdex.catalog.queries.sessions import Catalog
    from sessdex.core.paths import AgentPaths

    with Catalog(AgentPaths(agent_dir, home=home)) as catalog:
        times = []
        for typed in _typed():
            started = time.perf_counter()
            catalog.search(typed, None, limit=SEARCH_RESULTS, highlight=("\ue000", "\ue001"), snippet_tokens=16,
                           check_freshness=False)
            times.append(time.perf_counter() - started)
    return times


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sessions", type=int, default=10_000)
    parser.add_argument("--projects", type=int, default=40)
    parser.add_argument("--total-size", default="400MB")
    parser.add_argument("--huge-mb", type=int, default=0, help="Also write one session this big (MB).")
    parser.add_argument("--keep", type=Path, default=None, help="Write (or reuse) the corpus here.")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="sessdex-bench-serve-") as scratch:
        root = args.keep or Path(scratch)
        home = root / "home"
        agent_dir = home / ".xcsh" / "agent"
        if not (agent_dir / "sessions").exists():
            started = time.perf_counter()
            generate_corpus(agent_dir, sessions=args.sessions, projects=args.projects,
                            total_bytes=parse_size(args.total_size), seed=11, home=home,
                            huge_bytes=args.huge_mb * 1_000_000)
            print(f"corpus: {args.sessions} sessions in {time.perf_counter() - started:.1f} s")
        # The watcher `sessdex serve` starts (as read commands do) exits two minutes after the benchmark.
        environment = {**os.environ, "HOME": str(home), "PI_CODING_AGENT_DIR": str(agent_dir),
                       "SESSDEX_AUTOWATCH_IDLE": "120"}
        started = time.perf_counter()
        subprocess.run([str(SESSDEX), "index"], env=environment, check=True, capture_output=True)
        print(f"sessdex index: {time.perf_counter() - started:.1f} s")
        server = subprocess.Popen([str(SESSDEX), "serve", "--port", "0"], stdout=subprocess.PIPE, text=True,
                                  env=environment, stderr=subprocess.DEVNULL)
        try:
            assert server.stdout is not None
            client = Client(server.stdout.readline().split("sessdex serve: ", 1)[1].strip())
            baseline = [client.get("/static/app.js")[0] for _ in range(30)]
            keystrokes = [client.get("/search?partial=1&q=" + typed.replace(" ", "+"))[0] for typed in _typed()]
            floor = _catalog_search_times(agent_dir, home)
            base_ms = _median_ms(baseline)
            print(f"HTTP round trip (/static/app.js): median {base_ms:.2f} ms")
            print(f"the catalog's own search (in this process, {SEARCH_RESULTS} hits, same keystrokes): "
                  f"median {_median_ms(floor):.1f} ms, p90 {_p90_ms(floor):.1f} ms")
            print(f"search as you type, {len(keystrokes)} keystrokes: median {_median_ms(keystrokes):.1f} ms, "
                  f"p90 {_p90_ms(keystrokes):.1f} ms, max {max(keystrokes) * 1000:.1f} ms "
                  f"({_median_ms(keystrokes) / base_ms:.1f}x the round trip, "
                  f"p90 {_p90_ms(keystrokes) / _p90_ms(floor):.2f}x the catalog's own search)")
            models = re.findall(r"<option>([\w.-]+/[\w.:-]+)</option>", client.get("/search?q=a")[1].decode())
            if models:
                client.get(f"/search?partial=1&q=config&model={models[0]}")  # who used which model: once
                filtered = [client.get(f"/search?partial=1&q={query.replace(' ', '+')}&model={models[0]}")[0]
                            for query in QUERIES]
                print(f"search with a model filter ({models[0]}), {len(filtered)} queries: "
                      f"median {_median_ms(filtered):.1f} ms, max {max(filtered) * 1000:.1f} ms")
            biggest = max((path for path in (agent_dir / "sessions").rglob("*.jsonl")), key=lambda p: p.stat().st_size)
            session_id = biggest.stem.rsplit("_", 1)[1]
            started, started_cpu = time.perf_counter(), time.process_time()
            with open(biggest, "rb") as handle:
                for line in handle:
                    try:
                        orjson.loads(line)
                    except orjson.JSONDecodeError:
                        pass
            parse, parse_cpu = time.perf_counter() - started, time.process_time() - started_cpu
            server_cpu = _cpu_seconds(server.pid)
            first, _page = client.get(f"/session/{session_id}")
            after = _cpu_seconds(server.pid)
            again, _page = client.get(f"/session/{session_id}")
            size_mb = biggest.stat().st_size / 1_000_000
            print(f"transcript of the biggest session ({size_mb:.1f} MB): first screen {first * 1000:.0f} ms "
                  f"({first / parse:.1f}x reading + parsing its lines, {parse * 1000:.0f} ms); "
                  f"again (cached) {again * 1000:.0f} ms; load average {os.getloadavg()[0]:.2f}")
            if server_cpu is not None and after is not None:
                print(f"  CPU time (user + system): the server's for the first screen {(after - server_cpu) * 1000:.0f} ms, "
                      f"reading + parsing the lines {parse_cpu * 1000:.0f} ms")
        finally:
            server.terminate()
            server.wait(timeout=10)
    return 0


if __name__ == "__main__":
    sys.exit(main())
