"""The fetch side of the loop: frontier next → fetch, kept fed, cutting cycles as it goes.

The fetcher runs on an event loop and asks for more URLs (``refill``) whenever few
hosts wait; each batch is written to ``STATE/crawl/batches`` before the frontier
commits its removal. Back-pressure (invariant 8): the fetcher holds at most
``--per-host`` unanswered URLs of a host and ``hold`` in all; from ``POST_BACKLOG``
cut cycles waiting for post-processing each refill is halved per cycle more (the
fetcher slows to what post-processing takes, but never runs dry: its held URLs may
all be on hosts not due), and at ``POST_BACKLOG_MAX`` it gets nothing.

:class:`Feed` lives for the run (what the fetcher holds, the batch numbers);
:class:`FetchRun` is one fetch run, its callbacks (``refill``, ``sink``, the cuts)
methods over its fields.
"""

from __future__ import annotations

import asyncio
import itertools
import os
import shutil
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any, cast

import orjson

from crawlkit import streams
from crawlkit.crawl.admission import Admission
from crawlkit.crawl.archive import LinkPolicy
from crawlkit.crawl.blocks import OperatorBlocks
from crawlkit.crawl.core import HOLD_PER_SLOT, Gate, Limits
from crawlkit.crawl.cycle import CycleRunner, PostWorker
from crawlkit.crawl.files import CrawlDir, mark_done, write_file
from crawlkit.crawl.options import CrawlOptions
from crawlkit.crawl.recovery import Leftover, within_limit
from crawlkit.crawl.stores import Stores
from crawlkit.crawl.timeline import LoopProbe, Timeline
from crawlkit.diag import Reporter
from crawlkit.fetch.engine import FetchConfig
from crawlkit.frontier.store import NextOptions
from crawlkit.records import FetchRecord, Refusal, URLRecord
from crawlkit.shard.routing import inbox_files
from crawlkit.stages.fetch import fetch_records
from crawlkit.stages.frontier import take_batch
from crawlkit.streams import Record

__all__ = [
    "CHUNK_RECORDS",
    "CHUNK_SECONDS",
    "CUT_AGE_MAX",
    "CUT_CHECK",
    "CUT_SCALE_MAX",
    "FEW_HOSTS_PER_HOST",
    "INBOX_EVERY",
    "POST_BACKLOG",
    "POST_BACKLOG_MAX",
    "REFILL_ANSWERS",
    "REFILL_LOOK",
    "REFILL_WAIT",
    "Feed",
    "FetchRun",
    "LiveCycle",
    "cut_due",
    "cut_scale",
    "refill_share",
]

