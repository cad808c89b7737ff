"""extract end to end: WARCs from other writers, truncation, determinism, records."""

from __future__ import annotations

import gzip
import http.server
import io
import json
import subprocess
import threading
import zlib
from pathlib import Path

import pytest
from conftest import crawlkit
from warc_samples import HTML, _http_headers, warcio_warc, write_warcio
from warcio.warcwriter import WARCWriter

from crawlkit.html.page import HtmlExtractor
from crawlkit.url import Canonicalizer
from crawlkit.warc.read import iter_responses

# warcio's writer buffers payloads in SpooledTemporaryFiles it never closes.
pytestmark = pytest.mark.filterwarnings(
    "ignore::ResourceWarning", "ignore::pytest.PytestUnraisableExceptionWarning"
)


def raw_record(url: str, http: bytes, *, headers: str = "", version: str = "WARC/1.0") -> bytes:
    """A hand-built response record without a payload digest (as a minimal writer)."""
    head = (
        f"{version}\r\nWARC-Type: response\r\nWARC-Target-URI: {url}\r\n"
        f"WARC-Date: 2026-11-30T00:00:00Z\r\nWARC-Record-ID: <urn:uuid:{abs(hash(url))}>\r\n"
        f"Content-Type: application/http; msgtype=response\r\n{headers}"
        f"Content-Length: {len(http)}\r\n\r\n"
    ).encode()
    return head + http + b"\r\n\r\n"


def chunked(data: bytes, size: int = 50) -> bytes:
    out = b""
    for i in range(0, len(data), size):
        part = data[i : i + size]
        out += f"{len(part):x}\r\n".encode() + part + b"\r\n"
    return out + b"0\r\n\r\n"


def write_raw(path: Path) -> None:
    """Chunked transfer coding and gzip/deflate content coding, as wget stores them."""
    records = []
    for url_path, body in HTML.items():
        ctype = b"text/plain" if url_path == "/plain" else b"text/html"
        if url_path == "/":
            payload = chunked(gzip.compress(body))
            http = (
                b"HTTP/1.1 200 OK\r\nContent-Type: " + ctype + b"\r\nContent-Encoding: gzip"
                b"\r\nTransfer-Encoding: chunked\r\n\r\n" + payload
            )
        elif url_path == "/about":
            payload = zlib.compress(body)
            http = (
                b"HTTP/1.1 200 OK\r\nContent-Type: " + ctype + b"\r\nContent-Encoding: deflate"
                b"\r\n\r\n" + payload
            )
        else:
            http = b"HTTP/1.0 200 OK\r\nContent-Type: " + ctype + b"\r\n\r\n" + body
        records.append(
            raw_record("http://site.example" + url_path, http, headers="WARC-Crawlkit-Depth: 2\r\n")
        )
    path.write_bytes(b"".join(gzip.compress(r) for r in records))


def extract_files(tmp_path: Path, warc: Path, *extra: str) -> tuple[list[dict], list[dict], str]:
    links = tmp_path / f"{warc.name}.links.ndjson"
    result = crawlkit("extract", str(warc), "--links", str(links), *extra)
    assert result.code == 0, result.stderr
    pages = [json.loads(line) for line in result.lines]
    return pages, [json.loads(x) for x in links.read_text().splitlines()], result.stderr


EXPECTED_LINKS = {
    ("http://site.example/", "http://site.example/"),  # its rel=canonical
    ("http://site.example/", "http://site.example/about"),
    ("http://site.example/", "http://site.example/a?a=1&b=2"),
    ("http://site.example/", "http://cdn.example.org/x.js"),
    ("http://site.example/", "http://site.example/private"),
    ("http://site.example/about", "http://site.example/docs/team.html"),
    ("http://site.example/about", "http://site.example/UP"),
    ("http://site.example/about", "http://site.example/frame"),
    ("http://site.example/plain", "http://site.example/from-plain"),
}


