"""The dedup and recrawl steps in a process of their own, which owns their stores.

The post thread shares this process's interpreter lock with the fetch loop and the
WARC writer, and it sets the crawl's pace. Its dedup and recrawl steps read the
cycle's pages, and update stores no other step touches: the dedup index, and the
recrawl history (update each URL's entry, solve the budget's μ, pick the URLs due).
Together they were 36% of its time under the lock (py-spy ``--gil``, issue 27). Here
a process of its own runs them: the post thread hands it the cycle's directory and
waits without the lock, and gets back the records to queue (site records, due URLs).

Each step is the same function on the same files as the stage's (:func:`dedup_cycle`,
:func:`recrawl_cycle`), with the same commits: the dedup index commits before its
records are renamed into place (a step run again finds its pages in the index and
decides them the same way), the history only after the due URLs are written to the
cycle's ``recrawl-due.ndjson.zst``, so a crash re-emits rather than loses
(``docs/design.md`` invariant 4).

The history is SQLite in WAL mode: the crawl process keeps its own connection for what
it reads before post-processing starts (the seeds never fetched, due retries) and sees
what this process committed. The dedup index is files this process alone opens. If the
process dies, the post thread runs the steps itself for the rest of the run, on its own
connection to the history and the dedup index opened then: what the dead process had
not committed is gone (SQLite rolls it back; the index keeps its last commit), and the
step that was cut runs again.

The dedup index has one writer at a time, and its lock (``STATE/dedup/LOCK``) says
which: this process holds it for its whole life, the crawl process only once it opens
the index itself. A crawl's state lock does not cover this process: killed, the crawl
lets go of it at once, while its step process lives on until its orphan watch sees the
crawl gone (half a second, more on a busy machine) and may be inside a commit meanwhile.
The next run's writer waits for it (:func:`~crawlkit.stages.dedup.lock_dedup_writer`)
instead of opening the index beside it.
"""

from __future__ import annotations

import concurrent.futures as cf
import contextlib
import itertools
import multiprocessing
import os
import signal
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar, cast

import orjson

from crawlkit import streams
from crawlkit.collector import collect_by_clock
from crawlkit.crawl.files import read_file, write_file
from crawlkit.dedup.store import DedupStore
from crawlkit.diag import Reporter
from crawlkit.errors import InputError, LockedError
from crawlkit.heap import map_large_blocks, release_free_heap
from crawlkit.records import PageRecord
from crawlkit.recrawl import History
from crawlkit.stages.dedup import DedupStats, dedup_records, lock_dedup_writer, site_records
from crawlkit.stages.extract_page import end_with_owner
from crawlkit.stages.recrawl import recrawl_in
from crawlkit.state import StateDir
from crawlkit.streams import Record

__all__ = [
    "DUE",
    "Deduped",
    "Started",
    "StepProcess",
    "cycle_observations",
    "dedup_cycle",
    "recrawl_cycle",
]

# (kind, message) of each line a step reported, "info" for Reporter.info
Report = tuple[str, str]
T = TypeVar("T")
# A step started in the step process: its result and what it reported.
Started = cf.Future[tuple[T, list[Report]]]


@dataclass
class Deduped:
    """What the dedup step of a cycle gives the crawl: the site records to queue and
    the counts (its dedup records are in the cycle's ``dedup.ndjson.zst``)."""

    sites: list[Record] = field(default_factory=list)
    exact: int = 0
    near: int = 0
    unique: int = 0


def dedup_cycle(store: DedupStore, cycle: Path, reporter: Reporter) -> Deduped:
    """The dedup step on ``cycle``'s pages: exact and near duplicates written to its
    ``dedup.ndjson.zst``, the index committed, its sites' records written to
    ``sites.ndjson.zst`` and returned."""
    stats = DedupStats()
    records = cast(
        "Iterator[tuple[str, int, PageRecord]]",
        streams.read_records_with_lines([cycle / "pages.ndjson.zst"], reporter),
    )
    write_file(
        cycle / "dedup.ndjson.zst", dedup_records(records, store, stats=stats, reporter=reporter)
    )
    sites = cast("list[Record]", list(site_records(store, stats.sites)))
    write_file(cycle / "sites.ndjson.zst", sites)
    return Deduped(sites, stats.exact, stats.near, stats.unique)


