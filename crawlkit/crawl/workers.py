"""``crawlkit crawl --workers N``: one crawl as N worker processes; a machine is a fleet of one.

The parent process (:class:`WorkerFleet`) is no stage: it starts N workers (spawned
processes), each an ordinary ``crawl`` of shard K of an even slot map, on its own
state directory, and moves files between them. Layout::

    STATE/workers/fleet.json    {"workers": N}: more is a rebalance (crawl/rebalance.py)
    STATE/workers/map.json      the slot map (sites by registered-domain hash, N shards)
    STATE/workers/ip-table      the per-IP table every worker shares (--per-ip, unless
                                --ip-table names another file)
    STATE/workers/budget        --max-pages, held by the workers together
                                (crawlkit.crawl.budget)
    STATE/workers/K/            worker K's state: a shard's state directory
    STATE/warc/                 every worker's WARC files (prefix PREFIX-wK), one index.cdxj

Every site (so every host, its robots.txt and its politeness) belongs to one worker.
A worker writes links of other workers' sites to its outbox
(``STATE/workers/K/outbox/shard-J/``); when a worker reports a finished cycle, and
every :data:`DELIVER_EVERY` seconds, the parent moves them into the owner's inbox
(:func:`crawlkit.shard.routing.deliver`), which the owner's next cycle admits with
its own links (its links step; at a refill when the frontier has nothing to give,
or no cycle took it in for ``feed.INBOX_EVERY`` seconds), so links flow while the
crawl runs. A worker writes
one outbox file per peer per cycle: the URLs of the peer's sites and its site links.

A worker with nothing left does not end: it *lingers* (``CrawlOptions.linger``),
telling the parent "idle", until its inbox has files ("busy") or the parent says
"end". The parent ends the crawl when every worker is idle (or has ended), nothing
was delivered and no inbox has a file, and no worker spoke meanwhile: an idle worker
writes nothing, and only the parent delivers, so no link can be on its way.

Signals: workers run in process groups of their own; the parent forwards the first
SIGINT/SIGTERM (each worker ends as a crawl does on one) and a second one, to each
worker once it has said "ready" (it holds signals from then on), and a signal that
came while the parent itself started counts too. A signal to the whole process group
in the second or so a worker imports, before it has a group of its own, waits in it
(it starts with them blocked) and is dropped there: the parent got it too. ``--for``:
each worker gets the time left; one still running :data:`KILL_AFTER` seconds past
the deadline is killed (kill -9 loses nothing). A worker that dies (kill -9, a crash)
is reported in one line and the crawl stops with exit 1: every worker's state is an
ordinary crawl state, so the next run finishes what was cut. A worker that stops on an
error of the crawl's own (a ``--proxy`` that fails) did not die: the crawl stops, and
ends on that error's one line, as a crawl of one process does.
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
import multiprocessing
import multiprocessing.connection
import os
import re
import shlex
import shutil
import signal
import tempfile
from collections.abc import Callable, Sequence
from multiprocessing import resource_tracker
from pathlib import Path
from typing import Any

from crawlkit import early_signals, streams
from crawlkit.crawl.archive import update_collection_index
from crawlkit.crawl.blocks import hand_posted
from crawlkit.crawl.budget import BUDGET_FILE, PageBudget
from crawlkit.crawl.budget import reset as reset_budget
from crawlkit.crawl.files import batch_files_in, cycle_dirs_in, is_done
from crawlkit.crawl.loop import explain
from crawlkit.crawl.options import CrawlOptions
from crawlkit.crawl.rebalance import grow_workers
from crawlkit.crawl.retry import ANSWERED
from crawlkit.crawl.summary import LIMIT, merge_summaries
from crawlkit.crawl.worker_process import worker_main
from crawlkit.diag import NullReporter, Reporter
from crawlkit.errors import InvalidURL, UsageError
from crawlkit.records import url_record
from crawlkit.shard.routing import deliver, inbox_files
from crawlkit.shard.slots import SlotMap
from crawlkit.stages.report_collection import record_settings
from crawlkit.state import WORKERS_DIR, open_state, workers_of
from crawlkit.times import steady_time
from crawlkit.totals import read_totals
from crawlkit.url import Canonicalizer, trim_url

__all__ = [
    "DELIVER_EVERY",
    "KILL_AFTER",
    "WorkerFleet",
    "check_single",
    "explain_workers",
    "merge_summaries",
    "prepare",
    "split_seeds",
    "worker_deadline",
    "worker_options",
    "workers_fetched_nothing",
]

DELIVER_EVERY = 0.5  # seconds between deliveries of the workers' outboxes
KILL_AFTER = 6.0  # seconds past --for after which a worker still running is killed
RESTART_JOIN = 30.0  # most seconds to wait for a worker's last run to exit, to restart it
# Workers stop fetching this long before the crawl's --for deadline: what a crawl does
# after its deadline (in-flight requests, post-processing's 5 s, closing) takes longer
# in N processes on a loaded machine, and the parent writes the index after them.
WORKER_MARGIN = 3.0
# ... but at most this share of --for: starting the workers takes seconds on a loaded
# machine, and a 3-s margin after those left a `--for 5s` crawl 0.1 s to fetch in.
WORKER_MARGIN_SHARE = 0.1


def worker_dir(state: Path, k: int) -> Path:
    return state / WORKERS_DIR / str(k)


def check_single(state: Path) -> None:
    """Refuse a one-process crawl (``--workers 1``) of a state crawled by workers."""
    n = workers_of(state)
    if n:
        raise UsageError(
            f"{state} is a crawl of --workers {n}; run it with --workers {n} or more "
            "(one process does not continue a crawl of workers)"
        )


def prepare(state: Path, n: int, reporter: Reporter | None = None) -> Path:
    """Lay out (or check) ``STATE/workers`` for ``n`` workers; returns the slot map's path.

    More workers than the state had: the sites are rebalanced first
    (:func:`crawlkit.crawl.rebalance.grow_workers`, which a crash repeats). Fewer, a
    rebalance to another number cut short, or a state a one-process crawl made, is
    refused with a one-line error.
    """
    root = state / WORKERS_DIR
    saved = root / "fleet.json"
    map_path = root / "map.json"
    if saved.exists():
        had = int(streams.read_json(saved)["workers"])
        shards = SlotMap.load(map_path).shards
        if had > n or shards not in (had, n):
            to = f"--workers {shards}" if shards != had else f"--workers {had} or more"
            raise UsageError(f"{state} is a crawl of --workers {had}; run it with {to}")
        if had < n:
            _refuse_cut_work(state, root, had, n)
            grow_workers(root, had, n, reporter)
        return map_path
    one_process = state / "crawl"
    if (one_process / "cycles").exists() or (one_process / "totals.json").exists():
        raise UsageError(f"{state} is a one-process crawl; run it with --workers 1")
    root.mkdir(parents=True, exist_ok=True)
    hand_posted(state, [worker_dir(state, k) for k in range(n)])  # blocks posted before
    SlotMap.even(n).save(map_path)  # before fleet.json: a crash in between redoes both
    streams.atomic_write_json(saved, {"workers": n})
    return map_path


def _refuse_cut_work(state: Path, root: Path, had: int, n: int) -> None:
    """Refuse to grow a crawl whose last run was killed with work cut: the handover
    copies the moved sites' recrawl history before that work is finished (a killed
    worker's cycles, post-processed by its next run), so the new owners took pages
    fetched in the cut cycles for never fetched and fetched them again (seed pages,
    44 of them in a helper's server log), and the URLs the killed run had handed out
    would go again from a worker that no longer owns their hosts."""
    for k in range(had):
        crawl_dir = root / str(k) / "crawl"
        cut = [c.name for c in cycle_dirs_in(crawl_dir) if not is_done(c, "cycle")]
        if cut or batch_files_in(crawl_dir):
            what = f"cycle {cut[0]}" if cut else "URLs handed to its fetcher"
            raise UsageError(
                f"{state}: worker {k} has {what} left by a run that was killed; run the "
                f"crawl once with --workers {had} to finish that (a short --for will do), "
                f"then with --workers {n}"
            )


def worker_options(
    options: CrawlOptions, state: Path, map_path: Path, k: int, n: int, duration: float | None
) -> CrawlOptions:
    """Worker ``k``'s options: shard k of the map, the shared WARC directory (its own
    file prefix; its writers keep their files' indexes, which the parent merges into
    index.cdxj once), its share of ``--concurrency`` and of the time left."""
    warc_dir = Path(options.warc_dir) if options.warc_dir else state / "warc"
    fetch = options.fetch
    budget = None
    if options.max_pages is not None:  # every page request of every worker counts
        path = (state / WORKERS_DIR / BUDGET_FILE).resolve()
        budget = PageBudget(path, k, n, options.max_pages)
    return dataclasses.replace(
        options,
        page_budget=budget,
        workers=n,
        shard=k,
        shards=None,
        slot_map=map_path,
        duration=duration,
        warc_dir=warc_dir.resolve(),
        # one WARC directory: each worker names, recovers and archives its own files
        warc=dataclasses.replace(options.warc, prefix=f"{options.warc.prefix}-w{k}", shared=True),
        archive=dataclasses.replace(options.archive, merge_index=False),
        fetch=dataclasses.replace(
            fetch,
            concurrency=max(1, math.ceil(fetch.concurrency / n)),
            # hosts of one IP address may belong to different workers: --per-ip holds
            # across them through one table (crawlkit.fetch.iptable), the user's if named
            ip_table=fetch.ip_table or str((state / WORKERS_DIR / "ip-table").resolve()),
        ),
    )


def split_seeds(seeds: Sequence[str], slot_map: SlotMap) -> list[list[str]]:
    """The seeds each worker owns (by site, as its links are routed); a seed that does
    not parse goes to worker 0, which reports it."""
    canon = Canonicalizer()
    out: list[list[str]] = [[] for _ in range(slot_map.shards)]
    for raw in seeds:
        try:
            site = str(url_record(canon.parse(trim_url(raw)), depth=0, reason="seed")["site"])
        except InvalidURL:
            out[0].append(raw)
            continue
        out[slot_map.shard_of_site(site)].append(raw)
    return out


def worker_deadline(deadline: float | None, duration: float | None) -> float | None:
    """When the workers stop fetching: the crawl's ``--for`` deadline less a margin for
    what they do after it (:data:`WORKER_MARGIN`, at most :data:`WORKER_MARGIN_SHARE`
    of ``--for``)."""
    if deadline is None or not duration:
        return deadline
    return deadline - min(WORKER_MARGIN, WORKER_MARGIN_SHARE * duration)


# -- the parent --------------------------------------------------------------------------
@dataclasses.dataclass
class _Worker:
    k: int
    process: Any = None
    conn: Any = None
    state: str = "busy"  # busy, idle, ended (its summary arrived), failed
    progress: dict[str, Any] = dataclasses.field(default_factory=dict)
    summaries: list[dict[str, Any]] = dataclasses.field(default_factory=list)
    # the summary so far of a run that has not sent its own (from its last progress):
    # what the crawl's summary counts of a worker that died or was killed
    unfinished: dict[str, Any] | None = None
    error: str = ""  # what crashed it
    # the crawlkit error it stopped on (a --proxy that fails), as one process says it
    failure: str = ""
    killed: bool = False  # by the parent, past --for: not a death that fails the crawl
    # its temporary files' directory (its pool's fork server has a socket there), which
    # the parent removes once the process has ended, however it ended
    temp_dir: Path | None = None
    room: int = -1  # pages --max-pages left when it was last started again on it
    ready: bool = False  # its current process holds signals: a stop may be sent
    stops_sent: int = 0  # SIGTERMs sent to its current process (WorkerFleet._forward_stops)
    starts: int = 0  # processes started for it in this crawl


class WorkerFleet:
    """The parent of ``crawl --workers N``: runs the workers, delivers their links,
    forwards signals, enforces ``--for``, sums their figures (see the module doc)."""

    def __init__(
        self,
        state: Path,
        seeds: Sequence[str],
        options: CrawlOptions,
        n: int,
        *,
        reporter: Reporter | None = None,
        progress: Callable[[dict[str, Any]], None] | None = None,
        clock: Callable[[], float] = steady_time,
    ):
        if options.shard is not None or options.shards is not None or options.slot_map:
            raise UsageError("--workers N > 1 shards the crawl itself: no --shard/--slot-map")
        self.state = state.resolve()
        self.seeds = list(seeds)
        self.options = options
        self.n = n
        self.rep = reporter or NullReporter()
        self.progress = progress
        self.clock = clock
        self.start = clock()
        self.deadline = self.start + options.duration if options.duration else None
        self.workers = [_Worker(k) for k in range(n)]
        self.signals = 0
        self.stops = 0  # SIGTERMs every worker is to get: the first stops it, the second at once
        self.stopped = ""  # the parent's own reason to stop (a signal, a limit, a death)
        self.failed = False
        self.failure = ""  # the first crawlkit error a worker stopped on (_reap)
        self.cycle_done = False  # a worker finished a cycle since the last delivery
        self._ctx = multiprocessing.get_context("spawn")

    # -- running -------------------------------------------------------------------------
    def run(self) -> dict[str, Any]:
        """Run the crawl to its end; returns the merged summary (``failed`` in it
        says a worker died or failed: the CLI exits 1)."""
        # the parent holds STATE's lock (a second crawl of it is refused, exit 1), each
        # worker its own STATE/workers/K's
        with open_state(self.state, owner="crawl"):
            return self._run()

    def _run(self) -> dict[str, Any]:
        map_path = prepare(self.state, self.n, self.rep)
        self.map_path = map_path
        record_settings(self.state, self.seeds, self.options)  # for crawlkit report STATE
        self.own_seeds = split_seeds(self.seeds, SlotMap.load(map_path))
        if self.options.max_pages is not None:  # each claim: that worker's earlier runs
            used = [_totals(worker_dir(self.state, k)) for k in range(self.n)]
            reset_budget(self.state / WORKERS_DIR / BUDGET_FILE, used)
        old = {s: signal.signal(s, self._on_signal) for s in early_signals.KINDS}
        held = early_signals.take()  # one that came while the crawl started: a stop too
        if held is not None:
            self._on_signal(signal.Signals[held], None)
        try:
            for w in self.workers:
                self._start(w)
            self._loop()
        finally:
            for s, handler in old.items():
                signal.signal(s, handler)
            for w in self.workers:
                if w.process is not None and w.process.is_alive():
                    w.process.kill()  # only on an error of the parent itself
                    w.process.join()
                _remove_temp_dir(w)
        warc_root = Path(self.options.warc_dir) if self.options.warc_dir else self.state / "warc"
        if self.options.archive.index and warc_root.exists():
            update_collection_index(warc_root, self.rep)
        runs = [w.summaries + ([w.unfinished] if w.unfinished else []) for w in self.workers]
        summary = merge_summaries(
            [s for r in runs for s in r],
            elapsed=self.clock() - self.start,
            stopped=self.stopped,
            last=[r[-1] for r in runs if r],
        )
        summary["workers"] = self.n
        summary["failed"] = self.failed
        if self.failure:
            summary["failure"] = self.failure
        return summary

    def _start(self, w: _Worker) -> None:
        if w.process is not None and w.process.is_alive():
            # its summary came before its exit, and the state lock goes with the exit
            w.process.join(RESTART_JOIN)
        _remove_temp_dir(w)  # its last run's
        left = None if self.deadline is None else max(0.1, self.deadline - self.clock())
        opts = worker_options(self.options, self.state, self.map_path, w.k, self.n, left)
        w.temp_dir = _worker_temp_dir(w.k)
        parent, child = self._ctx.Pipe()
        w.stops_sent, w.ready = 0, False
        proc = self._ctx.Process(
            target=worker_main,
            args=(
                w.k,
                str(worker_dir(self.state, w.k)),
                self._seeds_of(w.k, again=w.starts > 0),
                opts,
                child,
                worker_deadline(self.deadline, self.options.duration),
                str(w.temp_dir or ""),
            ),
            name=f"crawl-worker-{w.k}",
        )
        # Started with SIGINT and SIGTERM blocked, not ignored: the worker inherits the
        # mask, so a signal to the whole group (a terminal's Ctrl-C) while it imports
        # waits in it, and it drops that one once it has a group of its own (the
        # parent got it too, and forwards its stops once told "ready",
        # _forward_stops); the parent's own is delivered when the start returns (a
        # spawn writes the worker's arguments after the exec: a while, never lost).
        # Ignored instead, the parent would have lost a signal meanwhile; neither,
        # the worker died of it, with a traceback.
        # (multiprocessing's resource tracker unblocks them after it starts itself,
        # which the first start would do inside the block: started before it)
        resource_tracker.ensure_running()
        with early_signals.blocked():
            proc.start()
        w.starts += 1
        child.close()
        w.process, w.conn, w.state, w.unfinished = proc, parent, "busy", None

    def _seeds_of(self, k: int, *, again: bool = False) -> tuple[list[str], list[str]]:
        """Worker k's own seeds, and the others'. Started ``again`` in this crawl, it
        has queued and rechecked its own already: they only widen its scope, as the
        others' do (named again, a seed's failed robots.txt was asked again at once,
        seconds after the first run asked it, and its summary counted it twice)."""
        peers = [u for j, own in enumerate(self.own_seeds) if j != k for u in own]
        if again:
            return [], [*self.own_seeds[k], *peers]
        return self.own_seeds[k], peers

    def _on_signal(self, signum: int, frame: Any) -> None:
        # Counted here, sent by the loop (_forward_stops): a handler that signalled the
        # workers itself ran between any two lines of the parent, and missed a worker
        # being started (the signal came before the start, or during it).
        self.signals += 1
        if not self.stopped:
            self.stopped = f"interrupted ({signal.Signals(signum).name})"
        if self.signals <= 2:  # the first asks each worker to stop, the second at once
            self.stops += 1

    def _forward_stops(self) -> None:
        """Send each running worker that can take them (it said "ready") the SIGTERMs
        asked for that it has not had yet."""
        for w in self.workers:
            p = w.process
            while w.stops_sent < self.stops and w.ready and p is not None and p.is_alive():
                w.stops_sent += 1
                with contextlib.suppress(ProcessLookupError):
                    os.kill(p.pid, signal.SIGTERM)

    def _stop(self, reason: str) -> None:
        """Stop every worker as one signal would (once)."""
        if not self.stopped:
            self.stopped = reason
            self.stops += 1
            self._forward_stops()

    def _loop(self) -> None:
        next_delivery = 0.0
        while any(w.process is not None and w.process.is_alive() for w in self.workers):
            ready = [w.conn for w in self.workers if w.process is not None and not w.conn.closed]
            ready += [w.process.sentinel for w in self.workers if w.process is not None]
            multiprocessing.connection.wait(ready, timeout=DELIVER_EVERY / 2)
            self._drain()
            self._forward_stops()
            self._reap()
            now = self.clock()
            if self.deadline is not None and now >= self.deadline + KILL_AFTER:
                for w in self.workers:
                    if w.process is not None and w.process.is_alive() and not w.killed:
                        self.rep.warn(
                            f"worker {w.k} still runs {KILL_AFTER:g} s past --for: killed "
                            "(the next run finishes what it cut)"
                        )
                        w.killed = True
                        w.process.kill()
            # A worker's progress line comes once a cycle is done, its links for the
            # others in its outbox: delivered then, not up to DELIVER_EVERY later (on
            # the few-seed web the first cycles' links are the whole crawl's work).
            if now >= next_delivery or self.cycle_done:
                next_delivery = now + DELIVER_EVERY
                self.cycle_done = False
                self._deliver_and_check()
        self._drain()
        self._reap()  # a death at the very end fails the crawl too
        if all((worker_dir(self.state, w.k) / "shard.json").exists() for w in self.workers):
            deliver([worker_dir(self.state, w.k) for w in self.workers], self.rep)

    def _drain(self) -> bool:
        """Read every message the workers sent; True if there was one."""
        heard = False
        for w in self.workers:
            while w.conn is not None and not w.conn.closed:
                try:
                    if not w.conn.poll():
                        break
                    message = w.conn.recv()
                except (EOFError, OSError):
                    w.conn.close()
                    break
                heard = True
                kind = message[0]
                if kind == "progress":
                    self.cycle_done = True
                    info = dict(message[1])
                    w.unfinished = info.pop("summary", None)
                    w.progress = {**info, "cycles": w.progress.get("cycles", 0) + 1}
                    self._show_progress()
                elif kind == "ready":
                    w.ready = True
                elif kind == "idle":
                    w.state = "idle"
                elif kind == "busy":
                    w.state = "busy"
                elif kind == "summary":
                    w.summaries.append(message[1])
                    w.state, w.unfinished = "ended", None
                elif kind == "error":
                    w.error = str(message[1])
                elif kind == "failed":
                    w.failure = str(message[1])
        return heard

    def _reap(self) -> None:
        """Notice workers that ended: a clean end, or a death that stops the crawl."""
        for w in self.workers:
            p = w.process
            if p is None or p.is_alive() or w.state == "failed":
                continue
            p.join()
            _remove_temp_dir(w)
            self._drain()  # its last words (summary or error) before the pipe closed
            if (p.exitcode == 0 and w.state == "ended") or w.killed or self._took_our_stop(w):
                w.state = "ended"
                continue
            w.state = "failed"
            self.failed = True
            if w.failure:
                # not a death: the worker stopped on an error of the crawl's own (its
                # --proxy failed), which its peers meet too. The crawl ends on that one
                # line, as one process does (the CLI says it, once), not on each
                # worker's "died".
                self.failure = self.failure or w.failure
                self._stop(f"worker {w.k} failed")
                continue
            how = f"exit {p.exitcode}" if p.exitcode and p.exitcode > 0 else None
            if how is None:
                how = f"signal {signal.Signals(-(p.exitcode or 0)).name}" if p.exitcode else "?"
            self.rep.warn(
                f"worker {w.k} (pid {p.pid}) died ({how}{': ' + w.error if w.error else ''}); "
                "stopping the crawl: run it again to finish what was cut (the summary "
                "counts its run to its last finished cycle)",
                "worker died",
            )
            self._stop(f"worker {w.k} died")

    def _took_our_stop(self, w: _Worker) -> bool:
        """Whether worker ``w`` ended of a SIGTERM this crawl sent it to stop (a peer's
        failure, a signal, a limit): one that came once its own handling was over (its
        run ended and it was closing its stores, where the default action is back)
        ends the process at once. It ended as asked, cut as a kill cuts (the next run
        finishes it), and did not die: said as a death, a peer's failed --proxy read
        as a crash of this worker too (CI, 1 run in ~30)."""
        p = w.process
        return bool(self.stopped) and w.stops_sent > 0 and p.exitcode == -signal.SIGTERM

    def _deliver_and_check(self) -> None:
        dirs = [worker_dir(self.state, w.k) for w in self.workers]
        if not all((d / "shard.json").exists() for d in dirs):
            return  # a worker has not written its role yet
        moved = deliver(dirs, self.rep)["files"]
        if self.stopped:
            # A stop ends a worker waiting for work too: it would end on its own
            # SIGTERM, but a worker that lost it (a fetch run's loop swallowed it once)
            # waited for work for good, and the parent for it.
            self._end_idle()
            return
        # An ended worker (its run stopped for another reason) that was sent work
        # is started again, while the crawl goes on.
        for w in self.workers:
            in_time = self.deadline is None or self.clock() < self.deadline
            if w.state == "ended" and in_time and self._has_work(w):
                self._start(w)
        if moved or any(w.state == "busy" for w in self.workers):
            return
        if any(
            inbox_files(d) for w, d in zip(self.workers, dirs, strict=True) if not self._at_limit(w)
        ):
            return
        if self._drain():
            return  # someone spoke since: look again at the next delivery
        self._end_idle()

    def _end_idle(self) -> None:
        """Tell every worker waiting for work that none will come."""
        for w in self.workers:
            if w.state == "idle" and w.conn is not None and not w.conn.closed:
                with contextlib.suppress(OSError):
                    w.conn.send("end")

    def _at_limit(self, w: _Worker) -> bool:
        """Worker w stopped on --max-pages and no page is left to the crawl now (its
        inbox then waits for the next run, as one process leaves its frontier)."""
        stopped = w.summaries[-1].get("stopped") if w.summaries else None
        if stopped != LIMIT or w.state != "ended":
            return False
        room = self._room()
        return room <= 0 or room == w.room  # none left, or none it could use

    def _room(self) -> int:
        """Page requests --max-pages still leaves the crawl (claims of every worker)."""
        if self.options.max_pages is None:
            return 1
        budget = PageBudget(self.state / WORKERS_DIR / BUDGET_FILE, 0, self.n, 0)
        return self.options.max_pages - budget.total_claimed()

    def _has_work(self, w: _Worker) -> bool:
        """An ended worker to start again: sent links, or stopped on --max-pages
        while others held the rest of it, now that none is busy (so every claim is
        requests made) and the crawl has pages left."""
        stopped = w.summaries[-1].get("stopped") if w.summaries else None
        if stopped == LIMIT:
            if any(o.state == "busy" for o in self.workers if o is not w):
                return False
            room = self._room()
            # the same room as when it was last started again: that run used none of
            # it; starting it once more would only repeat that (never in a loop)
            if room <= 0 or room == w.room:
                return False
            w.room = room
            return True
        return bool(inbox_files(worker_dir(self.state, w.k)))

    def _show_progress(self) -> None:
        if self.progress is None:
            return
        parts = [w.progress for w in self.workers if w.progress]
        elapsed = max(self.clock() - self.start, 1e-9)
        fetched = sum(int(p.get("fetched", 0)) for p in parts)
        self.progress(
            {
                "cycle": str(sum(int(p.get("cycles", 0)) for p in parts)),
                "fetched": fetched,
                "pages_per_s": fetched / elapsed,
                "errors": sum(int(p.get("errors", 0)) for p in parts),
                "deferred": sum(int(p.get("deferred", 0)) for p in parts),
                "new_urls": sum(int(p.get("new_urls", 0)) for p in parts),
                "requests": sum(int(p.get("requests", 0)) for p in parts),
                "elapsed_s": elapsed,
            }
        )


# A fork server listens on DIR/pymp-XXXXXXXX/listener-XXXXXXXX: an AF_UNIX path of at
# most 107 bytes on Linux.
_SOCKET_PATH_ROOM = 107 - len("/pymp-XXXXXXXX/listener-XXXXXXXX")


def _worker_temp_dir(k: int) -> Path | None:
    """A temporary directory for worker k, or None (the worker then uses the system's)
    when its path leaves no room for the fork server's socket below it."""
    path = Path(tempfile.mkdtemp(prefix=f"ckw{k}-"))
    if len(os.fsencode(path)) <= _SOCKET_PATH_ROOM:
        return path
    path.rmdir()
    return None


def _remove_temp_dir(w: _Worker) -> None:
    if w.temp_dir is not None:
        shutil.rmtree(w.temp_dir, ignore_errors=True)
        w.temp_dir = None


def _totals(state: Path) -> int:
    """A worker's page requests of all runs, killed ones included."""
    totals = read_totals(state / "crawl") if (state / "crawl").is_dir() else {}
    return int(totals.get("requests", totals.get("fetched", 0)) or 0)


def workers_fetched_nothing(state: Path, summary: dict[str, Any]) -> bool:
    """:func:`crawlkit.crawl.retry.fetched_nothing` for a crawl of workers: the run
    failed as a whole and no worker fetched a page in any run."""

    outcomes: dict[str, int] = summary.get("outcomes") or {}
    if str(summary.get("stopped", "")).startswith("interrupted") or any(
        outcomes.get(o) for o in ANSWERED
    ):
        return False
    if not summary.get("errors"):
        return False
    return not any(_totals(d) for d in (state / WORKERS_DIR).glob("[0-9]*"))


def explain_workers(
    state: str,
    options: CrawlOptions,
    n: int,
    flags: dict[str, str] | None = None,
    seeds: Sequence[str] = (),
) -> str:
    """``--explain`` of ``--workers N``: the parent is no stage; it runs worker 0's
    pipeline (shown) and the others' (the same with their K) and delivers between them."""

    root = Path(state)
    map_path = root / WORKERS_DIR / "map.json"
    dirs = " ".join(f"--deliver {worker_dir(root, k)}" for k in range(n))
    opts = worker_options(options, root, map_path, 0, n, options.duration)
    opts = dataclasses.replace(opts, warc_dir=Path(options.warc_dir or root / "warc"))
    # worker 0's own fetch settings, in place of the user's
    own = {
        "--concurrency": str(opts.fetch.concurrency),
        "--ip-table": str(opts.fetch.ip_table),
        "--warc-prefix": opts.warc.prefix,
    }
    given = (flags or {}).get("fetch_flags", "")  # " --flag value" each, as rendered
    for name in own:
        given = re.sub(rf" {re.escape(name)} \S+", "", given)
    given += "".join(f" {name} {shlex.quote(value)}" for name, value in own.items())
    flags = {**(flags or {}), "fetch_flags": given}
    return "\n".join(
        [
            f"# crawl --workers {n}: a parent process (not a stage) runs {n} worker processes,",
            f"# worker K = 0..{n - 1} runs the pipeline below (worker 0's) on {root}/workers/K",
            "# as shard K of the slot map (sites by registered-domain hash), with its share of",
            f"# --concurrency and WARC prefix {options.warc.prefix}-wK; made once with:",
            f"crawlkit shard --shards {n} --save-map {map_path}",
            explain(str(worker_dir(root, 0)), opts, flags, seeds),
            f"# the parent, every {DELIVER_EVERY:g} s while the workers run (a worker with",
            "# nothing left waits for its inbox until every worker has nothing left):",
            f"crawlkit shard {dirs}",
            "# at the end, the parent keeps index.cdxj of the one WARC directory (as crawl does)",
        ]
    )
