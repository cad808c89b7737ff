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
``STATE/crawl/waiting.ndjson.zst`` (the room as of its last rewrite) and beside it
``waiting.journal.ndjson``, the changes since, one line each (``{"put": record, "at":
time}`` or ``{"drop": url}``). :meth:`save`, which its users call after every change
once the frontier has committed what was released, appends the changes and fsyncs
them; once the journal holds as many lines as the room holds records (and at least
:data:`COMPACT_AFTER`), the room is rewritten atomically and the journal deleted.
Rewriting the whole room at every save cost 42% of a crawl's post-processing thread
on a web of 19,000 hosts whose hostile ones filled the room (``bench_crawl --hosts
19000 --pages 30 --no-budgets``, py-spy, 4 minutes): a save now costs its changes.

Replaying the journal over the room it was written for gives the room the saves
left, and so does replaying it over the rewritten room (a crash between the rewrite
and the journal's deletion): a URL's last drop ends whatever came before, a put keeps
the later time. A line cut by a crash is dropped (and cut off the file) when the room
is read; a damaged line before others is a :class:`~crawlkit.errors.StateError`, and a
save that fails takes its partial line back. A crash between queueing released URLs
and the save repeats them (the frontier gets a URL twice), it never loses one. Read
the room with :func:`read_waiting`, replace it with :func:`write_waiting`: the file
alone is not it.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import orjson
from sortedcontainers import SortedKeyList

from crawlkit import streams
from crawlkit.errors import StateError
from crawlkit.records import Record, URLRecord
from crawlkit.times import parse_time

__all__ = [
    "COMPACT_AFTER",
    "FETCH_FIELDS",
    "WAITING",
    "WaitingRoom",
    "journal_of",
    "read_waiting",
    "write_waiting",
]

#: The room of a state directory, relative to it.
WAITING = Path("crawl") / "waiting.ndjson.zst"
#: The journal is folded into the room once it has this many lines, or as many as the
#: room has records if that is more (so a save costs its changes, amortized).
COMPACT_AFTER = 4096

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


def journal_of(room: Path) -> Path:
    """The journal of the room file ``room`` (``waiting.journal.ndjson`` beside it)."""
    return room.with_name(room.name.removesuffix(".ndjson.zst") + ".journal.ndjson")


def read_waiting(room: Path) -> list[Record]:
    """The records waiting in the room file ``room`` and its journal, soonest first;
    nothing is written (a crawl may be appending to the journal meanwhile)."""
    return WaitingRoom(room, read_only=True).records()


def write_waiting(room: Path, records: Iterable[Record]) -> None:
    """Make ``records`` the whole room (atomically), its journal gone."""
    with streams.open_output(room) as out:
        out.write_records(records)
    journal_of(room).unlink(missing_ok=True)


def _key(rec: Record) -> tuple[float, str]:
    return (float(rec["_retry"]), str(rec["url"]))


def _when(rec: Record) -> float:
    """When a record is due: a deferred one's ``retry_at``, else its ``due`` (0: now)."""
    return float(parse_time(rec.get("retry_at")) or parse_time(rec.get("due")) or 0.0)


class WaitingRoom:
    """URL records by the time they are due (a deferred one's ``retry_at``, else its
    ``due``); at most one per URL."""

    def __init__(self, path: Path, *, read_only: bool = False):
        """The room kept in ``path``, read on first use (a ``frontier add`` that holds
        nothing never reads it); ``read_only`` leaves a cut journal line as it is."""
        self.path = path
        self.read_only = read_only
        self.journal = journal_of(path)
        self._queue: SortedKeyList = SortedKeyList(key=_key)
        self._by_url: dict[str, Record] = {}
        self.dirty = False
        self._loaded = False
        self._changes: list[bytes] = []  # journal lines not yet saved
        self._journal_lines = 0  # lines in the journal file

    def _load(self) -> None:
        if self._loaded:
            return
        self._loaded = True
        if self.path.exists():
            for rec in streams.read_records([self.path]):
                self._apply_put(rec, _when(rec))
        if self.journal.exists():
            self._replay()

    def _replay(self) -> None:
        """Apply the journal's lines in order; a last line cut by a crash is cut off,
        a damaged line before others is an error (what follows it would be lost)."""
        data = self.journal.read_bytes()
        lines = data.splitlines(keepends=True)
        good = 0
        for number, line in enumerate(lines, 1):
            try:
                change: Any = orjson.loads(line) if line.endswith(b"\n") else None
            except orjson.JSONDecodeError:
                change = None
            if isinstance(change, dict) and "drop" in change:
                self._apply_drop(str(change["drop"]))
            elif isinstance(change, dict) and isinstance(change.get("put"), dict):
                self._apply_put(change["put"], float(change.get("at") or 0.0))
            elif number == len(lines):
                break  # the last save was cut: what the saves left ends before it
            else:
                raise StateError(f"{self.journal}:{number}: not a waiting-room change")
            good += len(line)
            self._journal_lines += 1
        if good < len(data) and not self.read_only:
            with open(self.journal, "r+b") as f:
                f.truncate(good)

    def __len__(self) -> int:
        self._load()
        return len(self._by_url)

    def records(self) -> list[Record]:
        """Every waiting record, soonest first (as the room file holds them)."""
        self._load()
        return [{k: v for k, v in r.items() if k != "_retry"} for r in self._queue]

    def _put(self, rec: Record, retry: float) -> bool:
        self._load()
        if not self._apply_put(rec, retry):
            return False
        self._changes.append(orjson.dumps({"put": rec, "at": retry}) + b"\n")
        self.dirty = True
        return True

    def _apply_put(self, rec: Record, retry: float) -> bool:
        url = str(rec.get("url"))
        old = self._by_url.get(url)
        if old is not None:
            if old["_retry"] >= retry:
                return False  # already waiting, as long or longer
            self._queue.remove(old)
        rec = {**rec, "_retry": retry}
        self._by_url[url] = rec
        self._queue.add(rec)
        return True

    def _drop(self, url: str) -> None:
        self._changes.append(orjson.dumps({"drop": url}) + b"\n")
        self.dirty = True

    def _apply_drop(self, url: str) -> None:
        rec = self._by_url.pop(url, None)
        if rec is not None:
            self._queue.remove(rec)

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
            if isinstance(rec.get("digest"), str):  # the page's (records.fetch_record)
                keep["digest"] = rec["digest"]
            if rec.get("status") is not None:
                # a request was made (429, 503): the next hand-out is charged again
                keep.pop("budget_period", None)
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
            self._drop(str(rec["url"]))
            out.append({k: v for k, v in rec.items() if k not in ("_retry", "retry_at")})
        return out

    def take(self, urls: Iterable[str]) -> int:
        """Take ``urls`` out (queued by other means, e.g. seeds named again); returns
        how many were waiting."""
        self._load()
        taken = 0
        for url in urls:
            if url in self._by_url:
                self._apply_drop(url)
                self._drop(url)
                taken += 1
        return taken

    def save(self) -> None:
        """Make the changes since the last save durable: appended to the journal, or
        the room rewritten once the journal is as long as the room (module doc)."""
        if not self.dirty:
            return
        assert not self.read_only, "a read-only waiting room is never saved"
        self.path.parent.mkdir(parents=True, exist_ok=True)
        lines = self._journal_lines + len(self._changes)
        if lines >= max(COMPACT_AFTER, len(self._by_url)):
            write_waiting(self.path, self.records())
            self._journal_lines = 0
        else:
            new = not self.journal.exists()
            with open(self.journal, "ab") as f:
                end = f.tell()
                try:
                    f.write(b"".join(self._changes))
                    f.flush()
                    os.fsync(f.fileno())
                except BaseException:  # a full disk: no cut line before the next save's
                    with contextlib.suppress(OSError):
                        f.truncate(end)
                    raise
            if new:
                streams.fsync_dir(self.journal.parent)
            self._journal_lines = lines
        self._changes.clear()
        self.dirty = False