def cycle_observations(
    logged: Iterable[tuple[str, int, Record]],
    pages: Path,
    reporter: Reporter,
    links: Path | None = None,
) -> Iterator[tuple[str, int, Record]]:
    """What the recrawl history learns from a cycle: its fetch records (``logged``),
    page records, and the sitemap entries among its ``links`` that carry a
    ``lastmod`` (a known page's lastmod newer than its last fetch makes it due: it
    was dropped by seen-merge before, and the page waited its whole interval), each
    with its source and line. Deferred URLs wait in the waiting room alone: fed to
    the history too, they would become due a second time, as recrawls."""
    return (
        item
        for item in itertools.chain(
            logged,
            # (no path at all would read stdin)
            streams.read_records_with_lines([pages], reporter) if pages.exists() else (),
            _lastmods(links, reporter) if links is not None and links.exists() else (),
        )
        if item[2].get("outcome") != "deferred"
    )


def _lastmods(
    links: Path, reporter: Reporter, block: int = 1 << 20
) -> Iterator[tuple[str, int, Record]]:
    """The link records of ``links`` with a ``lastmod`` (sitemap entries); the other
    lines, most of them, are passed over without being parsed.

    Most cycles have none: the file is first searched for the key ``block`` bytes at
    a time, and read line by line only if it is there (reading every line of a cycle's
    ~8,700 links took a fifth of the step process's CPU)."""
    if not _holds(links, b'"lastmod"', block):
        return
    source = str(links)
    with contextlib.closing(streams.open_input(links)) as stream:
        for number, line in streams.iter_lines(stream, source, reporter):
            if line and b'"lastmod"' in line:
                try:
                    rec = orjson.loads(line)
                except orjson.JSONDecodeError:
                    continue  # (the links step reports it)
                if isinstance(rec, dict) and rec.get("lastmod") is not None:
                    yield source, number, rec


def _holds(path: Path, needle: bytes, block: int) -> bool:
    """Whether the (decompressed) bytes of ``path`` hold ``needle``; a damaged file
    says yes, so that the line-by-line reader meets and reports the damage."""
    overlap = len(needle) - 1
    tail = b""
    try:
        with contextlib.closing(streams.open_input(path)) as stream:
            while data := stream.read(block):
                if needle in tail + data[:overlap] or needle in data:
                    return True
                tail = (tail + data)[-overlap:]
    except InputError:
        return True
    return False


DUE = "recrawl-due.ndjson.zst"  # in a cycle: the URLs its recrawl step emitted


def recrawl_cycle(
    history: History,
    cycle: Path,
    now: float,
    hold_mu: float,
    reporter: Reporter,
    logged: Iterable[tuple[str, int, Record]] | None = None,
) -> list[Record]:
    """The recrawl step on ``cycle``'s files (its fetch log, unless ``logged`` gives
    it parsed): the history updated and committed, the URL records due at ``now``
    returned.

    They are written to the cycle's ``recrawl-due.ndjson.zst`` before the history
    commits (the history marks them emitted, and does not emit them again for a day),
    with those an earlier attempt wrote there: a step run again after a crash, however
    late, returns every URL any attempt emitted (at least once; the frontier queues a
    recrawl of a URL once).
    """
    due: list[Record] = list(read_file(cycle / DUE))

    def keep(records: list[Record]) -> None:
        due.extend(records)
        write_file(cycle / DUE, due)

    if logged is None:
        logged = streams.read_records_with_lines([cycle / "fetch.ndjson"], reporter)
    recrawl_in(
        history,
        cycle_observations(
            logged, cycle / "pages.ndjson.zst", reporter, cycle / "links.ndjson.zst"
        ),
        write=keep,
        now=now,
        reporter=reporter,
        hold_mu=hold_mu,
    )
    return due


