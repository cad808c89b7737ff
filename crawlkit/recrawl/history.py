"""The recrawl history on disk, and the update of one URL's entry by one observation.

For every URL that has been fetched, :class:`History` keeps one :class:`Entry`: the
last fetch, its validators (ETag, Last-Modified), its content digest and simhash,
how often it was checked and found changed, the newest :data:`~estimate.KEEP`
observations of its visits, its estimated change rate, its revisit interval and
when it is due. :func:`apply_event` is the update, a pure function:

* a fetch compared with the one before is an observation of the time between them
  (:mod:`crawlkit.recrawl.estimate`): no change (304 Not Modified, the same digest,
  or a simhash within ``near_bits`` (3) bits), or a change (a new digest), dated when
  the response's Last-Modified or a sitemap ``lastmod`` falls between the two
  fetches (a first fetch's Last-Modified is one too: no change since, one then).
  The rate is re-estimated from the kept observations, with the URL's site rate
  (or ``initial``) as the prior (the posterior mean of log λ).
* the revisit interval is the freshness-optimal one for that rate at the budget's
  multiplier μ (:func:`crawlkit.recrawl.policy.intervals`), weighted by importance
  (0..3, 0 most important: weight 2, 4/3, 1, 2/3), between ``min`` (1 h) and
  ``max`` (90 days); the next visit is due that long after the fetch.
  ``crawlkit recrawl`` re-solves μ for its budget each run (stages/recrawl.py).
* a sitemap read (a ``lastmod`` event) is a visit without a fetch: its ``lastmod``
  dates a change since the URL's last observation, or says there was none, so
  feed a sitemap's records when it was read. A ``lastmod`` newer than the last
  fetch makes the URL due now; the fetch that follows adds no observation (the
  read counted the change).
* ``deferred`` fetches are due again at their ``retry_at``; errors back off (1 h,
  doubling, up to the interval), and so does a body the server broke off or that
  outlasted the timeout (``stages/recrawl.py``); robots-denied URLs wait at least a
  day.

Events older than the last one applied to a URL are ignored, so applying the same
fetch log twice is harmless (docs/design.md invariant 5).

Storage: ``DIR/recrawl/history.sqlite`` (SQLite, WAL, synchronous FULL), and
``DIR/recrawl/columns.npz``, the planning columns a :class:`History` kept, written when
it is closed with nothing uncommitted (:meth:`Columns.save`). The file carries a token
that the table's ``meta`` holds too, and every write to the history rows deletes the
table's copy in its transaction: so the file is loaded only while nothing wrote
the rows since it was saved, and a crash or any other writer through this class sends
the next run back to reading every row (raw SQL on the file would leave the token:
write through :class:`History`).

Each run is one transaction; due URLs are marked as emitted in the same transaction,
which the caller commits only after writing them (at least once). A URL emitted and not
fetched since is emitted again only after max(interval, ``reemit``) (1 day), in case
the batch that carried it was lost. Version 1 (crawlkit before rate estimates) is
migrated in place when opened: two columns are added and each URL's checks and
changes become observations at its old interval, so its estimate starts where the
old history left it.
"""

from __future__ import annotations

import math
import secrets
import sqlite3
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field, replace
from email.utils import parsedate_to_datetime
from pathlib import Path
from typing import Any

import numpy as np

from crawlkit.errors import StateError
from crawlkit.recrawl import estimate, schema
from crawlkit.recrawl import policy as optimum
from crawlkit.recrawl.columns import SELECT, Columns, Table
from crawlkit.recrawl.inlists import in_lists
from crawlkit.times import DAY

__all__ = [
    "Entry",
    "Event",
    "History",
    "RecrawlPolicy",
    "Table",
    "apply_event",
    "estimate_entries",
    "hamming",
]

