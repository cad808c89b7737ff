"""``crawlkit report``: the report of a crawl, built from its state directory.

Reads what ``crawlkit crawl`` leaves in ``STATE/crawl/cycles/*`` (fetch logs, dedup
records, refusals) and the counters of the frontier and the seen set, and folds them
with :func:`crawlkit.report.build_report`; the ``collection`` section (seeds,
settings, MIME types, problems with examples, requisites, WARC files with SHA-256, the
politeness audit of the fetch log) comes from :mod:`crawlkit.stages.report_collection`,
the ``recrawl`` section (estimated change rates, expected freshness, URLs due per
day) from :mod:`crawlkit.recrawl.stats`. Reads only;
takes no lock, so it can run beside a crawl in progress.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson

from crawlkit import streams
from crawlkit.diag import NullReporter, Reporter
from crawlkit.durable import MANIFEST
from crawlkit.errors import StateError
from crawlkit.frontier.store import Frontier
from crawlkit.recrawl.stats import report_data
from crawlkit.report import build_report
from crawlkit.seen import SeenStore
from crawlkit.stages.frontier import frontier_stats
from crawlkit.stages.report_collection import collection_section
from crawlkit.stages.seen_merge import store_stats
from crawlkit.streams import Record

__all__ = ["crawl_report", "pending_urls"]


def _records(paths: list[Path], reporter: Reporter) -> Iterator[Record]:
    for path in paths:
        yield from streams.read_records([path], reporter)


def crawl_report(
    state_path: str | os.PathLike[str],
    *,
    extra: dict[str, Any] | None = None,
    reporter: Reporter | None = None,
) -> dict[str, Any]:
    """The report dict of the crawl in ``state_path`` (see :func:`build_report`)."""
    reporter = reporter or NullReporter()
    state = Path(state_path)
    # a crawl of --workers N keeps one ordinary crawl state per worker (one report)
    roots = [state, *sorted((state / "workers").glob("[0-9]*"))]
    cycles = [c for r in roots for c in sorted((r / "crawl" / "cycles").glob("[0-9]*"))]
    fetch_logs = [c / "fetch.ndjson" for c in cycles if (c / "fetch.ndjson").exists()]
    dedups = [c / "dedup.ndjson.zst" for c in cycles if (c / "dedup.ndjson.zst").exists()]
    refused = sorted(p for c in cycles for p in c.glob("*refused.ndjson.zst"))
    refused += [p for r in roots for p in sorted((r / "crawl").glob("*refused.ndjson.zst"))]
    counters: dict[str, Any] = {"cycles": len(cycles)}
    totals = state / "crawl" / "totals.json"
    if totals.exists():
        data = streams.read_json(totals)
        counters["runs"] = data.get("runs")
        counters["refetched_after_crashes"] = data.get("refetched")
        seen = data.get("seen") or {}
        negatives = int(seen.get("checked", 0)) - int(seen.get("confirmed_seen", 0))
        if negatives > 0:
            counters["bloom_fp_rate"] = int(seen.get("false_positives", 0)) / negatives
    seen = _seen_counters(state)
    counters.update(seen)
    frontier = _frontier_counters(state)
    counters.update(frontier)
    counters.update(extra or {})
    report = build_report(
        _records(fetch_logs, reporter),
        dedups=_records(dedups, reporter),
        refusals=_records(refused, reporter),
        counters=counters,
    )
    links = [c / "links.ndjson.zst" for c in cycles if (c / "links.ndjson.zst").exists()]
    report["collection"] = collection_section(
        state,
        _records(fetch_logs, reporter),
        _records(refused, reporter),
        fetch_logs=[str(p) for p in fetch_logs],
        reporter=reporter,
        requisite_links=(r for r in _records(links, reporter) if r.get("reason") == "requisite"),
        locate=lambda urls: pending_urls(state, urls),
    )
    report["recrawl"] = report_data(state, time.time())  # None before any recrawl step
    return report


def pending_urls(state: Path, urls: set[str]) -> dict[str, str]:
    """Where each of ``urls`` waits, if it does: ``parked`` (over its site's page
    budget until the next budget period), ``queued`` (in the frontier when the crawl
    stopped) or ``deferred`` (in the waiting room for a retry). Reads the frontier's
    committed queues and the waiting room without a lock; memory grows with
    ``urls`` only."""
    out: dict[str, str] = {}
    if not urls:
        return out
    directory = state / "frontier"
    if (directory / MANIFEST).exists():
        try:
            frontier = Frontier.open(directory, read_only=True)
            for where, queues in (("queued", frontier.queues), ("parked", frontier.parked)):
                for queue in queues.values():
                    for seg_id, count, start in queue.segs:
                        for line in queue.store.read(seg_id)[start:count]:
                            url = orjson.loads(line).get("url")
                            if url in urls:
                                out[url] = where
        except (StateError, OSError, orjson.JSONDecodeError):
            pass  # a crawl committing meanwhile: the report says "not fetched" instead
    waiting = state / "crawl" / "waiting.ndjson.zst"
    if waiting.exists():
        for rec in streams.read_records([waiting]):
            url = rec.get("url")
            if url in urls and url not in out:
                out[str(url)] = "deferred"
    return out


def _seen_counters(state: Path) -> dict[str, Any]:
    if not (state / "seen").exists():
        return {}
    with SeenStore.open(state, writable=False) as store:
        stats = store_stats(store)
    out = {"seen_urls": stats.get("stored")}
    for key in ("fp_rate", "filter_fill", "expected_fp_rate"):
        if key in stats:
            out[key] = stats[key]
    return out


def _frontier_counters(state: Path) -> dict[str, Any]:
    if not (state / "frontier").exists():
        return {}
    stats = frontier_stats(state)
    return {"frontier_queued": stats.get("queued"), "frontier_parked": stats.get("parked")}
