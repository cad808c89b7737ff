"""Caches that grow per host, site or URL stay within their size bound (issue 27 item 5):
the robots.txt entries in memory (by estimated bytes, parsed rules included), the link
resolver's cache (by estimated bytes, however long the URLs), the DNS cache (by entries).
Each test would fail if its cache grew with what it was fed."""

from __future__ import annotations

import gc
import re
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from crawlkit.fetch.config import FetchConfig
from crawlkit.fetch.hosts import StateCommits
from crawlkit.fetch.hoststate import HostState
from crawlkit.fetch.resolver import Resolver
from crawlkit.fetch.robotsflow import RobotsFlow, entry_cost
from crawlkit.html.resolve import LinkResolver
from crawlkit.robots import RobotsEntry, RobotsPolicy
from crawlkit.url import Canonicalizer

T = TypeVar("T")

DATA = Path(__file__).resolve().parent.parent / "data"


def _flow(state: HostState | None) -> RobotsFlow:
    """A robots flow with only the parts its cache uses (no request is made)."""
    return RobotsFlow(
        FetchConfig(),
        policy=RobotsPolicy(),
        client=None,  # type: ignore[arg-type]
        headers={},
        hosts=None,  # type: ignore[arg-type]
        outbox=None,  # type: ignore[arg-type]
        state=state,
        commits=StateCommits(state, time.time),
        archiver=None,  # type: ignore[arg-type]
        on_capture=None,
        clock=time.time,
    )


def _body(i: int, rules: int) -> bytes:
    return b"User-agent: *\n" + b"".join(b"Disallow: /h%d/p%d/\n" % (i, j) for j in range(rules))


def test_robots_entries_in_memory_stay_within_their_byte_bound(tmp_path: Path) -> None:
    state = HostState(tmp_path)
    flow = _flow(state)
    flow.max_bytes = 400_000
    policy, now = RobotsPolicy(), time.time()
    origins = [f"http://h{i}.test:80" for i in range(200)]
    fetching = "http://again.test:80"  # its robots.txt is being fetched anew: kept
    flow.settle(fetching, policy.on_response(200, _body(0, 10), now))
    flow._inflight[fetching] = []
    for i, origin in enumerate(origins):
        flow.settle(origin, policy.on_response(200, _body(i, 200), now))  # ~4 KB a file
        assert flow.cache_bytes() <= flow.max_bytes
    assert flow.cache_bytes() == sum(entry_cost(o, e) for o, e in flow._entries.items())
    assert 0 < len(flow._entries) < len(origins)  # the least recently used went out
    assert origins[-1] in flow._entries and fetching in flow._entries
    # An evicted entry is read back from the state, rules and all.
    first = flow.entry(origins[0])
    assert first is not None and not first.rules().check("crawlkit", "/h0/p5/x").allowed
    assert flow.cache_bytes() <= flow.max_bytes
    state.close()


def test_robots_entries_without_a_state_are_all_kept() -> None:
    flow = _flow(None)
    flow.max_bytes = 10_000
    policy, now = RobotsPolicy(), time.time()
    for i in range(20):
        flow.settle(f"http://h{i}.test:80", policy.on_response(200, _body(i, 50), now))
    # Nothing to read an evicted entry back from: it would be fetched again.
    assert len(flow._entries) == 20


def _verdicts_asked(entry: RobotsEntry) -> RobotsEntry:
    """``entry`` as a crawl leaves it: parsed, a URL checked, its Crawl-delay read."""
    rules = entry.rules()
    rules.check("crawlkit", "http://h.test/a/b")
    rules.crawl_delay("crawlkit")
    return entry


def _traced_bytes_kept(make: Callable[[int], T], count: int) -> tuple[int, list[T]]:
    """``count`` results of ``make`` and the bytes they hold, measured with tracemalloc.

    The interpreter's free lists (tuples, dicts, lists, floats) hand out blocks that
    tracemalloc saw before it started, so what they hold depends on what this process
    ran before: emptied here (a full collection clears them) before the measure starts,
    and again before it is read, so the temporaries parked on them do not count."""
    kept: list[T | None] = [None] * count  # the list itself is not what is measured
    gc.collect()
    tracemalloc.start()
    try:
        for i in range(count):
            kept[i] = make(i)
        re.purge()  # re's own cache of compiled patterns is global and bounded, not ours
        gc.collect()
        real, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return real, [k for k in kept if k is not None]


