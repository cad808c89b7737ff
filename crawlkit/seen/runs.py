"""Sorted runs of fingerprints on disk, the manifest that names them, and compaction.

A *run* is a file of distinct fingerprints, sorted ascending, in one of two formats
(the manifest names the format of each run):

``u64`` (``run-N.u64``, runs under a million keys)
    The keys as little-endian uint64, no header (``numpy.fromfile(path, "<u8")`` reads
    it; so does ``od -A d -t u8``).
``p48`` (``run-N.p48``, larger runs): 6 bytes a key instead of 8
    The top ``b`` bits of a sorted key (``b`` = :func:`dir_bits` of the count, 16 or
    more) are implied by its position, so they are stored once, as a directory:
    ``2**b + 1`` little-endian uint64 offsets (``offsets[t]`` is the index of the
    first key whose top ``b`` bits are ``t``; the last is the count), then the low 32
    bits of every key (``<u4``), then bits 32-47 of every key (``<u2``).
    With the Bloom filter's 1.8 bytes a stored URL costs under 8 bytes of disk.

Runs are immutable once written: a new batch makes a new run, and compaction merges
several runs into one new file. Lookups memory-map the runs and binary-search a sorted
batch of keys in each (numpy's ``searchsorted`` for ``u64``, a vectorised search inside
each directory bucket for ``p48``), so RAM does not grow with the stored count.

The *manifest* (``manifest.json``) is the commit point. It names the live runs and
the filter file; it is replaced by an atomic rename, so a crash leaves either the old
set of runs or the new one. Files the manifest does not name are leftovers of a crash
(or of a finished compaction) and are removed when the store is next opened for
writing. The directory is a :class:`~crawlkit.durable.DurableDir` (:func:`seen_dir`):
runs and filters are its generation files.

Compaction is tiered (like an LSM tree): each new run enters level 0; when a level
holds ``fan_in`` runs they are merged into one run of the next level. With batches of
``b`` keys and ``N`` stored keys there are at most ``(fan_in - 1) * log_fan_in(N / b)``
runs, and each key is rewritten ``log_fan_in(N / b)`` times.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from crawlkit.durable import MANIFEST, DurableDir, temp_path
from crawlkit.errors import StateError
from crawlkit.streams import atomic_file, write_array

__all__ = [
    "FORMAT",
    "MANIFEST",
    "Manifest",
    "PackedRun",
    "RunInfo",
    "lookup_sorted",
    "merge_sorted",
    "open_run",
    "plan_compaction",
    "read_manifest",
    "run_format",
    "run_keys",
    "seen_dir",
    "write_run",
]

FORMAT = "crawlkit-seen"
FORMAT_VERSION = 1
#: The generation files of a seen set's directory: runs and Bloom filters.
FILES = re.compile(r"^(run-\d+\.(u64|p48)|filter-\d+\.bloom)$")

Fingerprints = npt.NDArray[np.uint64]


PACKED_MIN = 1 << 20
_FIND_CHUNK = 1 << 18
_LOW48 = np.uint64((1 << 48) - 1)


@dataclass
class RunInfo:
    """One live run: its file name (in the store directory), key count, level, format."""

    file: str
    count: int
    level: int = 0
    format: str = "u64"


@dataclass
class Manifest:
    """What the store holds. ``stored`` is the sum of the runs' counts."""

    capacity: int
    fp_rate: float
    filter: str
    runs: list[RunInfo] = field(default_factory=list)
    next_id: int = 1
    format: str = FORMAT
    version: int = FORMAT_VERSION
    fingerprint: str = "xxh3_64 of the canonical URL, little-endian uint64"

    @property
    def stored(self) -> int:
        return sum(r.count for r in self.runs)

    def new_name(self, prefix: str, suffix: str) -> str:
        """A fresh file name; names are never reused, so a leftover never collides."""
        name = f"{prefix}-{self.next_id:08d}{suffix}"
        self.next_id += 1
        return name

    def to_json(self) -> dict[str, Any]:
        out = asdict(self)
        out["stored"] = self.stored
        return out

    @classmethod
    def from_json(cls, value: Any, where: Path) -> Manifest:
        try:
            if value.get("format") != FORMAT:
                raise StateError(f"{where} is not a crawlkit seen-set manifest")
            if value.get("version") != FORMAT_VERSION:
                raise StateError(
                    f"{where} has format version {value.get('version')}; this crawlkit "
                    f"reads version {FORMAT_VERSION}"
                )
            runs = [
                RunInfo(str(r["file"]), int(r["count"]), int(r["level"]), _format(r))
                for r in value["runs"]
            ]
            return cls(
                capacity=int(value["capacity"]),
                fp_rate=float(value["fp_rate"]),
                filter=str(value["filter"]),
                runs=runs,
                next_id=int(value["next_id"]),
            )
        except (AttributeError, KeyError, TypeError, ValueError) as exc:
            raise StateError(f"{where} is damaged ({type(exc).__name__}: {exc})") from exc


