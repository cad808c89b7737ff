"""The waiting room: where a state directory's URLs wait for their time
(``STATE/crawl/waiting.ndjson.zst``), for ``crawlkit crawl`` and the frontier stage alike.

Two kinds of record wait here. A fetch record with ``outcome: "deferred"`` (429 or
503 backoff, robots.txt unavailable, the host not due before the run ends) waits for
its ``retry_at`` (:meth:`WaitingRoom.add`; ``crawl`` after each cycle, ``frontier add
--deferred`` in a pipeline); a URL record whose ``due`` time lies ahead waits for it
(:meth:`WaitingRoom.hold`, ``frontier add``). :meth:`WaitingRoom.due` hands each back
once, when its time has come, to be queued in the frontier (``crawl`` as it refills,
``frontier next`` before it takes a batch). Nothing else re-queues a deferred URL:
deferred records are not fed to the recrawl history (which would make the same URL
due a second time), so a deferred URL is fetched once after its retry.

In memory a due-time queue (a ``SortedKeyList`` by time, then URL) plus a map by URL,
so adding, releasing and "when is the next one due" cost O(log n). On disk
``STATE/crawl/waiting.ndjson.zst``, rewritten atomically by :meth:`save`, which its
users call after every change, once the frontier has committed what was released: a
crash between queueing released URLs and the save repeats them (the frontier gets a
URL twice), it never loses one.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from sortedcontainers import SortedKeyList

from crawlkit import streams
from crawlkit.records import Record, URLRecord
from crawlkit.times import parse_time

__all__ = ["FETCH_FIELDS", "WAITING", "WaitingRoom"]

#: The room of a state directory, relative to it.
WAITING = Path("crawl") / "waiting.ndjson.zst"

# Fields of a fetch record that describe the attempt, not the URL: dropped, so the
# record queued again is the URL record the frontier first handed out.
FETCH_FIELDS = frozenset(
    {
        "status",
        "outcome",
        "fetched_at",
        "elapsed_ms",
        "ip",
        "bytes",
        "content_type",
        "digest",
        "location",
        "warc",
        "error",
        "truncated",
        "retry_at",
        "stopped",
    }
)


def _key(rec: Record) -> tuple[float, str]:
    return (float(rec["_retry"]), str(rec["url"]))


def _when(rec: Record) -> float:
    """When a record is due: a deferred one's ``retry_at``, else its ``due`` (0: now)."""
    return float(parse_time(rec.get("retry_at")) or parse_time(rec.get("due")) or 0.0)


class WaitingRoom:
    """URL records by the time they are due (a deferred one's ``retry_at``, else its
    ``due``); at most one per URL."""

    def __init__(self, path: Path):
        """The room kept in ``path``, read on first use (a ``frontier add`` that holds
        nothing never reads it)."""
        self.path = path
        self._queue: SortedKeyList = SortedKeyList(key=_key)
        self._by_url: dict[str, Record] = {}
        self.dirty = False
        self._loaded = False

    def _load(self) -> None:
        if self._loaded:
            return
        self._loaded = True
        if self.path.exists():
            for rec in streams.read_records([self.path]):
                self._put(rec, _when(rec))
            self.dirty = False

    def __len__(self) -> int:
        self._load()
        return len(self._by_url)

    def _put(self, rec: Record, retry: float) -> bool:
        self._load()
        url = str(rec.get("url"))
        old = self._by_url.get(url)
        if old is not None:
            if old["_retry"] >= retry:
                return False  # already waiting, as long or longer
            self._queue.remove(old)
        rec = {**rec, "_retry": retry}
        self._by_url[url] = rec
        self._queue.add(rec)
        self.dirty = True
        return True

    def add(self, deferred: Iterable[Record]) -> int:
        """Put deferred fetch records in (a URL already waiting keeps the later time).

        Returns how many records were taken in.
        """
        taken = 0
        for rec in deferred:
            url = rec.get("url")
            if not isinstance(url, str) or not url:
                continue
            keep = {k: v for k, v in rec.items() if k not in FETCH_FIELDS}
            keep["retry_at"] = rec.get("retry_at")
            taken += self._put(keep, float(parse_time(rec.get("retry_at")) or 0.0))
        return taken

    def hold(self, records: Iterable[URLRecord]) -> int:
        """Put URL records in until their ``due`` time, whole (a URL already waiting
        keeps the later time). Returns how many were taken in."""
        taken = 0
        for rec in records:
            url = rec.get("url")
            if isinstance(url, str) and url:
                taken += self._put(dict(rec), float(parse_time(rec.get("due")) or 0.0))
        return taken

    def next_time(self) -> float | None:
        """When the first waiting URL is due, or None when none waits."""
        self._load()
        return float(self._queue[0]["_retry"]) if self._queue else None

    def due(self, now: float) -> list[Record]:
        """Take out every record due at ``now``, as URL records (without ``retry_at``)."""
        self._load()
        out: list[Record] = []
        while self._queue and self._queue[0]["_retry"] <= now:
            rec = self._queue.pop(0)
            del self._by_url[str(rec["url"])]
            out.append({k: v for k, v in rec.items() if k not in ("_retry", "retry_at")})
        if out:
            self.dirty = True
        return out

    def take(self, urls: Iterable[str]) -> int:
        """Take ``urls`` out (queued by other means, e.g. seeds named again); returns
        how many were waiting."""
        self._load()
        taken = 0
        for url in urls:
            rec = self._by_url.pop(url, None)
            if rec is not None:
                self._queue.remove(rec)
                taken += 1
        if taken:
            self.dirty = True
        return taken

    def save(self) -> None:
        """Write the room to disk (atomically) if it changed since the last save."""
        if not self.dirty:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with streams.open_output(self.path) as out:
            out.write_records({k: v for k, v in r.items() if k != "_retry"} for r in self._queue)
        self.dirty = False
