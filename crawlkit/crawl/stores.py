"""The stores one crawl run opens once, and the locks that guard them.

:class:`Stores` opens the frontier, seen set, dedup index, recrawl history, host state
and the waiting room for the run (the state directory is locked by it) and closes them
in :meth:`Stores.close`; the stage functions called on them commit after every change,
as the stage commands, which open them by path, commit before they exit.
"""

from __future__ import annotations

import contextlib
import threading
from pathlib import Path
from typing import Any

from crawlkit.crawl.options import CrawlOptions
from crawlkit.dedup.store import DedupStore
from crawlkit.diag import Reporter
from crawlkit.fetch.hoststate import HostState
from crawlkit.frontier.store import Frontier
from crawlkit.frontier.waiting import WaitingRoom
from crawlkit.recrawl import History
from crawlkit.seen import SeenStore
from crawlkit.stages.dedup import lock_dedup_writer
from crawlkit.state import StateDir

__all__ = ["Stores"]


class Stores:
    """The run's opened stores and their locks.

    The frontier and the waiting room are used from both sides of the loop (the fetch
    side's batches, the post thread): ``lock`` guards them. The seen set has a lock of
    its own, ``seen_lock`` (a shard's inbox is admitted on the fetch side), so a
    seen-merge does not hold up the next batch; it is taken inside ``lock``, never the
    other way round. The dedup index, recrawl history and host state are each used from
    one thread at a time; the step process (:mod:`crawlkit.crawl.step_process`) runs
    the steps that use the first two while it lives, and this process opens the dedup
    index (:meth:`dedup`) only if it died.
    """

    def __init__(self, state: StateDir, options: CrawlOptions, reporter: Reporter, waiting: Path):
        self.lock = threading.RLock()
        self.seen_lock = threading.Lock()
        self.waiting = WaitingRoom(waiting)
        self._reporter = reporter
        self._exit = contextlib.ExitStack()
        try:
            self.frontier = Frontier.open(
                state.sub("frontier"), policy=options.budget_policy, limits=options.limits
            )
            self.seen = self._exit.enter_context(SeenStore.open(state.path, reporter=reporter))
            # The dedup index is the step process's (step_process.py), which holds
            # its lock; this process opens it, and takes the lock, only if that
            # process died. (Other stages are kept out by the state's own lock.)
            self.dedup_dir = state.sub("dedup")
            self._dedup: DedupStore | None = None
            self.history = History(state.sub("recrawl"))
            self._exit.callback(self.history.close)
            self.hosts = HostState(state.sub("fetch"))
            self._exit.callback(self.hosts.close)
        except BaseException:
            self._exit.close()
            raise

    def dedup(self) -> DedupStore:
        """The dedup index, opened on first use (only the post thread uses it)."""
        if self._dedup is None:
            self._exit.enter_context(lock_dedup_writer(self.dedup_dir, self._reporter))
            self._dedup = DedupStore(self.dedup_dir)
            self._exit.callback(self._dedup.close)
        return self._dedup

    def close(self) -> None:
        """Close what was opened (the frontier commits after every change)."""
        self._exit.close()

    def frontier_stats(self) -> dict[str, Any]:
        with self.lock:
            return self.frontier.stats()

    def next_waiting_time(self) -> float | None:
        with self.lock:
            return self.waiting.next_time()
