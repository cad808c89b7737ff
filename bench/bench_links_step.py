"""Benchmark: the crawl's links step, CPU a cycle and peak traced bytes.

Run on demand (never in CI):

    .venv/bin/python bench/bench_links_step.py [--cycles 12] [--pages 500] [--links 25]

Builds a crawl state (`Crawl`, budgets off) and runs `run.cycles.links` on --cycles
cycles of --pages pages x --links links each (most links point at a few "nav" URLs
per host that repeat across pages and cycles, the rest at pages never seen; each link
with an anchor text, so the files compress about as real ones do). Reports the median
CPU seconds a step from the third cycle on and, with --trace, the step's peak traced
bytes above its start (tracemalloc: slower, so CPU figures are not comparable).

A/B a checkout: run it once as is and once with PYTHONPATH=<worktree of the other
tree>; --chunk sets MERGE_CHUNK (the slice a cycle's links are read in) where the
tree has it.
"""

from __future__ import annotations

import argparse
import gc
import random
import statistics
import tempfile
import time
import tracemalloc
from pathlib import Path
from typing import Any

from crawlkit.crawl import Crawl, CrawlOptions
from crawlkit.crawl import core as core_mod
from crawlkit.crawl import cycle as cycle_mod
from crawlkit.crawl.files import write_file
from crawlkit.diag import NullReporter
from crawlkit.records import url_record
from crawlkit.state import open_state
from crawlkit.url import Canonicalizer

NAV = 15  # of each page's links, this many go to nav URLs (seen after the first cycles)


def cycle_links(
    cycle: int, pages: int, links: int, rng: random.Random, hosts: int = 3000
) -> list[dict[str, Any]]:
    canon = Canonicalizer()
    out = []
    for _ in range(pages):
        source = f"http://www.h{rng.randrange(hosts)}.test/p{rng.randrange(20)}"
        for k in range(links):
            host = f"www.h{rng.randrange(hosts)}.test"
            if k < NAV:
                url = f"http://{host}/nav{k}"
            else:
                url = f"http://{host}/c{cycle}/p{rng.randrange(10**6)}"
            record = url_record(canon.parse(url), depth=2, reason="link")
            out.append({**record, "from": source, "text": f"{rng.getrandbits(40):x}"})
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cycles", type=int, default=12)
    ap.add_argument("--pages", type=int, default=500, help="pages a cycle")
    ap.add_argument("--links", type=int, default=25, help="links a page")
    ap.add_argument("--chunk", type=int, default=None, help="MERGE_CHUNK (default: the tree's)")
    ap.add_argument("--trace", action="store_true", help="peak traced bytes (slower)")
    ap.add_argument("--hosts", type=int, default=3000, help="hosts the links point at")
    ap.add_argument(
        "--series", type=int, default=0, help="print CPU and wall a step every N cycles"
    )
    args = ap.parse_args()
    if args.chunk is not None:
        cycle_mod.MERGE_CHUNK = core_mod.MERGE_CHUNK = args.chunk  # type: ignore[attr-defined]
    rng = random.Random(3)
    cpu: list[float] = []
    wall: list[float] = []
    peaks: list[int] = []
    with tempfile.TemporaryDirectory() as tmp, open_state(Path(tmp) / "s") as state:
        run = Crawl(state, CrawlOptions(scope="any", budgets=False), reporter=NullReporter())
        try:
            for number in range(args.cycles):
                links = cycle_links(number, args.pages, args.links, rng, args.hosts)
                cycle = run.dir.new_cycle()
                (cycle / "fetch.ndjson").write_bytes(b"")
                write_file(cycle / "links.ndjson.zst", links)
                gc.collect()
                if args.trace:
                    tracemalloc.start()
                    base = tracemalloc.get_traced_memory()[0]
                start, start_wall = time.process_time(), time.perf_counter()
                run.cycles.links(cycle)
                cpu.append(time.process_time() - start)
                wall.append(time.perf_counter() - start_wall)
                if args.series and (number + 1) % args.series == 0:
                    window = slice(number + 1 - args.series, number + 1)
                    print(
                        f"  cycles {window.start + 1}-{window.stop}: CPU s a step "
                        f"{statistics.median(cpu[window]):.4f}, wall "
                        f"{statistics.median(wall[window]):.4f}",
                        flush=True,
                    )
                if args.trace:
                    peaks.append(tracemalloc.get_traced_memory()[1] - base)
                    tracemalloc.stop()
        finally:
            run.close()
    chunk = getattr(core_mod, "MERGE_CHUNK", "none (one list)")
    print(f"{args.cycles} cycles of {args.pages * args.links:,} links, MERGE_CHUNK {chunk}")
    print(f"  CPU s a links step, median from the third cycle: {statistics.median(cpu[2:]):.4f}")
    if peaks:
        peak = statistics.median(peaks) / 1e6
        print(f"  peak traced MB above the step's start, median: {peak:.2f}")


if __name__ == "__main__":
    main()
