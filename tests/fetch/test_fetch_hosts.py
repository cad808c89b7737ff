"""crawlkit.fetch.hosts: the host lifecycle, through the engine over a fake client:
politeness keys, deferral of hosts not due before the deadline, the durable clock
after a crash, idle hosts forgotten and read back from the state."""

from __future__ import annotations

import asyncio
import itertools
import time
import tracemalloc
from pathlib import Path

import pytest
from conftest import start_testweb
from fetch_helpers import ANSWERS, FakeClient, run_engine

from crawlkit.fetch.client import AiohttpClient, FetchRequest, FetchResult
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


def _fetcher_of_hosts(
    n: int, extra: list[str] | None = None, state: HostState | None = None
) -> tuple[FakeClient, Fetcher]:
    """A fetcher over ``n`` hosts ``h0.test``... without a gap, each answering
    ``/p`` (and the ``extra`` URLs) with a page and robots.txt with 404."""
    names = {f"h{i}.test": (f"8.8.{i}.1",) for i in range(n)}
    table = {f"http://{h}/robots.txt": (404, {}, b"") for h in names}
    table |= {url: ANSWERS["ok"] for url in [f"http://{h}/p" for h in names] + (extra or [])}
    client = FakeClient(table)
    fetcher = Fetcher(
        FetchConfig(min_delay=0.0, delay_factor=0.0, per_ip_delay=0.0),
        client=client,
        resolver=Resolver(hosts=names),
        netpolicy=NetPolicy(),
        state=state,
    )
    return client, fetcher


def test_a_host_with_nothing_queued_holds_no_queue() -> None:
    """A known host costs its clock and address, not an empty FIFO (~630 bytes, more
    than the rest of it): the queue goes once drained, and comes back with new work."""
    n = 30
    client, fetcher = _fetcher_of_hosts(n, extra=["http://h0.test/again"])
    names = [f"h{i}.test" for i in range(n)]
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


def test_idle_hosts_are_swept_however_few_are_known(tmp_path: Path) -> None:
    """The hosts kept are those with work or recently active, not all of them until
    some count is reached: with 10,000 known before the first sweep, a 10-minute crawl
    finding ~700 hosts a minute never swept (issue 27)."""
    n = 30
    state = HostState(tmp_path)
    client, fetcher = _fetcher_of_hosts(n + 1, state=state)
    # Sweep at every turn, a host as soon as it is due; the floor is the default's.
    fetcher.sweep_every, fetcher.idle_evict = 0.0, 0.0
    fed = False

    async def refill() -> list[dict] | None:
        nonlocal fed
        if fed:
            return None
        if len(client.seen) < 2 * n:
            return []
        fed = True  # the first n are done: one more host keeps the loop turning
        return [{"url": f"http://h{n}.test/p"}]

    async def go() -> list[dict]:
        urls = [{"url": f"http://h{i}.test/p"} for i in range(n)]
        return [r async for r in fetcher.run(urls, refill=refill)]

    out = asyncio.run(go())
    state.close()
    assert sorted(r["outcome"] for r in out) == ["fetched"] * (n + 1)
    assert fetcher.evicted >= n  # every host done before the last one was started
    assert len(fetcher.hosts.hosts) <= 1


def test_swept_hosts_keep_their_gap_and_crawl_delay_by_the_server_log(tmp_path: Path) -> None:
    """A host swept from memory between two of its requests is asked again no sooner
    than its gap and its robots.txt's Crawl-delay allow, by the server's clock: the
    sweep takes only hosts already due, and one read back has its clock from the
    state."""
    gap, delay = 0.3, 0.6
    with start_testweb(
        tmp_path,
        *("--hosts", "6", "--pages", "6", "--page-kb", "1", "--seed", "3"),
        *("--crawl-delay-hosts", "3", "--crawl-delay", f"{delay}s"),
    ) as web:
        hosts = [
            h
            for h in web.manifest["hosts"]
            if h["kind"] == "ordinary" and not h["private"] and len(h["allowed"]) >= 3
        ]
        assert sum(1 for h in hosts if h["robots"]["crawl_delay"]) >= 2
        rounds = [[{"url": h["allowed"][k]} for h in hosts] for k in range(3)]
        (tmp_path / "state").mkdir()
        state = HostState(tmp_path / "state")
        fed = 1
        evicted = 0

        async def go() -> list[dict]:
            nonlocal evicted
            client = AiohttpClient()  # made in the loop it runs in
            fetcher = Fetcher(
                FetchConfig(min_delay=gap, delay_factor=0.0, per_ip_delay=0.0),
                client=client,
                resolver=Resolver(hosts={h["name"]: (h["addr"],) for h in hosts}),
                netpolicy=NetPolicy([web.info["allow_net"]]),
                state=state,
            )
            fetcher.sweep_every, fetcher.idle_evict = 0.0, 0.0

            async def refill() -> list[dict] | None:
                # the next round once every host of the last one was swept
                nonlocal fed
                if fed == len(rounds):
                    return None
                if fetcher.evicted < fed * len(hosts):
                    return []
                fed += 1
                return rounds[fed - 1]

            try:
                return [r async for r in fetcher.run(rounds[0], refill=refill)]
            finally:
                evicted = fetcher.evicted
                await client.close()

        out = asyncio.run(go())
        state.close()
        log = web.requests()
    assert [r["outcome"] for r in out] == ["fetched"] * (3 * len(hosts))
    assert evicted >= 2 * len(hosts)  # each host swept between its rounds
    for h in hosts:
        mine = sorted(
            (r for r in log if r["host"].split(":")[0] == h["name"]), key=lambda r: r["t_start"]
        )
        assert [r["path"] for r in mine].count("/robots.txt") == 1  # read back, not asked
        assert len(mine) == 4
        want = max(gap, h["robots"]["crawl_delay"] or 0.0)
        for prev, nxt in itertools.pairwise(mine):
            assert nxt["t_start"] - prev["t_end"] >= want - 0.01, (h["name"], prev, nxt)


def test_refuse_queued_answers_a_hosts_held_urls_and_leaves_the_rest() -> None:
    table = {f"http://{h}/robots.txt": (404, {}, b"") for h in ("a.test", "b.test")}
    records = [{"url": f"http://a.test/{i}"} for i in range(6)]
    records += [{"url": f"http://b.test/{i}"} for i in range(3)]
    client = FakeClient(table)
    fetcher = Fetcher(
        FetchConfig(min_delay=0.05, delay_factor=0),
        client=client,
        resolver=Resolver(hosts={"a.test": ("8.8.8.8",), "b.test": ("8.8.4.4",)}),
        netpolicy=NetPolicy(),
    )
    refused: list[dict] = []

    async def go() -> list[dict]:
        out = []
        async for rec in fetcher.run(records):
            out.append(rec)
            if len(out) == 1:  # a.test's first page answered (or b.test's): block a.test
                blocked = fetcher.refuse_queued(lambda r: "a.test" in r["url"], "blocked", "x")
                refused.extend(blocked)
        return out

    out = asyncio.run(go())
    assert sorted(r["url"] for r in out) == sorted(r["url"] for r in records)  # each once
    asked = {url for url, _ in client.seen}
    assert refused and all(r["outcome"] == "refused" and r["refused"] == "blocked" for r in refused)
    assert all("a.test" in r["url"] and r["url"] not in asked for r in refused)
    # a.test: what was answered or in flight when the block came, no more
    assert len([u for u in asked if u.startswith("http://a.test/") and u[-1].isdigit()]) <= 2
    assert {f"http://b.test/{i}" for i in range(3)} <= asked  # the other host untouched
