"""The agent's rules sessdex missed, and core robustness on odd files."""

from __future__ import annotations

import base64
import hashlib
import os
from datetime import UTC, datetime
from pathlib import Path

import orjson

from sessdex.core.context import build_session_context
from sessdex.core.discovery import list_all_sessions, list_sessions, read_session_info
from sessdex.core.jsonl import MAX_NESTING, parse_jsonl
from sessdex.core.records import is_listable_session
from sessdex.core.session_manager import SessionManager
from sessdex.core.summary import datetime_from_ms
from tests.core.conftest import ASSISTANT, USER
from tests.core.sessiontree import conversation, header, jsonl, make_tree, user, write_file


def reopened(manager: SessionManager, runtime) -> SessionManager:
    manager.close()
    return SessionManager.open(manager.get_session_file(), runtime=runtime)


# -- custom_message attribution -----------------------------------------------------------------

def test_a_custom_message_without_attribution_gets_none_in_the_context() -> None:
    entries = [{"type": "custom_message", "id": "c1", "parentId": None, "timestamp": "2025-01-01T00:00:00.000Z",
                "customType": "note", "content": "hi", "display": True},
               {"type": "custom_message", "id": "c2", "parentId": "c1", "timestamp": "2025-01-01T00:00:01.000Z",
                "customType": "note", "content": "yo", "display": True, "attribution": "user"}]
    messages = build_session_context(entries, "c2")["messages"]
    assert "attribution" not in messages[0]
    assert messages[1]["attribution"] == "user"


def test_the_writer_still_adds_agent_attribution(runtime, project) -> None:
    manager = SessionManager.in_memory(project, runtime=runtime)
    manager.append_custom_message_entry("note", "hi", True)
    assert manager.build_session_context()["messages"][0]["attribution"] == "agent"


# -- replay payloads of OpenAI Responses messages --------------------------------------------------

def responses_message(provider: str, api: str = "openai-responses") -> dict:
    return {"role": "assistant", "api": api, "provider": provider, "model": "gpt-test",
            "content": [{"type": "thinking", "thinking": "hmm", "thinkingSignature": "sig"},
                        {"type": "text", "text": "answer", "textSignature": "keep"}],
            "providerPayload": {"opaque": 1}, "timestamp": 2}


def test_replay_payloads_are_dropped_on_load_and_kept_in_the_file_until_a_rewrite(runtime, project) -> None:
    manager = SessionManager.create(project, runtime=runtime)
    manager.append_message(USER)
    for provider, api in (("openai", "openai-responses"), ("github-copilot", "openai-responses"),
                          ("anthropic", "openai-responses"), ("openai", "openai-completions")):
        manager.append_message(responses_message(provider, api))
    path = manager.get_session_file()
    loaded = reopened(manager, runtime)
    held = [entry["message"] for entry in loaded.get_entries()[1:]]
    assert ["providerPayload" in message for message in held] == [False, False, True, True]
    assert ["thinkingSignature" in message["content"][0] for message in held] == [False, False, True, True]
    assert all(message["content"][1]["textSignature"] == "keep" for message in held)
    assert path.read_bytes().count(b"providerPayload") == 4  # loading never writes
    loaded.set_session_name("a rename is a full rewrite")
    loaded.close()
    assert path.read_bytes().count(b"providerPayload") == 2
    assert path.read_bytes().count(b"thinkingSignature") == 2


# -- labels: copied in the order they were last set -----------------------------------------------------

def labelled_session(runtime, project) -> tuple[SessionManager, list[str]]:
    manager = SessionManager.create(project, runtime=runtime)
    ids = [manager.append_message(USER), manager.append_message(ASSISTANT), manager.append_message(USER)]
    manager.append_label_change(ids[0], "first")
    manager.append_label_change(ids[1], "second")
    manager.append_label_change(ids[2], "third")
    manager.append_label_change(ids[0])  # cleared ...
    manager.append_label_change(ids[0], "first again")  # ... and set again: now the last
    manager.append_label_change(ids[1], "second renamed")  # re-set without clearing: keeps its place
    manager.append_message(ASSISTANT)
    return manager, ids