def test_warcio_gzip_warc(tmp_path):
    warc = tmp_path / "a.warc.gz"
    write_warcio(warc, gzip_records=True)
    pages, links, stderr = extract_files(tmp_path, warc)
    assert [p["url"] for p in pages] == [
        "http://site.example/",
        "http://site.example/about",
        "http://site.example/plain",
    ]
    assert {(link["from"], link["url"]) for link in links} == EXPECTED_LINKS
    assert "1 revisits" in stderr and "1 non-200" in stderr and "1 not HTML" in stderr
    home = pages[0]
    assert home["title"] == "Home"
    assert home["canonical"] == "http://site.example/"
    assert home["status"] == 200
    assert home["depth"] == 2
    assert home["links"] == 5
    assert home["digest"].startswith("sha1:")
    assert len(home["simhash"]) == 16
    assert home["site"] == "site.example" and home["host"] == "site.example"
    assert home["fetched_at"].startswith("20")
    assert home["noindex"] is False and home["nofollow"] is False
    assert home["text_bytes"] > 0
    private = next(x for x in links if x["url"].endswith("/private"))
    assert private["nofollow"] is True
    about = next(x for x in links if x["url"].endswith("/about"))
    assert about["nofollow"] is False
    for link in links:
        assert link["depth"] == 3
        assert link["reason"] == "link"
        assert link["via"] == link["from"]
        assert {"url", "host", "site", "fp", "priority"} <= link.keys()


def test_same_links_from_every_writer_and_format(tmp_path):
    variants = {}
    for name, writer in {
        "gzip.warc.gz": lambda p: write_warcio(p, gzip_records=True),
        "plain.warc": lambda p: write_warcio(p, gzip_records=False),
        "v10.warc.gz": lambda p: write_warcio(p, gzip_records=True, version="WARC/1.0"),
        "raw-chunked.warc.gz": write_raw,
    }.items():
        path = tmp_path / name
        writer(path)
        pages, links, _ = extract_files(tmp_path, path)
        variants[name] = (
            [(p["url"], p["simhash"], p["title"], p["links"]) for p in pages],
            [(x["from"], x["url"], x["nofollow"], x["depth"]) for x in links],
        )
    first = next(iter(variants.values()))
    for name, value in variants.items():
        assert value == first, name
    # A whole-file gzip (one member for all records) reads the same too.
    plain = tmp_path / "plain.warc"
    whole = tmp_path / "whole.warc.gz"
    whole.write_bytes(gzip.compress(plain.read_bytes()))
    pages, links, _ = extract_files(tmp_path, whole)
    assert [(x["from"], x["url"], x["nofollow"], x["depth"]) for x in links] == first[1]


def test_digest_computed_when_absent(tmp_path):
    warc = tmp_path / "raw.warc.gz"
    write_raw(warc)
    pages = list(iter_responses(warc))
    assert all(p.payload_digest and p.payload_digest.startswith("sha1:") for p in pages)
    assert pages[0].body == HTML["/"]  # chunked + gzip undone


class _Handler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def site_dir(tmp_path):
    root = tmp_path / "site"
    root.mkdir()
    (root / "index.html").write_bytes(HTML["/"].replace(b'"/about"', b'"about.html"'))
    (root / "about.html").write_bytes(HTML["/about"])
    server = http.server.ThreadingHTTPServer(
        ("127.0.0.1", 0), lambda *a: _Handler(*a, directory=str(root))
    )
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield root, server.server_address[1]
    server.shutdown()
    server.server_close()


