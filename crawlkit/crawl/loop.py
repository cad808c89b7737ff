"""``crawlkit crawl``: the whole loop in one command, as a composition of the stages.

A crawl is a state directory and a sequence of *cycles*. Each cycle runs the steps of
:data:`crawlkit.crawl.steps.STEPS` (the DESIGN.md pipeline) with the stages' own
library functions, on the same state directory:

    frontier next  →  fetch  →  extract  →  dedup  →  seen-merge  →  frontier add
                                                         recrawl  →  frontier add

and leaves its files in ``STATE/crawl/cycles/NNNNNN/`` (the batch, the fetch log,
page, link, dedup and refusal records), so every cycle can be inspected, replayed or
re-run by hand with the stage commands (``crawlkit crawl --explain`` prints them,
from the same list). The frontier is opened once per run and committed after every
change; the other stores are still opened by the stage functions they belong to.

Resumable (DESIGN.md invariants 1 and 5): a cycle's steps run in order and each
marks itself done with a file; a restarted crawl finishes the open cycle first. The
fetch log is appended and flushed per record, so after a crash only the URLs whose
fetch was in flight (or whose WARC record did not reach the disk) are fetched again;
they are counted as ``refetched``. Host clocks live in the fetch stage's state, so a
restart never hits a host inside its gap (invariant 2).

Deferred URLs (a host backing off, robots.txt unavailable, the run's end) wait in
one place, the waiting room (:mod:`crawlkit.crawl.waiting`), until their ``retry_at``
and then go back to the frontier once; nothing is dropped, nothing queued twice.
URLs outside ``--scope`` are refused with a reason.

Bounded (DESIGN.md invariant 8): the fetcher holds at most ``--per-host`` URLs of a
host it has not answered (and :attr:`Crawl.hold` in all, a memory bound), and while
post-processing has ``POST_BACKLOG`` cut cycles waiting it gets no more, so the
fetcher slows to the pace of post-processing. A run with ``--for`` stops fetching at
its deadline and post-processing ``STOP_GRACE`` seconds later; what is left is
finished by the next run (a cycle's steps are marked done one by one), never lost.
"""

from __future__ import annotations

import asyncio
import concurrent.futures as cf
import contextlib
import itertools
import os
import queue
import re
import shutil
import signal
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from crawlkit import io
from crawlkit.crawl.archive import ArchiveOptions, LinkPolicy, update_collection_index
from crawlkit.crawl.retry import ErrorTally, retry_records
from crawlkit.crawl.steps import POST_STEPS, ExplainContext, render
from crawlkit.crawl.waiting import WaitingRoom
from crawlkit.dedup.store import DedupStore
from crawlkit.diag import NullReporter, Reporter
from crawlkit.errors import InvalidURL, UsageError
from crawlkit.fetch.engine import FetchConfig
from crawlkit.fetch.netoptions import NetOptions
from crawlkit.frontier.budgets import BudgetPolicy
from crawlkit.frontier.store import Frontier, NextOptions
from crawlkit.frontier.traps import TrapLimits
from crawlkit.io import Record
from crawlkit.shard.routing import (
    ShardRole,
    inbox_files,
    role_from_options,
    split_by_owner,
    write_outbox,
)
from crawlkit.stages.dedup import DedupStats, dedup_records, site_records
from crawlkit.stages.extract import ExtractOptions, ExtractWorkers, FilesResult, extract_warcs
from crawlkit.stages.fetch import fetch_records, warc_new_dir
from crawlkit.stages.recrawl import recrawl
from crawlkit.stages.report_collection import record_settings
from crawlkit.stages.seen_merge import fresh_records
from crawlkit.state import StateDir, open_state
from crawlkit.times import iso
from crawlkit.url import Canonicalizer, site_of_url
from crawlkit.warc.salvage import cut_to_whole_records

__all__ = ["CrawlOptions", "CrawlSummary", "Scope", "crawl", "explain"]

CYCLE_FORMAT = "{:06d}"
# A cycle is cut (WARC closed, handed to post-processing) after this many fetch
# records or this many seconds, whichever comes first.
CHUNK_RECORDS = 500
CHUNK_SECONDS = 2.0
# URLs the fetcher may hold unanswered, per request it may have in flight: a bound
# on memory; what spreads them over the hosts is ``--per-host`` (per host at once).
HOLD_PER_SLOT = 64
# Cut cycles waiting for post-processing before the fetcher gets no more URLs.
POST_BACKLOG = 2
# Seconds post-processing may go on past the deadline (or a signal) before it stops
# between two steps and leaves the rest to the next run.
STOP_GRACE = 5.0


class Scope:
    """Which discovered URLs a crawl follows: ``host``, ``site``, ``any`` or a regex.

    ``host`` and ``site`` are relative to the seeds (their hosts, or their registered
    domains). A regex is searched in the canonical URL.
    """

    def __init__(self, spec: str):
        self.spec = spec
        self.hosts: set[str] = set()
        self.sites: set[str] = set()
        self.regex: re.Pattern[str] | None = None
        if spec not in ("host", "site", "any"):
            try:
                self.regex = re.compile(spec)
            except re.error as exc:
                raise UsageError(f"--scope: not host, site, any or a valid regex: {exc}") from exc

    def add_seed(self, record: Record) -> None:
        self.hosts.add(str(record.get("host")))
        self.sites.add(str(record.get("site")))

    def allows(self, record: Record) -> bool:
        if self.spec == "any":
            return True
        if self.spec == "host":
            return record.get("host") in self.hosts
        if self.spec == "site":
            return record.get("site") in self.sites
        assert self.regex is not None
        return bool(self.regex.search(str(record.get("url"))))

    def to_json(self) -> dict[str, Any]:
        return {"spec": self.spec, "hosts": sorted(self.hosts), "sites": sorted(self.sites)}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Scope:
        scope = cls(data["spec"])
        scope.hosts = set(data.get("hosts", []))
        scope.sites = set(data.get("sites", []))
        return scope