SCHEMA_VERSION = schema.SCHEMA_VERSION
COLUMNS_FILE = "columns.npz"
COLUMNS_TOKEN = "columns_token"  # in meta: the token of the columns.npz that holds the rows
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
    """Revisit rules; durations in seconds, rates and budgets per second.

    ``initial`` is the mean change interval assumed for a URL whose site has no
    estimate yet (the prior's centre). ``budget`` is the visits per second the
    recrawls of all URLs may spend (None: ``auto_budget`` per tracked URL, one a
    day); ``host_budget`` the visits per second one host allows (None: no cap).
    ``mu`` is the budget's multiplier, which the stage solves each run, and
    ``prior_weight`` the prior's weight in the estimates, ``(PRIOR_SPREAD/spread)²``
    for the spread the crawl's sites show (:func:`crawlkit.recrawl.plan.site_priors`).
    """

    initial: float = DAY
    min: float = 3600.0
    max: float = 90 * DAY
    near_bits: int = 3
    weights: tuple[float, ...] = (2.0, 4 / 3, 1.0, 2 / 3)
    reemit: float = DAY
    error_backoff: float = 3600.0
    budget: float | None = None
    auto_budget: float = 1 / DAY
    host_budget: float | None = None
    mu: float = 0.0
    prior_weight: float = 1.0

    def clamp(self, seconds: float) -> float:
        return min(self.max, max(self.min, seconds))

    def weight(self, importance: int) -> float:
        return self.weights[min(max(importance, 0), len(self.weights) - 1)]

    def interval(self, rate: float, importance: int) -> float:
        """The optimal revisit interval at ``mu`` for a page changing at ``rate``."""
        lam = np.array([rate])
        return float(
            optimum.intervals(lam, self.weight(importance), self.mu, self.min, self.max)[0]
        )


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
    interval: float = DAY
    changes: int = 0
    checks: int = 0
    errors: int = 0
    pending_change: bool = False
    due: float = 0.0
    emitted: float | None = None
    rate: float | None = None  # estimated changes per second (None: no estimate yet)
    observations: bytes | None = None  # estimate.pack()ed (interval, code) pairs
    observed: float | None = None  # the newest fetch or sitemap read (what is known)
    spread: float | None = None  # sd of log rate over its posterior (how sure the rate is)


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
GOOD_OUTCOMES = _NOT_MODIFIED | _FETCHED


def http_date(value: str | None) -> float | None:
    """An HTTP date (Last-Modified) as unix seconds; None when absent or unreadable."""
    if not value:
        return None
    try:
        return parsedate_to_datetime(value).timestamp()
    except (TypeError, ValueError, IndexError, OverflowError):
        return None


def apply_event(
    entry: Entry | None,
    event: Event,
    fp: int,
    policy: RecrawlPolicy,
    *,
    prior: float | None = None,
    estimate_now: bool = True,
) -> Entry | None:
    """The entry after ``event``; None when the event says nothing to track.

    ``prior`` is the change rate of the URL's site (per second; None: 1/``initial``).
    An event not newer than the entry's ``last_event`` returns the entry unchanged.
    With ``estimate_now`` False an entry whose rate needs estimating again gets a NaN
    rate, and the caller must pass it to :func:`estimate_entries` (one batch for
    many entries, much faster than one at a time).
    """
    if entry is not None and event.at <= entry.last_event:
        return entry
    if event.kind == "lastmod":
        return _apply_lastmod(entry, event, policy, prior, estimate_now)
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
    # A 304 the fetcher called an error (to a GET without validators: nothing was
    # captured) and a server error (500-599: a page's error, not its content, whose
    # digest became the page's and counted a change) back off as errors.
    status = event.status if isinstance(event.status, int) else None
    server_error = status is not None and 500 <= status <= 599
    not_modified = outcome in _NOT_MODIFIED or (status == 304 and outcome != "error")
    fetched = outcome in _FETCHED or (not outcome and status is not None)
    if not server_error and (not_modified or fetched):
        _apply_fetch(entry, new, event, not_modified, policy, prior, estimate_now)
    elif outcome == "deferred":
        new.due = event.retry_at if event.retry_at is not None else event.at + policy.error_backoff
        new.emitted = None
    elif outcome == "robots-denied":
        new.due = event.at + max(new.interval, DAY)
        new.emitted = None
    else:  # error, timeout, and outcomes this version does not know: back off
        new.errors += 1
        backoff = policy.error_backoff * 2 ** min(new.errors - 1, 30)
        new.due = event.at + min(max(backoff, policy.min), max(new.interval, policy.min))
        new.emitted = None
    return new


