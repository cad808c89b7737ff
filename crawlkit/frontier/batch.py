"""Choosing a batch: how many URLs each queue gives, and which records go out.

:func:`plan` splits a batch between queues (recrawls against new URLs, the discovery
share, then 8:4:2:1 across levels); :class:`Picker` reads windows from queue heads and
picks host by host; :func:`pick` runs rounds of both until the batch is full or no
queue can give more. None of it touches the disk beyond reading segments: what is
taken out and put back is committed by the frontier's owner (see
:mod:`crawlkit.frontier.store`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import orjson

from crawlkit.frontier.budgets import SiteTable
from crawlkit.frontier.priority import (
    DISCOVERY,
    LEVEL_WEIGHTS,
    NEW_QUEUES,
    QUEUES,
    RECRAWL_QUEUES,
    split,
)
from crawlkit.frontier.queues import SegmentQueue
from crawlkit.records import Record, Refusal

__all__ = ["WINDOW_CAP", "Batch", "NextOptions", "Picker", "pick", "plan"]

WINDOW_CAP = 1 << 18  # records read from one queue head per pass
ROOM_HOSTS = 4096  # hosts with URLs queued up to which a batch counts their room first


@dataclass(frozen=True)
class NextOptions:
    """How :meth:`Frontier.next` builds a batch."""

    max_urls: int
    per_host: int = 10
    recrawl_share: float = 0.6
    discovery_share: float = 0.1
    budgets: bool = True
    cycle: float = 86400.0
    now: float | None = None
    # URLs per host handed out earlier and not answered yet (a running fetcher's):
    # they count against ``per_host``, so a slow host cannot collect a long backlog.
    outstanding: Mapping[str, int] = field(default_factory=dict)


@dataclass
class Batch:
    """A batch handed out by :meth:`Frontier.next`: ``lines`` are the URL records (NDJSON
    lines, in the order to write them); ``refused`` are records of blocked URLs."""

    lines: list[bytes]
    refused: list[Refusal]
    held_per_host: int = 0  # URLs read but left for a later batch by --per-host
    over_budget: dict[str, Any] | None = None  # Frontier.over_budget(), when looked at


def plan(opts: NextOptions, waiting: Mapping[str, int]) -> dict[str, int]:
    """URLs to take from each queue for a batch of ``opts.max_urls``, given the records
    ``waiting`` in each queue (see :mod:`crawlkit.frontier` for the rules)."""
    n = opts.max_urls
    recrawl_waiting = sum(waiting[q] for q in RECRAWL_QUEUES)
    new_waiting = sum(waiting[q] for q in (*NEW_QUEUES, DISCOVERY))
    if recrawl_waiting and new_waiting:
        n_recrawl = round(n * opts.recrawl_share)
    elif recrawl_waiting:
        n_recrawl = n
    else:
        n_recrawl = 0
    n_new = n - n_recrawl
    plan = split(
        n_recrawl,
        {q: float(LEVEL_WEIGHTS[i]) if waiting[q] else 0.0 for i, q in enumerate(RECRAWL_QUEUES)},
    )
    new_weights = {
        q: float(LEVEL_WEIGHTS[i]) if waiting[q] else 0.0 for i, q in enumerate(NEW_QUEUES)
    }
    n_disc = 0
    if waiting[DISCOVERY] and n_new:
        if not any(new_weights.values()):
            n_disc = n_new
        elif opts.discovery_share > 0:
            n_disc = max(1, round(n_new * opts.discovery_share))
    plan[DISCOVERY] = n_disc
    plan.update(split(n_new - n_disc, new_weights))
    return plan


def weight(name: str, opts: NextOptions) -> float:
    """A queue's weight when a shortfall is offered to the queues still open."""
    if name == DISCOVERY:
        return LEVEL_WEIGHTS[-1]
    level = int(name.rsplit("-", 1)[1])
    share = opts.recrawl_share if name.startswith("recrawl") else 1.0 - opts.recrawl_share
    return LEVEL_WEIGHTS[level] * max(share, 0.01)


