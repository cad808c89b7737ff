"""On-disk FIFO queues made of immutable zstd NDJSON segment files.

A queue is an ordered list of segments plus a read offset into the first one. The
queue itself never holds its records in memory: only the segment a ``take`` left
partly read is kept decompressed (one segment a queue at most), so the next ``take``
from it does not decompress it again.

Contract:

* A segment is written once (temporary name, fsync, rename) and never modified;
  it is named ``seg-<id>.ndjson.zst`` and holds one JSON object a line. Segments are
  generation files of the frontier's :class:`~crawlkit.durable.DurableDir`.
* Every change to a queue (records taken from the head, segments pushed at either
  end) changes only the in-memory :class:`SegmentQueue`; it becomes durable when the
  owner commits a manifest holding the queue's :meth:`SegmentQueue.to_json`. Until
  then the old manifest still names the old segments and offset, so a crash loses
  nothing (docs/design.md invariant 5): new segment files not named by any manifest are
  leftovers that the owner deletes on the next open, and segments emptied by a take
  are retired, deleted only after the commit. A commit that fails without a crash (a
  full disk) deletes the segments written since the last commit at once
  (:meth:`SegmentStore.discard_uncommitted`), so the space they hold is given back.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

import zstandard

from crawlkit.durable import DurableDir
from crawlkit.errors import StateError

__all__ = ["SEGMENT_LINES", "SEGMENT_NAME", "SegmentQueue", "SegmentStore"]

#: Records per segment: 65,536 URL records are ~15 MB uncompressed, ~2 MB on disk.
SEGMENT_LINES = 65536
#: A tail segment smaller than this is merged with new records instead of being left
#: as one more small file (every ``add`` of a few links would otherwise make one).
SMALL_SEGMENT = 4096

SEGMENT_NAME = re.compile(r"^seg-(\d+)\.ndjson\.zst$")


class SegmentStore:
    """The segment files of one frontier: allocates ids, reads and writes segments.

    ``directory`` is the frontier's :class:`DurableDir` (or a plain path, which gets
    one of its own): the commit that names new segments, the deletion of retired ones
    and the clean-up after a crash are the durable directory's.
    """

    def __init__(self, directory: DurableDir | Path, next_id: int = 1, *, level: int = 1):
        if not isinstance(directory, DurableDir):
            directory = DurableDir(directory, owns=SEGMENT_NAME, what="frontier")
        self.durable = directory
        self.directory = directory.path
        self.next_id = next_id
        self._cctx = zstandard.ZstdCompressor(level=level, write_checksum=True)
        self._dctx = zstandard.ZstdDecompressor()

    @staticmethod
    def name(seg_id: int) -> str:
        return f"seg-{seg_id:012d}.ndjson.zst"

    def path(self, seg_id: int) -> Path:
        return self.directory / self.name(seg_id)

    def write(self, lines: list[bytes]) -> int:
        """Write ``lines`` (each ending in a newline) as a new segment; return its id.

        The file is fsynced and renamed before this returns; the commit that names it
        makes the rename durable first.
        """
        return self.write_raw(b"".join(lines))

    def write_raw(self, raw: bytes) -> int:
        """Like :meth:`write`, for lines already joined into one buffer."""
        seg_id = self.next_id
        self.next_id += 1
        self.durable.write(self.name(seg_id), self._cctx.compress(raw))
        return seg_id

    def read(self, seg_id: int) -> list[bytes]:
        """The lines of a segment, each with its newline."""
        return self.read_raw(seg_id).splitlines(keepends=True)

    def read_raw(self, seg_id: int) -> bytes:
        """The decompressed contents of a segment."""
        try:
            data = self.path(seg_id).read_bytes()
        except FileNotFoundError as exc:
            raise StateError(f"frontier segment {self.path(seg_id)} is missing: {exc}") from exc
        # any other OSError (EMFILE, EIO, EACCES) is passed on and said as what it is
        try:
            raw = self._dctx.decompressobj().decompress(data)
        except zstandard.ZstdError as exc:
            raise StateError(f"frontier segment {self.path(seg_id)} is damaged: {exc}") from exc
        return raw

    def discard_later(self, seg_id: int) -> None:
        """Delete this segment after the next commit (it is still named by the old one)."""
        self.durable.retire(self.name(seg_id))

    def discard_uncommitted(self) -> None:
        """After a failed commit: delete the segments (and other files) written since the
        last commit (see :meth:`DurableDir.abort`). The in-memory queues that name them
        must not be committed afterwards (reopen the frontier instead)."""
        self.durable.abort()


class SegmentQueue:
    """One FIFO queue: ``segs`` is a list of ``[segment id, line count, next line]``,
    oldest first; lines before ``next line`` have been taken already.

    Putting lines back at the head writes only those lines, as a new first segment:
    the partly read segment behind them keeps its own read position (and stays
    decompressed: a segment never changes, so its lines are good for as long as
    it is in the queue).
    """

    def __init__(self, store: SegmentStore, segs: list[list[int]] | None = None):
        self.store = store
        self.segs: list[list[int]] = [[s[0], s[1], s[2] if len(s) > 2 else 0] for s in segs or []]
        # (segment id, its lines): the segment a take left partly read. The frontier's
        # next puts the candidates it did not hand out back at the head, as a small
        # segment of their own; the next take reads that one whole, and the segment
        # behind it is not decompressed again (it was, once a refill, before).
        self._head: tuple[int, list[bytes]] | None = None

    def __len__(self) -> int:
        return sum(count - start for _, count, start in self.segs)

    def to_json(self) -> dict[str, Any]:
        return {"segs": self.segs}

    @classmethod
    def from_json(cls, store: SegmentStore, value: dict[str, Any]) -> SegmentQueue:
        return cls(store, value.get("segs", []))

    def segment_ids(self) -> Iterable[int]:
        return (entry[0] for entry in self.segs)

    def _lines(self, seg_id: int, count: int) -> list[bytes]:
        lines = self.store.read(seg_id)
        if len(lines) != count:
            raise StateError(
                f"frontier segment {self.store.path(seg_id)} has {len(lines)} lines, "
                f"the manifest says {count}"
            )
        return lines

    def lines(self) -> Iterator[bytes]:
        """Every queued line, head first, the queue left as it is."""
        for seg_id, count, start in self.segs:
            head = self._head
            lines = head[1] if head is not None and head[0] == seg_id else None
            if lines is None:
                lines = self._lines(seg_id, count)
            yield from lines[start:]

    def take(self, n: int) -> list[bytes]:
        """Remove and return up to ``n`` lines from the head."""
        out: list[bytes] = []
        while len(out) < n and self.segs:
            entry = self.segs[0]
            seg_id, count, start = entry
            head = self._head
            kept = head is not None and head[0] == seg_id
            lines = head[1] if head is not None and kept else self._lines(seg_id, count)
            end = min(count, start + n - len(out))
            out.extend(lines[start:end])
            entry[2] = end
            if end < count:
                self._head = (seg_id, lines)  # read on from here next time
                continue
            # Read to its end: gone. A segment read whole in this call (one put back
            # at the head) leaves the kept one, behind it, kept.
            self.segs.pop(0)
            self.store.discard_later(seg_id)
            if kept:
                self._head = None
        return out

    def take_all(self) -> list[bytes]:
        return self.take(len(self))

    def push_front(self, lines: list[bytes]) -> None:
        """Put lines back at the head, in their order (ahead of everything queued)."""
        if not lines:
            return
        chunks = [lines[i : i + SEGMENT_LINES] for i in range(0, len(lines), SEGMENT_LINES)]
        for chunk in reversed(chunks):
            self.segs.insert(0, [self.store.write(chunk), len(chunk), 0])

    def _pop_small_tail(self, incoming: int) -> list[bytes]:
        """Remove the small tail segments worth merging with ``incoming`` new lines and
        return their unread lines, oldest first (empty if none is).

        A small segment is merged while it holds at most twice what it would be merged
        with (the new lines and the segments merged so far), as a binary counter carries:
        a line is rewritten a few times on its way into a segment of ``SMALL_SEGMENT``
        lines, not once per push (every push rewrote the whole small tail: with pushes of
        100 lines, each line ~20 times; a third of the ``next`` thread's time in a crawl
        went to reading, joining, compressing and writing it again). Each small segment left
        in the tail holds more than twice the next, so there are at most ~12 of them.
        """
        merged: list[list[bytes]] = []
        size = incoming
        while self.segs:
            seg_id, count, start = self.segs[-1]
            unread = count - start
            if unread >= SMALL_SEGMENT or unread > 2 * size:
                break
            self.segs.pop()
            if not self.segs:
                self._head = None
            self.store.discard_later(seg_id)
            merged.append(self._lines(seg_id, count)[start:])
            size += unread
        return [line for lines in reversed(merged) for line in lines]

    def push_back(self, lines: list[bytes]) -> None:
        """Append lines at the tail; small tail segments are merged with them."""
        if not lines:
            return
        tail = self._pop_small_tail(len(lines))
        if tail:
            lines = tail + lines
        for start in range(0, len(lines), SEGMENT_LINES):
            chunk = lines[start : start + SEGMENT_LINES]
            self.segs.append([self.store.write(chunk), len(chunk), 0])

    def push_back_raw(self, raw: bytes, count: int) -> None:
        """Append ``count`` lines held in one buffer (cheaper than a list of lines).

        Small tail segments are merged with them, as in :meth:`push_back`; the new
        segment may then hold up to ``SEGMENT_LINES + 2 * SMALL_SEGMENT`` lines.
        """
        if not count:
            return
        tail = self._pop_small_tail(count)
        if tail:
            raw = b"".join(tail) + raw
            count += len(tail)
        self.segs.append([self.store.write_raw(raw), count, 0])

    def extend_segments(self, other: SegmentQueue) -> None:
        """Move all of ``other``'s records to this queue's tail without rewriting them."""
        self.segs.extend(other.segs)
        other.segs = []
        other._head = None

    def remove_where(self, drop: Callable[[bytes], bool]) -> list[bytes]:
        """Remove the lines for which ``drop`` is true, segment by segment; return them.

        Only segments that lose a line are rewritten; order is kept.
        """
        self._head = None
        removed: list[bytes] = []
        new_segs: list[list[int]] = []
        for seg_id, count, start in self.segs:
            kept: list[bytes] = []
            for line in self._lines(seg_id, count)[start:]:
                (removed if drop(line) else kept).append(line)
            if len(kept) == count - start:
                new_segs.append([seg_id, count, start])
                continue
            self.store.discard_later(seg_id)
            if kept:
                new_segs.append([self.store.write(kept), len(kept), 0])
        self.segs = new_segs
        return removed