def _apply_lastmod(
    entry: Entry | None,
    event: Event,
    policy: RecrawlPolicy,
    prior: float | None,
    estimate_now: bool,
) -> Entry | None:
    """A sitemap read: a visit without a fetch. Its lastmod dates a change since the
    URL's last observation (fetch or read), or says there was none."""
    if entry is None or event.lastmod is None:
        return entry
    new = replace(entry, last_event=event.at)
    since = entry.observed if entry.observed is not None else entry.last_fetch
    if since is not None and not entry.pending_change and event.at > since:
        changed = event.lastmod > since
        code = estimate.UNCHANGED
        if changed:
            code = event.at - event.lastmod if event.lastmod < event.at else estimate.CHANGED
        obs = estimate.unpack(entry.observations)
        obs.append((event.at - since, code))
        new.observations = estimate.pack(obs)
        new.observed = event.at
        if estimate_now:
            _estimate(new, obs, prior, policy)
        else:
            new.rate = math.nan
    if (entry.last_fetch is None or event.lastmod > entry.last_fetch) and (
        entry.lastmod is None or event.lastmod > entry.lastmod
    ):
        new.lastmod = event.lastmod
        if not entry.pending_change:
            new.changes += 1
            new.pending_change = True
        new.due = min(entry.due, event.at)
    return new


def _changed(
    old: Entry, digest: str | None, event: Event, not_modified: bool, near: int
) -> bool | None:
    """Whether the page changed since ``old``'s fetch; None when nothing tells."""
    if (
        not_modified
        or (digest is not None and digest == old.digest)
        or (
            event.simhash is not None
            and old.simhash is not None
            and hamming(event.simhash, old.simhash) <= near
        )
    ):
        return False
    if (digest is None and event.simhash is None) or (old.digest is None and old.simhash is None):
        return None
    return True


def _apply_fetch(
    old: Entry | None,
    new: Entry,
    event: Event,
    not_modified: bool,
    policy: RecrawlPolicy,
    prior: float | None,
    estimate_now: bool,
) -> None:
    digest = event.digest
    if digest is None and event.outcome == "redirect" and event.extra.get("location"):
        digest = "redirect:" + str(event.extra["location"])
    if old is not None and old.last_fetch is not None:
        new.checks += 1
        changed = _changed(old, digest, event, not_modified, policy.near_bits)
        since = old.observed if old.observed is not None else old.last_fetch
        # A change a sitemap announced was counted and observed when it was read.
        if changed is True and not old.pending_change:
            new.changes += 1
        if changed is not None and event.at > since and not old.pending_change:
            obs = estimate.unpack(old.observations)
            obs.append((event.at - since, _code(old, event, changed)))
            new.observations = estimate.pack(obs)
    else:
        new.checks = 1
        modified = http_date(event.last_modified) if not not_modified else None
        if modified is not None and modified < event.at:
            # A first fetch's Last-Modified already says no change for that long, and
            # one then: a dated change seen over exactly that span.
            age = event.at - modified
            new.observations = estimate.pack([(age, age)])
    new.pending_change = False
    new.last_fetch = event.at
    new.observed = event.at
    new.errors = 0
    if not not_modified:
        # The response's validators replace the old ones, none included: an ETag the
        # server dropped, sent again as If-None-Match, made every later answer a 200
        # (If-None-Match outranks If-Modified-Since). A 304 keeps them.
        new.etag = event.etag
        new.last_modified = event.last_modified
    else:
        if event.etag is not None:
            new.etag = event.etag
        if event.last_modified is not None:
            new.last_modified = event.last_modified
    if digest is not None:
        new.digest = digest
    if event.simhash is not None:
        new.simhash = event.simhash
    new.emitted = None
    if estimate_now:
        _estimate(new, estimate.unpack(new.observations), prior, policy)
    else:
        new.due = event.at + new.interval  # until estimate_entries sets both
        new.rate = math.nan


def _estimate(
    new: Entry, obs: list[tuple[float, float]], prior: float | None, policy: RecrawlPolicy
) -> None:
    """The rate from ``obs``, and the interval and due time that follow from it."""
    t, c = estimate._matrix([obs])
    rates, spreads = estimate.summarize(t, c, prior or 1 / policy.initial, policy.prior_weight)
    new.rate, new.spread = float(rates[0]), float(spreads[0])
    _schedule(new, policy.interval(new.rate, new.importance))


