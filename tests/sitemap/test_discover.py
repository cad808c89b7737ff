"""Sitemaps in the crawl: robots.txt Sitemap lines and sitemap documents in the WARC."""

from __future__ import annotations

import gzip
import io
import json
from pathlib import Path

import pytest
from conftest import crawl_loopback, crawlkit, serve_routes, start_testweb
from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

from crawlkit.sitemap.discover import is_robots_txt, looks_like_sitemap

pytestmark = pytest.mark.filterwarnings(
    "ignore::ResourceWarning", "ignore::pytest.PytestUnraisableExceptionWarning"
)

URLSET = (
    b'<?xml version="1.0" encoding="UTF-8"?>\n<!-- generated -->\n'
    b'<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
    b"<url><loc>http://s.test/a</loc><lastmod>2026-10-01</lastmod></url>"
    b"<url><loc>http://other.test/x</loc><lastmod>2026-10-02</lastmod>"
    b"<changefreq>daily</changefreq><priority>1.0</priority></url></urlset>"
)
INDEX = (
    b'<?xml version="1.0"?><sitemapindex xmlns="http://www.sitemaps.org/schemas/'
    b'sitemap/0.9"><sitemap><loc>http://s.test/sm-2.xml.gz</loc></sitemap>'
    b"</sitemapindex>"
)


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        (URLSET, True),
        (gzip.compress(INDEX), True),
        (b'<rss version="2.0"><channel></channel></rss>', True),
        (b'<?xml version="1.0"?><feed xmlns="http://www.w3.org/2005/Atom"/>', True),
        (b"http://s.test/a\nhttps://s.test/b\n", True),
        ("\ufeffhttp://s.test/a\r\nhttps://s.test/b\r\n".encode("utf-16-le"), True),
        ('\ufeff<?xml version="1.0"?><urlset/>'.encode("utf-16-be"), True),
        (b"<URLSET><URL><LOC>http://s.test/a</LOC></URL></URLSET>", True),  # (see test_sitemap)
        (b"http://s.test/a\nnot a url\n", False),
        # a URL and a tab, then anything (a spreadsheet's export): read as the URL
        (b"http://s.test/a\t2024-05-01\nhttp://s.test/b\t\n", True),
        (b"http://s.test/a 2024-05-01\n", False),
        (b'<?xml version="1.0"?><svg xmlns="http://www.w3.org/2000/svg"/>', False),
        (b"<html><body>http://s.test/</body></html>", False),
        (b"", False),
        (b"\x1f\x8b broken gzip", False),
    ],
)
def test_looks_like_sitemap(body, expected):
    assert looks_like_sitemap(body) is expected


def test_is_robots_txt():
    assert is_robots_txt("http://s.test/robots.txt")
    assert not is_robots_txt("http://s.test/a/robots.txt")
    assert not is_robots_txt("http://s.test/robots.txt?x=1")


def _write(path: Path, responses: list[tuple[str, str, bytes]]) -> None:
    with open(path, "wb") as f:
        w = WARCWriter(f, gzip=True)
        for url, ctype, body in responses:
            w.write_record(
                w.create_warc_record(
                    url,
                    "response",
                    payload=io.BytesIO(body),
                    http_headers=StatusAndHeaders(
                        "200 OK", [("Content-Type", ctype)], protocol="HTTP/1.1"
                    ),
                )
            )


def test_extract_reads_robots_sitemap_lines_and_sitemaps(tmp_path):
    warc = tmp_path / "s.warc.gz"
    _write(
        warc,
        [
            (
                "http://s.test/robots.txt",
                "text/plain",
                b"User-agent: *\nDisallow: /private/\nSitemap: /sitemap.xml\n"
                b"Sitemap: http://s.test/sm-index.xml\n",
            ),
            ("http://s.test/sitemap.xml", "application/xml", URLSET),
            ("http://s.test/sm-index.xml", "text/xml", INDEX),
            (
                "http://s.test/sm-2.xml.gz",
                "application/x-gzip",
                gzip.compress(b"http://s.test/t1\nhttp://s.test/t2\n"),
            ),
            ("http://s.test/list.txt", "text/plain", b"http://s.test/t3\n"),
            ("http://s.test/page", "text/plain", b"<html><a href='/p2'>x</a></html>"),
        ],
    )
    links = tmp_path / "links.ndjson"
    res = crawlkit("extract", str(warc), "--links", str(links))
    assert res.code == 0, res.stderr
    records = [json.loads(line) for line in links.read_text().splitlines()]
    foreign = [r for r in records if r["host"] == "other.test"]
    assert [(r["url"], r["via"], r["cross_host"]) for r in foreign] == [
        ("http://other.test/x", "http://s.test/sitemap.xml", True)
    ]
    # what the sitemap says about another host's page is not taken
    assert "lastmod" not in foreign[0] and "changefreq" not in foreign[0]
    assert foreign[0]["priority"] == 0.5
    records = [r for r in records if r not in foreign]
    got = [(r["from"], r["url"], r.get("kind"), r["reason"]) for r in records]
    assert got == [
        ("http://s.test/robots.txt", "http://s.test/sitemap.xml", "sitemap", "sitemap"),
        ("http://s.test/robots.txt", "http://s.test/sm-index.xml", "sitemap", "sitemap"),
        ("http://s.test/sitemap.xml", "http://s.test/a", None, "sitemap"),
        ("http://s.test/sm-index.xml", "http://s.test/sm-2.xml.gz", "sitemap", "sitemap"),
        ("http://s.test/sm-2.xml.gz", "http://s.test/t1", None, "sitemap"),
        ("http://s.test/sm-2.xml.gz", "http://s.test/t2", None, "sitemap"),
        ("http://s.test/list.txt", "http://s.test/t3", None, "sitemap"),
        ("http://s.test/page", "http://s.test/p2", None, "link"),  # HTML sniffed first
    ]
    assert records[2]["lastmod"] == "2026-10-01T00:00:00Z"
    # Another host's URL in a sitemap is kept as a link, marked; the records above are
    # those without it.
    assert [r for r in records if r.get("cross_host")] == []
    assert "5 sitemaps and robots.txt read" in res.stderr
    res = crawlkit("extract", str(warc), "--links", str(links), "--no-sitemaps")
    assert [json.loads(x)["url"] for x in links.read_text().splitlines()] == ["http://s.test/p2"]


