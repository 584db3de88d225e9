"""The corpus generator writes what the spec says a real agent dir holds, deterministically, with every edge case."""

from __future__ import annotations

import hashlib
import os
import re
import shutil
from collections import Counter
from pathlib import Path
from typing import Any

import gen_corpus
import orjson
import pytest
from gen_corpus import CorpusManifest, SessionFile

NOW = 1_771_236_000.0  # 2026-02-16T10:00:00Z
HOME = Path("/home/dev")
TARGET = 2_000_000
ISO_MS = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")
HEX8 = re.compile(r"^[0-9a-f]{8}$")
HEX16 = re.compile(r"^[0-9a-f]{16}$")
BLOB_REF = re.compile(rb"blob:sha256:([0-9a-f]{64})")


def _generate(agent_dir: Path, seed: int = 5, **overrides: Any) -> CorpusManifest:
    options: dict[str, Any] = {"sessions": 40, "projects": 8, "total_bytes": TARGET, "seed": seed, "home": HOME,
                               "now": NOW}
    options.update(overrides)
    return gen_corpus.generate_corpus(agent_dir, **options)


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> CorpusManifest:
    return _generate(tmp_path_factory.mktemp("corpus") / "agent")


def _records(session: SessionFile) -> list[dict[str, Any]]:
    return [orjson.loads(line) for line in session.path.read_bytes().splitlines()]


def _split_header(records: list[dict[str, Any]]) -> tuple[dict[str, Any] | None, dict[str, Any], list[dict[str, Any]]]:
    """(title line or None, header, entries)."""
    if records[0]["type"] == "title":
        return records[0], records[1], records[2:]
    return None, records[0], records[1:]


def _tree(tmp: Path) -> dict[str, tuple[bytes, int]]:
    return {str(p.relative_to(tmp)): (p.read_bytes(), p.stat().st_mtime_ns) for p in sorted(tmp.rglob("*"))
            if p.is_file()}


def test_same_arguments_give_identical_files_and_mtimes(tmp_path: Path) -> None:
    small = {"sessions": 25, "total_bytes": 400_000}
    agent = tmp_path / "agent"  # the same path each time: parentSession headers hold absolute paths
    _generate(agent, seed=11, **small)
    first = _tree(agent)
    shutil.rmtree(agent)
    _generate(agent, seed=11, **small)
    assert _tree(agent) == first
    shutil.rmtree(agent)
    _generate(agent, seed=12, **small)
    assert _tree(agent) != first


