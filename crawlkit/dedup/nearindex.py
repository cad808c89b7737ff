"""The simhash index: find every stored 64-bit simhash within k = 3 bits.

Two block layouts, both exact by the pigeonhole rule (Manku, Jain and Das Sarma, WWW
2007: simhashes at most 3 bits apart differ in at most 3 blocks, so they agree exactly
on the others):

* ``BLOCK_BITS``/``TABLES``/:func:`table_keys`: 6 blocks (11, 11, 11, 11, 10, 10 bits),
  one key per choice of 3 blocks (C(6,3) = 20 keys of 32 bits). Used by
  :mod:`crawlkit.stages.dedup` only to find the pages of one chunk that may match each
  other (transient, chunk-sized).
* ``INDEX_BLOCK_BITS``/``INDEX_TABLES``: 5 blocks (13, 13, 13, 13, 12 bits), one table
  per choice of 2 blocks (C(5,2) = 10 tables keyed by 25 or 26 bits). This is the
  stored index.

Layout of the stored index, chosen for memory (it grows with every distinct page
for the life of a crawl): a table is only a ``uint32`` array of page ids sorted by
their key (ids ascending within a key); the keys are not stored but computed from the
caller's simhash-by-id array when needed. Each table has a directory of
``2**prefix + 1`` offsets over the key's top ``prefix`` bits, with ``prefix`` chosen
so a bucket holds about 8 entries (so the directories cost about 5 bytes a page for
all 10 tables). A lookup reads one directory entry per table and checks every
entry of the bucket by exact distance: about 80 candidates a query, all in
contiguous runs, never a scan and never a binary search. That is 40 bytes a page
for the tables plus ~5 for the directories, against 160 for 20 tables of
(key, id) pairs; the simhashes themselves are the caller's (8 bytes a page).

Tables are kept as two sorted runs: a large ``main`` run and a small ``recent`` run
that absorbs additions and is merged into ``main`` when it grows past an eighth of it,
so adding a batch costs time in proportion to the batch, amortised; a merge works one
table at a time, so its transient memory is about one table's. Everything is in
memory (``main`` may be a read-only map of a snapshot); :mod:`crawlkit.stages.dedup`
keeps the durable log the index is rebuilt from.
"""

from __future__ import annotations

from itertools import combinations

import numpy as np

__all__ = [
    "BLOCK_BITS",
    "INDEX_BLOCK_BITS",
    "INDEX_TABLES",
    "TABLES",
    "NearIndex",
    "index_keys",
    "table_keys",
]

BLOCK_BITS = (11, 11, 11, 11, 10, 10)
TABLES: tuple[tuple[int, ...], ...] = tuple(combinations(range(6), 3))
_SHIFTS = tuple(64 - sum(BLOCK_BITS[: i + 1]) for i in range(6))

INDEX_BLOCK_BITS = (13, 13, 13, 13, 12)
INDEX_TABLES: tuple[tuple[int, ...], ...] = tuple(combinations(range(5), 2))
_INDEX_SHIFTS = tuple(64 - sum(INDEX_BLOCK_BITS[: i + 1]) for i in range(5))
#: Keys are left-aligned to this many bits (a 25-bit key gets a 0 bit below), so every
#: table's directory takes the same top bits.
KEY_BITS = 26
_BUCKET = 8  # entries a directory bucket holds on average
_CHUNK = 1 << 20  # simhashes keyed at once (bounds the temporaries of a merge)


def _block_values(simhashes: np.ndarray) -> list[np.ndarray]:
    """The 6 blocks of every simhash, from the most significant end, as uint64."""
    sh = np.asarray(simhashes, dtype=np.uint64)
    return [
        (sh >> np.uint64(shift)) & np.uint64((1 << bits) - 1)
        for shift, bits in zip(_SHIFTS, BLOCK_BITS, strict=True)
    ]


def table_keys(simhashes: np.ndarray) -> np.ndarray:
    """A (20, n) uint32 array: the key of each simhash for each choice of 3 of 6 blocks."""
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


