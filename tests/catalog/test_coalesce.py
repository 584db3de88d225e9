"""The watcher's pure parts: coalescing synthetic event sequences, and debouncing them in time."""

from __future__ import annotations

from sessdex.catalog.index.watcher import Action, Changes, EventBatcher, FsEvent, coalesce

A, B, TMP = "/s/p/a.jsonl", "/s/p/b.jsonl", "/s/p/b.jsonl.tmp"


def test_a_burst_of_writes_is_one_index():
    events = [FsEvent("created", A)] + [FsEvent("modified", A)] * 50
    assert coalesce(events) == Changes({A: Action.INDEX}, [])


def test_partial_writes_of_several_files_keep_each_file_once_in_order_of_last_event():
    events = [FsEvent("modified", A), FsEvent("modified", B), FsEvent("modified", A)]
    assert list(coalesce(events).files) == [B, A]
    assert set(coalesce(events).files.values()) == {Action.INDEX}


def test_delete_then_recreate_is_an_index_and_create_then_delete_a_removal():
    assert coalesce([FsEvent("deleted", A), FsEvent("created", A), FsEvent("modified", A)]).files == {A: Action.INDEX}
    assert coalesce([FsEvent("created", A), FsEvent("modified", A), FsEvent("deleted", A)]).files == {A: Action.REMOVE}


def test_an_atomic_rewrite_renames_a_temporary_file_over_the_session():
    events = [FsEvent("created", TMP), FsEvent("modified", TMP), FsEvent("moved", TMP, B)]
    assert coalesce(events) == Changes({B: Action.INDEX}, [])


def test_a_rename_removes_the_source_and_indexes_the_destination():
    assert coalesce([FsEvent("moved", A, B)]).files == {A: Action.REMOVE, B: Action.INDEX}


def test_a_rename_over_an_existing_session_reindexes_it():
    events = [FsEvent("modified", B), FsEvent("moved", A, B)]
    assert coalesce(events).files == {B: Action.INDEX, A: Action.REMOVE}


def test_moving_a_session_away_and_back():
    events = [FsEvent("moved", A, "/s/p/a.bak"), FsEvent("moved", "/s/p/a.bak", A)]
    assert coalesce(events).files == {A: Action.INDEX}


def test_other_files_are_ignored():
    events = [FsEvent("modified", "/s/p/notes.txt"), FsEvent("created", "/s/p/x.jsonl.lock"),
              FsEvent("moved", "/s/p/a.tmp", "/s/p/b.tmp")]
    assert not coalesce(events)


def test_folders_created_deleted_or_moved_are_rescanned_once():
    events = [FsEvent("created", "/s/new", is_directory=True), FsEvent("created", "/s/new/x.jsonl"),
              FsEvent("moved", "/s/old", "/s/renamed", is_directory=True), FsEvent("deleted", "/s/gone", is_directory=True),
              FsEvent("created", "/s/new", is_directory=True)]
    changes = coalesce(events)
    assert changes.rescan == ["/s/new", "/s/old", "/s/renamed", "/s/gone"]
    assert changes.files == {"/s/new/x.jsonl": Action.INDEX}


def test_no_events_is_no_change():
    assert not coalesce([])


def test_batches_wait_for_quiet_but_never_longer_than_the_maximum_delay():
    batcher = EventBatcher(quiet=0.05, max_delay=0.2)
    assert batcher.wait_time(0.0) is None
    batcher.add(FsEvent("modified", A), 1.0)
    assert abs(batcher.wait_time(1.0) - 0.05) < 1e-9
    batcher.add(FsEvent("modified", A), 1.04)
    assert abs(batcher.wait_time(1.04) - 0.05) < 1e-9  # quiet period restarted by the second event
    for step in range(1, 10):  # a steady stream every 20 ms never goes quiet...
        batcher.add(FsEvent("modified", A), 1.04 + step * 0.02)
    assert batcher.wait_time(1.2) == 0.0  # ...but the batch is due 200 ms after its first event
    assert len(batcher.take()) == 11
    assert batcher.wait_time(1.3) is None


def test_dot_files_are_never_sessions_to_the_watcher():
    changes = coalesce([FsEvent("created", "/s/p/.draft.jsonl"), FsEvent("modified", "/s/p/.x.jsonl"),
                        FsEvent("created", "/s/p/real.jsonl")])
    assert sorted(changes.files) == ["/s/p/real.jsonl"]
