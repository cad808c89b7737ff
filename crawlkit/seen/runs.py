"""Sorted runs of fingerprints on disk, the manifest that names them, and compaction.

A *run* is a file of distinct fingerprints as little-endian uint64, sorted ascending,
with no header (``numpy.fromfile(path, "<u8")`` reads it; so does ``od -A d -t u8``).
Runs are immutable once written: a new batch makes a new run, and compaction merges
several runs into one new file. Lookups memory-map the runs and binary-search a sorted
batch of keys in each, so RAM does not grow with the number of stored fingerprints.

The *manifest* (``manifest.json``) is the commit point. It names the live runs and
the filter file; it is replaced by an atomic rename, so a crash leaves either the old
set of runs or the new one. Files the manifest does not name are leftovers of a crash
(or of a finished compaction) and are removed when the store is next opened for
writing.

Compaction is tiered (like an LSM tree): each new run enters level 0; when a level
holds ``fan_in`` runs they are merged into one run of the next level. With batches of
``b`` keys and ``N`` stored keys there are at most ``(fan_in - 1) * log_fan_in(N / b)``
runs, and each key is rewritten ``log_fan_in(N / b)`` times.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from crawlkit.errors import StateError
from crawlkit.io import atomic_write_json, fsync_dir, read_json

__all__ = [
    "FORMAT",
    "MANIFEST",
    "Manifest",
    "RunInfo",
    "lookup_sorted",
    "merge_sorted",
    "open_run",
    "plan_compaction",
    "read_manifest",
    "write_manifest",
    "write_run",
]

FORMAT = "crawlkit-seen"
FORMAT_VERSION = 1
MANIFEST = "manifest.json"
TMP_PREFIX = ".tmp-"

Fingerprints = npt.NDArray[np.uint64]


@dataclass
class RunInfo:
    """One live run: its file name (in the store directory), key count and level."""

    file: str
    count: int
    level: int = 0


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
                RunInfo(str(r["file"]), int(r["count"]), int(r["level"])) for r in value["runs"]
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


def read_manifest(directory: Path) -> Manifest | None:
    """The committed manifest, or None when the store was never created."""
    path = directory / MANIFEST
    try:
        value = read_json(path)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise StateError(f"cannot read {path}: {exc.strerror}") from exc
    except ValueError as exc:
        raise StateError(f"{path} is not valid JSON ({exc})") from exc
    return Manifest.from_json(value, path)


def write_manifest(directory: Path, manifest: Manifest) -> None:
    """The commit point: replace the manifest atomically (temp, fsync, rename, dir fsync)."""
    atomic_write_json(directory / MANIFEST, manifest.to_json())


def write_run(path: Path, keys: Fingerprints) -> None:
    """Write sorted distinct ``keys`` to ``path`` atomically (temp, fsync, rename)."""
    tmp = path.with_name(TMP_PREFIX + path.name)
    try:
        with open(tmp, "wb") as f:
            np.ascontiguousarray(keys, dtype="<u8").tofile(f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise
    fsync_dir(path.parent)


def open_run(path: Path, count: int) -> Fingerprints:
    """Memory-map a run (read-only), checking that its size matches the manifest."""
    try:
        size = path.stat().st_size
    except FileNotFoundError:
        raise
    except OSError as exc:
        raise StateError(f"cannot read run {path}: {exc.strerror}") from exc
    if size != 8 * count:
        raise StateError(f"run {path} has {size} bytes; the manifest says {count} keys")
    if count == 0:
        return np.zeros(0, dtype=np.uint64)
    return np.memmap(path, dtype="<u8", mode="r", shape=(count,))  # type: ignore[return-value]


def lookup_sorted(runs: Sequence[Fingerprints], keys: Fingerprints) -> npt.NDArray[np.bool_]:
    """True for each key of the ascending array ``keys`` that is in any of ``runs``.

    One ``searchsorted`` per run: with sorted keys numpy walks each run forward, so a
    batch costs about one pass over the pages it touches (no per-key Python).
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
        idx = np.searchsorted(run, q)
        np.minimum(idx, len(run) - 1, out=idx)
        hit = np.asarray(run[idx]) == q
        if todo is None:
            found |= hit
        else:
            found[todo[hit]] = True
    return found


def merge_sorted(arrays: Sequence[Fingerprints]) -> Fingerprints:
    """One ascending array of the distinct keys of several ascending arrays."""
    if not arrays:
        return np.zeros(0, dtype=np.uint64)
    merged = np.concatenate([np.asarray(a, dtype=np.uint64) for a in arrays])
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
