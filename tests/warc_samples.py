"""WARC files for tests, as crawlkit and as warcio write them (shared by the
WARC, extract, requisites and WACZ tests)."""

from __future__ import annotations

import io
from pathlib import Path

from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

from crawlkit.warc.write import Capture, WarcWriter

# Hosts as a crawl meets them, IP literals (v4 and v6, with ports) included.
URLS = [
    "http://127.0.0.1:8080/",
    "http://127.0.0.1:8080/img/Logo.PNG",
    "http://[::1]:8443/a?b=2&a=1",
    "https://[2001:db8::1]/x/",
    "https://10.1.2.3/",
    "http://www.example.com/About/",
    "https://www2.example.com:443/q?jsessionid=0123456789abcdef0123456789abcdef&z=1",
    "http://example.com:8000/path%20with%20space/file.css",
    "http://xn--bcher-kva.example/%C3%A4",
    "http://h0.test:41234/page-1.html",
]


def _capture(url: str, i: int, status: bytes = b"200 OK", ctype: bytes = b"text/html") -> Capture:
    return Capture(
        url=url,
        ip="127.0.0.1",
        date=1_780_000_000.0 + i * 1.5,
        request_head=b"GET / HTTP/1.1\r\n\r\n",
        response_head=b"HTTP/1.1 " + status + b"\r\nContent-Type: " + ctype + b"\r\n\r\n",
        body=b"<html>%d</html>" % i,
        payload_digest=f"sha1:DIGEST{i:04d}",
        depth=0,
    )


def crawlkit_warc(directory: Path) -> Path:
    with WarcWriter(directory) as writer:
        for i, url in enumerate(URLS):
            writer.write_capture(_capture(url, i))
        writer.write_capture(
            _capture(
                "http://127.0.0.1:8080/missing", 50, b"404 Not Found", b"text/html; charset=utf-8"
            )
        )
        # the same URL twice: two captures, sorted by time
        writer.write_capture(_capture("http://127.0.0.1:8080/", 60))
        writer.write_capture(
            Capture(
                url="http://www.example.com/About/",
                ip=None,
                date=1_780_000_100.0,
                request_head=b"GET / HTTP/1.1\r\n\r\n",
                response_head=b"HTTP/1.1 304 Not Modified\r\n\r\n",
                body=b"",
                payload_digest="sha1:DIGEST0005",
                revisit_of=("http://www.example.com/About/", "2026-05-28T20:26:40Z"),
            )
        )
    (path,) = directory.glob("*.warc.gz")
    return path


def warcio_warc(path: Path, *, gzip: bool) -> Path:
    """Resource, metadata and warcinfo records and a response without a payload digest."""
    with open(path, "wb") as f:
        w = WARCWriter(f, gzip=gzip, warc_version="WARC/1.0")
        w.write_record(w.create_warcinfo_record(path.name, {"software": "warcio test"}))
        w.write_record(
            w.create_warc_record(
                "http://[::1]:9000/r.txt",
                "resource",
                payload=io.BytesIO(b"a resource"),
                warc_content_type="text/plain; charset=utf-8",
            )
        )
        w.write_record(
            w.create_warc_record(
                "http://[::1]:9000/r.txt",
                "metadata",
                payload=io.BytesIO(b"outlink: http://x/"),
                warc_content_type="application/warc-fields",
            )
        )
        rec = w.create_warc_record(
            "http://192.168.0.1/Page?B=1&a=2",
            "response",
            payload=io.BytesIO(b"<p>hi</p>"),
            http_headers=StatusAndHeaders(
                "200 OK", [("Content-Type", "text/html ; charset=x")], protocol="HTTP/1.1"
            ),
        )
        rec.rec_headers.remove_header("WARC-Payload-Digest")
        w.write_record(rec)
        # last, a record that is not indexed (crawlkit's WARCs end so too)
        w.write_record(
            w.create_warc_record(
                "http://192.168.0.1/Page?B=1&a=2",
                "metadata",
                payload=io.BytesIO(b"fetchTimeMs: 3\r\n"),
                warc_content_type="application/warc-fields",
            )
        )
    return path


