"""Host lifecycle: each host's queue, address, durable clock and back-off, from the
first URL seen for it until it is forgotten.

A host (the politeness unit, ``hostname[:port]``: :func:`split_url`) is made on its
first URL and goes through these states, kept by :class:`HostTable`:

``new``        made, not resolved yet;
``resolving``  its name is being looked up (once: the address is pinned for the run);
``ready``      the address passed the :class:`~crawlkit.fetch.netpolicy.NetPolicy` and
               the durable clock was loaded; the host is in the scheduler whenever it
               has work and can be served before the run's deadline;
``failed``     no address, or every address refused: each URL queued for it, now or
               later, comes out ``error`` or ``refused`` with the same reason.

A ready host whose queue cannot be served now comes out as a whole: every queued URL
``deferred`` while it backs off after a 429/503, or when it is not due before the run
ends (those records say ``"stopped": true``). Around each request the table keeps the
durable clock (:mod:`crawlkit.fetch.hoststate`): *in flight* with the gap it will keep
when the request starts, the scheduler's new next-allowed time when it ends. After a
crash every known host waits its full gap counted from the restart (docs/design.md
invariant 2). :class:`StateCommits` decides when those writes reach the disk.

Hosts idle long past their next-allowed time (``idle_evict``, 60 s) are dropped from
memory (:meth:`HostTable.evict_idle`, every ``sweep_every`` seconds, 30); their clocks
are on disk and read back if they show up again, so one dropped is never asked early.

The queue of a host holds :class:`Item` (a URL to fetch) and :class:`RobotsTask` (a
robots.txt hop to fetch through this host's clock); what a robots task means is the
robots flow's business (:mod:`crawlkit.fetch.robotsflow`), which this module reaches
only through the ``on_robots_task`` callback.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Callable, Coroutine
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from crawlkit.errors import InvalidURL
from crawlkit.fetch.exchange import FetchResult
from crawlkit.fetch.hoststate import HostRecord, HostState
from crawlkit.fetch.netpolicy import NetPolicy
from crawlkit.fetch.outcome import (
    Outbox,
    Record,
    fetch_record,
    fetch_refusal,
    iso_time,
    parse_retry_after,
)
from crawlkit.fetch.resolver import Resolution, Resolver
from crawlkit.fetch.scheduler import MAX_RETRY_AFTER, HostQueue, Scheduler
from crawlkit.robots import RobotsEntry

__all__ = [
    "COMMIT_EVERY",
    "Host",
    "HostTable",
    "Item",
    "RobotsTask",
    "Split",
    "StateCommits",
    "Task",
    "split_url",
]

COMMIT_EVERY = 0.5  # seconds between background commits of the host state


@dataclass(slots=True)
class Item:
    """A URL waiting in its host's queue: its input record and robots origin."""

    record: Record
    url: str
    origin: str


@dataclass(slots=True)
class RobotsTask:
    """A robots.txt request waiting in a host's queue (the first, or a redirect hop)."""

    origin: str  # whose robots.txt this is (scheme://host:port)
    url: str  # the hop being fetched
    hops: int
    previous: RobotsEntry | None
    owner: str  # the politeness key of the origin's host


Task = Item | RobotsTask  # what a host's queue holds


@dataclass(eq=False, slots=True)
class Host(HostQueue):
    """A :class:`HostQueue` with its name and where it is in its lifecycle."""

    name: str = ""
    durable: bool = False  # the state has a row for it (written before any request)
    state: str = "new"  # new, resolving, ready, failed
    failure: tuple[str, str] | None = None  # (outcome, error) once failed
    last_end: float | None = None  # when its last request ended (kept in the state)


@dataclass
class Split:
    scheme: str
    hostname: str
    key: str
    origin: str