def index_keys(table: int, simhashes: np.ndarray) -> np.ndarray:
    """The stored index's key (``KEY_BITS`` bits, uint32) of each simhash in ``table``."""
    a, b = INDEX_TABLES[table]
    sh = np.asarray(simhashes, dtype=np.uint64)
    out = np.empty(len(sh), np.uint32)
    wa, wb = INDEX_BLOCK_BITS[a], INDEX_BLOCK_BITS[b]
    mask_a, mask_b = np.uint64((1 << wa) - 1), np.uint64((1 << wb) - 1)
    sa, sb = np.uint64(_INDEX_SHIFTS[a]), np.uint64(_INDEX_SHIFTS[b])
    pad = np.uint64(KEY_BITS - wa - wb)
    for start in range(0, len(sh), _CHUNK):
        part = sh[start : start + _CHUNK]
        key = (((part >> sa) & mask_a) << np.uint64(wb)) | ((part >> sb) & mask_b)
        out[start : start + _CHUNK] = key << pad
    return out


def _prefix_bits(n: int) -> int:
    """Directory bits for a run of ``n`` entries (about ``_BUCKET`` entries a bucket)."""
    return min(KEY_BITS, (n // _BUCKET).bit_length())


def _directory(keys: np.ndarray, bits: int) -> np.ndarray:
    """Offsets (``2**bits + 1``, uint32) of each top-``bits`` prefix in sorted ``keys``."""
    counts = np.bincount(keys >> np.uint32(KEY_BITS - bits), minlength=1 << bits)
    out = np.zeros((1 << bits) + 1, np.uint32)
    np.cumsum(counts, out=out[1:])
    return out


class _Run:
    """One id array per table (sorted by key, then id) with its directory."""

    __slots__ = ("bits", "dirs", "ids")

    def __init__(self, ids: np.ndarray, dirs: list[np.ndarray], bits: int):
        self.ids = ids  # (tables, n) uint32
        self.dirs = dirs  # per table, 2**bits + 1 uint32 offsets
        self.bits = bits

    @classmethod
    def empty(cls) -> _Run:
        n_tables = len(INDEX_TABLES)
        return cls(np.zeros((n_tables, 0), np.uint32), [np.zeros(2, np.uint32)] * n_tables, 0)

    @classmethod
    def build(cls, ids: np.ndarray, simhashes: np.ndarray) -> _Run:
        """A run of pages ``ids`` (ascending); ``simhashes`` is indexed by id."""
        ids32 = np.asarray(ids, dtype=np.uint32)
        sims = np.asarray(simhashes, dtype=np.uint64)[ids32]
        n = len(ids32)
        bits = _prefix_bits(n)
        out = np.empty((len(INDEX_TABLES), n), np.uint32)
        dirs = []
        for t in range(len(INDEX_TABLES)):
            # Sort (key << 32 | id) as one uint64: equal keys keep their ids ascending.
            packed = (index_keys(t, sims).astype(np.uint64) << np.uint64(32)) | ids32
            packed.sort()
            out[t] = packed.astype(np.uint32)  # the low 32 bits: the id
            dirs.append(_directory((packed >> np.uint64(32)).astype(np.uint32), bits))
        return cls(out, dirs, bits)

    @classmethod
    def from_ids(cls, ids: np.ndarray, simhashes: np.ndarray) -> _Run:
        """A run over tables already sorted (a snapshot), its directories rebuilt."""
        bits = _prefix_bits(int(ids.shape[1]))
        dirs = [_directory(index_keys(t, simhashes[ids[t]]), bits) for t in range(len(ids))]
        return cls(ids, dirs, bits)

    def __len__(self) -> int:
        return int(self.ids.shape[1])

    def merged(self, other: _Run, simhashes: np.ndarray) -> _Run:
        """One run holding both (``other``'s ids all larger than this run's).

        A linear merge per table: ``searchsorted`` places the other run's entries
        after equal keys (so ids stay ascending within a key), the rest fill the gaps.
        One table is merged at a time, so the temporaries are one table's keys.
        """
        na, nb = len(self), len(other)
        n = na + nb
        bits = _prefix_bits(n)
        ids = np.empty((len(INDEX_TABLES), n), np.uint32)
        dirs = []
        offsets = np.arange(nb)
        for t in range(len(INDEX_TABLES)):
            mine_keys = index_keys(t, simhashes[self.ids[t]])
            other_keys = index_keys(t, simhashes[other.ids[t]])
            pos = np.searchsorted(mine_keys, other_keys, side="right") + offsets
            mine = np.ones(n, dtype=np.bool_)
            mine[pos] = False
            keys = np.empty(n, np.uint32)
            keys[pos] = other_keys
            keys[mine] = mine_keys
            ids[t, pos] = other.ids[t]
            ids[t, mine] = self.ids[t]
            del mine_keys, mine
            dirs.append(_directory(keys, bits))
        return _Run(ids, dirs, bits)

    def candidates(self, qkeys: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
        """``(query index, id)`` for every stored entry in a query's bucket of a table."""
        if len(self) == 0 or len(qkeys[0]) == 0:
            return np.zeros(0, np.int64), np.zeros(0, np.uint32)
        shift = np.uint32(KEY_BITS - self.bits)
        qis: list[np.ndarray] = []
        cids: list[np.ndarray] = []
        for t, kq in enumerate(qkeys):
            bucket = (kq >> shift).astype(np.int64)
            directory = self.dirs[t]
            lo = directory[bucket].astype(np.int64)
            count = directory[bucket + 1].astype(np.int64) - lo
            total = int(count.sum())
            if total == 0:
                continue
            qi = np.repeat(np.arange(len(kq)), count)
            pos = np.repeat(lo - (np.cumsum(count) - count), count) + np.arange(total)
            qis.append(qi)
            cids.append(self.ids[t][pos])
        if not qis:
            return np.zeros(0, np.int64), np.zeros(0, np.uint32)
        return np.concatenate(qis).astype(np.int64), np.concatenate(cids)

    def nbytes(self) -> int:
        return int(self.ids.nbytes) + sum(int(d.nbytes) for d in self.dirs)


class NearIndex:
    """Page ids findable by simhash within ``k`` bits (see the module docstring).

    The caller owns the simhash of every page id: ``simhashes``, indexed by id, is
    passed to every call that needs it (the index keeps only ids) and must hold the
    ids added so far. Ids are added in ascending order.
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
        if len(self._recent):
            batch = self._recent.merged(batch, simhashes)
        self._recent = batch
        if len(self._recent) * 8 > len(self._main):
            self._fold(simhashes)

    def _fold(self, simhashes: np.ndarray) -> None:
        """Merge the recent run into the main one."""
        if len(self._main) == 0:
            self._main = self._recent
        else:
            self._main = self._main.merged(self._recent, simhashes)
        self._recent = _Run.empty()

    def candidates(self, queries: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(query index, id)`` pairs sharing a table's bucket (may repeat)."""
        q = np.asarray(queries, dtype=np.uint64)
        qkeys = [index_keys(t, q) for t in range(len(INDEX_TABLES))]
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

    def compacted(self, simhashes: np.ndarray) -> np.ndarray:
        """All tables as one run: the (10, n) uint32 ids, each row sorted by key (for a
        snapshot; :meth:`from_tables` reopens it)."""
        if len(self._recent):
            self._fold(simhashes)
        return self._main.ids

    @classmethod
    def from_tables(cls, ids: np.ndarray, simhashes: np.ndarray) -> NearIndex:
        """An index over tables from :meth:`compacted` (``ids`` may be a read-only map)."""
        if ids.ndim != 2 or ids.shape[0] != len(INDEX_TABLES):
            raise ValueError(f"tables of shape {ids.shape}")
        index = cls()
        if ids.shape[1]:
            index._main = _Run.from_ids(ids, simhashes)
        return index

    def memory_bytes(self) -> int:
        """Bytes held by the tables and their directories."""
        return self._main.nbytes() + self._recent.nbytes()
