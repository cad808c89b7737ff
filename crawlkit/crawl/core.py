"""The state of one crawl run and the store operations all its parts share.

:class:`CrawlCore` opens the stores once for the run (frontier, seen set, dedup index,
recrawl history, host state) and closes them in :meth:`CrawlCore.close`; the stage
functions it calls on them commit after every change. ``lock`` and ``seen_lock``
guard the stores used from both sides of the loop (the fetch side's batches, the
post thread): one opened object each, shared by two threads.
"""

from __future__ import annotations

import concurrent.futures as cf
import contextlib
import itertools
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from crawlkit import io
from crawlkit.crawl.archive import LinkPolicy
from crawlkit.crawl.files import CrawlDir, read_file, write_file
from crawlkit.crawl.options import CrawlOptions
from crawlkit.crawl.summary import CrawlSummary
from crawlkit.crawl.waiting import WaitingRoom
from crawlkit.diag import Reporter
from crawlkit.fetch.hoststate import HostState
from crawlkit.frontier.scope import Scope
from crawlkit.frontier.store import Frontier
from crawlkit.io import Record
from crawlkit.records import refusal_reason
from crawlkit.recrawl import History
from crawlkit.seen import SeenStore
from crawlkit.shard.routing import ShardRole, role_from_options, split_by_owner, write_outbox
from crawlkit.stages.dedup import open_dedup_store
from crawlkit.stages.extract import ExtractWorkers, FilesResult
from crawlkit.stages.frontier import add_to, links_to
from crawlkit.stages.seen_merge import fresh_in
from crawlkit.state import StateDir
from crawlkit.url import Canonicalizer

__all__ = ["HOLD_PER_SLOT", "STOP_GRACE", "CrawlCore"]

# URLs the fetcher may hold unanswered, per request it may have in flight: a bound
# on memory; what spreads them over the hosts is ``--per-host`` (per host at once).
HOLD_PER_SLOT = 64
# Seconds post-processing may go on past the deadline (or a signal) before it stops
# between two steps and leaves the rest to the next run.
STOP_GRACE = 5.0