@dataclass
class CrawlOptions:
    """Every knob of ``crawlkit crawl``, with explicit defaults (see the CLI's help)."""

    scope: str = "site"
    max_pages: int | None = None
    duration: float | None = None
    batch_size: int = 1000
    per_host: int = 4  # URLs of one host per batch handed to the fetcher
    jobs: int = 1
    budgets: bool = True
    warc_dir: Path | None = None
    warc_size: int = 1_000_000_000  # a new WARC file past this size
    warc_prefix: str = "crawlkit"
    warc_info: dict[str, str] = field(default_factory=dict)  # operator, isPartOf, ...
    fetch: FetchConfig = field(default_factory=FetchConfig)
    allow_net: tuple[str, ...] = ()
    hosts_file: Path | None = None
    net: NetOptions = field(default_factory=NetOptions)  # --ca-file, --insecure, --dns-server
    limits: TrapLimits = field(default_factory=TrapLimits)
    budget_policy: BudgetPolicy = field(default_factory=BudgetPolicy)
    idle_wait: float = 5.0  # longest sleep while only deferred URLs wait
    recrawl: bool = True
    shard: int | None = None  # crawl only this shard's sites (with shards or slot_map)
    shards: int | None = None
    slot_map: Path | None = None
    archive: ArchiveOptions = field(default_factory=ArchiveOptions)  # requisites, excludes


@dataclass
class CrawlSummary:
    """What a run did (``--json`` prints it); ``outcomes`` counts fetch records."""

    cycles: int = 0
    outcomes: Counter[str] = field(default_factory=Counter)
    pages: int = 0
    links: int = 0
    new_urls: int = 0
    refused: Counter[str] = field(default_factory=Counter)
    dedup: Counter[str] = field(default_factory=Counter)
    refetched: int = 0
    requests: int = 0  # fetch records with an HTTP status: what the server saw
    unstarted: int = 0  # deferred because the run ended before their host was due
    waiting: int = 0
    next_retry_at: str | None = None  # when the first waiting URL is due (UTC ISO)
    queued: int = 0
    stopped: str = ""
    routed: int = 0  # URLs written to other shards' outboxes
    elapsed_s: float = 0.0
    warc_files: int = 0
    seen: Counter[str] = field(default_factory=Counter)  # seen-merge counters, summed
    errors: ErrorTally = field(default_factory=ErrorTally)  # failed fetches by reason

    def to_json(self) -> dict[str, Any]:
        return {
            "cycles": self.cycles,
            "outcomes": dict(self.outcomes),
            "fetched": self.outcomes["fetched"],
            "pages": self.pages,
            "links": self.links,
            "new_urls": self.new_urls,
            "refused": dict(self.refused),
            "dedup": dict(self.dedup),
            "refetched": self.refetched,
            "requests": self.requests,
            "unstarted": self.unstarted,
            "routed_to_other_shards": self.routed,
            "waiting": self.waiting,
            "next_retry_at": self.next_retry_at,
            "queued": self.queued,
            "stopped": self.stopped,
            "elapsed_s": round(self.elapsed_s, 3),
            "warc_files": self.warc_files,
            "seen": dict(self.seen),
            "errors": self.errors.to_json(),
        }


# ---------------------------------------------------------------------------------------
# files of a crawl


class CrawlDir:
    """The ``STATE/crawl`` directory: cycles, the waiting room, totals, the scope."""

    def __init__(self, state: StateDir):
        self.root = state.sub("crawl")
        self.cycles = self.root / "cycles"
        self.cycles.mkdir(exist_ok=True)
        self.batches = self.root / "batches"  # handed to the fetcher, not all fetched yet
        self.batches.mkdir(exist_ok=True)
        self.admitted = self.root / "admitted"  # marked seen, not yet queued
        self.admitted.mkdir(exist_ok=True)

    def batch_files(self) -> list[Path]:
        return sorted(self.batches.glob("*.ndjson.zst"))

    def cycle_dirs(self) -> list[Path]:
        return sorted(p for p in self.cycles.iterdir() if p.is_dir() and p.name.isdigit())

    def open_cycle(self) -> Path | None:
        """The last cycle if it is unfinished, else None."""
        dirs = self.cycle_dirs()
        if dirs and not (dirs[-1] / "cycle.done").exists():
            return dirs[-1]
        return None

    def new_cycle(self) -> Path:
        dirs = self.cycle_dirs()
        number = int(dirs[-1].name) + 1 if dirs else 1
        path = self.cycles / CYCLE_FORMAT.format(number)
        path.mkdir()
        return path

    @property
    def waiting(self) -> Path:
        return self.root / "waiting.ndjson.zst"

    @property
    def totals(self) -> Path:
        return self.root / "totals.json"

    @property
    def scope(self) -> Path:
        return self.root / "scope.json"


def _done(cycle: Path, step: str) -> bool:
    return (cycle / f"{step}.done").exists()


def _mark(cycle: Path, step: str, info: dict[str, Any] | None = None) -> None:
    io.atomic_write_bytes(cycle / f"{step}.done", orjson.dumps(info or {}) + b"\n")


def _read(path: Path) -> Iterator[Record]:
    if path.exists():
        yield from io.read_records([path])


def _write(path: Path, records: Iterable[Record]) -> int:
    with io.open_output(path) as out:
        return out.write_records(records)


# ---------------------------------------------------------------------------------------
# the crawl


