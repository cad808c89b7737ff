"""Bounded: post-processing that falls behind slows the fetcher; --for cuts it off."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest
from conftest import start_testweb

from crawlkit.crawl import core
from crawlkit.crawl.cycle import CycleRunner
from crawlkit.crawl.loop import CrawlOptions, crawl
from crawlkit.fetch.engine import FetchConfig


def _options(web, duration: float | None) -> CrawlOptions:
    return CrawlOptions(
        scope="any",
        duration=duration,
        budgets=False,
        fetch=FetchConfig(min_delay=0.2, timeout=3.0),
        allow_net=(web.info["allow_net"],),
        hosts_file=web.hosts_file,
    )


def test_a_stuck_post_processing_stops_the_feed_and_the_next_run_finishes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    web_args = ("--hosts", "8", "--pages", "40", "--special", "none", "--seed", "8")
    real_dedup = CycleRunner.dedup
    blocked: list[str] = []

    def dedup_stuck_until_the_deadline(self: CycleRunner, cycle: Path) -> None:
        # The first cycle's dedup takes until the run's deadline (a slow disk, a huge
        # page): post-processing falls behind everything fetched after it.
        limits = self.limits
        if not blocked and limits.deadline is not None:
            blocked.append(cycle.name)
            while limits.clock() < limits.deadline:
                limits.sleep_until(limits.deadline)
        real_dedup(self, cycle)

    with start_testweb(tmp_path, *web_args) as web:
        pages = [u for h in web.hosts_of_kind("ordinary") for u in h["pages"]]
        # Every page is a seed: the frontier holds the whole web from the start, so
        # only back-pressure keeps the fetcher from running through it.
        state = tmp_path / "state"
        monkeypatch.setattr(core, "STOP_GRACE", 0.0)
        monkeypatch.setattr(CycleRunner, "dedup", dedup_stuck_until_the_deadline)
        first = crawl(state, pages, _options(web, duration=10.0))
        monkeypatch.setattr(CycleRunner, "dedup", real_dedup)
        cycles = sorted(p for p in (state / "crawl" / "cycles").iterdir() if p.is_dir())
        unfinished = [c.name for c in cycles if not (c / "cycle.done").exists()]
        second = crawl(state, [], _options(web, duration=None))
        requests = web.requests()
    assert blocked and first.stopped == "time limit (--for)"
    # The fetcher got no more URLs once 2 cut cycles waited: at 5 requests/s a host
    # (0.2 s gap) it could have fetched all 8 hosts' pages in 10 s; it fetched the
    # first two cycles' worth and what it held (at most --per-host a host).
    assert first.outcomes["fetched"] <= 0.75 * len(pages)
    # Post-processing stopped at the deadline (no grace here) and left its cycles
    assert blocked[0] in unfinished
    # ... which the next run finished: nothing lost, nothing fetched twice.
    assert all((c / "cycle.done").exists() for c in cycles)
    assert second.stopped == "frontier empty"
    count = Counter((q["host"], q["path"]) for q in requests if q["path"] != "/robots.txt")
    assert len(count) >= len(pages) and max(count.values()) == 1