class CrawlCore:
    """One run's state: options, opened stores, limits, and the store operations
    every part of the loop shares (queue, seen-merge, route, the waiting room)."""

    def __init__(
        self,
        state: StateDir,
        options: CrawlOptions,
        *,
        reporter: Reporter,
        progress: Callable[[dict[str, Any]], None] | None = None,
        clock: Callable[[], float] = time.time,
    ):
        self.state = state
        self.opts = options
        self.rep = reporter
        self.progress = progress or (lambda info: None)
        self.clock = clock
        self.dir = CrawlDir(state)
        self.canon = Canonicalizer()
        self.summary = CrawlSummary()
        self.start = clock()
        self.deadline = self.start + options.duration if options.duration else None
        self.warc_root = Path(options.warc_dir) if options.warc_dir else state.path / "warc"
        # The frontier and the waiting room are used from both sides of the loop: the
        # fetch side's batches and the post thread. The seen set has a lock of its own
        # (a shard's inbox is admitted on the fetch side), so a seen-merge does not hold
        # up the next batch; it is taken inside ``lock``, never the other way round.
        self.lock = threading.RLock()
        self.seen_lock = threading.Lock()
        self.post_error: BaseException | None = None
        self._pending_batches: list[Path] = []
        self._batch_numbers = itertools.count(1)  # 0 names the batch a recovery requeues
        self.interrupted = ""  # the name of the signal that asked the run to stop
        # N extract processes (-j N, one at least) live for the whole run and a cycle's
        # extract starts the moment it is cut (see _start_extract): a page's parse never
        # holds this process (its fetch threads, its stop), and each page runs under the
        # workers' CPU deadline.
        self.extract_workers: ExtractWorkers | None = ExtractWorkers(max(1, options.jobs))
        self._extracting: dict[Path, tuple[list[Any], cf.Future[FilesResult]]] = {}
        totals = io.read_json(self.dir.totals) if self.dir.totals.exists() else {}
        self.fetched_before = int(totals.get("fetched", 0))
        self.requests_before = int(totals.get("requests", totals.get("fetched", 0)))
        self.waiting = WaitingRoom(self.dir.waiting)
        # URLs handed to the fetcher and not answered yet, and the most it may hold:
        # enough to keep every due host busy, small enough that a stop leaves little.
        self.held = 0
        self.frontier_version = 0  # counts additions to the frontier
        self.held_by_host: Counter[str] = Counter()  # the same, per host (frontier's key)
        self.hold = HOLD_PER_SLOT * options.fetch.concurrency
        self.post_backlog = 0  # cut cycles not yet post-processed
        # Post-processing stops between two steps after this (the next run goes on).
        self.hard_stop = self.deadline + STOP_GRACE if self.deadline else float("inf")
        self.role = self._shard_role(state.path, options)
        self.link_policy = LinkPolicy(options.archive, reporter)
        saved = Scope.saved(state.path)
        if saved is not None and saved.spec != options.scope:
            self.rep.info(f"scope {saved.spec!r} of the running crawl kept (not {options.scope!r})")
        self.scope = Scope.load(state.path, saved.spec if saved is not None else options.scope)
        # The stores are opened once for the run (the state directory is locked by it)
        # and committed by the stage functions after every change, as the stage
        # commands, which open them by path, commit before they exit.
        self._stores = contextlib.ExitStack()
        try:
            self._open_stores(state, options, reporter)
        except BaseException:
            self.close()
            raise

    def _open_stores(self, state: StateDir, options: CrawlOptions, reporter: Reporter) -> None:
        """Open the frontier, seen set, dedup index, recrawl history and host state."""
        self.frontier = Frontier.open(
            state.sub("frontier"), policy=options.budget_policy, limits=options.limits
        )
        self.seen = self._stores.enter_context(SeenStore.open(state.path, reporter=reporter))
        self.dedup = self._stores.enter_context(open_dedup_store(state.path))
        self.history = History(state.sub("recrawl"))
        self._stores.callback(self.history.close)
        self.hosts = HostState(state.sub("fetch"))
        self._stores.callback(self.hosts.close)

    def close(self) -> None:
        """Stop the extract processes and close the stores (a run that ends or fails)."""
        for _files, future in self._extracting.values():
            future.cancel()
        self._extracting.clear()
        if self.extract_workers is not None:
            self.extract_workers.close()
        self._stores.close()

    @staticmethod
    def _shard_role(path: Path, options: CrawlOptions) -> ShardRole | None:
        return role_from_options(path, options.shard, options.shards, options.slot_map)

    def _on_signal(self, name: str) -> None:
        """The first SIGINT/SIGTERM: finish what is in flight, save, and stop."""
        self.interrupted = self.interrupted or name
        self.hard_stop = min(self.hard_stop, self.clock() + STOP_GRACE)

    def _should_stop(self) -> str:
        if self.interrupted:
            return f"interrupted ({self.interrupted})"
        if self.deadline is not None and self.clock() >= self.deadline:
            return "time limit (--for)"
        if self.opts.max_pages is not None and self._pages_total() >= self.opts.max_pages:
            return "page limit (--max-pages)"
        return ""

    def _pages_total(self) -> int:
        """Requests the server has seen from this crawl (robots.txt aside), all runs."""
        return self.requests_before + self.summary.requests

    def _pages_left(self) -> float:
        """Requests ``--max-pages`` still allows beyond those handed to the fetcher."""
        if self.opts.max_pages is None:
            return float("inf")
        return self.opts.max_pages - self._pages_total() - self.held

    def _nothing_due_in_time(self, wake: float | None) -> bool:
        """True when the first deferred URL (due at ``wake``) is due after ``--for`` ends."""
        return wake is not None and self.deadline is not None and wake >= self.deadline

    def _sleep_until(self, when: float) -> None:
        limit = self.deadline if self.deadline is not None else float("inf")
        pause = max(0.0, min(when, limit) - self.clock())
        end = time.monotonic() + (min(pause, self.opts.idle_wait) if pause > 0 else 0.01)
        while not self.interrupted and (left := end - time.monotonic()) > 0:
            time.sleep(min(left, 0.1))  # short naps: a signal is acted on at once

    def _frontier_stats(self) -> dict[str, Any]:
        with self.lock:
            return self.frontier.stats()

    def _route(self, records: list[Record], tag: str) -> list[Record]:
        """This shard's records; the others go to the outboxes of their shards."""
        if self.role is None:
            return records
        mine, others = split_by_owner(self.role, records)
        if others:
            self.summary.routed += write_outbox(self.state.path, others, tag)
        return mine

    def _seen_merge(
        self,
        records: list[Record],
        out: Path,
        refused_path: Path,
        carry: list[Record] | None = None,
    ) -> list[Record]:
        """The records in scope never seen before, written to ``out`` before they are
        marked seen; those outside ``--scope`` are written to ``refused_path``.

        ``carry`` (an earlier attempt's output, whose commit may or may not have
        happened) is written to ``out`` too, with each URL once: the new records of a
        retry are mostly the same URLs again, and ``out`` is queued once, so no URL
        is queued (and handed out, and counted against its site's budget) twice.
        """
        refused: list[Record] = []
        with self.seen_lock:
            fresh = fresh_in(
                self.seen,
                records,
                canonicalizer=self.canon,
                reporter=self.rep,
                scope=self.scope,
                on_refused=refused.append,
            )
            write_file(out, _each_url_once([*(carry or ()), *fresh.records]))
            fresh.commit()
        if refused:
            write_file(refused_path, refused)
            self._count_refused(refused)
        for key in ("checked", "confirmed_seen", "false_positives", "new"):
            self.summary.seen[key] += getattr(fresh.stats, key)
        return fresh.records

    def _queue(self, records: Iterable[Record], refused_path: Path) -> None:
        refused: list[Record] = []
        self.frontier_version += 1
        with self.lock:
            add_to(
                self.frontier,
                records,
                on_refused=refused.append,
                scope=self.scope,
                canonicalizer=self.canon,
            )
        if refused:
            write_file(refused_path, refused)
            self._count_refused(refused)

    def _count_refused(self, refused: Iterable[Record]) -> None:
        for rec in refused:
            self.summary.refused[refusal_reason(rec)] += 1

    def _note_links(self, records: list[Record]) -> None:
        """Feed link records to the frontier's site graph (``frontier links``)."""
        with self.lock:
            links_to(self.frontier, records)

    def _fetch_log(self, cycle: Path) -> list[Record]:
        return list(read_file(cycle / "fetch.ndjson"))

    def _release_waiting(self) -> bool:
        """Queue the waiting URLs whose retry time has come; True if there were any."""
        with self.lock:
            due = self.waiting.due(self.clock())
            if not due:
                return False
            self._queue(due, self.dir.root / "waiting-refused.ndjson.zst")
            self.waiting.save()
            return True

    def _next_waiting_time(self) -> float | None:
        with self.lock:
            return self.waiting.next_time()


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
