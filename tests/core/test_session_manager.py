"""SessionManager behaviour the conformance cases do not pin down: sessdex's own guarantees."""

from __future__ import annotations

import base64
import os
from pathlib import Path

import orjson
import pytest

from sessdex.core.blobs import BlobStore, parse_reference, resolve_blob_references
from sessdex.core.errors import EntryNotFoundError, PersistenceError, SessionFileError
from sessdex.core.jsonl import parse_jsonl
from sessdex.core.session_manager import SessionManager, load_session_file
from sessdex.core.storage import FileSessionStorage, MemorySessionStorage
from tests.core.conftest import ASSISTANT, USER


def lines(path: Path) -> list:
    return parse_jsonl(path.read_bytes()).values


def write_jsonl(path: Path, records: list, tail: bytes = b"") -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in records) + tail)


HEADER = {"type": "session", "version": 3, "id": "abc", "timestamp": "2025-01-01T00:00:00.000Z", "cwd": "/w"}


def test_nothing_is_written_before_the_first_assistant_message(runtime, project):
    manager = SessionManager.create(project, runtime=runtime)
    manager.append_model_change("anthropic/claude-test")
    manager.append_message(USER)
    manager.flush()
    assert not manager.get_session_file().exists()
    manager.append_message(ASSISTANT)
    manager.append_message(USER)
    manager.close()
    records = lines(manager.get_session_file())
    assert [r["type"] for r in records] == ["session", "model_change", "message", "message", "message"]
    assert records[0]["id"] == manager.get_session_id()


def test_documented_project_directory_is_the_default(runtime, project):
    manager = SessionManager.create(project, runtime=runtime)
    expected = "--" + project.lstrip("/").replace("/", "-") + "--"
    assert manager.get_session_file().parent.name == expected


def test_file_with_bytes_but_no_header_is_moved_aside_not_overwritten(runtime, tmp_path):
    target = runtime.paths.sessions_root / "--proj--" / "broken.jsonl"
    target.parent.mkdir(parents=True)
    original = b'{"not":"a header"}\n{"type":"message","id":"x"}\n'
    target.write_bytes(original)
    manager = SessionManager.open(target, runtime=runtime)
    assert manager.moved_aside is not None
    assert manager.moved_aside.read_bytes() == original
    assert manager.moved_aside.name.startswith("broken.jsonl.corrupt-")
    assert lines(target)[0]["id"] == manager.get_session_id()


def test_empty_file_is_simply_replaced(runtime, tmp_path):
    (tmp_path / "files").mkdir()
    target = tmp_path / "files" / "empty.jsonl"
    target.write_bytes(b"")
    manager = SessionManager.open(target, runtime=runtime)
    assert manager.moved_aside is None
    assert [p.name for p in target.parent.iterdir()] == ["empty.jsonl"]


def test_append_after_torn_last_line_keeps_the_new_entry_readable(runtime, tmp_path):
    target = tmp_path / "torn.jsonl"
    write_jsonl(target, [HEADER, {"type": "message", "id": "m1", "parentId": None,
                                  "timestamp": "2025-01-01T00:00:01.000Z", "message": USER}],
                tail=b'{"type":"message","id":"m2","par')
    manager = SessionManager.open(target, runtime=runtime)
    new_id = manager.append_message(ASSISTANT)
    manager.close()
    parsed = parse_jsonl(target.read_bytes())
    assert [v.get("id") for v in parsed.values] == ["abc", "m1", new_id]
    assert parsed.bad_records == 1
    assert b'{"type":"message","id":"m2","par\n' in target.read_bytes()


def test_reading_never_writes(tmp_path):
    target = tmp_path / "v1.jsonl"
    write_jsonl(target, [{"type": "session", "id": "old", "timestamp": "2024-01-01T00:00:00.000Z", "cwd": "/w"},
                         {"type": "message", "timestamp": "2024-01-01T00:00:01.000Z", "message": USER}])
    before = (target.read_bytes(), target.stat().st_mtime_ns)
    loaded = load_session_file(target, FileSessionStorage(), BlobStore(tmp_path / "blobs"), lambda: "deadbeef")
    assert loaded.migrated and loaded.entries[0]["id"] == "deadbeef"
    assert (target.read_bytes(), target.stat().st_mtime_ns) == before


def test_migration_on_open_is_written_back_atomically(runtime, tmp_path):
    target = tmp_path / "files" / "v1.jsonl"
    write_jsonl(target, [{"type": "session", "id": "old", "timestamp": "2024-01-01T00:00:00.000Z", "cwd": "/w"},
                         {"type": "message", "timestamp": "2024-01-01T00:00:01.000Z", "message": USER},
                         {"type": "message", "timestamp": "2024-01-01T00:00:02.000Z",
                          "message": {"role": "hookMessage", "content": "x"}}])
    SessionManager.open(target, runtime=runtime)
    records = lines(target)
    assert records[0]["version"] == 3
    assert records[2]["parentId"] == records[1]["id"]
    assert records[2]["message"]["role"] == "custom"
    assert sorted(p.name for p in target.parent.iterdir()) == ["v1.jsonl"]


def test_unknown_entries_and_title_line_round_trip(runtime, tmp_path):
    target = tmp_path / "future.jsonl"
    title_line = {"type": "title", "v": 1, "title": "From the future", "source": "user"}
    unknown = {"type": "reset_boundary", "id": "r1", "parentId": None, "timestamp": "2025-01-01T00:00:01.000Z",
               "extra": {"nested": [1, 2]}}
    write_jsonl(target, [title_line, HEADER, unknown])
    manager = SessionManager.open(target, runtime=runtime)
    assert manager.get_session_name() == "From the future"
    manager.append_message(USER)
    manager.append_message(ASSISTANT)
    assert manager.set_session_name("Renamed", "user")
    manager.close()
    records = lines(target)
    assert records[0] == {**title_line, "title": "Renamed"}
    assert records[2] == unknown


