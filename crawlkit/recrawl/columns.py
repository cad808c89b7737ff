"""The planning columns of every tracked URL as arrays, kept in memory between runs.

:class:`Table` is what the budget is solved from (:mod:`crawlkit.recrawl.plan`), one
row per URL, rows in the order of the history's ``fp`` column (signed 64-bit, as
SQLite sorts it). :class:`Columns` keeps one up to date for an opened
:class:`~crawlkit.recrawl.history.History`: it is read from the table once, then each
write of the history (``put``, ``set_schedule``, ``mark_emitted``) updates the rows
it wrote, so a run of ``crawlkit crawl``, which re-plans every cycle, pays for the
cycle's records, not for reading every tracked URL again (a 90-s crawl's recrawl
step grew from 12 to 172 ms a cycle reading them).

The arrays are those the history would read: the same rows, order and values, so a
plan is the same whether its table came from the cache or from disk. Host and site
indices are numbered in the order first seen rather than sorted; they only group
rows (every use is a ``bincount`` or a grouping sort), so the plan does not change.

Memory: 8 columns of 8 bytes (the fingerprint and the times and rates, which the
plan reads as they are), the site and host indices and the check count in 4, the
importance and two flags in 1: 79 bytes per tracked URL (79 MB for a million), plus
each site's name and 12 bytes a site and a host (below); inserting new URLs copies
one column at a time (8 bytes a URL more, briefly). The narrow columns hold the same
values: indices and counts stay far below 2**31, and the plan clips the importance
to its weights (0..3 by default) anyway, so it is kept clipped to a byte's range;
all in 8 bytes were 98 bytes a URL. A row names its site by index only: a column of
the names themselves kept each record's own copy of the string alive, ~76 bytes a
URL more (177 against 101 bytes a URL in all, 100,000 URLs put in batches with a
fresh string per record, tracemalloc).

Between runs (:meth:`Columns.save`, :meth:`Columns.load`): the arrays and the two
name indexes as one uncompressed ``.npz`` file, so the next run's first plan loads them
(~80 bytes a URL read as they are) instead of reading every row from SQLite: a
million URLs in 0.07 s instead of 5.0 (saving them takes 0.3 s); :class:`History
<crawlkit.recrawl.history.History>` decides when the file still holds what the table
does.

Per site and host (:class:`NameIndex`): a name's index is found by the name's 64-bit
hash in a sorted array (12 bytes a name), and only a site's name is kept (the plan
stores site priors by name; hosts only group rows). Dicts from name to index held
each name, its dict entry and an index object: 238 bytes a site with one host at
10,000 sites, 277 at 100,000, against 101 and 103 now (``bench/bench_host_memory.py``,
fresh strings as parsed from records). Two hosts whose names share a hash would share
a host cap, two sites a prior: among 10 million names the odds are one in 370,000.
"""

from __future__ import annotations

import math
import zipfile
from collections.abc import Iterable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Protocol

import numpy as np
import xxhash

from crawlkit import streams

__all__ = ["Columns", "NameIndex", "Table"]

# The columns a row is read from, in the order of :meth:`Columns.from_rows`' rows.
SELECT = (
    "SELECT fp, site, host, priority, rate, checks, last_fetch, due, emitted, interval, "
    "outcome, pending_change, spread, observed FROM history ORDER BY fp"
)
_FLOATS = ("rate", "last_fetch", "due", "emitted", "interval", "spread", "observed")
_ARRAYS = ("fp", "site_ix", "host", "importance", "checks", "good", "pending", *_FLOATS)
_INDEX = np.int32  # site and host indices, check counts
#: The layout of a saved file (Columns.save): a file of another is read past.
SNAPSHOT_FORMAT = 1
_IMPORTANCE = np.int8


def _importance(values: list[int]) -> np.ndarray:
    """Importance as a byte: clipped to its range (the plan clips it to the weights)."""
    return np.clip(np.array(values, np.int64), -128, 127).astype(_IMPORTANCE)


@dataclass
class Table:
    """The columns the budget is solved from, one array per column, one row per URL.

    A table from :meth:`Columns.table` shares its arrays with the cache: read it
    before the history's next write, and never modify its arrays in place."""

    fp: np.ndarray  # uint64
    site_ix: np.ndarray  # site index into ``sites`` (its name, "" when none)
    sites: list[str]
    host: np.ndarray  # host index (hosts only group rows: their names are not kept)
    importance: np.ndarray
    rate: np.ndarray  # NaN where no estimate yet
    checks: np.ndarray
    last_fetch: np.ndarray  # NaN where never fetched
    due: np.ndarray
    emitted: np.ndarray  # NaN where not emitted
    interval: np.ndarray
    good: np.ndarray  # the last fetch answered (fetched, not-modified, redirect)
    pending: np.ndarray
    spread: np.ndarray  # NaN where not known (the prior's spread)
    observed: np.ndarray  # the newest fetch or sitemap read; NaN where none


