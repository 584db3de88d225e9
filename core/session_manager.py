"""SessionManager: one session's header, entry tree and leaf, and their persistence.

Appends update memory at once. Nothing reaches the disk until the first assistant message; then the
whole session is written and later entries are appended line by line. Every rewrite (migration,
rename, move, fork) is atomic. The first persistence error is kept and raised again by later calls.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from types import EllipsisType
from typing import Any

from sessdex.core.blobs import BlobStore, externalize_images, resolve_blob_references
from sessdex.core.context import build_session_context, path_to_leaf
from sessdex.core.errors import EntryNotFoundError, NotASessionError, PersistenceError, SessionBusyError, SessionFileError
from sessdex.core.jsonl import dumps_line, parse_jsonl
from sessdex.core.migrate import migrate_session
from sessdex.core.paths import (
    absolute_path,
    current_directory,
    documented_project_dir_name,
    is_session_file_name,
    session_file_name,
)
from sessdex.core.private_files import make_private_dirs
from sessdex.core.records import CURRENT_SESSION_VERSION, split_session_records, strip_replay_payloads
from sessdex.core.runtime import SessionRuntime, iso_from_ms
from sessdex.core.size_control import limit_sizes
from sessdex.core.storage import FileStat, MemorySessionStorage, SessionStorage, SessionStorageWriter

log = logging.getLogger(__name__)

_CONTROL_CHARS = {i: " " for i in list(range(0, 32)) + [127]}


@dataclass
class TreeNode:
    """One entry in the session tree, with its resolved label and its children (oldest first)."""

    entry: dict[str, Any]
    children: list[TreeNode] = field(default_factory=list)
    label: str | None = None


@dataclass
class LoadedSession:
    """What `load_session_file` read: header, entries, counts, and whether a migration changed them."""

    header: dict[str, Any] | None
    entries: list[Any]
    title_line: dict[str, Any] | None = None
    bad_records: int = 0
    migrated: bool = False
    torn_tail: bool = False
    has_bytes: bool = False
    # The ids the file's entries carried before a migration replaced them: not "appended by others" later.
    ids_before_migration: frozenset[str] = frozenset()


def load_session_file(path: Path, storage: SessionStorage, blobs: BlobStore | None,
                      new_entry_id: Callable[[], str]) -> LoadedSession:
    """Read, migrate (in memory) and blob-resolve a session file. Never writes.

    A file that exists but cannot be read (no permission, not a regular file) is a SessionFileError.
    """
    try:
        data = storage.read_bytes(path)
    except OSError as exc:
        raise SessionFileError(f"{path}: cannot read it ({exc.strerror or exc})") from exc
    if data is None:
        return LoadedSession(None, [])
    parsed = parse_jsonl(data)
    records = split_session_records(parsed.values)
    if records is None:
        return LoadedSession(None, [], bad_records=parsed.bad_records, has_bytes=bool(data.strip()),
                             torn_tail=parsed.torn_tail)
    header = dict(records.header)
    entries = records.entries
    file_ids = frozenset(entry["id"] for entry in entries if isinstance(entry, dict) and isinstance(entry.get("id"), str))
    migrated = migrate_session(header, entries, new_entry_id)
    entries = [project_loaded_entry(entry, blobs) for entry in entries]
    return LoadedSession(header, entries, records.title_line, parsed.bad_records, migrated, parsed.torn_tail, True,
                         file_ids if migrated else frozenset())


def project_loaded_entry(entry: Any, blobs: BlobStore | None) -> Any:
    """An entry as read from disk becomes the entry held in memory: blobs resolved, replay payloads dropped."""
    if blobs is not None:
        entry = resolve_blob_references(entry, blobs)
    return strip_replay_payloads(entry)


def sanitize_session_name(name: Any) -> str:
    """Control characters become spaces, runs of whitespace collapse, ends are trimmed."""
    if not isinstance(name, str):
        return ""
    return " ".join(name.translate(_CONTROL_CHARS).split())


class SessionManager:
    """A session's tree of entries and its file; see the module docstring for the persistence rules."""

    def __init__(self, cwd: str, session_dir: Path | None, session_file: Path | None, *,
                 runtime: SessionRuntime, storage: SessionStorage, persist: bool) -> None:
        self._runtime = runtime
        self._storage = storage
        self._persist = persist
        self._blobs = BlobStore(runtime.paths.blobs_dir, storage) if persist else None
        self._lock = threading.RLock()
        self._cwd = cwd
        self._session_dir = session_dir
        self._session_file = session_file
        self._header: dict[str, Any] = {}
        # A `title` first line written by newer agents: kept and written back as it is.
        self._title_line: dict[str, Any] | None = None
        self._entries: list[dict[str, Any]] = []
        self._by_id: dict[str, dict[str, Any]] = {}
        self._labels: dict[str, str] = {}
        self._leaf_id: str | None = None
        self._on_disk = False
        self._writer: SessionStorageWriter | None = None
        # The session file as this manager last left it: while it still is, no other process wrote to it.
        self._written_state: FileStat | None = None
        self._ids_before_migration: frozenset[str] = frozenset()
        self._persist_error: BaseException | None = None
        self.bad_records = 0
        # Where set_session_file moved a headerless file before starting a session at its path.
        self.moved_aside: Path | None = None

    # -- construction ---------------------------------------------------------------------------

    @classmethod
    def create(cls, cwd: str, session_dir: str | os.PathLike[str] | None = None, *,
               runtime: SessionRuntime | None = None) -> SessionManager:
        """A new persistent session for the project at `cwd` (nothing is written until the first answer)."""
        runtime = runtime or SessionRuntime.default()
        cwd = absolute_path(cwd)
        directory = Path(session_dir) if session_dir else cls._default_dir(cwd, runtime, create=True)
        manager = cls(cwd, directory, None, runtime=runtime, storage=runtime.file_storage(), persist=True)
        manager._start_new_session()
        manager._write_breadcrumb()
        return manager

    @classmethod
    def open(cls, path: str | os.PathLike[str], session_dir: str | os.PathLike[str] | None = None, *,
             runtime: SessionRuntime | None = None) -> SessionManager:
        """Open the session file at `path`; a missing, empty or headerless file starts a new session there."""
        runtime = runtime or SessionRuntime.default()
        path = Path(absolute_path(path))
        directory = Path(session_dir) if session_dir else path.parent
        manager = cls(current_directory(), directory, None, runtime=runtime, storage=runtime.file_storage(), persist=True)
        manager.set_session_file(path)
        # The header's cwd is kept even when that directory no longer exists, as the agent does: a later
        # new_session() then records the project the session belongs to, not wherever this process runs.
        header_cwd = manager._header.get("cwd")
        if isinstance(header_cwd, str) and header_cwd:
            manager._cwd = header_cwd
        return manager

    @classmethod
    def in_memory(cls, cwd: str | None = None, *, runtime: SessionRuntime | None = None) -> SessionManager:
        """A session that never touches the disk."""
        runtime = runtime or SessionRuntime.default()
        manager = cls(absolute_path(cwd or current_directory()), None, None, runtime=runtime,
                      storage=MemorySessionStorage(), persist=False)
        manager._start_new_session(with_file=False)
        return manager

    @classmethod
    def continue_recent(cls, cwd: str, session_dir: str | os.PathLike[str] | None = None, *,
                        runtime: SessionRuntime | None = None) -> SessionManager:
        """This terminal's last session, else the project's newest file, else a new session."""
        from sessdex.core.breadcrumbs import resolve_continue_target

        runtime = runtime or SessionRuntime.default()
        cwd = absolute_path(cwd)
        target = resolve_continue_target(cwd, session_dir, paths=runtime.paths, env=runtime.environ,
                                         tty_path=runtime.tty_path())
        if target is None:
            return cls.create(cwd, session_dir, runtime=runtime)
        directory = Path(session_dir) if session_dir else Path(target).parent
        manager = cls(cwd, directory, None, runtime=runtime, storage=runtime.file_storage(), persist=True)
        manager.set_session_file(Path(target))
        return manager

    @classmethod
    def fork_from(cls, source_path: str | os.PathLike[str], target_cwd: str,
                  session_dir: str | os.PathLike[str] | None = None, *,
                  runtime: SessionRuntime | None = None) -> SessionManager:
        """A new session in `target_cwd`'s project holding a copy of another session's entries.

        A source that does not exist gives a new empty session, as the agent does (conformance case fork_from).
        """
        runtime = runtime or SessionRuntime.default()
        target_cwd = absolute_path(target_cwd)
        storage = runtime.file_storage()
        directory = Path(session_dir) if session_dir else cls._default_dir(target_cwd, runtime, create=False)
        manager = cls(target_cwd, directory, None, runtime=runtime, storage=storage, persist=True)
        source = load_session_file(Path(source_path), storage, manager._blobs, runtime.ids.entry_id)
        manager._start_new_session()
        if source.header is not None:
            manager._header["parentSession"] = source.header["id"]
            for key in ("title", "titleSource"):
                if source.header.get(key) is not None:
                    manager._header[key] = source.header[key]
            # Every entry is copied verbatim, label entries included (same ids, parents and timestamps),
            # so the fork's tree and later ids match the agent's own fork of the same file.
            manager._set_entries([entry for entry in source.entries if isinstance(entry, dict)])
        manager._write_whole_file()
        manager._write_breadcrumb()
        return manager

    @staticmethod
    def get_default_session_dir(cwd: str, *, runtime: SessionRuntime | None = None) -> Path:
        """The directory new sessions of `cwd` go to; created if missing."""
        runtime = runtime or SessionRuntime.default()
        return SessionManager._default_dir(absolute_path(cwd), runtime, create=True)

    @staticmethod
    def _default_dir(cwd: str, runtime: SessionRuntime, *, create: bool) -> Path:
        paths = runtime.paths
        directory = paths.project_session_dir(cwd)
        if paths.naming == "agent":
            _adopt_legacy_directory(paths.sessions_root, directory, cwd)
        if create:
            make_private_dirs(directory)
        return directory

    def _move_target_dir(self, old_cwd: str, new_cwd: str) -> Path:
        """Where move_to puts the file: when it sits in the old cwd's default-named folder under another sessions
        root (a custom session dir), the new cwd's folder under that same root, as the agent does; otherwise the
        new cwd's folder in the agent's sessions root."""
        assert self._session_file is not None
        paths = self._runtime.paths
        folder = self._session_file.parent
        root = folder.parent
        default_names = {paths.project_dir_name(old_cwd), documented_project_dir_name(old_cwd)}
        if folder.name in default_names and os.path.abspath(root) != os.path.abspath(paths.sessions_root):
            directory = root / paths.project_dir_name(new_cwd)
            make_private_dirs(directory)
            return directory
        return self._default_dir(new_cwd, self._runtime, create=True)

    def _start_new_session(self, *, with_file: bool = True, parent_session: str | None = None) -> None:
        now = self._runtime.clock.now_ms()
        session_id = self._runtime.ids.session_id()
        self._header = {"type": "session", "version": CURRENT_SESSION_VERSION, "id": session_id,
                        "timestamp": iso_from_ms(now), "cwd": self._cwd}
        if parent_session is not None:
            self._header["parentSession"] = parent_session
        self._title_line = None
        self._set_entries([])
        self._close_writer()
        self._on_disk = False
        if with_file and self._session_dir is not None:
            self._session_file = self._session_dir / session_file_name(iso_from_ms(now), session_id)

    def _set_entries(self, entries: list[dict[str, Any]]) -> None:
        self._entries = entries
        self._by_id = {e["id"]: e for e in entries if isinstance(e, dict) and isinstance(e.get("id"), str)}
        self._labels = {}
        for entry in entries:
            if isinstance(entry, dict) and entry.get("type") == "label":
                self._apply_label(entry)
        self._leaf_id = entries[-1].get("id") if entries and isinstance(entries[-1], dict) else None

    def _labels_in_order_set(self, target_ids: set[str]) -> list[tuple[str, str]]:
        """The labels on `target_ids` in the order they were last set: a label cleared and set again
        comes after the others (re-setting one without clearing it keeps its place), as the agent orders them."""
        return [(target, label) for target, label in self._labels.items() if target in target_ids]

    def _recreate_labels(self, labels: list[tuple[str, str]]) -> None:
        """Append one label entry per (target, label), in memory only (the caller writes the file)."""
        for target_id, label in labels:
            self._append({"type": "label", "targetId": target_id, "label": label}, persist=False)

    def _apply_label(self, entry: dict[str, Any]) -> None:
        target = entry.get("targetId")
        if not isinstance(target, str):
            return
        if entry.get("label"):
            self._labels[target] = entry["label"]
        else:
            self._labels.pop(target, None)

    # -- switching files ------------------------------------------------------------------------

    def set_session_file(self, path: str | os.PathLike[str]) -> None:
        """Make `path` this manager's session: load, migrate and blob-resolve it, or start a new one there.

        A file with bytes but no valid header is never overwritten: a `.jsonl` inside the agent's sessions
        folder is moved aside to `<name>.corrupt-<UTC ts>` first; anywhere else it is someone's own
        file and NotASessionError refuses it. Temp files a killed rewrite of `path` left are removed.
        """
        with self._lock:
            self._raise_persist_error()
            path = Path(absolute_path(path))
            self._close_writer()
            self._remove_stale_temporaries(path)
            loaded = load_session_file(path, self._storage, self._blobs, self._runtime.ids.entry_id)
            if loaded.header is None and loaded.has_bytes and not self._may_move_aside(path):
                raise NotASessionError(f"{path} is not a session file (no valid session header); "
                                       "refusing to open it")
            self._session_file = path
            if loaded.header is None:
                if loaded.has_bytes:
                    self.moved_aside = self._move_aside(path)
                self._start_new_session(with_file=False)
                self._session_file = path
                self._write_whole_file()
            else:
                non_objects = [e for e in loaded.entries if not isinstance(e, dict)]
                if non_objects:
                    raise SessionFileError(
                        f"{path}: {len(non_objects)} record(s) are not JSON objects; refusing to open it for "
                        "writing (run `sessdex entries` to inspect it)")
                self._header = loaded.header
                self._set_entries(loaded.entries)
                self._title_line = loaded.title_line
                self._ids_before_migration = loaded.ids_before_migration
                self.bad_records = loaded.bad_records
                self._on_disk = True
                if loaded.migrated:
                    self._write_whole_file()
            self._write_breadcrumb()

    def _may_move_aside(self, path: Path) -> bool:
        """Only a `.jsonl` inside the agent's sessions folder may be moved aside for a new session."""
        if not is_session_file_name(path.name):
            return False
        root = os.path.realpath(self._runtime.paths.sessions_root)
        return os.path.realpath(path).startswith(root.rstrip(os.sep) + os.sep)

    def _remove_stale_temporaries(self, path: Path) -> None:
        """Remove `.<name>.<hex>.tmp` files of killed rewrites, holding the writers' lock (a live rewrite holds it)."""
        if not self._storage.exists_sync(path):
            return
        try:
            with self._storage.exclusive(path):
                for leftover in self._storage.remove_stale_temporaries(path):
                    log.warning("removed %s, left behind by an interrupted rewrite", leftover)
        except OSError as exc:
            log.warning("could not clean up temp files of %s: %s", path, exc)

    def _move_aside(self, path: Path) -> Path:
        stamp = iso_from_ms(self._runtime.clock.now_ms()).replace(":", "-").replace(".", "-")
        target = path.with_name(f"{path.name}.corrupt-{stamp}")
        suffix = 1
        while self._storage.exists_sync(target):
            suffix += 1
            target = path.with_name(f"{path.name}.corrupt-{stamp}-{suffix}")
        self._storage.rename(path, target)
        log.warning("%s had no valid session header; moved it aside to %s", path, target)
        return target

    def new_session(self, options: dict[str, Any] | None = None) -> Path | None:
        """Drop the transcript and start a new session (new id and file) in the same directory."""
        with self._lock:
            self._raise_persist_error()
            parent = (options or {}).get("parentSession")
            self._start_new_session(with_file=self._persist, parent_session=parent)
            self._write_breadcrumb()
            return self._session_file

    def fork(self) -> dict[str, Any]:
        """Copy this session into a new file (parentSession = old id) and continue there."""
        with self._lock:
            self._raise_persist_error()
            old_file, old_id = self._session_file, self._header["id"]
            entries = list(self._entries)
            keep: dict[str, Any] = {key: self._header[key] for key in ("title", "titleSource") if key in self._header}
            self._start_new_session(with_file=self._persist, parent_session=old_id)
            self._header.update(keep)
            self._set_entries(entries)
            if self._persist:
                self._write_whole_file()
                self._write_breadcrumb()
            return {"oldSessionFile": old_file, "newSessionFile": self._session_file}

    def create_branched_session(self, leaf_id: str) -> Path | None:
        """A new session holding the path to `leaf_id` (labels re-created at its end); continue there."""
        with self._lock:
            self._raise_persist_error()
            if leaf_id not in self._by_id:
                raise EntryNotFoundError(leaf_id)
            path = path_to_leaf(self._entries, leaf_id, self._by_id)
            kept = [entry for entry in path if entry.get("type") != "label"]
            labels = self._labels_in_order_set({entry["id"] for entry in kept})
            old_file = self._session_file
            self._start_new_session(with_file=self._persist,
                                    parent_session=str(old_file) if old_file else None)
            self._set_entries(kept)
            self._recreate_labels(labels)
            if self._persist:
                self._write_whole_file()
                self._write_breadcrumb()
            return self._session_file

    def move_to(self, new_cwd: str) -> None:
        """Move the session file into `new_cwd`'s project directory and record the new cwd.

        Entries others appended to the old file are taken in first; a process holding the old file open for
        writing makes it refuse (SessionBusyError) and leaves the session as it was.
        """
        with self._lock:
            self._raise_persist_error()
            new_cwd = absolute_path(new_cwd)
            if new_cwd == self._cwd:
                return  # as the agent: a move to the current cwd does nothing (a file opened elsewhere stays there)
            saved = (self._cwd, self._header.get("cwd"), self._session_dir, self._session_file)
            old_cwd = self._cwd
            self._cwd = new_cwd
            self._header["cwd"] = new_cwd
            if not self._persist or self._session_file is None:
                return
            directory = self._move_target_dir(old_cwd, new_cwd)
            target = directory / self._session_file.name
            old_file = self._session_file
            self._close_writer()
            self._session_dir = directory
            self._session_file = target
            try:
                if self._on_disk and old_file != target:
                    # Under the old file's lock, so that nobody appends there between the copy and the unlink.
                    def move() -> None:
                        with self._storage.exclusive(old_file):
                            self._storage.refuse_if_written_elsewhere(old_file)

                            def copy_and_unlink() -> None:
                                self._adopt_entries_appended_elsewhere(old_file)
                                self._write_whole_file()
                                self._storage.unlink(old_file)

                            self._taking_in_late_appends(old_file, target, copy_and_unlink)

                    self._guard(move)
                elif self._on_disk:
                    self._write_whole_file()
            except SessionBusyError:
                self._cwd, self._header["cwd"], self._session_dir, self._session_file = saved
                raise
            self._write_breadcrumb()

    # -- appends --------------------------------------------------------------------------------

    def _append(self, fields: dict[str, Any], *, persist: bool = True,
                parent_id: str | None | object = ..., fields_first: bool = False) -> str:
        entry_id = self._runtime.ids.entry_id()
        while entry_id in self._by_id:
            entry_id = self._runtime.ids.entry_id()
        base = {"id": entry_id, "parentId": self._leaf_id if parent_id is ... else parent_id,
                "timestamp": self._runtime.now_iso()}
        entry = {"type": fields["type"], **{k: v for k, v in fields.items() if k != "type"}, **base} \
            if fields_first else {"type": fields["type"], **base, **{k: v for k, v in fields.items() if k != "type"}}
        self._entries.append(entry)
        self._by_id[entry_id] = entry
        self._leaf_id = entry_id
        if entry["type"] == "label":
            self._apply_label(entry)
        if persist:
            self._persist_entry(entry)
        return entry_id

    def _append_checked(self, fields: dict[str, Any], **options: Any) -> str:
        with self._lock:
            self._raise_persist_error()
            return self._append(fields, **options)

    def append_message(self, message: dict[str, Any]) -> str:
        """Append a message entry (user, assistant, toolResult, custom, ...)."""
        return self._append_checked({"type": "message", "message": message})

    def append_thinking_level_change(self, thinking_level: str | None = None) -> str:
        return self._append_checked({"type": "thinking_level_change", "thinkingLevel": thinking_level})

    def append_model_change(self, model: str, role: str | None = None) -> str:
        fields: dict[str, Any] = {"type": "model_change", "model": model}
        if role is not None:
            fields["role"] = role
        return self._append_checked(fields)

    def append_service_tier_change(self, service_tier: Any) -> str:
        return self._append_checked({"type": "service_tier_change", "serviceTier": service_tier})

    def append_mode_change(self, mode: str, data: Any = None) -> str:
        fields: dict[str, Any] = {"type": "mode_change", "mode": mode}
        if data is not None:
            fields["data"] = data
        return self._append_checked(fields)

    def append_compaction(self, summary: str, short_summary: str | None, first_kept_entry_id: str,
                          tokens_before: int, details: Any = None, from_extension: bool | None = None) -> str:
        fields: dict[str, Any] = {"type": "compaction", "summary": summary}
        if short_summary is not None:
            fields["shortSummary"] = short_summary
        fields.update({"firstKeptEntryId": first_kept_entry_id, "tokensBefore": tokens_before})
        if details is not None:
            fields["details"] = details
        if from_extension is not None:
            fields["fromExtension"] = from_extension
        return self._append_checked(fields)

    def append_custom_entry(self, custom_type: str, data: Any = None) -> str:
        fields: dict[str, Any] = {"type": "custom", "customType": custom_type}
        if data is not None:
            fields["data"] = data
        return self._append_checked(fields)

    def append_custom_message_entry(self, custom_type: str | None, content: Any, display: bool | None = None,
                                    details: Any = None, attribution: str | None = None) -> str:
        fields: dict[str, Any] = {"type": "custom_message"}
        for key, value in (("customType", custom_type), ("content", content), ("display", display),
                           ("details", details)):
            if value is not None:
                fields[key] = value
        fields["attribution"] = attribution or "agent"
        return self._append_checked(fields, fields_first=True)

    def append_label_change(self, target_id: str, label: str | None = None) -> str:
        """Set (or with None clear) the label of an existing entry."""
        with self._lock:
            self._raise_persist_error()
            if target_id not in self._by_id:
                raise EntryNotFoundError(target_id)
            fields: dict[str, Any] = {"type": "label", "targetId": target_id}
            if label is not None:
                fields["label"] = label
            return self._append(fields)

    def append_ttsr_injection(self, injected_rules: list[str]) -> str:
        return self._append_checked({"type": "ttsr_injection", "injectedRules": list(injected_rules)})

    def append_session_init(self, init: dict[str, Any]) -> str:
        return self._append_checked({"type": "session_init", **init})

    def append_entry(self, entry: dict[str, Any]) -> str:
        """Append an entry of any type (also ones sessdex does not know), keeping its fields as given."""
        return self._append_checked(dict(entry))

    # -- tree navigation ------------------------------------------------------------------------

    def branch(self, entry_id: str) -> None:
        """Move the leaf to `entry_id`; entries are unchanged."""
        with self._lock:
            if entry_id not in self._by_id:
                raise EntryNotFoundError(entry_id)
            self._leaf_id = entry_id

    def reset_leaf(self) -> None:
        """Make the next append a new root."""
        with self._lock:
            self._leaf_id = None

    def branch_with_summary(self, branch_from_id: str | None, summary: str, details: Any = None,
                            from_extension: bool | None = None) -> str:
        """Move the leaf to `branch_from_id` (None: the root) and append a branch_summary there."""
        with self._lock:
            self._raise_persist_error()
            if branch_from_id is not None and branch_from_id not in self._by_id:
                raise EntryNotFoundError(branch_from_id)
            self._leaf_id = branch_from_id
            fields: dict[str, Any] = {"type": "branch_summary", "fromId": branch_from_id or "root",
                                      "summary": summary}
            if details is not None:
                fields["details"] = details
            if from_extension is not None:
                fields["fromExtension"] = from_extension
            return self._append(fields)

    # -- reading --------------------------------------------------------------------------------

    def get_entries(self) -> list[dict[str, Any]]:
        """All entries in insertion order."""
        return list(self._entries)

    def get_entry(self, entry_id: str) -> dict[str, Any] | None:
        return self._by_id.get(entry_id)

    def get_leaf_id(self) -> str | None:
        return self._leaf_id

    def get_leaf_entry(self) -> dict[str, Any] | None:
        return self._by_id.get(self._leaf_id) if self._leaf_id else None

    def get_branch(self, from_id: str | None = None) -> list[dict[str, Any]]:
        """The path from the root to `from_id` (default: the leaf)."""
        return path_to_leaf(self._entries, from_id if from_id is not None else self._leaf_id, self._by_id)

    def get_children(self, entry_id: str) -> list[dict[str, Any]]:
        """Entries whose parent is `entry_id`; of entries sharing one id only the later counts (as the agent)."""
        by_id = self._by_id
        return [e for e in self._entries if e.get("parentId") == entry_id
                and (not isinstance(e.get("id"), str) or by_id.get(e["id"]) is e)]

    def get_label(self, entry_id: str) -> str | None:
        return self._labels.get(entry_id)

    def get_tree(self) -> list[TreeNode]:
        """Roots (entries without a known parent) with their children, siblings oldest first."""
        nodes = {e["id"]: TreeNode(e, label=self._labels.get(e["id"])) for e in self._entries if "id" in e}
        roots: list[TreeNode] = []
        for entry in self._entries:
            node = nodes.get(entry.get("id"))
            if node is None:
                continue
            parent = nodes.get(entry.get("parentId")) if entry.get("parentId") is not None else None
            (parent.children if parent is not None else roots).append(node)
        for node in nodes.values():
            node.children.sort(key=lambda child: child.entry.get("timestamp") or "")
        return roots

    def get_injected_ttsr_rules(self) -> list[str]:
        """Rules injected on the active branch, first occurrence order, without duplicates."""
        rules: list[str] = build_session_context(self._entries, self._leaf_id, self._by_id)["injectedTtsrRules"]
        return rules

    def get_last_model_change_role(self) -> str | None:
        for entry in reversed(self.get_branch()):
            if entry.get("type") == "model_change":
                role = entry.get("role")
                return role if isinstance(role, str) and role else "default"
        return None

    def get_usage_statistics(self) -> dict[str, Any]:
        """Token and cost totals over every assistant message in the session."""
        totals: dict[str, Any] = {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0,
                                  "premiumRequests": 0, "cost": 0}
        for entry in self._entries:
            message = entry.get("message") if entry.get("type") == "message" else None
            if not isinstance(message, dict) or message.get("role") != "assistant":
                continue
            usage = message.get("usage") or {}
            for key in ("input", "output", "cacheRead", "cacheWrite", "premiumRequests"):
                value = usage.get(key)
                if isinstance(value, (int, float)):
                    totals[key] += value
            cost = (usage.get("cost") or {}).get("total") if isinstance(usage.get("cost"), dict) else None
            if isinstance(cost, (int, float)):
                totals["cost"] += cost
        return totals

    def build_session_context(self, leaf_id: str | None | EllipsisType = ...) -> dict[str, Any]:
        """The model's context at the leaf (or at `leaf_id`)."""
        target = self._leaf_id if isinstance(leaf_id, EllipsisType) else leaf_id
        return build_session_context(self._entries, target, self._by_id)

    def get_header(self) -> dict[str, Any]:
        return dict(self._header)

    def get_session_id(self) -> str:
        return str(self._header["id"])

    def get_session_file(self) -> Path | None:
        return self._session_file if self._persist else None

    def get_session_dir(self) -> Path | str:
        return self._session_dir if self._session_dir is not None else ""

    def get_cwd(self) -> str:
        return self._cwd

    def get_session_name(self) -> str | None:
        """The title: a non-empty `title` line wins over the header's title."""
        line_title = self._title_line.get("title") if self._title_line else None
        if isinstance(line_title, str) and line_title:
            return line_title
        title = self._header.get("title")
        return title if isinstance(title, str) else None

    def get_title_source(self) -> str | None:
        return self._header.get("titleSource")

    def is_persisted(self) -> bool:
        return self._persist

    # -- naming ---------------------------------------------------------------------------------

    def set_session_name(self, name: str, source: str = "user") -> bool:
        """Set the title; an automatic title never replaces a user's. False when rejected."""
        with self._lock:
            self._raise_persist_error()
            clean = sanitize_session_name(name)
            if not clean:
                return False
            if source == "auto" and self._header.get("titleSource") == "user":
                return False
            saved = (dict(self._header), self._title_line)
            self._header["title"] = clean
            self._header["titleSource"] = source
            if self._title_line is not None:
                self._title_line = {**self._title_line, "title": clean}
            if self._persist and self._on_disk:
                try:
                    self._write_whole_file()
                except SessionBusyError:
                    self._header, self._title_line = saved
                    raise
            return True

    # -- persistence ----------------------------------------------------------------------------

    def _has_assistant(self) -> bool:
        return any(e.get("type") == "message" and (e.get("message") or {}).get("role") == "assistant"
                   for e in self._entries)

    def _persist_entry(self, entry: dict[str, Any]) -> None:
        if not self._persist or self._session_file is None:
            return
        if not self._on_disk:
            if self._has_assistant():
                self._write_whole_file()
            return
        def append() -> None:
            writer = self._writer_for_append()
            writer.write_line(self._disk_line(entry))
            self._written_state = writer.written_state()

        self._guard(append)

    def _disk_line(self, record: dict[str, Any]) -> bytes:
        prepared = limit_sizes(record)
        if self._blobs is not None:
            prepared = externalize_images(prepared, self._blobs)
        return dumps_line(prepared)

    def _writer_for_append(self) -> SessionStorageWriter:
        # The writer locks each append, follows a file another process replaced, and (going further
        # than the agent) ends a torn last line so the new entry stays readable.
        if self._writer is None:
            assert self._session_file is not None
            self._writer = self._storage.open_writer(self._session_file)
        return self._writer

    def _write_whole_file(self) -> None:
        """Atomically (re)write header and every entry, holding the session's writer lock.

        Entries another process appended to this session since it was loaded are adopted first, so a
        rewrite (rename, move, migration) never drops them.
        """
        if not self._persist or self._session_file is None:
            return
        target = self._session_file

        def write() -> None:
            self._close_writer()
            self._storage.ensure_dir_sync(target.parent)
            with self._storage.exclusive(target):
                self._storage.refuse_if_written_elsewhere(target)
                self._replace_taking_in_late_appends(target)

        self._guard(write)
        self._on_disk = True

    def _replace_taking_in_late_appends(self, target: Path) -> None:
        """Write the whole file over `target`, then add to it what a writer without the lock put into the old
        file between the read and the rename."""

        def replace() -> None:
            self._adopt_entries_appended_elsewhere(target)
            head = (dumps_line(self._title_line) if self._title_line is not None else b"") + dumps_line(self._header)
            data = head + b"".join(self._disk_line(entry) for entry in self._entries)
            self._written_state = self._storage.write_atomic(target, data)

        self._taking_in_late_appends(target, target, replace)

    def _taking_in_late_appends(self, old_file: Path, target: Path, replace: Callable[[], None]) -> None:
        """Run `replace` (which reads `old_file`, then replaces or unlinks it), holding the old file open from
        before; then append to `target` what was written into the old file after it was read (see
        storage.ReplacedFile)."""
        replaced = self._storage.hold_replaced(old_file)
        try:
            replace()
            late = replaced.late_appends() if replaced is not None else None
        finally:
            if replaced is not None:
                replaced.close()
        if late is not None:
            self._append_late_entries(target, late)

    def _append_late_entries(self, target: Path, late: bytes) -> None:
        """Take in the entries of `late` (the bytes of a file just replaced or unlinked) that memory does not
        know, and append them to `target`: appends, like the writer's own, lose nothing it wrote there since."""
        adopted = self._adopt_entries_appended_elsewhere(target, late)
        if not adopted:
            return
        writer = self._storage.open_writer(target)
        try:
            for entry in adopted:
                writer.write_line(self._disk_line(entry))
            writer.fsync()
            self._written_state = writer.written_state()
        finally:
            writer.close()

    def _adopt_entries_appended_elsewhere(self, target: Path, data: bytes | None = None) -> list[dict[str, Any]]:
        """Take into memory the entries of this session's file (same header id) that memory does not know;
        return them (in file order). `data`: the file's bytes, already read (else they are read from `target`).

        Each is placed after the known entry it follows in the file; the leaf does not move. When the file
        is exactly as this manager left it, nobody else wrote to it and nothing is read.
        """
        if data is None:
            if self._written_state is not None and self._written_state.same_file_and_size(
                    self._storage.stat_sync(target)):
                return []
            data = self._storage.read_bytes(target)
            if data is None:
                return []
        records = split_session_records(parse_jsonl(data).values)
        if records is None or records.header.get("id") != self._header.get("id"):
            return []
        after: dict[str | None, list[dict[str, Any]]] = {}
        anchor: str | None = None
        loaded_last = next((e.get("id") for e in reversed(self._entries) if isinstance(e.get("id"), str)), None)
        adopted: set[str] = set()
        for entry in records.entries:
            entry_id = entry.get("id") if isinstance(entry, dict) else None
            if not isinstance(entry_id, str):
                continue
            if entry_id in self._by_id:
                anchor = entry_id
            elif entry_id in self._ids_before_migration:
                # An entry this manager loaded and migrated to a new id, not somebody's append: what follows
                # it in the file follows the entries loaded with it.
                anchor = loaded_last

            elif entry_id not in adopted:
                adopted.add(entry_id)
                after.setdefault(anchor, []).append(project_loaded_entry(entry, self._blobs))
        if not after:
            return []
        merged = list(after.get(None, []))
        for entry in self._entries:
            merged.append(entry)
            merged.extend(after.get(entry.get("id"), []))
        leaf = self._leaf_id
        self._set_entries(merged)
        self._leaf_id = leaf
        return [entry for entries in after.values() for entry in entries]

    def rewrite_entries(self) -> None:
        """Rewrite the whole file from memory (atomic)."""
        with self._lock:
            self._raise_persist_error()
            if self._on_disk:
                self._write_whole_file()

    def ensure_on_disk(self) -> None:
        """Write the session now even without an assistant message (header only when empty)."""
        with self._lock:
            self._raise_persist_error()
            if not self._on_disk:
                self._write_whole_file()

    def flush(self) -> None:
        """Flush and fsync pending appends; raises the kept persistence error, if any."""
        with self._lock:
            self._raise_persist_error()
            if self._writer is not None:
                self._guard(self._writer.fsync)

    def close(self) -> None:
        """Flush and release the file; an unanswered session stays unwritten."""
        with self._lock:
            try:
                self.flush()
            finally:
                self._close_writer()

    def __enter__(self) -> SessionManager:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def _close_writer(self) -> None:
        writer, self._writer = self._writer, None
        if writer is not None:
            try:
                writer.close()
            except OSError as exc:
                self._record_error(exc)

    def _guard(self, action: Callable[[], Any]) -> None:
        try:
            action()
        except OSError as exc:
            self._record_error(exc)
            raise PersistenceError(f"could not write {self._session_file}: {exc}") from exc

    def _record_error(self, exc: BaseException) -> None:
        if self._persist_error is None:
            self._persist_error = exc
            log.error("session persistence failed for %s: %s", self._session_file, exc)

    def _raise_persist_error(self) -> None:
        if self._persist_error is not None:
            raise PersistenceError(f"session {self._session_file} can no longer be written: "
                                   f"{self._persist_error}") from self._persist_error

    def _write_breadcrumb(self) -> None:
        if not self._persist or self._session_file is None or not self._storage.writes_to_disk:
            return
        from sessdex.core.breadcrumbs import write_breadcrumb

        write_breadcrumb(self._runtime.paths, self._cwd, self._session_file, env=self._runtime.environ,
                         tty_path=self._runtime.tty_path())


def _adopt_legacy_directory(sessions_root: Path, directory: Path, cwd: str) -> None:
    """Agent naming: rename the documented `--…--` directory of `cwd` to the home-relative one, if alone."""
    from sessdex.core.paths import documented_project_dir_name

    legacy = sessions_root / documented_project_dir_name(cwd)
    if legacy == directory or not legacy.is_dir() or directory.exists():
        return
    try:
        legacy.rename(directory)
    except OSError as exc:
        log.warning("could not rename %s to %s: %s", legacy, directory, exc)
