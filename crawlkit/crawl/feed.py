"""The fetch side of the loop: frontier next → fetch, kept fed, cutting cycles as it goes.

The fetcher runs on an event loop and asks for more URLs (``refill``) whenever few
hosts wait; each batch is written to ``STATE/crawl/batches`` before the frontier
commits its removal. Back-pressure (invariant 8): the fetcher holds at most
``--per-host`` unanswered URLs of a host and ``hold`` in all; from ``POST_BACKLOG``
cut cycles waiting for post-processing each refill is halved per cycle more (the
fetcher slows to what post-processing takes, but never runs dry: its held URLs may
all be on hosts not due), and at ``POST_BACKLOG_MAX`` it gets nothing.
"""

from __future__ import annotations

import asyncio
import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson

from crawlkit import io
from crawlkit.crawl.core import CrawlCore
from crawlkit.crawl.cycle import CycleSteps, PostWorker
from crawlkit.crawl.files import mark_done, write_file
from crawlkit.crawl.timeline import TIMELINE_WINDOW, from_env
from crawlkit.fetch.engine import FetchConfig
from crawlkit.frontier.store import NextOptions
from crawlkit.io import Record
from crawlkit.stages.fetch import fetch_records
from crawlkit.stages.frontier import take_batch

__all__ = [
    "CHUNK_RECORDS",
    "CHUNK_SECONDS",
    "CUT_CHECK",
    "CUT_SCALE_MAX",
    "POST_BACKLOG",
    "POST_BACKLOG_MAX",
    "Feed",
    "LiveCycle",
    "cut_scale",
    "refill_share",
]

# A cycle is cut (WARC closed, handed to post-processing) after this many fetch
# records or this many seconds, whichever comes first.
CHUNK_RECORDS = 500
CHUNK_SECONDS = 2.0
# Seconds between two looks at the clock for a cycle due to be cut (see cut_on_time).
CUT_CHECK = 0.5
# Cut cycles waiting for post-processing (the one in hand included) from which each
# refill is halved per cycle more, and at which the fetcher gets no more URLs. A hard
# stop at 2 left the fetcher with only URLs of hosts not yet due: 4 requests in flight
# of 256 with 2,510 URLs queued (issue 27, measured with CRAWLKIT_TIMELINE).
# CRAWLKIT_POST_BACKLOG_MAX=2 brings back the hard stop (a knob for bench_crawl's A/B).
POST_BACKLOG = 2
POST_BACKLOG_MAX = int(os.environ.get("CRAWLKIT_POST_BACKLOG_MAX") or 6)


# While cut cycles wait, cycles may be cut bigger (x2 per waiting cycle from
# POST_BACKLOG, at most CUT_SCALE_MAX): post-processing pays a fixed cost per cycle
# (seen set, frontier and step commits, each with fsyncs: half the post thread's time
# in py-spy), so bigger cycles could let it take more records a second when it lags.
# Off (1) by default: at 4 it did not measurably help (issue 27; 39 and 69 new
# pages/s against 62 and 61 at load 10-12); CRAWLKIT_CUT_SCALE_MAX=4 to measure again.
CUT_SCALE_MAX = int(os.environ.get("CRAWLKIT_CUT_SCALE_MAX") or 1)


def cut_scale(backlog: int) -> int:
    """How many times ``CHUNK_RECORDS`` and ``CHUNK_SECONDS`` a cycle may grow to
    while ``backlog`` cut cycles wait for post-processing."""
    if backlog < POST_BACKLOG:
        return 1
    return int(min(CUT_SCALE_MAX, 2 ** (backlog - POST_BACKLOG + 1)))


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

    def __init__(self, crawl: CrawlCore, path: Path):
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
        mark_done(self.path, "fetch", {"records": self.records})


