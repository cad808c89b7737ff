"""Benchmark: `crawlkit canon --json` throughput against a bare loop of the parser.

Run on demand (never in CI):  .venv/bin/python bench/bench_canon.py [--urls 1000000]

Generates realistic URLs (mixed case hosts, default ports, dot segments, tracking
parameters, session ids, IDN, relative references), then measures, in the same run:

* baseline: a bare loop of ada_url.normalize_url over the same strings;
* library: Canonicalizer.parse + one orjson record per URL (what --json does);
* command: the real `crawlkit canon --json` process over a file, wall clock.

Reports URLs/s (median of --repeat runs) and the ratio to the baseline.
"""

from __future__ import annotations

import argparse
import contextlib
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import ada_url
import orjson

from crawlkit.url import Canonicalizer

WORDS = ["news", "blog", "shop", "item", "2026", "index.html", "a", "b", "c", "media", "img"]
TLDS = ["com", "co.uk", "de", "org", "net", "blogspot.com", "com.au", "fr", "jp", "io"]


def make_urls(n: int, seed: int = 1) -> list[str]:
    rnd = random.Random(seed)
    urls = []
    for _ in range(n):
        prefix = rnd.choice(["www.", "", "M.", "news."])
        host = f"{prefix}site{rnd.randrange(50000)}.{rnd.choice(TLDS)}"
        if rnd.random() < 0.02:
            host = f"bücher{rnd.randrange(100)}.de"
        path = "/".join(rnd.choice(WORDS) for _ in range(rnd.randrange(1, 6)))
        if rnd.random() < 0.1:
            path += "/../" + rnd.choice(WORDS)
        query = "&".join(
            f"{rnd.choice('qpxyzid')}={rnd.randrange(1000)}" for _ in range(rnd.randrange(0, 4))
        )
        if rnd.random() < 0.2:
            query += "&utm_source=newsletter&utm_medium=email"
        if rnd.random() < 0.05:
            query += "&PHPSESSID=" + f"{rnd.getrandbits(128):032x}"
        scheme = rnd.choice(["http", "https", "HTTPS"])
        port = rnd.choice(["", "", "", ":80", ":443", ":8080"])
        frag = "#sec" if rnd.random() < 0.1 else ""
        urls.append(f"{scheme}://{host}{port}/{path}" + (f"?{query}" if query else "") + frag)
    return urls


def timed(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--urls", type=int, default=1_000_000)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    urls = make_urls(args.urls)
    canon = Canonicalizer()

    def baseline() -> None:
        for u in urls:
            with contextlib.suppress(ValueError):
                ada_url.normalize_url(u)

    def library() -> None:
        dumps = orjson.dumps
        for u in urls:
            p = canon.parse(u)
            dumps(
                {
                    "input": u,
                    "url": p.url,
                    "host": p.host,
                    "site": p.site,
                    "fp": p.fp,
                    "error": None,
                }
            )

    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / "urls.txt"
        src.write_text("\n".join(urls) + "\n")

        def command() -> None:
            subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "crawlkit",
                    "canon",
                    "--json",
                    str(src),
                    "-o",
                    str(Path(tmp) / "out.ndjson"),
                ],
                check=True,
            )

        results = {}
        for name, fn in [
            ("baseline ada normalize_url", baseline),
            ("library parse+json", library),
            ("crawlkit canon --json (process)", command),
        ]:
            times = [timed(fn) for _ in range(args.repeat)]
            results[name] = args.urls / statistics.median(times)
    base = results["baseline ada normalize_url"]
    print(f"{args.urls:,} URLs, median of {args.repeat} runs, one core")
    for name, rate in results.items():
        print(f"  {name:34s} {rate:12,.0f} URLs/s   ratio to baseline {rate / base:5.2f}")


if __name__ == "__main__":
    main()
