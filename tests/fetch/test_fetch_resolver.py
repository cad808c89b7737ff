"""crawlkit.fetch.resolver: the hosts file, the bounded negative cache, the cache kept
in the host state between runs."""

from __future__ import annotations

import asyncio
import socket
import threading
from pathlib import Path

import pytest
from fetch_helpers import FakeClient

from crawlkit.fetch.engine import FetchConfig, Fetcher
from crawlkit.fetch.hoststate import HostState
from crawlkit.fetch.netpolicy import NetPolicy
from crawlkit.fetch.resolver import Resolver, read_hosts_file


def test_hosts_file_overrides_and_negative_cache_is_bounded(tmp_path: Path) -> None:
    hosts = tmp_path / "hosts"
    hosts.write_text("# comment\n127.1.0.1 a.test b.test\n::1 c.test\n")
    table = read_hosts_file(hosts)
    assert table == {"a.test": ("127.1.0.1",), "b.test": ("127.1.0.1",), "c.test": ("::1",)}
    calls = []

    def lookup(name: str) -> list[str]:
        calls.append(name)
        raise OSError(-2, "Name or service not known")

    r = Resolver(hosts=table, lookup=lookup, max_negative=3)

    async def go() -> None:
        assert (await r.resolve("A.test.")).addresses == ("127.1.0.1",)
        for i in range(5):
            res = await r.resolve(f"x{i}.invalid")
            assert res.error and not res.addresses
        await r.resolve("x4.invalid")  # cached failure: no second lookup

    asyncio.run(go())
    assert calls == [f"x{i}.invalid" for i in range(5)]
    assert len(r._negative) == 3


def test_expired_answers_leave_the_cache_as_new_ones_come() -> None:
    now = [1000.0]
    r = Resolver(lookup=lambda name: ["192.0.2.1"], ttl=300.0, clock=lambda: now[0])

    async def go() -> None:
        for i in range(50):
            await r.resolve(f"old{i}.example")
        assert r.held() == 50
        now[0] += 299.0  # all still valid: none is dropped
        await r.resolve("new0.example")
        assert r.held() == 51
        now[0] += 2.0  # the first 50 expired: the next answer stored drops them
        await r.resolve("new1.example")

    asyncio.run(go())
    assert r.held() == 2
    assert r.cached("new0.example") is not None and r.cached("old0.example") is None


def test_dns_cache_survives_in_the_state(tmp_path: Path) -> None:
    calls: list[str] = []

    def lookup(name: str) -> list[str]:
        calls.append(name)
        if name == "gone.test":
            raise OSError(-2, "Name or service not known")
        return ["93.184.216.34"]

    first = Resolver(lookup=lookup)

    async def resolve_all(r: Resolver) -> list[tuple[str, ...]]:
        return [(await r.resolve(n)).addresses for n in ("www.example.test", "gone.test")]

    assert asyncio.run(resolve_all(first)) == [("93.184.216.34",), ()]
    s = HostState(tmp_path)
    s.save_dns(first.export())
    s.close()
    s = HostState(tmp_path)
    second = Resolver(lookup=lookup)
    second.load(s.dns())
    s.close()
    assert asyncio.run(resolve_all(second)) == [("93.184.216.34",), ()]
    assert calls == ["www.example.test", "gone.test"]  # the second resolver asked no one


def test_an_immediate_eai_again_is_called_a_temporary_failure() -> None:
    """Issue 24/25: EAI_AGAIN ("Temporary failure in name resolution", at once when no
    resolver answers) was labelled dns-timeout."""

    def lookup(name: str) -> list[str]:
        raise socket.gaierror(socket.EAI_AGAIN, "Temporary failure in name resolution")

    res = asyncio.run(Resolver(lookup=lookup).resolve("a.test"))
    assert res.error == "dns-temporary: Temporary failure in name resolution"


@pytest.mark.timeout(60)
def test_a_stop_abandons_a_system_lookup_that_hangs() -> None:
    """Issue 25 item 8: a stop defers the URLs of hosts still being looked up, and the
    fetch run (``asyncio.run`` with it) ends without waiting for getaddrinfo."""
    started = threading.Event()
    release = threading.Event()
    returned: list[str] = []

    def lookup(name: str) -> list[str]:
        started.set()
        release.wait(20)  # a resolver that does not answer
        returned.append(name)
        raise OSError(socket.EAI_AGAIN, "Temporary failure in name resolution")

    fetcher = Fetcher(
        FetchConfig(min_delay=0.0),
        client=FakeClient({}),
        resolver=Resolver(lookup=lookup),
        netpolicy=NetPolicy(),
    )

    async def main() -> list[dict]:
        async def go() -> list[dict]:
            return [r async for r in fetcher.run([{"url": f"http://h{i}.test/"} for i in range(3)])]

        task = asyncio.create_task(go())
        while not started.is_set():
            await asyncio.sleep(0.01)
        fetcher.stop()
        return await task

    try:
        out = asyncio.run(main())
        assert not returned, "the run waited for the lookup to come back"
    finally:
        release.set()
    assert sorted(r["url"] for r in out) == [f"http://h{i}.test/" for i in range(3)]
    assert {r["outcome"] for r in out} == {"deferred"} and all(r["stopped"] for r in out)