def split_url(url: str) -> Split:
    """Scheme, hostname, politeness key (hostname[:port]) and robots origin of a URL."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as exc:
        raise InvalidURL(f"invalid URL: {exc}") from exc
    scheme = parts.scheme.lower()
    if scheme not in ("http", "https"):
        raise InvalidURL(f"scheme {scheme or '(none)'!r} is not fetched (only http and https)")
    hostname = (parts.hostname or "").rstrip(".")
    if not hostname:
        raise InvalidURL("URL has no host")
    if "%" in hostname:
        raise InvalidURL(_percent_in_host(hostname))
    default = 80 if scheme == "http" else 443
    shown = f"[{hostname}]" if ":" in hostname else hostname
    key = shown if port in (None, default) else f"{shown}:{port}"
    return Split(scheme, hostname, key, f"{scheme}://{shown}:{port or default}")


def _percent_in_host(hostname: str) -> str:
    """Why a host holding ``%`` is refused. urlsplit takes an IPv6 zone id
    (``[fe80::1%25eth0]``, RFC 6874), which the WHATWG URL Standard, browsers and
    ``crawlkit canon`` reject; let through, it failed to connect as a transient error
    and was deferred hourly, forever. A percent-escape in a name is no DNS name (canon
    decodes it)."""
    if ":" in hostname:
        zone = hostname[hostname.index("%") :]
        return f"invalid URL: an IPv6 zone id ({zone!r}) in the host (the URL Standard has none)"
    return (
        f"invalid URL: a percent-escape in the host {hostname!r} "
        "(give canonical URLs: crawlkit canon, frontier next)"
    )


class StateCommits:
    """When the host state's writes are committed (fsynced).

    :meth:`commit` is awaited before a host never seen is contacted (its row must be on
    disk first); :meth:`background` commits without waiting, at once after a
    politeness fact (:meth:`mark_urgent`: a robots.txt result, a backoff), else every
    ``COMMIT_EVERY`` seconds. One fsync per new host instead of one per group of
    requests: fsyncs cost about a third of the throughput on a slow disk.
    """

    def __init__(self, state: HostState | None, clock: Callable[[], float]) -> None:
        self.state = state
        self.clock = clock
        self._urgent = False
        self._last = 0.0
        self._pending: asyncio.Future[None] | None = None
        self._pool = ThreadPoolExecutor(1, thread_name_prefix="state")

    def mark_urgent(self) -> None:
        """A politeness fact awaits a commit: the next :meth:`background` makes it."""
        self._urgent = True

    async def commit(self, loop: asyncio.AbstractEventLoop) -> None:
        """Commit now and wait for it."""
        assert self.state is not None
        self._last = self.clock()
        self._urgent = False
        await loop.run_in_executor(self._pool, self.state.commit)

    def background(self, loop: asyncio.AbstractEventLoop, now: float) -> None:
        """Commit queued state changes without waiting: at once after a robots.txt
        result or a backoff, else every ``COMMIT_EVERY`` seconds. A failed background
        commit is raised here, on the next call."""
        pending = self._pending
        if pending is not None:
            if not pending.done():
                return
            self._pending = None
            if pending.exception() is not None:
                raise pending.exception()  # type: ignore[misc]
        if self._urgent or now - self._last >= COMMIT_EVERY:
            assert self.state is not None
            self._last = now
            self._urgent = False
            self._pending = loop.run_in_executor(self._pool, self.state.commit)

    async def finish(
        self, loop: asyncio.AbstractEventLoop, dns: Callable[[], dict[str, list[object]]]
    ) -> None:
        """End of the run: wait for a background commit, save the DNS cache
        (``dns()``) and commit what is left."""
        if self.state is None:
            return
        if self._pending is not None:
            await asyncio.gather(self._pending, return_exceptions=True)
        cache = dns()
        await loop.run_in_executor(self._pool, self.state.save_dns, cache)
        await loop.run_in_executor(self._pool, self.state.commit)

    def shutdown(self) -> None:
        """Stop the state thread (after :meth:`finish`)."""
        self._pool.shutdown()


class HostTable:
    """Every host the run knows, through its lifecycle (see the module docstring).

    Records it settles go to ``outbox``; a robots task found in a queue that is failed
    or deferred goes to ``on_robots_task`` with the reason. ``spawn`` runs a coroutine
    as one of the run's tasks (a name lookup). ``deadline`` is when the run stops
    starting requests; a host not due before it is deferred with ``stop_reason``.
    """

    def __init__(
        self,
        *,
        scheduler: Scheduler,
        resolver: Resolver,
        netpolicy: NetPolicy,
        state: HostState | None,
        commits: StateCommits,
        outbox: Outbox,
        clock: Callable[[], float],
        spawn: Callable[[Coroutine[Any, Any, None]], None],
        on_robots_task: Callable[[RobotsTask, str], None],
    ) -> None:
        self.scheduler = scheduler
        self.resolver = resolver
        self.netpolicy = netpolicy
        self.state = state
        self.commits = commits
        self.outbox = outbox
        self.clock = clock
        self.spawn = spawn
        self.on_robots_task = on_robots_task
        self.hosts: dict[str, Host] = {}
        self.resolving = 0  # lookups under way
        self._lookups: dict[str, asyncio.Task[Any]] = {}  # host key -> its lookup's task
        self.deadline = float("inf")
        self.stop_reason = "host not due before the run ends (--for)"
        self.sweep_every = 30.0
        # No floor: the hosts in memory are those with work and those active in the
        # last ``idle_evict + sweep_every`` seconds, however long the run. At 10,000 a
        # 10-minute crawl finding ~500 hosts a minute never swept: each host met stayed
        # (~250 bytes); now ~3,600 stay where 5,900 did (issue 27, README "Memory").
        self.sweep_min_hosts = 0
        self.idle_evict = 60.0
        self.evicted = 0
        self._last_sweep = 0.0

    def get(self, sp: Split) -> Host:
        """The host of ``sp``, made (``new``) on first sight."""
        host = self.hosts.get(sp.key)
        if host is None:
            host = self.hosts[sp.key] = Host(sp.key, name=sp.hostname)
        return host

    # ------------------------------------------------------------------ resolving
    def prepare(self, host: Host) -> None:
        """Resolve (or start resolving) a new host; schedules it when ready."""
        host.state = "resolving"
        hit = self.resolver.cached(host.name)
        if hit is not None:
            self._resolved(host, hit)
            return
        self.resolving += 1
        self.spawn(self._resolve(host))

    async def _resolve(self, host: Host) -> None:
        task = asyncio.current_task()
        if task is not None:
            self._lookups[host.key] = task
        try:
            res = await self.resolver.resolve(host.name)
        except asyncio.CancelledError:
            # The run stops (abandon_lookups): the host's URLs wait for the next run.
            host.state = "new"
            self.defer(host, self.clock(), self.stop_reason, stopped=True)
            raise
        finally:
            self.resolving -= 1
            self._lookups.pop(host.key, None)
        self._resolved(host, res)

    def abandon_lookups(self) -> int:
        """Cancel the name lookups under way (the run's time is up: a DNS server that
        never answers must not hold the stop); their hosts' URLs come out deferred
        with ``stop_reason`` and ``"stopped": true``. Returns how many."""
        lookups = list(self._lookups.values())
        self._lookups.clear()
        for task in lookups:
            task.cancel()
        return len(lookups)

    def _resolved(self, host: Host, res: Resolution) -> None:
        """Pin the first address the network policy allows, load the durable clock
        and schedule; with no such address the host fails."""
        now = self.clock()
        if res.error or not res.addresses:
            host.state = "failed"
            self.fail(host, "error", res.error or "no address")
            return
        address = None
        refusal = None
        for candidate in res.addresses:
            why = self.netpolicy.refusal(candidate)
            if why is None:
                address = candidate
                break
            refusal = refusal or why
        if address is None:
            host.state = "failed"
            self.fail(host, "refused", refusal or "address refused")
            return
        host.address = address
        host.state = "ready"
        saved = self.state.host(host.key) if self.state else None
        if saved is not None:
            host.durable = True
            host.backoff = saved.backoff
            host.backoff_until = saved.backoff_until
            host.last_elapsed = saved.last_elapsed
            host.crawl_delay = saved.crawl_delay
            host.next_allowed = saved.next_allowed
            # A saved clock further ahead than the host's gap or backoff can put it was
            # written by a clock that was ahead (a machine's clock set right between two
            # runs): the next run waited the error out, an hour of deferring every URL.
            sched = self.scheduler
            longest = now + max(sched.max_backoff, MAX_RETRY_AFTER)
            host.backoff_until = min(host.backoff_until, longest)
            held = max(now + sched.gap(host), host.backoff_until)
            host.next_allowed = min(host.next_allowed, held)
            if saved.last_end is not None:
                # The gap is this run's: a --min-delay raised after a complaint holds
                # from the first request, not from the second (the saved time was made
                # with the last run's gap).
                # (no later than now: a clock that was ahead wrote it, as above)
                host.last_end = min(saved.last_end, now)
                host.next_allowed = max(host.next_allowed, host.last_end + sched.gap(host))
            if saved.inflight_since is not None or (self.state and self.state.crashed):
                # The last run died, maybe with a request to this host in flight whose
                # record was lost: count it as ending now, so the full gap is kept.
                host.next_allowed = max(host.next_allowed, now + self.scheduler.gap(host))
        self.schedule(host, now)

    # ------------------------------------------------------------------ whole queues
    def fail(self, host: Host, outcome: str, error: str) -> None:
        """Every queued URL of a failed host comes out ``outcome`` with ``error``."""
        host.failure = (outcome, error)
        while host.has_items:
            item = host.items.popleft()
            if isinstance(item, Item) and outcome == "refused":  # the address check
                self.outbox.emit(fetch_refusal(item.record, item.url, "address", error))
            elif isinstance(item, Item):
                self.outbox.emit(fetch_record(item.record, item.url, outcome, error=error))
            else:
                self.on_robots_task(item, error)
        host.release_empty()

    def refuse_queued(
        self, which: Callable[[Record], bool], refused: str, detail: str
    ) -> list[Record]:
        """Every queued URL whose input record ``which`` names comes out refused
        (``refused``, ``detail``), the rest keep their places; robots tasks stay. What
        is in flight is not touched. Returns the refusals made."""
        out: list[Record] = []
        for host in self.hosts.values():
            if not host.has_items:
                continue
            kept: deque[Task] = deque()
            for item in host.items:
                if isinstance(item, Item) and which(item.record):
                    out.append(fetch_refusal(item.record, item.url, refused, detail))
                else:
                    kept.append(item)
            if len(kept) < len(host.items):
                host.items.clear()
                host.items.extend(kept)
                host.release_empty()
        for rec in out:
            self.outbox.emit(rec)
        return out

    def schedule(self, host: Host, now: float) -> None:
        """Back into the heap if it has work and can be served in time; else defer."""
        if not host.has_items or host.state != "ready":
            host.release_empty()
            return
        if host.backing_off(now):
            self.defer(host, host.backoff_until, "host is backing off after HTTP 429/503")
        elif host.next_allowed >= self.deadline:
            self.defer(host, host.next_allowed, self.stop_reason, stopped=True)
        else:
            self.scheduler.push(host)

    def defer(self, host: Host, retry_at: float, why: str, *, stopped: bool = False) -> None:
        """Every queued URL of ``host`` comes out deferred until ``retry_at``; ``stopped``
        (the run ends before the host is due) marks the records ``"stopped": true``."""
        extra = {"stopped": True} if stopped else {}
        stamp = iso_time(retry_at)
        while host.has_items:
            item = host.items.popleft()
            if isinstance(item, Item):
                self.outbox.emit(
                    fetch_record(
                        item.record, item.url, "deferred", retry_at=stamp, error=why, **extra
                    )
                )
            else:
                self.on_robots_task(item, why)
        host.release_empty()

    def defer_late(self, now: float) -> None:
        """Defer the hosts the scheduler holds that are not due before the deadline
        (all of them once it has passed)."""
        if self.deadline == float("inf"):
            return
        if now >= self.deadline:
            late = self.scheduler.drain()
        else:
            late = self.scheduler.pop_due_after(self.deadline)
        for host in late:
            assert isinstance(host, Host)
            self.defer(host, max(host.next_allowed, now), self.stop_reason, stopped=True)

    # ------------------------------------------------------------------ one request
    def start(self, host: Host, now: float) -> None:
        """A request to ``host`` starts: the scheduler takes it out, and the state
        records it in flight with the gap it will keep."""
        sched = self.scheduler
        sched.start(host, now)
        if self.state is not None:
            self.state.put_host(
                host.key,
                self._record(host, inflight=now, next_allowed=now + sched.gap(host)),
            )

    def sent(self, host: Host) -> None:
        """The request to ``host`` went out now (see :meth:`Scheduler.sent`)."""
        self.scheduler.sent(host, self.clock())

    def finish(self, host: Host, res: FetchResult) -> float:
        """The request to ``host`` ended with ``res``: its clock moves on (a 429/503
        backs off, at least Retry-After), durably; returns the time it ended."""
        now = self.clock()
        retry_after = None
        if res.status in (429, 503):
            retry_after = parse_retry_after(res.header("Retry-After"), now)
        self.scheduler.finish(
            host, now, elapsed=res.elapsed, status=res.status, retry_after=retry_after
        )
        host.last_end = now
        if self.state is not None:
            self.state.put_host(
                host.key, self._record(host, inflight=None, next_allowed=host.next_allowed)
            )
            if host.backoff_until > now:
                self.commits.mark_urgent()
        return now

    def _record(self, host: Host, *, inflight: float | None, next_allowed: float) -> HostRecord:
        return HostRecord(
            next_allowed,
            host.backoff,
            host.backoff_until,
            host.last_elapsed,
            host.crawl_delay,
            inflight,
            host.last_end,
        )

    # ------------------------------------------------------------------ memory
    def sweep_due(self, now: float) -> bool:
        """Whether to sweep now: every ``sweep_every`` seconds, once at least
        ``sweep_min_hosts`` hosts are known (0 by default: always)."""
        if now - self._last_sweep < self.sweep_every or len(self.hosts) < self.sweep_min_hosts:
            return False
        self._last_sweep = now
        return True

    def evict_idle(self, now: float, waiting: set[int]) -> None:
        """Forget hosts with nothing to do, idle ``idle_evict`` seconds past their
        next-allowed time and not backing off (their state is on disk); ``waiting``
        holds the ids of hosts waiting on a robots.txt fetched through another host."""
        for key, h in list(self.hosts.items()):
            if (
                h.has_items
                or h.busy
                or h.queued
                or h.state in ("new", "resolving")
                or id(h) in waiting
                or h.next_allowed > now - self.idle_evict
                or h.backoff_until > now
            ):
                continue
            del self.hosts[key]
            self.evicted += 1