@pytest.mark.parametrize("compress", [True, False])
def test_wget_warc(tmp_path, site_dir, compress):
    """A WARC written by GNU Wget gives the links the parser finds in the same HTML."""
    _, port = site_dir
    base = f"http://127.0.0.1:{port}/"
    out = tmp_path / "wget"
    # No keep-alive: the HTTP/1.0 test server closes each connection, and a reused one
    # can come back empty ("No data received").
    cmd = [
        "wget",
        "-q",
        "--tries=3",
        "--timeout=10",
        "--no-http-keep-alive",
        f"--warc-file={out}",
        "-O",
        "/dev/null",
        "--no-warc-keep-log",
        base,
        base + "about.html",
    ]
    if not compress:
        cmd.insert(1, "--no-warc-compression")
    subprocess.run(cmd, check=False, timeout=60, cwd=tmp_path)
    warc = tmp_path / ("wget.warc.gz" if compress else "wget.warc")
    assert warc.exists()
    pages, links, _ = extract_files(tmp_path, warc)
    assert [p["url"] for p in pages] == [base, base + "about.html"]
    ex = HtmlExtractor(Canonicalizer())
    expected = []
    for url, name in ((base, "index.html"), (base + "about.html", "about.html")):
        body = (site_dir[0] / name).read_bytes()
        expected += [(url, link.url.url) for link in ex.extract(body, url).links]
    assert [(x["from"], x["url"]) for x in links] == expected
    assert pages[0]["digest"].startswith("sha1:")


def test_truncated_warc_keeps_records_before(tmp_path):
    full = tmp_path / "full.warc.gz"
    write_warcio(full, gzip_records=True)
    data = full.read_bytes()
    cut = tmp_path / "cut.warc.gz"
    # Cut inside the member of the third response (/plain): find it by offsets.
    offsets = []
    pos = 0
    while pos < len(data):
        d = zlib.decompressobj(31)
        d.decompress(data[pos:])
        offsets.append(pos)
        pos = len(data) - len(d.unused_data)
    # Records: warcinfo, (request, response) x 3, ...: the /plain response is number 7.
    cut.write_bytes(data[: offsets[6] + 40])
    pages_file = tmp_path / "pages.ndjson"
    result = crawlkit("extract", str(cut), "--pages", str(pages_file))
    assert result.code == 1
    errors = [line for line in result.stderr.splitlines() if "cut.warc.gz" in line]
    assert len(errors) == 1, result.stderr
    assert "records before it were kept" in errors[0]
    urls = [json.loads(x)["url"] for x in pages_file.read_text().splitlines()]
    assert urls == ["http://site.example/", "http://site.example/about"]
    # The next file is still read.
    result = crawlkit("extract", str(cut), str(full))
    assert result.code == 1
    assert len(result.lines) == 2 + 3


def test_not_a_warc(tmp_path):
    bad = tmp_path / "x.warc"
    bad.write_text('{"url": "http://a/"}\n')
    result = crawlkit("extract", str(bad))
    assert result.code == 1
    assert "not a WARC record" in result.stderr


def test_parallel_output_is_identical(tmp_path):
    warc = tmp_path / "many.warc.gz"
    with open(warc, "wb") as f:
        w = WARCWriter(f, gzip=True)
        for i in range(300):
            body = (
                f"<title>p{i}</title><p>page {i} "
                + "lorem ipsum dolor " * (i % 7 + 1)
                + "".join(f"<a href='/p/{(i * 7 + j) % 300}'>x</a>" for j in range(5))
            ).encode()
            if i == 150:
                body = "".join(f"<a href='/x{j}'>" for j in range(50)).encode()  # over the cap
            w.write_record(
                w.create_warc_record(
                    f"http://h{i % 13}.example/p/{i}",
                    "response",
                    payload=io.BytesIO(body),
                    http_headers=_http_headers("text/html"),
                )
            )
    outs = []
    for jobs in ("1", "2", "3"):
        pages = tmp_path / f"pages{jobs}.ndjson.zst"
        links = tmp_path / f"links{jobs}.ndjson"
        result = crawlkit(
            "extract",
            "-j",
            jobs,
            str(warc),
            "--pages",
            str(pages),
            "--links",
            str(links),
            "--max-links",
            "20",
        )
        assert result.code == 0, result.stderr
        assert "0 page errors, 1 pages capped" in result.stderr
        outs.append((pages.read_bytes(), links.read_bytes()))
    assert outs[0] == outs[1] == outs[2]
    assert outs[0][1].count(b"\n") > 1000


