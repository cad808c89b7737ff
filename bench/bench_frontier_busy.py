"""Benchmark: a batch's cost when most queued URLs belong to hosts at --per-host.

Run on demand (never in CI):

    .venv/bin/python bench/bench_frontier_busy.py [--repeat 30]

A crawl's fetcher holds up to ``--per-host`` URLs of a host unanswered (``outstanding``
in :class:`~crawlkit.frontier.store.NextOptions`); a batch cannot give such a host
more, so the picker rotates its queued records to the tail. On a one-site crawl, or
a web of hosts with a Crawl-delay, most of the queue is such records. For each shape
(queued URLs, hosts, the share of hosts busy) this queues the URLs, then takes
``--repeat`` batches of 1,000 with the same hosts busy (budgets on, as ``crawl`` runs
by default, each site's budget too large to park a URL here, and off), and reports
the median CPU ms a batch (commit included), the URLs it gave and the records it read
from the queue heads. Busy hosts never run out of records; the free ones may, after
which a batch has nothing to give (a fetcher still asks while it waits on the busy
hosts).

A/B a tree: run it once as is and once with PYTHONPATH=<worktree of the other tree>.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from bench_frontier import records

from crawlkit.frontier import queues as queues_mod
from crawlkit.frontier.budgets import BudgetPolicy
from crawlkit.frontier.store import Frontier, NextOptions

# Budgets on, each site's large enough that the batches here never park a URL: what
# is measured is the picking, not the parking.
ROOMY = BudgetPolicy(base=10**7)

SHAPES = (
    # (queued URLs, hosts, share of the hosts busy)
    (30_000, 900, 0.0),
    (30_000, 900, 0.5),
    (30_000, 900, 0.9),
    (30_000, 1, 0.0),
    (100_000, 1, 0.0),
)


def one_shape(n: int, hosts: int, busy_share: float, budgets: bool, repeat: int) -> str:
    names = sorted({r["host"] for r in records(hosts, hosts=hosts)})
    busy = {h: 10 for h in names[: int(len(names) * busy_share)]}
    read = 0
    take = queues_mod.SegmentQueue.take

    def counting_take(self: Any, k: int) -> list[bytes]:
        nonlocal read
        out = take(self, k)
        read += len(out)
        return out

    cpu: list[float] = []
    given = 0
    with tempfile.TemporaryDirectory() as tmp:
        frontier = Frontier.open(Path(tmp), policy=ROOMY)
        frontier.add_records(records(n, hosts=hosts), on_refused=lambda _r: None)
        frontier.commit()
        opts = NextOptions(max_urls=1000, per_host=10, budgets=budgets, outstanding=busy)
        queues_mod.SegmentQueue.take = counting_take  # type: ignore[method-assign]
        try:
            for _ in range(repeat):
                start = time.process_time()
                batch = frontier.next(opts)
                frontier.commit()
                cpu.append(time.process_time() - start)
                given += len(batch.lines)
        finally:
            queues_mod.SegmentQueue.take = take  # type: ignore[method-assign]
    return (
        f"{n:>8,} URLs {hosts:>4} hosts {busy_share:>4.0%} busy,"
        f" budgets {'on ' if budgets else 'off'}:"
        f" {statistics.median(cpu) * 1000:6.1f} ms a batch, {given / repeat:6.0f} URLs,"
        f" {read / repeat:7.0f} records read"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=30, help="batches a shape")
    args = ap.parse_args()
    for budgets in (True, False):
        for n, hosts, share in SHAPES:
            print(one_shape(n, hosts, share, budgets, args.repeat), flush=True)


if __name__ == "__main__":
    main()