class _Entry(Protocol):
    fp: int
    host: str | None
    site: str | None
    importance: int
    rate: float | None
    checks: int
    last_fetch: float | None
    due: float
    emitted: float | None
    interval: float
    outcome: str | None
    pending_change: bool
    spread: float | None
    observed: float | None


def _float(value: Any) -> float:
    return math.nan if value is None else float(value)


class NameIndex:
    """A dense index (0, 1, 2, ... in the order first seen) for each distinct name,
    found by the name's 64-bit hash in a sorted array; with ``keep_names`` the first
    string seen of each name is kept, at its index (module doc)."""

    def __init__(self, *, keep_names: bool):
        self._keys = np.zeros(0, np.uint64)  # the names' hashes, sorted
        self._ids = np.zeros(0, _INDEX)  # the index of each key
        self.names: list[str] | None = [] if keep_names else None

    def __len__(self) -> int:
        return len(self._keys)

    def arrays(self, prefix: str) -> dict[str, np.ndarray]:
        """Its state as arrays (names, when kept, as one newline-joined UTF-8 array)."""
        out: dict[str, np.ndarray] = {f"{prefix}_keys": self._keys, f"{prefix}_ids": self._ids}
        if self.names is not None:
            joined = "\n".join(self.names).encode("utf-8", "surrogatepass")
            out[f"{prefix}_names"] = np.frombuffer(joined, np.uint8)
        return out

    @classmethod
    def from_arrays(
        cls, arrays: dict[str, np.ndarray], prefix: str, *, keep_names: bool
    ) -> NameIndex:
        index = cls(keep_names=keep_names)
        index._keys = arrays[f"{prefix}_keys"].astype(np.uint64, copy=False)
        index._ids = arrays[f"{prefix}_ids"].astype(_INDEX, copy=False)
        if keep_names:
            joined = arrays[f"{prefix}_names"].tobytes().decode("utf-8", "surrogatepass")
            index.names = joined.split("\n") if len(index._keys) else []
            if len(index.names) != len(index._keys):
                raise ValueError("names and keys differ in number")
        return index

    def indices(self, names: list[str]) -> np.ndarray:
        """The index of each of ``names``, numbering the new ones as they come."""
        hashes = np.fromiter(
            (xxhash.xxh3_64_intdigest(n.encode("utf-8", "surrogatepass")) for n in names),
            np.uint64,
            len(names),
        )
        pos = np.searchsorted(self._keys, hashes)
        found = pos < len(self._keys)
        found[found] = self._keys[pos[found]] == hashes[found]
        out = np.empty(len(names), _INDEX)
        out[found] = self._ids[pos[found]]
        if found.all():
            return out
        new = np.flatnonzero(~found)
        fresh, first, which = np.unique(hashes[new], return_index=True, return_inverse=True)
        # Numbered in the order first seen: the k-th new name gets (names known) + k.
        rank = np.empty(len(first), _INDEX)
        rank[np.argsort(first, kind="stable")] = np.arange(len(first), dtype=_INDEX)
        ids = len(self._keys) + rank
        out[new] = ids[which.ravel()]
        at = np.searchsorted(self._keys, fresh)
        self._keys = np.insert(self._keys, at, fresh)
        self._ids = np.insert(self._ids, at, ids)
        if self.names is not None:
            self.names += [names[new[i]] for i in np.sort(first)]
        return out


