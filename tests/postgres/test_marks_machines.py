"""Marks on a shared PostgreSQL catalog: each machine's marks file is indexed as its rows, every machine sees the
union, and the later mark decides across machines."""

from __future__ import annotations

from pathlib import Path

from sessdex.catalog.queries.sessions import Catalog
from sessdex.catalog.store.location import resolve_location
from sessdex.core.marks import Marks, append_events, make_event
from sessdex.core.paths import AgentPaths


def _agent(root: Path) -> AgentPaths:
    paths = AgentPaths(agent_dir=root / "agent", home=root, tmp_dir=root)
    paths.agent_dir.mkdir(parents=True)
    return paths


def test_every_machine_sees_the_union_of_the_marks_files(tmp_path: Path, postgres_url: str) -> None:
    laptop, devbox = _agent(tmp_path / "laptop"), _agent(tmp_path / "devbox")
    append_events(laptop, [make_event("s1", "laptop", "pin", now_ms=10),
                           make_event("s2", "laptop", "tag", now_ms=11, add=["bug"])])
    # A mark devbox sets on laptop's session s1 is kept by devbox's own file, and is newer.
    append_events(devbox, [make_event("s1", "devbox", "unpin", now_ms=20),
                           make_event("s3", "devbox", "star", now_ms=21)])
    with Catalog(laptop, resolve_location(laptop.agent_dir, postgres_url), machine="laptop") as catalog:
        assert catalog.marks() == {"s1": Marks(pinned=True), "s2": Marks(tags=("bug",))}  # devbox not indexed yet
    with Catalog(devbox, resolve_location(devbox.agent_dir, postgres_url), machine="devbox") as catalog:
        union = catalog.marks()
    assert union == {"s2": Marks(tags=("bug",)), "s3": Marks(starred=True)}
    with Catalog(laptop, resolve_location(laptop.agent_dir, postgres_url), machine="laptop") as catalog:
        assert catalog.marks() == union
        append_events(laptop, [make_event("s1", "laptop", "pin", now_ms=30)])
        assert catalog.marks()["s1"] == Marks(pinned=True)
