"""The seen set of one state directory: a Bloom filter in front of exact sorted runs.

Layout under ``--state DIR`` (the whole directory is locked by
:func:`crawlkit.state.open_state`, docs/design.md invariant 6)::

    DIR/seen/manifest.json     the commit point: capacity, fp_rate, filter, runs
    DIR/seen/filter-NNNNNNNN.bloom   the Bloom filter (see crawlkit.seen.bloom)
    DIR/seen/run-NNNNNNNN.u64  sorted distinct little-endian uint64 fingerprints
    DIR/seen/run-NNNNNNNN.p48  the same for big runs, packed to 6 bytes a key

Answers (docs/design.md invariant 4): :meth:`SeenStore.lookup` asks the filter about a
whole batch; every "maybe" is confirmed against the exact runs, so a false positive of
the filter costs a binary search, never a lost URL.

Commits (docs/design.md invariant 5): :meth:`SeenStore.commit` writes a new run under a
fresh name (temp, fsync, rename), sets the keys' bits in the memory-mapped filter and
fsyncs its file, and then replaces the manifest atomically (the directory is a
:class:`~crawlkit.durable.DurableDir`). Until that rename the old
manifest stands and names neither the new run nor anything else new; the filter may
have extra bits, which only makes it answer "maybe" more often. After the rename the
new state is complete. Compaction and filter rebuilds follow the same pattern: write
new files, rename the manifest, then delete the files it no longer names. Files
that no manifest names (temp files, a run written just before a crash, runs replaced
by a compaction) are deleted the next time the store is opened for writing.

Growth: when the stored count passes the filter's design capacity the store warns on
stderr and rebuilds the filter from the exact runs at twice the stored count, so the
false-positive rate stays at its design value and a full filter is never used.
"""

from __future__ import annotations

import copy
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

import numpy as np
import numpy.typing as npt

from crawlkit.diag import NullReporter, Reporter
from crawlkit.durable import MANIFEST
from crawlkit.errors import StateError, UsageError
from crawlkit.seen.bloom import BloomFilter, bloom_size
from crawlkit.seen.runs import (
    Manifest,
    Run,
    RunInfo,
    lookup_sorted,
    merge_sorted,
    open_run,
    plan_compaction,
    read_manifest,
    run_format,
    run_keys,
    seen_dir,
    write_run,
)
from crawlkit.state import StateDir, open_state

__all__ = [
    "DEFAULT_CAPACITY",
    "DEFAULT_FP_RATE",
    "Lookup",
    "SeenStore",
]

DEFAULT_CAPACITY = 10_000_000
DEFAULT_FP_RATE = 0.001
DEFAULT_FAN_IN = 4
SUBDIR = "seen"
_CHUNK = 1 << 22

Fingerprints = npt.NDArray[np.uint64]


@dataclass
class Lookup:
    """The answer for a batch of distinct fingerprints.

    ``seen[i]`` is True when key ``i`` is in the store (exactly: confirmed in a run).
    ``maybes`` counts the keys the filter could not rule out; ``maybes - seen.sum()`` of
    them were the filter's false positives.
    """

    seen: npt.NDArray[np.bool_]
    maybes: int

    @property
    def confirmed(self) -> int:
        return int(self.seen.sum())

    @property
    def false_positives(self) -> int:
        return self.maybes - self.confirmed


