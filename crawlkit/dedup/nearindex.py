"""The 20-table simhash index: find every stored 64-bit simhash within k = 3 bits.

The 64 bits are cut into 6 blocks of 11, 11, 11, 11, 10 and 10 bits. Two simhashes
at most 3 bits apart differ in at most 3 blocks, so they agree exactly on at least 3;
with one table per choice of 3 blocks (C(6,3) = 20 tables) keyed by those blocks, any
such pair shares a key in at least one table (Manku, Jain and Das Sarma, WWW 2007).
A lookup is therefore 20 binary searches plus a check of the few candidates that share
a key, never a scan.

Layout: a table is a sorted ``uint32`` key array with a parallel ``uint32`` id array
(8 bytes per page per table, 160 bytes per page for all 20). A key of three 11-bit
blocks has 33 bits; its lowest bit is dropped, which only lets a few more candidates
through the exact distance check. Ids are the caller's page ids, ascending within a
key, so the earliest page comes first.

Tables are kept as two sorted runs: a large ``main`` run and a small ``recent`` run
that absorbs additions and is merged into ``main`` when it grows past an eighth of it,
so adding a batch costs time in proportion to the batch, amortised. Everything is in
memory; :mod:`crawlkit.stages.dedup` keeps the durable log the index is rebuilt from.
"""

from __future__ import annotations

from itertools import combinations

import numpy as np

__all__ = ["BLOCK_BITS", "TABLES", "NearIndex", "table_keys"]

BLOCK_BITS = (11, 11, 11, 11, 10, 10)
TABLES: tuple[tuple[int, int, int], ...] = tuple(combinations(range(6), 3))
_SORT_QUERIES_ABOVE = 200_000  # entries; a smaller table stays in cache anyway
_SHIFTS = tuple(64 - sum(BLOCK_BITS[: i + 1]) for i in range(6))


def _block_values(simhashes: np.ndarray) -> list[np.ndarray]:
    """The 6 blocks of every simhash, from the most significant end, as uint64."""
    sh = np.asarray(simhashes, dtype=np.uint64)
    return [
        (sh >> np.uint64(shift)) & np.uint64((1 << bits) - 1)
        for shift, bits in zip(_SHIFTS, BLOCK_BITS, strict=True)
    ]


def table_keys(simhashes: np.ndarray) -> np.ndarray:
    """A (20, n) uint32 array: the key of each simhash in each table."""
    blocks = _block_values(simhashes)
    out = np.empty((len(TABLES), len(blocks[0])), dtype=np.uint32)
    for t, (a, b, c) in enumerate(TABLES):
        wb, wc = BLOCK_BITS[b], BLOCK_BITS[c]
        key = (blocks[a] << np.uint64(wb + wc)) | (blocks[b] << np.uint64(wc)) | blocks[c]
        width = BLOCK_BITS[a] + wb + wc
        if width > 32:
            key >>= np.uint64(width - 32)
        out[t] = key.astype(np.uint32)
    return out


