"""A per-IP politeness table in a file, shared by every crawlkit process that names it.

``--per-ip`` (at most ``per_ip`` requests at once to one IP address, two request starts
to it at least ``per_ip_delay`` apart; docs/design.md invariant 2) is kept by each
process's :class:`~crawlkit.fetch.scheduler.Scheduler` for its own requests. Processes
that crawl hosts of one address at the same time (``crawl --workers N``, or two
``fetch`` runs on different shards) hold the limit *together* through this table:
the scheduler asks it (:meth:`IpTable.acquire`) once its own limits allow a start.

Layout (``IpTable.BUCKETS`` buckets; an address is hashed to one with xxh3)::

    0         64-byte header: b"CKIPTBL1", format version, bucket count
    64 + 8b   bucket b's time: the last start or end of a request to it, float64
              seconds of CLOCK_MONOTONIC (0: never)
    SLOTS + b*MAX_SLOTS + j
              bucket b's slot j: one byte, never written, only locked (past the end
              of the file; POSIX lets a process lock bytes beyond it)

Contract:

* **Slots.** A request holds one slot of its address's bucket from :meth:`acquire`
  until :meth:`release`: a non-blocking ``fcntl`` byte-range lock on the slot's byte.
  The kernel drops a process's locks when it exits, however it exits, so kill -9 of a
  holder never leaks a slot. Byte-range locks belong to a process, not to a file
  descriptor (a process re-locking a byte it holds succeeds), so the table remembers
  the bytes this process holds and never hands one out twice.
* **Gap.** The bucket's time is read, compared and written under a short non-blocking
  lock on its first byte, in an ``mmap`` of the file. A start is allowed when ``now -
  time >= gap`` (``gap`` is the caller's ``per_ip_delay``), and sets the time to now;
  :meth:`release` after a request sets it to the request's end. So a request starts
  at least ``gap`` after every earlier start *and* every earlier end to its address
  (by any process): stricter than the scheduler's start-to-start rule, and the form a
  server's log can prove (from the end it sent to the next start it saw), whereas a
  start is only known to the server some unknown time after the client stamped it
  (a first contact's fsync, a loaded machine). A time in the future (another boot,
  another time namespace) is ignored. With ``gap == 0`` starts are neither checked
  nor recorded.
* **Never blocks.** Every lock is tried once; a refusal returns how long to wait
  (:data:`SLOT_POLL` when every slot is held, since nothing tells this process when
  another frees one; the rest of the gap; :data:`LOCK_RETRY` when another process is
  in the middle of its few-microsecond update).
* **Collisions only make it stricter:** two addresses in one bucket share its slots
  and its gap.
* Processes that share a table should use the same ``--per-ip`` and
  ``--per-ip-delay``: each counts the slots below its own ``per_ip`` and waits its own
  gap after the last start by anyone.
* **One open table per file per process** (:meth:`IpTable.open`): closing *any*
  descriptor of a file drops all of the process's locks on it (POSIX), so a second
  open-and-close in the same process would silently free the first's slots.
* Cross-process fairness is not promised: a process that frees a slot may take it
  again before another process's next try (at most :data:`SLOT_POLL` later).

An existing file that is not such a table is refused (:class:`~crawlkit.errors.StateError`)
and left untouched; an empty or new file is initialised. The file holds no secret and no
state worth keeping: deleting it between runs is harmless.
"""

from __future__ import annotations

import errno
import fcntl
import ipaddress
import mmap
import os
import stat
import struct
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import ClassVar, Protocol

import xxhash

from crawlkit.errors import StateError

__all__ = ["LOCK_RETRY", "MAX_SLOTS", "SLOT_POLL", "IpClaim", "IpGate", "IpTable", "ip_key"]

MAGIC = b"CKIPTBL1"
VERSION = 1
HEADER = 64
_HEAD = struct.Struct("<8sII")
_TIME = struct.Struct("<d")
#: Slot bytes reserved per bucket: the largest ``per_ip`` a table can share.
MAX_SLOTS = 4096
#: Wait after "every slot is held by another process" (no wake-up crosses processes).
SLOT_POLL = 0.05
#: Wait after "another process is updating this bucket's gap right now".
LOCK_RETRY = 0.001
_BUSY = (errno.EACCES, errno.EAGAIN)


