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

``--cycle N[,N...]`` measures instead what ``crawlkit crawl`` pays each cycle: a
history of N URLs (written directly, with rates and due times spread as a long crawl
leaves them), opened once, then ``--rounds`` cycles of ``--records`` fetch records
(half refetches, half new URLs) through ``recrawl_in`` a second apart, as the crawl's
recrawl step calls it; it reports the median ms per cycle for each N::

    nice env PYTHONPATH=/tmp/old .venv/bin/python bench/bench_recrawl_stage.py \
        --cycle 10000,100000,1000000
"""

from __future__ import annotations

import argparse
import hashlib
import json
import statistics
import tempfile
import time
from email.utils import formatdate
from pathlib import Path

import numpy as np

import crawlkit
from crawlkit.recrawl import Entry, History, RecrawlPolicy
from crawlkit.recrawl.policy import solve
from crawlkit.stages.recrawl import recrawl, recrawl_in
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
    ap.add_argument("--cycle", help="history sizes (comma-separated): ms per crawl cycle")
    ap.add_argument("--records", type=int, default=500, help="fetch records per cycle")
    ap.add_argument("--step", type=float, default=1.0, help="seconds between cycles")
    ap.add_argument("--hold", type=float, default=0.0, help="recrawl_in's hold_mu (seconds)")
    ap.add_argument("--urls-out", type=Path, help="write the URLs emitted (--cycle) here")
    args = ap.parse_args()
    if args.cycle:
        print(f"crawlkit from {Path(crawlkit.__file__).parent}")
        for n in (int(v) for v in args.cycle.split(",")):
            cycles(n, args)
        return
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


def cycles(n: int, args: argparse.Namespace) -> None:
    """Median ms of one crawl cycle's recrawl step on a history of ``n`` URLs."""
    rng = np.random.default_rng(args.seed)
    hosts = args.hosts
    rate = np.exp(-rng.uniform(np.log(3600), np.log(365 * DAY), n))
    importance = np.arange(n) % 4
    weights = np.array(RecrawlPolicy().weights)[importance]
    # The intervals the plan solves for (one visit a URL a day), due times spread over
    # an interval: a crawl that has run a while, with a trickle of URLs due each second.
    interval = solve(rate, weights, n / DAY, tau_min=3600, tau_max=90 * DAY)[1]
    last = EPOCH - rng.uniform(0, 1, n) * interval
    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        history = History(Path(tmp) / "recrawl")
        for lo in range(0, n, 100_000):
            history.put(
                [
                    Entry(
                        fp=i + 1,
                        url=f"https://h{i % hosts}.test/p{i}",
                        host=f"h{i % hosts}.test",
                        site=f"h{i % hosts}.test",
                        importance=int(importance[i]),
                        last_fetch=float(last[i]),
                        last_event=float(last[i]),
                        outcome="fetched",
                        status=200,
                        digest=f"sha1:{i}",
                        interval=float(interval[i]),
                        checks=1 + i % 5,
                        due=float(last[i] + interval[i]),
                        rate=float(rate[i]),
                        observed=float(last[i]),
                        spread=1.0,
                    )
                    for i in range(lo, min(n, lo + 100_000))
                ]
            )
        history.commit()
        built = time.perf_counter() - t0
        times, emitted, fresh = [], 0, n
        digest = hashlib.sha256()
        urls: set[str] = set()
        for r in range(args.rounds + 1):
            now = EPOCH + r * args.step
            recs: list[Record] = []
            for k in range(args.records):
                if k % 2:
                    i, fresh = fresh, fresh + 1
                else:
                    i = int(rng.integers(n))
                recs.append(
                    {
                        "url": f"https://h{i % hosts}.test/p{i}",
                        "status": 200,
                        "outcome": "fetched",
                        "fetched_at": now - 0.5,
                        "digest": f"sha1:{i}-{r}",
                    }
                )
            out: list[Record] = []
            t0 = time.perf_counter()
            hold = {"hold_mu": args.hold} if args.hold else {}  # (older crawlkit: none)
            recrawl_in(
                history,
                [("c", k, rec) for k, rec in enumerate(recs)],
                write=out.extend,
                now=now,
                **hold,
            )
            if r:  # the first cycle reads the history: a crawl pays it once
                times.append(time.perf_counter() - t0)
            emitted += len(out)
            digest.update(json.dumps(out, sort_keys=True).encode())
            urls.update(str(rec["url"]) for rec in out)
        history.close()
    if args.urls_out:
        args.urls_out.write_text("".join(u + "\n" for u in sorted(urls)))
    print(
        f"{n} URLs ({built:.1f} s to write): {statistics.median(times) * 1000:.0f} ms a cycle "
        f"of {args.records} records (median of {args.rounds}; {emitted} emitted, "
        f"output sha256 {digest.hexdigest()[:12]}, URLs {len(urls)} sha256 "
        f"{hashlib.sha256(' '.join(sorted(urls)).encode()).hexdigest()[:12]})"
    )


if __name__ == "__main__":
    main()
