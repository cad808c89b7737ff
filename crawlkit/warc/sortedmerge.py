"""New sorted lines merged into a large sorted file, at the cost of copying the file.

A crawl's collection index (``index.cdxj``) is the merge of every WARC file's
sorted index. Merging them all again line by line at the end of every run costs
~4 s per million captures here (``heapq.merge`` is Python code, ~4 µs a line): a
cron-driven crawl that has gathered ten million captures would spend most of a
minute past ``--for`` rebuilding an index that changed by one run's captures.

:func:`merge_lines` writes the old file with the new lines inserted, reading the old
file in blocks of whole lines: a block no new line falls into is written as it is
read, and a block some do is split into lines (``bytes.splitlines``, in C) and each
new line placed by ``bisect`` (in C). So an old line is never handled one by one in
Python, and the cost is the copy plus a few microseconds a new line.

Lines compare as bytes with their newline, which orders UTF-8 as its characters
and orders as ``heapq.merge`` of the same lines read as text does; lines that
compare equal are equal, so the result is the same bytes as a merge of all the
lines from scratch.
"""

from __future__ import annotations

import bisect
import itertools
from collections.abc import Iterable, Iterator
from typing import Protocol

__all__ = ["BLOCK", "merge_lines"]

#: Bytes of the old file read at once.
BLOCK = 1 << 20
#: New lines written at once past the old file's end (the whole of a merge from scratch).
TAIL_BATCH = 4096


class Source(Protocol):
    def read(self, size: int, /) -> bytes: ...


class Sink(Protocol):
    def write(self, data: bytes, /) -> object: ...


def _terminated(lines: Iterable[bytes]) -> Iterator[bytes]:
    """``lines``, each ending in a newline (a file's last line may lack one)."""
    for line in lines:
        yield line if line.endswith(b"\n") else line + b"\n"


def merge_lines(old: Source, new: Iterable[bytes], out: Sink, *, block: int = BLOCK) -> int:
    """Write the lines of ``old`` (sorted) and ``new`` (sorted) to ``out`` in order;
    returns the number of lines written. An old line comes before an equal new one."""
    incoming = _terminated(new)
    pending = next(incoming, None)
    count = 0
    carry = b""  # the start of a line the last block cut
    while True:
        chunk = old.read(block)
        if chunk:
            data = carry + chunk
            cut = data.rfind(b"\n") + 1
            if cut == 0:
                carry = data
                continue
            body, carry = data[:cut], data[cut:]
        elif carry:
            body, carry = carry + b"\n", b""
        else:
            break
        last = body[body.rfind(b"\n", 0, len(body) - 1) + 1 :]
        if pending is None or pending >= last:
            out.write(body)  # no new line falls before this block's last
            count += body.count(b"\n")
            continue
        lines = body.splitlines(keepends=True)
        pieces: list[bytes] = []
        at = 0
        while pending is not None and pending < last:
            i = bisect.bisect_right(lines, pending, at)
            pieces += lines[at:i]
            pieces.append(pending)
            at = i
            pending = next(incoming, None)
        pieces += lines[at:]
        out.write(b"".join(pieces))
        count += len(pieces)
    while pending is not None:  # after the old file's last line, in batches
        batch = [pending, *itertools.islice(incoming, TAIL_BATCH - 1)]
        out.write(b"".join(batch))
        count += len(batch)
        pending = next(incoming, None)
    return count