def test_pages_to_stdout_links_need_a_file(tmp_path):
    warc = tmp_path / "a.warc"
    write_warcio(warc, gzip_records=False)
    result = crawlkit("extract", str(warc))
    assert result.code == 0
    assert all("simhash" in json.loads(line) for line in result.lines)
    result = crawlkit("extract", "--pages", "-", "--links", "-", str(warc))
    assert result.code == 2
    result = crawlkit("extract", input=warc.read_bytes())
    assert result.code == 0 and len(result.lines) == 3


def test_crawlkit_fetch_warc(tmp_path):
    """The fetcher's own WARC writer: depth header, revisit, de-chunked body."""
    from crawlkit.warc.write import Capture, WarcWriter

    with WarcWriter(tmp_path / "warc") as writer:
        for url_path, body in HTML.items():
            ctype = b"text/plain" if url_path == "/plain" else b"text/html; charset=utf-8"
            writer.write_capture(
                Capture(
                    url="http://site.example" + url_path,
                    ip="127.0.0.1",
                    date=1_780_000_000.0,
                    request_head=f"GET {url_path} HTTP/1.1\r\nHost: site.example\r\n\r\n".encode(),
                    response_head=b"HTTP/1.1 200 OK\r\nContent-Type: "
                    + ctype
                    + b"\r\nTransfer-Encoding: chunked\r\n\r\n",
                    body=body,
                    payload_digest="sha1:TESTDIGEST" + url_path.strip("/").upper(),
                    depth=2,
                    metadata={"fetchTimeMs": "12"},
                )
            )
        writer.write_capture(
            Capture(
                url="http://site.example/",
                ip=None,
                date=1_780_000_100.0,
                request_head=b"GET / HTTP/1.1\r\n\r\n",
                response_head=b"HTTP/1.1 304 Not Modified\r\n\r\n",
                body=b"",
                payload_digest="sha1:TESTDIGEST",
                depth=2,
                revisit_of=("http://site.example/", "2026-01-01T00:00:00Z"),
            )
        )
    (warc,) = (tmp_path / "warc").glob("*.warc.gz")
    pages, links, stderr = extract_files(tmp_path, warc)
    assert [p["url"] for p in pages] == [
        "http://site.example/",
        "http://site.example/about",
        "http://site.example/plain",
    ]
    assert pages[0]["digest"] == "sha1:TESTDIGEST"
    assert {p["depth"] for p in pages} == {2}
    assert {(x["from"], x["url"]) for x in links} == EXPECTED_LINKS
    assert {x["depth"] for x in links} == {3}
    assert "1 revisits" in stderr


def crashing_worker(chunk):
    """Dies like a segfaulting parser on any page whose URL says so."""
    import os

    from crawlkit.stages.extract import process_chunk

    if any("crash" in job[0] for job in chunk):
        os._exit(3)
    return process_chunk(chunk)


def _html_warc(path: Path, urls: list[str], body: bytes) -> Path:
    """A WARC of one HTML response with ``body`` for each of ``urls``."""
    with open(path, "wb") as f:
        w = WARCWriter(f, gzip=True)
        for url in urls:
            w.write_record(
                w.create_warc_record(
                    url,
                    "response",
                    payload=io.BytesIO(body),
                    http_headers=_http_headers("text/html"),
                )
            )
    return path