class Feed(CycleSteps):
    """The fetch side: one fetch run kept fed from the frontier, cutting cycles."""

    def _fetch_run(self, pending: list[Record]) -> None:
        """Fetch until the frontier has nothing more to give, cutting cycles as it goes.

        The fetcher runs on this thread's event loop; whenever few hosts wait it asks
        its ``refill`` for more. Every ``CHUNK_RECORDS`` fetch records or
        ``CHUNK_SECONDS`` the current cycle is cut (its WARC closed) and handed to the
        post-processing thread (extract, dedup, seen-merge, frontier add, recrawl),
        so parsing overlaps fetching and there is no idle tail between cycles.
        """
        post = PostWorker(self)
        live = LiveCycle(self, self.dir.new_cycle())
        timeline = from_env()  # opt-in: CRAWLKIT_TIMELINE=FILE (see crawl/timeline.py)
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
        timer: list[asyncio.Task[None]] = []  # cut_on_time, held while the run lives

        def cut_due(now: float) -> bool:
            scale = cut_scale(post.backlog())
            return live.records >= CHUNK_RECORDS * scale or (
                live.records > 0 and now - live.started >= CHUNK_SECONDS * scale
            )

        def cut_done(task: asyncio.Task[None]) -> None:
            cut_asked.clear()
            if not task.cancelled() and task.exception() is not None:
                cut_failed.append(task.exception())  # type: ignore[arg-type]

        def sink(rec: Record) -> None:
            live.log(rec)
            if timeline is not None:
                timeline.records += 1
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
                live = LiveCycle(self, self.dir.new_cycle())
                done.close()
                self._start_extract(done.path)
                post.submit(done.path)
            finally:
                cutting = False

        async def cut_on_time(fetcher: Any) -> None:
            # A cycle is cut when a fetch record or a refill comes. While every request
            # slot waits on a slow response (a drip) neither comes, and the cycle's
            # links, other hosts' next pages, would wait for it: look on a timer too.
            while fetcher.running:
                await asyncio.sleep(CUT_CHECK)
                if fetcher.running and not cut_asked and cut_due(self.clock()):
                    try:
                        await cut(fetcher)
                    except Exception as exc:  # raised by the next refill
                        cut_failed.append(exc)
                        return

        async def refill(fetcher: Any) -> list[Record] | None:
            more = await _refill(fetcher)
            if timeline is not None:
                answer = "given" if more else last_refused[0] or "other"
                timeline.refill(answer, len(more or []))
            last_refused[0] = None
            return more

        last_refused: list[str | None] = [None]  # why the last refill gave nothing

        async def _refill(fetcher: Any) -> list[Record] | None:
            if not running:
                running.append(fetcher)
                timer.append(asyncio.get_running_loop().create_task(cut_on_time(fetcher)))
                if timeline is not None:
                    timer.append(
                        asyncio.get_running_loop().create_task(
                            timeline.run(lambda: sample(fetcher), lambda: fetcher.running)
                        )
                    )
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
            share = refill_share(post.backlog())
            if self.held >= self.hold or share <= 0.0:
                last_refused[0] = "hold" if self.held >= self.hold else "backlog"
                return []  # back-pressure: the fetcher works off what it holds
            # Ask the frontier again only when something changed since it last had
            # nothing to give: URLs queued, or answers that free a host's share.
            changed = (self.frontier_version, sum(self.summary.outcomes.values()))
            if changed != last_empty[0] or self.role is not None:
                held = dict(self.held_by_host)  # read on this thread; the loop changes it
                batch = await loop.run_in_executor(
                    None, self._next_batch, live.path, track, held, share
                )
                if batch:
                    return batch
                last_empty[0] = changed
            last_refused[0] = "empty"
            if live.records:
                await cut(fetcher)
            if post.busy() or fetcher.has_work():
                # Pages still to come, or links still to process, may queue more URLs:
                # "no more" now would leave them to the next fetch run.
                return []
            return None

        busy_before = [0.0]

        def sample(fetcher: Any) -> dict[str, Any]:
            """The loop's states now, for the timeline."""
            busy = post.busy_total()
            share = (busy - busy_before[0]) / TIMELINE_WINDOW
            busy_before[0] = busy
            try:
                queued = sum(len(q) for q in self.frontier.queues.values())
            except Exception:  # read without the lock: it may change under us
                queued = -1
            return {
                "in_flight": fetcher.scheduler.busy,
                "waiting": len(fetcher.scheduler),
                "due": fetcher.scheduler.due_count(fetcher.clock()),
                "held": self.held,
                "live": live.records,
                "backlog": post.backlog(),
                "post_busy": round(min(1.0, share), 2),
                "queued": queued,
            }

        initial: list[Record] = []
        if pending:
            path = self.dir.batches / f"{live.path.name}-0000.ndjson.zst"
            write_file(path, pending)
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
                initial,
                sink,
                state_dir=self.state.path,
                config=config,
                warc_dir=self.warc_root,
                allow_net=self.opts.allow_net,
                hosts_file=self.opts.hosts_file,
                on_redirect=lambda rec: live.redirect(rec),
                reporter=self.rep,
                warc=self.opts.warc,
                warc_info=self.opts.warc_info,
                warc_index=self.opts.archive.index,  # the collection index reads no WARC
                refill=refill,
                on_interrupt=self._on_signal,
                net=self.opts.net,
                on_robots_capture=lambda rec: live.robots_capture(rec),
                host_state=self.hosts,
            )
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
            if timeline is not None:
                if running:  # the last window, short: every record and refill counted
                    timeline.write({**sample(running[0]), "lag": 0.0})
                timeline.close()
            self.held = 0  # every URL handed out has its record (or never will)
            self.held_by_host.clear()
        self.post_error = post.error

    def _next_batch(
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
        size = int(min(full, self.hold - self.held, self._pages_left()))
        if size <= 0:
            return []
        opts = NextOptions(
            max_urls=size,
            per_host=self.opts.per_host,
            budgets=self.opts.budgets,
            outstanding=held or {},
        )
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
                write_file(path, out)

        with self.lock:
            if self.role is not None:
                self._ingest_inbox()
            # A batch whose every URL an exclude pattern (a live ignore) refused is not
            # "nothing to give": the URLs behind it may be fetchable. Take the next one,
            # else the run ends with them queued ("nothing more can be fetched now").
            while not out and take_batch(self.frontier, opts, write=write).lines:
                pass  # on disk before its removal commits
        if refused:
            write_file(cycle / f"batch-refused-{n}.ndjson.zst", refused)
            self._count_refused(refused)
        if out:
            track(path, out)
        return out
