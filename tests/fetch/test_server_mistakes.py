"""Servers' mistakes that the fetcher must survive and record for what they are.

A Retry-After of "²" (byte 0xB2, which str.isdigit() takes for a digit) ended fetch
and crawl with a ValueError, on every rerun; a 304 to a GET that was not
conditional was recorded "not-modified" (no change) for a page never captured.
"""

from __future__ import annotations

import contextlib
import threading
from pathlib import Path

from conftest import RAW, fetch_loopback, serve_routes

from crawlkit import streams
from crawlkit.fetch.outcome import parse_retry_after


def _raw(head: bytes, body: bytes = b"") -> tuple[str, bytes]:
    length = b"Content-Length: %d\r\n" % len(body)
    return RAW, head + length + b"Connection: close\r\n\r\n" + body


def _fetch(tmp_path: Path, root: str, paths: list[str]) -> tuple[int, str, dict[str, dict]]:
    log = tmp_path / "fetched.ndjson"
    result = fetch_loopback(tmp_path / "s", [root + p for p in paths], "--log", str(log))
    records = {r["url"].rsplit("/", 1)[1]: r for r in streams.read_records([str(log)])}
    return result.code, result.stderr, records


def test_a_retry_after_of_a_superscript_digit_is_no_delay(tmp_path: Path) -> None:
    assert parse_retry_after("\u00b2", 0.0) is None
    assert parse_retry_after("Wed, 21 Oct 99999999999999999999 07:28:00 GMT", 0.0) is None
    routes = {
        "/busy": _raw(b"HTTP/1.1 503 Busy\r\nRetry-After: \xb2\r\n"),
        "/other": ("text/html", b"fine"),
    }
    with serve_routes(routes) as (root, log):
        code, stderr, records = _fetch(tmp_path, root, ["/busy", "/other"])
    assert code == 0, stderr
    assert log[:2] == ["/robots.txt", "/busy"]
    assert records["busy"]["outcome"] == "deferred"
    assert records["other"]["outcome"] in ("fetched", "deferred")  # (the host backs off)


def test_a_304_to_a_plain_get_is_an_error_not_unchanged(tmp_path: Path) -> None:
    routes = {"/page": _raw(b'HTTP/1.1 304 Not Modified\r\nETag: "zz"\r\n')}
    with serve_routes(routes) as (root, log):
        code, stderr, records = _fetch(tmp_path, root, ["/page"])
    assert code == 0, stderr
    assert log == ["/robots.txt", "/page"]
    page = records["page"]
    assert page["status"] == 304
    assert page["outcome"] == "error"
    assert page["error"] == "HTTP 304 to a request that was not conditional"
    assert page.get("etag") is None  # never sent back as if it were the page's


def test_a_robots_txt_that_never_answers_does_not_hold_for(tmp_path: Path) -> None:
    # A server that takes the connection and never answers (a TLS handshake that
    # stalls, a hung robots.txt): --for 2s took the whole --timeout (31 s), the
    # robots.txt request being left to finish. It is cut at the run's end and its
    # host's URL deferred, not taken for unreachable (no "robots.txt unavailable").
    import socket
    import time

    held: list[socket.socket] = []
    server = socket.create_server(("127.0.0.1", 0))
    port = server.getsockname()[1]
    log = tmp_path / "fetched.ndjson"

    def accept() -> None:
        with contextlib.suppress(OSError):
            while True:
                held.append(server.accept()[0])

    threading.Thread(target=accept, daemon=True).start()
    started = time.monotonic()
    try:
        result = fetch_loopback(
            tmp_path / "s", [f"http://127.0.0.1:{port}/x"], "--for", "2s", "--log", str(log)
        )
    finally:
        server.close()
        for conn in held:
            conn.close()
    took = time.monotonic() - started
    assert result.code == 0, result.stderr
    assert took < 2 + 3 + 8, took  # --for, the grace, and a loaded machine's start-up
    (record,) = streams.read_records([str(log)])
    assert record["outcome"] == "deferred"
    assert "robots.txt unavailable" not in (record["error"] or "")
