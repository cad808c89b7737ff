"""``crawlkit crawl``: the whole loop in one command, as a composition of the stages.

A crawl is a state directory and a sequence of *cycles*. Each cycle runs the DESIGN.md
pipeline with the stages' own library functions, on the same state directory:

    frontier next  →  fetch  →  extract  →  dedup  →  seen-merge  →  frontier add
                                                         recrawl  →  frontier add

and leaves its files in ``STATE/crawl/cycles/NNNNNN/`` (the batch, the fetch log,
page, link, dedup and refusal records), so every cycle can be inspected, replayed or
re-run by hand with the stage commands (``crawlkit crawl --explain`` prints them).

Resumable (DESIGN.md invariants 1 and 5): a cycle's steps run in order and each
marks itself done with a file; a restarted crawl finishes the open cycle first. The
fetch log is appended and flushed per record, so after a crash only the URLs whose
fetch was in flight (or whose WARC record did not reach the disk) are fetched again;
they are counted as ``refetched``. Host clocks live in the fetch stage's state, so a
restart never hits a host inside its gap (invariant 2).

Deferred URLs (a host backing off, robots.txt unavailable, the run's end) wait in
``STATE/crawl/waiting.ndjson.zst`` until their ``retry_at`` and then go back to the
frontier; nothing is dropped. URLs outside ``--scope`` are refused with a reason.
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
from warcio.archiveiterator import ArchiveIterator

from crawlkit import io
from crawlkit.dedupstore import DedupStore
from crawlkit.diag import NullReporter, Reporter
from crawlkit.distrib import (
    ShardRole,
    inbox_files,
    role_from_options,
    split_by_owner,
    write_outbox,
)
from crawlkit.errors import InvalidURL, UsageError
from crawlkit.fetch.engine import FetchConfig
from crawlkit.frontier.budgets import BudgetPolicy
from crawlkit.frontier.store import NextOptions
from crawlkit.frontier.traps import TrapLimits
from crawlkit.io import Record
from crawlkit.stages.dedup import DedupStats, dedup_records, site_records
from crawlkit.stages.extract import ExtractOptions, ExtractWorkers, FilesResult, extract_warcs
from crawlkit.stages.fetch import fetch_records, warc_new_dir
from crawlkit.stages.frontier import (
    frontier_add,
    frontier_links,
    frontier_next,
    frontier_seed_sites,
    frontier_stats,
)
from crawlkit.stages.recrawl import recrawl
from crawlkit.stages.seen_merge import fresh_records
from crawlkit.state import StateDir, open_state
from crawlkit.timefmt import iso, parse_time
from crawlkit.url import Canonicalizer, site_of_url

__all__ = ["CrawlOptions", "CrawlSummary", "Scope", "crawl", "explain"]

CYCLE_FORMAT = "{:06d}"
# Steps after the fetch of one cycle, in order; each leaves ``<step>.done`` behind.
STEPS = ("extract", "dedup", "links", "recrawl")
# A cycle is cut (WARC closed, handed to post-processing) after this many fetch
# records or this many seconds, whichever comes first.
CHUNK_RECORDS = 500
CHUNK_SECONDS = 2.0


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
    per_host: int = 20
    jobs: int = 1
    budgets: bool = True
    warc_dir: Path | None = None
    fetch: FetchConfig = field(default_factory=FetchConfig)
    allow_net: tuple[str, ...] = ()
    hosts_file: Path | None = None
    limits: TrapLimits = field(default_factory=TrapLimits)
    budget_policy: BudgetPolicy = field(default_factory=BudgetPolicy)
    idle_wait: float = 5.0  # longest sleep while only deferred URLs wait
    recrawl: bool = True
    shard: int | None = None  # crawl only this shard's sites (with shards or slot_map)
    shards: int | None = None
    slot_map: Path | None = None


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
    waiting: int = 0
    next_retry_at: str | None = None  # when the first waiting URL is due (UTC ISO)
    queued: int = 0
    stopped: str = ""
    routed: int = 0  # URLs written to other shards' outboxes
    elapsed_s: float = 0.0
    warc_files: int = 0
    seen: Counter[str] = field(default_factory=Counter)  # seen-merge counters, summed

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
            "routed_to_other_shards": self.routed,
            "waiting": self.waiting,
            "next_retry_at": self.next_retry_at,
            "queued": self.queued,
            "stopped": self.stopped,
            "elapsed_s": round(self.elapsed_s, 3),
            "warc_files": self.warc_files,
            "seen": dict(self.seen),
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
        self.post_error: BaseException | None = None
        self._pending_batches: list[Path] = []
        self._batch_numbers = itertools.count(1)  # 0 names the batch a recovery requeues
        self.interrupted = ""  # the name of the signal that asked the run to stop
        # With -j N >= 2, N extract processes live for the whole run and a cycle's
        # extract starts the moment it is cut (see _start_extract).
        self.extract_workers = ExtractWorkers(options.jobs) if options.jobs >= 2 else None
        self._extracting: dict[Path, tuple[list[str], cf.Future[FilesResult]]] = {}
        totals = io.read_json(self.dir.totals) if self.dir.totals.exists() else {}
        self.fetched_before = int(totals.get("fetched", 0))
        self.role = self._shard_role(state.path, options)
        self.scope = Scope(options.scope)
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
        files = inbox_files(self.state.path)
        for path in files:
            records = list(_read(path))
            # Delivered links (and other shards' site links) complete this shard's site
            # graph, on which site budgets rest; then the URLs among them are admitted.
            with self.frontier_lock:
                frontier_links(self.state.path, records, reporter=self.rep)
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
                frontier_seed_sites(self.state.path, {str(r["site"]) for r in records})
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
        self.summary.waiting = sum(1 for _ in _read(self.dir.waiting))
        wake = self._next_waiting_time()
        self.summary.next_retry_at = iso(wake) if wake is not None else None
        self.summary.elapsed_s = self.clock() - self.start
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
        return self.fetched_before + self.summary.outcomes["fetched"]

    def _exhausted(self) -> str:
        stats = self._frontier_stats()
        waiting = sum(1 for _ in _read(self.dir.waiting))
        if int(stats.get("queued", 0) or 0) or waiting or self.dir.batch_files():
            return ""
        if self.role is not None and inbox_files(self.state.path):
            return ""
        parked = int(stats.get("parked", 0) or 0)
        if parked:
            return f"done for this budget period ({parked} URLs of over-budget sites parked)"
        return "frontier empty"

    def _frontier_stats(self) -> dict[str, Any]:
        with self.frontier_lock:
            return frontier_stats(self.state.path)

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
            self._finish_cycle(cycle)
        pending: list[Record] = []
        batches = self.dir.batch_files()
        if batches:
            oldest = min(int(b.name.split("-", 1)[0]) for b in batches)
            fetched: set[str] = set()
            for cycle in self.dir.cycle_dirs():
                if int(cycle.name) >= oldest:
                    fetched.update(str(r.get("url")) for r in _read(cycle / "fetch.ndjson"))
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
            end = _complete_prefix(partial)
            final = partial.with_name(partial.name[: -len(".open")])
            with open(partial, "r+b") as f:
                f.truncate(end)
                f.flush()
                os.fsync(f.fileno())
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

        running: list[Any] = []  # the fetcher, once the first refill has met it
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
            paths = outstanding.get(str(rec.get("url")))
            if paths:
                path = paths.pop(0)
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
                await fetcher.rotate_warc()
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
            records = await loop.run_in_executor(None, self._next_batch, live.path, track)
            if records:
                return records
            if live.records:
                await cut(fetcher)
            if post.busy():
                return []  # its links may queue more
            if await loop.run_in_executor(None, self._release_waiting):
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
                reporter=self.rep, warc_prefix=f"crawlkit-c{live.path.name}", refill=refill,
                on_interrupt=self._on_signal,
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
        self.post_error = post.error

    def _next_batch(self, cycle: Path, track: Callable[[Path, list[Record]], None]) -> list[Record]:
        """The frontier's next batch, made durable in ``crawl/batches`` first."""
        size = self.opts.batch_size
        if self.opts.max_pages is not None:
            size = max(1, min(size, self.opts.max_pages - self._pages_total()))
        opts = NextOptions(max_urls=size, per_host=self.opts.per_host, budgets=self.opts.budgets)
        out: list[Record] = []
        refused: list[Record] = []
        # Numbered by the run, never by counting files: a finished batch is deleted, and
        # a count would then name the next batch after one still in flight.
        n = next(self._batch_numbers)
        path = self.dir.batches / f"{cycle.name}-{n:04d}.ndjson.zst"

        def write(batch: Any) -> None:
            out.extend(orjson.loads(line) for line in batch.lines)
            refused.extend(batch.refused)
            if self.role is not None:
                # A URL of a slot this shard no longer owns (the map changed) goes to
                # its owner instead of being fetched here; the rest carry the epoch.
                stale = [r for r in out if self.role.check(r) is not None]
                if stale:
                    self._route(stale, "stale")
                    out[:] = [r for r in out if self.role.check(r) is None]
                for r in out:
                    r["shard_epoch"] = self.role.epoch(str(r.get("site") or ""))
            if out:
                _write(path, out)

        with self.frontier_lock:
            if self.role is not None:
                self._ingest_inbox()
            frontier_next(self.state.path, opts, write=write, policy=self.opts.budget_policy,
                          reporter=self.rep)  # fmt: skip
        if refused:
            _write(cycle / f"batch-refused-{n}.ndjson.zst", refused)
            self._count_refused(refused)
        if out:
            track(path, out)
        return out

    def _finish_cycle(self, cycle: Path) -> None:
        for step in STEPS:
            if not _done(cycle, step):
                getattr(self, f"_step_{step}")(cycle)
        _mark(cycle, "cycle")
        self.summary.cycles += 1
        self.progress(self._progress_info(cycle))

    def _fetch_log(self, cycle: Path) -> list[Record]:
        return list(_read(cycle / "fetch.ndjson"))

    def _cycle_warcs(self, cycle: Path) -> list[str]:
        """The closed WARC files in ``new/`` that hold this cycle's fetches, in order.

        A file another cycle already extracted (it held records of both) has left
        ``new/`` and is not listed again.
        """
        files: list[str] = []
        new_dir = warc_new_dir(self.warc_root)
        for rec in self._fetch_log(cycle):
            warc = rec.get("warc")
            if isinstance(warc, dict) and warc.get("file"):
                path = new_dir / Path(str(warc["file"])).name
                if str(path) not in files:
                    files.append(str(path))
        return [f for f in files if Path(f).exists()]

    def _start_extract(self, cycle: Path) -> None:
        """Hand a cut cycle's WARC files to an extract process now (``-j`` >= 2), so it
        parses while the post thread still works on the cycles before it."""
        if self.extract_workers is None:
            return
        files = self._cycle_warcs(cycle)
        if files:
            self._extracting[cycle] = (files, self.extract_workers.submit(files))

    def _step_extract(self, cycle: Path) -> None:
        existing = self._cycle_warcs(cycle)
        new_dir = warc_new_dir(self.warc_root)
        with (
            io.open_output(cycle / "pages.ndjson.zst") as pages,
            io.open_output(cycle / "links.ndjson.zst") as links,
        ):
            if self.extract_workers is not None:
                files, started = self._extracting.pop(cycle, (None, None))
                stats = self.extract_workers.extract(
                    existing, pages.write, links.write, reporter=self.rep,
                    started=started if files == existing else None,
                )  # fmt: skip
            else:
                stats = extract_warcs(existing, pages.write, links.write,
                                      options=ExtractOptions(), reporter=self.rep)  # fmt: skip
        self.summary.pages += stats.pages
        self.summary.links += stats.links
        _mark(cycle, "extract", {"pages": stats.pages, "links": stats.links})
        # Extracted files leave new/ for the archive directory itself (after the mark:
        # a crash in between extracts a file twice, which is harmless, never zero times).
        for f in existing:
            target = self.warc_root / Path(f).name
            if Path(f).parent == new_dir and not target.exists():
                os.replace(f, target)
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
            candidates: list[Record] = []
            refused: list[Record] = []
            links = list(_read(cycle / "links.ndjson.zst"))
            with self.frontier_lock:  # every link, not only new URLs, feeds site importance
                frontier_links(self.state.path, links, reporter=self.rep)
            self._share_site_links(links, f"c{cycle.name}-sites")
            for rec in [*links, *_read(cycle / "redirects.ndjson")]:
                if rec.get("nofollow"):
                    continue  # kept in the link file; not followed
                if self.scope.allows(rec):
                    candidates.append(rec)
                else:
                    refused.append({**rec, "outcome": "refused", "refused": "out-of-scope",
                                    "detail": f"scope {self.scope.spec}"})  # fmt: skip
            _write(refused_path, refused)
            self._count_refused(refused)
            candidates = self._route(candidates, f"c{cycle.name}")
            attempt = len(list(cycle.glob("new-*.ndjson.zst"))) + 1
            fresh = self._seen_merge(candidates, out=cycle / f"new-{attempt}.ndjson.zst")
            self.summary.new_urls += len(fresh)
            _mark(cycle, "seen", {"new": len(fresh)})
        for path in sorted(cycle.glob("new-*.ndjson.zst")):
            self._queue(_read(path), cycle / "new-refused.ndjson.zst")
        self._wait_deferred(cycle)
        _mark(cycle, "links")

    def _step_recrawl(self, cycle: Path) -> None:
        if not self.opts.recrawl:
            _mark(cycle, "recrawl", {"due": 0})
            return
        due: list[Record] = []
        inputs = [cycle / "fetch.ndjson", cycle / "pages.ndjson.zst"]
        records = io.read_records_with_lines([p for p in inputs if p.exists()], self.rep)
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
        with self.frontier_lock:
            frontier_add(self.state.path, records, on_refused=refused.append,
                         limits=self.opts.limits, policy=self.opts.budget_policy,
                         reporter=self.rep)  # fmt: skip
        if refused:
            _write(refused_path, refused)
            self._count_refused(refused)

    def _count_refused(self, refused: Iterable[Record]) -> None:
        for rec in refused:
            self.summary.refused[str(rec.get("refused") or rec.get("error") or "refused")] += 1

    def _wait_deferred(self, cycle: Path) -> None:
        deferred = [r for r in self._fetch_log(cycle) if r.get("outcome") == "deferred"]
        if not deferred:
            return
        with self.frontier_lock:
            self._add_waiting(deferred)

    def _add_waiting(self, deferred: list[Record]) -> None:
        waiting = list(_read(self.dir.waiting))
        known = {r.get("url") for r in waiting}
        for rec in deferred:
            if rec.get("url") in known:
                continue
            keep = {k: v for k, v in rec.items() if k not in _FETCH_FIELDS or k == "url"}
            keep["retry_at"] = rec.get("retry_at")
            waiting.append(keep)
        _write(self.dir.waiting, waiting)

    def _release_waiting(self) -> bool:
        """Queue the waiting URLs whose retry time has come; True if there were any."""
        with self.frontier_lock:
            waiting = list(_read(self.dir.waiting))
            if not waiting:
                return False
            now = self.clock()
            due = [r for r in waiting if (parse_time(r.get("retry_at")) or 0) <= now]
            if not due:
                return False
            later = [r for r in waiting if (parse_time(r.get("retry_at")) or 0) > now]
            for rec in due:
                rec.pop("retry_at", None)
            self._queue(due, self.dir.root / "waiting-refused.ndjson.zst")
            _write(self.dir.waiting, later)
            return True

    def _next_waiting_time(self) -> float | None:
        with self.frontier_lock:
            times = [parse_time(r.get("retry_at")) or 0.0 for r in _read(self.dir.waiting)]
        return min(times) if times else None

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