def _schedule(new: Entry, interval: float) -> None:
    """The interval, and the due time it gives unless an error's backoff or a
    sitemap's announced change set one (the last event was the fetch, or it answered)."""
    new.interval = interval
    fetched_last = new.last_event == new.last_fetch or new.outcome in GOOD_OUTCOMES
    if new.last_fetch is not None and fetched_last and not new.pending_change:
        new.due = new.last_fetch + interval


def estimate_entries(
    entries: list[Entry], priors: list[float | None], policy: RecrawlPolicy
) -> None:
    """Give every entry with a NaN rate (``apply_event(..., estimate_now=False)``) its
    rate, interval and due time, as ``estimate_now`` would have, in one batch."""
    todo = [i for i, e in enumerate(entries) if e.rate is not None and math.isnan(e.rate)]
    if not todo:
        return
    obs = [estimate.unpack(entries[i].observations) for i in todo]
    t, c = estimate._matrix(obs)
    prior = np.array([priors[i] or 1 / policy.initial for i in todo])
    rates, spreads = estimate.summarize(t, c, prior, policy.prior_weight)
    weight = np.array([policy.weight(entries[i].importance) for i in todo])
    taus = optimum.intervals(rates, weight, policy.mu, policy.min, policy.max)
    for i, rate, spread, tau in zip(todo, rates, spreads, taus, strict=True):
        entries[i].rate = float(rate)
        entries[i].spread = float(spread)
        _schedule(entries[i], float(tau))


def _code(old: Entry, event: Event, changed: bool) -> float:
    """The observation's code: unchanged, changed, or the age of a dated change."""
    if not changed:
        return estimate.UNCHANGED
    assert old.last_fetch is not None
    since = old.observed if old.observed is not None else old.last_fetch
    when = http_date(event.last_modified)
    # A date counts only after the last observation: a server that sends the time of
    # the request, or an old one, says nothing about this change.
    if when is not None and since < when < event.at:
        return event.at - when
    return estimate.CHANGED


_FIELDS = list(Entry.__dataclass_fields__)
# The table's column of each field: importance has always been stored as "priority",
# and history tables written before keep opening.
_COLUMNS = ["priority" if f == "importance" else f for f in _FIELDS]


#: A stored site prior is rewritten once the plan's differs from it by more than this
#: share (as a URL's interval: ``plan.replan`` moves a due time past 1%). A prior is a
#: rate whose log has a spread of at least 0.5 (``plan.SPREAD_MIN``); 1% of the rate
#: is 0.01 in the log.
PRIOR_TOLERANCE = 0.01


def prior_moved(old: np.ndarray, new: np.ndarray) -> np.ndarray:
    """Where a site's prior appeared, went (NaN) or moved by more than
    :data:`PRIOR_TOLERANCE` of the old one."""
    with np.errstate(invalid="ignore"):
        far = np.abs(new - old) > PRIOR_TOLERANCE * np.abs(old)
    return np.asarray((np.isnan(old) != np.isnan(new)) | far)