class Crawl:
    """One run of ``crawlkit crawl`` over a locked state directory."""

    def __init__(
        self,
        state: StateDir,
        options: CrawlOptions,
        *,
        reporter: Reporter,
        progress: Callable[[dict[str, Any]], None] | None = None,
        clock: Callable[[], float] = time.time,
    ):
        self.state = state
        self.opts = options
        self.rep = reporter
        self.progress = progress or (lambda info: None)
        self.clock = clock
        self.dir = CrawlDir(state)
        self.canon = Canonicalizer()
        self.summary = CrawlSummary()
        self.start = clock()
        self.deadline = self.start + options.duration if options.duration else None
        self.warc_root = Path(options.warc_dir) if options.warc_dir else state.path / "warc"
        self.frontier_lock = threading.RLock()  # frontier and waiting room, across threads
        # The frontier is opened once for the run (the state directory is locked by
        # it) and committed after every change; stage commands open it by path.
        self.frontier = Frontier.open(
            state.sub("frontier"), policy=options.budget_policy, limits=options.limits
        )
        self.post_error: BaseException | None = None
        self._pending_batches: list[Path] = []
        self._batch_numbers = itertools.count(1)  # 0 names the batch a recovery requeues
        self.interrupted = ""  # the name of the signal that asked the run to stop
        # With -j N >= 2, N extract processes live for the whole run and a cycle's
        # extract starts the moment it is cut (see _start_extract).
        self.extract_workers = ExtractWorkers(options.jobs) if options.jobs >= 2 else None
        self._extracting: dict[Path, tuple[list[Any], cf.Future[FilesResult]]] = {}
        totals = io.read_json(self.dir.totals) if self.dir.totals.exists() else {}
        self.fetched_before = int(totals.get("fetched", 0))
        self.requests_before = int(totals.get("requests", totals.get("fetched", 0)))
        self.waiting = WaitingRoom(self.dir.waiting)
        # URLs handed to the fetcher and not answered yet, and the most it may hold:
        # enough to keep every due host busy, small enough that a stop leaves little.
        self.held = 0
        self.frontier_version = 0  # counts additions to the frontier
        self.held_by_host: Counter[str] = Counter()  # the same, per host (frontier's key)
        self.hold = HOLD_PER_SLOT * options.fetch.concurrency
        self.post_backlog = 0  # cut cycles not yet post-processed
        # Post-processing stops between two steps after this (the next run goes on).
        self.hard_stop = self.deadline + STOP_GRACE if self.deadline else float("inf")
        self.role = self._shard_role(state.path, options)
        self.scope = Scope(options.scope)
        self.link_policy = LinkPolicy(options.archive, reporter)
        if self.dir.scope.exists():
            saved = Scope.from_json(io.read_json(self.dir.scope))
            if saved.spec != options.scope:
                self.rep.info(
                    f"scope {saved.spec!r} of the running crawl kept (not {options.scope!r})"
                )
            self.scope = saved

    @staticmethod
    def _shard_role(path: Path, options: CrawlOptions) -> ShardRole | None:
        return role_from_options(path, options.shard, options.shards, options.slot_map)

    def _route(self, records: list[Record], tag: str) -> list[Record]:
        """This shard's records; the others go to the outboxes of their shards."""
        if self.role is None:
            return records
        mine, others = split_by_owner(self.role, records)
        if others:
            self.summary.routed += write_outbox(self.state.path, others, tag)
        return mine

    def _ingest_inbox(self) -> bool:
        """Queue the URLs other shards (or a handoff) delivered; True if there were any."""
        files = inbox_files(self.state.path, self.rep)
        for path in files:
            records = list(_read(path))
            # Delivered links (and other shards' site links) complete this shard's site
            # graph, on which site budgets rest; then the URLs among them are admitted.
            self._note_links(records)
            urls = [r for r in records if r.get("url")]
            mine = self._route(urls, "reroute")
            self.summary.new_urls += self._admit(mine, "inbox")
            path.unlink()
        return bool(files)

    def _share_site_links(self, links: list[Record], tag: str) -> None:
        """Send the cycle's cross-site links, as site pairs, to every other shard.

        Site budgets trust a site by who links to it, transitively from the seeds, so
        each shard needs the whole site graph, not only the links to its own sites
        (which reach it as URLs): one record per distinct pair ``from`` -> ``site``.
        """
        if self.role is None or self.role.slot_map.shards < 2:
            return
        pairs: set[tuple[str, str]] = set()
        for rec in links:
            if rec.get("nofollow") is True:
                continue
            site = rec.get("site")
            source = rec.get("from") or rec.get("via")
            if not isinstance(site, str) or not isinstance(source, str):
                continue
            from_site = site_of_url(source)
            if from_site and from_site != site:
                pairs.add((from_site, site))
        if not pairs:
            return
        edges = [{"site": site, "from": f"http://{from_site}/", "reason": "site-link"}
                 for from_site, site in sorted(pairs)]  # fmt: skip
        others = {k: edges for k in range(self.role.slot_map.shards) if k != self.role.shard}
        write_outbox(self.state.path, others, tag)

    # -- seeds -----------------------------------------------------------------------

    def add_seeds(self, urls: Iterable[str]) -> int:
        """Canonicalize seeds, widen the scope, and queue those never seen before."""
        records: list[Record] = []
        for raw in urls:
            try:
                parsed = self.canon.parse(raw.strip())
            except InvalidURL as exc:
                self.rep.warn(f"seed skipped: {exc}", "bad seed")
                continue
            rec = {"url": parsed.url, "host": parsed.host, "site": parsed.site, "fp": parsed.fp,
                   "depth": 0, "priority": 1.0, "reason": "seed"}  # fmt: skip
            records.append(rec)
            self.scope.add_seed(rec)
        io.atomic_write_json(self.dir.scope, self.scope.to_json())
        if self.role is not None:  # every shard gets every seed and keeps its own
            # ... but trusts every seed's site, as one shard would (site budgets)
            with self.frontier_lock:
                self.frontier.note_seeds({str(r["site"]) for r in records})
                self.frontier.commit()
            records = [r for r in records if self.role.owns(str(r["site"]))]
        if not records:
            return 0
        return self._admit(records, "seeds")

    def _admit(self, records: list[Record], tag: str) -> int:
        """Queue the records never seen before; returns how many.

        The new URLs are written to ``STATE/crawl/admitted/`` before the seen set
        commits them and removed once they are queued; :meth:`requeue_admitted`
        queues what a crash left there. So a URL is never seen without being queued
        (invariant 4): a crash repeats it, never loses it.
        """
        path = self.dir.admitted / f"{time.time_ns():020d}-{tag}.ndjson.zst"
        fresh = self._seen_merge(records, out=path)
        self._queue(fresh, self.dir.root / f"{tag}-refused.ndjson.zst")
        path.unlink(missing_ok=True)
        return len(fresh)

    def requeue_admitted(self) -> None:
        for path in sorted(self.dir.admitted.glob("*.ndjson.zst")):
            tag = path.name.split("-", 1)[1].split(".", 1)[0]
            self._queue(_read(path), self.dir.root / f"{tag}-refused.ndjson.zst")
            path.unlink()

    # -- the loop --------------------------------------------------------------------

    def run(self) -> CrawlSummary:
        with _graceful_signals(self._on_signal, lambda: bool(self.interrupted)) as reinstall:
            return self._run(reinstall)

    def _on_signal(self, name: str) -> None:
        """The first SIGINT/SIGTERM: finish what is in flight, save, and stop."""
        self.interrupted = self.interrupted or name
        self.hard_stop = min(self.hard_stop, self.clock() + STOP_GRACE)

    def _run(self, reinstall: Callable[[], None]) -> CrawlSummary:
        pending = self._recover()
        idle_runs = 0
        while True:
            reason = self._should_stop()
            if reason:
                self.summary.stopped = reason
                break
            self._release_waiting()
            before = sum(self.summary.outcomes.values())
            self._fetch_run(pending)
            reinstall()  # the fetch run's own handlers are gone with it
            pending = []
            if self.post_error is not None:
                raise self.post_error
            reason = self._exhausted()
            if reason:
                self.summary.stopped = reason
                break
            if sum(self.summary.outcomes.values()) == before:
                # Nothing could be fetched: only deferred URLs wait. Sleep until the
                # first is due (bounded), never spin.
                idle_runs += 1
                wake = self._next_waiting_time()
                if self._nothing_due_in_time(wake):
                    # Free the slice (a job runner's allocation) instead of sleeping
                    # it away: the next run fetches the deferred URLs when they are due.
                    self.summary.stopped = "nothing due before the time limit (--for)"
                    break
                if wake is None and idle_runs >= 3:
                    self.summary.stopped = "nothing more can be fetched now"
                    break
                self._sleep_until(wake or self.clock() + self.opts.idle_wait)
            else:
                idle_runs = 0
        stats = self._frontier_stats()
        self.summary.queued = int(stats.get("queued", 0) or 0) + int(stats.get("parked", 0) or 0)
        self.summary.waiting = len(self.waiting)
        wake = self._next_waiting_time()
        self.summary.next_retry_at = iso(wake) if wake is not None else None
        self.summary.elapsed_s = self.clock() - self.start
        if self.opts.archive.index:
            update_collection_index(self.warc_root, self.rep)
        if self.opts.fetch.request is not None and self.opts.fetch.request.keep_cookies:
            self.opts.fetch.request.save(self.dir.root / "cookies.txt")  # cookies sites set
        self._save_totals()
        return self.summary

    def _should_stop(self) -> str:
        if self.interrupted:
            return f"interrupted ({self.interrupted})"
        if self.deadline is not None and self.clock() >= self.deadline:
            return "time limit (--for)"
        if self.opts.max_pages is not None and self._pages_total() >= self.opts.max_pages:
            return "page limit (--max-pages)"
        return ""

    def _pages_total(self) -> int:
        """Requests the server has seen from this crawl (robots.txt aside), all runs."""
        return self.requests_before + self.summary.requests

    def _pages_left(self) -> float:
        """Requests ``--max-pages`` still allows beyond those handed to the fetcher."""
        if self.opts.max_pages is None:
            return float("inf")
        return self.opts.max_pages - self._pages_total() - self.held

    def _exhausted(self) -> str:
        stats = self._frontier_stats()
        if int(stats.get("queued", 0) or 0) or len(self.waiting) or self.dir.batch_files():
            return ""
        if self.role is not None and inbox_files(self.state.path):
            return ""
        parked = int(stats.get("parked", 0) or 0)
        if parked:
            return f"done for this budget period ({parked} URLs of over-budget sites parked)"
        return "frontier empty"

    def _frontier_stats(self) -> dict[str, Any]:
        with self.frontier_lock:
            return self.frontier.stats()

    def _note_links(self, records: list[Record]) -> None:
        """Feed link records to the frontier's site graph (``frontier links``)."""
        with self.frontier_lock:
            self.frontier.note_links(records)
            self.frontier.commit()

    # -- recovery --------------------------------------------------------------------

    def _recover(self) -> list[Record]:
        """Finish what a stopped or killed run left: returns the URLs to fetch again."""
        unfinished = [c for c in self.dir.cycle_dirs() if not _done(c, "cycle")]
        if not unfinished and not self.dir.batch_files():
            return []
        self._close_open_warcs()
        for cycle in unfinished:
            if not _done(cycle, "fetch"):
                self._salvage(cycle)
                _mark(cycle, "fetch", {"salvaged": True})
            self.rep.info(f"finishing cycle {cycle.name} left by an earlier run")
            if not self._finish_cycle(cycle):
                return []  # out of time: the next run goes on from here
        self._archive_closed_warcs()
        pending: list[Record] = []
        batches = self.dir.batch_files()
        if batches:
            oldest = min(int(b.name.split("-", 1)[0]) for b in batches)
            fetched: set[str] = set()
            for cycle in self.dir.cycle_dirs():
                if int(cycle.name) >= oldest:
                    fetched.update(
                        str(r.get("url"))
                        for r in _read(cycle / "fetch.ndjson")
                        if r.get("refused") != "duplicate"  # not the URL's answer
                    )
            for batch in list(batches):
                rest = [r for r in _read(batch) if r.get("url") not in fetched]
                if rest:
                    pending += rest
                else:  # every URL of it was fetched before the stop
                    batch.unlink()
                    batches.remove(batch)
        if pending:
            self.rep.info(f"{len(pending)} URLs handed to the fetcher before the stop go again")
        self.summary.refetched += len(pending)
        self._pending_batches = batches
        return pending

    def _close_open_warcs(self) -> None:
        """Cut every ``.open`` WARC file after its last whole record and close it."""
        self.valid_warc_end: dict[str, int] = {}
        new_dir = warc_new_dir(self.warc_root)
        for partial in sorted(new_dir.glob("*.open")) if new_dir.exists() else []:
            end = cut_to_whole_records(partial)
            final = partial.with_name(partial.name[: -len(".open")])
            if end:
                os.replace(partial, final)
            else:
                partial.unlink()
            self.valid_warc_end[final.name] = end

    def _salvage(self, cycle: Path) -> None:
        """Keep the fetch records of ``cycle`` whose WARC records are whole on disk.

        Records pointing past the end of a WARC file cut by :meth:`_close_open_warcs`
        are dropped (and a torn last line); their URLs are fetched again.
        """
        log = cycle / "fetch.ndjson"
        if not log.exists():
            return
        kept: list[Record] = []
        with open(log, "rb") as f:
            for line in f:
                if not line.endswith(b"\n"):
                    continue  # torn last line
                try:
                    rec = io.parse_record(line)
                except ValueError:
                    continue
                warc = rec.get("warc")
                if isinstance(warc, dict):
                    name = Path(str(warc.get("file"))).name
                    end = int(warc.get("offset", 0)) + int(warc.get("length", 0))
                    if name in self.valid_warc_end and end > self.valid_warc_end[name]:
                        continue
                kept.append(rec)
        io.atomic_write_bytes(log, b"".join(io.dumps(r) for r in kept))

    # -- one fetch run, kept fed -----------------------------------------------------

    def _fetch_run(self, pending: list[Record]) -> None:
        """Fetch until the frontier has nothing more to give, cutting cycles as it goes.

        The fetcher runs on this thread's event loop; whenever few hosts wait it asks
        :meth:`_refill` for more. Every ``CHUNK_RECORDS`` fetch records or
        ``CHUNK_SECONDS`` the current cycle is cut (its WARC closed) and handed to the
        post-processing thread (extract, dedup, seen-merge, frontier add, recrawl),
        so parsing overlaps fetching and there is no idle tail between cycles.
        """
        post = _PostWorker(self)
        live = _LiveCycle(self, self.dir.new_cycle())
        # url -> the batch files it is in, oldest first (the frontier may hand a URL out
        # twice; each fetch record settles one of them)
        outstanding: dict[str, list[Path]] = {}
        batch_left: dict[Path, int] = {}

        def track(path: Path, records: list[Record]) -> None:
            for rec in records:
                outstanding.setdefault(str(rec.get("url")), []).append(path)
                batch_left[path] = batch_left.get(path, 0) + 1
            self.held += len(records)
            self.held_by_host.update(str(rec.get("host")) for rec in records)

        running: list[Any] = []  # the fetcher, once the first refill has met it
        last_empty: list[tuple[int, int] | None] = [None]  # see refill
        cutting = False
        cut_asked: list[asyncio.Task[None]] = []  # the cut a fetch record asked for
        cut_failed: list[BaseException] = []

        def cut_due(now: float) -> bool:
            return live.records >= CHUNK_RECORDS or (
                live.records > 0 and now - live.started >= CHUNK_SECONDS
            )

        def cut_done(task: asyncio.Task[None]) -> None:
            cut_asked.clear()
            if not task.cancelled() and task.exception() is not None:
                cut_failed.append(task.exception())  # type: ignore[arg-type]

        def sink(rec: Record) -> None:
            live.log(rec)
            if running and not cut_asked and cut_due(self.clock()):
                # A busy fetcher asks for no refill, so a cycle is also cut here: else
                # it grows while the fetcher is busy, and its links wait for all of it.
                asked = asyncio.get_running_loop().create_task(cut(running[0]))
                asked.add_done_callback(cut_done)
                cut_asked.append(asked)
            self.summary.outcomes[str(rec.get("outcome"))] += 1
            self.summary.errors.note(rec)
            if rec.get("status") is not None:
                self.summary.requests += 1
            stopped = bool(rec.get("stopped"))
            self.summary.unstarted += stopped
            paths = outstanding.get(str(rec.get("url")))
            if paths:
                # The fetcher answers a URL it already holds "refused: duplicate" at once:
                # that settles the copy handed out last. The first copy is settled by
                # its real answer; its batch file must stay until then.
                path = paths.pop() if rec.get("refused") == "duplicate" else paths.pop(0)
                # A URL given back because the run ends still counts against the hold:
                # else each refill near the end would be given back too, and the run
                # would end with the frontier moved into the waiting room.
                if not stopped:
                    self.held -= 1
                    host = str(rec.get("host"))
                    self.held_by_host[host] -= 1
                    if self.held_by_host[host] <= 0:
                        del self.held_by_host[host]
                if not paths:
                    del outstanding[str(rec.get("url"))]
                batch_left[path] -= 1
                if batch_left[path] <= 0:  # every URL of the batch is in a fetch log
                    del batch_left[path]
                    path.unlink(missing_ok=True)

        async def cut(fetcher: Any) -> None:
            nonlocal live, cutting
            if cutting:
                return  # one cut at a time; the other caller's records go in the next
            cutting = True
            try:
                await fetcher.flush_warc()  # its records are whole on disk: extract reads them
                done = live
                live = _LiveCycle(self, self.dir.new_cycle())
                done.close()
                self._start_extract(done.path)
                post.submit(done.path)
            finally:
                cutting = False

        async def refill(fetcher: Any) -> list[Record] | None:
            if not running:
                running.append(fetcher)
            post.raise_if_failed()
            if cut_failed:
                raise cut_failed[0]
            if cut_due(self.clock()):
                await cut(fetcher)
            if self._should_stop():
                return None
            loop = asyncio.get_running_loop()
            due = self._next_waiting_time()
            if due is not None and due <= self.clock():
                await loop.run_in_executor(None, self._release_waiting)
            if self._pages_left() <= 0:
                return [] if self.held else None  # --max-pages: wait for the answers
            if self.held >= self.hold or post.backlog() >= POST_BACKLOG:
                return []  # back-pressure: the fetcher works off what it holds
            # Ask the frontier again only when something changed since it last had
            # nothing to give: URLs queued, or answers that free a host's share.
            changed = (self.frontier_version, sum(self.summary.outcomes.values()))
            if changed != last_empty[0] or self.role is not None:
                held = dict(self.held_by_host)  # read on this thread; the loop changes it
                batch = await loop.run_in_executor(None, self._next_batch, live.path, track, held)
                if batch:
                    return batch
                last_empty[0] = changed
            if live.records:
                await cut(fetcher)
            if post.busy() or fetcher.has_work():
                # Pages still to come, or links still to process, may queue more URLs:
                # "no more" now would leave them to the next fetch run.
                return []
            return None

        initial: list[Record] = []
        if pending:
            path = self.dir.batches / f"{live.path.name}-0000.ndjson.zst"
            _write(path, pending)
            for old in self._pending_batches:
                old.unlink(missing_ok=True)
            track(path, pending)
            initial = pending
        config = self.opts.fetch
        if self.deadline is not None:
            left = max(0.0, self.deadline - self.clock())
            config = FetchConfig(**{**config.__dict__, "duration": left})
        try:
            fetch_records(
                initial, sink, state_dir=self.state.path, config=config,
                warc_dir=self.warc_root, allow_net=self.opts.allow_net,
                hosts_file=self.opts.hosts_file, on_redirect=lambda rec: live.redirect(rec),
                reporter=self.rep, warc_prefix=self.opts.warc_prefix,
                warc_size=self.opts.warc_size, warc_info=self.opts.warc_info, refill=refill,
                on_interrupt=self._on_signal, net=self.opts.net,
                on_robots_capture=lambda rec: live.robots_capture(rec),
            )  # fmt: skip
            # The fetcher answered every URL it was given (one record each), so a batch
            # file still here can only differ in spelling from its records: done too.
            for path in list(batch_left):
                self.rep.warn(
                    f"{path.name}: {batch_left[path]} URLs answered under another spelling"
                )
                path.unlink(missing_ok=True)
        finally:
            live.close()
            if live.records or live.batches:
                post.submit(live.path)
            else:
                shutil.rmtree(live.path, ignore_errors=True)
            post.close()
            self._archive_closed_warcs()
            self.held = 0  # every URL handed out has its record (or never will)
            self.held_by_host.clear()
        self.post_error = post.error

    def _next_batch(
        self,
        cycle: Path,
        track: Callable[[Path, list[Record]], None],
        held: dict[str, int] | None = None,
    ) -> list[Record]:
        """The frontier's next batch, made durable in ``crawl/batches`` first.

        ``held`` counts, per host, URLs the fetcher holds unanswered: with them a host
        gets at most ``per_host`` in the fetcher at once, so the URLs held are spread
        over the hosts that can be served, not piled on slow ones.
        """
        size = int(min(self.opts.batch_size, self.hold - self.held, self._pages_left()))
        if size <= 0:
            return []
        opts = NextOptions(max_urls=size, per_host=self.opts.per_host, budgets=self.opts.budgets,
                           outstanding=held or {})  # fmt: skip
        out: list[Record] = []
        refused: list[Record] = []
        # Numbered by the run, never by counting files: a finished batch is deleted, and
        # a count would then name the next batch after one still in flight.
        n = next(self._batch_numbers)
        path = self.dir.batches / f"{cycle.name}-{n:04d}.ndjson.zst"

        def write(batch: Any) -> None:
            out.extend(orjson.loads(line) for line in batch.lines)
            refused.extend(batch.refused)
            out[:], excluded = self.link_policy.exclude_batch(out)
            refused.extend(excluded)
            if self.role is not None:
                # A URL of a slot this shard no longer owns (the map changed) goes to
                # its owner instead of being fetched here; the rest carry the epoch of
                # now. (A stamp a record brought from an earlier batch, e.g. deferred
                # and handed over, says nothing about this one: it is replaced.)
                out[:] = self._route(out, "stale")
                for r in out:
                    r["shard_epoch"] = self.role.epoch(str(r.get("site") or ""))
            if out:
                _write(path, out)

        with self.frontier_lock:
            if self.role is not None:
                self._ingest_inbox()
            self.frontier.apply_commands()  # operator blocks posted since
            batch = self.frontier.next(opts)
            write(batch)  # the batch is on disk before its removal commits
            self.frontier.commit()
        if refused:
            _write(cycle / f"batch-refused-{n}.ndjson.zst", refused)
            self._count_refused(refused)
        if out:
            track(path, out)
        return out

    def _finish_cycle(self, cycle: Path) -> bool:
        """Run the cycle's steps not yet done; False if the hard stop came first."""
        for step in POST_STEPS:
            if not _done(cycle, step.marker):
                if self.clock() >= self.hard_stop:
                    return False
                getattr(self, f"_step_{step.marker}")(cycle)
        _mark(cycle, "cycle")
        self.summary.cycles += 1
        self.progress(self._progress_info(cycle))
        return True

    def _fetch_log(self, cycle: Path) -> list[Record]:
        return list(_read(cycle / "fetch.ndjson"))

    def _warc_path(self, name: str) -> Path | None:
        """Where the WARC file ``name`` is now: being written, closed, or archived."""
        new_dir = warc_new_dir(self.warc_root)
        for path in (new_dir / name, new_dir / f"{name}.open", self.warc_root / name):
            if path.exists():
                return path
        return None

    def _cycle_sources(self, cycle: Path) -> list[tuple[str, list[tuple[int, int]]]]:
        """The cycle's WARC records as (file, [(offset, length), ...]) from its fetch log.

        WARC files rotate by size (``--warc-size``), not by cycle: one file holds many
        cycles, and may still be written to while a cycle is extracted; the fetcher
        flushes it when it cuts the cycle, so every record named here is whole.
        """
        ranges: dict[str, list[tuple[int, int]]] = {}
        # robots.txt captures too: extract takes their Sitemap lines
        for rec in itertools.chain(self._fetch_log(cycle), _read(cycle / "robots.ndjson")):
            warc = rec.get("warc")
            if isinstance(warc, dict) and warc.get("file"):
                name = Path(str(warc["file"])).name
                ranges.setdefault(name, []).append((int(warc["offset"]), int(warc["length"])))
        out = []
        for name, spans in ranges.items():
            path = self._warc_path(name)
            if path is not None:
                out.append((str(path), spans))
        return out

    def _start_extract(self, cycle: Path) -> None:
        """Hand a cut cycle's WARC records to an extract process now (``-j`` >= 2), so
        it parses while the post thread still works on the cycles before it."""
        if self.extract_workers is None:
            return
        sources = self._cycle_sources(cycle)
        if sources:
            self._extracting[cycle] = (sources, self.extract_workers.submit(sources))

    def _step_extract(self, cycle: Path) -> None:
        sources = self._cycle_sources(cycle)
        with (
            io.open_output(cycle / "pages.ndjson.zst") as pages,
            io.open_output(cycle / "links.ndjson.zst") as links,
        ):
            if self.extract_workers is not None:
                started_with, started = self._extracting.pop(cycle, (None, None))
                stats = self.extract_workers.extract(
                    sources, pages.write, links.write, reporter=self.rep,
                    started=started if started_with == sources else None,
                )  # fmt: skip
            else:
                stats = extract_warcs(sources, pages.write, links.write,
                                      options=ExtractOptions(), reporter=self.rep)  # fmt: skip
        self.summary.pages += stats.pages
        self.summary.links += stats.links
        _mark(cycle, "extract", {"pages": stats.pages, "links": stats.links})

    def _archive_closed_warcs(self) -> None:
        """Move closed WARC files from ``new/`` to the archive directory itself.

        Called only while no cycle is being extracted (a cycle finds its files in
        either place, see :meth:`_warc_path`).
        """
        new_dir = warc_new_dir(self.warc_root)
        for path in sorted(new_dir.glob("*.warc.gz")) if new_dir.exists() else []:
            target = self.warc_root / path.name
            if not target.exists():
                os.replace(path, target)
                self.summary.warc_files += 1

    def _step_dedup(self, cycle: Path) -> None:
        stats = DedupStats()
        with open_state(self.state.path / "dedup") as sdir:
            store = DedupStore(sdir.path)
            try:
                records = io.read_records_with_lines([cycle / "pages.ndjson.zst"], self.rep)
                _write(cycle / "dedup.ndjson.zst", dedup_records(records, store, stats=stats,
                                                                 reporter=self.rep))  # fmt: skip
                sites = list(site_records(store, stats.sites))
            finally:
                store.close()
        _write(cycle / "sites.ndjson.zst", sites)
        self._queue(sites, cycle / "sites-refused.ndjson.zst")
        self.summary.dedup.update(
            {"exact": stats.exact, "near": stats.near, "unique": stats.unique}
        )
        _mark(cycle, "dedup", {"exact": stats.exact, "near": stats.near})

    def _step_links(self, cycle: Path) -> None:
        """Links and redirects → scope → seen set → frontier; deferred → waiting room.

        Each attempt writes its new URLs to its own file before the seen set commits
        them, and every attempt's file is queued: a crash between the commit and the
        queueing repeats URLs (at least once), never loses them (invariant 4).
        """
        refused_path = cycle / "links-refused.ndjson.zst"
        if not _done(cycle, "seen"):
            links = list(_read(cycle / "links.ndjson.zst"))
            self._note_links(links)  # every link, not only new URLs, feeds site importance
            self._share_site_links(links, f"c{cycle.name}-sites")
            fetched = {str(r.get("url")): r for r in self._fetch_log(cycle)}
            candidates, refused = self.link_policy.sort(
                [*links, *_read(cycle / "redirects.ndjson")], self.scope.allows, fetched,
                self.scope.spec)  # fmt: skip
            _write(refused_path, refused)
            self._count_refused(refused)
            candidates = self._route(candidates, f"c{cycle.name}")
            attempt = len(list(cycle.glob("new-*.ndjson.zst"))) + 1
            fresh = self._seen_merge(candidates, out=cycle / f"new-{attempt}.ndjson.zst")
            self.summary.new_urls += len(fresh)
            _mark(cycle, "seen", {"new": len(fresh)})
        for path in sorted(cycle.glob("new-*.ndjson.zst")):
            # Each file is marked queued once the frontier has committed it: a crash
            # after that queues it again only if it falls between the two (a URL
            # queued twice is handed out twice, and counted twice against its budget).
            queued = cycle / (path.name.split(".", 1)[0] + ".queued")
            if not queued.exists():
                self._queue(_read(path), cycle / "new-refused.ndjson.zst")
                queued.touch()
        self._wait_deferred(cycle)
        _mark(cycle, "links")

    def _step_recrawl(self, cycle: Path) -> None:
        if not self.opts.recrawl:
            _mark(cycle, "recrawl", {"due": 0})
            return
        due: list[Record] = []
        inputs = [cycle / "fetch.ndjson", cycle / "pages.ndjson.zst"]
        # Deferred URLs wait in the waiting room alone: fed to the history too, they
        # would become due a second time, as recrawls.
        records = (
            item
            for item in io.read_records_with_lines([p for p in inputs if p.exists()], self.rep)
            if item[2].get("outcome") != "deferred"
        )
        recrawl(self.state.path, records, write=due.extend, now=self.clock(), reporter=self.rep)
        self._queue(due, cycle / "recrawl-refused.ndjson.zst")
        _mark(cycle, "recrawl", {"due": len(due)})

    # -- helpers ---------------------------------------------------------------------

    def _seen_merge(self, records: list[Record], out: Path | None = None) -> list[Record]:
        """The records never seen before (marked seen only once written out)."""
        with fresh_records(self.state.path, records, canonicalizer=self.canon,
                           reporter=self.rep) as fresh:  # fmt: skip
            if out is not None:
                _write(out, fresh.records)
            fresh.commit()
        for key in ("checked", "confirmed_seen", "false_positives", "new"):
            self.summary.seen[key] += getattr(fresh.stats, key)
        return fresh.records

    def _queue(self, records: Iterable[Record], refused_path: Path) -> None:
        refused: list[Record] = []
        self.frontier_version += 1
        with self.frontier_lock:
            self.frontier.add_records(records, on_refused=refused.append)
            self.frontier.commit()
        if refused:
            _write(refused_path, refused)
            self._count_refused(refused)

    def _count_refused(self, refused: Iterable[Record]) -> None:
        for rec in refused:
            self.summary.refused[str(rec.get("refused") or rec.get("error") or "refused")] += 1

    def _wait_deferred(self, cycle: Path) -> None:
        """The cycle's deferred URLs into the waiting room (again after a crash: once)."""
        deferred = [r for r in self._fetch_log(cycle) if r.get("outcome") == "deferred"]
        if not deferred:
            return
        with self.frontier_lock:
            self.waiting.add(deferred)
            self.waiting.save()

    def _release_waiting(self) -> bool:
        """Queue the waiting URLs whose retry time has come; True if there were any."""
        with self.frontier_lock:
            due = self.waiting.due(self.clock())
            if not due:
                return False
            self._queue(due, self.dir.root / "waiting-refused.ndjson.zst")
            self.waiting.save()
            return True

    def _next_waiting_time(self) -> float | None:
        with self.frontier_lock:
            return self.waiting.next_time()

    def _nothing_due_in_time(self, wake: float | None) -> bool:
        """True when the first deferred URL (due at ``wake``) is due after ``--for`` ends."""
        return wake is not None and self.deadline is not None and wake >= self.deadline

    def _sleep_until(self, when: float) -> None:
        limit = self.deadline if self.deadline is not None else float("inf")
        pause = max(0.0, min(when, limit) - self.clock())
        end = time.monotonic() + (min(pause, self.opts.idle_wait) if pause > 0 else 0.01)
        while not self.interrupted and (left := end - time.monotonic()) > 0:
            time.sleep(min(left, 0.1))  # short naps: a signal is acted on at once

    def _progress_info(self, cycle: Path) -> dict[str, Any]:
        elapsed = max(self.clock() - self.start, 1e-9)
        return {
            "cycle": cycle.name,
            "fetched": self.summary.outcomes["fetched"],
            "pages_per_s": self.summary.outcomes["fetched"] / elapsed,
            "errors": self.summary.outcomes["error"],
            "deferred": self.summary.outcomes["deferred"],
            "new_urls": self.summary.new_urls,
            "elapsed_s": elapsed,
        }

    def close(self) -> None:
        """Stop the extract processes (a run that ends or fails)."""
        for _files, future in self._extracting.values():
            future.cancel()
        self._extracting.clear()
        if self.extract_workers is not None:
            self.extract_workers.close()

    def _save_totals(self) -> None:
        totals: dict[str, Any] = io.read_json(self.dir.totals) if self.dir.totals.exists() else {}
        totals["fetched"] = self.fetched_before + self.summary.outcomes["fetched"]
        totals["runs"] = int(totals.get("runs", 0)) + 1
        totals["refetched"] = int(totals.get("refetched", 0)) + self.summary.refetched
        seen = Counter(totals.get("seen", {}))
        seen.update(self.summary.seen)
        totals["seen"] = dict(seen)
        totals["last_run"] = self.summary.to_json()
        io.atomic_write_json(self.dir.totals, totals)