class _Run:
    """20 sorted (key, id) tables."""

    __slots__ = ("ids", "keys")

    def __init__(self, keys: np.ndarray, ids: np.ndarray):
        self.keys = keys  # (20, n) uint32, each row sorted
        self.ids = ids  # (20, n) uint32

    @classmethod
    def empty(cls) -> _Run:
        return cls(np.zeros((20, 0), np.uint32), np.zeros((20, 0), np.uint32))

    @classmethod
    def build(cls, ids: np.ndarray, simhashes: np.ndarray) -> _Run:
        """Tables for pages ``ids`` (ascending) with these simhashes."""
        keys = table_keys(simhashes)
        ids64 = np.asarray(ids, dtype=np.uint64)
        # Sort (key << 32 | id) as one uint64: a plain sort, no gather, and equal keys
        # come out with their ids ascending.
        packed = (keys.astype(np.uint64) << np.uint64(32)) | ids64[None, :]
        packed.sort(axis=1)
        return cls(
            (packed >> np.uint64(32)).astype(np.uint32),
            (packed & np.uint64(0xFFFFFFFF)).astype(np.uint32),
        )

    def __len__(self) -> int:
        return int(self.keys.shape[1])

    def merged(self, other: _Run) -> _Run:
        """One run holding both (``other``'s ids all larger than this run's).

        A linear merge per table: ``searchsorted`` places the other run's entries
        after equal keys (so ids stay ascending within a key), the rest fill the gaps.
        """
        na, nb = len(self), len(other)
        keys = np.empty((20, na + nb), np.uint32)
        ids = np.empty((20, na + nb), np.uint32)
        offsets = np.arange(nb)
        for t in range(20):
            pos = np.searchsorted(self.keys[t], other.keys[t], side="right") + offsets
            mine = np.ones(na + nb, dtype=np.bool_)
            mine[pos] = False
            keys[t, pos] = other.keys[t]
            ids[t, pos] = other.ids[t]
            keys[t, mine] = self.keys[t]
            ids[t, mine] = self.ids[t]
        return _Run(keys, ids)

    def candidates(self, qkeys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(query index, id)`` for every stored entry sharing a key with a query."""
        n = len(self)
        if n == 0 or qkeys.shape[1] == 0:
            return np.zeros(0, np.int64), np.zeros(0, np.uint32)
        qis: list[np.ndarray] = []
        cids: list[np.ndarray] = []
        for t in range(qkeys.shape[0]):
            keys = self.keys[t]
            kq = qkeys[t]
            if n > _SORT_QUERIES_ABOVE:
                # Sorted queries let the binary searches share their cache misses.
                order = np.argsort(kq, kind="stable")
                ks = kq[order]
            else:
                order = np.arange(len(kq))
                ks = kq
            lo = np.searchsorted(keys, ks, side="left")
            hit = keys[np.minimum(lo, n - 1)] == ks
            if not hit.any():
                continue
            lo = lo[hit]
            hi = np.searchsorted(keys, ks[hit], side="right")
            qi = order[hit]
            count = hi - lo
            total = int(count.sum())
            rep_qi = np.repeat(qi, count)
            starts = np.repeat(lo - (np.cumsum(count) - count), count)
            pos = starts + np.arange(total)
            qis.append(rep_qi)
            cids.append(self.ids[t][pos])
        if not qis:
            return np.zeros(0, np.int64), np.zeros(0, np.uint32)
        return np.concatenate(qis).astype(np.int64), np.concatenate(cids)


class NearIndex:
    """Simhashes by page id, findable within ``k`` bits (see the module docstring).

    The caller owns the simhash of every page id (``simhashes``, indexed by id) and
    adds ids in ascending order.
    """

    def __init__(self) -> None:
        self._main = _Run.empty()
        self._recent = _Run.empty()

    def __len__(self) -> int:
        return len(self._main) + len(self._recent)

    def add(self, ids: np.ndarray, simhashes: np.ndarray) -> None:
        """Index pages ``ids`` (ascending, above every id added before)."""
        if len(ids) == 0:
            return
        batch = _Run.build(ids, simhashes)
        self._recent = batch if len(self._recent) == 0 else self._recent.merged(batch)
        if len(self._recent) * 8 > len(self._main):
            self._main = self._recent if len(self._main) == 0 else self._main.merged(self._recent)
            self._recent = _Run.empty()

    def candidates(self, queries: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(query index, id)`` pairs sharing at least one table key (may repeat)."""
        qkeys = table_keys(queries)
        q1, c1 = self._main.candidates(qkeys)
        q2, c2 = self._recent.candidates(qkeys)
        if len(q2) == 0:
            return q1, c1
        return np.concatenate((q1, q2)), np.concatenate((c1, c2))

    def within(
        self, queries: np.ndarray, simhashes: np.ndarray, k: int = 3
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Every ``(query index, id, distance)`` with distance <= ``k``, each pair once.

        ``simhashes`` maps an id to its simhash. Sorted by query, distance, id.
        """
        q = np.asarray(queries, dtype=np.uint64)
        qi, cid = self.candidates(q)
        if len(qi) == 0:
            empty = np.zeros(0, np.int64)
            return empty, empty, empty
        dist = np.bitwise_count(q[qi] ^ simhashes[cid]).astype(np.int64)
        close = dist <= k
        qi, cid, dist = qi[close], cid[close].astype(np.int64), dist[close]
        order = np.lexsort((cid, dist, qi))
        qi, cid, dist = qi[order], cid[order], dist[order]
        if len(qi) > 1:
            keep = np.ones(len(qi), dtype=bool)
            keep[1:] = (qi[1:] != qi[:-1]) | (cid[1:] != cid[:-1])
            qi, cid, dist = qi[keep], cid[keep], dist[keep]
        return qi, cid, dist

    def compacted(self) -> tuple[np.ndarray, np.ndarray]:
        """All tables as one run: ``(keys, ids)``, each (20, n) uint32 (for a snapshot)."""
        if len(self._recent):
            self._main = self._main.merged(self._recent) if len(self._main) else self._recent
            self._recent = _Run.empty()
        return self._main.keys, self._main.ids

    @classmethod
    def from_tables(cls, keys: np.ndarray, ids: np.ndarray) -> NearIndex:
        """An index over tables from :meth:`compacted` (arrays may be read-only maps)."""
        if keys.shape != ids.shape or keys.ndim != 2 or keys.shape[0] != len(TABLES):
            raise ValueError(f"tables of shape {keys.shape} and {ids.shape}")
        index = cls()
        index._main = _Run(keys, ids)
        return index

    def memory_bytes(self) -> int:
        """Bytes held by the tables."""
        return sum(a.nbytes for r in (self._main, self._recent) for a in (r.keys, r.ids))
