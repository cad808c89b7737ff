"""Responses llhttp refuses and browsers read: a body past Content-Length, a 204 or 301
with a body (crawlkit/fetch/lenient.py).

Each was lost whole as "malformed response: Bad status line" (the extra bytes taken
for the head of a next response): a page, or a redirect and the page behind it. The
server here keeps connections alive and logs which connection carried each request, so
the test also sees that a connection whose response was read the second way is not
used again.
"""

from __future__ import annotations

import contextlib
import itertools
import socket
import threading
from collections.abc import Iterator
from pathlib import Path

import warcio.archiveiterator
from conftest import fetch_loopback

from crawlkit import streams

RESPONSES = {
    # Content-Length 0 and a body: the 301 and its target must both be fetched
    "/moved": b"HTTP/1.1 301 Moved\r\nLocation: /target\r\nContent-Length: 0\r\n\r\nMoved here",
    "/target": b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: 6\r\n\r\ntarget",
    # a body longer than declared: the declared bytes are the page (as curl and browsers)
    "/longer": b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: 5\r\n\r\nHelloWorld",
    "/nocontent": b"HTTP/1.1 204 No Content\r\n\r\nstray body",
    # a response neither parser takes is still an error
    "/garbage": b"HTTP/1.1 2000 OK\r\nContent-Length: 0\r\n\r\n",
    "/robots.txt": b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n",
}
NOT_FOUND = b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n"


@contextlib.contextmanager
def keepalive_server() -> Iterator[tuple[str, list[tuple[int, str]]]]:
    """A server on 127.0.0.1 answering RESPONSES' bytes on kept-alive connections; yields
    its root URL and the log of (connection number, path) in order."""
    log: list[tuple[int, str]] = []
    listener = socket.create_server(("127.0.0.1", 0))
    listener.settimeout(0.2)
    stop = threading.Event()

    def serve(conn: socket.socket, number: int) -> None:
        buffered = b""
        with conn:
            conn.settimeout(30)
            while not stop.is_set():
                try:
                    data = conn.recv(65536)
                except OSError:
                    return
                if not data:
                    return
                buffered += data
                while b"\r\n\r\n" in buffered:
                    head, buffered = buffered.split(b"\r\n\r\n", 1)
                    path = head.split(b" ")[1].decode()
                    log.append((number, path))
                    conn.sendall(RESPONSES.get(path, NOT_FOUND))

    def accept() -> None:
        number = 0
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except TimeoutError:
                continue
            number += 1
            threading.Thread(target=serve, args=(conn, number), daemon=True).start()

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}", log
    finally:
        stop.set()
        thread.join()
        listener.close()


def test_responses_with_stray_bytes_are_read_as_browsers_read_them(tmp_path: Path) -> None:
    fetch_log, redirects = tmp_path / "fetched.ndjson", tmp_path / "redirects.ndjson"
    paths = ["/moved", "/longer", "/nocontent", "/garbage"]
    with keepalive_server() as (root, log):
        result = fetch_loopback(
            tmp_path / "s",
            [root + p for p in paths],
            *("--log", str(fetch_log), "--redirects", str(redirects)),
        )
        assert result.code == 0, result.stderr
        targets = [r["url"] for r in streams.read_records([str(redirects)])]
        assert targets == [root + "/target"]
        follow = fetch_loopback(tmp_path / "s", targets, "--log", str(tmp_path / "then.ndjson"))
        assert follow.code == 0, follow.stderr
    records = {r["url"].removeprefix(root): r for r in streams.read_records([str(fetch_log)])}
    records |= {
        r["url"].removeprefix(root): r
        for r in streams.read_records([str(tmp_path / "then.ndjson")])
    }

    assert (records["/moved"]["status"], records["/moved"]["outcome"]) == (301, "redirect")
    assert records["/moved"]["location"] == root + "/target"
    assert (records["/target"]["status"], records["/target"]["outcome"]) == (200, "fetched")
    assert (records["/longer"]["status"], records["/longer"]["outcome"]) == (200, "fetched")
    assert records["/longer"]["bytes"] == 5
    assert (records["/nocontent"]["status"], records["/nocontent"]["outcome"]) == (204, "fetched")
    garbage = records["/garbage"]
    assert garbage["outcome"] == "error"
    assert garbage["error"].startswith("malformed response: Bad status line")

    # the WARC holds the response as read: the declared body, no stray bytes
    longer = records["/longer"]["warc"]
    with open(tmp_path / "s" / "warc" / "new" / longer["file"], "rb") as fh:
        fh.seek(longer["offset"])
        record = next(iter(warcio.archiveiterator.ArchiveIterator(fh)))
        assert record.rec_type == "response"
        assert record.http_headers.get_statuscode() == "200"
        assert record.content_stream().read() == b"Hello"

    # each response read the second way closed its connection: the next request (in
    # the order the server saw them) came on a connection of its own
    asked = [path for _, path in log]
    assert sorted(asked) == sorted(["/robots.txt", *paths, "/target"])  # robots.txt kept
    for (conn, path), (next_conn, _) in itertools.pairwise(log):
        if path in ("/moved", "/longer", "/nocontent"):
            assert next_conn != conn, log