def pick(picker: Picker, opts: NextOptions) -> None:
    """Fill ``picker.batch``: take each queue's planned share, then offer what is still
    short to the queues that can give more, for up to eight rounds (more for batches
    over :data:`WINDOW_CAP`), and put back what was read and not picked."""
    # The hosts with URLs queued can take no more than ``room``: once the batch holds
    # that many, more rounds would only rotate records back (two hosts: eight rounds
    # read for 20 URLs). The windows stay as wide as the batch asked for, so a round
    # reaches as far into the queue as before for hosts whose URLs are few and deep.
    room = picker.room()
    target = opts.max_urls if room is None else min(opts.max_urls, room)
    if target <= 0:
        picker.finish()
        return
    shares = plan(opts, {name: len(q) for name, q in picker.queues.items()})
    for _ in range(8 + opts.max_urls // WINDOW_CAP):
        before = picker.removed
        for name in QUEUES:
            if shares.get(name, 0) > 0:
                picker.take(name, shares[name])
        if len(picker.batch) >= target or (picker.removed == before and not picker.others_queued()):
            # A round that took nothing out of the queues (picked, parked or refused)
            # read only hosts at --per-host; when no other host has a URL queued,
            # more rounds would read on through the queue, rotating each record to
            # the tail, for nothing. On a one-site crawl, or once every host left
            # is busy, each batch read eight windows so (17,709 records for 10 URLs).
            break
        short = opts.max_urls - len(picker.batch)
        open_queues = {
            name: float(weight(name, opts))
            for name in QUEUES
            if picker.remaining[name] > 0 or picker.held[name]
        }
        if not open_queues:
            break
        shares = split(short, open_queues)
    picker.finish()


class Picker:
    """The working state of one :meth:`Frontier.next` call.

    Reads windows of records from queue heads and picks, host by host in turn, the
    records that may go out: not more than ``per_host`` for a host, not more than
    the site's remaining budget. What it reads but does not pick goes back: records
    of hosts already at their limit to the tail of their queue (so a host with a
    million URLs cannot hide the others behind it), records of sites over budget to
    the parked queue, and records simply not needed back to the head.

    ``is_blocked`` (None when nothing is blocked) says whether a record's site or host
    is blocked; such records are passed to ``on_blocked`` and leave the queue. Each
    picked record is passed to ``on_handed``; both callbacks keep the frontier's
    counters.
    """

    def __init__(
        self,
        queues: Mapping[str, SegmentQueue],
        parked: Mapping[str, SegmentQueue],
        sites: SiteTable,
        opts: NextOptions,
        *,
        is_blocked: Callable[[str, str], bool] | None,
        on_handed: Callable[[Record], None],
        on_blocked: Callable[[Record], None],
        queued_hosts: Mapping[str, int] | None = None,
        period: int | None = None,
    ):
        # The budget period URLs are charged to (None: budgets off). A URL handed out
        # is tagged with it ("budget_period"); one handed back unfetched in the same
        # period (deferred before its request: the run stopped, robots.txt could not
        # be had) carries the tag and is not charged again. Charged at each hand-out,
        # a site crawled in --for slices got 69 pages of its budget of 110.
        self.period = period
        self.queues = queues
        self.queued_hosts = queued_hosts
        self.parked = parked
        self.sites = sites
        self.opts = opts
        self.is_blocked = is_blocked
        self.on_handed = on_handed
        self.on_blocked = on_blocked
        self.batch: list[bytes] = []
        self.host_n: Counter[str] = Counter(opts.outstanding)
        self.remaining = {name: len(queues[name]) for name in QUEUES}
        self.held: dict[str, list[tuple[bytes, Record]]] = {name: [] for name in QUEUES}
        self.rotate: dict[str, list[bytes]] = {name: [] for name in QUEUES}
        self.park: dict[str, list[bytes]] = {name: [] for name in QUEUES}
        self._budget: dict[str, int] = {}
        self.removed = 0  # records picked, parked or refused: out of the queues

    def room(self) -> int | None:
        """URLs the hosts with URLs queued can still take in this batch, ``per_host``
        each less what they hold; None when not known, when budgets are on (reading
        on parks the URLs of sites over budget, which the next batches would then
        read again), or when there are more than :data:`ROOM_HOSTS` such hosts (the
        count would cost more than the reading it saves)."""
        per_host = self.opts.per_host
        queued = self.queued_hosts
        if queued is None or not per_host or self.opts.budgets or len(queued) > ROOM_HOSTS:
            return None
        host_n = self.host_n
        return sum(min(n, per_host - host_n[h]) for h, n in queued.items() if host_n[h] < per_host)

    def others_queued(self) -> bool:
        """Whether a host not yet at ``per_host`` has URLs queued (or parked), by the
        frontier's per-host counts (``queued_hosts``; True when not given)."""
        per_host = self.opts.per_host
        if self.queued_hosts is None or not per_host:
            return True
        queued = self.queued_hosts
        busy = sum(1 for host, n in self.host_n.items() if n >= per_host and host in queued)
        return len(queued) > busy

    @property
    def held_per_host(self) -> int:
        """Records read but rotated to a later batch because their host was full."""
        return sum(len(lines) for lines in self.rotate.values())

    def _left(self, site: str) -> int:
        budget = self._budget.get(site)
        if budget is None:
            budget = self._budget[site] = self.sites.budget(site)
        info = self.sites.sites.get(site)  # not get(): a look changes nothing to journal
        return budget - info.used if info is not None else budget

    def take(self, name: str, need: int) -> int:
        """Pick up to ``need`` records from queue ``name``; returns how many."""
        cands = self._window(name, need)
        if not cands:
            return 0
        status, picked = self._choose(cands, need)
        self._settle(name, cands, status, picked)
        return len(picked)

    def _window(self, name: str, need: int) -> list[tuple[bytes, Record]]:
        """The records held back last round plus a fresh window from the queue head."""
        cands = self.held[name]
        self.held[name] = []
        # Read about twice what is needed, so hosts at their limit can be skipped; a
        # cap keeps a huge --max from reading a whole queue into memory at once.
        want = max(0, min(need * 2 + 256, WINDOW_CAP) - len(cands))
        if want and self.remaining[name]:
            lines = self.queues[name].take(min(want, self.remaining[name]))
            self.remaining[name] -= len(lines)
            cands.extend(zip(lines, map(orjson.loads, lines), strict=True))
        return cands

    def _choose(self, cands: list[tuple[bytes, Record]], need: int) -> tuple[bytearray, list[int]]:
        """Hosts take turns, one record each a round; returns each candidate's status
        (0 not looked at, 1 picked, 2 rotate, 3 park, 4 refused) and the picked indexes."""
        groups: dict[str, list[int]] = {}
        for i, (_, rec) in enumerate(cands):
            groups.setdefault(rec["host"], []).append(i)
        status = bytearray(len(cands))
        picked: list[int] = []
        active = list(groups.values())
        per_host = self.opts.per_host
        budgets = self.opts.budgets
        is_blocked = self.is_blocked
        r = 0
        while active and len(picked) < need:
            still = []
            for idx in active:
                i = idx[r]
                rec = cands[i][1]
                host = rec["host"]
                site = rec["site"]
                charged = self.period is not None and rec.get("budget_period") == self.period
                # Budget before --per-host: a URL whose site has used its budget waits
                # for the next cycle whatever its host's turn, so say so now (parked)
                # rather than rotate it to the tail for the next batch to park.
                if is_blocked is not None and is_blocked(site, host):
                    status[i] = 4
                elif budgets and not charged and self._left(site) <= 0:
                    status[i] = 3
                elif per_host and self.host_n[host] >= per_host:
                    status[i] = 2
                else:
                    status[i] = 1
                    picked.append(i)
                    self.host_n[host] += 1
                    if not charged:
                        self.sites.get(site).used += 1
                if r + 1 < len(idx):
                    still.append(idx)
                if len(picked) >= need:
                    break
            active = still
            r += 1
        return status, picked

    def _settle(
        self, name: str, cands: list[tuple[bytes, Record]], status: bytearray, picked: list[int]
    ) -> None:
        """Send each candidate where its status says; the picked ones into the batch."""
        held = self.held[name]
        for i, (line, rec) in enumerate(cands):
            st = status[i]
            if st != 0 and st != 2:
                self.removed += 1
            if st == 0:
                held.append((line, rec))
            elif st == 2:
                self.rotate[name].append(line)
            elif st == 3:
                self.park[name].append(line)
                info = self.sites.get(rec["site"])
                info.queued -= 1
                info.parked += 1
            elif st == 4:
                self.on_blocked(rec)
        period = self.period
        for i in picked:
            line, rec = cands[i]
            if period is not None and rec.get("budget_period") != period:
                end = b"\n" if line.endswith(b"\n") else b""
                line = orjson.dumps({**rec, "budget_period": period}) + end
            self.batch.append(line)
            self.on_handed(rec)

    def finish(self) -> None:
        """Put back what was read and not handed out (in memory; durable at commit)."""
        for name in QUEUES:
            queue = self.queues[name]
            queue.push_front([line for line, _ in self.held[name]])
            queue.push_back(self.rotate[name])
            self.parked[name].push_back(self.park[name])
