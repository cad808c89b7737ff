"""One fetch run of a crawl: the fetcher kept fed from the frontier (``refill``), its
fetch records logged into the live cycle (``sink``), and the live cycle cut and
handed to post-processing as it goes (:class:`FetchRun`); :class:`LiveCycle`, the
files of the cycle being fetched into. When to cut and how much to ask for is
:mod:`crawlkit.crawl.pacing`; what the fetcher holds across runs and the frontier's
next batch is :class:`crawlkit.crawl.feed.Feed`.
"""

from __future__ import annotations

import asyncio
import os
import shutil
from pathlib import Path
from typing import Any, cast

from crawlkit import streams
from crawlkit.crawl.cycle import PostWorker
from crawlkit.crawl.feed import Feed
from crawlkit.crawl.files import CrawlDir, mark_done, write_file
from crawlkit.crawl.pacing import (
    CUT_CHECK,
    EMPTY_CUT_AGE,
    EMPTY_CUT_RECORDS,
    REFILL_ANSWERS,
    REFILL_LOOK,
    REFILL_WAIT,
    cut_due,
    refill_share,
)
from crawlkit.crawl.recovery import Leftover, within_limit
from crawlkit.crawl.timeline import LoopProbe, Timeline
from crawlkit.fetch.engine import FetchConfig
from crawlkit.records import FetchRecord, URLRecord
from crawlkit.shard.routing import inbox_files
from crawlkit.stages.fetch import fetch_records
from crawlkit.streams import Record

__all__ = ["FetchRun", "LiveCycle"]


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
