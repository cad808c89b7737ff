"""``crawlkit report``: the report of a crawl, built from its state directory.

Reads what ``crawlkit crawl`` leaves in ``STATE/crawl/cycles/*`` (fetch logs, dedup
records, refusals) and the counters of the frontier and the seen set, and folds them
with :func:`crawlkit.report.build_report`; the ``collection`` section (seeds,
settings, MIME types, problems with examples, requisites, WARC files with SHA-256, the
politeness audit of the fetch log) comes from :mod:`crawlkit.stages.report_collection`,
the ``recrawl`` section (estimated change rates, expected freshness, URLs due per
day) from :mod:`crawlkit.recrawl.stats`. A crawl of ``--workers N`` is one report:
the cycles of every worker's state (``STATE/workers/K``) are read, and the counters
of their seen sets, frontiers, totals and recrawl histories summed or merged
(:func:`crawl_roots`). Reads only; takes no lock, so it can run beside a crawl in
progress.
"""

from __future__ import annotations

import os
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import asdict
from pathlib import Path
from typing import Any

import orjson

from crawlkit import streams
from crawlkit.diag import NullReporter, Reporter
from crawlkit.durable import MANIFEST
from crawlkit.errors import StateError
from crawlkit.frontier.store import Frontier
from crawlkit.frontier.waiting import WAITING, read_waiting
from crawlkit.recrawl.stats import RecrawlStats, merge, report_data
from crawlkit.report import build_report
from crawlkit.seen import SeenStore
from crawlkit.stages.frontier import crawl_frontier_stats
from crawlkit.stages.report_collection import collection_section
from crawlkit.stages.seen_merge import store_stats
from crawlkit.state import crawl_roots
from crawlkit.streams import Record
from crawlkit.totals import read_totals

__all__ = ["crawl_report", "crawl_roots", "merge_recrawl", "pending_urls"]


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
    # a crawl of --workers N keeps one ordinary crawl state per worker: one report,
    # its counters summed (or merged) over them
    roots = crawl_roots(state)
    cycles = [c for r in roots for c in sorted((r / "crawl" / "cycles").glob("[0-9]*"))]
    fetch_logs = [c / "fetch.ndjson" for c in cycles if (c / "fetch.ndjson").exists()]
    dedups = [c / "dedup.ndjson.zst" for c in cycles if (c / "dedup.ndjson.zst").exists()]
    refused = sorted(p for c in cycles for p in c.glob("*refused.ndjson.zst"))
    refused += [p for r in roots for p in sorted((r / "crawl").glob("*refused.ndjson.zst"))]
    counters: dict[str, Any] = {"cycles": len(cycles)}
    counters.update(_totals_counters(roots))
    counters.update(_seen_counters(roots))
    counters.update(_frontier_counters(state, roots))
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
        locate=lambda urls: {k: v for r in roots for k, v in pending_urls(r, urls).items()},
    )
    now = time.time()  # None before any recrawl step
    report["recrawl"] = merge_recrawl([report_data(r, now) for r in roots])
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
    for rec in read_waiting(state / WAITING):  # read only: a crawl may be saving it
        url = rec.get("url")
        if url in urls and url not in out:
            out[str(url)] = "deferred"
    return out


def _totals_counters(roots: list[Path]) -> dict[str, Any]:
    """Runs (the most any state had: a worker started again within a run counts
    twice), URLs refetched after crashes and the seen set's checks, summed."""
    parts = [read_totals(r / "crawl") for r in roots if (r / "crawl" / "totals.json").exists()]
    if not parts:
        return {}
    seen: Counter[str] = Counter()
    for data in parts:
        seen.update({k: int(v) for k, v in (data.get("seen") or {}).items()})
    out: dict[str, Any] = {
        "runs": max(int(d.get("runs") or 0) for d in parts),
        "refetched_after_crashes": sum(int(d.get("refetched") or 0) for d in parts),
    }
    negatives = seen["checked"] - seen["confirmed_seen"]
    if negatives > 0:
        out["bloom_fp_rate"] = seen["false_positives"] / negatives
    return out


def _seen_counters(roots: list[Path]) -> dict[str, Any]:
    """URLs stored, summed; of several filters, the configured rate the largest, the
    fill over all their bits and the expected rate weighted by URLs stored."""
    stats = []
    for root in roots:
        if (root / "seen").exists():
            with SeenStore.open(root, writable=False) as store:
                stats.append(store_stats(store))
    if not stats:
        return {}
    if len(stats) == 1:
        one = stats[0]
        out = {"seen_urls": one.get("stored")}
        out.update({k: one[k] for k in ("fp_rate", "filter_fill", "expected_fp_rate") if k in one})
        return out
    stored = sum(int(s.get("stored") or 0) for s in stats)
    out = {"seen_urls": stored}
    rates = [s["fp_rate"] for s in stats if s.get("fp_rate") is not None]
    if rates:
        out["fp_rate"] = max(rates)
    bits = sum(int(s.get("filter_bits") or 0) for s in stats)
    if bits and all(s.get("filter_fill") is not None for s in stats):
        out["filter_fill"] = sum(s["filter_fill"] * int(s["filter_bits"]) for s in stats) / bits
    if stored and all(s.get("expected_fp_rate") is not None for s in stats):
        out["expected_fp_rate"] = (
            sum(s["expected_fp_rate"] * int(s.get("stored") or 0) for s in stats) / stored
        )
    return out


def _frontier_counters(state: Path, roots: list[Path]) -> dict[str, Any]:
    if not any((r / "frontier").exists() for r in roots):
        return {}
    stats = crawl_frontier_stats(state)
    return {"frontier_queued": stats["queued"], "frontier_parked": stats["parked"]}


def merge_recrawl(parts: list[dict[str, Any] | None]) -> dict[str, Any] | None:
    """One recrawl section of several states' (:func:`report_data`), as
    :func:`crawlkit.recrawl.stats.merge` sums them."""
    have = [p for p in parts if p]
    if len(have) <= 1:
        return have[0] if have else None
    return asdict(merge([RecrawlStats(**p) for p in have]))