def test_a_dying_worker_costs_no_page(tmp_path):
    from crawlkit.diag import Reporter
    from crawlkit.stages.extract import ExtractOptions, extract_warcs

    names = [f"p{i}" if i != 17 else "crash" for i in range(40)]
    warc = _html_warc(
        tmp_path / "crash.warc.gz",
        [f"http://h.example/{name}" for name in names],
        b"<p>page</p><a href='/x'>x</a>",
    )
    pages: list[bytes] = []
    errors = io.StringIO()
    stats = extract_warcs(
        [str(warc)],
        pages.append,
        jobs=2,
        options=ExtractOptions(chunk_records=4),
        reporter=Reporter("t", errors),
        worker=crashing_worker,
    )
    records = [json.loads(line) for line in b"".join(pages).splitlines()]
    assert [r["url"] for r in records] == [f"http://h.example/{name}" for name in names]
    # The page it died on is recorded all the same, from a bounded scan of its bytes.
    lost = records[17]
    assert lost["error"] == "the parser process died on it (exit code 3)"
    assert lost["links"] == 1 and "capped" not in lost
    assert stats.errors == 1 and stats.pages == 40
    assert "h.example/crash: the parser process died on it" in errors.getvalue()


def test_every_page_past_its_deadline_is_recorded_capped_not_an_error(tmp_path):
    # The crawl redoes a cycle whose kept worker died one page at a time in one worker
    # started from a fork server. The pool's own thread joins a dead worker too, and the
    # exit code reached this process through a pipe read once: read in the race, it was
    # 255 ("the parser process died") for -SIGPROF in about 1 death of 30.
    from dying_workers import past_deadline_on_slow

    from crawlkit.diag import Reporter
    from crawlkit.stages.extract import ExtractOptions, extract_warcs

    urls = [f"http://h.example/slow{i}" for i in range(80)]
    warc = _html_warc(tmp_path / "slow.warc.gz", urls, b"<title>slow</title><a href='/x'>x</a>")
    pages: list[bytes] = []
    stats = extract_warcs(
        [str(warc)],
        pages.append,
        jobs=1,
        options=ExtractOptions(chunk_records=1),
        reporter=Reporter("t", io.StringIO()),
        worker=past_deadline_on_slow,
        fork=False,
    )
    records = [json.loads(line) for line in b"".join(pages).splitlines()]
    assert [r["url"] for r in records] == urls
    assert [r for r in records if r.get("capped") != ["time"] or "error" in r] == []
    assert stats.capped == 80 and stats.errors == 0


def dying_files_worker(paths, options):
    """Dies like a segfaulting parser, whatever the files."""
    import os

    os._exit(3)


def _small_warcs(tmp_path: Path, files: int, per_file: int) -> list[str]:
    paths = []
    for k in range(files):
        path = tmp_path / f"part-{k}.warc.gz"
        with open(path, "wb") as f:
            w = WARCWriter(f, gzip=True)
            for i in range(per_file):
                body = (
                    f"<title>p{k}-{i}</title><p>page {i} "
                    + "words here " * (i % 5 + 1)
                    + f"<a href='/p/{i + 1}'>next</a></p>"
                ).encode()
                w.write_record(
                    w.create_warc_record(
                        f"http://h{k}.example/p/{i}",
                        "response",
                        payload=io.BytesIO(body),
                        http_headers=_http_headers("text/html"),
                    )
                )
        paths.append(str(path))
    return paths


def test_kept_workers_give_what_one_process_gives_even_beside_threads(tmp_path):
    # crawlkit crawl keeps extract workers for its whole run, beside its fetch threads,
    # and hands each one whole files: the lines must equal an in-process extract.
    from crawlkit.diag import NullReporter
    from crawlkit.stages.extract import ExtractWorkers, extract_warcs

    paths = _small_warcs(tmp_path, 3, 30)
    want_pages: list[bytes] = []
    want_links: list[bytes] = []
    want = extract_warcs(paths, want_pages.append, want_links.append)
    stop = threading.Event()
    busy = threading.Thread(target=stop.wait)  # a second thread, as in a crawl
    busy.start()
    workers = ExtractWorkers(2)
    try:
        started = [workers.submit([p]) for p in paths]  # all in flight at once
        pages: list[bytes] = []
        links: list[bytes] = []
        got = [
            workers.extract([p], pages.append, links.append, reporter=NullReporter(), started=f)
            for p, f in zip(paths, started, strict=True)
        ]
    finally:
        workers.close()
        stop.set()
        busy.join()
    assert b"".join(pages) == b"".join(want_pages)
    assert b"".join(links) == b"".join(want_links)
    assert sum(g.pages for g in got) == want.pages == 90


