"""Benchmark the frontier: add and next throughput on one core, and memory at 10M URLs.

Run on demand:

    .venv/bin/python bench/bench_frontier.py            # ~1 minute
    .venv/bin/python bench/bench_frontier.py --big      # + 10M queued URLs (a few minutes)

Figures are medians of --repeat runs, in URLs per CPU-second of this single-threaded
process (``time.process_time``: "on one core" even when other work shares the
machine) and in URLs per wall-clock second (which also pays for fsync and for the
neighbours).

* add, library: URL records (dicts with fp/site/host, as seen-merge writes them) into
  ``Frontier.add_records`` and a commit, in URLs/s; goal >= 100,000.
* add, end to end: the same from an NDJSON file through ``read_records`` (parsing
  included), as ``crawlkit frontier add FILE`` does after start-up.
* baseline: orjson parse + serialize of the same lines, the floor any NDJSON stage
  pays; the ratio says how much the frontier adds on top.
* next: batches of 20,000 (``--per-host 10``) from a frontier holding the added
  URLs, in URLs/s including the commit; goal >= 20,000.
* --big: a child process queues 10,000,000 URLs (100,000 hosts on 50,000 sites),
  then takes two batches; its peak RSS (VmHWM) must stay under 1 GiB.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import orjson

from crawlkit.frontier.store import Frontier, NextOptions
from crawlkit.streams import read_records
from crawlkit.url import fingerprint

NOW = 1_780_000_000.0


def records(n: int, hosts: int = 20_000, start: int = 0) -> Iterator[dict]:
    for i in range(start, start + n):
        h = i % hosts
        host = f"www{h % 2}.site{h // 2}.example"
        url = f"https://{host}/section{i % 7}/page{i}.html"
        yield {
            "url": url,
            "host": host,
            "site": f"site{h // 2}.example",
            "fp": fingerprint(url),
            "depth": 1 + i % 4,
            "reason": "link",
            "from": f"https://www0.site{(h + 1) // 2}.example/",
        }


def peak_rss_mib() -> float:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return float("nan")


class Clock:
    """CPU time of this process and wall time, started together."""

    def __init__(self) -> None:
        self.cpu = time.process_time()
        self.wall = time.perf_counter()

    def rates(self, n: int) -> tuple[float, float]:
        """(URLs per CPU-second, URLs per wall-second) since start."""
        cpu = time.process_time() - self.cpu
        wall = time.perf_counter() - self.wall
        return n / max(cpu, 1e-9), n / max(wall, 1e-9)


def bench_add_library(n: int, tmp: Path) -> float:
    recs = list(records(n))
    directory = tmp / "lib"
    shutil.rmtree(directory, ignore_errors=True)
    frontier = Frontier.open(directory)
    clock = Clock()
    frontier.add_records(recs, now=NOW, on_refused=lambda r: None)
    frontier.commit()
    return clock.rates(n)


def bench_add_file(path: Path, n: int, tmp: Path) -> float:
    directory = tmp / "file"
    shutil.rmtree(directory, ignore_errors=True)
    frontier = Frontier.open(directory)
    clock = Clock()
    frontier.add_records(read_records([path]), now=NOW, on_refused=lambda r: None)
    frontier.commit()
    return clock.rates(n)


def bench_baseline(path: Path, n: int) -> float:
    clock = Clock()
    out = bytearray()
    for rec in read_records([path]):
        rec["priority"] = 2
        out += orjson.dumps(rec, option=orjson.OPT_APPEND_NEWLINE)
    return clock.rates(n)


def bench_next(directory: Path, batches: int, size: int) -> list[tuple[float, float]]:
    rates = []
    for _ in range(batches):
        frontier = Frontier.open(directory)
        clock = Clock()
        batch = frontier.next(NextOptions(max_urls=size, per_host=10, budgets=False, now=NOW))
        frontier.commit()
        if not batch.lines:
            break
        rates.append(clock.rates(len(batch.lines)))
    return rates


def big_child(n: int, directory: str) -> None:
    """Queue n URLs in chunks of 1M (each its own add + commit), then take two batches."""
    clock = Clock()
    chunk = 1_000_000
    for start in range(0, n, chunk):
        frontier = Frontier.open(Path(directory))
        frontier.add_records(
            records(min(chunk, n - start), hosts=100_000, start=start),
            now=NOW,
            on_refused=lambda r: None,
        )
        frontier.commit()
        del frontier
    add_cpu, add_wall = clock.rates(n)
    frontier = Frontier.open(Path(directory))
    queued = frontier.stats()["queued"]
    clock = Clock()
    taken = 0
    for _ in range(2):
        batch = frontier.next(NextOptions(max_urls=20_000, per_host=10, budgets=False, now=NOW))
        frontier.commit()
        taken += len(batch.lines)
    next_cpu, next_wall = clock.rates(taken)
    print(
        orjson.dumps(
            {
                "queued": queued,
                "add_per_cpu_s": round(add_cpu),
                "add_per_wall_s": round(add_wall),
                "next_per_cpu_s": round(next_cpu),
                "next_per_wall_s": round(next_wall),
                "peak_rss_mib": round(peak_rss_mib(), 1),
                "disk_mib": round(
                    sum(p.stat().st_size for p in Path(directory).iterdir()) / 2**20, 1
                ),
            }
        ).decode()
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n", type=int, default=200_000, help="URLs per add run")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--big", action="store_true", help="also queue 10M URLs in a child")
    parser.add_argument("--big-n", type=int, default=10_000_000)
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        big_child(args.big_n, args.child)
        return
    with tempfile.TemporaryDirectory(prefix="bench-frontier-") as tmpdir:
        tmp = Path(tmpdir)
        path = tmp / "urls.ndjson"
        with open(path, "wb") as f:
            for rec in records(args.n):
                f.write(orjson.dumps(rec, option=orjson.OPT_APPEND_NEWLINE))
        lib = [bench_add_library(args.n, tmp) for _ in range(args.repeat)]
        end = [bench_add_file(path, args.n, tmp) for _ in range(args.repeat)]
        base = [bench_baseline(path, args.n) for _ in range(args.repeat)]
        nxt = bench_next(tmp / "file", batches=max(3, args.repeat), size=20_000)

        def show(label: str, runs: list[tuple[float, float]], goal: str = "") -> None:
            cpu = statistics.median(r[0] for r in runs)
            wall = statistics.median(r[1] for r in runs)
            print(f"{label:<22}{cpu:>10,.0f} URLs/CPU-s {wall:>10,.0f} URLs/wall-s  {goal}")

        show("add, library", lib, "(goal 100,000)")
        show("add, from NDJSON", end)
        show("baseline parse+dumps", base)
        ratio = statistics.median(r[0] for r in base) / statistics.median(r[0] for r in end)
        print(f"add from NDJSON costs {ratio:.2f}x the CPU of parse+dumps alone")
        show("next, 20k batches", nxt, "(goal 20,000)")
        if args.big:
            child = subprocess.run(
                [sys.executable, __file__, "--child", str(tmp / "big"), "--big-n", str(args.big_n)],
                capture_output=True,
                text=True,
                check=True,
                env={**os.environ},
            )
            big = orjson.loads(child.stdout.strip().splitlines()[-1])
            print(
                f"big: {big['queued']:,} queued; add {big['add_per_cpu_s']:,}/CPU-s "
                f"({big['add_per_wall_s']:,}/wall-s), next {big['next_per_cpu_s']:,}/CPU-s "
                f"({big['next_per_wall_s']:,}/wall-s); peak RSS {big['peak_rss_mib']} MiB "
                "(goal < 1024); "
                f"{big['disk_mib']} MiB on disk"
            )


if __name__ == "__main__":
    main()
