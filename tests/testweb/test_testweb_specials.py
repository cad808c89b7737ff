"""crawlkit testweb: one test per special behaviour, against one running web."""

from __future__ import annotations

import gzip
import http.client
import ipaddress
import re
import socket
import time
import zlib
from email.utils import parsedate_to_datetime

import pytest
from conftest import start_testweb

from crawlkit.robots import RobotsTxt
from crawlkit.url import Canonicalizer

ARGS = (
    "--hosts",
    "2",
    "--pages",
    "5",
    "--slow-delay",
    "0.2s",
    "--retry-after",
    "1s",
    "--change-every",
    "1s",
    "--crawl-delay",
    "0.5s",
)


@pytest.fixture(scope="module")
def web(tmp_path_factory):
    with start_testweb(tmp_path_factory.mktemp("specials"), *ARGS) as w:
        yield w


def only(web, kind):
    hosts = web.hosts_of_kind(kind)
    assert hosts, kind
    return hosts[0]


def path_of(url):
    return "/" + url.split("/", 3)[3]


def records(web, host, path):
    return [r for r in web.requests() if r["host"] == host and r["path"] == path]


def open_conn(web, host):
    return http.client.HTTPConnection(web.hosts[host], web.port, timeout=10)


def test_robots_rules(web):
    host = only(web, "robots-rules")
    status, _, body = web.get(host["robots"]["url"])
    assert status == 200 and b"Crawl-delay: 0.5" in body and b"Allow: /private/public-" in body
    robots = RobotsTxt.parse(body)
    assert robots.crawl_delay("crawlkit") == 0.5
    for url in host["pages"]:
        assert web.get(url)[0] == 200, url
        assert robots.check("crawlkit", url).allowed is (url in host["allowed"]), url
    for url in host["notes"]["allowed_for_star"]:
        assert robots.check("somebot", url).allowed
    assert not robots.check("otherbot", host["root"]).allowed
    assert web.get(host["root"] + "docs/report.pdf")[1]["content-type"] == "application/pdf"


def test_robots_404_and_503(web):
    h404, h503 = only(web, "robots-404"), only(web, "robots-503")
    assert web.get(h404["robots"]["url"])[0] == 404
    assert web.get(h503["robots"]["url"])[0] == 503
    assert h404["allowed"] == h404["pages"] and h503["allowed"] == []
    assert all(web.get(u)[0] == 200 for u in h503["pages"])


def test_robots_redirect_chain(web):
    host = only(web, "robots-redirect")
    chain = host["notes"]["robots_chain"]
    url, hops = chain[0], 0
    while True:
        status, headers, body = web.get(url)
        if status not in (301, 302, 307, 308):
            break
        url = (
            headers["location"]
            if "://" in headers["location"]
            else (host["root"].rstrip("/") + headers["location"])
        )
        hops += 1
    assert hops == 3 and url == chain[-1] and status == 200
    assert b"Disallow: /blocked/" in body


def test_robots_big(web):
    host = only(web, "robots-big")
    status, _, body = web.get(host["robots"]["url"])
    assert status == 200 and len(body) == 600 * 1024
    assert body.index(b"Disallow: /deep-rule/") < 500 * 1024
    assert body.index(b"Disallow: /beyond-limit/") > 500 * 1024
    assert not RobotsTxt.parse(body).check("crawlkit", "/deep-rule/x.html").allowed


def test_slow_host(web):
    host = only(web, "slow")
    assert web.get(host["root"])[0] == 200
    rec = records(web, host["name"], "/")[-1]
    assert rec["t_end"] - rec["t_start"] >= 0.2  # the server waited before answering


@pytest.mark.parametrize("kind", ["status-429", "status-503"])
def test_rate_limited_hosts_send_retry_after(web, kind):
    host = only(web, kind)
    page = host["root"] + "p1.html"
    status, headers, _ = web.get(page)
    assert status == (429 if kind == "status-429" else 503)
    value = headers["retry-after"]
    if kind == "status-429":
        assert value.isdigit() and int(value) >= 1
    else:
        assert parsedate_to_datetime(value).timestamp() > time.time() - 1
    again = web.get(page)
    assert again[0] == status  # too early: throttled again
    assert records(web, host["name"], "/p1.html")[-1]["early"] is True
    until = records(web, host["name"], "/p1.html")[0]["retry_until"]
    time.sleep(max(0.0, until - time.time()) + 0.05)
    assert web.get(page)[0] == 200


def test_calendar_trap_never_ends(web):
    host = only(web, "calendar")
    assert host["infinite"]
    _, _, body = web.get(host["root"])
    url = host["root"].rstrip("/") + re.search(rb'href="(/calendar/[^"]+)"', body).group(1).decode()
    seen = set()
    for _ in range(25):
        status, _, body = web.get(url)
        assert status == 200 and url not in seen
        seen.add(url)
        nxt = re.findall(rb'href="(/calendar/\d+/\d+/)">next month', body)[0].decode()
        url = host["root"].rstrip("/") + nxt
    depths = [r["depth"] for r in web.requests() if r["host"] == host["name"] and "depth" in r]
    assert max(depths) == 24


