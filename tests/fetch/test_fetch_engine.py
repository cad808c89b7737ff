"""crawlkit.fetch.engine over a fake client: one record per input URL, robots.txt
first, redirects, intake refusals, stop and the deadline, duplicates."""

from __future__ import annotations

import asyncio
import itertools
from typing import ClassVar

import pytest
from fetch_helpers import ANSWERS, FakeClient, run_engine
from hypothesis import given, settings
from hypothesis import strategies as st

from crawlkit.fetch.client import FetchRequest, FetchResult
from crawlkit.fetch.engine import FetchConfig, Fetcher
from crawlkit.fetch.netpolicy import NetPolicy
from crawlkit.fetch.resolver import Resolver


def test_engine_one_record_per_url_robots_first_and_redirects() -> None:
    robots = b"User-agent: *\nDisallow: /private\n"
    table = {
        "http://a.test/robots.txt": (200, {}, robots),
        "http://a.test/": (200, {"Content-Type": "text/html"}, b"<p>hi</p>"),
        "http://a.test/old": (301, {"Location": "/new"}, b""),
        "http://b.test/robots.txt": (503, {"Retry-After": "5"}, b""),
    }
    records = [
        {"url": u, "depth": 2, "x": "keep"}
        for u in [
            "http://a.test/",
            "http://a.test/private/1",
            "http://a.test/old",
            "http://b.test/",
            "http://lan.test/",
            "mailto:x@y",
            "http://a.test/missing",
        ]
    ]
    out, client, redirects = run_engine(records, table)
    assert len(out) == len(records)
    got = {r["url"]: r for r in out}
    assert all(r["x"] == "keep" for r in out)
    assert got["http://a.test/"]["outcome"] == "fetched"
    assert got["http://a.test/private/1"]["outcome"] == "robots-denied"
    assert got["http://a.test/old"]["outcome"] == "redirect"
    assert got["http://a.test/old"]["location"] == "http://a.test/new"
    assert got["http://b.test/"]["outcome"] == "deferred" and got["http://b.test/"]["retry_at"]
    assert got["http://lan.test/"]["outcome"] == "refused"
    assert got["mailto:x@y"]["outcome"] == "refused"
    assert got["http://a.test/missing"]["status"] == 404
    assert redirects == [
        {
            "url": "http://a.test/new",
            "host": "a.test",
            "site": "a.test",
            "fp": redirects[0]["fp"],
            "depth": 2,
            "reason": "redirect",
            "hops": 1,
            "via": "http://a.test/old",
        }
    ]
    a_requests = [u for u, _ in client.seen if "a.test" in u]
    assert a_requests[0] == "http://a.test/robots.txt"
    assert all(addr == "8.8.8.8" for u, addr in client.seen if "a.test" in u)
    assert not [u for u, _ in client.seen if "lan.test" in u or "private" in u]


ROBOTS = {
    "rules": (200, {}, b"User-agent: *\nDisallow: /no\n"),
    "none": (404, {}, b""),
    "down": (503, {}, b""),
}


@settings(deadline=None)  # timing varies on a shared machine; examples are bounded
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["a.test", "b.test", "lan.test", "gopher", "nourl"]),
            st.sampled_from([*sorted(ANSWERS), "no"]),
        ),
        max_size=25,
    ),
    st.sampled_from(sorted(ROBOTS)),
    st.sampled_from(sorted(ROBOTS)),
)
def test_every_input_url_gets_exactly_one_record(items, robots_a, robots_b) -> None:
    records, table = (
        [],
        {
            "http://a.test/robots.txt": ROBOTS[robots_a],
            "http://b.test/robots.txt": ROBOTS[robots_b],
        },
    )
    for i, (host, answer) in enumerate(items):
        if host == "nourl":
            records.append({"n": i})
            continue
        scheme = "gopher" if host == "gopher" else "http"
        url = f"{scheme}://{'a.test' if host == 'gopher' else host}/{answer}/{i}"
        records.append({"url": url, "n": i})
        table[url] = ANSWERS.get(answer, ANSWERS["ok"])
    out, _, _ = run_engine(records, table, backoff=0.05, delay_factor=0.0, per_ip_delay=0.0)
    assert sorted(r["n"] for r in out) == list(range(len(records)))
    for r in out:
        assert r["outcome"] in (
            "fetched",
            "not-modified",
            "redirect",
            "robots-denied",
            "deferred",
            "refused",
            "error",
        )
        if r["outcome"] == "deferred":
            assert r["retry_at"]