# A cycle is cut (WARC closed, handed to post-processing) after this many fetch
# records or this many seconds, whichever comes first.
CHUNK_RECORDS = 500
CHUNK_SECONDS = 2.0
# A cycle is cut by age only while post-processing is idle, or at this age (see cut_due).
CUT_AGE_MAX = 4 * CHUNK_SECONDS
# Seconds between two looks at the clock for a cycle due to be cut (see cut_on_time).
CUT_CHECK = 0.5
# While the fetcher holds URLs, a cycle is cut because the frontier had nothing to
# give once it is this old or holds this many records (see FetchRun._refill).
EMPTY_CUT_AGE = 1.0
EMPTY_CUT_RECORDS = 16
# Cut cycles waiting for post-processing (the one in hand included) from which each
# refill is halved per cycle more, and at which the fetcher gets no more URLs. A hard
# stop at 2 left the fetcher with only URLs of hosts not yet due: 4 requests in flight
# of 256 with 2,510 URLs queued (issue 27, measured with the loop timeline, against
# POST_BACKLOG_MAX = 2, the old hard stop, in bench_crawl's A/B).
POST_BACKLOG = 2
POST_BACKLOG_MAX = 6
# Fetch records a refill waits for since the last batch before it asks the frontier
# again (fewer when the fetcher holds few URLs), and the longest it waits for them;
# URLs queued meanwhile end the wait (see FetchRun._await_answers).
REFILL_ANSWERS = 64
REFILL_WAIT = 1.0
REFILL_LOOK = 0.25  # how often a waiting refill looks for URLs queued meanwhile
# --per-host spreads what the fetcher holds over many hosts. With few hosts queued
# there are not many to spread it over, and at 4 URLs a host each refill (a frontier
# batch: the queue heads read and the full hosts' records rotated to the back, a
# commit with fsyncs) gave a page or two: one site of 3,000 pages at no gap
# (--delay-factor 0) took 1,178 batches and 17.5 s, now 82 and 7.5 s; at a 0.05-s gap
# it got 15.8 pages/s of the ~18.9 its gap allows, now 18.7. So unless --per-host was
# given (an explicit bound is held exactly: what a stop gives back), with at most
# FEW_HOSTS hosts queued and post-processing keeping up, a host may hold the URLs of
# FEW_HOSTS_SECONDS of --min-delay gaps, at most FEW_HOSTS_PER_HOST and
# 1/FEW_HOSTS_SHARE of the hold per host queued: at the default 1-s gap, --per-host.
# (What a blocked site's hosts hold is refused: crawlkit/crawl/blocks.py.)
FEW_HOSTS_PER_HOST = 64
FEW_HOSTS_SHARE = 4
FEW_HOSTS_SECONDS = 1.0
# At most this many hosts queued: a refill looks whether they all hold half their
# share already before asking the frontier (see FetchRun._await_answers).
FEW_HOSTS = 64
# A shard's inbox is taken in by each cycle's links step, with the cycle's own links
# (Admission.take_inbox: no commits of its own). A refill takes it in only when the
# frontier has nothing to give, or when no links step has for this many seconds (a
# post thread that lags). Each refill's reading is an admission: site graph, seen set
# and frontier commits, with fsyncs: read at every refill, a worker of --workers 2
# made ~3x one process's commits per page, read every 2 s ~2x (issue 27). A worker
# cuts a cycle every 4 s at most while post-processing keeps up.
INBOX_EVERY = 8.0


# While cut cycles wait, cycles may be cut bigger (x2 per waiting cycle from
# POST_BACKLOG, at most CUT_SCALE_MAX): post-processing pays a fixed cost per cycle
# (seen set, frontier and step commits, each with fsyncs: half the post thread's time
# in py-spy), so bigger cycles could let it take more records a second when it lags.
# Off (1) by default: at 4 it did not measurably help (issue 27; 39 and 69 new
# pages/s against 62 and 61 at load 10-12).
CUT_SCALE_MAX = 1


def cut_scale(backlog: int) -> int:
    """How many times ``CHUNK_RECORDS`` and ``CHUNK_SECONDS`` a cycle may grow to
    while ``backlog`` cut cycles wait for post-processing."""
    if backlog < POST_BACKLOG:
        return 1
    return int(min(CUT_SCALE_MAX, 2 ** (backlog - POST_BACKLOG + 1)))


def cut_due(records: int, age: float, backlog: int, workers: int = 1) -> bool:
    """Whether a live cycle of ``records`` fetch records, ``age`` seconds old, is cut
    now, while ``backlog`` cut cycles wait for post-processing, in a crawl process
    that is one of ``workers`` (``crawl --workers``)."""
    scale = cut_scale(backlog)
    if records >= CHUNK_RECORDS * scale:
        return True
    if records == 0:
        return False
    # A worker of --workers N fetches about 1/N of the crawl's pages: its cycles reach
    # one process's size in N times the age. Cut at one process's age, they held
    # about half the records at N = 2 (issue 27), each paying the fixed costs below.
    seconds, oldest = CHUNK_SECONDS * scale * workers, CUT_AGE_MAX * workers
    # By age only once post-processing is idle (or the cycle is very old): while it
    # works on an earlier cycle this one's links wait for that one anyway, and
    # a cycle cut then would queue with half its records, paying post-processing's
    # fixed costs (commits, fsyncs) twice as often per page.
    return age >= seconds and (backlog == 0 or age >= oldest)


