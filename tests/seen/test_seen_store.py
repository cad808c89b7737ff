"""The seen set's parts: Bloom filter file, sorted runs, manifest, store commits."""

from __future__ import annotations

import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from crawlkit.diag import NullReporter
from crawlkit.errors import StateError, UsageError
from crawlkit.seen import BloomFilter, SeenStore, bloom_size
from crawlkit.seen.runs import RunInfo, lookup_sorted, merge_sorted, plan_compaction, read_manifest

U64 = st.integers(min_value=0, max_value=2**64 - 1)


def keys(values) -> np.ndarray:
    return np.array(list(values), dtype=np.uint64)


def random_keys(n: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return np.unique(rng.integers(0, 2**64 - 1, n, dtype=np.uint64, endpoint=True))


# -- Bloom filter -----------------------------------------------------------------------


def test_sizing_matches_the_design_formula():
    m, k = bloom_size(1_000_000, 0.001)
    assert m % 64 == 0
    assert 14.37 < m / 1_000_000 < 14.39  # 14.4 bits per URL at 0.1 %
    assert k == 10
    exact = -1000 * math.log(0.01) / math.log(2) ** 2
    assert bloom_size(1000, 0.01) == (math.ceil(exact / 64) * 64, 7)
    with pytest.raises(UsageError):
        bloom_size(0, 0.001)
    with pytest.raises(UsageError):
        bloom_size(10, 0.7)


def test_filter_has_no_false_negatives_and_its_design_rate(tmp_path: Path):
    stored = random_keys(200_000, 1)
    bloom = BloomFilter.create(tmp_path / "f.bloom", len(stored), 0.01)
    bloom.add(stored)
    assert bloom.probe(stored).all()
    others = np.setdiff1d(random_keys(200_000, 2), stored)
    rate = bloom.probe(others).mean()
    assert 0.005 < rate < 0.015  # 1 % design rate at the design count
    assert 0.45 < bloom.fill() < 0.55  # a filter at capacity is half full


def test_build_sets_the_same_bits_as_add(tmp_path: Path):
    stored = random_keys(5000, 3)
    a = BloomFilter.create(tmp_path / "a.bloom", 4000, 0.001)
    a.add(stored[:2000])
    a.add(stored[2000:])
    a.flush()
    b = BloomFilter.build(tmp_path / "b.bloom", 4000, 0.001, [stored[:10], stored[10:]])
    assert (tmp_path / "a.bloom").read_bytes() == (tmp_path / "b.bloom").read_bytes()
    assert b.probe(stored).all()


def test_filter_file_survives_reopen_and_is_checked(tmp_path: Path):
    path = tmp_path / "f.bloom"
    stored = random_keys(1000, 4)
    bloom = BloomFilter.create(path, 1000, 0.001)
    bloom.add(stored)
    bloom.close()
    again = BloomFilter(path)
    assert again.probe(stored).all()
    assert (again.k, again.capacity, again.fp_rate) == (10, 1000, 0.001)
    with pytest.raises(StateError):
        again.add(stored)
    again.close()
    with open(path, "r+b") as f:
        f.truncate(os.path.getsize(path) - 8)
    with pytest.raises(StateError, match="damaged"):
        BloomFilter(path)
    path.write_bytes(b"not a filter")
    with pytest.raises(StateError):
        BloomFilter(path)


@settings(max_examples=60, deadline=None)
@given(st.lists(U64, max_size=300), st.lists(U64, max_size=300), st.integers(1, 500))
def test_probe_never_misses_an_added_key(tmp_path_factory, added, asked, capacity):
    directory = tmp_path_factory.mktemp("bloom")
    bloom = BloomFilter.create(directory / "f.bloom", capacity, 0.01)
    bloom.add(keys(added))
    answer = bloom.probe(keys(added + asked))
    assert answer[: len(added)].all()
    bloom.close()


# -- runs -------------------------------------------------------------------------------


@given(st.lists(st.lists(U64, max_size=60), max_size=5), st.lists(U64, max_size=80))
def test_lookup_sorted_agrees_with_a_python_set(runs, asked):
    arrays = [np.unique(keys(r)) for r in runs]
    query = np.unique(keys(asked))
    found = lookup_sorted(arrays, query)
    everything = {int(x) for r in runs for x in r}
    assert [bool(f) for f in found] == [int(q) in everything for q in query]


@given(st.lists(st.lists(U64, max_size=60), max_size=6))
def test_merge_sorted_is_the_sorted_union(runs):
    merged = merge_sorted([np.unique(keys(r)) for r in runs])
    assert merged.tolist() == sorted({x for r in runs for x in r})


def test_compaction_plan_is_tiered():
    runs = [RunInfo(f"r{i}", 1, 0) for i in range(3)] + [RunInfo("big", 9, 1)]
    assert plan_compaction(runs, 4) is None
    runs.append(RunInfo("r3", 1, 0))
    assert [r.file for r in plan_compaction(runs, 4) or []] == ["r0", "r1", "r2", "r3"]


# -- the store --------------------------------------------------------------------------


def test_commit_then_lookup_and_reopen(tmp_path: Path):
    stored = random_keys(3000, 5)
    with SeenStore.open(tmp_path, capacity=10_000) as store:
        store.commit(stored[:1000])
        store.commit(stored[1000:2000])
        answer = store.lookup(stored)
        assert answer.seen[:2000].all() and not answer.seen[2000:].any()
        assert answer.maybes >= 2000
    with SeenStore.open(tmp_path, writable=False) as store:
        assert store.stored == 2000
        assert store.contains(stored[:2000]).all()
        assert not store.contains(stored[2000:]).any()
        with pytest.raises(StateError):
            store.commit(stored[2000:])


def test_one_writer_at_a_time(tmp_path: Path):
    # The lock is per process (re-entrant inside one), so the rival is another process.
    rival = [
        sys.executable,
        "-c",
        "import sys; from crawlkit.seen import SeenStore; SeenStore.open(sys.argv[1]).close()",
        str(tmp_path),
    ]
    with SeenStore.open(tmp_path):
        locked = subprocess.run(rival, capture_output=True, text=True, timeout=60)
        assert locked.returncode != 0 and "LockedError" in locked.stderr
        with SeenStore.open(tmp_path, writable=False) as reader:  # readers need no lock
            assert reader.stored == 0
    assert subprocess.run(rival, capture_output=True, timeout=60).returncode == 0


def test_readonly_open_of_a_new_directory_creates_nothing(tmp_path: Path):
    target = tmp_path / "nothing-here"
    with SeenStore.open(target, writable=False) as store:
        assert store.stored == 0
        assert not store.lookup(keys([1, 2, 3])).seen.any()
    assert not target.exists()


def test_compaction_keeps_every_key_and_bounds_runs(tmp_path: Path):
    stored = random_keys(4000, 6)
    batches = np.array_split(stored, 40)
    with SeenStore.open(tmp_path, capacity=100_000, fan_in=3) as store:
        for batch in batches:
            store.commit(batch)
        manifest = store.manifest
        assert manifest is not None
        levels = [r.level for r in manifest.runs]
        assert all(levels.count(level) < 3 for level in set(levels))
        assert max(levels) >= 2
        assert store.stored == len(stored)
        assert store.lookup(stored).seen.all()
    files = sorted(p.name for p in (tmp_path / "seen").iterdir())
    named = {"manifest.json", manifest.filter, *(r.file for r in manifest.runs)}
    assert set(files) == named  # merged-away runs were deleted
    on_disk = merge_sorted([np.fromfile(tmp_path / "seen" / r.file, "<u8") for r in manifest.runs])
    assert np.array_equal(on_disk, stored)


def test_filter_grows_past_its_capacity_with_a_warning(tmp_path: Path):
    reporter = NullReporter()
    stored = random_keys(500, 7)
    with SeenStore.open(tmp_path, capacity=100, fp_rate=0.01, reporter=reporter) as store:
        old = store.filter.path.name
        for batch in np.array_split(stored, 20):
            store.commit(batch)
            assert store.filter.capacity >= store.stored  # never a full filter
        assert store.filter.path.name != old
        assert reporter.counts["filter grown"] >= 1
        assert store.lookup(stored).seen.all()
        others = np.setdiff1d(random_keys(5000, 8), stored)
        assert store.filter.probe(others).mean() < 0.03
    assert not (tmp_path / "seen" / old).exists()
    manifest = read_manifest(tmp_path / "seen")
    assert manifest is not None and manifest.capacity >= 500


def test_rebuild_changes_size_and_keeps_answers(tmp_path: Path):
    stored = random_keys(2000, 9)
    with SeenStore.open(tmp_path, capacity=5000) as store:
        store.commit(stored)
        store.rebuild(capacity=50_000, fp_rate=0.0001)
        assert (store.filter.capacity, store.filter.k) == (50_000, 13)
        assert store.filter.probe(stored).all()
    with SeenStore.open(tmp_path, writable=False) as store:
        assert store.manifest.capacity == 50_000
        assert store.lookup(stored).seen.all()


def test_settings_of_an_existing_store_are_kept(tmp_path: Path):
    SeenStore.open(tmp_path, capacity=1234).close()
    reporter = NullReporter()
    with SeenStore.open(tmp_path, capacity=99, reporter=reporter) as store:
        assert store.filter.capacity == 1234
    assert reporter.counts["setting ignored"] == 0  # smaller: the filter grows anyway
    with SeenStore.open(tmp_path, capacity=5000, fp_rate=0.2, reporter=reporter) as store:
        assert (store.filter.capacity, store.filter.fp_rate) == (1234, 0.001)
    assert reporter.counts["setting ignored"] == 2


def test_leftovers_of_a_crash_are_removed_at_open(tmp_path: Path):
    with SeenStore.open(tmp_path) as store:
        store.commit(keys([5, 6, 7]))
    seen = tmp_path / "seen"
    junk = [
        seen / ".tmp-run-00000099.u64",
        seen / "run-00000099.u64",
        seen / "filter-00000098.bloom",
        seen / ".manifest.json.abc.tmp",
    ]
    for path in junk:
        path.write_bytes(b"x" * 8)
    (seen / "notes.txt").write_text("mine")
    with SeenStore.open(tmp_path, writable=False) as reader:  # a reader cleans nothing
        assert reader.stored == 3
    assert all(p.exists() for p in junk)
    with SeenStore.open(tmp_path) as store:
        assert store.contains(keys([5, 6, 7])).all()
    assert not any(p.exists() for p in junk)
    assert (seen / "notes.txt").exists()


def test_damaged_state_is_refused_not_reset(tmp_path: Path):
    with SeenStore.open(tmp_path) as store:
        store.commit(keys([1, 2, 3]))
        run = store.manifest.runs[0].file
    seen = tmp_path / "seen"
    manifest = (seen / "manifest.json").read_bytes()
    (seen / "manifest.json").write_text("{not json")
    with pytest.raises(StateError, match="not valid JSON"):
        SeenStore.open(tmp_path)
    (seen / "manifest.json").unlink()
    with pytest.raises(StateError, match="no manifest"):
        SeenStore.open(tmp_path)
    (seen / "manifest.json").write_bytes(manifest)
    with open(seen / run, "ab") as f:
        f.write(b"\0" * 8)
    with pytest.raises(StateError, match="the manifest says 3 keys"):
        SeenStore.open(tmp_path)


# -- packed runs ------------------------------------------------------------------------

CLUSTERED = st.one_of(
    U64,
    st.integers(0, 2**20),  # one bucket, many keys
    st.integers(2**64 - 2**20, 2**64 - 1),
    st.builds(lambda t, low: (t << 48) | low, st.integers(0, 3), st.integers(0, 2**48 - 1)),
)


@settings(max_examples=80, deadline=None)
@given(
    st.lists(CLUSTERED, max_size=400),
    st.lists(CLUSTERED, max_size=200),
    st.sampled_from([None, 17, 20]),
)
def test_packed_runs_answer_like_a_set(tmp_path_factory, stored, asked, bits):
    from crawlkit.seen import runs
    from crawlkit.seen.runs import PackedRun, open_run, run_keys, write_run

    directory = tmp_path_factory.mktemp("p48")
    keys_sorted = np.unique(keys(stored))
    path = directory / "run-1.p48"
    real = runs.dir_bits
    if bits is not None:  # the directory size big runs get, on a small one
        runs.dir_bits = lambda count: bits  # type: ignore[assignment]
    try:
        write_run(path, keys_sorted, "p48")
        expected_bits = bits or 16
        assert path.stat().st_size == 8 * (2**expected_bits + 1) + 6 * len(keys_sorted)
        run = open_run(path, len(keys_sorted), "p48")
    finally:
        runs.dir_bits = real
    assert isinstance(run, PackedRun)
    assert np.array_equal(run_keys(run), keys_sorted)
    assert np.array_equal(run_keys(run, 3, 9), keys_sorted[3:9])
    query = np.unique(keys(stored[:50] + asked))
    members = set(stored)
    assert lookup_sorted([run], query).tolist() == [int(q) in members for q in query]


def test_big_runs_are_packed_and_still_exact(tmp_path: Path, monkeypatch):
    from crawlkit.seen import runs

    monkeypatch.setattr(runs, "PACKED_MIN", 500)
    stored = random_keys(3000, 12)
    with SeenStore.open(tmp_path, capacity=100_000, fan_in=2) as store:
        for batch in np.array_split(stored, 12):  # 250 each: u64, merged into p48
            store.commit(batch)
        formats = {r.format for r in store.manifest.runs}
        assert "p48" in formats
        assert store.lookup(stored).seen.all()
        assert not store.lookup(random_keys(3000, 13)).seen.any()
    with SeenStore.open(tmp_path, writable=False) as store:
        assert store.contains(stored).all()
        files = {r.file.rsplit(".", 1)[1] for r in store.manifest.runs}
        assert "p48" in files