class StepProcess:
    """One process that owns the dedup index of ``dedup_dir`` and the recrawl history
    of ``history_dir`` and runs their steps for the post thread, one at a time in the
    order they were started. It starts on the first step and stays until
    :meth:`close`.

    A step is started (``start_*``) and its result taken (:meth:`take`) later, so the
    post thread can work on something else meanwhile. Either gives None if the process
    died (now or before): the caller then runs the step itself.
    """

    def __init__(self, dedup_dir: Path, history_dir: Path):
        self.dedup_dir = dedup_dir
        self.history_dir = history_dir
        self._pool: cf.ProcessPoolExecutor | None = None
        self.died = False

    def start_dedup(self, cycle: Path) -> Started[Deduped] | None:
        """:func:`dedup_cycle` on ``cycle``."""
        return self._start(_dedup, str(cycle))

    def start_recrawl(
        self, cycle: Path, now: float, hold_mu: float
    ) -> Started[list[Record]] | None:
        """:func:`recrawl_cycle` on ``cycle``."""
        return self._start(_recrawl, str(cycle), now, hold_mu)

    def take(self, started: Started[T] | None, reporter: Reporter) -> T | None:
        """The result of a started step (waiting for it); its diagnostics go to
        ``reporter``."""
        if started is None:
            return None
        try:
            result, reports = started.result()
        except cf.process.BrokenProcessPool:
            self._died()
            return None
        for kind, message in reports:
            if kind == "info":
                reporter.info(message)
            else:
                reporter.warn(message, kind)
        return result

    def _start(self, step: Callable[..., tuple[T, list[Report]]], *args: Any) -> Started[T] | None:
        if self.died:
            return None
        if self._pool is None:
            self._pool = _start_pool(self.dedup_dir, self.history_dir)
        try:
            return self._pool.submit(step, *args)
        except cf.process.BrokenProcessPool:
            self._died()
            return None

    def _died(self) -> None:
        self.died = True
        self.close()

    def close(self) -> None:
        """Stop the process, once the steps started have ended; a process still alive
        first closes the recrawl history, which saves its planning columns for the
        next run (:meth:`crawlkit.recrawl.history.History.save_columns`)."""
        if self._pool is None:
            return
        if not self.died:
            with contextlib.suppress(cf.process.BrokenProcessPool, RuntimeError):
                self._pool.submit(_close_history).result()
        self._pool.shutdown(wait=True, cancel_futures=True)
        self._pool = None


def _start_pool(dedup_dir: Path, history_dir: Path) -> cf.ProcessPoolExecutor:
    # Not forked from this process: it has threads (a fork copies the locks they
    # hold) and holds the state lock, which a forked child would keep after a crash of
    # the crawl. From the fork server the extract processes start from, if there is one.
    methods = multiprocessing.get_all_start_methods()
    context = multiprocessing.get_context("forkserver" if "forkserver" in methods else "spawn")
    return cf.ProcessPoolExecutor(
        max_workers=1,
        mp_context=context,
        initializer=_open_stores,
        initargs=(str(dedup_dir), str(history_dir), os.getpid()),
    )


class _Recording(Reporter):
    """A reporter that counts and keeps every line, for the crawl's own reporter to
    say (counted here too: dedup counts its skipped records by the reporter's count)."""

    def __init__(self) -> None:
        super().__init__()
        self.lines: list[Report] = []

    def warn(self, message: str, kind: str = "warning") -> None:
        self.counts[kind] += 1
        self.lines.append((kind, message))

    def info(self, message: str) -> None:
        self.lines.append(("info", message))


# In the step process: the run's stores, opened once, and the dedup index's lock.
_dedup_lock: StateDir | None = None
_dedup_store: DedupStore | None = None
_history: History | None = None


def _open_stores(dedup_dir: str, history_dir: str, owner: int) -> None:
    global _dedup_lock, _dedup_store, _history
    # Ctrl-C reaches the whole process group; the crawl decides what it means.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    end_with_owner(owner)
    map_large_blocks()  # as in the crawl process: a long run's freed blocks go back
    # The crawl holds the state directory's lock; the dedup index's is this process's
    # for its life (a step process of a crawl killed a moment ago may still hold it).
    said = Reporter("crawlkit crawl")
    try:
        _dedup_lock = lock_dedup_writer(Path(dedup_dir), said)
    except LockedError as exc:
        # One line rather than the pool's traceback of a failed initializer: the crawl
        # finds this process gone and runs the steps itself, once the lock is free.
        said.warn(str(exc))
        os._exit(1)
    _dedup_store = DedupStore(dedup_dir)
    _history = History(Path(history_dir))
    collect_by_clock()  # as in the crawl process (crawlkit/collector.py)


def _dedup(cycle: str) -> tuple[Deduped, list[Report]]:
    assert _dedup_store is not None  # opened by the pool's initializer
    recording = _Recording()
    done = dedup_cycle(_dedup_store, Path(cycle), recording)
    release_free_heap()
    return done, recording.lines


def _close_history() -> None:
    global _history
    if _history is not None:
        _history.close()
        _history = None


def _recrawl(cycle: str, now: float, hold_mu: float) -> tuple[list[Record], list[Report]]:
    assert _history is not None  # opened by the pool's initializer
    recording = _Recording()
    due = recrawl_cycle(_history, Path(cycle), now, hold_mu, recording)
    release_free_heap()
    return due, recording.lines