@pytest.mark.timeout(30)
def test_stop_with_requests_in_flight_lets_them_finish_and_defers_the_rest() -> None:
    class SlowClient(FakeClient):
        started: ClassVar[list[str]] = []

        async def fetch(self, request: FetchRequest) -> FetchResult:
            self.started.append(request.url)
            if not request.url.endswith("robots.txt"):
                await asyncio.sleep(0.3)
            return await super().fetch(request)

    client = SlowClient({"http://a.test/robots.txt": (404, {}, b"")})
    client.table.update({f"http://a.test/{i}": ANSWERS["ok"] for i in range(4)})
    fetcher = Fetcher(
        FetchConfig(min_delay=0.0, delay_factor=0.0),
        client=client,
        resolver=Resolver(hosts={"a.test": ("8.8.8.8",)}),
        netpolicy=NetPolicy(),
    )

    async def go() -> list[dict]:
        out = []
        async for rec in fetcher.run([{"url": f"http://a.test/{i}"} for i in range(4)]):
            out.append(rec)
        return out

    async def main() -> list[dict]:
        task = asyncio.create_task(go())
        while len(client.started) < 2:  # robots.txt, then the first page is in flight
            await asyncio.sleep(0.01)
        fetcher.stop()
        return await task

    out = asyncio.run(main())
    assert sorted(r["outcome"] for r in out) == ["deferred", "deferred", "deferred", "fetched"]


def test_records_refused_upstream_pass_through_unfetched() -> None:
    table = {
        "http://a.test/robots.txt": (200, {}, b""),
        "http://a.test/ok": (200, {}, b"fine"),
    }
    blocked = {
        "url": "http://a.test/blocked",
        "outcome": "refused",
        "refused": "blocked",
        "detail": "operator block",
    }
    out, client, _ = run_engine([blocked, {"url": "http://a.test/ok"}], table)
    by_url = {r["url"]: r for r in out}
    assert len(out) == 2
    assert by_url["http://a.test/blocked"]["outcome"] == "refused"
    assert by_url["http://a.test/blocked"]["error"] == "operator block"
    assert "http://a.test/blocked" not in [url for url, _ in client.seen]
    assert by_url["http://a.test/ok"]["outcome"] == "fetched"


@pytest.mark.parametrize("offset", range(10))
def test_a_run_with_a_deadline_and_an_idle_refill_ends_whatever_the_clock_reads(
    offset: int,
) -> None:
    # The clock moves 1 ms per reading, so across these offsets the deadline falls
    # between every pair of readings in one turn of the loop. Once it fell between the
    # exit test and the wait, and the run waited forever for a wake-up (CI hung on it).
    ticks = itertools.count()

    def clock() -> float:
        return next(ticks) * 0.001

    fetcher = Fetcher(
        FetchConfig(duration=0.0305 + offset * 0.001),
        client=FakeClient({}),
        resolver=Resolver(hosts={}),
        netpolicy=NetPolicy(),
        clock=clock,
    )
    asked = 0

    async def refill() -> list[dict] | None:
        nonlocal asked
        asked += 1
        return []  # nothing now; ask again soon

    async def go() -> list[dict]:
        return [r async for r in fetcher.run([], refill=refill)]

    out = asyncio.run(asyncio.wait_for(go(), timeout=20))
    assert out == []
    assert asked >= 1


def test_a_url_twice_in_a_batch_is_asked_once_and_again_once_answered() -> None:
    table = {
        "http://a.test/robots.txt": (200, {}, b""),
        "http://a.test/x": (200, {"Content-Type": "text/html"}, b"<p>x</p>"),
    }
    records = [{"url": "http://a.test/x", "n": n} for n in range(3)]
    out, client, _ = run_engine(records, table)
    assert sorted((r["n"], r["outcome"]) for r in out) == [
        (0, "fetched"),
        (1, "refused"),
        (2, "refused"),
    ]
    assert all(r["refused"] == "duplicate" for r in out if r["outcome"] == "refused")
    assert [u for u, _ in client.seen].count("http://a.test/x") == 1
    # once answered, the URL may be fed again (a recrawl in a long crawl)
    client2 = FakeClient(table)
    resolver = Resolver(hosts={"a.test": ("8.8.8.8",)})
    fetcher = Fetcher(
        FetchConfig(min_delay=0.0), client=client2, resolver=resolver, netpolicy=NetPolicy()
    )
    fed = False

    async def refill() -> list[dict] | None:
        nonlocal fed
        if fed:
            return None
        if not fetcher.counts["fetched"]:
            return []  # not yet answered
        fed = True
        return [{"url": "http://a.test/x", "n": 9}]

    async def go() -> list[dict]:
        return [r async for r in fetcher.run([{"url": "http://a.test/x", "n": 8}], refill=refill)]

    again = asyncio.run(go())
    assert [r["outcome"] for r in again] == ["fetched", "fetched"]
    assert [u for u, _ in client2.seen].count("http://a.test/x") == 2


