"""IPv6: the network policy's IPv6 forms, and fetch and crawl of a host on ::1 (by
name from the hosts file, AAAA-only through testweb's DNS, and by bracketed address)."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from conftest import TestWeb, crawlkit, start_testweb

from crawlkit.fetch.iptable import ip_key
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


@pytest.mark.parametrize(
    ("address", "key"),
    [
        ("::ffff:127.0.0.1", "127.0.0.1"),
        ("::ffff:7f00:1", "127.0.0.1"),  # as ipaddress writes it
        ("0:0:0:0:0:FFFF:0A01:0203", "10.1.2.3"),
        ("127.0.0.1", "127.0.0.1"),
        ("::1", "::1"),
        ("ffff::1", "ffff::1"),
        ("fe80::ffff:1%eth0", "fe80::ffff:1%eth0"),
        ("64:ff9b::7f00:1", "64:ff9b::7f00:1"),  # NAT64 goes through a translator
    ],
)
def test_per_ip_key_of_an_ipv4_mapped_address_is_the_ipv4_address(address: str, key: str) -> None:
    assert ip_key(address) == key


class _HoldHandler(BaseHTTPRequestHandler):
    """Holds each answer until a second request is in flight (or 0.5 s went by), so
    two connections at once cannot slip between each other; counts the most."""

    lock = threading.Lock()
    in_flight = 0
    most = 0
    two = threading.Event()

    def do_GET(self) -> None:
        cls = type(self)
        with cls.lock:
            cls.in_flight += 1
            cls.most = max(cls.most, cls.in_flight)
            if cls.in_flight >= 2:
                cls.two.set()
        cls.two.wait(0.5)
        body = b"<html>x</html>"
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
        with cls.lock:
            cls.in_flight -= 1

    def log_message(self, *args: object) -> None:
        pass


def test_per_ip_counts_an_ipv4_mapped_address_as_its_ipv4_server(tmp_path: Path) -> None:
    """One server on 127.0.0.1, named a.test as ::ffff:127.0.0.1 (as a dual-stack
    resolver may answer) and b.test as 127.0.0.1: with --per-ip 1 it never sees two
    connections at once."""
    handler = type("Handler", (_HoldHandler,), {"two": threading.Event()})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        port = server.server_address[1]
        hosts = tmp_path / "hosts"
        hosts.write_text("::ffff:127.0.0.1 a.test\n127.0.0.1 b.test\n")
        urls = [f"http://{h}.test:{port}/{i}" for i in (1, 2) for h in "ab"]
        got = fetch_mapped(tmp_path / "s", urls, "--hosts-file", str(hosts), "--per-ip", "1")
    finally:
        server.shutdown()
        server.server_close()
    assert sorted((r["url"], r["outcome"]) for r in got) == sorted((u, "fetched") for u in urls)
    assert {r["ip"] for r in got} == {"::ffff:7f00:1", "127.0.0.1"}  # both forms were used
    assert handler.most == 1


def fetch_mapped(state: Path, urls: list[str], *args: str) -> list[dict]:
    res = crawlkit(
        *("fetch", "--state", str(state), "--min-delay", "0.05s"),
        *("--allow-net", "127.0.0.0/8", "--allow-net", "::ffff:127.0.0.0/104", *args),
        input="".join(u + "\n" for u in urls).encode(),
    )
    assert res.code == 0, res.stderr
    return [json.loads(line) for line in res.lines]


def test_a_url_with_an_ipv6_zone_id_is_refused_once_as_invalid(tmp_path: Path) -> None:
    """urlsplit takes [fe80::1%25eth0]; the URL Standard (and canon) do not. Let
    through, the connection failed and the URL was deferred an hour, again and again."""
    urls = ["http://[fe80::1%25eth0]/", "http://[fe80::1%25eth0]:8080/a", "http://a%41.test/"]
    canon = crawlkit("canon", input="".join(u + "\n" for u in urls[:2]).encode())
    assert canon.lines == ["", ""] and canon.stderr.count("cannot parse URL") == 2
    got = fetch_mapped(tmp_path / "s", urls, "--allow-net", "fe80::/10")
    assert [(r["url"], r["outcome"], r["refused"]) for r in got] == [
        (u, "refused", "invalid-url") for u in urls
    ]
    assert "IPv6 zone id ('%25eth0')" in got[0]["error"]
    assert "percent-escape in the host 'a%41.test'" in got[2]["error"]
    assert not any("retry_at" in r for r in got)
