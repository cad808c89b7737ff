"""Caches that grow per host, site or URL stay within their size bound (issue 27 item 5):
the robots.txt entries in memory (by estimated bytes, parsed rules included), the link
resolver's cache (by estimated bytes, however long the URLs), the DNS cache (by entries).
Each test would fail if its cache grew with what it was fed."""

from __future__ import annotations

import time
import tracemalloc
from pathlib import Path

from crawlkit.fetch.config import FetchConfig
from crawlkit.fetch.hosts import StateCommits
from crawlkit.fetch.hoststate import HostState
from crawlkit.fetch.resolver import Resolver
from crawlkit.fetch.robotsflow import RobotsFlow, entry_cost
from crawlkit.html.resolve import LinkResolver
from crawlkit.robots import RobotsPolicy
from crawlkit.url import Canonicalizer


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
    # The estimate is not below what the entries really cost with their parsed rules.
    tracemalloc.start()
    kept = [policy.on_response(200, _body(i, 200), now) for i in range(20)]
    for entry in kept:
        entry.rules()
    real, _ = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert real <= sum(entry_cost(o, e) for o, e in zip(origins, kept, strict=False))
    state.close()


def test_robots_entries_without_a_state_are_all_kept() -> None:
    flow = _flow(None)
    flow.max_bytes = 10_000
    policy, now = RobotsPolicy(), time.time()
    for i in range(20):
        flow.settle(f"http://h{i}.test:80", policy.on_response(200, _body(i, 50), now))
    # Nothing to read an evicted entry back from: it would be fetched again.
    assert len(flow._entries) == 20


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
    resolver._dirs.clear()
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
