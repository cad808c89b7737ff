"""Dedup's per-site counts (crawlkit/dedup/sitecounts.py): packed in memory, the same
JSON on disk, halved at twice the window, damaged files refused."""

from __future__ import annotations

import gc
import json
import tracemalloc
from pathlib import Path

import orjson
import pytest

from crawlkit.dedup.sitecounts import MAX_WINDOW, SiteCounts
from crawlkit.dedup.store import DedupStore
from crawlkit.errors import StateError


def test_counts_read_back_as_counted_and_halve_at_twice_the_window() -> None:
    counts = SiteCounts()
    for kind in ["unique"] * 5 + ["exact"] * 3 + ["near"] * 2:
        counts.count("a.test", kind, window=1000)
    counts.count("b.test", "near", window=1000)
    assert counts["a.test"] == [10, 3, 2] and counts.get("b.test") == [1, 0, 1]
    assert counts.get("c.test") is None and "c.test" not in counts and len(counts) == 2
    # Large counts stay apart (no field spills into the next).
    big = SiteCounts()
    assert big.update({"x.test": [2**32 - 1, 2**32 - 1, 2**31 + 5]}) is None
    assert big["x.test"] == [2**32 - 1, 2**32 - 1, 2**31 + 5]
    halved = SiteCounts()
    for kind in ["exact", "near", "unique", "exact", "unique", "unique", "unique"]:
        halved.count("s.test", kind, window=4)
    assert halved["s.test"] == [7, 2, 1]
    halved.count("s.test", "near", window=4)  # 8 = 2 * window: all halved
    assert halved["s.test"] == [4, 1, 1]


def test_json_is_the_lists_it_always_was() -> None:
    counts = SiteCounts()
    assert counts.update({"a.test": [3, 1, 0], "b.test": [1, 0, 1]}) is None
    assert orjson.loads(counts.to_json()) == {"a.test": [3, 1, 0], "b.test": [1, 0, 1]}
    assert orjson.loads(counts.to_json({"b.test"})) == {"b.test": [1, 0, 1]}
    assert counts == {"a.test": [3, 1, 0], "b.test": [1, 0, 1]}
    assert dict(counts.items()) == {"a.test": [3, 1, 0], "b.test": [1, 0, 1]}
    # A value that is not three counts is named, and nothing of that read is taken.
    assert counts.update({"c.test": [1, 1, 1], "d.test": [1, -1, 0]}) == "d.test"
    assert counts.update({"e.test": [1, 2]}) == "e.test"
    assert counts.update({"f.test": [1.5, 0, 0]}) == "f.test"
    assert counts.update({"g.test": [2**32, 0, 0]}) == "g.test"
    assert len(counts) == 2


def test_a_damaged_counts_file_is_a_state_error(tmp_path: Path) -> None:
    store = DedupStore(tmp_path)
    store.count_site("a.test", "unique")
    store.commit()
    store.close()
    (tmp_path / "sites.1.json").write_text(json.dumps({"a.test": [1, "x", 0]}))
    with pytest.raises(StateError, match=r"sites\.1\.json: damaged site counts \('a\.test'"):
        DedupStore(tmp_path)


def test_a_window_beyond_the_packed_counts_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="window must be between 1 and"):
        DedupStore(tmp_path, window=MAX_WINDOW + 1)


def test_a_small_site_costs_its_name_and_an_entry() -> None:
    """A crawl's step process keeps every site's counts all run: a site of a few
    pages and no copies costs its name and one dict entry (its packed count is a
    shared small int); as a list of three it was ~80 bytes more."""
    n = 20_000
    counts = SiteCounts()
    gc.collect()
    tracemalloc.start()
    try:
        for i in range(n):
            name = "".join(("site", str(i), ".example.com"))  # a record's own string
            for _ in range(3):
                counts.count(name, "unique", window=1000)
        gc.collect()
        held, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert counts["site7.example.com"] == [3, 0, 0]
    assert held / n < 130, f"{held / n:.0f} bytes a site"
