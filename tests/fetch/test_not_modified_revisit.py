"""A 304 to a conditional GET is archived as a revisit of the capture it repeats.

It was stored as a plain ``response`` of 304 with no body: pywb replayed the latest
capture of every page a recrawl found unchanged as an empty 304. Now it is a
``revisit`` of the server-not-modified profile (WARC 1.1 6.7.2) referring to the
capture of the digest the recrawl record carries, and a replay shows that page.
"""

from __future__ import annotations

import gzip
import hashlib
import shutil
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import ClassVar

import orjson
import pytest
from archive_tools import pywb_replay
from conftest import crawlkit, fetch_loopback
from warcio.archiveiterator import ArchiveIterator

from crawlkit import streams
from crawlkit.fetch.pages import if_none_match

PAGE = b"<html><p>the archived page</p></html>"


class _Conditional(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        if self.path == "/robots.txt":
            body, status = b"User-agent: *\nAllow: /\n", 200
        elif self.headers.get("If-None-Match") == '"v1"':
            body, status = b"", 304
        else:
            body, status = PAGE, 200
        self.send_response(status)
        self.send_header("ETag", '"v1"')
        if status == 200:
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@contextmanager
def _server() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Conditional)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/page"
    finally:
        server.shutdown()
        server.server_close()


def test_a_304_is_a_revisit_that_replays_the_page(tmp_path: Path) -> None:
    state = tmp_path / "s"
    first_log, second_log = tmp_path / "first.ndjson", tmp_path / "second.ndjson"
    with _server() as url:
        assert fetch_loopback(state, [url], "--log", str(first_log)).code == 0
        (first,) = streams.read_records([str(first_log)])
        # what `crawlkit recrawl` emits for the page: its validators and digest
        due = {"url": url, "reason": "recrawl", "etag": first["etag"], "digest": first["digest"]}
        batch = tmp_path / "due.ndjson"
        batch.write_bytes(orjson.dumps(due) + b"\n")
        result = crawlkit(
            *("fetch", "--state", str(state), "--allow-net", "127.0.0.0/8"),
            *("--log", str(second_log), str(batch)),
        )
    assert result.code == 0, result.stderr
    (second,) = streams.read_records([str(second_log)])
    assert (second["status"], second["outcome"]) == (304, "not-modified")
    assert second["digest"] == first["digest"]

    warcs = sorted((state / "warc").rglob("*.warc.gz"))
    kinds = []
    for warc in warcs:
        with open(warc, "rb") as f:
            for record in ArchiveIterator(f):
                target = record.rec_headers["WARC-Target-URI"]
                if record.rec_type in ("response", "revisit") and target == url:
                    kinds.append((record.rec_type, record.rec_headers))
    (response, revisit) = kinds
    assert response[0] == "response"
    assert revisit[0] == "revisit"
    headers = revisit[1]
    assert headers["WARC-Profile"].endswith("/revisit/server-not-modified")
    assert headers["WARC-Refers-To-Target-URI"] == url
    assert headers["WARC-Refers-To-Date"] == response[1]["WARC-Date"]
    assert headers["WARC-Payload-Digest"] == response[1]["WARC-Payload-Digest"]

    coll = tmp_path / "pywb" / "collections" / "c"
    (coll / "archive").mkdir(parents=True)
    (coll / "indexes").mkdir()
    for warc in warcs:
        shutil.copy(warc, coll / "archive" / warc.name)
    index = crawlkit("index", *map(str, warcs), "-o", str(coll / "indexes" / "index.cdxj"))
    assert index.code == 0, index.stderr
    replayed = pywb_replay(tmp_path / "pywb", "c", url)[url]  # the latest capture: the 304
    assert replayed["status"] == 200
    assert replayed["sha256"] == hashlib.sha256(PAGE).hexdigest()