def written_labels(path: Path) -> list[tuple[str, str]]:
    return [(r["targetId"], r["label"]) for r in parse_jsonl(path.read_bytes()).values if r.get("type") == "label"]


def test_a_branched_session_writes_labels_in_the_order_they_were_last_set(runtime, project) -> None:
    manager, ids = labelled_session(runtime, project)
    new_file = manager.create_branched_session(manager.get_leaf_id())
    manager.close()
    assert written_labels(new_file) == [(ids[1], "second renamed"), (ids[2], "third"), (ids[0], "first again")]


def test_fork_from_copies_every_entry_verbatim_label_entries_included(runtime, project) -> None:
    """The fork holds the source's entries byte for byte as records: same ids, parents, timestamps, and
    every label entry (set, cleared, set again) where it was, so later ids and the tree match the agent's."""
    manager, ids = labelled_session(runtime, project)
    manager.close()
    source = parse_jsonl(manager.get_session_file().read_bytes()).values
    fork = SessionManager.fork_from(manager.get_session_file(), project, runtime=runtime)
    fork.close()
    forked = parse_jsonl(fork.get_session_file().read_bytes()).values
    assert forked[1:] == source[1:]
    assert forked[0]["parentSession"] == source[0]["id"] and forked[0]["id"] != source[0]["id"]
    assert [fork.get_label(entry_id) for entry_id in ids] == ["first again", "second renamed", "third"]
    assert fork.get_leaf_id() == manager.get_leaf_id()


# -- which files are sessions, parentSessionPath ---------------------------------------------------

def test_is_listable_session_is_the_one_rule() -> None:
    assert is_listable_session("2025_abc.jsonl", "abc")
    assert not is_listable_session(".2025_abc.jsonl.1a2b3c4d.tmp", "abc")
    assert not is_listable_session(".2025_abc.jsonl", "abc")
    assert not is_listable_session("2025_abc.jsonl", "")
    assert not is_listable_session("2025_abc.jsonl", 7)
    assert not is_listable_session("2025_abc.jsonl", None)
    assert not is_listable_session("2025_abc.txt", "abc")


def test_session_info_carries_the_parent_session_path(tmp_path: Path) -> None:
    tree = make_tree(tmp_path)
    proj = tree.project("proj")
    child = tree.session(proj, "child", head=header("child", proj, parentSession="/x/parent.jsonl"))
    tree.session(proj, "orphan")
    infos = {info.id: info for info in list_sessions(proj, paths=tree.paths)}
    assert infos["child"].parent_session_path == "/x/parent.jsonl"
    assert infos["child"].to_agent_json()["parentSessionPath"] == "/x/parent.jsonl"
    assert "parentSessionPath" not in infos["orphan"].to_agent_json()
    assert read_session_info(child).parent_session_path == "/x/parent.jsonl"


# -- robustness of core on odd files --------------------------------------------------------------------

def test_records_nested_deeper_than_the_limit_are_bad_lines_whichever_parser_reads_them() -> None:
    def line(depth: int) -> bytes:
        return b'{"d":' + b"[" * depth + b"]" * depth + b"}\n"
    parsed = parse_jsonl(line(MAX_NESTING - 1) + line(MAX_NESTING + 1) + line(2000) + b'{"ok":1}\n')
    assert parsed.bad_records == 2
    assert parsed.values[-1] == {"ok": 1} and len(parsed.values) == 2


def test_integers_no_reader_can_hold_are_bad_lines() -> None:
    parsed = parse_jsonl(b'{"n":1' + b"0" * 400 + b'}\n{"n":-1' + b"0" * 5000 + b'}\n{"n":18446744073709551615}\n')
    assert parsed.bad_records == 2 and parsed.values == [{"n": 18446744073709551615}]


def test_far_future_and_far_past_times_are_clamped_into_datetimes_range() -> None:
    year_5000_ms = 95_617_584_000_000
    assert datetime_from_ms(year_5000_ms).year == 5000
    assert datetime_from_ms(1e20).year == 9999
    assert datetime_from_ms(-1e20) >= datetime(1, 1, 2, tzinfo=UTC)


