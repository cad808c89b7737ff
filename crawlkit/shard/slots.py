"""Sites to slots to shards (docs/design.md "Distribution").

A site (registered domain) hashes to one of ``slots`` slots (xxh3_64 mod slots); a
slot map says which shard owns each slot and at which epoch. Adding a node moves
slots, never individual URLs, and every URL of a site lands on one shard, which keeps
politeness local to one process.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

import xxhash

from crawlkit.errors import InputError, UsageError
from crawlkit.streams import atomic_write_json, read_json
from crawlkit.url import site_of_host

DEFAULT_SLOTS = 4096

__all__ = [
    "DEFAULT_SLOTS",
    "SlotMap",
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


__all__ += ["site_of_host"]