def test_crawl_reaches_sitemap_only_pages(tmp_path):
    with start_testweb(tmp_path, "--hosts", "1", "--pages", "3", "--special", "sitemaps") as web:
        host = web.hosts_of_kind("sitemaps")[0]
        state = tmp_path / "state"
        res = crawlkit(
            "crawl",
            host["root"],
            "--state",
            str(state),
            "--scope",
            "site",
            "--min-delay",
            "0.05s",
            "--allow-net",
            web.info["allow_net"],
            "--hosts-file",
            str(web.hosts_file),
            "--timeout",
            "5s",
            timeout=180,
        )
        assert res.code == 0, res.stderr
        asked = {f"http://{q['host']}:{q['port']}{q['path']}" for q in web.requests()}
        second = tmp_path / "second"
        res = crawlkit(
            "crawl",
            "--sitemap",
            host["notes"]["sitemaps"][1],
            "--state",
            str(second),
            "--scope",
            "site",
            "--min-delay",
            "0.05s",
            "--allow-net",
            web.info["allow_net"],
            "--hosts-file",
            str(web.hosts_file),
            "--timeout",
            "5s",
            "--json",
            timeout=180,
        )
        assert res.code == 0, res.stderr
    assert set(host["pages"]) <= asked  # all 14, most of them listed only in sitemaps
    assert set(host["notes"]["sitemaps"]) <= asked
    fetched = [
        json.loads(line)
        for p in sorted(state.glob("crawl/cycles/*/fetch.ndjson"))
        for line in p.read_text().splitlines()
    ]
    only = {r["url"]: r for r in fetched if r["url"] in host["notes"]["sitemap_only"]}
    assert set(only) == set(host["notes"]["sitemap_only"])
    assert {r["reason"] for r in only.values()} == {"sitemap"}
    xml_listed = [r for r in only.values() if "/sm/t-" not in r["url"]]  # not the .txt's
    assert xml_listed and all(
        r["lastmod"].startswith(host["notes"]["lastmod"][r["url"]]) for r in xml_listed
    )
    assert json.loads(res.stdout)["fetched"] >= 6  # --sitemap alone: the sitemap and its pages


def _urlset(*urls: str) -> bytes:
    locs = "".join(f"<url><loc>{url}</loc></url>" for url in urls)
    return f'<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">{locs}</urlset>'.encode()


@pytest.mark.parametrize("scope", ["any", "host"])
def test_a_sitemaps_urls_on_another_host_are_queued_as_links(tmp_path, scope):
    """A sitemap on host A lists host B's URLs (one of A's sitemaps named by B's
    robots.txt, cross-submission, one not): both are URLs the crawl found, and --scope
    decides for them as for links. B's server sees each once, or nothing."""
    b_routes: dict[str, tuple[str, bytes]] = {"/named": ("text/html", b"<p>named</p>")}
    b_routes["/unnamed"] = ("text/html", b"<p>unnamed</p>")
    a_routes: dict[str, tuple[str, bytes]] = {"/": ("text/html", b"<p>home</p>")}
    with serve_routes(a_routes) as (a, a_log), serve_routes(b_routes) as (b, b_log):
        a_routes["/robots.txt"] = (
            "text/plain",
            f"User-agent: *\nAllow: /\nSitemap: {a}/named.xml\nSitemap: {a}/other.xml\n".encode(),
        )
        a_routes["/named.xml"] = ("application/xml", _urlset(f"{a}/own", f"{b}/named"))
        a_routes["/other.xml"] = ("application/xml", _urlset(f"{b}/unnamed"))
        a_routes["/own"] = ("text/html", b"<p>own</p>")
        b_routes["/robots.txt"] = ("text/plain", f"Sitemap: {a}/named.xml\n".encode())
        res = crawl_loopback(f"{a}/", tmp_path / "state", "--scope", scope)
        assert res.code == 0, res.stderr
    assert {"/named.xml", "/other.xml", "/own"} <= set(a_log)
    if scope == "any":
        assert sorted(b_log) == ["/named", "/robots.txt", "/unnamed"]
    else:
        assert b_log == []
        assert "out-of-scope 2" in res.stderr
