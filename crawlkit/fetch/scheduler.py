"""The back half of a Mercator frontier: one FIFO per host, a heap of hosts by time.

This is where politeness (docs/design.md invariant 2) is enforced, as a property of the data
structure rather than of the callers' good intentions:

* A host is in the heap at most once and is *out* of the heap while it is being
  fetched (between :meth:`Scheduler.start` and :meth:`Scheduler.finish`), so it never
  has two requests, hence never two connections, at once.
* When a fetch ends, the host's next-allowed time becomes
  ``end + max(min_delay, delay_factor × fetch time, Crawl-delay)``.
* 429 and 503 put the host into backoff: ``backoff`` seconds (60 by default), doubled
  on every further 429/503 up to ``max_backoff`` (1 h), and never shorter than the
  server's Retry-After (capped at a day). Any other answer clears the backoff.
* Per IP address at most ``per_ip`` requests run at once, and a request to an
  address starts at least ``per_ip_delay`` after the last one to it went out or ended
  (:meth:`Scheduler.sent`, :meth:`Scheduler.finish`); while a request started to it
  has not gone out, the address's other hosts wait. A start counted when it is
  launched is not when the server sees it (a fresh host's clock is committed first,
  the connection is made): counted so, 10-23 of 960 starts to one address came up to
  16 ms inside ``--per-ip-delay`` by the server's log on an idle machine, and one came
  211 ms inside it on a loaded one. The end is seen after the server sent it, so the
  gap after it holds in the server's log. (The shared table, :mod:`crawlkit.fetch.
  iptable`, counts from starts and ends.)
* A host whose address is busy waits
  *parked* on that address (not in the heap, so nothing spins); each request to that
  address that ends puts the parked host due first back into the heap (O(log n), so
  thousands of hosts behind one shared address cost nothing per request), and so does
  :meth:`Scheduler.release` of a host that was handed out but not started.
* With an ``ip_gate`` (:class:`~crawlkit.fetch.iptable.IpTable`, ``--ip-table``) the
  per-IP limit holds across every process sharing the table: once this scheduler's own
  limits allow a start, the gate is asked too, without blocking. When it refuses, the
  host becomes its address's *probe*: back in the heap at the time the gate named,
  while the address's other hosts park behind it (one retry per address, however many
  hosts share it). A start through the gate unparks one more host of the address, to
  try for another slot. The scheduler's own counting is unchanged: the gate is an
  extra condition, and holds one slot per request until :meth:`Scheduler.finish` or
  :meth:`Scheduler.release` (or :meth:`Scheduler.close`). The table's gap is counted
  from the last start *or end* of a request to the address, by any process.

The scheduler does no I/O and reads time only from the ``now`` its callers pass, so it
is tested with a fake clock. It knows nothing of URLs: a host's ``items`` are opaque.
"""

from __future__ import annotations

import heapq
import itertools
import math
from collections import deque
from dataclasses import dataclass, field
from typing import Any

from crawlkit.fetch.config import FetchConfig
from crawlkit.fetch.iptable import IpClaim, IpGate, IpTable, ip_key

__all__ = ["MAX_RETRY_AFTER", "HostQueue", "Scheduler"]

MAX_RETRY_AFTER = 86_400.0


@dataclass(eq=False, slots=True)
class HostQueue:
    """One host's FIFO and clock. ``key`` is ``hostname[:port]`` (the politeness unit).

    The FIFO (:attr:`items`) is made on first use and let go by :meth:`release_empty`:
    most known hosts have nothing queued, and an empty ``deque`` costs ~630 bytes, more
    than the rest of the host. Ask :attr:`has_items`, which makes nothing.
    """

    key: str
    address: str | None = None
    _items: deque[Any] | None = field(default=None, repr=False)
    next_allowed: float = 0.0
    backoff: float = 0.0  # length of the current backoff step (0: not backing off)
    backoff_until: float = 0.0
    last_elapsed: float = 0.0
    crawl_delay: float = 0.0
    busy: bool = False
    queued: bool = False  # in the heap or parked

    @property
    def items(self) -> deque[Any]:
        """The host's FIFO, made if it has none."""
        if self._items is None:
            self._items = deque()
        return self._items

    @property
    def has_items(self) -> bool:
        return bool(self._items)

    def release_empty(self) -> None:
        """Let an empty FIFO go (the next :attr:`items` makes a new one)."""
        if self._items is not None and not self._items:
            self._items = None

    def backing_off(self, now: float) -> bool:
        return self.backoff_until > now


