"""Sites to slots to shards (DESIGN.md "Distribution").

A site (registered domain) hashes to one of ``slots`` slots (xxh3_64 mod slots); a
slot map says which shard owns each slot and at which epoch. Adding a node moves
slots, never individual URLs, and every URL of a site lands on one shard, which keeps
politeness local to one process.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

import xxhash

from crawlkit.diag import NullReporter, Reporter
from crawlkit.errors import InputError, InvalidURL, UsageError
from crawlkit.io import Record, atomic_write_json, read_json
from crawlkit.url import Canonicalizer, site_of_host

DEFAULT_SLOTS = 4096

__all__ = [
    "DEFAULT_SLOTS",
    "SlotMap",
    "route_lines",
    "route_records",
    "site_of_record",
    "slot_of",
]


def slot_of(site: str, slots: int = DEFAULT_SLOTS) -> int:
    """The slot of a site: xxh3_64 of its UTF-8 bytes, modulo ``slots``."""
    return xxhash.xxh3_64_intdigest(site.encode("utf-8")) % slots


@dataclass
class SlotMap:
    """Which shard owns each slot, and since which epoch.

    On disk it is JSON: ``{"version": 1, "slots": S, "shards": N, "owner": [...],
    "epoch": [...]}`` with one entry per slot. Without a file, :meth:`even` splits the
    slots into ``N`` contiguous ranges, all at epoch 0.
    """

    shards: int
    owner: list[int]
    epoch: list[int] = field(default_factory=list)

    def __post_init__(self) -> None:
        if self.shards < 1:
            raise UsageError("the number of shards must be at least 1")
        if not self.owner:
            raise UsageError("a slot map needs at least one slot")
        if not self.epoch:
            self.epoch = [0] * len(self.owner)
        if len(self.epoch) != len(self.owner):
            raise UsageError("slot map: 'owner' and 'epoch' differ in length")
        bad = [o for o in self.owner if not 0 <= o < self.shards]
        if bad:
            raise UsageError(f"slot map names shard {bad[0]}, outside 0..{self.shards - 1}")

    @property
    def slots(self) -> int:
        return len(self.owner)

    @classmethod
    def even(cls, shards: int, slots: int = DEFAULT_SLOTS) -> SlotMap:
        if shards < 1:
            raise UsageError("--shards must be at least 1")
        if slots < shards:
            raise UsageError(f"--slots ({slots}) must be at least --shards ({shards})")
        return cls(shards, [slot * shards // slots for slot in range(slots)])

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> SlotMap:
        try:
            data = read_json(path)
            return cls(int(data["shards"]), list(data["owner"]), list(data.get("epoch") or []))
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise InputError(f"not a slot map ({exc})", source=str(path)) from exc

    def save(self, path: str | os.PathLike[str]) -> None:
        atomic_write_json(
            path,
            {
                "version": 1,
                "slots": self.slots,
                "shards": self.shards,
                "owner": self.owner,
                "epoch": self.epoch,
            },
        )

    def shard_of_site(self, site: str) -> int:
        return self.owner[slot_of(site, self.slots)]

    def slots_of(self, shard: int) -> list[int]:
        return [slot for slot, owner in enumerate(self.owner) if owner == shard]


def site_of_record(record: Record, canon: Canonicalizer) -> str:
    """The record's ``site``, or the registered domain of its ``url``."""
    site = record.get("site")
    if isinstance(site, str) and site:
        return site
    url = record.get("url")
    if not isinstance(url, str):
        raise InvalidURL("record has neither 'site' nor 'url'")
    return canon.parse(url).site


def route_records(
    records: Iterable[Record],
    slot_map: SlotMap,
    *,
    canon: Canonicalizer | None = None,
    reporter: Reporter | None = None,
) -> Iterator[tuple[int, Record]]:
    """Yield ``(shard, record)`` for every record that has a usable site.

    A record without one is reported (as ``record N``) and skipped (it has no owner
    to go to); :func:`route_lines` reports ``FILE:LINE`` instead.
    """
    numbered = (("record", n, record) for n, record in enumerate(records, 1))
    return route_lines(numbered, slot_map, canon=canon, reporter=reporter)


def route_lines(
    lines: Iterable[tuple[str, int, Record]],
    slot_map: SlotMap,
    *,
    canon: Canonicalizer | None = None,
    reporter: Reporter | None = None,
) -> Iterator[tuple[int, Record]]:
    """Like :func:`route_records`, for ``(source, line_number, record)`` as
    :func:`crawlkit.io.read_records_with_lines` yields them; a record without a usable
    site is reported as ``FILE:LINE: reason``."""
    canon = canon or Canonicalizer()
    reporter = reporter or NullReporter()
    for source, lineno, record in lines:
        try:
            site = site_of_record(record, canon)
        except InvalidURL as exc:
            reporter.bad_record(source, lineno, str(exc))
            continue
        yield slot_map.shard_of_site(site), record


def which(url: str, slot_map: SlotMap, canon: Canonicalizer | None = None) -> Record:
    """Where a URL lives: its site, slot and shard (for operators)."""
    canon = canon or Canonicalizer()
    parsed = canon.parse(url)
    slot = slot_of(parsed.site, slot_map.slots)
    return {
        "url": parsed.url,
        "site": parsed.site,
        "slot": slot,
        "shard": slot_map.owner[slot],
        "epoch": slot_map.epoch[slot],
    }


__all__ += ["site_of_host", "which"]
