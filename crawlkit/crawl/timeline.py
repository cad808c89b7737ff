"""A timeline of the crawl loop's own states, for finding stop-and-go (issue 27).

Opt-in, for benchmarks and debugging: with ``crawl --timeline FILE``
(``CrawlOptions.timeline``), each fetch run appends one NDJSON line per
``TIMELINE_WINDOW`` seconds to FILE (``bench/bench_crawl.py --timeline`` gives it and
sums it up). Without it nothing is counted and nothing is written.

A line: ``t`` (seconds since the fetch run started, window end), ``records`` (fetch
records in the window), ``in_flight`` (requests running at the sample), ``waiting``
(hosts queued in the fetcher's scheduler), ``due`` (of those, due now), ``held`` (URLs
handed to the fetcher, unanswered), ``live`` (fetch records in the cycle not cut yet),
``backlog`` (cut cycles not yet post-processed, the one running included), ``post_busy``
(share of the window the post-processing thread worked), ``queued`` (URLs in the
frontier, read without its lock: approximate), and the window's refills by answer:
``refill_urls`` (URLs given), ``refill_given`` / ``refill_backlog`` (refused: cut cycles
wait) / ``refill_hold`` (refused: the hold is full) / ``refill_empty`` (the frontier had
nothing to give) / ``refill_other``; ``lag`` (seconds the event loop woke this sampler
late: a loop kept from running).
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

import orjson

__all__ = ["TIMELINE_WINDOW", "LoopProbe", "Timeline"]

TIMELINE_WINDOW = 1.0


class Timeline:
    """Counts the loop's events and samples its states once a window (see module doc)."""

    def __init__(self, path: Path):
        path.parent.mkdir(parents=True, exist_ok=True)
        self._out: IO[bytes] = open(path, "ab")  # noqa: SIM115
        self.refills: Counter[str] = Counter()
        self.records = 0
        self._start = time.monotonic()

    def refill(self, answer: str, urls: int = 0) -> None:
        """One refill answered: ``given``, ``backlog``, ``hold``, ``empty`` or ``other``."""
        self.refills[answer] += 1
        self.refills["urls"] += urls

    async def run(self, sample: Callable[[], dict[str, Any]], running: Callable[[], bool]) -> None:
        """Write a line per window while ``running()``; ``sample()`` gives the states."""
        while running():
            began = time.monotonic()
            await asyncio.sleep(TIMELINE_WINDOW)
            # How late the event loop woke us: a loop kept from running (a blocking
            # call on it, or the interpreter lock held by other threads) shows here.
            lag = time.monotonic() - began - TIMELINE_WINDOW
            if not self._out.closed:
                self.write({**sample(), "lag": round(lag, 3)})

    def write(self, states: dict[str, Any]) -> None:
        line: dict[str, Any] = {"t": round(time.monotonic() - self._start, 2)}
        line["records"] = self.records
        line.update(states)
        for key in ("urls", "given", "backlog", "hold", "empty", "other"):
            line[f"refill_{key}"] = self.refills[key]
        self._out.write(orjson.dumps(line) + b"\n")
        self._out.flush()
        self.records = 0
        self.refills.clear()

    def close(self) -> None:
        self._out.close()


class LoopProbe:
    """The opt-in timeline of one fetch run (``crawl --timeline``): counts its records
    and refills, and samples its states once a window (see the module doc)."""

    def __init__(self, run: Any, timeline: Timeline):
        # ``run``: the fetchrun.FetchRun it samples (fetchrun.py imports this module)
        self.fetch_run = run
        self.timeline = timeline
        self.busy_before = 0.0  # the post thread's busy seconds at the last sample
        self.task: asyncio.Task[None] | None = None  # the sampler, held while the run lives

    async def run(self, fetcher: Any) -> None:
        await self.timeline.run(lambda: self.sample(fetcher), lambda: fetcher.running)

    def sample(self, fetcher: Any) -> dict[str, Any]:
        """The loop's states now, for the timeline."""
        run = self.fetch_run
        busy = run.post.busy_total()
        share = (busy - self.busy_before) / TIMELINE_WINDOW
        self.busy_before = busy
        try:
            queued = sum(len(q) for q in run.feed.stores.frontier.queues.values())
        except Exception:  # read without the lock: it may change under us
            queued = -1
        return {
            "in_flight": fetcher.scheduler.busy,
            "waiting": len(fetcher.scheduler),
            "due": fetcher.scheduler.due_count(fetcher.clock()),
            "held": run.feed.held,
            "live": run.live.records,
            "backlog": run.post.backlog(),
            "post_busy": round(min(1.0, share), 2),
            "queued": queued,
        }

    def close(self) -> None:
        """Write the last window, short (every record and refill counted), and close."""
        if self.fetch_run.fetcher is not None:
            self.timeline.write({**self.sample(self.fetch_run.fetcher), "lag": 0.0})
        self.timeline.close()