_DEFAULT = FetchConfig()


def _ip_of(host: HostQueue) -> str | None:
    """The address ``host`` counts under for ``--per-ip`` (:func:`ip_key`: one server
    reached as ``127.0.0.1`` and as ``::ffff:127.0.0.1`` is one address)."""
    return None if host.address is None else ip_key(host.address)


class Scheduler:
    """Hands out hosts whose time has come, one request per host at a time."""

    def __init__(
        self,
        *,
        min_delay: float = _DEFAULT.min_delay,
        delay_factor: float = _DEFAULT.delay_factor,
        per_ip: int = _DEFAULT.per_ip,
        per_ip_delay: float | None = None,
        backoff: float = _DEFAULT.backoff,
        max_backoff: float = _DEFAULT.max_backoff,
        host_min_delay: dict[str, float] | None = None,
        ip_gate: IpGate | None = None,
        ip_clocks: dict[str, float] | None = None,
    ):
        """Defaults are :class:`FetchConfig`'s; ``per_ip_delay`` None is ``min_delay / 4``.
        ``ip_gate`` shares the per-IP limit with other processes (see the module
        docstring); its waits are added to the callers' ``now``. ``ip_clocks`` (an
        address's next allowed start) is kept by the caller for the schedulers after
        this one: a crawl runs one fetch after another in a process, and each began
        with no address clocks (a host alone on its address, --per-ip-delay 2s, was
        asked 0.5 s after its last request, its own gap, at each new fetch run)."""
        if per_ip < 1:
            raise ValueError("per_ip must be at least 1")
        self.min_delay = min_delay
        self.host_min_delay = dict(host_min_delay or {})  # by host name (a config file's)
        self.delay_factor = delay_factor
        self.per_ip = per_ip
        self.per_ip_delay = min_delay / 4 if per_ip_delay is None else per_ip_delay
        self.backoff_base = backoff
        self.max_backoff = max_backoff
        self._heap: list[tuple[float, int, HostQueue]] = []
        self._seq = itertools.count()
        self._ip_active: dict[str, int] = {}
        self._ip_next: dict[str, float] = ip_clocks if ip_clocks is not None else {}
        # Requests started and not yet gone out (sent), by host and by address: the
        # address's next start waits for them (its gap counts from when they go out).
        self._unsent: set[HostQueue] = set()
        self._ip_unsent: dict[str, int] = {}
        self._parked: dict[str, list[tuple[float, int, HostQueue]]] = {}
        self.busy = 0
        self.ip_gate = ip_gate
        self._claims: dict[HostQueue, IpClaim] = {}  # slots of the gate held, by host
        self._probe: dict[str, HostQueue] = {}  # the host retrying the gate, by address

    @classmethod
    def from_config(
        cls, config: FetchConfig, ip_clocks: dict[str, float] | None = None
    ) -> Scheduler:
        """The scheduler of a fetch run's politeness knobs (``--min-delay`` and the rest),
        sharing the per-IP limit through the table at ``config.ip_table`` if named, and
        the address clocks of the runs before it in ``ip_clocks``."""
        gate = IpTable.open(config.ip_table) if config.ip_table else None
        return cls(
            min_delay=config.min_delay,
            delay_factor=config.delay_factor,
            per_ip=config.per_ip,
            per_ip_delay=config.per_ip_delay,
            backoff=config.backoff,
            max_backoff=config.max_backoff,
            host_min_delay=dict(config.host_min_delay),
            ip_gate=gate,
            ip_clocks=ip_clocks,
        )

    # -- queue membership ---------------------------------------------------------------
    def push(self, host: HostQueue) -> None:
        """Put an idle host with work into the heap at its next-allowed time."""
        if host.queued or host.busy:
            return
        host.queued = True
        when = host.next_allowed
        ip = _ip_of(host)
        if ip is not None:
            when = max(when, self._ip_next.get(ip, 0.0))
        heapq.heappush(self._heap, (when, next(self._seq), host))

    def next_time(self) -> float | None:
        """When the earliest host in the heap is due (None: heap empty)."""
        return self._heap[0][0] if self._heap else None

    def __len__(self) -> int:
        return len(self._heap) + self._n_parked

    def due_count(self, now: float) -> int:
        """Hosts in the heap due at ``now`` (a scan: for sampling, not the hot path)."""
        return sum(1 for when, _, _ in self._heap if when <= now)

    @property
    def _n_parked(self) -> int:
        return sum(len(v) for v in self._parked.values())

    def drain(self) -> list[HostQueue]:
        """Remove and return every waiting host (heap and parked), e.g. at a deadline."""
        hosts = [h for _, _, h in self._heap]
        for parked in self._parked.values():
            hosts.extend(h for _, _, h in parked)
        self._heap.clear()
        self._parked.clear()
        self._probe.clear()
        for h in hosts:
            h.queued = False
        return hosts

    def pop_due_after(self, deadline: float) -> list[HostQueue]:
        """Remove hosts that cannot start before ``deadline`` (they will be deferred).

        O(1) unless the earliest host is already late, in which case all are; a late
        host deeper in the heap is found once it comes to the top.
        """
        if not self._heap or self._heap[0][0] < deadline:
            return []
        late = [h for t, _, h in self._heap if t >= deadline]
        if late:
            self._heap = [e for e in self._heap if e[0] < deadline]
            heapq.heapify(self._heap)
            for h in late:
                h.queued = False
                ip = _ip_of(h)
                if ip is not None and ip in self._parked and not self._ip_active.get(ip):
                    # hosts parked behind a gate's probe, and no request of ours to
                    # wake them: one takes its place in the heap
                    self._probe.pop(ip, None)
                    self._unpark_one(ip)
        return late

    # -- the fetch cycle ----------------------------------------------------------------
    def pop_ready(self, now: float) -> HostQueue | None:
        """A host that may start a request now, taken out of the heap; or None."""
        heap = self._heap
        while heap and heap[0][0] <= now:
            _, _, host = heapq.heappop(heap)
            ip = _ip_of(host)
            if ip is not None:
                if self._probe and self._probe.get(ip) is host:
                    del self._probe[ip]  # out of the heap: it is the probe again if refused
                if self._ip_active.get(ip, 0) >= self.per_ip or ip in self._ip_unsent:
                    # woken by finish() or release() of a request to this address
                    heapq.heappush(
                        self._parked.setdefault(ip, []),
                        (host.next_allowed, next(self._seq), host),
                    )
                    continue
                ip_next = self._ip_next.get(ip, 0.0)
                if ip_next > now:
                    heapq.heappush(heap, (ip_next, next(self._seq), host))
                    continue
                if self.ip_gate is not None and not self._through_gate(host, ip, now):
                    continue
            host.queued = False
            return host
        return None

    def _through_gate(self, host: HostQueue, ip: str, now: float) -> bool:
        """Whether the gate lets ``host`` start now (a slot is then held for it); if
        not, ``host`` waits as its address's probe, or parked behind the probe."""
        assert self.ip_gate is not None
        if ip in self._probe:  # another host of the address retries for all of them
            heapq.heappush(
                self._parked.setdefault(ip, []), (host.next_allowed, next(self._seq), host)
            )
            return False
        got = self.ip_gate.acquire(ip, self.per_ip, self.per_ip_delay)
        if isinstance(got, IpClaim):
            self._claims[host] = got
            self._unpark_one(ip)  # it may find another slot free
            return True
        self._probe[ip] = host
        # strictly later than now, or pop_ready would ask again at once, forever
        when = max(now + got, math.nextafter(now, math.inf))
        heapq.heappush(self._heap, (when, next(self._seq), host))
        return False

    def start(self, host: HostQueue, now: float) -> None:
        """Mark ``host`` as fetching (it stays out of the heap until :meth:`finish`)."""
        host.busy = True
        self.busy += 1
        ip = _ip_of(host)
        if ip is not None:
            self._ip_active[ip] = self._ip_active.get(ip, 0) + 1
            self._ip_next[ip] = max(self._ip_next.get(ip, 0.0), now + self.per_ip_delay)
            self._unsent.add(host)
            self._ip_unsent[ip] = self._ip_unsent.get(ip, 0) + 1

    def sent(self, host: HostQueue, now: float) -> None:
        """The request :meth:`start` counted went out at ``now``: the address's gap counts
        from then too. A start is counted when the request is launched; on a loaded
        machine it went out up to 0.2 s later (a fresh host's clock committed first, the
        connection made, the loop late), and a request to the same address launched
        ``per_ip_delay`` after the first start reached the server 39 ms after it."""
        ip = _ip_of(host)
        if ip is not None and host.busy:
            self._ip_next[ip] = max(self._ip_next.get(ip, 0.0), now + self.per_ip_delay)
            if self._went_out(host, ip):
                self._unpark_one(ip)

    def _went_out(self, host: HostQueue, ip: str) -> bool:
        """Count ``host``'s request as no longer waiting to go out; whether it was."""
        if host not in self._unsent:
            return False
        self._unsent.discard(host)
        left = self._ip_unsent[ip] - 1
        if left:
            self._ip_unsent[ip] = left
        else:
            del self._ip_unsent[ip]
        return True

    def gap(self, host: HostQueue, elapsed: float | None = None) -> float:
        """The wait after a fetch that took ``elapsed`` seconds (default: the last one)."""
        e = host.last_elapsed if elapsed is None else elapsed
        floor = self.min_delay
        if self.host_min_delay:
            name = host.key.rpartition(":")[0] if host.key.count(":") == 1 else host.key
            floor = self.host_min_delay.get(name, floor)
        return max(floor, self.delay_factor * e, host.crawl_delay)

    def finish(
        self,
        host: HostQueue,
        now: float,
        *,
        elapsed: float,
        status: int | None,
        retry_after: float | None = None,
    ) -> None:
        """Record the end of a request; sets the host's clock and backoff.

        Does not put the host back into the heap: the caller decides (more work,
        deferral, or done) and calls :meth:`push`.
        """
        host.busy = False
        self.busy -= 1
        host.last_elapsed = elapsed
        host.next_allowed = now + self.gap(host, elapsed)
        if status in (429, 503):
            step = (
                self.backoff_base if host.backoff <= 0 else min(host.backoff * 2, self.max_backoff)
            )
            host.backoff = step
            wait = max(step, min(retry_after or 0.0, MAX_RETRY_AFTER))
            host.backoff_until = now + wait
            host.next_allowed = max(host.next_allowed, host.backoff_until)
        elif status is not None:
            host.backoff = 0.0
            host.backoff_until = 0.0
        if self._claims:
            self._release_claim(host, True)
        ip = _ip_of(host)
        if ip is not None:
            self._went_out(host, ip)  # (never sent: no connection, or a client that does
            # not say when it sends)
            self._ip_active[ip] -= 1
            if not self._ip_active[ip]:
                del self._ip_active[ip]
            self._ip_next[ip] = max(self._ip_next.get(ip, 0.0), now + self.per_ip_delay)
            self._unpark_one(ip)

    def forget_addresses(self, before: float) -> int:
        """Drop the per-address clocks of addresses idle with their next start allowed
        before ``before`` (one is kept per address ever fetched otherwise); one dropped
        counts as 0, which is as due. Returns how many."""
        old = [ip for ip, t in self._ip_next.items() if t < before and ip not in self._ip_active]
        for ip in old:
            del self._ip_next[ip]
        return len(old)

    def release(self, host: HostQueue) -> None:
        """``host`` came out of :meth:`pop_ready` but will not be started (no work
        now); its turn on the address passes to a parked host."""
        if self._claims:
            self._release_claim(host, False)
        ip = _ip_of(host)
        if ip is not None:
            self._unpark_one(ip)

    def close(self) -> None:
        """Give back every slot of the gate still held (requests cut off at the end of
        a run never reach :meth:`finish`); the gate itself stays open."""
        while self._claims:
            _host, claim = self._claims.popitem()
            assert self.ip_gate is not None
            self.ip_gate.release(claim, True)

    def _release_claim(self, host: HostQueue, started: bool) -> None:
        claim = self._claims.pop(host, None)
        if claim is not None:
            assert self.ip_gate is not None
            self.ip_gate.release(claim, started)

    def _unpark_one(self, ip: str) -> None:
        parked = self._parked.get(ip)
        if not parked:
            return
        _, _, h = heapq.heappop(parked)
        if not parked:
            del self._parked[ip]
        h.queued = False
        self.push(h)