def test_a_persistence_error_is_kept_and_raised_again(runtime, project):
    class FailingWriter:
        def write_line(self, data: bytes) -> None:
            raise OSError(28, "No space left on device")

        def flush(self) -> None: ...

        def fsync(self) -> None: ...

        def close(self) -> None: ...

        def get_error(self) -> None:
            return None

    class FullDisk(FileSessionStorage):
        def open_writer(self, path: Path) -> FailingWriter:
            return FailingWriter()

    manager = SessionManager.create(project, runtime=runtime)
    manager._storage = FullDisk()
    manager.append_message(USER)
    manager.append_message(ASSISTANT)
    with pytest.raises(PersistenceError, match="No space left"):
        manager.append_message(USER)
    with pytest.raises(PersistenceError):
        manager.append_message(USER)
    with pytest.raises(PersistenceError):
        manager.flush()


def test_in_memory_sessions_never_touch_the_disk(runtime, project):
    manager = SessionManager.in_memory(project, runtime=runtime)
    manager.append_message(USER)
    manager.append_message(ASSISTANT)
    manager.flush()
    assert manager.get_session_file() is None
    assert not runtime.paths.agent_dir.exists()


def test_memory_storage_keeps_files_in_a_map():
    storage = MemorySessionStorage()
    target = Path("/nowhere/a.jsonl")
    writer = storage.open_writer(target)
    writer.write_line(b"x\n")
    storage.write_atomic(Path("/nowhere/b.jsonl"), b"y\n")
    assert storage.read_bytes(target) == b"x\n"
    assert sorted(p.name for p in storage.list_files_sync(Path("/nowhere"))) == ["a.jsonl", "b.jsonl"]
    assert not Path("/nowhere").exists()


def test_large_images_go_to_the_blob_store_and_come_back(runtime, project):
    raw = os.urandom(3000)
    data = base64.b64encode(raw).decode()
    manager = SessionManager.create(project, runtime=runtime)
    manager.append_message({"role": "user", "content": [{"type": "image", "data": data, "mimeType": "image/png"}]})
    manager.append_message(ASSISTANT)
    manager.close()
    stored = lines(manager.get_session_file())[1]["message"]["content"][0]["data"]
    digest = parse_reference(stored)
    assert digest is not None
    assert (runtime.paths.blobs_dir / digest).read_bytes() == raw
    reopened = SessionManager.open(manager.get_session_file(), runtime=runtime)
    assert reopened.get_entries()[0]["message"]["content"][0]["data"] == data


def test_a_blob_reference_never_escapes_the_blob_directory(tmp_path):
    secret = tmp_path / "secret"
    secret.write_bytes(b"do not read")
    store = BlobStore(tmp_path / "blobs")
    for reference in ("blob:sha256:../secret", "blob:sha256:" + "0" * 63 + "/", "blob:sha256:/etc/passwd"):
        entry = {"type": "message", "message": {"content": [{"type": "image", "data": reference}]}}
        assert resolve_blob_references(entry, store) == entry
        assert store.get(reference) is None


def test_branch_to_a_missing_entry_is_an_error(runtime, project):
    manager = SessionManager.create(project, runtime=runtime)
    with pytest.raises(EntryNotFoundError, match="Entry nope not found"):
        manager.branch("nope")


def test_non_object_records_refuse_to_open_for_writing(runtime, tmp_path):
    target = tmp_path / "odd.jsonl"
    write_jsonl(target, [HEADER, None])
    before = target.read_bytes()
    with pytest.raises(SessionFileError, match="not JSON objects"):
        SessionManager.open(target, runtime=runtime)
    assert target.read_bytes() == before


def test_rewrites_leave_no_temporary_files(runtime, project):
    manager = SessionManager.create(project, runtime=runtime)
    manager.append_message(USER)
    manager.append_message(ASSISTANT)
    manager.set_session_name("One")
    manager.set_session_name("Two")
    manager.rewrite_entries()
    manager.close()
    assert [p.name for p in manager.get_session_file().parent.iterdir()] == [manager.get_session_file().name]


def test_an_overlay_storage_resumes_without_touching_the_disk(agent_paths, tmp_path):
    from sessdex.core.runtime import SessionRuntime
    from sessdex.core.storage import OverlaySessionStorage

    target = tmp_path / "files" / "v1.jsonl"
    write_jsonl(target, [{"type": "session", "id": "old", "timestamp": "2024-01-01T00:00:00.000Z", "cwd": "/w"},
                         {"type": "message", "timestamp": "2024-01-01T00:00:01.000Z", "message": USER}])
    before = target.read_bytes()
    runtime = SessionRuntime(paths=agent_paths, environ={"TMUX_PANE": "%1"}, tty_path=lambda: None,
                             storage=OverlaySessionStorage())
    with SessionManager.open(target, runtime=runtime) as manager:
        manager.append_thinking_level_change("high")
        manager.append_message(ASSISTANT)
        assert [e["type"] for e in manager.get_entries()] == ["message", "thinking_level_change", "message"]
        assert parse_jsonl(runtime.storage.read_bytes(target)).values[0]["version"] == 3
    assert target.read_bytes() == before
    assert not agent_paths.terminal_sessions_dir.exists()