class History:
    """The history table in ``DIR/recrawl/history.sqlite``; one transaction per commit.

    It may be used from a thread other than the one that opened it (``crawlkit crawl``
    opens it once and updates it from its post-processing thread), one at a time.
    A version 1 table is migrated when opened (see the module doc).
    """

    def __init__(self, directory: Path):
        directory.mkdir(parents=True, exist_ok=True)
        path = directory / "history.sqlite"
        self._columns: Columns | None = None  # the planning columns (table())
        self._version = -1
        self._snapshot = directory / COLUMNS_FILE
        self.columns_from = ""  # where table() read the columns: "file" or "table"
        # The site priors set_site_priors wrote last, by the site index of the kept
        # columns they were written for (compared with the next ones, so a cycle writes
        # only what moved): 8 bytes a site, where a dict of them was 45-62.
        self._priors: np.ndarray | None = None
        self._priors_of: Columns | None = None
        try:
            self.db = sqlite3.connect(path, isolation_level="DEFERRED", check_same_thread=False)
            self.db.execute("PRAGMA journal_mode=WAL")
            self.db.execute("PRAGMA synchronous=FULL")
            version = self.db.execute("PRAGMA user_version").fetchone()[0]
            if version == 0:
                schema.create(self.db)
            elif version == 1:
                schema.migrate_v1(self.db)
            elif version != SCHEMA_VERSION:
                raise StateError(
                    f"recrawl history {path} has version {version}; this crawlkit reads "
                    f"versions 1 and {SCHEMA_VERSION}"
                )
            schema.add_spread(self.db)
        except sqlite3.DatabaseError as exc:
            raise StateError(f"recrawl history {path} is unreadable: {exc}") from exc

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
            values = {f: getattr(entry, f) for f in _FIELDS}  # (asdict deep-copies: slow)
            values["fp"] = _signed(entry.fp)
            if entry.simhash is not None:
                values["simhash"] = _signed(entry.simhash)
            values["pending_change"] = int(entry.pending_change)
            rows.append(tuple(values.values()))
        marks = ", ".join("?" for _ in _COLUMNS)
        self._write(
            f"INSERT OR REPLACE INTO history ({', '.join(_COLUMNS)}) VALUES ({marks})", rows
        )
        if self._columns is not None:
            self._columns.put(entries)

    def entries(self, fps: list[int]) -> Iterator[Entry]:
        """The entries of ``fps`` (those tracked), in no particular order."""
        columns = ", ".join(_COLUMNS)
        for marks, chunk in in_lists([_signed(fp) for fp in fps]):
            sql = f"SELECT {columns} FROM history WHERE fp IN ({marks})"
            for row in self.db.execute(sql, chunk):
                yield self._entry(row)

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

    def table(self) -> Table:
        """Every URL's planning columns as arrays: read once, then kept in step with
        this object's writes (:mod:`crawlkit.recrawl.columns`); read again when
        another connection has committed to the file since."""
        version = self.db.execute("PRAGMA data_version").fetchone()[0]
        if self._columns is None or version != self._version:
            token = self.meta(COLUMNS_TOKEN)
            loaded = None
            if self._columns is None and token is not None:
                loaded = Columns.load(self._snapshot, token, GOOD_OUTCOMES)
            self.columns_from = "file" if loaded is not None else "table"
            self._columns = loaded or Columns(self.db.execute(SELECT).fetchall(), GOOD_OUTCOMES)
            self._version = version
        return self._columns.table()

    def _write(self, sql: str, rows: list[tuple[Any, ...]]) -> None:
        try:
            self._rows_written()
            self.db.executemany(sql, rows)
        except BaseException:
            self._columns = None  # some rows may be written: read them again
            raise

    def _rows_written(self) -> None:
        """Before a write to the rows: the saved columns no longer hold what the table
        does (their token goes in the same transaction; one row's delete a call)."""
        self.db.execute("DELETE FROM meta WHERE key = ?", (COLUMNS_TOKEN,))

    def save_columns(self) -> bool:
        """Write the kept planning columns to ``columns.npz`` for the next run, when
        they are those of the committed table; True if written. (A failure to write
        costs the next run a read of every row, nothing more.)"""
        if self._columns is None or self.db.in_transaction:
            return False
        token = float(secrets.randbits(52))
        try:
            # Holding the write lock, so no other connection commits between the check
            # and the token.
            self.db.execute("BEGIN IMMEDIATE")
            if self.db.execute("PRAGMA data_version").fetchone()[0] != self._version:
                self.db.rollback()
                return False  # another connection committed since they were read
            self.set_meta(COLUMNS_TOKEN, token)
            self.db.commit()  # before the file: a crash between leaves them apart
            self._columns.save(self._snapshot, token)
        except (OSError, sqlite3.Error):
            if self.db.in_transaction:
                self.db.rollback()
            return False
        return True

    def set_schedule(self, fps: np.ndarray, intervals: np.ndarray, dues: np.ndarray) -> None:
        self._write(
            "UPDATE history SET interval = ?, due = ? WHERE fp = ?",
            [
                (float(i), float(d), _signed(int(fp)))
                for fp, i, d in zip(fps, intervals, dues, strict=True)
            ],
        )
        if self._columns is not None:
            self._columns.set_schedule(fps, intervals, dues)

    def meta(self, key: str) -> float | None:
        row = self.db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return None if row is None else float(row[0])

    def set_meta(self, key: str, value: float) -> None:
        self.db.execute("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", (key, value))

    def site_rates(self, sites: Iterable[str] | None = None) -> dict[str, float]:
        """The sites table: the priors of ``sites`` that have one, or of every site
        (None)."""
        if sites is None:
            return {str(s): float(r) for s, r in self.db.execute("SELECT site, rate FROM sites")}
        rates: dict[str, float] = {}
        for marks, chunk in in_lists(list(set(sites))):
            sql = f"SELECT site, rate FROM sites WHERE site IN ({marks})"
            rates.update((str(s), float(r)) for s, r in self.db.execute(sql, chunk))
        return rates

    def set_site_rates(self, rates: dict[str, float]) -> None:
        """The table of site priors becomes ``rates``: only the rows that differ are
        written (a crawl plans every cycle and most sites' priors stay as they were;
        deleting and inserting every row, and reading them back, was the cost)."""
        self._priors = self._priors_of = None
        old = self.site_rates()
        gone = [(site,) for site in old if site not in rates]
        changed = [(site, rate) for site, rate in rates.items() if old.get(site) != rate]
        self._write_site_rates(gone, changed)

    def set_site_priors(self, sites: list[str], priors: np.ndarray) -> None:
        """The plan's priors, stored: ``priors[i]`` is the prior of ``sites[i]`` (NaN:
        none), numbered as the kept columns' ``site_ix``. A stored prior is rewritten
        only once the plan's has moved by more than :data:`PRIOR_TOLERANCE` of it,
        appeared or gone (a site's prior leans on the crawl's, which moves a little at
        every cycle: rewriting every site's row whenever it did cost a 15,000-site
        crawl 15,000 rows a cycle). Compared with the priors this stored last while
        those columns are the same, else with the table on disk."""
        kept = self._priors
        if kept is None or self._priors_of is not self._columns or len(kept) > len(priors):
            stored = self.site_rates()
            old = np.array([stored.pop(n, math.nan) for n in sites], np.float64)
            gone = [(site,) for site in stored]  # on disk, not among the columns' sites
        else:
            old = np.full(len(priors), np.nan)
            old[: len(kept)] = kept
            gone = []
        moved = prior_moved(old, priors)
        rows = moved.nonzero()[0].tolist()
        gone += [(sites[i],) for i in rows if math.isnan(priors[i])]
        changed = [(sites[i], float(priors[i])) for i in rows if not math.isnan(priors[i])]
        self._write_site_rates(gone, changed)
        self._priors, self._priors_of = np.where(moved, priors, old), self._columns

    def _write_site_rates(self, gone: list[tuple[str]], changed: list[tuple[str, float]]) -> None:
        try:
            if gone:
                self.db.executemany("DELETE FROM sites WHERE site = ?", gone)
            if changed:
                self.db.executemany(
                    "INSERT OR REPLACE INTO sites (site, rate) VALUES (?, ?)", changed
                )
        except BaseException:
            self._priors = self._priors_of = None  # some rows may be written
            raise

    def mark_emitted(self, fps: list[int], now: float) -> None:
        self._write(
            "UPDATE history SET emitted = ? WHERE fp = ?", [(now, _signed(fp)) for fp in fps]
        )
        if self._columns is not None:
            self._columns.mark_emitted(fps, now)

    def count(self) -> int:
        return int(self.db.execute("SELECT COUNT(*) FROM history").fetchone()[0])

    def commit(self) -> None:
        self.db.commit()

    def rollback(self) -> None:
        """Undo the writes since the last commit (and forget the kept columns)."""
        self.db.rollback()
        self._columns = None
        self._priors = self._priors_of = None

    def close(self, *, save: bool = True) -> None:
        """Close the table, saving the planning columns (:meth:`save_columns`) unless
        ``save`` is False (a reader that must not write)."""
        if save:
            self.save_columns()
        self._columns = None
        self.db.close()