SITE = {
    "/": (
        "text/html",
        b"""<!doctype html><html><head><title>Home</title>
        <link rel="stylesheet" href="/css/site.css"><link rel="icon" href="/favicon.ico">
        <script src="https://cdn.other.test/lib.js"></script>
        <style>body { background: url(/img/bg.png) }</style></head>
        <body><img src="/img/logo.png" srcset="/img/logo-2x.png 2x"><a href="/about">About</a>
        </body></html>""",
    ),
    "/css/site.css": (
        "text/css; charset=utf-8",
        b"""@import url("/css/theme.css"); @import "site.css";
        .hero { background: url(../img/hero.jpg) }
        @font-face { src: url(https://fonts.other.test/f.woff2) }""",
    ),
    "/css/theme.css": ("text/css", b"/* url(not-this.png) */ h1 { background: url(h1.png) }"),
}


def write_site_warc(path: Path) -> None:
    with open(path, "wb") as f:
        w = WARCWriter(f, gzip=True, warc_version="WARC/1.1")
        for url_path, (ctype, body) in SITE.items():
            rec = w.create_warc_record(
                "http://site.test" + url_path,
                "response",
                payload=io.BytesIO(body),
                http_headers=StatusAndHeaders(
                    "200 OK", [("Content-Type", ctype)], protocol="HTTP/1.1"
                ),
                warc_headers_dict={"WARC-Crawlkit-Depth": "1"},
            )
            w.write_record(rec)


HTML = {
    "/": b"""<!doctype html><html><head><title>Home</title>
        <link rel="canonical" href="http://site.example/"></head><body>
        <nav><a href="/about">About</a></nav>
        <p>Welcome to the home page with some words to read.</p>
        <a href="/a?b=2&amp;a=1">A</a> <a href="//cdn.example.org/x.js">cdn</a>
        <a href="mailto:x@y">mail</a> <a href="/private" rel="nofollow">p</a>
        </body></html>""",
    "/about": b"""<html><head><base href="/docs/"><title>About</title></head><body>
        <p>About us.</p><a href="team.html">Team</a><A HREF="../UP">up</A>
        <iframe src="/frame"></iframe></body></html>""",
    "/plain": b"<html><body><p>served as text/plain</p><a href='/from-plain'>x</a></body></html>",
}


def _http_headers(ctype: str, extra: list[tuple[str, str]] | None = None) -> StatusAndHeaders:
    return StatusAndHeaders(
        "200 OK", [("Content-Type", ctype), *(extra or [])], protocol="HTTP/1.1"
    )


def write_warcio(path: Path, *, gzip_records: bool, version: str = "WARC/1.1") -> None:
    """A WARC as warcio writes it, with the record kinds a real crawl has."""
    with open(path, "wb") as f:
        w = WARCWriter(f, gzip=gzip_records, warc_version=version)
        w.write_record(w.create_warcinfo_record(path.name, {"software": "warcio test"}))
        for url_path, body in HTML.items():
            url = "http://site.example" + url_path
            req = w.create_warc_record(
                url,
                "request",
                payload=io.BytesIO(b""),
                http_headers=StatusAndHeaders(
                    f"GET {url_path} HTTP/1.1", [("Host", "site.example")], is_http_request=True
                ),
            )
            w.write_record(req)
            ctype = "text/plain" if url_path == "/plain" else "text/html; charset=utf-8"
            rec = w.create_warc_record(
                url,
                "response",
                payload=io.BytesIO(body),
                http_headers=_http_headers(ctype),
                warc_headers_dict={"WARC-Crawlkit-Depth": "2"},
            )
            w.write_record(rec)
        redirect = w.create_warc_record(
            "http://site.example/old",
            "response",
            payload=io.BytesIO(b"<a href='/should-not-appear'>moved</a>"),
            http_headers=StatusAndHeaders(
                "301 Moved Permanently",
                [("Location", "/new"), ("Content-Type", "text/html")],
                protocol="HTTP/1.1",
            ),
        )
        w.write_record(redirect)
        image = w.create_warc_record(
            "http://site.example/logo.png",
            "response",
            payload=io.BytesIO(b"\x89PNG\r\n\x1a\n" + b"\x00" * 100),
            http_headers=_http_headers("image/png"),
        )
        w.write_record(image)
        revisit = w.create_revisit_record(
            "http://site.example/",
            digest="sha1:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
            refers_to_uri="http://site.example/",
            refers_to_date="2026-01-01T00:00:00Z",
            http_headers=_http_headers("text/html"),
        )
        w.write_record(revisit)
        w.write_record(
            w.create_warc_record(
                "metadata://crawl/x",
                "metadata",
                payload=io.BytesIO(b"a: b\r\n"),
                warc_content_type="application/warc-fields",
            )
        )
