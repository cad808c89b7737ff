"""The recrawl stage on a big history: how long one ``crawlkit recrawl`` run takes.

Builds a history of ``--urls`` URLs on ``--hosts`` hosts through the real stage
(``crawlkit.stages.recrawl.recrawl``, what the command runs): a first run with every
URL's first fetch, then ``--rounds`` runs that each feed ``--batch`` refetches (a
changed or unchanged digest, some with Last-Modified) and emit ``--max-urls``. It
reports the seconds of the first run and the median of the others, and of a run
with no input (the plan alone). Compare two versions of the code in one run with
``PYTHONPATH``::

    git archive HEAD crawlkit | tar -x -C /tmp/old
    nice env PYTHONPATH=/tmp/old .venv/bin/python bench/bench_recrawl_stage.py
    nice .venv/bin/python bench/bench_recrawl_stage.py
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from email.utils import formatdate
from pathlib import Path

import numpy as np

import crawlkit
from crawlkit.stages.recrawl import recrawl
from crawlkit.streams import Record

EPOCH = 1_780_000_000.0
DAY = 86400.0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--urls", type=int, default=100_000)
    ap.add_argument("--hosts", type=int, default=500)
    ap.add_argument("--batch", type=int, default=10_000, help="refetches fed per run")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--max-urls", type=int, default=10_000)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    rng = np.random.default_rng(args.seed)
    urls = [f"https://h{i % args.hosts}.test/p{i}" for i in range(args.urls)]
    lm = rng.random(args.urls) < 0.3
    rate = np.exp(-rng.uniform(np.log(3600), np.log(365 * DAY), args.urls))
    version = np.zeros(args.urls, np.int64)
    print(f"crawlkit from {Path(crawlkit.__file__).parent}")

    def fetch(i: int, at: float) -> Record:
        rec: Record = {
            "url": urls[i],
            "status": 200,
            "outcome": "fetched",
            "fetched_at": EPOCH + at,
            "digest": f"sha1:{i}-{version[i]}",
        }
        if lm[i]:
            rec["last_modified"] = formatdate(EPOCH + at - 0.5 / rate[i], usegmt=True)
        return rec

    with tempfile.TemporaryDirectory() as tmp:
        state = Path(tmp)
        out: list[Record] = []
        t0 = time.perf_counter()
        recrawl(
            state,
            [("b", k, fetch(i, 0.0)) for k, i in enumerate(range(args.urls))],
            write=out.extend,
            now=EPOCH,
            max_urls=args.max_urls,
        )
        first = time.perf_counter() - t0
        times = []
        for r in range(1, args.rounds + 1):
            at = r * DAY
            pages = rng.choice(args.urls, args.batch, replace=False)
            version[pages] += rng.random(args.batch) < -np.expm1(-rate[pages] * DAY)
            lines = [("b", k, fetch(int(i), at)) for k, i in enumerate(pages)]
            t0 = time.perf_counter()
            recrawl(state, lines, write=out.extend, now=EPOCH + at, max_urls=args.max_urls)
            times.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        recrawl(
            state, [], write=out.extend, now=EPOCH + (args.rounds + 1) * DAY, max_urls=args.max_urls
        )
        plan_only = time.perf_counter() - t0
    print(
        f"{args.urls} URLs: first run {first:.2f} s; a run with {args.batch} refetches "
        f"{statistics.median(times):.2f} s (median of {args.rounds}); "
        f"no input (the plan alone) {plan_only:.2f} s"
    )


if __name__ == "__main__":
    main()