@dataclass(eq=False)
class IpClaim:
    """One slot held: the slot's lock byte, the bucket's time offset (0: the gap was
    not used), and the bucket's time before our start and our start."""

    slot: int
    stamp_at: int
    prev: float
    mine: float


class IpGate(Protocol):
    """What the scheduler asks before a start: a slot of ``address`` (under ``slots``
    held at once) and the ``gap`` since the last start to it."""

    def acquire(self, address: str, slots: int, gap: float) -> IpClaim | float:
        """A held claim, or the seconds to wait before asking again (> 0)."""
        ...

    def release(self, claim: IpClaim, started: bool) -> None:
        """Give the slot back: after a request (``started``), or before one that never
        started, which takes back its start as well."""
        ...


def ip_key(address: str) -> str:
    """The address ``--per-ip`` counts a connection to ``address`` under.

    An IPv4-mapped IPv6 address (``::ffff:127.0.0.1``, written ``::ffff:7f00:1`` by
    :mod:`ipaddress`), which a dual-stack resolver or a hosts file can give, reaches
    the IPv4 server itself, so it is that IPv4 address; any other address is itself.
    Otherwise one server reached under both forms got ``per_ip`` connections under
    each. Cheap for the common case (no ``ffff``: returned as it is)."""
    if ":" not in address or "ffff" not in address.lower():
        return address
    try:
        mapped = ipaddress.IPv6Address(address.split("%", 1)[0]).ipv4_mapped
    except ValueError:
        return address
    return address if mapped is None else str(mapped)


def _try_lock(fd: int, offset: int) -> bool:
    try:
        fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB, 1, offset)
    except OSError as exc:
        if exc.errno in _BUSY:
            return False
        raise
    return True


def _unlock(fd: int, offset: int) -> None:
    fcntl.lockf(fd, fcntl.LOCK_UN, 1, offset)