def test_a_kept_worker_that_dies_costs_nothing(tmp_path):
    from crawlkit.diag import Reporter
    from crawlkit.stages.extract import ExtractWorkers

    paths = _small_warcs(tmp_path, 1, 20)
    workers = ExtractWorkers(2, worker=dying_files_worker)
    pages: list[bytes] = []
    try:
        stats = workers.extract(paths, pages.append, None, reporter=Reporter("t", io.StringIO()))
    finally:
        workers.close()
    urls = [json.loads(line)["url"] for line in b"".join(pages).splitlines()]
    assert urls == [f"http://h0.example/p/{i}" for i in range(20)]
    assert stats.pages == 20


@pytest.mark.parametrize("coding", ["gzip", "deflate", "zstd", "br"])
def test_content_coding_bombs_stop_at_the_cap(coding):
    import brotlicffi as brotli  # a dependency: br bodies of other tools' WARCs
    import zstandard

    from crawlkit.warc.payload import decode_body

    big = b"<p>" + b"a" * 20_000_000
    packed = {
        "gzip": lambda d: gzip.compress(d, 1),
        "deflate": lambda d: zlib.compress(d, 1),
        "zstd": lambda d: zstandard.ZstdCompressor().compress(d),
        "br": lambda d: brotli.compress(d, quality=1),
    }[coding]
    body, cut, undecodable = decode_body(packed(big), {"content-encoding": coding}, cap=100_000)
    assert (len(body), cut, undecodable) == (100_000, True, False)
    body, cut, undecodable = decode_body(packed(b"<p>x</p>"), {"content-encoding": coding})
    assert (body, cut, undecodable) == (b"<p>x</p>", False, False)
    # A server that says it compressed but did not: the bytes are kept as they are.
    assert decode_body(b"<p>plain</p>", {"content-encoding": coding})[0] == b"<p>plain</p>"


def test_a_transfer_coding_kept_by_another_writer_is_undone():
    """A WARC that kept the body as it came on the wire (wget) has chunks and, from a
    server compressing by transfer coding, gzip under ``Transfer-Encoding: gzip,
    chunked``: the chunks were joined and the gzip bytes parsed as the page."""
    from crawlkit.warc.payload import decode_body

    page = b"<html><p>" + b"sent gzipped by transfer coding " * 20 + b"</p></html>"
    wire = chunked(gzip.compress(page))
    assert decode_body(wire, {"transfer-encoding": "gzip, chunked"}) == (page, False, False)
    # a content coding under the transfer coding: the transfer coding is undone first
    both = {"transfer-encoding": "gzip, chunked", "content-encoding": "deflate"}
    assert decode_body(chunked(gzip.compress(zlib.compress(page))), both)[0] == page
    # and a bomb in it stops at the cap, as in a content coding
    bomb = chunked(gzip.compress(b"\0" * 5_000_000, 1))
    body, cut, _ = decode_body(bomb, {"transfer-encoding": "gzip, chunked"}, cap=100_000)
    assert (len(body), cut) == (100_000, True)


