"""Bounded memory for any line: a line longer than MAX_LINE_BYTES is skipped and counted as a bad line."""

from __future__ import annotations

import os
import resource
from pathlib import Path

import orjson

from sessdex.catalog.index.file_reader import read_fold
from sessdex.core.jsonl import MAX_LINE_BYTES, parse_jsonl
from sessdex.core.summary import SessionSummary

HEADER = {"type": "session", "version": 3, "id": "capped", "timestamp": "2025-01-01T00:00:00.000Z", "cwd": "/p"}


def message(entry_id: str, text: str) -> dict:
    return {"type": "message", "id": entry_id, "parentId": None, "timestamp": "2025-01-01T00:00:01.000Z",
            "message": {"role": "user", "content": text, "timestamp": 1}}


def line(value: dict) -> bytes:
    return orjson.dumps(value) + b"\n"


def test_a_line_over_the_cap_is_skipped_and_counted_by_the_whole_file_parser() -> None:
    long_line = line(message("long0001", "x" * (MAX_LINE_BYTES + 10)))
    parsed = parse_jsonl(line(HEADER) + line(message("m0000001", "before")) + long_line
                         + line(message("m0000002", "after")))
    assert [value.get("id") for value in parsed.values] == ["capped", "m0000001", "m0000002"]
    assert parsed.bad_records == 1


def test_the_index_reader_skips_a_sparse_gigabyte_line_in_bounded_memory(tmp_path: Path) -> None:
    """A file whose middle is 1 GiB of zeros without a newline (sparse: no disk used) is read in bounded memory;
    the lines around it count and the endless line is one bad line."""
    path = tmp_path / "sparse.jsonl"
    with open(path, "wb") as handle:
        handle.write(line(HEADER) + line(message("m0000001", "before")))
        handle.seek(1 << 30, 1)
        handle.write(b"\n" + line(message("m0000002", "after")))
    size = path.stat().st_size
    peak_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    fold = SessionSummary()
    with open(path, "rb") as handle:
        result = read_fold(handle, 0, size, fold, 0, lambda texts, pending: None)
    grown_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - peak_before
    assert result.committed_offset == size
    assert result.committed_bad == 1
    assert fold.message_count == 2
    assert grown_kib < 300 * 1024, f"reading grew the peak memory by {grown_kib} KiB"


def streamed(data: bytes, tmp_path: Path, chunk_bytes: int) -> tuple[list, int]:
    from sessdex.core.jsonl import stream_jsonl

    path = tmp_path / f"streamed-{chunk_bytes}.jsonl"
    path.write_bytes(data)
    values, bad = [], 0
    fd = os.open(path, os.O_RDONLY)
    try:
        for parsed in stream_jsonl(fd, chunk_bytes=chunk_bytes):
            values += parsed.values
            bad += parsed.bad_records
    finally:
        os.close(fd)
    return values, bad


def test_the_streaming_read_finds_what_the_whole_file_parser_finds_whatever_the_chunk_size(tmp_path: Path) -> None:
    """Values and bad lines by chunks equal those of the whole bytes: a value spanning lines across a chunk's end,
    damaged lines, a BOM at the start and one inside, an over-long line, a torn last line."""
    pretty = b'{"type": "message",\n "id": "spans0001",\n "message": {"role": "user", "content": "two lines"}}\n'
    small = (b"\xef\xbb\xbf" + line(HEADER) + line(message("m0000001", "before")) + pretty + b"{not json\n"
             + b"\xef\xbb\xbf" + line(message("m0000002", "after a bom")) + b"\n\n")
    end = line(message("m0000003", "last whole")) + b'{"type": "message", "id": "torn'
    for data, chunk_sizes in ((small + end, (7, 64, 1 << 20)),
                              (small + line(message("long0001", "y" * (MAX_LINE_BYTES + 5))) + end,
                               (1 << 20, 64 << 20))):
        whole = parse_jsonl(data)
        for chunk_bytes in chunk_sizes:
            assert streamed(data, tmp_path, chunk_bytes) == (whole.values, whole.bad_records), chunk_bytes


def test_the_one_chunked_reader_gives_whole_lines_and_the_places_of_over_long_lines(tmp_path: Path) -> None:
    """Blocks of whole lines at their offsets whatever the chunk size; an over-long line is only a place (ended by
    its newline, or running to the end); a torn last line comes last as it is."""
    from sessdex.core.jsonl import SKIPPED_LINE, SKIPPED_TAIL, line_blocks

    first, after = line(HEADER), line(message("m0000002", "after"))
    over = b"z" * (MAX_LINE_BYTES + (2 << 20)) + b"\n"  # past the cap by more than a chunk
    data = first + over + after + b'{"torn'
    for chunk_bytes in (1 << 16, 1 << 20):
        path = tmp_path / "blocks.jsonl"
        path.write_bytes(data)
        with open(path, "rb") as handle:
            blocks = list(line_blocks(handle.read, chunk_bytes=chunk_bytes))
        skipped = [block for block in blocks if block.skipped]
        assert [(block.offset, block.skipped) for block in skipped] == [(len(first) + len(over), SKIPPED_LINE)]
        text = b"".join(block.data for block in blocks)
        assert text == first + after + b'{"torn'
        for block in blocks:
            if block.data:
                assert data[block.offset:block.offset + len(block.data)] == block.data
        assert blocks[-1].data.endswith(b'{"torn')
    with open(path, "wb") as handle:
        handle.write(first + b"y" * (MAX_LINE_BYTES + 3))
    with open(path, "rb") as handle:
        blocks = list(line_blocks(handle.read, chunk_bytes=1 << 20))
    assert blocks[-1] == (len(first) + MAX_LINE_BYTES + 3, b"", SKIPPED_TAIL)
    with open(path, "rb") as handle:
        assert b"".join(block.data for block in line_blocks(handle.read, limit=10, chunk_bytes=3)) == first[:10]