def test_folders_and_files_whose_names_are_not_utf8_are_listed_with_encodable_text(tmp_path: Path) -> None:
    tree = make_tree(tmp_path)
    proj = tree.project("proj")
    bad_folder = os.fsencode(tree.paths.sessions_root) + b"/--caf\xe9--"
    os.makedirs(bad_folder)
    # JSON escapes of a lone surrogate: orjson refuses them, the lenient reader yields lone surrogates.
    head = jsonl([header("0000000000000bad", proj, title="t@")]).replace(b"t@", b"t\\ud800")
    prompt = jsonl([user("lone @")]).replace(b"lone @", b"lone \\ud800")
    with open(bad_folder + b"/2025_\xff.jsonl", "wb") as handle:
        handle.write(head + prompt)
    [info] = list_all_sessions(paths=tree.paths)
    assert os.fsencode(info.path).endswith(b"/2025_\xff.jsonl")
    for text in (info.id, info.cwd, info.title, info.first_message, info.all_messages_text):
        text.encode("utf-8")  # never raises
    assert info.title == "t\ufffd"


def test_a_blob_that_is_a_symlink_out_of_the_blob_folder_is_not_followed(runtime, project, tmp_path) -> None:
    secret = tmp_path / "secret.png"
    secret.write_bytes(b"not yours")
    reference = "blob:sha256:" + hashlib.sha256(b"image").hexdigest()
    blobs = runtime.paths.blobs_dir
    blobs.mkdir(parents=True)
    (blobs / reference.removeprefix("blob:sha256:")).symlink_to(secret)
    session = runtime.paths.sessions_root / "--p--" / "2025_blob.jsonl"
    image = {"role": "user", "content": [{"type": "image", "mimeType": "image/png", "data": reference}],
             "timestamp": 1}
    write_file(session, jsonl([header("blob", project), {"type": "message", "id": "m1", "parentId": None,
                                                         "timestamp": "2025-01-01T00:00:00.000Z", "message": image}]))
    manager = SessionManager.open(session, runtime=runtime)
    data = manager.get_entries()[0]["message"]["content"][0]["data"]
    assert data == reference and base64.b64encode(b"not yours").decode() != data
    manager.close()
    assert orjson.loads(session.read_bytes().splitlines()[1])["message"]["content"][0]["data"] == reference


# -- open(), getChildren(), list(): rules the agent's own code shows ----------------------------------------

def test_open_keeps_the_header_cwd_even_when_that_directory_is_gone(tmp_path: Path, runtime) -> None:
    tree = make_tree(tmp_path)
    proj = tree.project("proj")
    gone = str(tmp_path / "home" / "deleted-project")
    session = tree.session(proj, "gonecwd", head=header("gonecwd", gone))
    manager = SessionManager.open(session, runtime=runtime)
    assert manager.get_cwd() == gone
    manager.close()


def test_of_two_entries_sharing_an_id_get_children_returns_only_the_later(tmp_path: Path, runtime) -> None:
    tree = make_tree(tmp_path)
    proj = tree.project("proj")
    first = user("first copy", "d0000001", "u0000001")
    later = user("later copy", "d0000001", "u0000001")
    session = write_file(proj.parent / "dup.jsonl", jsonl([header("dup", proj), user("root"), first, later]))
    manager = SessionManager.open(session, runtime=runtime)
    children = manager.get_children("u0000001")
    manager.close()
    assert [child["message"]["content"] for child in children] == ["later copy"]


def test_an_empty_header_title_stays_empty_in_listings(tmp_path: Path) -> None:
    tree = make_tree(tmp_path)
    proj = tree.project("proj")
    compaction = {"type": "compaction", "id": "c0000001", "parentId": "u0000001",
                  "timestamp": "2025-01-01T00:00:02.000Z", "summary": "s", "shortSummary": "Short summary",
                  "firstKeptEntryId": "u0000001", "tokensBefore": 1}
    tree.session(proj, "emptytitle", conversation("q1") + [compaction], head=header("emptytitle", proj, title=""))
    tree.session(proj, "notitle", conversation("q2") + [compaction])
    infos = {info.id: info for info in list_sessions(proj, paths=tree.paths)}
    assert infos["emptytitle"].title == ""
    assert infos["notitle"].title == "Short summary"
    assert {info.id: info.title for info in list_all_sessions(paths=tree.paths)}["emptytitle"] == ""


