"""What feeds the fetch side of the loop: frontier next → fetch, kept fed.

The fetcher runs on an event loop and asks for more URLs (``refill``) whenever few
hosts wait; each batch is written to ``STATE/crawl/batches`` before the frontier
commits its removal. Back-pressure (invariant 8): the fetcher holds at most
``--per-host`` unanswered URLs of a host and ``hold`` in all; from ``POST_BACKLOG``
cut cycles waiting for post-processing each refill is halved per cycle more (the
fetcher slows to what post-processing takes, but never runs dry: its held URLs may
all be on hosts not due), and at ``POST_BACKLOG_MAX`` it gets nothing.

:class:`Feed` lives for the run (what the fetcher holds, in all and per host, the
batch numbers) and takes the frontier's next batch; one fetch run is
:class:`crawlkit.crawl.fetchrun.FetchRun` (``refill``, ``sink``, the cuts), and when
to cut and how much to give is :mod:`crawlkit.crawl.pacing` (its names are
re-exported here, where they were defined).
"""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson

from crawlkit.crawl.admission import Admission
from crawlkit.crawl.archive import LinkPolicy
from crawlkit.crawl.blocks import OperatorBlocks
from crawlkit.crawl.core import HOLD_PER_SLOT, Gate, Limits
from crawlkit.crawl.cycle import CycleRunner
from crawlkit.crawl.files import CrawlDir, write_file
from crawlkit.crawl.options import CrawlOptions
from crawlkit.crawl.pacing import (
    CHUNK_RECORDS,
    CHUNK_SECONDS,
    CUT_AGE_MAX,
    CUT_CHECK,
    CUT_SCALE_MAX,
    EMPTY_CUT_AGE,
    EMPTY_CUT_RECORDS,
    POST_BACKLOG,
    POST_BACKLOG_MAX,
    REFILL_ANSWERS,
    REFILL_LOOK,
    REFILL_WAIT,
    cut_due,
    cut_scale,
    refill_share,
)
from crawlkit.crawl.stores import Stores
from crawlkit.diag import Reporter
from crawlkit.frontier.store import NextOptions
from crawlkit.records import Refusal
from crawlkit.stages.frontier import take_batch
from crawlkit.streams import Record

__all__ = [
    "CHUNK_RECORDS",
    "CHUNK_SECONDS",
    "CUT_AGE_MAX",
    "CUT_CHECK",
    "CUT_SCALE_MAX",
    "EMPTY_CUT_AGE",
    "EMPTY_CUT_RECORDS",
    "FEW_HOSTS_PER_HOST",
    "INBOX_EVERY",
    "POST_BACKLOG",
    "POST_BACKLOG_MAX",
    "REFILL_ANSWERS",
    "REFILL_LOOK",
    "REFILL_WAIT",
    "Feed",
    "cut_due",
    "cut_scale",
    "refill_share",
]

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


class Feed:
    """The fetch side's supply: fetch runs (:class:`crawlkit.crawl.fetchrun.FetchRun`)
    are fed the frontier's batches from here; what the fetcher holds unanswered, in
    all and per host, is counted here across them."""

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