def test_session_id_trap(web):
    host = only(web, "session-trap")
    canon = Canonicalizer()
    url = host["root"]
    urls = set()
    for _ in range(6):
        status, _, body = web.get(url)
        assert status == 200
        hrefs = [h.decode().replace("&amp;", "&") for h in re.findall(rb'href="([^"]+)"', body)]
        path_form = next(h for h in hrefs if h.startswith("/s/"))
        query_form = next(h for h in hrefs if "?sid=" in h)
        assert canon.canonicalize(query_form, url).find("sid=") < 0  # default rules drop sid
        url = canon.canonicalize(path_form, url)
        assert url not in urls  # a new session path every time
        urls.add(url)
    assert max(r.get("depth", 0) for r in web.requests() if r["host"] == host["name"]) >= 5


def test_exact_duplicates(web):
    host = only(web, "duplicates")
    for group in host["notes"]["groups"][:3]:
        bodies = {web.get(u)[2] for u in group}
        assert len(group) >= 5 and len(bodies) == 1


def test_near_duplicates(web):
    host = only(web, "near-duplicates")
    a, b = host["notes"]["group"][:2]
    first, second, other = web.get(a)[2], web.get(a)[2], web.get(b)[2]
    assert first != second  # the ad rotates (and the clock moves)
    diff = set(first.splitlines()) ^ set(second.splitlines())
    assert 1 <= len(diff) <= 4
    assert len(set(first.splitlines()) ^ set(other.splitlines())) <= 6


def _follow(web, url, limit=20):
    hops = []
    for _ in range(limit):
        status, headers, _ = web.get(url)
        if status not in (301, 302, 303, 307, 308):
            return hops, url, status
        loc = headers["location"]
        base = url.rsplit("/", 1)[0] + "/"
        url = (
            loc
            if "://" in loc
            else (
                url.split("/", 3)[0] + "//" + url.split("/")[2] + loc
                if loc.startswith("/")
                else base + loc
            )
        )
        hops.append((status, url))
    return hops, url, None


def test_redirects(web):
    host = only(web, "redirects")
    red = host["notes"]["redirects"]
    hops, final, status = _follow(web, red["chain"][0])
    assert [s for s, _ in hops] == [301, 302, 303, 307, 308] and final == red["chain"][-1]
    assert status == 200
    hops, final, status = _follow(web, red["long"][0])
    assert len(hops) == 9 and status == 200
    hops, _, status = _follow(web, red["loop"][0], limit=6)
    assert status is None and {u for _, u in hops} == set(red["loop"])
    hops, final, _ = _follow(web, red["relative"][0])
    assert final == red["relative"][1]
    hops, final, status = _follow(web, red["cross_host"][0])
    assert final == red["cross_host"][1] and status == 200


def test_gzip_bomb(web):
    host = only(web, "gzip-bomb")
    status, headers, body = web.get(host["hostile"][0], headers={"Accept-Encoding": "identity"})
    assert status == 200 and headers["content-encoding"] == "gzip"
    assert len(body) < 200_000
    d = zlib.decompressobj(31)
    out = d.decompress(body, 11_000_000)
    assert len(out) == 11_000_000  # more than the 10 MB decoded cap, and still going
    assert host["notes"]["decoded_bytes"] >= 64 * 1024 * 1024


def test_huge_and_endless_bodies(web):
    host = only(web, "huge")
    for url, announced in ((host["hostile"][0], str(64 * 1024 * 1024)), (host["hostile"][1], None)):
        conn = open_conn(web, host["name"])
        conn.request("GET", path_of(url), headers={"Host": f"{host['name']}:{web.port}"})
        resp = conn.getresponse()
        assert resp.getheader("content-length") == announced
        if announced is None:
            assert resp.getheader("transfer-encoding") == "chunked"
        assert len(resp.read(1 << 20)) == 1 << 20
        conn.close()
    recs: list[dict] = []
    deadline = time.monotonic() + 10
    while len(recs) < 2 and time.monotonic() < deadline:  # the server notices the close
        recs = [r for r in web.requests(0.1) if r["host"] == host["name"] and r.get("hostile")]
    assert len(recs) == 2 and all(r.get("aborted") for r in recs)
    assert all(r["bytes"] < 64 * 1024 * 1024 for r in recs)


