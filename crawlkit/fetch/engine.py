"""The fetch engine: URL records in, exactly one fetch record per URL out.

:class:`Fetcher` ties the parts together. For each input URL record it yields one
fetch record (docs/design.md invariant 1) with an ``outcome``:

``fetched``        a response arrived (any status but 304/429/503; 3xx with a
                   Location is ``redirect``); archived in the WARC
``not-modified``   304 to a conditional GET (``etag`` / ``last_modified`` of the input)
``redirect``       3xx; ``location`` is the target, which also comes out as a URL
                   record (``reason: "redirect"``, ``hops``, ``via``) through
                   ``on_redirect`` unless the hop limit (5) is reached
``robots-denied``  robots.txt disallows the URL for our agent; nothing was requested
``deferred``       not fetched now, ``retry_at`` says when: the host is backing off
                   (429/503, Retry-After), robots.txt is unreachable, or the host
                   cannot be served before the ``duration`` ends (then the record
                   also says ``"stopped": true``: never started, not the host's fault)
``refused``        not an http(s) URL, or its address is refused by the network policy
``error``          DNS failure, connect/TLS failure, timeout before a response

A classified failure (TLS: :mod:`crawlkit.fetch.tls`; DNS: :mod:`crawlkit.fetch.dns`)
also has ``error_code`` (``tls-expired``, ``dns-nxdomain``, ...), also when it
defers a host's URLs because its robots.txt could not be fetched. A response fetched
with ``--insecure`` after a failed TLS check has ``tls_unverified`` (the code), and
its WARC metadata record says ``tlsUnverified``.

Order of work per host (docs/design.md invariants 2, 3, 7): the name is resolved when the
host's queue is made, and the address is checked by the :class:`NetPolicy`; the
host's durable clock and backoff are loaded from :class:`HostState`; robots.txt for
each origin is fetched (through the same politeness clock, following up to 5
redirects itself) before any other URL of it; then the host's URLs in FIFO order, one
at a time, each after the gap the :class:`Scheduler` computes. A host never seen
before is written to the state, and fsynced, before its first request; after a crash
every known host waits its full gap (see :mod:`crawlkit.fetch.hoststate`).

Records come out in completion order. Input is read completely before fetching
starts (a frontier batch is bounded), so memory grows with the batch: roughly 1 KB
per queued URL, plus per-host state; :meth:`Fetcher.feed` and ``run(refill=...)``
keep a long run fed instead, and :meth:`Fetcher.stop` ends one early with every URL
not yet fetched reported ``deferred``.

:class:`Fetcher` owns the run loop (refill, launches, the deadline, a stop); each
other job is a part it composes:

* :func:`~crawlkit.fetch.intake.take` — the intake: one queued URL per accepted
  record, the others answered at once;
* :class:`~crawlkit.fetch.pages.PageFlow` — a page request from start to record;

* :class:`~crawlkit.fetch.hosts.HostTable` — host lifecycle: resolving and the
  address check, durable clocks, whole queues deferred or failed, idle hosts
  forgotten; :class:`~crawlkit.fetch.hosts.StateCommits` — when the state is fsynced;
* :class:`~crawlkit.fetch.robotsflow.RobotsFlow` — robots.txt fetched, cached and
  applied, deferral when it cannot be had, robots captures reported;
* :class:`~crawlkit.fetch.archiver.WarcArchiver` — captures written on the WARC thread;
* :mod:`~crawlkit.fetch.outcome` — what each fetch record says
  (:class:`~crawlkit.fetch.outcome.Outbox` holds them until handed out).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncGenerator, Callable, Coroutine, Iterable
from typing import Any

from crawlkit.fetch.archiver import WarcArchiver
from crawlkit.fetch.config import DEADLINE_GRACE, DEFAULT_AGENT, FetchConfig
from crawlkit.fetch.exchange import FetchResult, HttpClient
from crawlkit.fetch.hosts import (
    Host,
    HostTable,
    RobotsTask,
    StateCommits,
    Task,
    split_url,
)
from crawlkit.fetch.hoststate import HostState
from crawlkit.fetch.intake import take
from crawlkit.fetch.netpolicy import NetPolicy
from crawlkit.fetch.outcome import (
    OUTCOMES,
    Outbox,
    Record,
    iso_time,
    parse_retry_after,
)
from crawlkit.fetch.pages import PageFlow
from crawlkit.fetch.resolver import Resolver
from crawlkit.fetch.robotsflow import RobotsFlow
from crawlkit.fetch.scheduler import Scheduler
from crawlkit.robots import RobotsPolicy
from crawlkit.times import steady_time
from crawlkit.url import Canonicalizer
from crawlkit.warc.write import WarcWriter

# The engine's public names: split_url, iso_time and parse_retry_after are defined with
# the job they serve (hosts, outcome) and exported here too, for the engine's callers.
__all__ = [
    "DEFAULT_AGENT",
    "OUTCOMES",
    "FetchConfig",
    "Fetcher",
    "iso_time",
    "parse_retry_after",
    "split_url",
]

REFILL_PAUSE = 0.25  # seconds before asking an empty refill again
# (DEADLINE_GRACE, from config.py: how long past the run's end a request may go on.)


class Fetcher:
    """One fetch run. Build it with its parts, then ``async for rec in f.run(records)``.

    Memory: hosts with nothing queued that have been idle ``idle_evict`` seconds past
    their next-allowed time are dropped from memory (every ``sweep_every`` seconds, once
    ``sweep_min_hosts`` are known: 0 by default); their clocks are on disk and are read
    back if they show up again. Per-address clocks long past go at the same sweeps.
    Without a state directory nothing is dropped.

    ``on_redirect`` receives the URL record of every redirect target within the hop
    limit. ``state`` (optional) makes host clocks, backoffs, robots and digests
    durable; ``warc`` (optional) archives every response. ``on_robots_capture`` is told
    ``{"url", "warc"}`` of each robots.txt capture (they have no fetch record), and
    ``on_request`` of each page request as it is sent (``crawl`` counts them on disk:
    ``--max-pages`` after a kill -9).
    """

    def __init__(
        self,
        config: FetchConfig,
        *,
        client: HttpClient,
        resolver: Resolver,
        netpolicy: NetPolicy,
        state: HostState | None = None,
        warc: WarcWriter | None = None,
        robots_policy: RobotsPolicy | None = None,
        canonicalizer: Canonicalizer | None = None,
        on_redirect: Callable[[Record], None] | None = None,
        on_robots_capture: Callable[[Record], None] | None = None,
        on_request: Callable[[], None] | None = None,
        clock: Callable[[], float] = steady_time,
    ):
        self.config = config
        self.client = client
        self.resolver = resolver
        self.netpolicy = netpolicy
        self.state = state
        self.warc = warc
        self.robots_policy = robots_policy or RobotsPolicy()
        self.canon = canonicalizer or Canonicalizer()
        self.on_redirect = on_redirect
        self.on_robots_capture = on_robots_capture
        self.on_request = on_request
        self.clock = clock
        # the address clocks live on with the host state, for the next fetch run
        self.scheduler = Scheduler.from_config(
            config, ip_clocks=state.ip_clocks if state is not None else None
        )
        self._headers = {
            "User-Agent": config.agent,
            "Accept": "*/*",
            "Accept-Encoding": "gzip, deflate",
        }
        self._wake = asyncio.Event()
        # Set by the loop while nothing is in flight and no waiting host is due (see
        # _note_idle): a refill that waits for answers to amortise its batch asks now.
        self.idle = asyncio.Event()
        self._tasks: set[asyncio.Task[None]] = set()
        self._failures: list[BaseException] = []
        self._launching = 0  # hosts taken from the scheduler, their tasks not yet spawned
        self.running = False  # inside run(), until it starts to finish (WARC still open)
        # The first proxy failure (exchange.PROXY_FAILURES): it stopped the run, and the
        # caller reports it (stages.fetch raises ProxyError once every record is out).
        self.proxy_failure: str | None = None
        self._in_flight: set[asyncio.Timeout] = set()  # requests' scopes (see stop)
        self.outbox = Outbox()
        self.commits = StateCommits(state, clock)
        # Responses waiting for the WARC thread; past the limit no request starts, so a
        # slow disk holds memory to about limit x body size.
        self.archiver = WarcArchiver(warc, state, max_pending=4 * config.concurrency)
        self.hosts = HostTable(
            scheduler=self.scheduler,
            resolver=resolver,
            netpolicy=netpolicy,
            state=state,
            commits=self.commits,
            outbox=self.outbox,
            clock=clock,
            spawn=self._spawn,
            on_robots_task=self._robots_given_up,
        )
        self.robots = RobotsFlow(
            config,
            policy=self.robots_policy,
            client=client,
            headers=self._headers,
            hosts=self.hosts,
            outbox=self.outbox,
            state=state,
            commits=self.commits,
            archiver=self.archiver,
            on_capture=on_robots_capture,
            clock=clock,
            on_proxy_failure=self.proxy_failed,
        )
        self.robots.in_flight = self._in_flight  # stop() bounds robots.txt requests too
        self.pages = PageFlow(
            config,
            client=client,
            headers=self._headers,
            hosts=self.hosts,
            outbox=self.outbox,
            archiver=self.archiver,
            canon=self.canon,
            in_flight=self._in_flight,
            clock=clock,
            on_proxy_failure=self.proxy_failed,
            on_request=on_request,
            on_redirect=on_redirect,
        )

    # ------------------------------------------------------------------ figures
    @property
    def counts(self) -> dict[str, int]:
        """Fetch records handed out so far, by outcome."""
        return self.outbox.counts

    @property
    def redirects_out(self) -> int:
        """Redirect targets within the hop limit handed to ``on_redirect`` so far."""
        return self.pages.redirects_out

    @property
    def evicted(self) -> int:
        """Idle hosts dropped from memory so far."""
        return self.hosts.evicted

    @property
    def sweep_every(self) -> float:
        """Seconds between two sweeps of idle hosts."""
        return self.hosts.sweep_every

    @sweep_every.setter
    def sweep_every(self, value: float) -> None:
        self.hosts.sweep_every = value

    @property
    def sweep_min_hosts(self) -> int:
        """Hosts known before sweeps start (0 by default: from the first)."""
        return self.hosts.sweep_min_hosts

    @sweep_min_hosts.setter
    def sweep_min_hosts(self, value: int) -> None:
        self.hosts.sweep_min_hosts = value

    @property
    def idle_evict(self) -> float:
        """Seconds a host idles past its next-allowed time before it may be dropped."""
        return self.hosts.idle_evict

    @idle_evict.setter
    def idle_evict(self, value: float) -> None:
        self.hosts.idle_evict = value

    # ------------------------------------------------------------------ input
    def feed(self, records: Iterable[Record]) -> int:
        """Add URL records to a running fetch (call it on the loop's thread).

        New hosts are resolved and scheduled, known ones rescheduled; the politeness
        rules are the same as for the records given to :meth:`run` (a host is in the
        scheduler at most once). Returns how many records were taken.
        """
        touched: dict[str, Host] = {}
        taken = 0
        outbox, hosts = self.outbox, self.hosts
        for rec in records:
            taken += 1
            host = take(rec, outbox, hosts)
            if host is not None:
                touched[host.key] = host
        now = self.clock()
        for host in touched.values():
            if host.state == "new":
                hosts.prepare(host)
            elif host.state == "ready":
                hosts.schedule(host, now)
            elif host.state == "failed" and host.failure is not None:
                hosts.fail(host, *host.failure)
        self._wake.set()
        return taken

    def refuse_queued(
        self, which: Callable[[Record], bool], refused: str, detail: str
    ) -> list[Record]:
        """Answer every queued URL whose input record ``which`` names as refused
        (``refused``, ``detail``) instead of fetching it (call it on the loop's
        thread): for what the run must no longer ask, e.g. a site an operator
        blocked while the fetcher held its URLs. Requests in flight finish. Returns
        the refusals (they come out of :meth:`run` like every record)."""
        out = self.hosts.refuse_queued(which, refused, detail)
        if out:
            self._wake.set()
        return out

    # ------------------------------------------------------------------ tasks
    def _spawn(self, coro: Coroutine[Any, Any, None]) -> None:
        """Run ``coro`` as one of the run's tasks (the run waits for them all)."""
        task = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._task_done)

    def _task_done(self, task: asyncio.Task[None]) -> None:
        # Wake the loop only once the task is out of the set it watches.
        self._tasks.discard(task)
        self._wake.set()
        if not task.cancelled() and task.exception() is not None:
            self._failures.append(task.exception())  # type: ignore[arg-type]

    def _robots_given_up(self, task: RobotsTask, why: str) -> None:
        """A robots task left in a failed or deferred host's queue."""
        self.robots.give_up(task, why)

    @property
    def _deadline(self) -> float:
        return self.hosts.deadline

    # ------------------------------------------------------------------ the loop
    async def run(
        self,
        records: Iterable[Record],
        *,
        refill: Callable[[], Coroutine[Any, Any, list[Record] | None]] | None = None,
    ) -> AsyncGenerator[Record, None]:
        """Fetch every record; yields fetch records as they complete.

        ``refill`` keeps a long run fed (``crawlkit crawl``): it is awaited whenever
        fewer hosts wait in the scheduler than twice the concurrency, or a request slot
        is free and no waiting host is due (:meth:`_wants_work`), and returns more
        URL records, ``[]`` for "nothing now, ask again soon", or None for "no more".
        The run ends when nothing is in flight or waiting and ``refill`` said None.
        """
        start = self.clock()
        self.running = True
        if self.config.duration is not None:
            self.hosts.deadline = start + self.config.duration
        if self.state is not None:
            self.state.begin_run()
            self.resolver.load(self.state.dns())
        for rec in records:
            take(rec, self.outbox, self.hosts)
        while self.outbox:
            yield self.outbox.pop()
        for host in list(self.hosts.hosts.values()):
            if host.state == "new":
                self.hosts.prepare(host)
        loop = asyncio.get_running_loop()
        refill_task: asyncio.Task[list[Record] | None] | None = None
        refill_after = 0.0
        answers_at_empty = 0  # the fetch records made when a refill last gave nothing
        refill_done = refill is None
        try:
            while True:
                self._wake.clear()
                if self._failures:
                    raise self._failures[0]
                now = self.clock()
                if refill_task is not None and refill_task.done():
                    more = refill_task.result()
                    refill_task = None
                    if more is None:
                        refill_done = True
                    elif more:
                        self.feed(more)
                    else:
                        refill_after = now + REFILL_PAUSE
                        answers_at_empty = self.outbox.made
                if refill_after > now and self.outbox.made > answers_at_empty:
                    # An answer since frees a share of its host: ask at once, not after
                    # the pause (one site of 3,000 pages at no gap, its links coming in
                    # as it goes: 13.0 s with the whole pause, 9.4 s so).
                    refill_after = now
                if (
                    refill is not None
                    and not refill_done
                    and refill_task is None
                    and now >= refill_after
                    and now < self._deadline
                    and self._wants_work(now)
                ):
                    refill_task = loop.create_task(refill())
                    refill_task.add_done_callback(lambda _t: self._wake.set())
                self.hosts.defer_late(now)
                if now >= self._deadline and self.hosts.resolving:
                    self.hosts.abandon_lookups()
                launches = self._launches(now)
                if launches:
                    fresh = [h for h, _ in launches if not h.durable]
                    if self.state is not None and fresh:
                        # A host never seen is on disk before it is contacted (invariant 2).
                        # Meanwhile the launched hosts are neither in the scheduler nor
                        # tasks: counted apart, or a refill running during the commit
                        # finds no work and says "no more" for the rest of the run.
                        self._launching = len(launches)
                        try:
                            await self.commits.commit(loop)
                        finally:
                            self._launching = 0
                        for h in fresh:
                            h.durable = True
                    for host, task in launches:
                        self._spawn(self._run_task(host, task))
                self._note_idle(now)
                if self.state is not None:
                    self.commits.background(loop, now)
                    self._sweep(now)
                while self.outbox:
                    yield self.outbox.pop()
                if (
                    not self._tasks
                    and not self.hosts.resolving
                    and not len(self.scheduler)
                    and (refill_done or now >= self._deadline)
                    and refill_task is None
                ):
                    self.robots.release_all()
                    if not self.outbox:
                        break
                    continue
                timeout = None
                if self.scheduler.busy < self.config.concurrency and not self.archiver.full:
                    nt = self.scheduler.next_time()
                    if nt is not None:
                        timeout = max(0.0, nt - self.clock())
                # Judge the deadline by the same ``now`` as the exit test above: a fresh
                # clock reading could pass the deadline the exit test had not yet seen,
                # and then wait forever for a wake-up nothing in flight will send.
                past_deadline = now >= self._deadline
                if self._deadline != float("inf") and not past_deadline:
                    left = max(0.0, self._deadline - self.clock())
                    timeout = left if timeout is None else min(timeout, left)
                if not refill_done and refill_task is None and not past_deadline:
                    # A refill waits for its pause, or for the fetcher to want work. A
                    # fetcher that wants none (every slot busy, enough hosts queued) is
                    # changed only by a request ending (a wake-up) or a host coming due
                    # (the scheduler's time above): waking at once would spin the loop
                    # at a full core while the requests run.
                    if refill_after > now:
                        wait = max(0.0, refill_after - self.clock())
                        timeout = wait if timeout is None else min(timeout, wait)
                    elif self._wants_work(now):
                        timeout = 0.0  # the launches above may have made room: ask now
                if past_deadline and timeout == 0:
                    # After the deadline only requests in flight remain: wait for them to
                    # wake us. A zero timeout here would spin without letting them run.
                    timeout = None
                if timeout is None and not self._tasks and refill_task is None:
                    timeout = REFILL_PAUSE  # nothing in flight could wake us: look again
                if timeout is None or timeout > 0:
                    with contextlib.suppress(TimeoutError):
                        await asyncio.wait_for(self._wake.wait(), timeout)
                else:
                    await asyncio.sleep(0)  # something is due now: let the loop breathe once
            while self.outbox:
                yield self.outbox.pop()
        finally:
            self.running = False
            if refill_task is not None:
                with contextlib.suppress(BaseException):
                    await refill_task
            for t in list(self._tasks):
                t.cancel()
            await self._finish(loop)

    def has_work(self) -> bool:
        """Whether URLs given to this run are still unanswered (queued, resolving, or
        in flight); their answers may lead the caller to more work."""
        return bool(self._tasks or self._launching or self.hosts.resolving or len(self.scheduler))

    def _note_idle(self, now: float) -> None:
        """Set :attr:`idle` while no request is in flight or starting and no waiting
        host is due: the hosts still held sit out gaps (a Crawl-delay, a 429's
        Retry-After), and only more URLs can give the run something to do now."""
        busy = self.scheduler.busy or self._launching or self.hosts.resolving
        due = self.scheduler.next_time()
        if not busy and (due is None or due > now):
            self.idle.set()
        else:
            self.idle.clear()

    def _wants_work(self, now: float) -> bool:
        """Whether to ask ``refill`` for more: few hosts wait, or a request slot is free
        and no waiting host is due now. Hosts sitting out long gaps (a Crawl-delay, a
        slow server's 10 x fetch time) must not keep the run from hosts that could be
        fetched now: counting waiting hosts alone starves thousands-of-host crawls."""
        sched = self.scheduler
        if len(sched) + self.hosts.resolving < 2 * self.config.concurrency:
            return True
        due = sched.next_time()
        return sched.busy < self.config.concurrency and (due is None or due > now)

    def stop(self, reason: str = "fetch stopped before the host was due (interrupted)") -> None:
        """Start no new request; what is left comes out ``deferred`` (SIGINT, SIGTERM),
        with ``"stopped": true`` and ``reason`` as its error.

        Requests in flight finish within ``DEADLINE_GRACE`` (a page cut short comes out
        deferred; a robots.txt cut short gives no verdict, its host's URLs deferred)
        and are reported as usual.
        """
        self.hosts.deadline = min(self.hosts.deadline, self.clock())
        self.hosts.stop_reason = reason
        self._wake.set()
        # Requests in flight get DEADLINE_GRACE more, as at the deadline (a drip or a
        # stall would hold the stop for the whole --timeout); a page cut short comes
        # out deferred, a robots.txt cut short settles nothing (robotsflow._cut), so
        # its host is not taken for unreachable.
        with contextlib.suppress(RuntimeError):  # no running loop: nothing in flight
            cap = asyncio.get_running_loop().time() + DEADLINE_GRACE
            for scope in self._in_flight:
                when = scope.when()
                if when is None or when > cap:
                    scope.reschedule(cap)

    def proxy_failed(self, res: FetchResult) -> None:
        """The proxy failed a request (``res.proxy_failed``): every request goes
        through it, so the rest would fail alike and each would be blamed on its site
        (robots.txt unavailable, an hour's deferral). The run stops as on a signal:
        what is left comes out deferred, ``"stopped": true``, naming the proxy; the
        first failure is kept in :attr:`proxy_failure` for the caller to report."""
        if self.proxy_failure is None:
            self.proxy_failure = res.error or "the proxy failed"
            self.stop(f"not fetched: the run stopped on a proxy failure ({self.proxy_failure})")

    def _launches(self, now: float) -> list[tuple[Host, Task]]:
        """The requests to start now: due hosts, as many as the free request slots
        and the WARC queue allow, each with its next task."""
        out: list[tuple[Host, Task]] = []
        sched = self.scheduler
        if now >= self._deadline:
            return out
        while sched.busy < self.config.concurrency and not self.archiver.full:
            host = sched.pop_ready(now)
            if host is None:
                break
            assert isinstance(host, Host)
            task = self.robots.next_task(host, now)
            if task is None:
                sched.release(host)
                continue
            self.hosts.start(host, now)
            out.append((host, task))
        return out

    def _sweep(self, now: float) -> None:
        """Forget long-idle hosts (on disk) and per-address clocks long past, so a long
        run stays small. The robots entries have their own bound (bytes, LRU)."""
        hosts = self.hosts
        if not hosts.sweep_due(now):
            return
        hosts.evict_idle(now, self.robots.waiting_hosts())
        self.scheduler.forget_addresses(now - hosts.idle_evict)

    async def _finish(self, loop: asyncio.AbstractEventLoop) -> None:
        """Wait for the tasks, close the WARC file, commit the state, stop the threads."""
        if self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)
        self.scheduler.close()  # per-IP slots of requests cut off (--ip-table)
        await self.archiver.close()
        await self.commits.finish(loop, self.resolver.export)
        self.archiver.shutdown()
        self.commits.shutdown()

    # ------------------------------------------------------------------ one request
    async def _run_task(self, host: Host, task: Task) -> None:
        if isinstance(task, RobotsTask):
            await self.robots.fetch(host, task)
        else:
            await self.pages.fetch(host, task)