def test_file_count_layout_and_total_size(corpus: CorpusManifest) -> None:
    on_disk = sorted(corpus.sessions_root.rglob("*.jsonl"))
    assert on_disk == sorted(s.path for s in corpus.sessions)
    assert len(on_disk) == 40
    assert 0.9 * TARGET <= corpus.session_bytes <= 1.1 * TARGET
    assert corpus.session_bytes == sum(p.stat().st_size for p in on_disk)
    sizes = sorted(s.size for s in corpus.of_kind("normal"))
    assert sizes[-1] > 5 * sizes[len(sizes) // 2]  # heavy tail
    for session in corpus.sessions:
        assert session.path.parent == corpus.sessions_root / session.project_dir
        assert session.path.name == gen_corpus.session_file_name(session.created_ms, session.session_id)
        assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d-\d\d-\d\d-\d{3}Z_[0-9a-f]{16}\.jsonl", session.path.name)


def test_session_ids_are_time_ordered_snowflakes(corpus: CorpusManifest) -> None:
    by_time = sorted(corpus.sessions, key=lambda s: (s.created_ms, s.session_id))
    assert [s.session_id for s in by_time] == sorted(s.session_id for s in corpus.sessions)
    for session in corpus.sessions:
        assert HEX16.match(session.session_id)
        assert (int(session.session_id, 16) >> 22) + gen_corpus.SNOWFLAKE_EPOCH_MS == session.created_ms


def test_mtimes_lie_between_creation_and_now_over_months(corpus: CorpusManifest) -> None:
    for session in corpus.sessions:
        mtime_ns = session.path.stat().st_mtime_ns
        assert mtime_ns == session.mtime_ns
        assert session.created_ms * 1_000_000 <= mtime_ns <= int(NOW * 1e9)
    span_days = (NOW * 1000 - min(s.created_ms for s in corpus.sessions)) / 86_400_000
    assert 60 < span_days <= 183


def test_every_line_of_undamaged_files_is_a_valid_entry(corpus: CorpusManifest) -> None:
    for session in corpus.sessions:
        if session.damaged:
            continue
        raw = session.path.read_bytes()
        assert raw.endswith(b"\n")
        title_line, header, entries = _split_header(_records(session))
        assert header["type"] == "session" and header["id"] == session.session_id
        assert header.get("version") == session.version and header["cwd"] == session.cwd
        assert header["timestamp"] == gen_corpus.iso_ms(session.created_ms)
        assert header.get("title") == session.header_title
        assert header.get("parentSession") == session.parent_session
        if title_line is not None:
            assert len(raw.split(b"\n", 1)[0]) + 1 == gen_corpus.TITLE_LINE_BYTES
            assert title_line["title"] == session.title
        assert len(entries) == session.entry_count
        assert sum(e["type"] == "message" for e in entries) == session.message_count
        for entry in entries:
            assert ISO_MS.match(entry["timestamp"])
        if session.version is None:  # v1: no ids at all
            assert all("id" not in e and "parentId" not in e for e in entries)
            continue
        seen: set[str] = set()
        branches = 0
        previous = None
        for entry in entries:
            assert HEX8.match(entry["id"]) and entry["id"] not in seen
            assert entry["parentId"] is None or entry["parentId"] in seen
            branches += entry["parentId"] != previous
            seen.add(entry["id"])
            previous = entry["id"]
        assert branches == session.branch_count
        assert session.leaf_id == (entries[-1]["id"] if entries else None)


def test_references_inside_entries_point_at_earlier_entries(corpus: CorpusManifest) -> None:
    checked = Counter()
    for session in corpus.sessions:
        if session.damaged or session.version is None:
            continue
        seen: set[str] = set()
        for entry in _records(session)[1:]:
            if entry["type"] == "compaction":
                assert entry["firstKeptEntryId"] in seen
                assert isinstance(entry["tokensBefore"], int) and entry["shortSummary"]
            elif entry["type"] == "branch_summary":
                assert entry["fromId"] == "root" and entry["parentId"] is None or entry["fromId"] == entry["parentId"]
                assert entry["fromId"] == "root" or entry["fromId"] in seen
            elif entry["type"] == "label":
                assert entry["targetId"] in seen
            else:
                seen.add(entry.get("id", ""))
                continue
            checked[entry["type"]] += 1
            seen.add(entry["id"])
    assert set(checked) == {"compaction", "branch_summary", "label"}


def test_every_entry_type_role_and_block_kind_appears(corpus: CorpusManifest) -> None:
    types, roles, blocks = Counter(), Counter(), Counter()
    for session in corpus.sessions:
        if session.damaged:
            continue
        for record in _records(session):
            types[record["type"]] += 1
            message = record.get("message")
            if message:
                roles[message["role"]] += 1
                if isinstance(message["content"], list):
                    blocks.update(block["type"] for block in message["content"])
                if message["role"] == "assistant":
                    assert message["usage"]["cost"]["total"] >= 0 and message["provider"] and message["model"]
    expected = {"session", "title", "message", "model_change", "thinking_level_change", "compaction",
                "branch_summary", "custom", "custom_message", "label", "ttsr_injection", "session_init",
                "mode_change"}
    assert expected <= set(types)
    assert set(types) & set(gen_corpus.UNKNOWN_ENTRY_TYPES)
    assert {"user", "assistant", "toolResult", "hookMessage"} <= set(roles)
    assert {"text", "thinking", "toolCall", "image"} <= set(blocks)


def test_blob_refs_resolve_to_blobs_with_matching_sha256(corpus: CorpusManifest) -> None:
    referenced: set[str] = set()
    for session in corpus.sessions:
        in_file = {m.decode() for m in BLOB_REF.findall(session.path.read_bytes())}
        assert in_file == set(session.blob_refs)
        referenced |= in_file
    assert referenced
    assert sorted(p.name for p in corpus.blobs) == sorted(referenced)
    for blob in corpus.blobs:
        assert blob.parent == corpus.agent_dir / "blobs"
        raw = blob.read_bytes()
        assert hashlib.sha256(raw).hexdigest() == blob.name
        assert raw.startswith(b"\x89PNG")  # raw bytes, not base64


def test_small_inline_images_stay_below_the_blob_threshold(corpus: CorpusManifest) -> None:
    inline = []
    for session in corpus.sessions:
        if session.damaged or not session.inline_images:
            continue
        for record in _records(session):
            content = (record.get("message") or {}).get("content")
            if isinstance(content, list):
                inline += [b["data"] for b in content if b["type"] == "image" and not b["data"].startswith("blob:")]
    assert inline and all(len(data) < 1024 for data in inline)


def test_damaged_and_edge_files_are_what_the_manifest_says(corpus: CorpusManifest) -> None:
    kinds = {s.kind: s for s in corpus.sessions if s.kind in gen_corpus.SPECIAL_KINDS}
    assert set(kinds) == set(gen_corpus.SPECIAL_KINDS)
    assert kinds["empty"].path.read_bytes() == b""

    lines = kinds["no_header"].path.read_bytes().splitlines()
    with pytest.raises(orjson.JSONDecodeError):
        orjson.loads(lines[0])
    assert all(orjson.loads(line)["type"] != "session" for line in lines[1:])

    header = orjson.loads(kinds["invalid_header"].path.read_bytes().splitlines()[0])
    assert header["type"] == "session" and not isinstance(header["id"], str)

    torn = kinds["torn_tail"].path.read_bytes()
    assert not torn.endswith(b"\n")
    with pytest.raises(orjson.JSONDecodeError):
        orjson.loads(torn.rsplit(b"\n", 1)[1])
    assert sum(1 for line in torn.splitlines()[:-1]) == kinds["torn_tail"].entry_count + 1

    garbage = kinds["garbage_middle"]
    parsed = []
    bad = 0
    for line in garbage.path.read_bytes().splitlines():
        try:
            parsed.append(orjson.loads(line))
        except orjson.JSONDecodeError:
            bad += 1
    assert bad >= 3 and parsed[0]["type"] == "session" and len(parsed) == garbage.entry_count + 1
    assert garbage.path.read_bytes().endswith(b"\n")

    assert len(_records(kinds["header_only"])) == 1 and kinds["header_only"].zero_message
    metadata = _records(kinds["metadata_only"])
    assert len(metadata) > 1 and all(r["type"] != "message" for r in metadata)

    v1 = _records(kinds["legacy_v1"])
    assert "version" not in v1[0]
    compaction = next(r for r in v1 if r["type"] == "compaction")
    assert 1 <= compaction["firstKeptEntryIndex"] < v1.index(compaction)
    assert "firstKeptEntryId" not in compaction

    v2 = _records(kinds["legacy_v2_hook"])
    assert v2[0]["version"] == 2
    assert any(r.get("message", {}).get("role") == "hookMessage" for r in v2)
    assert {s.kind for s in corpus.sessions if s.damaged} == set(gen_corpus.DAMAGE_KINDS)


def test_both_project_dir_naming_schemes_and_nested_dirs(corpus: CorpusManifest) -> None:
    namings = Counter(s.naming for s in corpus.sessions)
    assert namings.keys() == {"documented", "home_relative", "nested"}
    for session in corpus.sessions:
        if session.naming == "documented":
            assert session.project_dir == gen_corpus.documented_dir_name(session.cwd)
        elif session.naming == "home_relative":
            assert session.project_dir == gen_corpus.agent_dir_name(session.cwd, str(HOME))
    both = [p for p in corpus.projects if p.scheme == "both"]
    assert both
    dirs_of = {p.cwd: {s.project_dir for s in corpus.sessions if s.cwd == p.cwd and s.naming != "nested"}
               for p in both}
    assert any(dirs == {p.documented_dir, p.agent_dir} for p, dirs in zip(both, dirs_of.values(), strict=True))
    assert any(p.cwd == str(HOME) for p in corpus.projects)


def test_dir_names_follow_the_spec_examples() -> None:
    home = "/r/home"
    assert gen_corpus.documented_dir_name("/work/pi") == "--work-pi--"
    assert gen_corpus.documented_dir_name("C:\\Users\\x") == "--C--Users-x--"
    assert gen_corpus.documented_dir_name("/") == "----"
    assert gen_corpus.agent_dir_name(home, home) == "-"
    assert gen_corpus.agent_dir_name(f"{home}/a/b.c", home) == "-a-b.c"
    assert gen_corpus.agent_dir_name(f"{home}/colon:name", home) == "-colon-name"
    assert gen_corpus.agent_dir_name("/tmp", home) == "-tmp"
    assert gen_corpus.agent_dir_name("/tmp/x/y", home) == "-tmp-x-y"
    assert gen_corpus.agent_dir_name("/r/elsewhere/deep", home) == "--r-elsewhere-deep--"
    assert gen_corpus.session_file_name(1_771_237_230_000, "1f9d2a6b9c0d1234") == (
        "2026-02-16T10-20-30-000Z_1f9d2a6b9c0d1234.jsonl")


def test_huge_session_is_streamed_to_about_its_size(tmp_path: Path) -> None:
    manifest = _generate(tmp_path / "agent", sessions=5, projects=2, total_bytes=1_500_000, huge_bytes=1_200_000)
    (huge,) = manifest.of_kind("huge")
    assert 1_200_000 <= huge.size < 1_200_000 + 20_000
    records = _records(huge)
    assert sum(r.get("message", {}).get("role") == "toolResult" for r in records) >= 2
    assert 0.9 * 1_500_000 <= manifest.session_bytes <= 1.1 * 1_500_000


def test_refuses_to_overwrite_and_cli_prints_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["--agent-dir", str(tmp_path / "agent"), "--sessions", "3", "--projects", "2", "--total-size", "30KB",
            "--seed", "1", "--now", str(NOW), "--manifest", str(tmp_path / "m.json")]
    assert gen_corpus.main(argv) == 0
    out = capsys.readouterr().out.strip().splitlines()
    assert len(out) == 1 and out[0].startswith("files=3 projects=2 ")
    before = _tree(tmp_path / "agent")
    assert orjson.loads((tmp_path / "m.json").read_bytes())["sessions"][0]["path"].startswith(str(tmp_path))
    assert gen_corpus.main(argv) == 2
    assert "exists" in capsys.readouterr().err
    assert _tree(tmp_path / "agent") == before


@pytest.mark.parametrize(("text", "expected"), [("1GB", 10**9), ("300MB", 300 * 10**6), ("2MiB", 2 * 2**20),
                                                ("4096", 4096), ("1.5kb", 1500)])
def test_parse_size(text: str, expected: int) -> None:
    assert gen_corpus.parse_size(text) == expected


def test_parse_size_rejects_nonsense() -> None:
    with pytest.raises(ValueError, match="not a size"):
        gen_corpus.parse_size("lots")


def test_default_home_is_the_parent_of_dot_xcsh(tmp_path: Path) -> None:
    agent = tmp_path / "home" / ".xcsh" / "agent"
    manifest = gen_corpus.generate_corpus(agent, sessions=4, projects=3, total_bytes=20_000, now=NOW)
    assert manifest.home == tmp_path / "home"
    assert os.path.isdir(agent / "sessions")


def test_forks_copy_their_parents_entries_verbatim_and_go_on(tmp_path: Path) -> None:
    corpus = _generate(tmp_path / "agent", seed=3, sessions=30, total_bytes=600_000, fork_rate=0.5)
    by_id = {s.session_id: s for s in corpus.sessions}
    by_path = {str(s.path): s for s in corpus.sessions}
    forks = [s for s in corpus.sessions if s.parent_session]
    assert any(s.parent_session in by_id for s in forks) and any(s.parent_session in by_path for s in forks)
    for fork in forks:
        parent = by_id.get(fork.parent_session) or by_path[fork.parent_session]
        parent_lines = [line for line in parent.path.read_bytes().splitlines() if b'"type":"session"' not in line
                        and b'"type":"title"' not in line]
        fork_lines = fork.path.read_bytes().splitlines()
        start = 2 if fork.has_title_line else 1
        copied = fork_lines[start:start + len(parent_lines)]
        prefix = [a for a, b in zip(copied, parent_lines) if a == b]
        if fork.parent_session in by_id:  # a fork copies every entry
            assert prefix == parent_lines
        else:  # a branched session copies a prefix of them
            assert 1 <= len(prefix) <= len(parent_lines)
        assert len(fork_lines) > start + len(prefix)  # and goes on with entries of its own
    # The manifest still describes every file, forks included (counts, ids, leaf, branches, blobs).
    test_every_line_of_undamaged_files_is_a_valid_entry(corpus)
    test_references_inside_entries_point_at_earlier_entries(corpus)
    test_blob_refs_resolve_to_blobs_with_matching_sha256(corpus)