@contextlib.contextmanager
def _graceful_signals(
    on_signal: Callable[[str], None], caught: Callable[[], bool]
) -> Iterator[Callable[[], None]]:
    """SIGINT and SIGTERM call ``on_signal`` once; a second one acts as it always does.

    Yields a function that installs the handlers again unless ``caught()`` (a fetch
    run installs its own and leaves the defaults behind). Outside the main thread
    signals cannot be handled, so nothing is installed there. The previous handlers
    come back at exit.
    """
    if threading.current_thread() is not threading.main_thread():
        yield lambda: None
        return
    kinds = (signal.SIGINT, signal.SIGTERM)
    before = {sig: signal.getsignal(sig) for sig in kinds}

    def handler(signum: int, _frame: object) -> None:
        for sig in kinds:  # the next one is not caught: stop now
            signal.signal(sig, before[sig])
        on_signal(signal.Signals(signum).name)

    def install() -> None:
        if caught():
            return  # the first signal came: the next one is not caught
        for sig in kinds:
            signal.signal(sig, handler)

    install()
    try:
        yield install
    finally:
        for sig in kinds:
            signal.signal(sig, before[sig])


def crawl(
    state_path: str | os.PathLike[str],
    seeds: Iterable[str],
    options: CrawlOptions,
    *,
    reporter: Reporter | None = None,
    progress: Callable[[dict[str, Any]], None] | None = None,
) -> CrawlSummary:
    """Run (or resume) a crawl in ``state_path`` until the frontier is empty or a limit.

    Raises :class:`LockedError` when another process owns the state directory.
    """
    reporter = reporter or NullReporter()
    seeds = list(seeds)
    with open_state(state_path, owner="crawl") as state:
        record_settings(state.path, seeds, options)  # for the collection's report
        run = Crawl(state, options, reporter=reporter, progress=progress)
        try:
            run.requeue_admitted()  # what a crash left between the seen set and the frontier
            # seeds seen before but never fetched, and due retries:
            owns = run.role.owns if run.role is not None else None
            run._queue(retry_records(state.path, seeds, run.canon, owns=owns),
                       run.dir.root / "retry-refused.ndjson.zst")  # fmt: skip
            run.add_seeds(seeds)
            return run.run()
        finally:
            run.close()


