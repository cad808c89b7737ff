"""The fetcher's durable memory in ``STATE/fetch/``: host clocks, robots, DNS, digests.

One SQLite database (``hosts.sqlite``, WAL journal, ``synchronous=FULL``) holds:

* ``hosts``: per host the next-allowed time, the backoff step and its end, the last
  fetch time, the Crawl-delay, ``inflight_since`` (set when a request starts,
  cleared when it ends) and ``last_end`` (when the last request ended: the next run
  keeps its own gap from it, a column added when missing);
* ``robots``: the robots.txt cache entry per origin (``RobotsEntry.to_dict()``);
* ``dns``: the resolver cache (unexpired answers and failures);
* ``digests``: payload digest → (URI, WARC-Date) of its first capture, for revisit
  records, and where that capture is (``place``: ``{"file", "offset", "length"}`` as
  JSON; a column added when missing, empty in rows of older states), so a copy at
  another URL can be parsed from it. Most captures are new payloads, so a lookup
  first asks an in-memory filter of every digest known (:class:`KnownDigests`, two
  bytes a digest, built from the table once lookups have cost as much as reading
  it): a payload it has never seen then costs no query.

Durability contract (docs/design.md invariant 2, "a restart never bursts"):

* :meth:`HostState.begin_run` durably marks the state as *running*; a clean
  :meth:`HostState.close` clears the mark. Finding the mark at the next start means
  the last run died (kill -9, power loss): :attr:`HostState.crashed` is then True
  and the fetcher makes *every* known host wait its full gap counted from the
  restart, since any of them may have had a request in flight whose record was lost.
* A host the state has never seen is first written, and the transaction fsynced,
  *before* the first request to it goes out (so a crash cannot forget a host it
  touched); its robots.txt result and any backoff are fsynced before the next group
  of requests. Everything else (clocks after each request, digests, robots bodies) is
  committed in the background every fraction of a second: losing it makes a restart
  more cautious, never less.
"""

from __future__ import annotations

import json
import sqlite3
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from crawlkit.errors import StateError

__all__ = ["Digest", "HostRecord", "HostState", "KnownDigests"]

#: The first capture of a payload: (URI, WARC-Date, place as JSON or None).
Digest = tuple[str, str, str | None]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS hosts (
    host TEXT PRIMARY KEY, next_allowed REAL NOT NULL, backoff REAL NOT NULL,
    backoff_until REAL NOT NULL, last_elapsed REAL NOT NULL, crawl_delay REAL NOT NULL,
    inflight_since REAL, last_end REAL);