def test_slow_drip_and_stall(web):
    host = only(web, "slow-drip")
    for path in ("/drip.html", "/stall.html"):
        with socket.create_connection((web.hosts[host["name"]], web.port), timeout=5) as s:
            s.sendall(f"GET {path} HTTP/1.1\r\nHost: {host['name']}:{web.port}\r\n\r\n".encode())
            data = b""
            s.settimeout(0.3)
            try:
                while len(data) < 10_000:
                    chunk = s.recv(65536)
                    if not chunk:
                        break
                    data += chunk
            except TimeoutError:
                pass
        head, _, body = data.partition(b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 200")
        length = int(re.search(rb"Content-Length: (\d+)", head).group(1))
        assert 0 < len(body) < length  # the body is still coming


def test_malformed(web):
    host = only(web, "malformed")
    status, _, body = web.get(host["root"])
    assert status == 200 and b"\x00" in body and b"\xff\xfe" in body
    with pytest.raises(UnicodeDecodeError):
        body.decode("utf-8")
    assert web.get(host["root"] + "no-length.html")[2].endswith(b"</html>")
    status, headers, body = web.get(host["root"] + "bad-charset.html")
    assert "utf-8" in headers["content-type"] and b"\xe9" in body
    with pytest.raises(http.client.IncompleteRead):
        web.get(host["root"] + "broken-chunk.html")
    with pytest.raises(http.client.IncompleteRead):
        web.get(host["root"] + "drop.html")
    with pytest.raises(http.client.BadStatusLine):
        web.get(host["root"] + "garbage")


def test_non_html_types(web):
    host = only(web, "types")
    for url, ctype in host["notes"]["content_types"].items():
        status, headers, _ = web.get(url)
        assert status == 200 and headers.get("content-type") == ctype, url
    assert web.get(host["root"] + "img.png")[2].startswith(b"\x89PNG")


def test_sitemaps(web):
    host = only(web, "sitemaps")
    robots = web.get(host["robots"]["url"])[2].decode()
    listed = re.findall(r"Sitemap: (\S+)", robots)
    assert listed == [host["notes"]["sitemaps"][0], host["notes"]["sitemaps"][3]]
    index = web.get(listed[0])[2].decode()
    children = re.findall(r"<loc>([^<]+)</loc>", index)
    locs = []
    for child in children:
        body = web.get(child)[2]
        if child.endswith(".gz"):
            body = gzip.decompress(body)
        locs += re.findall(r"<loc>([^<]+)</loc>", body.decode())
    locs += web.get(listed[1])[2].decode().split()
    assert set(host["notes"]["sitemap_only"]) <= set(locs)
    assert all(web.get(u)[0] == 200 for u in locs)
    assert set(host["notes"]["lastmod"]) == set(locs)


def test_conditional_get(web):
    host = only(web, "conditional")
    for url, validators in host["notes"]["validators"].items():
        status, headers, _ = web.get(url)
        if "etag" in validators or "weak-etag" in validators:
            assert headers["etag"].startswith("W/") == ("weak-etag" in validators)
            assert web.get(url, headers={"If-None-Match": headers["etag"]})[0] == 304
        else:
            assert "etag" not in headers
        if "last-modified" in validators:
            lm = headers["last-modified"]
            assert web.get(url, headers={"If-Modified-Since": lm})[0] == 304
            if "etag" in validators:  # If-None-Match wins over If-Modified-Since
                status = web.get(url, headers={"If-None-Match": '"x"', "If-Modified-Since": lm})[0]
                assert status == 200
        if not validators:
            h = {"If-None-Match": "*", "If-Modified-Since": "Fri, 01 Jan 2100 00:00:00 GMT"}
            assert web.get(url, headers=h)[0] == 200


def test_changing_page(web):
    host = only(web, "changing")
    url = host["notes"]["changing"][0]
    _, h1, b1 = web.get(url)
    assert web.get(url, headers={"If-None-Match": h1["etag"]})[0] in (200, 304)
    time.sleep(host["notes"]["change_every"] + 0.1)
    _, h2, b2 = web.get(url)
    assert b1 != b2 and h1["etag"] != h2["etag"]
    assert web.get(url, headers={"If-None-Match": h1["etag"]})[0] == 200
    stable = host["root"] + "stable.html"
    assert web.get(stable)[2] == web.get(stable)[2]


def test_private_network_host(web):
    private, gateway = only(web, "private"), only(web, "gateway")
    addr = ipaddress.ip_address(private["addr"])
    assert addr in ipaddress.ip_network(web.manifest["private_net"])
    assert addr not in ipaddress.ip_network(web.manifest["allow_net"])
    assert ipaddress.ip_address(gateway["addr"]) in ipaddress.ip_network(web.manifest["allow_net"])
    assert private["root"] not in web.seeds.read_text().split()
    body = web.get(gateway["root"])[2].decode()
    target = gateway["notes"]["to_private"][0]
    assert target in body
    status, headers, _ = web.get(gateway["notes"]["to_private"][1])
    assert status == 302 and headers["location"] == target
    assert web.get(target)[0] == 200  # it does answer: refusing it is the crawler's job


def test_link_farm(web):
    farm = web.hosts_of_kind("link-farm")
    assert len(farm) == 3 and len({h["addr"] for h in farm}) == 1
    url = farm[0]["root"]
    names = {h["name"] for h in farm}
    for _ in range(3):
        body = web.get(url)[2].decode()
        links = re.findall(r'href="(http://[^"]+)"', body)
        assert len(links) == 40
        assert {link.split("/")[2].split(":")[0] for link in links} <= names - {
            url.split("/")[2].split(":")[0]
        }
        url = links[-1]
    assert max(r.get("depth", 0) for r in web.requests() if r["special"] == "link-farm") == 2
