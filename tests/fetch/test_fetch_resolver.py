"""crawlkit.fetch.resolver: the hosts file, the bounded negative cache, the cache kept
in the host state between runs."""

from __future__ import annotations

import asyncio
from pathlib import Path

from crawlkit.fetch.hoststate import HostState
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
