"""``--max-pages`` held by the N workers of ``crawl --workers N`` together.

One process holds the limit exactly (:class:`crawlkit.crawl.core.Limits`): it hands
the fetcher no more URLs than the limit less the requests made (all runs) and the URLs
it holds unanswered. N processes hold it through this file, ``STATE/workers/budget``:
slot K (8 bytes at offset 8K, a little-endian int64) is worker K's *claim*, at least
its requests made over all runs plus the URLs its fetcher holds, plus what it was
granted and has not handed out yet. Every read-and-write is under an exclusive
``fcntl.flock`` of the file (released by the kernel however the process ends).

Contract:

* :meth:`PageBudget.grant` (worker K, ``used`` requests made, ``held`` URLs held): the
  URLs it may hand out now, at most the limit less every other claim less its own
  ``used + held``, and at most a 1/N share of that (so one worker never takes what
  the others are about to need); sets its claim to ``used + held + grant``. A claim
  only grows by a grant, and a URL handed out is covered by a claim until it is
  answered (then it is in ``used``, or was no request at all): so the sum of the
  requests of all workers, those in flight included, never passes the limit.
* :meth:`PageBudget.release` (a worker with nothing in flight: lingering, ended): its
  claim falls back to ``used``, giving its unused grant back to the others.
* :meth:`PageBudget.exhausted`: nothing could be granted to this worker with nothing
  held. A worker stops on it ("page limit"); if the others' claims then end below
  the limit (requests that failed without an answer, a grant not used), the parent
  starts it again once no worker is busy (:mod:`crawlkit.crawl.workers`).
* :func:`reset` (the parent, before the workers start): every claim = that worker's
  requests of all earlier runs (its ``totals.json``), so a claim a killed run left
  behind does not shrink the budget of the next.
"""

from __future__ import annotations

import contextlib
import fcntl
import math
import os
import struct
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["BUDGET_FILE", "PageBudget", "reset"]

BUDGET_FILE = "budget"
_SLOT = struct.Struct("<q")


@contextlib.contextmanager
def _locked(path: Path, how: int) -> Iterator[int]:
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, how)
        yield fd
    finally:
        os.close(fd)  # closing drops the lock


def _claims(fd: int, n: int) -> list[int]:
    data = os.pread(fd, _SLOT.size * n, 0).ljust(_SLOT.size * n, b"\0")
    return [_SLOT.unpack_from(data, _SLOT.size * k)[0] for k in range(n)]


def reset(path: Path, used: Sequence[int]) -> None:
    """Set every worker's claim to its requests of earlier runs (``used[K]``)."""
    with _locked(path, fcntl.LOCK_EX) as fd:
        os.ftruncate(fd, 0)
        os.pwrite(fd, b"".join(_SLOT.pack(u) for u in used), 0)
        os.fsync(fd)


@dataclass
class PageBudget:
    """Worker ``slot``'s side of the shared budget of ``max_pages`` over ``workers``
    workers (see the module doc). Pickled into the worker; :meth:`attach` gives it
    the live count of its requests made (all runs)."""

    path: Path
    slot: int
    workers: int
    max_pages: int
    _used: Callable[[], int] | None = field(default=None, repr=False, compare=False)

    def __getstate__(self) -> dict[str, object]:
        return {**self.__dict__, "_used": None}  # a callable of the process it is in

    def to_json(self) -> dict[str, object]:
        """What a worker's settings say of it (not the live count of the process)."""
        return {"max_pages": self.max_pages, "workers": self.workers, "file": str(self.path)}

    def attach(self, used: Callable[[], int]) -> None:
        """``used()``: this worker's requests made, all runs (``Limits.pages_total``)."""
        self._used = used

    def _room(self, claims: list[int], mine: int) -> int:
        others = sum(c for k, c in enumerate(claims) if k != self.slot)
        return self.max_pages - others - mine

    def grant(self, used: int, held: int) -> int:
        """The URLs this worker may hand to its fetcher beyond the ``held`` ones."""
        with _locked(self.path, fcntl.LOCK_EX) as fd:
            room = self._room(_claims(fd, self.workers), used + held)
            given = max(0, math.ceil(room / self.workers)) if room > 0 else 0
            os.pwrite(fd, _SLOT.pack(used + held + given), _SLOT.size * self.slot)
        return given

    def release(self) -> None:
        """Nothing in flight: the claim falls back to the requests made."""
        if self._used is None:
            return
        used = self._used()
        with _locked(self.path, fcntl.LOCK_EX) as fd:
            os.pwrite(fd, _SLOT.pack(used), _SLOT.size * self.slot)

    def exhausted(self, used: int) -> bool:
        """True if nothing could be granted to this worker with nothing held."""
        with _locked(self.path, fcntl.LOCK_SH) as fd:
            return self._room(_claims(fd, self.workers), used) <= 0

    def total_claimed(self) -> int:
        with _locked(self.path, fcntl.LOCK_SH) as fd:
            return sum(_claims(fd, self.workers))
