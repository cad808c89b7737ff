"""crawlkit.fetch.hosts: the host lifecycle, through the engine over a fake client:
politeness keys, deferral of hosts not due before the deadline, the durable clock
after a crash, idle hosts forgotten and read back from the state."""

from __future__ import annotations

import asyncio
import time
import tracemalloc
from pathlib import Path

import pytest
from fetch_helpers import ANSWERS, FakeClient, run_engine

from crawlkit.fetch.client import FetchRequest, FetchResult
from crawlkit.fetch.engine import FetchConfig, Fetcher
from crawlkit.fetch.hosts import Host, split_url
from crawlkit.fetch.hoststate import HostRecord, HostState
from crawlkit.fetch.netpolicy import NetPolicy
from crawlkit.fetch.resolver import Resolver


def test_split_url() -> None:
    assert split_url("http://A.example:80/x").key == "a.example"
    assert split_url("https://a.example:8443/").origin == "https://a.example:8443"
    with pytest.raises(Exception, match="scheme"):
        split_url("ftp://a.example/")


def test_engine_defers_hosts_not_due_before_the_deadline() -> None:
    table = {"http://a.test/robots.txt": (404, {}, b"")}
    records = [{"url": f"http://a.test/{i}"} for i in range(5)]
    out, _client, _ = run_engine(records, table, duration=0.5, delay_factor=0, per_ip_delay=0)
    # min_delay 0 but Crawl-delay none: all five fit; now with a 1 s gap only some do
    assert len(out) == 5
    cfg = {"duration": 0.3, "delay_factor": 0.0}
    client2 = FakeClient(table)
    fetcher = Fetcher(
        FetchConfig(min_delay=1.0, **cfg),
        client=client2,
        resolver=Resolver(hosts={"a.test": ("8.8.8.8",)}),
        netpolicy=NetPolicy(),
    )

    async def go() -> list[dict]:
        return [r async for r in fetcher.run(records)]

    out2 = asyncio.run(go())
    assert len(out2) == 5
    deferred = [r for r in out2 if r["outcome"] == "deferred"]
    assert len(deferred) == 5 and all(r["retry_at"] for r in deferred)  # robots took the slot
    assert len(client2.seen) == 1


@pytest.mark.parametrize("crashed", [True, False])
def test_after_a_crash_every_known_host_waits_its_full_gap(tmp_path: Path, crashed: bool) -> None:
    # The last run touched a.test long ago (its clock says "due"), then died (the
    # running mark is still set): a request to a.test may have been lost with it.
    s = HostState(tmp_path)
    s.begin_run()
    s.put_host("a.test", HostRecord(0.0, 0.0, 0.0, 0.0, 0.0, None))
    s.commit()
    s.close(clean=not crashed)
    state = HostState(tmp_path)
    client = FakeClient({"http://a.test/robots.txt": (404, {}, b"")})
    times: list[float] = []
    real_fetch = client.fetch

    async def timed_fetch(request: FetchRequest) -> FetchResult:
        times.append(time.monotonic())
        return await real_fetch(request)

    client.fetch = timed_fetch  # type: ignore[method-assign]
    fetcher = Fetcher(
        FetchConfig(min_delay=1.0, delay_factor=0),
        client=client,
        resolver=Resolver(hosts={"a.test": ("8.8.8.8",)}),
        netpolicy=NetPolicy(),
        state=state,
    )

    async def go() -> list[dict]:
        return [r async for r in fetcher.run([{"url": "http://a.test/"}])]

    start = time.monotonic()
    out = asyncio.run(go())
    state.close()
    assert [r["outcome"] for r in out] == ["fetched"]
    if crashed:
        assert times[0] - start >= 1.0
    else:
        assert times[0] - start < 1.0


def test_idle_hosts_are_forgotten_and_come_back_from_the_state(tmp_path: Path) -> None:
    state = HostState(tmp_path)
    client = FakeClient(
        {
            "http://a.test/robots.txt": (200, {}, b"User-agent: *\nDisallow: /no\n"),
            "http://a.test/1": ANSWERS["ok"],
            "http://a.test/2": ANSWERS["ok"],
        }
    )
    fetcher = Fetcher(
        FetchConfig(min_delay=0.2, delay_factor=0.0),
        client=client,
        resolver=Resolver(hosts={"a.test": ("8.8.8.8",)}),
        netpolicy=NetPolicy(),
        state=state,
    )
    fetcher.sweep_every, fetcher.sweep_min_hosts, fetcher.idle_evict = 0.0, 0, 0.0
    fed = False

    async def refill() -> list[dict] | None:
        nonlocal fed
        if fed:
            return None
        if not fetcher.evicted:
            return []
        fed = True
        return [{"url": "http://a.test/2"}, {"url": "http://a.test/no/3"}]

    async def go() -> list[dict]:
        return [r async for r in fetcher.run([{"url": "http://a.test/1"}], refill=refill)]

    out = asyncio.run(go())
    state.close()
    assert fetcher.evicted >= 1
    assert sorted(r["outcome"] for r in out) == ["fetched", "fetched", "robots-denied"]
    assert [u for u, _ in client.seen].count("http://a.test/robots.txt") == 1


def test_a_host_with_nothing_queued_holds_no_queue() -> None:
    """A known host costs its clock and address, not an empty FIFO (~630 bytes, more
    than the rest of it): the queue goes once drained, and comes back with new work."""
    n = 30
    names = {f"h{i}.test": (f"8.8.{i}.1",) for i in range(n)}
    table = {f"http://{h}/robots.txt": (404, {}, b"") for h in names}
    table |= {f"http://{h}/p": ANSWERS["ok"] for h in names}
    table["http://h0.test/again"] = ANSWERS["ok"]
    client = FakeClient(table)
    fetcher = Fetcher(
        FetchConfig(min_delay=0.0, delay_factor=0.0, per_ip_delay=0.0),
        client=client,
        resolver=Resolver(hosts=names),
        netpolicy=NetPolicy(),
    )
    fed = False

    async def refill() -> list[dict] | None:
        nonlocal fed
        if fed or len(client.seen) < 2 * n:
            return None if fed else []
        fed = True
        return [{"url": "http://h0.test/again"}]  # a drained host gets work again

    async def go() -> list[dict]:
        urls = [{"url": f"http://{h}/p"} for h in names]
        return [r async for r in fetcher.run(urls, refill=refill)]

    out = asyncio.run(go())
    assert sorted(r["outcome"] for r in out) == ["fetched"] * (n + 1)
    hosts = list(fetcher.hosts.hosts.values())
    assert len(hosts) == n and not any(h.has_items for h in hosts)
    assert all(h._items is None for h in hosts)  # drained queues were let go
    tracemalloc.start()
    many = [Host(f"h{i}.example.com", name=f"h{i}.example.com", state="ready") for i in range(2000)]
    held, _ = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert held / len(many) < 500  # with an empty deque each it was ~1,060
