"""The add path: a URL record's way into a queue, one named step at a time.

:meth:`AddRun.add` takes one record through these steps:

1. a record without ``url`` is a dedup *site record* (``site`` and ``yield``) that sets
   the site's yield, or is refused as ``bad-record``;
2. *identify*: a record without a usable ``fp``, ``site`` and ``host`` is canonicalized
   (refused as ``invalid-url`` if it cannot be);
3. *admit*: trap limits (:mod:`crawlkit.frontier.traps`) and operator blocks may refuse
   it;
4. *route*: a recrawl already queued is a duplicate and stops here; otherwise the
   record's level is decided (:mod:`crawlkit.frontier.priority`), the site graph learns
   from seeds and links, and the queue is chosen (``new-d`` for a site's first URL);
5. *queue*: the record is appended to its queue's pending buffer (a segment is written
   when a buffer holds ``SEGMENT_LINES``) and counted.

Every record with a ``url`` is queued, refused or counted as a duplicate, never dropped
(docs/design.md invariant 1). Nothing here is durable before the frontier's commit.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass

import orjson

from crawlkit.errors import InvalidURL
from crawlkit.frontier.budgets import SiteInfo, SiteTable, has_linker
from crawlkit.frontier.commands import is_blocked
from crawlkit.frontier.priority import (
    DISCOVERY,
    LEVELS,
    NEW_QUEUES,
    RECRAWL_QUEUES,
    new_url_level,
    recrawl_level,
)
from crawlkit.frontier.queues import SEGMENT_LINES, SegmentQueue
from crawlkit.frontier.traps import TrapChecker, TrapLimits
from crawlkit.records import importance_of
from crawlkit.streams import Record
from crawlkit.times import parse_time
from crawlkit.url import Canonicalizer, site_of_url

__all__ = ["AddResult", "AddRun", "PendingQueues"]

_DUMPS_OPT = orjson.OPT_APPEND_NEWLINE


@dataclass
class AddResult:
    """What one :meth:`Frontier.add_records` call did (for the summary line)."""

    queued: int = 0
    refused: int = 0
    duplicates: int = 0
    site_records: int = 0
    routed: int = 0  # sharded: records written to other shards' outboxes
    delivered: int = 0  # sharded: inbox records new to this shard's seen set
    held: int = 0  # URL records due later, put in the waiting room instead


class PendingQueues:
    """Records added and not yet in a segment: one buffer and a line count per queue.

    A buffer of joined lines, not a list of orjson's bytes objects (which would cost
    about 4 KB a line in allocations). A full buffer becomes a segment of its queue.
    """

    def __init__(self, queues: Mapping[str, SegmentQueue]):
        self.queues = queues
        self.buffers = {name: bytearray() for name in queues}
        self.counts = dict.fromkeys(queues, 0)

    def __len__(self) -> int:
        return sum(self.counts.values())

    def append(self, name: str, line: bytes) -> None:
        buf = self.buffers[name]
        buf += line
        count = self.counts[name] = self.counts[name] + 1
        if count >= SEGMENT_LINES:
            self._flush(name)

    def flush(self) -> None:
        """Write every non-empty buffer to its queue (as a segment)."""
        for name, count in self.counts.items():
            if count:
                self._flush(name)

    def _flush(self, name: str) -> None:
        buf = self.buffers[name]
        self.queues[name].push_back_raw(bytes(buf), self.counts[name])
        buf.clear()
        self.counts[name] = 0


class AddRun:
    """The working state of one :meth:`Frontier.add_records` call (see the module doc).

    ``refuse(record, reason, detail)`` reports a refusal; ``recrawls()`` returns the set
    of fingerprints of queued recrawls (loaded on first use), which this run extends.
    Afterwards ``result``, ``reasons`` (queued records per reason) and
    ``recrawls_changed`` say what to count and commit.
    """

    def __init__(
        self,
        *,
        now: float,
        limits: TrapLimits,
        sites: SiteTable,
        hosts: Counter[str],
        blocks: set[str],
        pending: PendingQueues,
        canonicalizer: Callable[[], Canonicalizer],
        recrawls: Callable[[], set[int]],
        refuse: Callable[[Record, str, str], None],
    ):
        self.now = now
        self.check = TrapChecker(limits, now=now).check
        self.sites = sites
        self.hosts = hosts
        self.blocks = blocks
        self.pending = pending
        self.canonicalizer = canonicalizer
        self.recrawls = recrawls
        self.refuse = refuse
        self.result = AddResult()
        self.reasons: dict[str, int] = {}
        self.recrawls_changed = False

    def add(self, rec: Record) -> None:
        """Take one record through the steps of the module doc."""
        if rec.get("url") is None:
            self._site_record(rec)
            return
        if not (self._identify(rec) and self._admit(rec)):
            return
        info = self.sites.get(rec["site"])
        if rec["reason"] == "recrawl":
            name = self._recrawl_queue(rec)
        else:
            name = self._new_queue(rec, info)
        if name is not None:
            self._queue(name, rec, info)

    def _refuse(self, rec: Record, reason: str, detail: str) -> None:
        self.result.refused += 1
        self.refuse(rec, reason, detail)

    def _site_record(self, rec: Record) -> None:
        """Step 1: a dedup site record sets its site's yield; anything else is refused."""
        if "yield" in rec and isinstance(rec.get("site"), str):
            try:
                self.sites.note_yield(rec["site"], int(rec.get("pages") or 0), float(rec["yield"]))
            except (TypeError, ValueError):
                self._refuse(rec, "bad-record", "unusable yield")
                return
            self.result.site_records += 1
            return
        self._refuse(rec, "bad-record", "no url")

    def _identify(self, rec: Record) -> bool:
        """Step 2: make sure ``url``, ``host``, ``site`` and ``fp`` are canonical strings
        (a record that has all of them as strings is trusted, as stages write them)."""
        url, fp, site, host = rec["url"], rec.get("fp"), rec.get("site"), rec.get("host")
        strings = type(url) is str and type(site) is str and type(host) is str
        if strings and type(fp) is str and len(fp) == 16:
            return True
        if not isinstance(url, str):
            self._refuse(rec, "invalid-url", "url is not a string")
            return False
        try:
            rec["url"], rec["host"], rec["site"], rec["fp"] = self.canonicalizer().parse(url)
        except InvalidURL as exc:
            self._refuse(rec, "invalid-url", str(exc))
            return False
        return True

    def _admit(self, rec: Record) -> bool:
        """Step 3: trap limits and operator blocks; defaults ``depth`` and ``reason``."""
        depth = rec.get("depth")
        if type(depth) is not int:
            depth = rec["depth"] = 0
        # (a page requisite has no link depth limit: traps.depth_refusal)
        trap = self.check(rec["url"], None if rec.get("reason") == "requisite" else depth)
        if trap is not None:
            self._refuse(rec, trap[0], trap[1])
            return False
        if self.blocks and is_blocked(self.blocks, rec["site"], rec["host"]):
            self._refuse(rec, "blocked", "operator block")
            return False
        if type(rec.get("reason")) is not str:
            rec["reason"] = "link"
        return True

    def _recrawl_queue(self, rec: Record) -> str | None:
        """Step 4 for a recrawl: None if its URL's recrawl is queued already; otherwise
        its level from the page's importance, raised when it is overdue."""
        fpi = int(rec["fp"], 16)
        queued = self.recrawls()
        if fpi in queued:
            self.result.duplicates += 1
            return None
        queued.add(fpi)
        self.recrawls_changed = True
        importance = importance_of(rec)
        base = importance if importance is not None and 0 <= importance < LEVELS else 2
        due = parse_time(rec.get("due"))
        interval = rec.get("interval")
        overdue = self.now - due if due is not None else 0.0
        if not isinstance(interval, int | float):
            interval = None
        level = recrawl_level(base, overdue, interval)
        rec["level"] = level
        return RECRAWL_QUEUES[level]

    def _new_queue(self, rec: Record, info: SiteInfo) -> str:
        """Step 4 for a new URL: the site graph learns from it, then its level and queue
        (discovery for the first URL of a site with nothing fetched, queued or parked)."""
        site = rec["site"]
        reason = rec["reason"]
        if reason == "seed":
            self.sites.note_seed(site)
        else:
            source = rec.get("from") or rec.get("via")
            if source and rec.get("nofollow") is not True:  # not an endorsement
                from_site = site_of_url(source)
                if from_site and from_site != site and not has_linker(info.linkers, from_site):
                    self.sites.note_link(site, from_site)
        lastmod = rec.get("lastmod")
        age = self.now - t if lastmod and (t := parse_time(lastmod)) is not None else None
        linking = len(info.linkers) if info.linkers else 0
        level = new_url_level(reason, rec["depth"], linking, age)
        rec["level"] = level
        if level > 0 and not info.fetched and not info.queued and not info.parked:
            return DISCOVERY
        return NEW_QUEUES[level]

    def _queue(self, name: str, rec: Record, info: SiteInfo) -> None:
        """Step 5: append to the queue's pending buffer and count it."""
        self.pending.append(name, orjson.dumps(rec, option=_DUMPS_OPT))
        info.queued += 1
        host = rec["host"]
        self.hosts[host] = self.hosts.get(host, 0) + 1
        reason = rec["reason"]
        self.reasons[reason] = self.reasons.get(reason, 0) + 1
        self.result.queued += 1
