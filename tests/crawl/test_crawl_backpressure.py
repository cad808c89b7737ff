"""Bounded: post-processing that falls behind slows the fetcher; --for cuts it off."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest
from conftest import crawlkit, start_testweb

from crawlkit.crawl import core, feed, pacing
from crawlkit.crawl.cycle import CycleRunner
from crawlkit.crawl.feed import CUT_AGE_MAX, POST_BACKLOG_MAX
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
        # --per-host as given: with 8 hosts the first batches (before any backlog)
        # would give each up to FEW_HOSTS_PER_HOST, the whole web here; that bound is
        # test_crawl_few_hosts.py's
        monkeypatch.setattr(feed, "FEW_HOSTS", 0)
        # Small cycles, so the backlog reaches its bound well within the web's pages.
        monkeypatch.setattr(pacing, "CHUNK_RECORDS", 20)  # read by pacing.cut_due
        monkeypatch.setattr(CycleRunner, "dedup", dedup_stuck_until_the_deadline)
        first = crawl(state, pages, _options(web, duration=10.0))
        monkeypatch.setattr(CycleRunner, "dedup", real_dedup)
        cycles = sorted(p for p in (state / "crawl" / "cycles").iterdir() if p.is_dir())
        unfinished = [c.name for c in cycles if not (c / "cycle.done").exists()]
        second = crawl(state, [], _options(web, duration=None))
        requests = web.requests()
    assert blocked and first.stopped == "time limit (--for)"
    # Refills shrink from POST_BACKLOG cut cycles waiting and stop at POST_BACKLOG_MAX;
    # from then on the fetcher only works off what it holds, at most --per-host URLs
    # of each host. A bound on work, not on speed: however fast the fetcher, it
    # fetches no more than that ahead of a stuck post-processing.
    hosts = len(web.hosts_of_kind("ordinary"))
    held_most = CrawlOptions().per_host * hosts
    bound = (POST_BACKLOG_MAX + 1) * 20 + held_most
    assert bound < len(pages)
    assert first.outcomes["fetched"] <= bound
    # Cycles are cut at 20 records, and by age: the first while post-processing is
    # idle (a slow start under load cuts it with a few records), then at most one every
    # CUT_AGE_MAX seconds, and the last at the deadline. Full ones stop with the feed;
    # age cuts only split the same records into more cycles.
    sizes = {c.name: len((c / "fetch.ndjson").read_bytes().splitlines()) for c in cycles}
    full = [name for name in unfinished if sizes[name] >= 20]
    assert len(full) <= POST_BACKLOG_MAX + 1 + -(-held_most // 20), sizes
    age_cuts_most = 2 + int(10.0 // CUT_AGE_MAX)
    assert len(unfinished) - len(full) <= age_cuts_most, sizes
    # Post-processing stopped at the deadline (no grace here) and left its cycles
    assert blocked[0] in unfinished
    # ... which the next run finished: nothing lost, nothing fetched twice.
    assert all((c / "cycle.done").exists() for c in cycles)
    assert second.stopped == "frontier empty"
    count = Counter((q["host"], q["path"]) for q in requests if q["path"] != "/robots.txt")
    assert len(count) >= len(pages) and max(count.values()) == 1


def test_refills_shrink_with_the_backlog_and_stop_only_at_its_bound() -> None:
    from crawlkit.crawl.feed import POST_BACKLOG, POST_BACKLOG_MAX, refill_share

    shares = [refill_share(n) for n in range(POST_BACKLOG_MAX + 2)]
    assert shares[:POST_BACKLOG] == [1.0] * POST_BACKLOG
    # throttled, never stopped, while the backlog is under its bound (invariant 8)
    assert all(0.0 < s < 1.0 for s in shares[POST_BACKLOG:POST_BACKLOG_MAX])
    assert shares[POST_BACKLOG:POST_BACKLOG_MAX] == sorted(
        shares[POST_BACKLOG:POST_BACKLOG_MAX], reverse=True
    )
    assert shares[POST_BACKLOG_MAX:] == [0.0, 0.0]


def test_cycles_are_cut_bigger_while_post_processing_lags_up_to_a_bound(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert [feed.cut_scale(n) for n in range(8)] == [1] * 8  # off by default
    monkeypatch.setattr(pacing, "CUT_SCALE_MAX", 4)  # read by pacing.cut_scale
    scales = [feed.cut_scale(n) for n in range(feed.POST_BACKLOG_MAX + 2)]
    assert scales[: feed.POST_BACKLOG] == [1] * feed.POST_BACKLOG
    assert scales == sorted(scales) and max(scales) == 4


def test_the_timeline_counts_every_fetch_record_and_refill(tmp_path: Path) -> None:
    """``crawl --timeline FILE`` reaches the loop: a line a second, every record and
    refill counted; --explain leaves it out (no stage has that loop)."""
    import json

    timeline = tmp_path / "out" / "timeline.ndjson"  # its directory is made
    web_args = ("--hosts", "3", "--pages", "6", "--special", "none", "--seed", "8")
    with start_testweb(tmp_path, *web_args) as web:
        seeds = [h["pages"][0] for h in web.hosts_of_kind("ordinary")]
        common = ["--state", str(tmp_path / "state"), "--scope", "any", "--no-budgets"]
        common += ["--min-delay", "0.2", "--allow-net", web.info["allow_net"]]
        common += ["--hosts-file", str(web.hosts_file), "--timeline", str(timeline)]
        explained = crawlkit("crawl", *seeds, *common, "--explain")
        assert explained.code == 0 and "--timeline" not in explained.stdout.decode()
        res = crawlkit("crawl", *seeds, *common, "--json")
    assert res.code == 0, res.stderr
    summary = json.loads(res.stdout)
    lines = [json.loads(line) for line in timeline.read_text().splitlines()]
    assert lines and all({"in_flight", "backlog", "post_busy", "due"} <= set(x) for x in lines)
    assert sum(x["records"] for x in lines) == sum(summary["outcomes"].values())
    # the seeds go in before the first refill; every other URL came by a refill
    assert sum(x["refill_urls"] for x in lines) >= sum(summary["outcomes"].values()) - len(seeds)
    assert sum(x["refill_given"] for x in lines) >= 1


@pytest.mark.parametrize(
    ("name", "why"),
    [
        ("file/timeline.ndjson", "not a directory"),
        # appended to once a second, never compressed: a .zst or .gz name would lie
        ("timeline.ndjson.zst", "plain NDJSON"),
        ("timeline.ndjson.gz", "plain NDJSON"),
    ],
)
def test_a_timeline_that_cannot_be_written_is_refused_before_the_crawl(
    tmp_path: Path, name: str, why: str
) -> None:
    (tmp_path / "file").write_text("")
    timeline = tmp_path / name
    state = tmp_path / "state"
    seed = "http://127.0.0.1:9/"
    res = crawlkit("crawl", seed, "--state", str(state), "--timeline", str(timeline))
    assert res.code == 2 and "--timeline" in res.stderr and why in res.stderr, res.stderr
    assert not state.exists() and not timeline.exists()


def test_a_worker_cuts_its_cycles_by_age_as_big_per_page_as_one_process() -> None:
    """A worker of --workers N fetches about 1/N of the pages: it cuts a cycle by age
    at N times one process's age (cut at one process's age, its cycles held half the
    records and paid post-processing's fixed costs twice per page; issue 27)."""
    cut_due, age_max = feed.cut_due, feed.CUT_AGE_MAX
    young = feed.CHUNK_SECONDS * 1.5
    assert cut_due(300, young, backlog=0)  # one process
    assert not cut_due(300, young, backlog=0, workers=2)
    assert cut_due(300, 2 * feed.CHUNK_SECONDS, backlog=0, workers=2)
    assert cut_due(feed.CHUNK_RECORDS, 0.1, backlog=0, workers=2)  # full: at any age
    assert not cut_due(0, 10 * age_max, backlog=0, workers=2)  # nothing to cut
    # while post-processing lags, only a very old cycle is cut by age
    assert cut_due(300, age_max, backlog=1)
    assert not cut_due(300, age_max, backlog=1, workers=2)
    assert cut_due(300, 2 * age_max, backlog=1, workers=2)