def test_a_deferred_recrawl_keeps_what_the_page_had(tmp_path: Path) -> None:
    """A recrawl deferred by a 503 (or by the run's end) lost its digest, and the 503's
    missing validators replaced the page's: the retry was a plain GET, and a later 304
    was archived as a revisit of an empty payload. The deferred record keeps the
    input's etag, last_modified and digest, and so does the waiting room."""
    from conftest import RAW, serve_routes

    from crawlkit.frontier.waiting import read_waiting

    busy = b"HTTP/1.0 503 Busy\r\nRetry-After: 60\r\nContent-Length: 4\r\n\r\nbusy"
    with serve_routes({"/p": (RAW, busy)}) as (root, _log):
        had = {"url": f"{root}/p", "etag": '"v1"', "digest": "sha1:PAGEDIGEST", "reason": "recrawl"}
        log = tmp_path / "fetch.ndjson"
        res = fetch_loopback(tmp_path / "s", [orjson.dumps(had).decode()], "--log", str(log))
        assert res.code == 0, res.stderr
    [rec] = [orjson.loads(line) for line in log.read_bytes().splitlines()]
    assert rec["outcome"] == "deferred" and rec["status"] == 503
    assert (rec["etag"], rec["digest"]) == ('"v1"', "sha1:PAGEDIGEST")
    add = crawlkit("frontier", "add", "--state", str(tmp_path / "s"), "--deferred", str(log))
    assert add.code == 0, add.stderr
    [waiting] = list(read_waiting(tmp_path / "s" / "crawl" / "waiting.ndjson.zst"))
    assert (waiting["etag"], waiting["digest"]) == ('"v1"', "sha1:PAGEDIGEST")


class _ApacheDeflate(BaseHTTPRequestHandler):
    """Apache httpd with mod_deflate: a gzipped page's ETag is its file's plus "-gzip",
    but If-None-Match is compared with the file's own ETag (Apache bug 45023)."""

    asked: ClassVar[list[str | None]] = []

    def do_GET(self) -> None:
        if self.path == "/robots.txt":
            self.send_response(404)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        tags = [t.strip() for t in (self.headers.get("If-None-Match") or "").split(",")]
        self.asked.append(self.headers.get("If-None-Match"))
        if '"5c06d-66202c"' in tags:
            self.send_response(304)
            self.send_header("ETag", '"5c06d-66202c"')
            self.end_headers()
            return
        body = gzip.compress(PAGE)
        self.send_response(200)
        self.send_header("ETag", '"5c06d-66202c-gzip"')
        self.send_header("Content-Encoding", "gzip")
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


def test_a_gzipped_page_of_apache_gets_its_304(tmp_path: Path) -> None:
    """Apache's mod_deflate answers its own "-gzip" ETag with a 200 every time; the
    recrawl sends the file's ETag beside it and gets the 304 (the server's own
    ETag first, for every other server)."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _ApacheDeflate)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}/page"
    state, log = tmp_path / "s", tmp_path / "fetch.ndjson"
    try:
        assert fetch_loopback(state, [url], "--log", str(tmp_path / "first.ndjson")).code == 0
        (first,) = streams.read_records([str(tmp_path / "first.ndjson")])
        assert first["etag"] == '"5c06d-66202c-gzip"'
        due = {"url": url, "reason": "recrawl", "etag": first["etag"], "digest": first["digest"]}
        assert fetch_loopback(state, [orjson.dumps(due).decode()], "--log", str(log)).code == 0
    finally:
        server.shutdown()
        server.server_close()
    (second,) = streams.read_records([str(log)])
    assert (second["status"], second["outcome"]) == (304, "not-modified")
    assert _ApacheDeflate.asked[-1] == '"5c06d-66202c-gzip", "5c06d-66202c"'


@pytest.mark.parametrize(
    ("etag", "sent"),
    [
        ('"5c06d-66202c-gzip"', '"5c06d-66202c-gzip", "5c06d-66202c"'),
        ('W/"5c06d-66202c-br"', 'W/"5c06d-66202c-br", W/"5c06d-66202c"'),
        ('"5c06d-66202c"', '"5c06d-66202c"'),  # no coding's mark: as it was
        ('"-gzip"', '"-gzip"'),  # nothing left without it
        ('W/"abc"', 'W/"abc"'),
    ],
)
def test_if_none_match_adds_the_file_etag_to_an_apache_coding_etag(etag: str, sent: str) -> None:
    assert if_none_match(etag) == sent