# -- v1 migration ----------------------------------------------------------------------------------------------

def v1_record(kind: str, old_id: str | None = None, **fields) -> dict:
    record = {"type": kind, "timestamp": "2025-01-01T00:00:00.000Z", **fields}
    if old_id is not None:
        record["id"] = old_id
    return record


def test_a_v1_compaction_index_pointing_forward_resolves_as_the_agent_does() -> None:
    from sessdex.core.migrate import migrate_session

    ids = iter(["n1", "n2", "n3", "n4", "n5", "n6"])
    entries = [v1_record("message", "old1", message={"role": "user", "content": "a"}),
               v1_record("compaction", summary="back", firstKeptEntryIndex=1),
               v1_record("compaction", summary="forward, with id", firstKeptEntryIndex=4),
               v1_record("message", "old4", message={"role": "user", "content": "b"}),
               v1_record("compaction", summary="forward, no id", firstKeptEntryIndex=6),
               v1_record("message", message={"role": "user", "content": "c"})]
    migrate_session({"type": "session", "id": "s"}, entries, lambda: next(ids))
    assert entries[1]["firstKeptEntryId"] == "n1"
    assert entries[2]["firstKeptEntryId"] == "old4"
    assert "firstKeptEntryId" not in entries[4]
    assert all("firstKeptEntryIndex" not in entry for entry in entries)


def test_migrating_a_v1_file_whose_entries_carry_ids_writes_no_duplicates(tmp_path: Path, runtime) -> None:
    tree = make_tree(tmp_path)
    proj = tree.project("proj")
    records = [v1_record("message", "old1", message={"role": "user", "content": "q", "timestamp": 1}),
               v1_record("message", "old2", message={**ASSISTANT, "content": [{"type": "text", "text": "a"}]}),
               v1_record("message", "old3", message={"role": "user", "content": "q2", "timestamp": 3}),
               v1_record("message", "old4", message={**ASSISTANT, "content": [{"type": "text", "text": "b"}]})]
    session = tree.session(proj, "v1ids", records, head={"type": "session", "id": "v1ids",
                                                         "timestamp": "2025-01-01T00:00:00.000Z", "cwd": str(proj)})
    manager = SessionManager.open(session, runtime=runtime)
    manager.close()
    written = parse_jsonl(session.read_bytes()).values
    assert written[0]["version"] == 3
    assert len(written) == 1 + len(records)
    assert [entry["parentId"] for entry in written[1:]] == [None] + [entry["id"] for entry in written[1:-1]]


def _answered(manager: SessionManager) -> None:
    manager.append_message(USER)
    manager.append_message(ASSISTANT)


def test_move_to_keeps_a_custom_sessions_root_when_the_folder_is_the_cwds_default_name(runtime, project,
                                                                                      tmp_path) -> None:
    paths = runtime.paths
    custom_root = tmp_path / "custom-sessions"
    manager = SessionManager.create(project, custom_root / paths.project_dir_name(project), runtime=runtime)
    _answered(manager)
    old_file = manager.get_session_file()
    assert old_file is not None and old_file.exists()
    other = paths.home / "other"
    other.mkdir()
    manager.move_to(str(other))
    moved = manager.get_session_file()
    assert moved == custom_root / paths.project_dir_name(str(other)) / old_file.name
    assert moved.exists() and not old_file.exists()
    assert not paths.sessions_root.exists() or not list(paths.sessions_root.rglob("*.jsonl"))
    manager.close()


def test_move_to_the_current_cwd_does_nothing_even_for_a_file_opened_elsewhere(runtime, project, tmp_path) -> None:
    outside = tmp_path / "outside" / "mine.jsonl"
    write_file(outside, jsonl([header("4ddd000000000001", project), user("kept where it is")]))
    before = outside.read_bytes()
    manager = SessionManager.open(outside, runtime=runtime)
    manager.move_to(project)
    assert manager.get_session_file() == outside and outside.read_bytes() == before
    assert not runtime.paths.project_session_dir(project).exists()
    manager.close()
