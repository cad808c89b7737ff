"""What runs in a worker process of ``crawlkit crawl --workers N`` (crawl/workers.py).

:func:`worker_main` is the spawned process's target: an ordinary crawl of shard K on
its own state, which tells the parent over a pipe that it can take signals ("ready"),
how it goes ("progress"), that it has nothing left ("idle", then "busy" when its inbox
gets files) and how it ended ("summary"; "failed" with the one line a crawl of one
process ends on, when it stopped on a crawlkit error such as a ``--proxy`` that
fails; or "error" with what crashed it). It dies with the parent.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import dataclasses
import os
import signal
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from crawlkit import early_signals
from crawlkit.collector import collect_by_clock
from crawlkit.crawl.arenas import cap_arenas
from crawlkit.crawl.budget import PageBudget
from crawlkit.crawl.loop import crawl
from crawlkit.crawl.options import CrawlOptions
from crawlkit.diag import Reporter
from crawlkit.errors import CrawlkitError, environment_error
from crawlkit.shard.routing import inbox_files
from crawlkit.times import steady_time

__all__ = ["LINGER_POLL", "worker_main"]

LINGER_POLL = 0.1  # how often a lingering worker looks at its inbox


class _Linger:
    """A worker's ``CrawlOptions.linger``: says "idle", waits for its inbox ("busy",
    True) or the parent's "end" (False). "busy" is said before the inbox is read, so
    the parent never sees an empty inbox and an idle worker that is not."""

    def __init__(
        self,
        state: Path,
        send: Callable[[tuple[Any, ...]], None],
        conn: Any,
        budget: PageBudget | None = None,
    ):
        self.state = state
        self.send = send
        self.conn = conn
        self.budget = budget

    def to_json(self) -> str:
        """What a worker's settings (settings.json, its WARC files' warcinfo) say of it."""
        return "waits for its peers' links"

    def __call__(self, stop: Callable[[], bool]) -> bool:
        if self.budget is not None:
            self.budget.release()  # nothing in flight: the others may use the rest
        self.send(("idle",))
        while True:
            if inbox_files(self.state):
                self.send(("busy",))
                return True
            try:
                if self.conn.poll(LINGER_POLL) and self.conn.recv() == "end":
                    return False
            except (EOFError, OSError):
                return False  # the parent is gone: end as an empty frontier would
            if stop():
                return False


def worker_main(
    k: int,
    state: str,
    seeds: tuple[list[str], list[str]],
    options: CrawlOptions,
    conn: Any,
    deadline: float | None,
    temp_dir: str,
) -> None:  # pragma: no cover - runs in the spawned process (covered by the CLI tests)
    # A group of its own first: a terminal's Ctrl-C (or a job runner's signal to the
    # group) reaches the parent alone, which forwards one stop. From here the first
    # signal is kept for the crawl to stop on cleanly, a second acts at once, and the
    # parent forwards its stops once told "ready".
    os.setpgrp()
    early_signals.drop_blocked()  # a group's signal while it imported: the parent's too
    early_signals.hold()
    with contextlib.suppress(OSError):
        conn.send(("ready",))
    if temp_dir:  # multiprocessing's pymp-* goes there too: the parent removes it
        tempfile.tempdir = temp_dir
    cap_arenas()  # as the CLI does for one crawl process, before any thread starts
    _die_with_parent()
    collect_by_clock()  # as the CLI does for one crawl process (crawlkit/collector.py)
    lock = threading.Lock()

    def send(message: tuple[Any, ...]) -> None:
        # the post thread's progress and the loop's idle share the pipe; the parent
        # gone, the crawl still ends cleanly
        with lock, contextlib.suppress(OSError):
            conn.send(message)

    path = Path(state)
    # --for is the parent's deadline, not the start of this process plus the time left
    # when it was spawned (importing takes seconds on a loaded machine); ``deadline``
    # is already the workers' (the parent's less its margin, worker_deadline)
    duration = max(0.1, deadline - steady_time()) if deadline else None
    timeline = options.timeline
    if timeline is not None:  # one file a worker: NAME-wK.EXT beside the one asked for
        timeline = timeline.with_name(f"{timeline.stem}-w{k}{timeline.suffix}")
    options = dataclasses.replace(
        options,
        linger=_Linger(path, send, conn, options.page_budget),
        duration=duration,
        timeline=timeline,
    )
    rep = Reporter(f"crawlkit crawl: worker {k}")
    try:
        own, peers = seeds  # its own to queue, the others' to widen the scope
        summary = crawl(
            path,
            own,
            options,
            reporter=rep,
            progress=lambda i: send(("progress", i)),
            peer_seeds=peers,
        )
    except CrawlkitError as exc:  # the crawl's own failure (its --proxy failed): its line
        send(("failed", str(exc)))
        raise SystemExit(1) from None
    except Exception as exc:  # a one-line error, as the CLI would print it
        send(("error", environment_error(exc) or f"{type(exc).__name__}: {exc}"))
        raise SystemExit(1) from None
    finally:
        if options.page_budget is not None:
            options.page_budget.release()
    send(("summary", summary.to_json()))


def _die_with_parent() -> None:
    """Linux: this worker gets SIGKILL when the parent dies (a kill -9 of the parent
    is one of the whole crawl, which loses nothing), instead of crawling on, orphaned,
    holding its state. Elsewhere a worker ends when it finds the parent gone."""
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass
    if os.getppid() == 1:  # the parent died before the line above
        os._exit(1)