class IpTable:
    """The shared table in one file (see the module docstring for the contract)."""

    BUCKETS: ClassVar[int] = 1 << 16
    _open: ClassVar[dict[tuple[int, int], IpTable]] = {}

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        buckets: int | None = None,
        clock: Callable[[], float] = time.monotonic,
    ):
        """Open (creating or initialising if empty) the table at ``path``. Prefer
        :meth:`open`, which shares one instance per file in a process. ``buckets``
        (a power of two) applies only when the file is created."""
        self.path = os.fspath(path)
        self.clock = clock
        self._pid = os.getpid()
        self._held: set[int] = set()
        want = buckets or self.BUCKETS
        if want & (want - 1):
            raise ValueError("buckets must be a power of two")
        try:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        except OSError as exc:
            raise StateError(f"--ip-table {self.path}: {exc.strerror}") from exc
        try:
            self.buckets, size = self._check_or_init(fd, want)
            self._mm = mmap.mmap(fd, size)
        except BaseException:
            os.close(fd)
            raise
        self._fd = fd
        self._mask = self.buckets - 1
        self._slots = HEADER + 8 * self.buckets
        st = os.fstat(fd)
        self.key = (st.st_dev, st.st_ino)

    def _check_or_init(self, fd: int, want: int) -> tuple[int, int]:
        """The bucket count and file size, the header written first if the file is
        empty (under a lock on byte 0, so two processes starting at once agree)."""
        fcntl.lockf(fd, fcntl.LOCK_EX, 1, 0)  # at open only; held for microseconds
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                raise StateError(f"--ip-table {self.path}: not a regular file")
            if st.st_size == 0:
                size = HEADER + 8 * want
                os.ftruncate(fd, size)
                os.pwrite(fd, _HEAD.pack(MAGIC, VERSION, want), 0)
                return want, size
            magic, version, buckets = _HEAD.unpack(os.pread(fd, _HEAD.size, 0).ljust(16, b"\0"))
            if magic != MAGIC:
                raise StateError(
                    f"--ip-table {self.path}: not a crawlkit IP table (left untouched; "
                    "name a new or empty file)"
                )
            if version != VERSION or not buckets or buckets & (buckets - 1):
                raise StateError(f"--ip-table {self.path}: IP table of another version")
            size = HEADER + 8 * buckets
            if st.st_size != size:
                raise StateError(f"--ip-table {self.path}: truncated IP table")
            return buckets, size
        finally:
            fcntl.lockf(fd, fcntl.LOCK_UN, 1, 0)

    @classmethod
    def open(cls, path: str | os.PathLike[str]) -> IpTable:
        """This process's one instance for the file at ``path`` (opened on first use;
        a forked child opens its own). It stays open for the life of the process:
        see the module docstring on why closing is dangerous."""
        try:
            st = os.stat(path)
        except FileNotFoundError:
            st = None
        if st is not None:
            known = cls._open.get((st.st_dev, st.st_ino))
            if known is not None and known._pid == os.getpid():
                return known
        table = cls(path)
        cls._open[table.key] = table
        return table

    # ------------------------------------------------------------------ the gate
    def bucket(self, address: str) -> int:
        """The bucket of ``address`` (the text as the resolver gives it)."""
        return xxhash.xxh3_64_intdigest(address.encode()) & self._mask

    def acquire(self, address: str, slots: int, gap: float) -> IpClaim | float:
        """Take a slot of ``address`` (one of the first ``slots``) and, if ``gap`` > 0,
        its next start; or return the seconds to wait before asking again."""
        if not 1 <= slots <= MAX_SLOTS:
            raise ValueError(f"per-IP slots must be 1 to {MAX_SLOTS}")
        b = self.bucket(address)
        fd = self._fd
        base = self._slots + b * MAX_SLOTS
        for slot in range(base, base + slots):
            if slot not in self._held and _try_lock(fd, slot):
                break
        else:
            return SLOT_POLL
        if gap <= 0:
            self._held.add(slot)
            return IpClaim(slot, 0, 0.0, 0.0)
        at = HEADER + 8 * b
        if not _try_lock(fd, at):
            _unlock(fd, slot)
            return LOCK_RETRY
        try:
            (last,) = _TIME.unpack_from(self._mm, at)
            now = self.clock()
            if last <= now and now - last < gap:
                _unlock(fd, slot)
                return max(gap - (now - last), LOCK_RETRY)
            _TIME.pack_into(self._mm, at, now)
        finally:
            _unlock(fd, at)
        self._held.add(slot)
        return IpClaim(slot, at, last, now)

    def release(self, claim: IpClaim, started: bool) -> None:
        """Give ``claim``'s slot back. After a request (``started``) the bucket's last
        start moves up to now, its end; a start that never happened is taken back if
        nobody started since. Either update is skipped, never waited for, when another
        process holds the bucket's lock that instant (the next start then counts from
        this one's start: the in-process scheduler's own rule, or stricter)."""
        fd = self._fd
        if claim.slot in self._held:
            self._held.discard(claim.slot)
            _unlock(fd, claim.slot)
        at = claim.stamp_at
        if not at or not _try_lock(fd, at):
            return
        try:
            (last,) = _TIME.unpack_from(self._mm, at)
            if started:
                now = self.clock()
                if last < now:
                    _TIME.pack_into(self._mm, at, now)
            elif last == claim.mine:
                _TIME.pack_into(self._mm, at, claim.prev)
        finally:
            _unlock(fd, at)

    def last_start(self, address: str) -> float:
        """The bucket's time: its last start or end (for tests and diagnostics)."""
        (last,) = _TIME.unpack_from(self._mm, HEADER + 8 * self.bucket(address))
        return float(last)

    def close(self) -> None:
        """Unmap and close the file, which drops every lock this process holds on it."""
        if self._fd < 0:
            return
        self._held.clear()
        self._mm.close()
        os.close(self._fd)
        self._fd = -1
        if self._open.get(self.key) is self:
            del self._open[self.key]
