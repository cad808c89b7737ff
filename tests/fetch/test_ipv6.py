"""IPv6: the network policy's IPv6 forms, and fetch and crawl of a host on ::1 (by
name from the hosts file, AAAA-only through testweb's DNS, and by bracketed address)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import TestWeb, crawlkit, start_testweb

from crawlkit.fetch.netpolicy import NetPolicy


@pytest.mark.parametrize(
    ("address", "kind"),
    [
        ("::1", "loopback"),
        ("0:0:0:0:0:0:0:1", "loopback"),
        ("::", "unspecified"),
        ("fe80::1", "link-local"),
        ("fe80::1%eth0", "link-local"),
        ("fec0::1", "site-local"),
        ("fc00::1", "private"),
        ("fd12:3456::1", "private"),
        ("ff02::1", "multicast"),
        ("2001:db8::1", "private"),  # documentation
        ("::ffff:127.0.0.1", "IPv4-mapped"),
        ("::ffff:8.8.8.8", "IPv4-mapped"),
        ("::127.0.0.1", "IPv4-embedding IPv6"),  # IPv4-compatible
        ("64:ff9b::7f00:1", "IPv4-embedding IPv6"),  # NAT64
        ("64:ff9b:1::1", "IPv4-embedding IPv6"),
        ("2002:7f00:1::1", "IPv4-embedding IPv6"),  # 6to4
        ("2001::1", "IPv4-embedding IPv6"),  # Teredo
    ],
)
def test_every_ipv6_form_is_refused_and_named(address: str, kind: str) -> None:
    why = NetPolicy().refusal(address)
    assert why is not None and why.startswith(f"{kind} address "), why


def test_allow_net_v6_opens_exactly_its_cidr() -> None:
    policy = NetPolicy(["::1/128", "127.0.0.0/8"])
    assert policy.allowed("::1")
    # the IPv4 CIDR does not open the IPv6 forms that embed its addresses
    for other in ("::2", "::ffff:127.0.0.1", "::127.0.0.1", "fe80::1"):
        assert not policy.allowed(other), other
    assert NetPolicy().allowed("2606:4700:4700::1111")


@pytest.fixture(scope="module")
def web(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TestWeb]:
    tmp = tmp_path_factory.mktemp("v6web")
    with start_testweb(
        tmp, "--hosts", "1", "--pages", "2", "--special", "none,ipv6", "--dns", "0"
    ) as w:
        yield w


def fetch(web: TestWeb, state: Path, urls: list[str], *args: str) -> list[dict]:
    res = crawlkit(
        "fetch",
        "--state",
        str(state),
        "--min-delay",
        "0.05s",
        *args,
        input="".join(u + "\n" for u in urls).encode(),
    )
    assert res.code == 0, res.stderr
    return [json.loads(line) for line in res.lines]


def test_fetch_ipv6_by_name_and_by_bracketed_address(web: TestWeb, tmp_path: Path) -> None:
    assert web.hosts["ipv6-0.test"] == "::1" and web.info["allow_net_v6"] == "::1/128"
    urls = [f"http://ipv6-0.test:{web.port}/", f"http://[::1]:{web.port}/v6.html"]
    mark = len(web.requests(settle=0))
    got = fetch(
        web, tmp_path / "s", urls, "--hosts-file", str(web.hosts_file), "--allow-net", "::1/128"
    )
    assert sorted((r["url"], r["outcome"], r["ip"]) for r in got) == sorted(
        (u, "fetched", "::1") for u in urls
    )
    served = [r for r in web.requests()[mark:] if r["path"] != "/robots.txt"]
    assert sorted((r["host"], r["addr"], r["status"]) for r in served) == [
        ("[::1]", "::1", 200),
        ("ipv6-0.test", "::1", 200),
    ]
    # without --allow-net ::1/128 both are refused, and ::1 is called what it is
    refused = fetch(web, tmp_path / "s2", urls, "--hosts-file", str(web.hosts_file))
    assert {r["outcome"] for r in refused} == {"refused"}
    assert all(r["error"].startswith("loopback address ::1 refused") for r in refused)


def test_crawl_an_aaaa_only_host_and_a_bracketed_seed(web: TestWeb, tmp_path: Path) -> None:
    seeds = tmp_path / "seeds.txt"
    seeds.write_text(f"http://ipv6-0.test:{web.port}/\nhttp://[::1]:{web.port}/\n")
    res = crawlkit(
        "crawl",
        "--state",
        str(tmp_path / "c"),
        "--dns-server",
        web.info["dns"],
        "--allow-net",
        "::1/128",
        "--min-delay",
        "0.05s",
        str(seeds),
    )
    assert res.code == 0, res.stderr
    asked = [json.loads(line) for line in Path(web.info["dns_log"]).read_text().splitlines()]
    # AAAA-only: the A question had no answer, the AAAA one gave ::1
    v6 = [q for q in asked if q["name"] == "ipv6-0.test"]
    assert {q["type"]: q["answers"] for q in v6} == {"A": [], "AAAA": ["::1"]}
    pages = {(r["host"], r["path"]) for r in web.requests() if r["path"] != "/robots.txt"}
    assert {
        ("ipv6-0.test", "/"),
        ("ipv6-0.test", "/v6.html"),
        ("[::1]", "/"),
        ("[::1]", "/v6.html"),
    } <= pages