_FETCH_FIELDS = frozenset(
    {"status", "outcome", "fetched_at", "elapsed_ms", "ip", "bytes", "content_type", "digest",
     "location", "warc", "error", "truncated"}
)  # fmt: skip


def _complete_prefix(path: Path) -> int:
    """Bytes of ``path`` that hold whole WARC records (a crash can cut the last one)."""
    end = 0
    with contextlib.suppress(Exception), open(path, "rb") as f:
        it = ArchiveIterator(f)
        for record in it:
            record.content_stream().read()
            it.read_to_end(record)
            end = it.get_record_offset() + it.get_record_length()
    return end


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
    with open_state(state_path) as state:
        run = Crawl(state, options, reporter=reporter, progress=progress)
        try:
            run.requeue_admitted()  # what a crash left between the seen set and the frontier
            run.add_seeds(seeds)
            return run.run()
        finally:
            run.close()


def explain(state: str, options: CrawlOptions) -> str:
    """The equivalent pipeline of stage commands for one cycle (``--explain``)."""
    s = state
    warc = options.warc_dir or f"{s}/warc"
    net = " ".join(f"--allow-net {c}" for c in options.allow_net)
    hosts = f" --hosts-file {options.hosts_file}" if options.hosts_file else ""
    budgets = "" if options.budgets else " --no-budgets"
    return "\n".join(
        [
            f"# one cycle of: crawlkit crawl --state {s} (C = {s}/crawl/cycles/NNNNNN)",
            f"crawlkit frontier next --state {s} --max {options.batch_size} "
            f"--per-host {options.per_host}{budgets} > $C/batch.ndjson.zst",
            f"crawlkit fetch --state {s} $C/batch.ndjson.zst --warc-dir {warc} "
            f"--min-delay {options.fetch.min_delay:g}s --concurrency {options.fetch.concurrency}"
            f" {net}{hosts} --log $C/fetch.ndjson --redirects $C/redirects.ndjson".replace(
                "  ", " "
            ),
            f"crawlkit extract -j {options.jobs} {warc}/new/*.warc.gz "
            "--pages $C/pages.ndjson.zst --links $C/links.ndjson.zst",
            f"crawlkit dedup --state {s} $C/pages.ndjson.zst --sites $C/sites.ndjson.zst "
            f"> $C/dedup.ndjson.zst && crawlkit frontier add --state {s} $C/sites.ndjson.zst",
            f"crawlkit frontier links --state {s} $C/links.ndjson.zst",
            f"crawlkit seen-merge --state {s} $C/links.ndjson.zst $C/redirects.ndjson "
            f"| crawlkit frontier add --state {s}   # crawl also applies --scope here",
            f"crawlkit recrawl --state {s} $C/fetch.ndjson $C/pages.ndjson.zst "
            f"| crawlkit frontier add --state {s}",
        ]
    )


class _LiveCycle:
    """The cycle being fetched into: its fetch log and redirect file, flushed per record."""

    def __init__(self, crawl: Crawl, path: Path):
        self.crawl = crawl
        self.path = path
        self.started = crawl.clock()
        self.records = 0
        # Plain NDJSON, appended and flushed per record: survives kill -9 line by line.
        self._log = open(path / "fetch.ndjson", "ab")  # noqa: SIM115
        self._redirects = open(path / "redirects.ndjson", "ab")  # noqa: SIM115

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

    def close(self) -> None:
        if self._log.closed:
            return
        for f in (self._log, self._redirects):
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
