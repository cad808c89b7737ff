"""Benchmark: robots.txt checks per second on one core, against urllib.robotparser.

Run: ``.venv/bin/python bench/bench_robots.py [--urls 20000] [--repeat 5]``

Both matchers answer the same URLs against the same ~100-rule file
(tests/data/robots/typical.txt). urllib.robotparser is the baseline measured in the
same run; it does less work (no wildcards, no longest match, first match wins), so the
ratio understates what the RFC 9309 matcher does per check. Prints medians of
``--repeat`` rounds, and the time to parse a 500 KiB file. The target (issue 4) is
at least 200,000 checks/s.
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
import urllib.robotparser
from pathlib import Path

from crawlkit.robots import RobotsTxt

ROOT = Path(__file__).resolve().parent.parent
FIXTURE = ROOT / "tests" / "data" / "robots" / "typical.txt"
SECTIONS = [
    "shop",
    "cart",
    "blog",
    "news",
    "api",
    "search",
    "tag",
    "user",
    "media",
    "private",
    "help",
    "jobs",
    "forum",
    "archive",
    "static",
    "wp-admin",
    "category",
    "x",
]


def make_urls(n: int, seed: int = 4) -> list[str]:
    rnd = random.Random(seed)
    urls = []
    for _ in range(n):
        depth = rnd.randint(1, 4)
        parts = [rnd.choice(SECTIONS)] + [
            rnd.choice(["a", "item", "2024", "draft", "products", "public", "v1", "open"])
            + str(rnd.randint(0, 99))
            for _ in range(depth - 1)
        ]
        tail = rnd.choice(
            [
                "",
                "/",
                ".html",
                ".pdf",
                ".php",
                "?page=2",
                "?sessionid=ab12",
                "?q=red%20shoes&sort=price",
                "/print/",
                "#top",
            ]
        )
        urls.append("https://www.example.com/" + "/".join(parts) + tail)
    return urls


def rate(fn, urls: list[str], repeat: int) -> float:
    rounds = []
    for _ in range(repeat):
        start = time.perf_counter()
        for url in urls:
            fn(url)
        rounds.append(len(urls) / (time.perf_counter() - start))
    return statistics.median(rounds)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--urls", type=int, default=20000)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()

    body = FIXTURE.read_bytes()
    urls = make_urls(args.urls)
    ours = RobotsTxt.parse(body)
    agent = "FooBar-Crawler/1.0 (+https://example.org/bot)"  # falls back to the * group
    ours.check(agent, urls[0])  # compile the group once, as a fetcher would

    base = urllib.robotparser.RobotFileParser()
    base.parse(body.decode("utf-8").splitlines())

    ours_rate = rate(lambda u: ours.check(agent, u), urls, args.repeat)
    base_rate = rate(lambda u: base.can_fetch(agent, u), urls, args.repeat)
    denied = sum(not ours.check(agent, u).allowed for u in urls)

    big = (
        "User-agent: *\n" + "".join(f"Disallow: /section{i}/page{i * 7}/\n" for i in range(16000))
    ).encode()[: 500 * 1024]
    parse_times = []
    for _ in range(3):
        start = time.perf_counter()
        parsed = RobotsTxt.parse(big)
        parsed.check("x", "/section1/")
        parse_times.append(time.perf_counter() - start)

    rules = sum(len(g.rules) for g in ours.groups)
    print(
        f"fixture: {FIXTURE.name}, {rules} rules in {len(ours.groups)} groups; "
        f"{len(urls)} URLs, {denied} denied"
    )
    print(f"crawlkit.robots      : {ours_rate:12,.0f} checks/s (median of {args.repeat})")
    print(f"urllib.robotparser   : {base_rate:12,.0f} checks/s (median of {args.repeat})")
    print(f"ratio                : {ours_rate / base_rate:12.2f}x")
    print(f"parse+compile 500 KiB: {statistics.median(parse_times) * 1000:12.1f} ms (median of 3)")


if __name__ == "__main__":
    main()
