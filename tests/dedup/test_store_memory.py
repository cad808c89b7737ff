"""What the dedup store holds in memory per stored page (issue 27: a crawl's step process
keeps the store open all run, so every byte a page costs here grows with the crawl)."""

from __future__ import annotations

import gc
import random
import tracemalloc
from pathlib import Path

import numpy as np

from crawlkit.dedup.store import DedupStore

PAGES = 60_000


def _fill(directory: Path, pages: int) -> None:
    rng = random.Random(7)
    store = DedupStore(directory)
    try:
        for i in range(pages):
            sh, d64, ufp = rng.getrandbits(64), rng.getrandbits(64) | 1, rng.getrandbits(64)
            store.add(sh, d64, ufp, f"http://h{i % 500}.example.test/p{i}", True)
        store.seal_batch(0)
        store.commit()
    finally:
        store.close()


def test_an_open_store_holds_only_what_lookups_read(tmp_path: Path) -> None:
    """The simhash, the URL's fingerprint and the flags stay in memory (17 bytes a page,
    room for as many again reserved); the digest, URL offset and length are read back
    from pages.bin when a duplicate is named. All six columns held: ~99 bytes a page."""
    _fill(tmp_path, PAGES)
    gc.collect()
    tracemalloc.start()
    try:
        store = DedupStore(tmp_path)
        gc.collect()
        held, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    try:
        # 2 x 17 (columns and their room) + 12 (the exact index) + directories
        assert held / PAGES < 70, f"{held / PAGES:.0f} bytes a page"
        assert len(store.near) > 0  # the near index is there (mapped from its snapshot)
    finally:
        store.close()


def test_urls_are_named_from_disk_and_from_the_batch_not_yet_committed(tmp_path: Path) -> None:
    _fill(tmp_path, 1000)
    store = DedupStore(tmp_path)
    try:
        assert store.url_of(0) == "http://h0.example.test/p0"
        assert store.url_of(999) == "http://h499.example.test/p999"
        new = store.add(1, 2, 3, "http://new.example.test/ünï", False)
        assert store.url_of(new) == "http://new.example.test/ünï"  # before the commit
        assert store.exact_lookup(np.array([2], "uint64"))[0] == -1
        store.seal_batch(new)
        store.commit()
        assert store.url_of(new) == "http://new.example.test/ünï"  # and after it
        assert store.url_of(998) == "http://h498.example.test/p998"
    finally:
        store.close()
    reopened = DedupStore(tmp_path)
    try:
        assert reopened.url_of(new) == "http://new.example.test/ünï"
        assert int(reopened.exact_lookup(np.array([2], "uint64"))[0]) == new
    finally:
        reopened.close()