@pytest.mark.timeout(60)
def test_a_stop_cuts_a_request_that_would_hold_it_for_the_whole_timeout() -> None:
    """Issue 25 (stops that wait): a page that drips or stalls held a stop for the
    whole --timeout (30 s); it gets DEADLINE_GRACE and comes out deferred."""

    class StallingClient(FakeClient):
        started: ClassVar[list[str]] = []

        async def fetch(self, request: FetchRequest) -> FetchResult:
            self.started.append(request.url)
            if not request.url.endswith("robots.txt"):
                await asyncio.sleep(request.timeout)  # the server never finishes
            return await super().fetch(request)

    client = StallingClient({"http://a.test:80/robots.txt": (404, {}, b"")})
    fetcher = Fetcher(
        FetchConfig(min_delay=0.0, delay_factor=0.0, timeout=120.0),
        client=client,
        resolver=Resolver(hosts={"a.test": ("8.8.8.8",)}),
        netpolicy=NetPolicy(),
    )

    async def go() -> list[dict]:
        return [r async for r in fetcher.run([{"url": "http://a.test/stall"}])]

    async def main() -> list[dict]:
        task = asyncio.create_task(go())
        while len(client.started) < 2:  # robots.txt, then the page is in flight
            await asyncio.sleep(0.01)
        fetcher.stop()
        return await asyncio.wait_for(task, 30)  # far below the 120-s timeout

    (rec,) = asyncio.run(main())
    assert rec["outcome"] == "deferred" and rec["stopped"] is True, rec


@pytest.mark.timeout(60)
def test_idle_is_set_only_while_nothing_is_in_flight_or_due() -> None:
    """``Fetcher.idle`` tells a waiting refill that only more URLs can give the run
    work now: set while the URLs held belong to a host sitting out its Crawl-delay,
    never while a request runs (crawl's refill asks at once then; issue 27)."""
    fetcher: Fetcher

    class WatchingClient(FakeClient):
        idle_during_requests: ClassVar[list[bool]] = []

        async def fetch(self, request: FetchRequest) -> FetchResult:
            self.idle_during_requests.append(fetcher.idle.is_set())
            return await super().fetch(request)

    client = WatchingClient(
        {
            "http://a.test/robots.txt": (200, {}, b"User-agent: *\nCrawl-delay: 60\n"),
            "http://b.test/robots.txt": (404, {}, b""),
        }
    )
    client.table.update({f"http://{h}.test/{i}": ANSWERS["ok"] for h in "ab" for i in range(3)})
    fetcher = Fetcher(
        FetchConfig(min_delay=0.0, delay_factor=0.0),
        client=client,
        resolver=Resolver(hosts={"a.test": ("8.8.8.8",), "b.test": ("8.8.4.4",)}),
        netpolicy=NetPolicy(),
    )
    held_when_idle: list[bool] = []

    async def refill() -> list[dict] | None:
        await fetcher.idle.wait()  # the test's timeout guards it
        held_when_idle.append(fetcher.has_work())
        fetcher.stop()
        return None

    async def go() -> list[dict]:
        urls = [f"http://{h}.test/{i}" for h in "ab" for i in range(3)]
        return [r async for r in fetcher.run([{"url": u} for u in urls], refill=refill)]

    out = asyncio.run(go())
    fetched = sorted(r["url"] for r in out if r["outcome"] == "fetched")
    # b.test was done; a.test's pages waited 60 s after its robots.txt
    assert fetched == [f"http://b.test/{i}" for i in range(3)]
    assert held_when_idle == [True]
    assert len(client.idle_during_requests) == 5 and not any(client.idle_during_requests)


def test_an_answer_ends_the_pause_after_a_refill_that_gave_nothing() -> None:
    """A refill that gave nothing is asked again after a pause, or at once when an
    answer comes first: the answer frees a share of its host (one host at a 0.05-s
    gap got 16 pages/s of its 19 while each pause ran out). The clock here stands
    still, so only the answer can end the pause: without it the run never ends."""
    release = asyncio.Event()

    class GatedClient(FakeClient):
        async def fetch(self, request: FetchRequest) -> FetchResult:
            if request.url.endswith("/1"):
                await release.wait()  # answered only after the empty refill
            return await super().fetch(request)

    table = {
        "http://a.test/robots.txt": (200, {}, b""),
        "http://a.test/1": (200, {"Content-Type": "text/html"}, b"<p>1</p>"),
    }
    fetcher = Fetcher(
        FetchConfig(min_delay=0.0, delay_factor=0.0),
        client=GatedClient(table),
        resolver=Resolver(hosts={"a.test": ("8.8.8.8",)}),
        netpolicy=NetPolicy(),
        clock=lambda: 1000.0,
    )
    calls: list[int] = []

    async def refill() -> list[dict] | None:
        calls.append(fetcher.counts["fetched"])
        if len(calls) == 1:
            return [{"url": "http://a.test/1"}]
        if len(calls) == 2:
            release.set()
            return []  # nothing now: a pause the clock never ends
        return None

    async def go() -> list[dict]:
        return [r async for r in fetcher.run([], refill=refill)]

    out = asyncio.run(asyncio.wait_for(go(), timeout=10))
    assert [r["outcome"] for r in out] == ["fetched"]
    assert calls == [0, 0, 1]  # asked the third time once /1 was answered