CREATE TABLE IF NOT EXISTS robots (origin TEXT PRIMARY KEY, entry TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS dns (name TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS digests (
    digest TEXT PRIMARY KEY, uri TEXT NOT NULL, date TEXT NOT NULL, place TEXT);
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
"""
_VERSION = "1"


class KnownDigests:
    """A Bloom filter of payload digests: "not there" is always right, "maybe" is
    wrong for about 1 in 400 absent digests at its capacity (16 bits and 4 probes a
    digest). Holds ``capacity`` digests; :meth:`full` says when to build a bigger one.

    Positions come from Python's string hash (salted per process, which is fine for
    a filter that lives in memory only), split into two 32-bit halves for double
    hashing.
    """

    BITS = 16
    PROBES = 4

    def __init__(self, capacity: int):
        self.capacity = max(capacity, 1 << 14)
        self.size = self.capacity * self.BITS
        self.bits = bytearray(self.size // 8)
        self.count = 0

    def add(self, digest: str) -> None:
        h = hash(digest)
        pos, step = h & 0xFFFF_FFFF, ((h >> 32) & 0xFFFF_FFFF) | 1
        bits, size = self.bits, self.size
        for _ in range(self.PROBES):
            pos %= size
            bits[pos >> 3] |= 1 << (pos & 7)
            pos += step
        self.count += 1

    def __contains__(self, digest: object) -> bool:
        h = hash(digest)
        pos, step = h & 0xFFFF_FFFF, ((h >> 32) & 0xFFFF_FFFF) | 1
        bits, size = self.bits, self.size
        for _ in range(self.PROBES):  # an absent digest mostly fails the first probe
            pos %= size
            if not bits[pos >> 3] & (1 << (pos & 7)):
                return False
            pos += step
        return True

    def full(self) -> bool:
        return self.count >= self.capacity


@dataclass
class HostRecord:
    next_allowed: float
    backoff: float
    backoff_until: float
    last_elapsed: float
    crawl_delay: float
    inflight_since: float | None
    last_end: float | None = None  # when the last request ended (None: not known)


class HostState:
    """Open (or create) ``directory/hosts.sqlite``. The caller holds the state lock."""

    def __init__(self, directory: str | Path):
        self.path = Path(directory) / "hosts.sqlite"
        try:
            self._db = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=FULL")
            self._db.executescript(_SCHEMA)
            row = self._db.execute("SELECT value FROM meta WHERE key='version'").fetchone()
            if row is None:
                self._db.execute("INSERT INTO meta VALUES ('version', ?)", (_VERSION,))
            elif row[0] != _VERSION:
                raise StateError(f"{self.path}: state version {row[0]}, expected {_VERSION}")
            columns = {c[1] for c in self._db.execute("PRAGMA table_info(digests)")}
            if "place" not in columns:  # a state of an older crawlkit
                self._db.execute("ALTER TABLE digests ADD COLUMN place TEXT")
            columns = {c[1] for c in self._db.execute("PRAGMA table_info(hosts)")}
            if "last_end" not in columns:  # a state of an older crawlkit
                self._db.execute("ALTER TABLE hosts ADD COLUMN last_end REAL")
        except sqlite3.DatabaseError as exc:
            raise StateError(f"{self.path}: {exc}") from exc
        self._lock = threading.Lock()
        # Each address's next allowed start, for every fetch run of this process on
        # this state (crawlkit.fetch.scheduler): in memory only, as a run after a
        # crash waits every host's full gap anyway.
        self.ip_clocks: dict[str, float] = {}
        # Lookups from the event loop use their own connection: with WAL they never wait
        # for a commit (and its fsync) running on the writer connection in another thread.
        self._reader = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
        self._host_rows: dict[str, tuple[Any, ...]] = {}
        self.crashed = False
        self._robots_rows: dict[str, str] = {}
        self._digest_rows: dict[str, Digest] = {}
        # Rows of the transaction being committed: no longer pending, not yet visible
        # to the reader connection. Set before the pending rows are swapped out.
        self._digests_committing: dict[str, Digest] = {}
        self._known: KnownDigests | None = None  # see _maybe_build_known
        self._queries_before_filter: int | None = None

    # -- hosts ---------------------------------------------------------------------------
    def host(self, key: str) -> HostRecord | None:
        pending = self._host_rows.get(key)
        row = pending[1:] if pending else None
        if row is None:
            row = self._reader.execute(
                "SELECT next_allowed, backoff, backoff_until, last_elapsed, crawl_delay, "
                "inflight_since, last_end FROM hosts WHERE host=?",
                (key,),
            ).fetchone()
        return HostRecord(*row) if row else None

    def hosts(self) -> list[tuple[str, HostRecord]]:
        """Every committed host row (for handing hosts over to another shard)."""
        self.commit()
        rows = self._reader.execute(
            "SELECT host, next_allowed, backoff, backoff_until, last_elapsed, crawl_delay, "
            "inflight_since, last_end FROM hosts"
        ).fetchall()
        return [(row[0], HostRecord(*row[1:])) for row in rows]

    def put_host(self, key: str, rec: HostRecord) -> None:
        """Queue a host row for the next :meth:`commit`."""
        with self._lock:
            self._host_rows[key] = (
                key,
                rec.next_allowed,
                rec.backoff,
                rec.backoff_until,
                rec.last_elapsed,
                rec.crawl_delay,
                rec.inflight_since,
                rec.last_end,
            )

    # -- robots --------------------------------------------------------------------------
    def robots(self, origin: str) -> dict[str, Any] | None:
        text = self._robots_rows.get(origin)
        if text is None:
            row = self._reader.execute(
                "SELECT entry FROM robots WHERE origin=?", (origin,)
            ).fetchone()
            text = row[0] if row else None
        return json.loads(text) if text else None

    def put_robots(self, origin: str, entry: dict[str, Any]) -> None:
        with self._lock:
            self._robots_rows[origin] = json.dumps(entry)

    # -- digests -------------------------------------------------------------------------
    def digest(self, digest: str) -> Digest | None:
        """The (URI, WARC-Date, place) of the first capture of this payload digest (place:
        ``{"file", "offset", "length"}`` as JSON, with ``"id"``, its WARC-Record-ID, when
        written since that was kept; or None), or None."""
        hit = self._digest_rows.get(digest) or self._digests_committing.get(digest)
        if hit is not None:
            return hit
        known = self._known
        if known is None:
            known = self._maybe_build_known()
        if known is not None and digest not in known:
            return None
        row = self._reader.execute(
            "SELECT uri, date, place FROM digests WHERE digest=?", (digest,)
        ).fetchone()
        return (row[0], row[1], row[2]) if row else None

    def put_digest(self, digest: str, uri: str, date: str, place: str | None = None) -> None:
        with self._lock:
            if digest not in self._digest_rows:
                self._digest_rows[digest] = (uri, date, place)
                if self._known is not None:
                    if self._known.full():
                        self._known = None  # rebuilt, twice as large, at the next lookup
                    else:
                        self._known.add(digest)

    def _maybe_build_known(self) -> KnownDigests | None:
        """The filter, once this process has made as many queries as reading the
        whole table would cost (a query costs about as much as adding 4 rows to the
        filter): a short run on a large state never reads the table, a crawl reads it
        once (and again each time the filter fills up)."""
        if self._queries_before_filter is None:
            (last,) = self._reader.execute("SELECT max(rowid) FROM digests").fetchone()
            self._queries_before_filter = (last or 0) // 4
        if self._queries_before_filter > 0:
            self._queries_before_filter -= 1
            return None
        return self._build_known()

    def _build_known(self) -> KnownDigests:
        """The filter of every digest committed or pending (under the lock, so no
        commit moves rows between the two while it is read)."""
        with self._lock:
            (rows,) = self._reader.execute("SELECT count(*) FROM digests").fetchone()
            known = KnownDigests(2 * (rows + len(self._digest_rows)))
            for (digest,) in self._reader.execute("SELECT digest FROM digests"):
                known.add(digest)
            for digest in self._digest_rows:
                known.add(digest)
            self._known = known
            return known

    # -- dns -----------------------------------------------------------------------------
    def dns(self) -> dict[str, list[object]]:
        return {name: json.loads(v) for name, v in self._db.execute("SELECT name, value FROM dns")}

    def save_dns(self, cache: dict[str, list[object]]) -> None:
        with self._lock:
            self._db.execute("BEGIN")
            self._db.execute("DELETE FROM dns")
            self._db.executemany(
                "INSERT INTO dns VALUES (?, ?)",
                [(n, json.dumps(v)) for n, v in cache.items() if v[2] != float("inf")],
            )
            self._db.execute("COMMIT")

    # -- durability ----------------------------------------------------------------------
    def begin_run(self) -> bool:
        """Mark the state as in use (fsynced); returns True if the last run crashed."""
        row = self._db.execute("SELECT value FROM meta WHERE key='running'").fetchone()
        self.crashed = bool(row and row[0] == "1")
        self._db.execute("INSERT OR REPLACE INTO meta VALUES ('running', '1')")
        return self.crashed

    def commit(self) -> None:
        """Write every queued change in one transaction (fsynced). Thread-safe."""
        with self._lock:
            hosts, self._host_rows = self._host_rows, {}
            robots, self._robots_rows = self._robots_rows, {}
            digests = self._digests_committing = self._digest_rows
            self._digest_rows = {}
            if not (hosts or robots or digests):
                return
            db = self._db
            db.execute("BEGIN")
            try:
                if hosts:
                    db.executemany(
                        "INSERT OR REPLACE INTO hosts VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                        hosts.values(),
                    )
                if robots:
                    db.executemany("INSERT OR REPLACE INTO robots VALUES (?, ?)", robots.items())
                if digests:
                    db.executemany(
                        "INSERT OR IGNORE INTO digests VALUES (?, ?, ?, ?)",
                        [(d, *row) for d, row in digests.items()],
                    )
                db.execute("COMMIT")
            except BaseException:
                db.execute("ROLLBACK")
                raise
            finally:
                self._digests_committing = {}

    def end_run(self) -> None:
        """Commit what is queued and clear the running mark: a fetch run ended normally
        (the state stays open for the next run of the same process)."""
        self.commit()
        self._db.execute("INSERT OR REPLACE INTO meta VALUES ('running', '0')")

    def close(self, *, clean: bool = True) -> None:
        """Commit what is queued; ``clean`` clears the running mark (a normal end)."""
        if clean:
            self.end_run()
        else:
            self.commit()
        self._reader.close()
        self._db.close()
