"""The links step reads a cycle's links a slice at a time (issue 27).

A cycle's links were read as one list: tens of thousands of records whose peak left
the crawl process's allocator holding arenas. The step now holds a slice of them (and
the new URLs), and queues what it queued before.
"""

from __future__ import annotations

import gc
import random
import tracemalloc
from pathlib import Path

import pytest

from crawlkit.crawl import Crawl, CrawlOptions
from crawlkit.crawl import core as core_mod
from crawlkit.crawl import cycle as cycle_mod
from crawlkit.crawl.files import read_file, write_file
from crawlkit.diag import NullReporter
from crawlkit.records import url_record
from crawlkit.state import open_state
from crawlkit.url import Canonicalizer

SLICE = 500
PAGES = 400
LINKS_A_PAGE = 40  # 16,000 links, 32 slices
TARGETS = 300  # the distinct URLs they point at: most links repeat one


def _links() -> list[dict]:
    """Links with an anchor text each, so the file compresses as real ones do (~7x,
    not the ~100x of repeats: a decoded chunk of the file is part of the peak)."""
    canon = Canonicalizer()
    rng = random.Random(5)
    out = []
    for page in range(PAGES):
        source = f"http://s{page % 20}.test/p{page}"
        for k in range(LINKS_A_PAGE):
            target = (page * 7 + k * 13) % TARGETS
            url = f"http://s{target % 25}.test/t{target}"
            record = url_record(canon.parse(url), depth=1, reason="link")
            out.append({**record, "from": source, "text": f"{rng.getrandbits(64):x}"})
    return out


def test_the_links_step_holds_a_slice_and_queues_each_new_url_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(cycle_mod, "MERGE_CHUNK", SLICE)
    monkeypatch.setattr(core_mod, "MERGE_CHUNK", SLICE)
    links = _links()
    first_seen = list(dict.fromkeys(r["url"] for r in links))
    options = CrawlOptions(scope="any", budgets=False)
    with open_state(tmp_path / "s") as state:
        run = Crawl(state, options, reporter=NullReporter())
        try:
            cycle = run.dir.new_cycle()
            (cycle / "fetch.ndjson").write_bytes(b"")
            write_file(cycle / "links.ndjson.zst", links)
            del links
            gc.collect()
            tracemalloc.start()
            try:
                held = list(read_file(cycle / "links.ndjson.zst"))
                whole = tracemalloc.get_traced_memory()[0]
                del held
                tracemalloc.reset_peak()
                base = tracemalloc.get_traced_memory()[0]
                run.cycles.links(cycle)
                peak = tracemalloc.get_traced_memory()[1] - base
            finally:
                tracemalloc.stop()
            new = [r["url"] for r in read_file(cycle / "new-1.ndjson.zst")]
            queued = run.stores.frontier.queued()
            sites = run.stores.frontier.sites.sites
            linked = {s: set(sites[s].linkers or ()) for s in (f"s{t}.test" for t in range(25))}
        finally:
            run.close()
    # the list of all the links costs several times what the step held at its peak
    assert peak < whole / 3, (peak, whole)
    # each new URL once, in the order first met, and all of them queued
    assert new == first_seen and len(new) == TARGETS
    assert queued == TARGETS
    # the site graph learned every link, not only those of the last slice
    expected: dict[str, set[str]] = {s: set() for s in linked}
    for page in range(PAGES):
        for k in range(LINKS_A_PAGE):
            target = (page * 7 + k * 13) % TARGETS
            site, source = f"s{target % 25}.test", f"s{page % 20}.test"
            if site != source:
                expected[site].add(source)
    assert linked == expected
