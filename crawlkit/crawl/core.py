"""What every part of a crawl run shares: its limits, and the gate URLs enter by.

:class:`Limits` says when the run stops (``--for``, ``--max-pages``, a signal) and
when post-processing must stop (the hard stop). :class:`Gate` is where URLs enter the
frontier: seen-merge and frontier add under ``--scope`` on the run's opened stores
(:class:`~crawlkit.crawl.stores.Stores`), and the routing of other shards' URLs to
their outboxes.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from crawlkit.crawl.files import CrawlDir, write_file
from crawlkit.crawl.options import CrawlOptions
from crawlkit.crawl.stores import Stores
from crawlkit.crawl.summary import CrawlSummary
from crawlkit.diag import Reporter
from crawlkit.frontier.scope import Scope
from crawlkit.frontier.sitelinks import SiteLinks
from crawlkit.records import Refusal, refusal_reason
from crawlkit.shard.routing import ShardRole, split_by_owner, write_outbox
from crawlkit.stages.frontier import add_to, links_to
from crawlkit.stages.seen_merge import fresh_in
from crawlkit.streams import Record
from crawlkit.times import steady_time
from crawlkit.totals import RequestJournal
from crawlkit.url import Canonicalizer

__all__ = ["HOLD_PER_SLOT", "MERGE_CHUNK", "STOP_GRACE", "Gate", "Limits", "Merged", "Router"]

# URLs the fetcher may hold unanswered, per request it may have in flight: a bound
# on memory; what spreads them over the hosts is ``--per-host`` (per host at once).
HOLD_PER_SLOT = 64
# Seconds post-processing may go on past the deadline (or a signal) before it stops
# between two steps and leaves the rest to the next run.
STOP_GRACE = 5.0
# Records a seen merge takes at a time, and the links step reads a cycle's links in
# slices of: its memory is a slice's, not a cycle's. In the 15,000 x 20 few-seed crawl
# a cycle has ~6,400 links (median of 36, at most 8,913); read as one list they peaked
# ~133,000 blocks above the rest, in slices of 1,024 ~42,000, at the same time a cycle
# (issue 27).
MERGE_CHUNK = 1024


@dataclass(frozen=True)
class Merged:
    """What :meth:`Gate.seen_merge` found new, and what it wrote to its file (those
    with the carried records, each URL once)."""

    fresh: list[Record]
    written: list[Record]


class Limits:
    """When the run stops: ``--for``, ``--max-pages`` (over all runs), a signal; and
    the hard stop, after which post-processing stops between two steps."""

    def __init__(
        self,
        options: CrawlOptions,
        summary: CrawlSummary,
        requests_before: int,
        clock: Callable[[], float] = steady_time,
    ):
        self.clock = clock
        self.summary = summary
        self.start = clock()
        self.deadline = self.start + options.duration if options.duration else None
        # Post-processing stops between two steps after this (the next run goes on).
        self.hard_stop = self.deadline + STOP_GRACE if self.deadline else float("inf")
        self.max_pages = options.max_pages
        self.idle_wait = options.idle_wait
        self.max_wait = options.max_wait
        self.requests_before = requests_before
        self.interrupted = ""  # the name of the signal that asked the run to stop
        # A worker of crawl --workers: --max-pages held with the others (crawl/budget.py)
        self.budget = options.page_budget if self.max_pages is not None else None
        if self.budget is not None:
            self.budget.attach(self.pages_total)

    def on_signal(self, name: str) -> None:
        """The first SIGINT/SIGTERM: finish what is in flight, save, and stop."""
        self.interrupted = self.interrupted or name
        self.hard_stop = min(self.hard_stop, self.clock() + STOP_GRACE)

    def past_hard_stop(self) -> bool:
        return self.clock() >= self.hard_stop

    def should_stop(self) -> str:
        """Why the run stops now (empty: it goes on)."""
        if self.interrupted:
            return f"interrupted ({self.interrupted})"
        if self.deadline is not None and self.clock() >= self.deadline:
            return "time limit (--for)"
        if self.max_pages is not None and self._pages_done():
            return "page limit (--max-pages)"
        return ""

    def _pages_done(self) -> bool:
        if self.budget is not None:  # the other workers' requests count too
            return self.budget.exhausted(self.pages_total())
        return self.max_pages is not None and self.pages_total() >= self.max_pages

    def pages_total(self) -> int:
        """Requests the server has seen from this crawl (robots.txt aside), all runs."""
        return self.requests_before + self.summary.requests

    def pages_left(self, held: int) -> float:
        """Requests ``--max-pages`` still allows beyond the ``held`` handed to the fetcher."""
        if self.max_pages is None:
            return float("inf")
        if self.budget is not None:
            return self.budget.grant(self.pages_total(), held)
        return self.max_pages - self.pages_total() - held

    def nothing_due_in_time(self, wake: float | None) -> bool:
        """True when the first deferred URL (due at ``wake``) is due after ``--for`` ends."""
        return wake is not None and self.deadline is not None and wake >= self.deadline

    def waits_too_long(self, wake: float | None) -> bool:
        """True when the first deferred URL (due at ``wake``) is due later than
        ``--max-wait`` from now."""
        return (
            wake is not None and self.max_wait is not None and wake - self.clock() > self.max_wait
        )

    def sleep_until(self, when: float) -> None:
        """Sleep until ``when`` (at most ``--idle-wait``, never past ``--for``); a
        signal ends the sleep at once."""
        limit = self.deadline if self.deadline is not None else float("inf")
        pause = max(0.0, min(when, limit) - self.clock())
        end = time.monotonic() + (min(pause, self.idle_wait) if pause > 0 else 0.01)
        while not self.interrupted and (left := end - time.monotonic()) > 0:
            time.sleep(min(left, 0.1))  # short naps: a signal is acted on at once


class Gate:
    """Where URLs enter the frontier: seen-merge ``--scope``, frontier add ``--scope``,
    the frontier's site graph, the waiting room's due URLs, and the routing of other
    shards' URLs to their outboxes. Refusals are written to the file the caller names
    and counted in the summary."""

    def __init__(
        self,
        stores: Stores,
        dir: CrawlDir,
        scope: Scope,
        role: ShardRole | None,
        summary: CrawlSummary,
        reporter: Reporter,
        clock: Callable[[], float],
        max_depth: int | None = None,
    ):
        self.stores = stores
        self.dir = dir
        self.scope = scope
        self.role = role
        self.summary = summary
        self.rep = reporter
        self.clock = clock
        self.max_depth = max_depth  # --max-depth, applied before the seen set too
        self.journal = RequestJournal(dir.root)  # this run's page requests, on disk
        self.canon = Canonicalizer()
        self.version = 0  # counts additions to the frontier
        # The post thread and the fetch side's refill (inbox, stale batches) both add
        # to the summary's counters: one at a time, else an addition is lost.
        self.counting = threading.Lock()

    def route(
        self, records: list[Record], tag: str, to_all: list[Record] | None = None
    ) -> list[Record]:
        """This shard's records; the others go to the outboxes of their shards, with
        ``to_all`` (site links every shard is sent) in the same file: one file per
        shard per cycle, each one a file to write, deliver and read (issue 27)."""
        router = self.router(tag)
        mine = router.mine(records)
        router.send(to_all)
        return mine

    def router(self, tag: str) -> Router:
        """A :meth:`route` taken a slice of records at a time."""
        return Router(self, tag)

    def seen_merge(
        self,
        records: Iterable[Record],
        out: Path,
        refused_path: Path,
        carry: list[Record] | None = None,
    ) -> Merged:
        """The records in scope never seen before, written to ``out`` before they are
        marked seen; those outside ``--scope``, and links deeper than ``--max-depth``
        (never marked seen: a shorter path may come), are written to ``refused_path``.

        ``records`` are taken :data:`MERGE_CHUNK` at a time, under the seen set's lock
        (an iterator over them must not take ``stores.lock``: see :class:`Stores`).
        ``carry`` (an earlier attempt's output, whose commit may or may not have
        happened) is written to ``out`` too, with each URL once: the new records of a
        retry are mostly the same URLs again, and ``out`` is queued once, so no URL
        is queued (and handed out, and counted against its site's budget) twice.
        """
        refused: list[Refusal] = []
        with self.stores.seen_lock:
            fresh = fresh_in(
                self.stores.seen,
                records,
                canonicalizer=self.canon,
                reporter=self.rep,
                scope=self.scope,
                on_refused=refused.append,
                chunk_size=MERGE_CHUNK,
                max_depth=self.max_depth,
            )
            records_out = _each_url_once([*(carry or ()), *fresh.records])
            write_file(out, records_out)
            fresh.commit()
        if refused:
            write_file(refused_path, refused)
            self.count_refused(refused)
        with self.counting:
            for key in ("checked", "confirmed_seen", "false_positives", "new"):
                self.summary.seen[key] += getattr(fresh.stats, key)
        return Merged(fresh=fresh.records, written=records_out)

    def queue(self, records: Iterable[Record], refused_path: Path) -> None:
        """Frontier add ``--scope``; the refused go to ``refused_path``."""
        refused: list[Refusal] = []
        self.version += 1
        with self.stores.lock:
            add_to(
                self.stores.frontier,
                records,
                on_refused=refused.append,
                scope=self.scope,
                canonicalizer=self.canon,
            )
        if refused:
            write_file(refused_path, refused)
            self.count_refused(refused)

    def count_refused(self, refused: Iterable[Mapping[str, Any]]) -> None:
        reasons = [refusal_reason(rec) for rec in refused]
        with self.counting:
            self.summary.refused.update(reasons)

    def note_links(self, records: list[Record]) -> None:
        """Feed link records to the frontier's site graph (``frontier links``)."""
        with self.stores.lock:
            links_to(self.stores.frontier, records)

    def note_site_links(self, links: SiteLinks) -> None:
        """:meth:`note_links` of the records ``links`` gathered."""
        with self.stores.lock:
            self.stores.frontier.note_site_links(links)
            self.stores.frontier.commit()

    def release_waiting(self) -> bool:
        """Queue the waiting URLs whose retry time has come; True if there were any."""
        with self.stores.lock:
            due = self.stores.waiting.due(self.clock())
            if not due:
                return False
            self.queue(due, self.dir.root / "waiting-refused.ndjson.zst")
            self.stores.waiting.save()
            return True


def _each_url_once(records: list[Record]) -> list[Record]:
    """``records`` without the repeats of a URL met before (the first one is kept)."""
    urls: set[str] = set()
    out = []
    for rec in records:
        url = str(rec.get("url"))
        if url not in urls:
            urls.add(url)
            out.append(rec)
    return out


class Router:
    """:meth:`Gate.route` a slice of records at a time: :meth:`mine` returns this
    shard's records of each slice, :meth:`send` writes the others' once, one file per
    shard as :meth:`Gate.route` does."""

    def __init__(self, gate: Gate, tag: str):
        self.gate = gate
        self.tag = tag
        self.others: dict[int, list[Record]] = {}

    def mine(self, records: list[Record]) -> list[Record]:
        role = self.gate.role
        if role is None:
            return records
        mine, others = split_by_owner(role, records)
        for shard, recs in others.items():
            self.others.setdefault(shard, []).extend(recs)
        return mine

    def send(self, to_all: list[Record] | None = None) -> None:
        """Write what :meth:`mine` kept for other shards, with ``to_all`` for each."""
        role, others = self.gate.role, self.others
        if role is None:
            return
        routed = sum(len(v) for v in others.values())
        if to_all:
            for k in range(role.slot_map.shards):
                if k != role.shard:
                    others[k] = [*others.get(k, ()), *to_all]
        if others:
            write_outbox(self.gate.dir.state_path, others, self.tag)
        if routed:
            with self.gate.counting:
                self.gate.summary.routed += routed
        self.others = {}