def test_a_huge_record_is_cut_at_max_body_and_the_next_one_read(tmp_path):
    import base64
    import hashlib

    body = b"<html><body>" + b"\0" * 30_000_000
    http = b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n\r\n" + body
    big = raw_record("http://a.example/", http, version="WARC/1.1")
    small = raw_record("http://b.example/", b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n\r\nhi")
    warc = tmp_path / "big.warc.gz"
    warc.write_bytes(gzip.compress(big, 1) + gzip.compress(small))
    first, second = iter_responses(warc, max_body=1_000_000)
    assert (len(first.body), first.truncated) == (1_000_000, "length")
    # The digest is still that of the whole payload, computed while reading past it.
    assert first.payload_digest == "sha1:" + base64.b32encode(hashlib.sha1(body).digest()).decode()
    assert (second.target_uri, second.body, second.truncated) == ("http://b.example/", b"hi", None)


def test_a_deeply_nested_page_is_recorded_capped(tmp_path):
    """<div> x 100,000 cost 23 s of CPU in the tree builder; the page now comes out at
    once, marked "capped": ["depth"], with its links and text before the cap."""
    deep = b'<html><body><p>intro <a href="/first">first</a></p>' + b"<div>" * 100_000 + b"hello"
    warc = tmp_path / "deep.warc.gz"
    with open(warc, "wb") as f:
        w = WARCWriter(f, gzip=True)
        w.write_record(
            w.create_warc_record(
                "http://deep.example/",
                "response",
                payload=io.BytesIO(deep),
                http_headers=_http_headers("text/html"),
            )
        )
    pages, links, stderr = extract_files(tmp_path, warc)
    assert len(pages) == 1 and pages[0]["capped"] == ["depth"]
    assert [x["url"] for x in links] == ["http://deep.example/first"]
    assert pages[0]["text_bytes"] >= len("intro first hello")
    assert "over the depth cap" in stderr


def test_gzip_members_and_coding_lines_are_all_undone(tmp_path):
    # Two gzip members back to back (a server that flushes as it writes): only the first
    # was read, the page cut short with nothing said. Two Content-Encoding lines are one
    # list (gzipped twice): the last line alone left the body gzipped once, no page.
    page = b"<html><head><title>Whole</title></head><body>" + b"<p>text</p>" * 40
    page += b'<a href="/last">last</a></body></html>'
    members = gzip.compress(page[:100]) + gzip.compress(page[100:])
    twice = gzip.compress(gzip.compress(page))
    warc = tmp_path / "codings.warc"
    head = b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n"
    warc.write_bytes(
        raw_record("http://a.example/members", head + b"Content-Encoding: gzip\r\n\r\n" + members)
        + raw_record(
            "http://a.example/twice",
            head + b"Content-Encoding: gzip\r\nContent-Encoding: gzip\r\n\r\n" + twice,
        )
    )
    pages, links, stderr = extract_files(tmp_path, warc)
    assert [(p["url"], p["title"]) for p in pages] == [
        ("http://a.example/members", "Whole"),
        ("http://a.example/twice", "Whole"),
    ], stderr
    assert {(x["from"], x["url"]) for x in links} == {
        ("http://a.example/members", "http://a.example/last"),
        ("http://a.example/twice", "http://a.example/last"),
    }


def test_a_directory_names_the_warcs_it_does_not_read(tmp_path: Path) -> None:
    """A directory of other writers' WARCs (wget's uncompressed .warc, say) was read
    as empty: rc 0, "0 WARC records", no word of the files passed over."""
    d = tmp_path / "warcs"
    d.mkdir()
    warcio_warc(d / "b.warc", gzip=False)
    res = crawlkit("extract", str(d))
    assert res.code == 0, res.stderr
    warned = [line for line in res.stderr.splitlines() if "not read" in line]
    assert warned == [
        f"crawlkit extract: {d}: b.warc not read: a directory stands for its *.warc.gz "
        "files (name the others as arguments)"
    ]
    warcio_warc(d / "a.warc.gz", gzip=True)
    (d / "c.warc.zst").write_bytes(b"")
    res = crawlkit("extract", str(d))
    assert res.code == 0 and res.text, res.stderr
    assert f"{d}: b.warc and 1 more not read" in res.stderr