def _format(run: dict[str, Any]) -> str:
    fmt = str(run.get("format", "u64"))
    if fmt not in ("u64", "p48"):
        raise ValueError(f"unknown run format {fmt!r}")
    return fmt


def seen_dir(directory: Path) -> DurableDir:
    """The seen set's directory as a durable directory (see :mod:`crawlkit.durable`)."""
    return DurableDir(directory, owns=FILES, what="seen-set")


def read_manifest(directory: Path) -> Manifest | None:
    """The committed manifest, or None when the store was never created."""
    value = seen_dir(directory).load(migrate=False)
    if value is None:
        return None
    return Manifest.from_json(value, directory / MANIFEST)


def dir_bits(count: int) -> int:
    """Top bits a ``p48`` run of ``count`` keys keeps in its directory.

    At least 16 (the bits the 6-byte keys leave out); more for big runs, so a bucket
    holds about 64 keys and a lookup takes about 7 halvings. The directory costs
    8 bytes a bucket, about 0.13 bytes a key.
    """
    return min(28, max(16, count.bit_length() - 6))


def _directory_bytes(count: int) -> int:
    return 8 * ((1 << dir_bits(count)) + 1)


def run_format(count: int) -> str:
    """The format a new run of ``count`` keys is written in."""
    return "p48" if count >= PACKED_MIN else "u64"


def write_run(path: Path, keys: Fingerprints, fmt: str = "u64") -> None:
    """Write sorted distinct ``keys`` to ``path`` atomically (temp, fsync, rename)."""
    keys = np.ascontiguousarray(keys, dtype=np.uint64)
    with atomic_file(path, tmp=temp_path(path)) as f:
        if fmt == "u64":
            write_array(f, keys.astype("<u8", copy=False))
        else:
            shift = np.uint64(64 - dir_bits(len(keys)))
            offsets = np.searchsorted(
                keys >> shift, np.arange((1 << dir_bits(len(keys))) + 1, dtype=np.uint64)
            )
            write_array(f, offsets.astype("<u8"))
            write_array(f, keys.astype("<u4"))  # astype keeps the low bits
            write_array(f, (keys >> np.uint64(32)).astype("<u2"))


class PackedRun:
    """A memory-mapped ``p48`` run: ``find`` answers membership for sorted keys."""

    def __init__(self, path: Path, count: int):
        self.count = count
        bits = dir_bits(count)
        self._shift = np.uint64(64 - bits)
        self.offsets = np.fromfile(path, dtype="<u8", count=(1 << bits) + 1).astype(np.int64)
        directory = _directory_bytes(count)
        if self.offsets[-1] != count or self.offsets[0] != 0 or (np.diff(self.offsets) < 0).any():
            raise StateError(f"run {path} has a damaged directory")
        self.low = np.memmap(path, dtype="<u4", mode="r", offset=directory, shape=(count,))
        self.mid = np.memmap(
            path, dtype="<u2", mode="r", offset=directory + 4 * count, shape=(count,)
        )
        # Plain views: fancy indexing on the memmap subclass is slower.
        self._low = self.low.view(np.ndarray)
        self._mid = self.mid.view(np.ndarray)
        widest = int(np.diff(self.offsets).max()) if count else 0
        self._steps = max(0, widest - 1).bit_length()

    def __len__(self) -> int:
        return self.count

    def _low48(self, index: npt.NDArray[np.int64]) -> Fingerprints:
        return (np.take(self._mid, index).astype(np.uint64) << np.uint64(32)) | np.take(
            self._low, index
        ).astype(np.uint64)

    def find(self, keys: Fingerprints) -> npt.NDArray[np.bool_]:
        """True for each key of the ascending array ``keys`` that the run holds."""
        if self.count == 0 or len(keys) == 0:
            return np.zeros(len(keys), dtype=bool)
        if len(keys) > _FIND_CHUNK:  # bounds the temporaries, about 60 bytes a key
            return np.concatenate(
                [self.find(keys[i : i + _FIND_CHUNK]) for i in range(0, len(keys), _FIND_CHUNK)]
            )
        top = (keys >> self._shift).astype(np.int64)
        base = self.offsets[top]
        end = self.offsets[top + 1]
        width = end - base
        want = keys & _LOW48
        last = self.count - 1
        # A branchless lower-bound search for every key at once, each in its bucket:
        # the answer stays in [base, base + width) while width halves.
        for _ in range(self._steps):
            half = width >> 1
            probe = base + half
            np.minimum(probe, last, out=probe)
            base += half * (self._low48(probe) < want)
            width -= half
        # The lower bound is base, or base + 1 when base's key is smaller.
        base += self._low48(np.minimum(base, last)) < want
        return (base < end) & (self._low48(np.minimum(base, last)) == want)

    def keys(self, start: int = 0, stop: int | None = None) -> Fingerprints:
        """Keys ``start:stop`` as uint64 (ascending)."""
        stop = self.count if stop is None else min(stop, self.count)
        if stop <= start:
            return np.zeros(0, dtype=np.uint64)
        # Buckets first..last cover the range; each contributes its overlap with it.
        first = int(np.searchsorted(self.offsets, start, side="right")) - 1
        last = int(np.searchsorted(self.offsets, stop - 1, side="right")) - 1
        bounds = np.clip(self.offsets[first : last + 2], start, stop)
        top = np.repeat(np.arange(first, last + 1, dtype=np.uint64), np.diff(bounds))
        out = self._mid[start:stop].astype(np.uint64)
        out <<= np.uint64(32)
        out |= self._low[start:stop]
        out |= top << self._shift
        return out