class SeenStore:
    """Open with :meth:`open`; use as a context manager so the lock is released.

    A store opened ``writable=False`` takes no lock and changes nothing (``--dry-run``,
    ``--contains``); it reads the manifest committed at open time. A state directory
    without a seen set reads as an empty set.
    """

    #: Test-only: called with a step name between the steps of every commit, so a test
    #: can kill the process at each step. None in normal use.
    commit_hook: ClassVar[Callable[[str], None] | None] = None

    def __init__(
        self,
        directory: Path,
        state: StateDir | None,
        manifest: Manifest | None,
        *,
        writable: bool,
        reporter: Reporter,
        fan_in: int,
    ):
        self.directory = directory
        self.durable = seen_dir(directory)
        self.writable = writable
        self.reporter = reporter
        self.fan_in = fan_in
        self._state = state
        self.manifest = manifest
        self.filter: BloomFilter | None = None
        self._runs: list[Run] = []
        if manifest is not None:
            self.filter = BloomFilter(directory / manifest.filter, writable=writable)
            self._runs = [open_run(directory / r.file, r.count, r.format) for r in manifest.runs]

    # -- opening -----------------------------------------------------------------------

    @classmethod
    def open(
        cls,
        state_dir: str | os.PathLike[str],
        *,
        writable: bool = True,
        capacity: int | None = None,
        fp_rate: float | None = None,
        reporter: Reporter | None = None,
        fan_in: int = DEFAULT_FAN_IN,
    ) -> SeenStore:
        """Open (and for a writer lock, and create if missing) the seen set of a state dir.

        ``capacity`` and ``fp_rate`` size the filter when the store is created; an
        existing store keeps the values in its manifest (a different value is reported
        and ignored; :meth:`rebuild` changes them). Raises :class:`LockedError` when
        another process owns the directory, :class:`StateError` when it is damaged.
        """
        reporter = reporter if reporter is not None else NullReporter()
        if fan_in < 2:
            raise UsageError("compaction fan-in must be at least 2")
        if capacity is not None or fp_rate is not None:  # validate before touching anything
            bloom_size(
                DEFAULT_CAPACITY if capacity is None else capacity,
                DEFAULT_FP_RATE if fp_rate is None else fp_rate,
            )
        if not writable:
            return cls._open_readonly(Path(state_dir), reporter, fan_in)
        state = open_state(state_dir)
        try:
            directory = state.sub(SUBDIR)
            manifest = read_manifest(directory)
            if manifest is None:
                manifest = cls._create(directory, capacity, fp_rate)
            else:
                _note_ignored(manifest, capacity, fp_rate, reporter)
            seen_dir(directory).remove_leftovers(_live_files(manifest))
            return cls(directory, state, manifest, writable=True, reporter=reporter, fan_in=fan_in)
        except BaseException:
            state.close()
            raise

    @classmethod
    def _open_readonly(cls, state_dir: Path, reporter: Reporter, fan_in: int) -> SeenStore:
        directory = state_dir / SUBDIR
        # A writer may replace the manifest and delete the files the old one named
        # between our reads; the new manifest then names files that exist.
        for attempt in range(10):
            manifest = read_manifest(directory)
            try:
                return cls(
                    directory, None, manifest, writable=False, reporter=reporter, fan_in=fan_in
                )
            except (FileNotFoundError, StateError):
                if attempt == 9 or read_manifest(directory) == manifest:
                    raise
        raise AssertionError("unreachable")

    @staticmethod
    def _create(directory: Path, capacity: int | None, fp_rate: float | None) -> Manifest:
        if any(directory.glob("run-*.u64")) or any(directory.glob("run-*.p48")):
            raise StateError(
                f"{directory} holds runs but no {MANIFEST}; refusing to start a new seen set "
                "over them (move them away to start afresh)"
            )
        manifest = Manifest(
            capacity=DEFAULT_CAPACITY if capacity is None else capacity,
            fp_rate=DEFAULT_FP_RATE if fp_rate is None else fp_rate,
            filter="",
        )
        manifest.filter = manifest.new_name("filter", ".bloom")
        BloomFilter.create(directory / manifest.filter, manifest.capacity, manifest.fp_rate).close()
        seen_dir(directory).commit(manifest.to_json())
        return manifest

    # -- reading -----------------------------------------------------------------------

    @property
    def stored(self) -> int:
        """How many distinct fingerprints the store holds."""
        return self.manifest.stored if self.manifest is not None else 0

    def lookup(self, keys: Fingerprints) -> Lookup:
        """Which of the distinct ``keys`` are stored: filter probe, then exact check."""
        keys = np.ascontiguousarray(keys, dtype=np.uint64)
        seen = np.zeros(len(keys), dtype=bool)
        if self.filter is None or len(keys) == 0:
            return Lookup(seen, 0)
        maybe = np.flatnonzero(self.filter.probe(keys))
        if len(maybe):
            candidates = keys[maybe]
            if len(candidates) < 2 or bool((candidates[1:] >= candidates[:-1]).all()):
                seen[maybe[lookup_sorted(self._runs, candidates)]] = True
            else:
                order = np.argsort(candidates)
                found = lookup_sorted(self._runs, candidates[order])
                seen[maybe[order[found]]] = True
        return Lookup(seen, len(maybe))

    def contains(self, keys: Fingerprints) -> npt.NDArray[np.bool_]:
        """True for each key (duplicates allowed) that the store holds."""
        keys = np.ascontiguousarray(keys, dtype=np.uint64)
        unique, inverse = np.unique(keys, return_inverse=True)
        return self.lookup(unique).seen[inverse]

    def iter_keys(self) -> Iterator[Fingerprints]:
        """Every stored key, a run at a time, in chunks (each chunk ascending)."""
        for run in self._runs:
            for start in range(0, len(run), _CHUNK):
                yield run_keys(run, start, start + _CHUNK)

    def disk_bytes(self) -> int:
        """Bytes the committed files take (runs, filter, manifest) as file sizes."""
        if self.manifest is None:
            return 0
        names = [MANIFEST, *_live_files(self.manifest)]
        return sum((self.directory / n).stat().st_size for n in names)

    # -- writing -----------------------------------------------------------------------

    def _step(self, name: str) -> None:
        hook = SeenStore.commit_hook
        if hook is not None:
            hook(name)

    def _require_writable(self) -> Manifest:
        if not self.writable or self.manifest is None or self.filter is None:
            raise StateError("the seen set is open read-only")
        return self.manifest

    def commit(self, keys: Fingerprints) -> None:
        """Add distinct keys that the store does not hold yet, atomically.

        ``keys`` must be distinct and not stored (what :meth:`lookup` reported unseen);
        they need not be sorted. When this returns they are durable; when it raises (or
        the process dies) the store holds either all of them or none.
        """
        manifest = self._require_writable()
        assert self.filter is not None
        keys = np.sort(np.asarray(keys, dtype=np.uint64))
        if len(keys) == 0:
            return
        new = copy.deepcopy(manifest)
        fmt = run_format(len(keys))
        run = RunInfo(new.new_name("run", f".{fmt}"), len(keys), 0, fmt)
        self._step("begin")
        write_run(self.directory / run.file, keys, fmt)
        self._step("run-written")
        new.runs.append(run)
        stored = new.stored
        over = stored > self.filter.capacity
        if over or len(keys) * 4 >= self.filter.capacity:
            # Past the design count (or a batch that is a big part of it): build a
            # filter from the runs instead of setting bits one key at a time.
            capacity = max(new.capacity, 2 * stored) if over else new.capacity
            if over:
                self.reporter.warn(
                    f"seen set holds {stored} URLs, past its filter's design capacity of "
                    f"{self.filter.capacity}; rebuilding the filter for {capacity}",
                    "filter grown",
                )
            self._runs.append(open_run(self.directory / run.file, run.count, run.format))
            try:
                self._rebuild(new, capacity, new.fp_rate)
            except BaseException:
                self._runs.pop()
                raise
        else:
            self.filter.add(keys)
            self._step("bits-set")
            self.filter.flush()
            self._step("filter-flushed")
            self.durable.commit(new.to_json())
            self._step("manifest-written")
            self.manifest = new
            self._runs.append(open_run(self.directory / run.file, run.count, run.format))
        self.compact()

    def rebuild(self, capacity: int | None = None, fp_rate: float | None = None) -> None:
        """Build a new filter from the exact runs (new size, or the same) and switch to it."""
        manifest = self._require_writable()
        self._rebuild(
            copy.deepcopy(manifest),
            manifest.capacity if capacity is None else capacity,
            manifest.fp_rate if fp_rate is None else fp_rate,
        )

    def _rebuild(self, new: Manifest, capacity: int, fp_rate: float) -> None:
        old_filter = self.filter
        assert old_filter is not None
        name = new.new_name("filter", ".bloom")
        bloom = BloomFilter.build(self.directory / name, capacity, fp_rate, self.iter_keys())
        self._step("filter-built")
        new.filter, new.capacity, new.fp_rate = name, capacity, fp_rate
        try:
            self.durable.commit(new.to_json())
        except BaseException:
            bloom.close()
            raise
        self._step("manifest-written")
        self.manifest, self.filter = new, bloom
        old_filter.close()
        self.durable.remove([old_filter.path.name])
        self._step("old-filter-removed")

    def compact(self) -> None:
        """Merge runs while some level holds ``fan_in`` of them (tiered, LSM-style)."""
        manifest = self._require_writable()
        while (group := plan_compaction(manifest.runs, self.fan_in)) is not None:
            names = {r.file for r in group}
            live = dict(zip((r.file for r in manifest.runs), self._runs, strict=True))
            merged = merge_sorted([live[n] for n in names])
            new = copy.deepcopy(manifest)
            fmt = run_format(len(merged))
            level = max(r.level for r in group) + 1
            run = RunInfo(new.new_name("run", f".{fmt}"), len(merged), level, fmt)
            write_run(self.directory / run.file, merged, fmt)
            del merged
            self._step("compaction-run-written")
            new.runs = [r for r in new.runs if r.file not in names] + [run]
            self.durable.commit(new.to_json())
            self._step("compaction-manifest-written")
            self.manifest = manifest = new
            self._runs = [live[r.file] for r in new.runs[:-1]]
            self._runs.append(open_run(self.directory / run.file, run.count, run.format))
            for name in names:
                live.pop(name)
            self.durable.remove(names)
            self._step("compaction-old-removed")

    # -- closing -----------------------------------------------------------------------

    def close(self) -> None:
        """Unmap the files and release the lock (the committed state is already durable)."""
        if self.filter is not None:
            self.filter.close()
            self.filter = None
        self._runs = []
        if self._state is not None:
            self._state.close()
            self._state = None

    def __enter__(self) -> SeenStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _note_ignored(
    manifest: Manifest, capacity: int | None, fp_rate: float | None, reporter: Reporter
) -> None:
    # A smaller capacity is no news: the filter grows by itself past its design count.
    if capacity is not None and capacity > manifest.capacity:
        reporter.warn(
            f"--capacity {capacity} ignored: the seen set is sized for {manifest.capacity} "
            "(use --rebuild to change it)",
            "setting ignored",
        )
    if fp_rate is not None and fp_rate != manifest.fp_rate:
        reporter.warn(
            f"--fp-rate {fp_rate} ignored: the seen set is sized for {manifest.fp_rate} "
            "(use --rebuild to change it)",
            "setting ignored",
        )


def _live_files(manifest: Manifest) -> list[str]:
    """The generation files a manifest names: its filter and its runs."""
    return [manifest.filter, *(r.file for r in manifest.runs)]
