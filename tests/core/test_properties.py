"""Property tests: appends round-trip, the loader survives any bytes, migration is idempotent."""

from __future__ import annotations

import copy
import itertools
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sessdex.core.blobs import BlobStore
from sessdex.core.jsonl import parse_jsonl
from sessdex.core.migrate import migrate_session
from sessdex.core.paths import AgentPaths
from sessdex.core.runtime import SessionRuntime
from sessdex.core.session_manager import SessionManager, load_session_file
from sessdex.core.storage import FileSessionStorage

json_scalars = st.one_of(st.none(), st.booleans(), st.integers(-2**53, 2**53),
                         st.floats(allow_nan=False, allow_infinity=False, width=64),
                         st.text(st.characters(blacklist_categories=("Cs",)), max_size=40))
json_values = st.recursive(json_scalars, lambda children: st.one_of(
    st.lists(children, max_size=4), st.dictionaries(st.text(max_size=8), children, max_size=4)), max_leaves=12)

append_ops = st.lists(st.one_of(
    st.tuples(st.just("user"), st.text(max_size=60)),
    st.tuples(st.just("assistant"), st.text(max_size=60)),
    st.tuples(st.just("thinking"), st.sampled_from(["off", "low", "high"])),
    st.tuples(st.just("model"), st.sampled_from(["a/b", "c/d"])),
    st.tuples(st.just("custom"), json_values),
    st.tuples(st.just("label"), st.text(min_size=1, max_size=10)),
    st.tuples(st.just("branch"), st.integers(0, 50)),
), min_size=1, max_size=25)

counter = itertools.count()


def make_runtime(root: Path) -> SessionRuntime:
    home = root / "home"
    (home / "proj").mkdir(parents=True, exist_ok=True)
    return SessionRuntime(paths=AgentPaths(agent_dir=home / ".xcsh" / "agent", home=home, tmp_dir=root),
                          environ={}, tty_path=lambda: None)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=append_ops)
def test_any_sequence_of_appends_round_trips(tmp_path: Path, ops: list) -> None:
    root = tmp_path / f"run{next(counter)}"
    runtime = make_runtime(root)
    with SessionManager.create(str(root / "home" / "proj"), runtime=runtime) as manager:
        manager.append_message({"role": "assistant", "content": [{"type": "text", "text": "start"}]})
        for kind, value in ops:
            if kind == "user":
                manager.append_message({"role": "user", "content": value})
            elif kind == "assistant":
                manager.append_message({"role": "assistant", "content": [{"type": "text", "text": value}]})
            elif kind == "thinking":
                manager.append_thinking_level_change(value)
            elif kind == "model":
                manager.append_model_change(value)
            elif kind == "custom":
                manager.append_custom_entry("prop", value)
            elif kind == "label":
                manager.append_label_change(manager.get_entries()[0]["id"], value)
            elif kind == "branch":
                entries = manager.get_entries()
                manager.branch(entries[value % len(entries)]["id"])
        expected_entries = manager.get_entries()
        expected_context = manager.build_session_context()
        leaf = manager.get_leaf_id()
        path = manager.get_session_file()
    with SessionManager.open(path, runtime=runtime) as reopened:
        assert reopened.get_entries() == expected_entries
        assert reopened.build_session_context(leaf) == expected_context


@settings(max_examples=300, deadline=None)
@given(data=st.binary(max_size=400) | st.text(max_size=200).map(lambda t: t.encode("utf-8", "surrogatepass")))
def test_any_bytes_give_values_or_no_header_never_an_exception(data: bytes) -> None:
    parsed = parse_jsonl(data)
    assert parsed.bad_records >= 0
    assert len(parsed.values) + parsed.bad_records <= data.count(b"\n") + 1


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(tail=st.binary(max_size=300))
def test_loader_accepts_any_bytes_after_a_header(tmp_path: Path, tail: bytes) -> None:
    target = tmp_path / "any.jsonl"
    target.write_bytes(b'{"type":"session","version":3,"id":"h","timestamp":"t","cwd":"/"}\n' + tail)
    loaded = load_session_file(target, FileSessionStorage(), BlobStore(tmp_path / "blobs"), lambda: "00000000")
    assert loaded.header is not None and loaded.header["id"] == "h"


v1_entries = st.lists(st.one_of(
    st.fixed_dictionaries({"type": st.just("message"), "message": st.fixed_dictionaries(
        {"role": st.sampled_from(["user", "assistant", "hookMessage"]), "content": st.text(max_size=10)})}),
    st.fixed_dictionaries({"type": st.just("compaction"), "summary": st.text(max_size=10),
                           "firstKeptEntryIndex": st.integers(0, 12)}),
), max_size=12)


@settings(max_examples=100, deadline=None)
@given(entries=v1_entries, version=st.sampled_from([None, 1, 2, 3]))
def test_migrating_twice_equals_migrating_once(entries: list, version: int | None) -> None:
    ids = (f"{n:08x}" for n in itertools.count())
    header = {"type": "session", "id": "s"} | ({"version": version} if version is not None else {})
    once_header, once_entries = copy.deepcopy(header), copy.deepcopy(entries)
    migrate_session(once_header, once_entries, lambda: next(ids))
    twice_header, twice_entries = copy.deepcopy(once_header), copy.deepcopy(once_entries)
    assert not migrate_session(twice_header, twice_entries, lambda: next(ids))
    assert (twice_header, twice_entries) == (once_header, once_entries)
    assert once_header.get("version", 3) == 3
    if version != 3:
        assert all(e["message"]["role"] != "hookMessage" for e in once_entries if e["type"] == "message")