Run = Fingerprints | PackedRun


def open_run(path: Path, count: int, fmt: str = "u64") -> Run:
    """Memory-map a run (read-only), checking that its size matches the manifest."""
    try:
        size = path.stat().st_size
    except FileNotFoundError:
        raise
    except OSError as exc:
        raise StateError(f"cannot read run {path}: {exc.strerror}") from exc
    expected = 8 * count if fmt == "u64" else _directory_bytes(count) + 6 * count
    if size != expected:
        raise StateError(f"run {path} has {size} bytes; the manifest says {count} keys")
    if fmt == "p48":
        return PackedRun(path, count)
    if count == 0:
        return np.zeros(0, dtype=np.uint64)
    return np.memmap(path, dtype="<u8", mode="r", shape=(count,))


def run_keys(run: Run, start: int = 0, stop: int | None = None) -> Fingerprints:
    """Keys ``start:stop`` of a run of either format, as a uint64 array."""
    if isinstance(run, PackedRun):
        return run.keys(start, stop)
    return np.asarray(run[start:stop])


def lookup_sorted(runs: Sequence[Run], keys: Fingerprints) -> npt.NDArray[np.bool_]:
    """True for each key of the ascending array ``keys`` that is in any of ``runs``.

    One search per run: with sorted keys numpy walks each run forward, so a batch
    costs about one pass over the pages it touches (no per-key Python).
    """
    found = np.zeros(len(keys), dtype=bool)
    if len(keys) == 0:
        return found
    for run in runs:
        if len(run) == 0:
            continue
        # Only keys not yet found need looking up in the next run.
        todo = np.flatnonzero(~found) if found.any() else None
        q = keys if todo is None else keys[todo]
        if len(q) == 0:
            break
        if isinstance(run, PackedRun):
            hit = run.find(q)
        else:
            idx = np.searchsorted(run, q)
            np.minimum(idx, len(run) - 1, out=idx)
            hit = np.asarray(run[idx]) == q
        if todo is None:
            found |= hit
        else:
            found[todo[hit]] = True
    return found


def merge_sorted(arrays: Sequence[Run]) -> Fingerprints:
    """One ascending array of the distinct keys of several ascending arrays or runs."""
    if not arrays:
        return np.zeros(0, dtype=np.uint64)
    merged = np.concatenate([run_keys(a) for a in arrays]).astype(np.uint64, copy=False)
    # A stable sort is timsort, which finds the sorted runs and merges them.
    merged.sort(kind="stable")
    if len(merged) > 1:
        keep = np.empty(len(merged), dtype=bool)
        keep[0] = True
        np.not_equal(merged[1:], merged[:-1], out=keep[1:])
        if not keep.all():
            merged = merged[keep]
    return merged


def plan_compaction(runs: Sequence[RunInfo], fan_in: int) -> list[RunInfo] | None:
    """The runs to merge next (all runs of the lowest full level), or None."""
    levels: dict[int, list[RunInfo]] = {}
    for run in runs:
        levels.setdefault(run.level, []).append(run)
    for level in sorted(levels):
        if len(levels[level]) >= fan_in:
            return levels[level]
    return None
