"""The DNS path: crawlkit's resolver and fetch --dns-server against crawlkit testweb --dns.

The test web's DNS server logs every query (DIR/dns.ndjson), so caching and
rebinding are judged by what the server was asked, not by the resolver's counters.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import TestWeb, crawlkit, start_testweb

from crawlkit.errors import UsageError
from crawlkit.fetch.dns import DnsClient, parse_server
from crawlkit.fetch.resolver import Resolver


@pytest.fixture(scope="module")
def web(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TestWeb]:
    tmp = tmp_path_factory.mktemp("dnsweb")
    with start_testweb(tmp, "--hosts", "2", "--pages", "3", "--special", "none", "--dns", "0") as w:
        yield w


def queries(web: TestWeb, name: str, qtype: str = "A") -> list[dict]:
    lines = Path(web.info["dns_log"]).read_text().splitlines()
    return [q for q in map(json.loads, lines) if q["name"] == name and q["type"] == qtype]


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


def resolver(web: TestWeb, clock: Clock, **kw: float) -> Resolver:
    # generous: the test web answers in a millisecond, but CI machines are loaded
    client = DnsClient(parse_server(web.info["dns"]), timeout=1.5, attempts=1)
    return Resolver(dns=client, clock=clock, **kw)  # type: ignore[arg-type]


def test_answers_chains_and_failures_carry_codes(web: TestWeb) -> None:
    clock = Clock()

    async def go() -> dict[str, object]:
        r = resolver(web, clock)
        names = ["h0.test", "alias-0.test", "no-such-host.test", "servfail.test", "silent.test"]
        return {n: await r.resolve(n) for n in names}

    got = asyncio.run(go())
    h0 = web.hosts["h0.test"]
    assert got["h0.test"].addresses == (h0,)  # type: ignore[attr-defined]
    assert got["alias-0.test"].addresses == (h0,)  # three CNAMEs, then h0's A
    for name, code in [
        ("no-such-host.test", "dns-nxdomain"),
        ("servfail.test", "dns-servfail"),
        ("silent.test", "dns-timeout"),
    ]:
        res = got[name]
        assert res.addresses == () and res.error.startswith(code + ":"), res  # type: ignore[attr-defined]


def test_ttls_are_honoured_between_floor_and_ceiling(web: TestWeb) -> None:
    clock = Clock()

    async def go() -> None:
        r = resolver(web, clock, min_ttl=30.0, max_ttl=100.0)
        before_short, before_h1 = len(queries(web, "short-ttl.test")), len(queries(web, "h1.test"))
        await r.resolve("short-ttl.test")  # TTL 1, raised to the 30 s floor
        await r.resolve("h1.test")  # TTL 300, cut to the 100 s ceiling
        clock.now += 29
        await r.resolve("short-ttl.test")
        assert len(queries(web, "short-ttl.test")) == before_short + 1  # still cached
        clock.now += 2
        await r.resolve("short-ttl.test")
        assert len(queries(web, "short-ttl.test")) == before_short + 2  # asked again
        clock.now += 68
        await r.resolve("h1.test")
        assert len(queries(web, "h1.test")) == before_h1 + 1
        clock.now += 2
        await r.resolve("h1.test")
        assert len(queries(web, "h1.test")) == before_h1 + 2

    asyncio.run(go())


def fetch(web: TestWeb, state: Path, urls: list[str], *args: str) -> list[dict]:
    res = crawlkit(
        "fetch",
        "--state",
        str(state),
        "--dns-server",
        web.info["dns"],
        "--allow-net",
        web.info["allow_net"],
        "--min-delay",
        "0.05s",
        *args,
        input="".join(u + "\n" for u in urls).encode(),
    )
    assert res.code == 0, res.stderr
    return [json.loads(line) for line in res.lines]


def test_fetch_through_dns_and_failures_as_records(web: TestWeb, tmp_path: Path) -> None:
    port = web.port
    urls = [
        f"http://{n}:{port}/"
        for n in ("alias-0.test", "no-such-host.test", "servfail.test", "silent.test")
    ]
    got = {r["url"]: r for r in fetch(web, tmp_path / "s", urls)}
    alias = got[urls[0]]
    assert alias["outcome"] == "fetched" and alias["ip"] == web.hosts["h0.test"]
    for url, code in zip(urls[1:], ("dns-nxdomain", "dns-servfail", "dns-timeout"), strict=True):
        assert got[url]["outcome"] == "error" and got[url]["error_code"] == code, got[url]


def test_a_rebinding_name_is_connected_where_it_was_checked(web: TestWeb, tmp_path: Path) -> None:
    # rebind.test answers h0's address (allowed) and 127.255.255.254 (not) in turn.
    root = f"http://rebind.test:{web.port}/"
    asked = len(queries(web, "rebind.test"))
    mark = len(web.requests(settle=0))
    first = fetch(web, tmp_path / "s1", [root, root + "page-1.html"])
    served = [r for r in web.requests()[mark:] if r["host"] == "rebind.test"]
    assert [r["outcome"] for r in first] == ["fetched", "fetched"]
    # one question for three requests (robots.txt and two pages), every one of them
    # sent to the address that was checked: nothing reached the other address
    assert len(queries(web, "rebind.test")) == asked + 1
    assert len(served) == 3 and {r["addr"] for r in served} == {web.hosts["h0.test"]}
    assert {r["ip"] for r in first} == {web.hosts["h0.test"]}
    # the next run asks again and gets the outside address: refused, never contacted
    mark = len(web.requests(settle=0))
    second = fetch(web, tmp_path / "s2", [root])
    assert second[0]["outcome"] == "refused"
    assert "loopback address 127.255.255.254 refused" in second[0]["error"]
    assert not [r for r in web.requests()[mark:] if r["host"] == "rebind.test"]


def test_dns_server_must_be_an_address() -> None:
    assert parse_server("127.0.0.1:5353") == ("127.0.0.1", 5353)
    assert parse_server("[::1]:53") == ("::1", 53)
    assert parse_server("127.0.0.1") == ("127.0.0.1", 53)
    with pytest.raises(UsageError):
        parse_server("dns.example:53")
    res = crawlkit(
        "fetch", "--state", "/nonexistent/never", "--dns-server", "x:1", input=b"http://a.test/\n"
    )
    assert res.code == 2 and "crawlkit fetch: --dns-server: not ADDR:PORT" in res.stderr


def test_a_dns_server_that_is_not_there_is_a_dns_error() -> None:
    import socket

    from crawlkit.fetch.dns import DnsFailure

    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()  # nobody listens there now: the kernel answers port unreachable

    async def go() -> str:
        try:
            await DnsClient(("127.0.0.1", port), timeout=2.0, attempts=1).lookup("a.test")
        except DnsFailure as exc:
            return exc.code
        return "answered"

    assert asyncio.run(go()) == "dns-error"
