"""A session file read in large blocks of whole lines: one read call per few megabytes instead of one per line, with
memory bounded by the block and the longest line a reader may hold (MAX_LINE_BYTES; longer lines are skipped without
being held, as every reader skips them)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import BinaryIO

from sessdex.core.jsonl import MAX_LINE_BYTES

# How much of a file is read at once.
BLOCK_BYTES = 1 << 20


def line_blocks(handle: BinaryIO, block_bytes: int = BLOCK_BYTES) -> Iterator[tuple[int, bytes]]:
    """The file from its current position as (offset, block) pairs: each block is whole lines (the last block of the
    file may end without a newline), and a line over MAX_LINE_BYTES is left out."""
    offset = handle.tell()  # where `rest` starts in the file
    # No bigger than the file (and a little more, for what is appended meanwhile): each read allocates its whole
    # size first, which for the many small sessions of a scan would cost more than reading them.
    block_bytes = max(1, min(block_bytes, os.fstat(handle.fileno()).st_size - offset + 4096))
    rest = b""
    skipping = False  # inside a line over MAX_LINE_BYTES: dropped up to its newline
    while chunk := handle.read(block_bytes):
        if skipping:
            newline = chunk.find(b"\n")
            if newline < 0:
                offset += len(chunk)
                continue
            offset += newline + 1
            chunk, skipping = chunk[newline + 1:], False
        data = rest + chunk if rest else chunk
        cut = data.rfind(b"\n") + 1
        if cut:
            yield offset, data[:cut] if cut < len(data) else data
            offset += cut
        rest = data[cut:]
        if len(rest) > MAX_LINE_BYTES:
            offset += len(rest)
            rest, skipping = b"", True
    if rest and not skipping:
        yield offset, rest


def lines_of(block: bytes) -> Iterator[tuple[int, int]]:
    """(start, end) of each line of `block` (`end` past its newline), lines over MAX_LINE_BYTES left out."""
    position, size = 0, len(block)
    while position < size:
        newline = block.find(b"\n", position)
        end = size if newline < 0 else newline + 1
        if (newline if newline >= 0 else size) - position <= MAX_LINE_BYTES:
            yield position, end
        position = end
