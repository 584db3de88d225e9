"""A session file read in large blocks of whole lines: one read call per megabyte instead of one per line, with
memory bounded by the block and the longest line a reader may hold (MAX_LINE_BYTES; longer lines are skipped without
being held, as every reader skips them). The reading itself is the core's one chunked JSONL reader."""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import BinaryIO

from sessdex.core.jsonl import MAX_LINE_BYTES
from sessdex.core.jsonl import line_blocks as read_line_blocks

# How much of a file is read at once.
BLOCK_BYTES = 1 << 20


def line_blocks(handle: BinaryIO, block_bytes: int = BLOCK_BYTES) -> Iterator[tuple[int, bytes]]:
    """The file from its current position as (offset, block) pairs, read by the one chunked JSONL reader
    (sessdex.core.jsonl.line_blocks): each block is whole lines (the last block of the file may end without a
    newline), and a line over MAX_LINE_BYTES is left out."""
    offset = handle.tell()
    # No bigger than the file (and a little more, for what is appended meanwhile): each read allocates its whole
    # size first, which for the many small sessions of a scan would cost more than reading them.
    block_bytes = max(1, min(block_bytes, os.fstat(handle.fileno()).st_size - offset + 4096))
    for block in read_line_blocks(handle.read, offset, chunk_bytes=block_bytes):
        if not block.skipped:
            yield block.offset, block.data


def lines_of(block: bytes) -> Iterator[tuple[int, int]]:
    """(start, end) of each line of `block` (`end` past its newline), lines over MAX_LINE_BYTES left out."""
    position, size = 0, len(block)
    while position < size:
        newline = block.find(b"\n", position)
        end = size if newline < 0 else newline + 1
        if (newline if newline >= 0 else size) - position <= MAX_LINE_BYTES:
            yield position, end
        position = end