def refill_share(backlog: int) -> float:
    """The share of a full refill the fetcher gets while ``backlog`` cut cycles wait."""
    if backlog < POST_BACKLOG:
        return 1.0
    if backlog >= POST_BACKLOG_MAX:
        return 0.0
    return 0.5 ** (backlog - POST_BACKLOG + 1)


class LiveCycle:
    """The cycle being fetched into: its fetch log, redirect file and the WARC places of
    its robots.txt captures (``robots.ndjson``), flushed per record."""

    def __init__(self, dir: CrawlDir, path: Path, started: float):
        self.dir = dir
        self.path = path
        self.started = started
        self.records = 0
        # Plain NDJSON, appended and flushed per record: survives kill -9 line by line.
        self._log = open(path / "fetch.ndjson", "ab")  # noqa: SIM115
        self._redirects = open(path / "redirects.ndjson", "ab")  # noqa: SIM115
        self._robots = open(path / "robots.ndjson", "ab")  # noqa: SIM115

    @property
    def batches(self) -> bool:
        return any(self.dir.batches.glob(f"{self.path.name}-*.ndjson.zst"))

    def log(self, rec: FetchRecord) -> None:
        self._log.write(streams.dumps(rec))
        self._log.flush()
        self.records += 1

    def redirect(self, rec: URLRecord) -> None:
        self._redirects.write(streams.dumps(rec))
        self._redirects.flush()

    def robots_capture(self, rec: FetchRecord) -> None:
        self._robots.write(streams.dumps(rec))
        self._robots.flush()

    def close(self) -> None:
        if self._log.closed:
            return
        for f in (self._log, self._redirects, self._robots):
            f.flush()
            os.fsync(f.fileno())
            f.close()
        mark_done(self.path, "fetch", {"records": self.records})


