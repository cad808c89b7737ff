"""Benchmark the frontier's share of one crawl cycle: next, the adds and their commits.

Run on demand (never in CI), against this checkout or another copy of the library:

    .venv/bin/python bench/bench_frontier_cycle.py
    PYTHONPATH=/tmp/base bench/../.venv/bin/python bench/bench_frontier_cycle.py  # an older copy

It replays the calls ``crawlkit crawl`` makes on its frontier per cycle of ~500
pages (see ``crawlkit/crawl/feed.py`` and ``crawlkit/crawl/cycle.py``), each through
the stage function the crawl calls, each committing as the crawl does:

1. ``take_batch`` (``apply_commands``, ``next`` of 500 URLs, ``commit``);
2. ``links_to``: the cycle's link records feed the site graph (``note_links``, commit);
3. ``add_to`` of dedup's site records (a ``yield`` per site seen in the cycle);
4. ``add_to`` of ~500 new link records, mostly new URLs spread over known and new sites;
5. ``add_to`` of ~50 recrawl records.

on a real state directory under /tmp (fsyncs included), starting from a frontier of
``--sites`` sites (one host each, ~15 queued URLs, a few linkers each). Prints the CPU
seconds (``time.process_time``) per cycle, the median of ``--repeat`` runs, with the
share of each step; wall time is printed too but depends on the disk and the neighbours.
"""

from __future__ import annotations

import argparse
import random
import shutil
import statistics
import tempfile
import time
from pathlib import Path

import crawlkit
from crawlkit.frontier.store import Frontier, NextOptions
from crawlkit.stages.frontier import add_to, links_to, take_batch
from crawlkit.url import fingerprint

STEPS = ("next", "links", "sites", "add", "recrawl")


class Web:
    """A deterministic synthetic web: site i has host www.site<i>.test."""

    def __init__(self, seed: int):
        self.rng = random.Random(seed)
        self.counter = 0

    @staticmethod
    def host(site: int) -> str:
        return f"www.site{site}.test"

    def link(self, site: int, from_site: int, reason: str = "link") -> dict[str, object]:
        self.counter += 1
        host = self.host(site)
        url = f"http://{host}/p/{self.counter}.html"
        return {
            "url": url,
            "host": host,
            "site": f"site{site}.test",
            "fp": fingerprint(url),
            "depth": 1 + self.counter % 4,
            "priority": 0.5,
            "reason": reason,
            "from": f"http://{self.host(from_site)}/p/{self.counter - 1}.html",
            "nofollow": False,
        }


def build(directory: Path, sites: int, web: Web) -> None:
    """A frontier of ``sites`` sites, ~15 URLs each, 5 seeds, a few linkers a site."""
    frontier = Frontier.open(directory)
    seeds = [web.link(i, i, reason="seed") for i in range(5)]
    add_to(frontier, seeds, on_refused=lambda r: None)
    records = []
    for site in range(sites):
        for _ in range(15):
            records.append(web.link(site, web.rng.randrange(sites)))
    web.rng.shuffle(records)
    add_to(frontier, records, on_refused=lambda r: None)


def cycle(frontier: Frontier, web: Web, sites: int, new_sites: int, spent: dict[str, float]) -> int:
    """One crawl cycle's frontier calls; returns the URLs handed out."""
    rng = web.rng
    handed: list[bytes] = []
    t = time.process_time()
    take_batch(
        frontier,
        NextOptions(max_urls=500, per_host=10, budgets=True),
        write=lambda batch: handed.extend(batch.lines),
    )
    t, spent["next"] = time.process_time(), spent["next"] + time.process_time() - t

    known = sites + new_sites
    links = [web.link(rng.randrange(known), rng.randrange(known)) for _ in range(500)]
    links_to(frontier, links)
    t, spent["links"] = time.process_time(), spent["links"] + time.process_time() - t

    touched = sorted({rng.randrange(known) for _ in range(30)})
    site_recs = [{"site": f"site{s}.test", "pages": 10, "yield": 0.1} for s in touched]
    add_to(frontier, site_recs, on_refused=lambda r: None)
    t, spent["sites"] = time.process_time(), spent["sites"] + time.process_time() - t

    # ~500 new URLs, 9 in 10 on known sites, 1 in 10 on sites never seen before
    new = []
    for _ in range(500):
        site = known + len(new) % 50 if rng.random() < 0.1 else rng.randrange(known)
        new.append(web.link(site, rng.randrange(known)))
    add_to(frontier, new, on_refused=lambda r: None)
    t, spent["add"] = time.process_time(), spent["add"] + time.process_time() - t

    recrawls = []
    for _ in range(50):
        rec = web.link(rng.randrange(known), rng.randrange(known), reason="recrawl")
        rec["due"] = "2020-01-01T00:00:00Z"
        rec["interval"] = 86400
        recrawls.append(rec)
    add_to(frontier, recrawls, on_refused=lambda r: None)
    spent["recrawl"] += time.process_time() - t
    return len(handed)


def run(tmp: Path, sites: int, cycles: int, seed: int) -> tuple[dict[str, float], float, int]:
    directory = tmp / "frontier"
    shutil.rmtree(directory, ignore_errors=True)
    web = Web(seed)
    build(directory, sites, web)
    frontier = Frontier.open(directory)  # as the crawl does: open once, keep it open
    spent = dict.fromkeys(STEPS, 0.0)
    wall = time.perf_counter()
    handed = 0
    new_sites = 0
    for _ in range(cycles):
        handed += cycle(frontier, web, sites, new_sites, spent)
        new_sites += 50
    return spent, time.perf_counter() - wall, handed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sites", type=int, default=2000)
    parser.add_argument("--cycles", type=int, default=60)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    runs = []
    with tempfile.TemporaryDirectory(prefix="bench-frontier-cycle-") as tmpdir:
        for _ in range(args.repeat):
            runs.append(run(Path(tmpdir), args.sites, args.cycles, args.seed))
    totals = [sum(spent.values()) for spent, _, _ in runs]
    median_run = runs[totals.index(statistics.median_low(totals))]
    per_cycle = statistics.median(totals) / args.cycles
    print(f"library: {Path(crawlkit.__file__).parent}")
    print(
        f"{args.cycles} cycles x {args.repeat} runs, {args.sites} sites at start, "
        f"{median_run[2]} URLs handed out"
    )
    print(f"CPU per cycle (median of {args.repeat}): {per_cycle * 1000:.2f} ms")
    print("runs (CPU s): " + ", ".join(f"{t:.3f}" for t in totals))
    spent = median_run[0]
    print(
        "per step (median run, ms/cycle): "
        + ", ".join(f"{k} {v / args.cycles * 1000:.2f}" for k, v in spent.items())
    )
    print(f"wall per cycle (median run): {median_run[1] / args.cycles * 1000:.2f} ms")


if __name__ == "__main__":
    main()