class Columns:
    """A :class:`Table` kept in step with the history's writes (module doc)."""

    def __init__(self, rows: list[tuple[Any, ...]], good_outcomes: Iterable[str]):
        """``rows`` as :data:`SELECT` reads them (sorted by the signed ``fp``)."""
        self._good = frozenset(good_outcomes)
        self._sites = NameIndex(keep_names=True)
        self._hosts = NameIndex(keep_names=False)

        def column(i: int) -> np.ndarray:
            return np.array([math.nan if r[i] is None else r[i] for r in rows], np.float64)

        self.t = Table(
            fp=np.array([r[0] for r in rows], np.int64).view(np.uint64),
            site_ix=self._sites.indices([r[1] or "" for r in rows]),
            sites=[],
            host=self._hosts.indices([r[2] or r[1] or "" for r in rows]),
            importance=_importance([r[3] for r in rows]),
            rate=column(4),
            checks=np.array([r[5] for r in rows], _INDEX),
            last_fetch=column(6),
            due=column(7),
            emitted=column(8),
            interval=column(9),
            good=np.array([(r[10] or "") in self._good for r in rows], bool),
            pending=np.array([bool(r[11]) for r in rows], bool),
            spread=column(12),
            observed=column(13),
        )

    def save(self, path: Path, token: float) -> None:
        """Write the columns to ``path`` (atomically) with ``token``, what
        :meth:`load` must be given to take them back."""
        arrays = {name: getattr(self.t, name) for name in _ARRAYS}
        arrays.update(self._sites.arrays("sites"), **self._hosts.arrays("hosts"))
        arrays["token"] = np.array([token], np.float64)
        arrays["format"] = np.array([SNAPSHOT_FORMAT], np.int64)
        with streams.atomic_file(path) as f:
            np.savez(f, **arrays)

    @classmethod
    def load(cls, path: Path, token: float, good_outcomes: Iterable[str]) -> Columns | None:
        """The columns :meth:`save` wrote with ``token``; None when ``path`` is missing,
        damaged or was written with another token."""
        try:
            with open(path, "rb") as f, np.load(f, allow_pickle=False) as npz:
                arrays = {name: npz[name] for name in npz.files}
            if arrays["token"].tolist() != [token] or arrays["format"].tolist() != [
                SNAPSHOT_FORMAT
            ]:
                return None  # another table's, or another layout's
            columns = cls([], good_outcomes)
            columns._sites = NameIndex.from_arrays(arrays, "sites", keep_names=True)
            columns._hosts = NameIndex.from_arrays(arrays, "hosts", keep_names=False)
            fields = {name: arrays[name] for name in _ARRAYS}
            if len({len(a) for a in fields.values()}) != 1:
                return None
            columns.t = Table(sites=[], **fields)
            return columns
        except (OSError, KeyError, ValueError, EOFError, zipfile.BadZipFile):
            return None

    def table(self) -> Table:
        """The current table (its arrays shared: see :class:`Table`)."""
        assert self._sites.names is not None
        return replace(self.t, sites=list(self._sites.names))

    def _rows(self, fps: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Row indices of the tracked ones of ``fps`` (uint64), and which those are
        (an UPDATE of an untracked URL changes nothing)."""
        keys = self.t.fp.view(np.int64)
        want = np.asarray(fps, np.uint64).view(np.int64)
        pos = np.searchsorted(keys, want)
        found = pos < len(keys)
        found[found] = keys[pos[found]] == want[found]
        return pos[found], found

    def put(self, entries: Iterable[_Entry]) -> None:
        """Rows for ``entries`` (written with INSERT OR REPLACE: the last one of a URL
        wins): tracked URLs' rows are overwritten, new URLs' inserted in order."""
        latest = {e.fp: e for e in entries}
        if not latest:
            return
        batch = sorted(latest.values(), key=lambda e: e.fp - (1 << 64) if e.fp >> 63 else e.fp)
        new: dict[str, np.ndarray] = {
            "fp": np.array([e.fp for e in batch], np.uint64),
            "site_ix": self._sites.indices([e.site or "" for e in batch]),
            "host": self._hosts.indices([e.host or e.site or "" for e in batch]),
            "importance": _importance([e.importance for e in batch]),
            "checks": np.array([e.checks for e in batch], _INDEX),
            "good": np.array([(e.outcome or "") in self._good for e in batch], bool),
            "pending": np.array([bool(e.pending_change) for e in batch], bool),
        }
        for name in _FLOATS:
            new[name] = np.array([_float(getattr(e, name)) for e in batch], np.float64)
        t = self.t
        pos = np.searchsorted(t.fp.view(np.int64), new["fp"].view(np.int64))
        rows, found = self._rows(new["fp"])
        fresh = ~found
        for name in _ARRAYS:
            getattr(t, name)[rows] = new[name][found]
        if fresh.any():
            # np.insert copies each column: O(tracked URLs) memory traffic, done only
            # when the batch brings URLs never seen (about 0.1 ms per 100k rows a column).
            at = pos[fresh]
            for name in _ARRAYS:
                setattr(t, name, np.insert(getattr(t, name), at, new[name][fresh]))

    def set_schedule(self, fps: np.ndarray, intervals: np.ndarray, dues: np.ndarray) -> None:
        rows, found = self._rows(fps)
        self.t.interval[rows] = np.asarray(intervals, np.float64)[found]
        self.t.due[rows] = np.asarray(dues, np.float64)[found]

    def mark_emitted(self, fps: list[int], now: float) -> None:
        if fps:
            self.t.emitted[self._rows(np.array(fps, np.uint64))[0]] = now