class Feed:
    """The fetch side: fetch runs kept fed from the frontier, cutting cycles; what the
    fetcher holds unanswered, in all and per host, is counted here across them."""

    def __init__(
        self,
        *,
        options: CrawlOptions,
        limits: Limits,
        stores: Stores,
        gate: Gate,
        admission: Admission,
        cycles: CycleRunner,
        link_policy: LinkPolicy,
        dir: CrawlDir,
        reporter: Reporter,
    ):
        self.opts = options
        self.limits = limits
        self.stores = stores
        self.gate = gate
        self.admission = admission
        self.cycles = cycles
        self.link_policy = link_policy
        self.dir = dir
        self.rep = reporter
        # URLs handed to the fetcher and not answered yet, and the most it may hold:
        # enough to keep every due host busy, small enough that a stop leaves little.
        self.held = 0
        self.held_by_host: Counter[str] = Counter()  # the same, per host (frontier's key)
        self.hold = HOLD_PER_SLOT * options.fetch.concurrency
        self._batch_numbers = itertools.count(1)  # 0 names the batch a recovery requeues
        self.post_error: BaseException | None = None  # of the last fetch run
        self.blocks = OperatorBlocks(stores.frontier, gate.count_refused)

    def run(self, leftover: Leftover | None = None) -> None:
        """One fetch run (see :class:`FetchRun`), fetching ``leftover``'s URLs first."""
        FetchRun(self).run(leftover or Leftover())

    def _ingest_inbox(self, due_only: bool = False) -> bool:
        """Queue the inbox's URLs (a shard's, a worker's); with ``due_only`` only if
        no links step or refill has taken it in for :data:`INBOX_EVERY` seconds.
        True if it read files."""
        if due_only and self.limits.clock() < self.admission.inbox_taken + INBOX_EVERY:
            return False
        return self.admission.ingest_inbox()

    def pages_left(self) -> float:
        """Requests ``--max-pages`` still allows beyond those handed to the fetcher."""
        return self.limits.pages_left(self.held)

    def per_host_now(self, share: float = 1.0) -> int:
        """URLs of one host the fetcher may hold now: ``--per-host``, or when it was not
        given, with few hosts queued, up to :data:`FEW_HOSTS_PER_HOST` (see there)
        while post-processing keeps up (``share``, :func:`refill_share`, is 1)."""
        per_host = self.opts.per_host
        hosts = len(self.stores.frontier.hosts)
        if self.opts.per_host_given or not per_host or not hosts or hosts > FEW_HOSTS:
            return per_host
        if share < 1.0:  # post-processing lags: the fetcher must not run further ahead
            return per_host
        gaps = int(FEW_HOSTS_SECONDS / max(self.opts.fetch.min_delay, 1e-3))
        share_of_hold = self.hold // (hosts * FEW_HOSTS_SHARE)
        return max(per_host, min(FEW_HOSTS_PER_HOST, gaps, share_of_hold))

    def hosts_held(self) -> bool:
        """Whether the hosts with URLs queued are few (at most :data:`FEW_HOSTS`) and
        each holds half its share (:meth:`per_host_now`) or more in the fetcher."""
        queued = self.stores.frontier.hosts
        if not queued or len(queued) > FEW_HOSTS:
            return False
        # list() of a dict's keys runs in C, whole, while the post thread may add hosts
        need = max(1, self.per_host_now() // 2)
        return all(self.held_by_host[h] >= need for h in list(dict.keys(queued)))

    def next_batch(
        self,
        cycle: Path,
        track: Callable[[Path, list[Record]], None],
        held: dict[str, int] | None = None,
        share: float = 1.0,
    ) -> list[Record]:
        """The frontier's next batch, made durable in ``crawl/batches`` first.

        ``held`` counts, per host, URLs the fetcher holds unanswered: with them a host
        gets at most ``per_host`` in the fetcher at once, so the URLs held are spread
        over the hosts that can be served, not piled on slow ones. ``share`` scales
        the batch down (back-pressure, see :func:`refill_share`); at least one URL.
        """
        full = max(1, int(self.opts.batch_size * share))
        size = int(min(full, self.hold - self.held, self.pages_left()))
        if size <= 0:
            return []
        opts = NextOptions(
            max_urls=size,
            per_host=self.per_host_now(share),
            budgets=self.opts.budgets,
            outstanding=held or {},
        )
        out: list[Record] = []
        refused: list[Refusal] = []
        role = self.gate.role
        # Numbered by the run, never by counting files: a finished batch is deleted, and
        # a count would then name the next batch after one still in flight.
        n = next(self._batch_numbers)
        path = self.dir.batches / f"{cycle.name}-{n:04d}.ndjson.zst"

        def write(batch: Any) -> None:
            out.extend(orjson.loads(line) for line in batch.lines)
            refused.extend(batch.refused)
            out[:], excluded = self.link_policy.exclude_batch(out)
            refused.extend(excluded)
            if role is not None:
                # A URL of a slot this shard no longer owns (the map changed) goes to
                # its owner instead of being fetched here; the rest carry the epoch of
                # now. (A stamp a record brought from an earlier batch, e.g. deferred
                # and handed over, says nothing about this one: it is replaced.)
                out[:] = self.gate.route(out, "stale")
                for r in out:
                    r["shard_epoch"] = role.epoch(str(r.get("site") or ""))
            if out:
                write_file(path, out)

        def take() -> None:
            # A batch whose every URL an exclude pattern (a live ignore) refused is not
            # "nothing to give": the URLs behind it may be fetchable. Take the next one,
            # else the run ends with them queued ("nothing more can be fetched now").
            while not out and take_batch(self.stores.frontier, opts, write=write).lines:
                pass  # on disk before its removal commits

        with self.stores.lock:
            ingested = role is not None and self._ingest_inbox(due_only=True)
            take()
            if not out and role is not None and not ingested and self._ingest_inbox():
                take()  # nothing queued here: the inbox's links, delivered since, are the work
        if refused:
            write_file(cycle / f"batch-refused-{n}.ndjson.zst", refused)
            self.gate.count_refused(refused)
        if out:
            track(path, out)
        return out


class FetchRun:
    """One fetch run: fetch until the frontier has nothing more to give, cutting
    cycles as it goes.

    The fetcher runs on this thread's event loop; whenever few hosts wait it asks
    :meth:`refill` for more. Every ``CHUNK_RECORDS`` fetch records or
    ``CHUNK_SECONDS`` the current cycle is cut (its WARC closed) and handed to the
    post-processing thread (extract, dedup, seen-merge, frontier add, recrawl), so
    parsing overlaps fetching and there is no idle tail between cycles.
    """

    def __init__(self, feed: Feed):
        self.feed = feed
        self.clock = feed.limits.clock
        self.post = PostWorker(feed.cycles)
        self.live = LiveCycle(feed.dir, feed.dir.new_cycle(), self.clock())
        # url -> the batch files it is in, oldest first (the frontier may hand a URL out
        # twice; each fetch record settles one of them)
        self.outstanding: dict[str, list[Path]] = {}
        self.batch_left: dict[Path, int] = {}
        self.fetcher: Any = None  # once the first refill has met it
        self.last_empty: tuple[int, int] | None = None  # see refill
        self.cutting = False
        self.cut_asked: asyncio.Task[None] | None = None  # the cut a fetch record asked for
        self.cut_failed: list[BaseException] = []
        self.timer: asyncio.Task[None] | None = None  # cut_on_time, held while the run lives
        # opt-in: crawl --timeline FILE (see crawl/timeline.py)
        path = feed.opts.timeline
        self.probe = LoopProbe(self, Timeline(path)) if path is not None else None
        self.refused: str | None = None  # why the last refill gave nothing (for the probe)
        # fetch records so far, and at the last batch (see _await_answers)
        self.answers = 0
        self.answers_at_batch = 0
        self.answers_wanted = 0
        self.version_at_batch = 0  # the gate's version then: URLs queued since?
        self.answered: asyncio.Event | None = None  # set once answers_wanted is reached

    def track(self, path: Path, records: list[Record]) -> None:
        """``records`` were handed to the fetcher from the batch file ``path``."""
        for rec in records:
            self.outstanding.setdefault(str(rec.get("url")), []).append(path)
            self.batch_left[path] = self.batch_left.get(path, 0) + 1
        self.feed.held += len(records)
        self.feed.held_by_host.update(str(rec.get("host")) for rec in records)

    def cut_due(self, now: float) -> bool:
        live = self.live
        return cut_due(
            live.records, now - live.started, self.post.backlog(), self.feed.opts.workers
        )

    async def _cut_if_due(self, fetcher: Any) -> None:
        # A refill that ran before this task may have cut the cycle already; cut again
        # regardless, it sent the new live cycle to post-processing with no record.
        if self.cut_due(self.clock()):
            await self.cut(fetcher)

    def _cut_done(self, task: asyncio.Task[None]) -> None:
        self.cut_asked = None
        if not task.cancelled() and task.exception() is not None:
            self.cut_failed.append(task.exception())  # type: ignore[arg-type]

    def sink(self, rec: FetchRecord) -> None:
        """A fetch record: into the live cycle's log, the summary, and the hold."""
        feed = self.feed
        summary = feed.gate.summary
        self.live.log(rec)
        if self.probe is not None:
            self.probe.timeline.records += 1
        if self.fetcher is not None and self.cut_asked is None and self.cut_due(self.clock()):
            # A busy fetcher asks for no refill, so a cycle is also cut here: else
            # it grows while the fetcher is busy, and its links wait for all of it.
            asked = asyncio.get_running_loop().create_task(self._cut_if_due(self.fetcher))
            asked.add_done_callback(self._cut_done)
            self.cut_asked = asked
        summary.outcomes[str(rec.get("outcome"))] += 1
        summary.errors.note(rec)
        if rec.get("fetched_at") is not None:
            # A page request made (robots.txt is not a record): answered with a status,
            # failed under way (a broken response, a reset, a timeout), or cut by the
            # run's end. Counting only those with a status let --max-pages through;
            # counting every record with the key (null: no request) stopped it short.
            summary.requests += 1
        stopped = bool(rec.get("stopped"))
        summary.unstarted += stopped
        self.answers += 1
        if self.answered is not None and self.answers >= self.answers_wanted:
            self.answered.set()
        paths = self.outstanding.get(str(rec.get("url")))
        if paths:
            # The fetcher answers a URL it already holds "refused: duplicate" at once:
            # that settles the copy handed out last. The first copy is settled by
            # its real answer; its batch file must stay until then.
            path = paths.pop() if rec.get("refused") == "duplicate" else paths.pop(0)
            # A URL given back because the run ends still counts against the hold:
            # else each refill near the end would be given back too, and the run
            # would end with the frontier moved into the waiting room.
            if not stopped:
                feed.held -= 1
                host = str(rec.get("host"))
                feed.held_by_host[host] -= 1
                if feed.held_by_host[host] <= 0:
                    del feed.held_by_host[host]
            if not paths:
                del self.outstanding[str(rec.get("url"))]
            self.batch_left[path] -= 1
            if self.batch_left[path] <= 0:  # every URL of the batch is in a fetch log
                del self.batch_left[path]
                path.unlink(missing_ok=True)

    async def cut(self, fetcher: Any) -> None:
        """Cut the live cycle: its WARC records whole on disk, handed to extract and
        the post thread; a new live cycle takes the next records."""
        if self.cutting:
            return  # one cut at a time; the other caller's records go in the next
        self.cutting = True
        try:
            # No WARC flush here: the WARC thread flushes each batch before it hands
            # back the batch's locations, so every record the live cycle logged is
            # whole on disk already. (A flush awaited here queued behind the WARC
            # thread's whole backlog: one cut waited 15 s, the cycle grew to 22,529
            # records and the fetcher then stopped on the backlog; issue 27.)
            done = self.live
            self.live = LiveCycle(self.feed.dir, self.feed.dir.new_cycle(), self.clock())
            done.close()
            self.feed.cycles.start_extract(done.path)
            self.post.submit(done.path)
        finally:
            self.cutting = False

    async def cut_on_time(self, fetcher: Any) -> None:
        # A cycle is cut when a fetch record or a refill comes. While every request
        # slot waits on a slow response (a drip) neither comes, and the cycle's
        # links, other hosts' next pages, would wait for it: look on a timer too.
        while fetcher.running:
            await asyncio.sleep(CUT_CHECK)
            if fetcher.running and self.cut_asked is None and self.cut_due(self.clock()):
                try:
                    await self.cut(fetcher)
                except Exception as exc:  # raised by the next refill
                    self.cut_failed.append(exc)
                    return

    async def refill(self, fetcher: Any) -> list[Record] | None:
        """The fetcher's call for more: a batch, ``[]`` (nothing now, ask again) or
        ``None`` (no more: the fetch run ends once the fetcher is done)."""
        more = await self._refill(fetcher)
        if self.probe is not None:
            answer = "given" if more else self.refused or "other"
            self.probe.timeline.refill(answer, len(more or []))
        self.refused = None
        return more

    async def _await_answers(self, fetcher: Any) -> None:
        """Before asking the frontier again, wait for a few answers since the last
        batch (:data:`REFILL_ANSWERS`, fewer if the fetcher holds few URLs), or for
        URLs queued since, at most :data:`REFILL_WAIT` seconds. Each batch costs the
        frontier a fixed price (a window read from the queue heads, a commit with
        fsyncs, a batch file): a fetcher that asked again at once got a few URLs each
        time (those the answers since had freed) and paid that price per few pages.

        A fetcher gone idle ends the wait at once (:attr:`Fetcher.idle`: nothing in
        flight, no waiting host due): the URLs it still holds belong to hosts sitting
        out long gaps, and waiting for their answers left it idle with URLs queued. At
        the end of a few-seed crawl the last big hosts got their ``--per-host`` URLs
        about once a second, each batch's wait timed out on a Crawl-delay host's.
        Unless every host with URLs queued holds half its share already (a few hosts,
        :meth:`Feed.hosts_held`): a batch would give each a URL or two, and one site
        at no gap got a batch a page (~40 a second, at 15 ms of CPU a page)."""
        if not fetcher.has_work():
            return  # nothing held: ask at once
        held = self.feed.hosts_held()
        if fetcher.idle.is_set() and not held:
            return  # nothing to do now: ask at once
        wanted = min(REFILL_ANSWERS, max(1, self.feed.held // 2))
        if self.answers - self.answers_at_batch >= wanted:
            return
        self.answers_wanted = self.answers_at_batch + wanted
        answered = self.answered = asyncio.Event()
        loop = asyncio.get_running_loop()
        until = loop.time() + REFILL_WAIT
        gate, blocks = self.feed.gate, self.feed.blocks
        excludes = self.feed.link_policy.excludes
        try:
            # New URLs queued (post-processing added a cycle's links) end the wait too:
            # there is new work to hand out. Looked at every REFILL_LOOK seconds.
            # So do a stop (a signal, --for, --max-pages), the fetcher's end, a block,
            # an edit of the ignore file (what the fetcher holds is checked after it).
            while not answered.is_set() and gate.version == self.version_at_batch:
                if not fetcher.running or self.feed.limits.should_stop() or blocks.posted():
                    break
                if excludes and excludes.changed():
                    break
                left = until - loop.time()
                if left <= 0 or (fetcher.idle.is_set() and not held):
                    break
                await _either(answered, None if held else fetcher.idle, min(left, REFILL_LOOK))
        finally:
            self.answered = None

    async def _refill(self, fetcher: Any) -> list[Record] | None:
        feed = self.feed
        if self.fetcher is None:
            self.fetcher = fetcher
            loop = asyncio.get_running_loop()
            self.timer = loop.create_task(self.cut_on_time(fetcher))
            if self.probe is not None:
                self.probe.task = loop.create_task(self.probe.run(fetcher))
        self.post.raise_if_failed()
        if self.cut_failed:
            raise self.cut_failed[0]
        if self.cut_due(self.clock()):
            await self.cut(fetcher)
        if feed.limits.should_stop():
            return None
        loop = asyncio.get_running_loop()
        due = feed.stores.next_waiting_time()
        if due is not None and due <= self.clock():
            await loop.run_in_executor(None, feed.gate.release_waiting)
        if feed.pages_left() <= 0:
            return [] if feed.held else None  # --max-pages: wait for the answers
        share = refill_share(self.post.backlog())
        if feed.held >= feed.hold or share <= 0.0:
            self.refused = "hold" if feed.held >= feed.hold else "backlog"
            return []  # back-pressure: the fetcher works off what it holds
        # Ask the frontier again only when something changed since it last had
        # nothing to give: URLs queued, or answers that free a host's share.
        changed = (feed.gate.version, sum(feed.gate.summary.outcomes.values()))
        # (A shard's inbox may hold URLs when nothing here changed: looked at then;
        # asked at every refill, a worker with nothing queued asked 4 times a second.)
        if changed != self.last_empty or (
            feed.gate.role is not None and inbox_files(feed.dir.state_path, feed.rep)
        ):
            await self._await_answers(fetcher)
            if feed.limits.should_stop():
                return None
            held = dict(feed.held_by_host)  # read on this thread; the loop changes it
            # The batch is tracked here, on the loop's thread, not in the executor:
            # ``sink`` lowers the same counts on this thread, and a ``+=`` from another
            # thread between its read and its write would lose an update (the hold
            # would drift, and a hold that only looks full stops the refills).
            handed: list[tuple[Path, list[Record]]] = []
            batch = await loop.run_in_executor(
                None,
                feed.next_batch,
                self.live.path,
                lambda path, records: handed.append((path, records)),
                held,
                share,
            )
            for path, records in handed:
                self.track(path, records)
            feed.blocks.refuse_held(fetcher)
            feed.link_policy.refuse_held(fetcher, feed.gate.count_refused)
            self.answers_at_batch = self.answers
            self.version_at_batch = feed.gate.version
            if batch:
                return batch
            self.last_empty = changed
        self.refused = "empty"
        # Nothing to give: the live cycle's links may be what the crawl waits for, so
        # it is cut now, unless post-processing is busy with an earlier cycle (whose
        # links come first anyway): it is then cut once that is done (the next refill
        # finds the post thread idle) or by its size or age. Cut at every empty
        # refill, cycles were cut 4 times a second per process, and each pays
        # post-processing's fixed costs (commits, fsyncs) whatever its size. An idle
        # fetcher that still holds URLs asks at every answer (see _await_answers):
        # then, as in the tail of a crawl where Crawl-delay hosts answer one URL at a
        # time, a cycle is cut here once EMPTY_CUT_AGE seconds old or
        # EMPTY_CUT_RECORDS records big (at every empty refill, the tail of a
        # few-seed crawl cut 122 cycles in 90 s where the tree before cut 78).
        if self.live.records and not self.post.busy():
            age = self.clock() - self.live.started
            young = age < EMPTY_CUT_AGE and self.live.records < EMPTY_CUT_RECORDS
            if young and fetcher.has_work():
                return []  # cut by a later refill: more answers are to come
            await self.cut(fetcher)
        if self.post.busy() or fetcher.has_work():
            # Pages still to come, or links still to process, may queue more URLs:
            # "no more" now would leave them to the next fetch run.
            return []
        return None

    def run(self, leftover: Leftover) -> None:
        """Fetch ``leftover``'s URLs and what the frontier gives, until it has no more."""
        feed, opts = self.feed, self.feed.opts
        initial: list[Record] = []
        if leftover.records:
            path = feed.dir.batches / f"{self.live.path.name}-0000.ndjson.zst"
            write_file(path, leftover.records)
            for old in leftover.batches:
                old.unlink(missing_ok=True)
            self.track(path, leftover.records)
            initial = feed.blocks.leftover(leftover.records)
            # A killed run's URLs count against --max-pages too (recovery.py)
            initial, over = within_limit(initial, feed.limits.pages_left(0), self.clock())
            for rec in over:
                self.sink(rec)
        config = opts.fetch
        if feed.limits.deadline is not None:
            left = max(0.0, feed.limits.deadline - self.clock())
            config = FetchConfig(**{**config.__dict__, "duration": left})
        try:
            fetch_records(
                cast("list[URLRecord]", initial),  # the frontier's URL records
                self.sink,
                state_dir=feed.dir.state_path,
                config=config,
                warc_dir=feed.cycles.warcs.root,
                allow_net=opts.allow_net,
                hosts_file=opts.hosts_file,
                on_redirect=lambda rec: self.live.redirect(rec),
                reporter=feed.rep,
                warc=opts.warc,
                warc_info=opts.warc_info,
                warc_index=opts.archive.index,  # the collection index reads no WARC
                refill=self.refill,
                on_interrupt=feed.limits.on_signal,
                net=opts.net,
                on_robots_capture=lambda rec: self.live.robots_capture(rec),
                host_state=feed.stores.hosts,
                on_request=feed.gate.journal.count,  # on disk: --max-pages after a kill -9
            )
            # The fetcher answered every URL it was given (one record each), so a batch
            # file still here can only differ in spelling from its records: done too.
            for path in list(self.batch_left):
                feed.rep.warn(
                    f"{path.name}: {self.batch_left[path]} URLs answered under another spelling"
                )
                path.unlink(missing_ok=True)
        finally:
            live = self.live
            live.close()
            if live.records or live.batches:
                self.post.submit(live.path)
            else:
                shutil.rmtree(live.path, ignore_errors=True)
            self.post.close()
            feed.cycles.archive_closed_warcs()
            if self.probe is not None:
                self.probe.close()
            feed.held = 0  # every URL handed out has its record (or never will)
            feed.held_by_host.clear()
        feed.post_error = self.post.error


async def _either(first: asyncio.Event, second: asyncio.Event | None, timeout: float) -> None:
    """Wait until ``first`` or ``second`` (if any) is set, at most ``timeout`` seconds."""
    waiters = [asyncio.ensure_future(e.wait()) for e in (first, second) if e is not None]
    try:
        await asyncio.wait(waiters, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for waiter in waiters:
            waiter.cancel()
