"""Recrawl history and adaptive revisit intervals.

For every URL that has been fetched, :class:`History` keeps one :class:`Entry`: the
last fetch, its validators (ETag, Last-Modified), its content digest and simhash,
how often it was checked and found changed, its revisit interval and when it is
due. :func:`apply_event` is the whole policy, a pure function (docs/design.md "Numbers"):

* a change (a new digest whose simhash is more than ``near_bits`` (3) bits from the
  old one) halves the interval; no change (304 Not Modified, the same digest, or a
  simhash within 3 bits) grows it by half; the interval stays between ``min`` (1 h)
  and ``max`` (90 days). A first fetch starts at ``initial`` (1 day).
* importance scales the wait: the next visit is due ``interval × scale[importance]``
  after the fetch (importance 0 ×0.5 … importance 3 ×1.5), clamped to the same
  bounds. Importance runs 0..3, 0 most important (crawlkit.records says how it
  differs from a record's ``priority`` hint and the frontier's level).
* a sitemap ``lastmod`` newer than the last fetch is evidence of a change: it counts
  as one (interval halved) and makes the URL due now; the fetch that follows does
  not count the same change twice.
* ``deferred`` fetches are due again at their ``retry_at``; errors back off (1 h,
  doubling, up to the interval); robots-denied URLs wait at least a day.

Where it settles: the interval is a multiplicative random walk that stops drifting
when the chance p of seeing a change in one interval satisfies p·ln 2 = (1 − p)·ln
1.5, i.e. p = ln 1.5 / ln 3 ≈ 0.37. For a page changing every T that is an interval
of about 0.37 T (strictly periodic changes; about 0.46 T for changes at random
times with mean gap T), oscillating between about T/5 and 2T/3: the same order as
T, sampling it 2 to 3 times per change. A page that never changes grows by half per
visit and reaches the maximum (90 days) after about 11 unchanged visits from 1 day.

Events older than the last one applied to a URL are ignored, so applying the same
fetch log twice is harmless (docs/design.md invariant 5).

Storage: ``DIR/recrawl/history.sqlite`` (SQLite, WAL, synchronous FULL). Each run is
one transaction; due URLs are marked as emitted in the same transaction, which the
caller commits only after writing them (at least once). A URL emitted and not
fetched since is emitted again only after max(interval, ``reemit``) (1 day), in case
the batch that carried it was lost.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from crawlkit.errors import StateError

__all__ = ["Entry", "Event", "History", "RecrawlPolicy", "apply_event", "hamming"]

SCHEMA_VERSION = 1
_SIGN = 1 << 63
_WRAP = 1 << 64


def _signed(fp: int) -> int:
    return fp - _WRAP if fp >= _SIGN else fp


def _unsigned(value: int) -> int:
    return value + _WRAP if value < 0 else value


def hamming(a: int, b: int) -> int:
    return (a ^ b).bit_count()


@dataclass(frozen=True)
class RecrawlPolicy:
    """Interval rules; all durations in seconds."""

    initial: float = 86400.0
    min: float = 3600.0
    max: float = 90 * 86400.0
    on_change: float = 0.5
    on_same: float = 1.5
    near_bits: int = 3
    scale: tuple[float, ...] = (0.5, 0.75, 1.0, 1.5)
    reemit: float = 86400.0
    error_backoff: float = 3600.0

    def clamp(self, seconds: float) -> float:
        return min(self.max, max(self.min, seconds))

    def wait(self, interval: float, importance: int) -> float:
        """The delay from a fetch to the next visit: interval scaled by importance."""
        index = min(max(importance, 0), len(self.scale) - 1)
        return self.clamp(interval * self.scale[index])


@dataclass
class Entry:
    """The history of one URL (one row of the history table)."""

    fp: int
    url: str
    host: str | None = None
    site: str | None = None
    depth: int | None = None
    importance: int = 2  # 0..3, 0 most important (the table's "priority" column)
    last_fetch: float | None = None  # time of the last successful fetch (or 304)
    last_event: float = 0.0  # time of the newest event applied (idempotence)
    status: int | None = None
    outcome: str | None = None
    etag: str | None = None
    last_modified: str | None = None
    digest: str | None = None
    simhash: int | None = None
    lastmod: float | None = None
    interval: float = 86400.0
    changes: int = 0
    checks: int = 0
    errors: int = 0
    pending_change: bool = False
    due: float = 0.0
    emitted: float | None = None


@dataclass
class Event:
    """One observation of a URL: a fetch (with its page's digest and simhash), or a
    sitemap ``lastmod``. ``kind`` is ``fetch`` or ``lastmod``."""

    kind: str
    at: float
    url: str
    outcome: str | None = None
    status: int | None = None
    etag: str | None = None
    last_modified: str | None = None
    digest: str | None = None
    simhash: int | None = None
    retry_at: float | None = None
    lastmod: float | None = None
    importance: int | None = None
    depth: int | None = None
    extra: dict[str, Any] = field(default_factory=dict)


_NOT_MODIFIED = {"not-modified", "notmodified", "not_modified"}
_FETCHED = {"fetched", "ok", "redirect", "truncated"}


def apply_event(entry: Entry | None, event: Event, fp: int, policy: RecrawlPolicy) -> Entry | None:
    """The entry after ``event``; None when the event says nothing to track.

    An event not newer than the entry's ``last_event`` returns the entry unchanged.
    """
    if entry is not None and event.at <= entry.last_event:
        return entry
    if event.kind == "lastmod":
        if entry is None or event.lastmod is None:
            return entry
        new = replace(entry, last_event=event.at)
        if (entry.last_fetch is None or event.lastmod > entry.last_fetch) and (
            entry.lastmod is None or event.lastmod > entry.lastmod
        ):
            new.lastmod = event.lastmod
            if not entry.pending_change:
                new.interval = policy.clamp(entry.interval * policy.on_change)
                new.changes += 1
                new.pending_change = True
            new.due = min(entry.due, event.at)
        return new
    outcome = (event.outcome or "").lower()
    if outcome == "refused":
        return entry  # the frontier refused it: nothing to revisit
    new = (
        replace(entry, last_event=event.at)
        if entry is not None
        else Entry(fp=fp, url=event.url, interval=policy.initial, last_event=event.at)
    )
    if event.importance is not None:
        new.importance = event.importance
    if event.depth is not None:
        new.depth = event.depth
    new.outcome = outcome or None
    new.status = event.status
    not_modified = outcome in _NOT_MODIFIED or event.status == 304
    if not_modified or outcome in _FETCHED or (not outcome and event.status is not None):
        _apply_fetch(entry, new, event, not_modified, policy)
    elif outcome == "deferred":
        new.due = event.retry_at if event.retry_at is not None else event.at + policy.error_backoff
        new.emitted = None
    elif outcome == "robots-denied":
        new.due = event.at + max(new.interval, 86400.0)
        new.emitted = None
    else:  # error, timeout, and outcomes this version does not know: back off
        new.errors += 1
        backoff = policy.error_backoff * 2 ** min(new.errors - 1, 30)
        new.due = event.at + min(max(backoff, policy.min), max(new.interval, policy.min))
        new.emitted = None
    return new


def _apply_fetch(
    old: Entry | None, new: Entry, event: Event, not_modified: bool, policy: RecrawlPolicy
) -> None:
    digest = event.digest
    if digest is None and event.outcome == "redirect" and event.extra.get("location"):
        digest = "redirect:" + str(event.extra["location"])
    changed: bool | None
    if old is None or old.last_fetch is None:
        changed = None  # a first fetch: nothing to compare with
    elif (
        not_modified
        or (digest is not None and digest == old.digest)
        or (
            event.simhash is not None
            and old.simhash is not None
            and hamming(event.simhash, old.simhash) <= policy.near_bits
        )
    ):
        changed = False
    elif (digest is None and event.simhash is None) or (old.digest is None and old.simhash is None):
        changed = None
    else:
        changed = True
    if old is not None and old.last_fetch is not None:
        new.checks += 1
        if new.pending_change:
            new.pending_change = False  # the sitemap already counted this change
        elif changed is True:
            new.interval = policy.clamp(new.interval * policy.on_change)
            new.changes += 1
        elif changed is False:
            new.interval = policy.clamp(new.interval * policy.on_same)
    else:
        new.checks = 1
        new.pending_change = False
    new.last_fetch = event.at
    new.errors = 0
    if event.etag is not None:
        new.etag = event.etag
    if event.last_modified is not None:
        new.last_modified = event.last_modified
    if digest is not None:
        new.digest = digest
    if event.simhash is not None:
        new.simhash = event.simhash
    new.due = event.at + policy.wait(new.interval, new.importance)
    new.emitted = None


_FIELDS = list(Entry.__dataclass_fields__)
# The table's column of each field: importance has always been stored as "priority",
# and history tables written before keep opening.
_COLUMNS = ["priority" if f == "importance" else f for f in _FIELDS]


class History:
    """The history table in ``DIR/recrawl/history.sqlite``; one transaction per commit.

    It may be used from a thread other than the one that opened it (``crawlkit crawl``
    opens it once and updates it from its post-processing thread), one at a time.
    """

    def __init__(self, directory: Path):
        directory.mkdir(parents=True, exist_ok=True)
        path = directory / "history.sqlite"
        try:
            self.db = sqlite3.connect(path, isolation_level="DEFERRED", check_same_thread=False)
            self.db.execute("PRAGMA journal_mode=WAL")
            self.db.execute("PRAGMA synchronous=FULL")
            version = self.db.execute("PRAGMA user_version").fetchone()[0]
            if version == 0:
                self._create()
            elif version != SCHEMA_VERSION:
                raise StateError(
                    f"recrawl history {path} has version {version}; this crawlkit reads "
                    f"version {SCHEMA_VERSION}"
                )
        except sqlite3.DatabaseError as exc:
            raise StateError(f"recrawl history {path} is unreadable: {exc}") from exc

    def _create(self) -> None:
        self.db.executescript(
            """
            CREATE TABLE IF NOT EXISTS history (
                fp INTEGER PRIMARY KEY, url TEXT NOT NULL, host TEXT, site TEXT,
                depth INTEGER, priority INTEGER NOT NULL, last_fetch REAL,
                last_event REAL NOT NULL, status INTEGER, outcome TEXT, etag TEXT,
                last_modified TEXT, digest TEXT, simhash INTEGER, lastmod REAL,
                interval REAL NOT NULL, changes INTEGER NOT NULL, checks INTEGER NOT NULL,
                errors INTEGER NOT NULL, pending_change INTEGER NOT NULL, due REAL NOT NULL,
                emitted REAL
            );
            CREATE INDEX IF NOT EXISTS history_due ON history (due);
            PRAGMA user_version = 1;
            """
        )
        self.db.commit()

    def get(self, fp: int) -> Entry | None:
        row = self.db.execute(
            f"SELECT {', '.join(_COLUMNS)} FROM history WHERE fp = ?", (_signed(fp),)
        ).fetchone()
        return self._entry(row) if row else None

    @staticmethod
    def _entry(row: tuple[Any, ...]) -> Entry:
        values = dict(zip(_FIELDS, row, strict=True))
        values["fp"] = _unsigned(values["fp"])
        if values["simhash"] is not None:
            values["simhash"] = _unsigned(values["simhash"])
        values["pending_change"] = bool(values["pending_change"])
        return Entry(**values)

    def put(self, entries: list[Entry]) -> None:
        rows = []
        for entry in entries:
            values = asdict(entry)
            values["fp"] = _signed(entry.fp)
            if entry.simhash is not None:
                values["simhash"] = _signed(entry.simhash)
            values["pending_change"] = int(entry.pending_change)
            rows.append(tuple(values[f] for f in _FIELDS))
        marks = ", ".join("?" for _ in _COLUMNS)
        self.db.executemany(
            f"INSERT OR REPLACE INTO history ({', '.join(_COLUMNS)}) VALUES ({marks})", rows
        )

    def due(self, now: float, reemit: float, limit: int | None = None) -> Iterator[Entry]:
        """Entries due at ``now`` and not emitted since (or emitted long ago), soonest first."""
        sql = (
            f"SELECT {', '.join(_COLUMNS)} FROM history WHERE due <= ? AND "
            "(emitted IS NULL OR emitted + MAX(interval, ?) <= ?) ORDER BY due, fp"
        )
        params: tuple[Any, ...] = (now, reemit, now)
        if limit is not None:
            sql += " LIMIT ?"
            params += (limit,)
        for row in self.db.execute(sql, params):
            yield self._entry(row)

    def mark_emitted(self, fps: list[int], now: float) -> None:
        self.db.executemany(
            "UPDATE history SET emitted = ? WHERE fp = ?", [(now, _signed(fp)) for fp in fps]
        )

    def count(self) -> int:
        return int(self.db.execute("SELECT COUNT(*) FROM history").fetchone()[0])

    def commit(self) -> None:
        self.db.commit()

    def close(self) -> None:
        self.db.close()