def test_a_robots_entry_costs_no_more_than_its_estimate_whatever_its_rules() -> None:
    """Measured as a crawl leaves entries (per-agent views built), each file distinct
    (equal files would share their compiled patterns): short files, the fixture's
    real-world mix, wildcard rules, long lines, 1,000 rules with and without wildcards.
    The measure is the same whatever ran before it in the process (CI's workers run
    other tests first): each kind is warmed up apart and the free lists emptied."""
    policy, now = RobotsPolicy(), time.time()
    typical = (DATA / "robots" / "typical.txt").read_bytes()

    def rules(line: bytes, count: int) -> Callable[[int], bytes]:
        return lambda i: b"User-agent: *\n" + b"".join(line % (i, j) for j in range(count))

    files: dict[str, Callable[[int], bytes]] = {
        "few": lambda i: b"User-agent: *\nDisallow: /private%d/\nCrawl-delay: 1\n" % i,
        "typical.txt": lambda i: typical + b"Disallow: /only-%d/\n" % i,
        "wildcards": rules(b"Disallow: /s%d/*/a/*.php?id=%d$\n", 100),
        "long lines": rules(b"Disallow: /" + b"x" * 300 + b"%d-%d\n", 100),
        "1,000 rules": rules(b"Disallow: /s%d/p%d\n", 1000),
        "1,000 wildcard rules": rules(b"Disallow: /s%d/*.php?id=%d\n", 1000),
    }
    for name, file in files.items():
        count = {"few": 200, "1,000 rules": 2, "1,000 wildcard rules": 2}.get(name, 10)
        for warm in (-1, -2):  # first uses of a kind of file build what later ones share
            _verdicts_asked(policy.on_response(200, file(warm), now))
        real, kept = _traced_bytes_kept(
            lambda i, file=file: _verdicts_asked(policy.on_response(200, file(i), now)), count
        )
        estimate = sum(entry_cost("http://host.example.test:80", e) for e in kept)
        assert real <= estimate, (name, real // count, estimate // count)
        # ... and close: a cache of N bytes holds nearly what N bytes can
        assert estimate <= 1.5 * real, (name, real // count, estimate // count)


def test_link_resolver_cache_stays_within_its_byte_bound() -> None:
    canon = Canonicalizer()
    canon.parse("http://warm.example.test/")  # the suffix list, loaded once, is not ours
    resolver = LinkResolver(canon, max_bytes=300_000)
    pad = "x" * 1500  # long URLs: an entry-count bound alone would not hold the bytes
    tracemalloc.start()
    for i in range(2000):
        base = f"http://h{i % 50}.example.test/dir/page{i}.html"
        parsed = resolver.resolve(f"/a/{pad}/p{i}.html", base, f"http://h{i % 50}.example.test")
        assert parsed is not None and parsed.url.endswith(f"/p{i}.html")
        assert resolver.bytes <= resolver.max_bytes
    del parsed
    assert 0 < len(resolver._cache) < 2000
    with_cache, _ = tracemalloc.get_traced_memory()
    resolver._cache.clear()
    resolver._authorities.clear()
    without, _ = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert with_cache - without <= resolver.max_bytes  # the estimate is not below the truth


def test_dns_cache_stays_within_its_entry_bound() -> None:
    resolver = Resolver(
        hosts={}, lookup=lambda name: ["127.0.0.1"], max_positive=100, max_negative=10
    )
    import asyncio

    async def run() -> None:
        for i in range(500):
            await resolver.resolve(f"h{i}.test")
        for i in range(50):
            resolver._lookup = lambda name: []  # no address: a negative answer
            await resolver.resolve(f"gone{i}.test")

    asyncio.run(run())
    assert len(resolver._positive) == 100 and len(resolver._negative) == 10
    assert resolver.cached("h499.test") is not None  # the newest are kept
    assert resolver.cached("h0.test") is None