def explain(state: str, options: CrawlOptions) -> str:
    """The equivalent pipeline of stage commands for one cycle (``--explain``), rendered
    from the same list of steps the crawl runs (:data:`crawlkit.crawl.steps.STEPS`)."""
    net = "".join(f" --allow-net {c}" for c in options.allow_net)
    if options.hosts_file:
        net += f" --hosts-file {options.hosts_file}"
    net += options.net.flags()
    return render(
        ExplainContext(
            state=state,
            warc=str(options.warc_dir or f"{state}/warc"),
            batch=options.batch_size,
            per_host=options.per_host,
            budgets=options.budgets,
            min_delay=options.fetch.min_delay,
            concurrency=options.fetch.concurrency,
            jobs=options.jobs,
            net=net,
            scope=options.scope,
        )
    )


class _LiveCycle:
    """The cycle being fetched into: its fetch log, redirect file and the WARC places of
    its robots.txt captures (``robots.ndjson``), flushed per record."""

    def __init__(self, crawl: Crawl, path: Path):
        self.crawl = crawl
        self.path = path
        self.started = crawl.clock()
        self.records = 0
        # Plain NDJSON, appended and flushed per record: survives kill -9 line by line.
        self._log = open(path / "fetch.ndjson", "ab")  # noqa: SIM115
        self._redirects = open(path / "redirects.ndjson", "ab")  # noqa: SIM115
        self._robots = open(path / "robots.ndjson", "ab")  # noqa: SIM115

    @property
    def batches(self) -> bool:
        return any(self.crawl.dir.batches.glob(f"{self.path.name}-*.ndjson.zst"))

    def log(self, rec: Record) -> None:
        self._log.write(io.dumps(rec))
        self._log.flush()
        self.records += 1

    def redirect(self, rec: Record) -> None:
        self._redirects.write(io.dumps(rec))
        self._redirects.flush()

    def robots_capture(self, rec: Record) -> None:
        self._robots.write(io.dumps(rec))
        self._robots.flush()

    def close(self) -> None:
        if self._log.closed:
            return
        for f in (self._log, self._redirects, self._robots):
            f.flush()
            os.fsync(f.fileno())
            f.close()
        _mark(self.path, "fetch", {"records": self.records})


class _PostWorker:
    """One thread that runs the post-fetch steps of cut cycles, in order."""

    def __init__(self, crawl: Crawl):
        self.crawl = crawl
        self.error: BaseException | None = None
        self._queue: queue.Queue[Path | None] = queue.Queue()
        self._thread = threading.Thread(target=self._run, name="crawl-post", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while True:
            cycle = self._queue.get()
            if cycle is None:
                self._queue.task_done()
                return
            try:
                if self.error is None:
                    self.crawl._finish_cycle(cycle)
            except BaseException as exc:  # handed to the fetch loop, which stops
                self.error = exc
            finally:
                self._queue.task_done()

    def submit(self, cycle: Path) -> None:
        self._queue.put(cycle)

    def backlog(self) -> int:
        """Cut cycles submitted and not yet post-processed."""
        return self._queue.unfinished_tasks

    def busy(self) -> bool:
        # unfinished_tasks counts a cycle from put() to task_done(), so there is no
        # moment between get() and the work starting when it reads as idle.
        return self._queue.unfinished_tasks > 0

    def raise_if_failed(self) -> None:
        if self.error is not None:
            raise self.error

    def close(self) -> None:
        self._queue.put(None)
        self._thread.join()
