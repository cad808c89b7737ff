"""The protocol of each connection (crawlkit/fetch/protocol.py) and the resend of a
request on a kept-alive connection the server closed (crawlkit/fetch/client.py).

- Responses llhttp refuses and browsers read: a body past Content-Length, a 204 or 301
  with a body. Each was lost whole as "malformed response: Bad status line" (the extra
  bytes taken for the head of a next response): a page, or a redirect and the page
  behind it.
- A request on a kept-alive connection the server closed was an error record (a page
  lost, in a crawl for an hour's backoff); it is sent again on a new connection.
- Bytes a server sends between requests (a 408 on an idle connection) were the next
  request's answer: a page archived with a response the server never gave to it.

The server here keeps connections alive and logs which connection carried each request.
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
from crawlkit.fetch.protocol import interim_end, repaired_head

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


#: after answering one of these paths, the server on that connection:
#: "drop-next": reads the next request and closes unanswered (a server that closed
#: the connection as the request came); "stray-408": sends a 408 of its own
AFTER: dict[str, str] = {"/k1": "drop-next", "/s1": "stray-408"}
STRAY = b"HTTP/1.1 408 Request Timeout\r\nContent-Length: 7\r\n\r\ntimeout"
RESPONSES |= {
    f"/{p}": b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 2\r\n\r\n"
    + p.encode()
    for p in ("k1", "k2", "k3", "s1", "s2")
}


@contextlib.contextmanager
def keepalive_server() -> Iterator[tuple[str, list[tuple[int, str]]]]:
    """A server on 127.0.0.1 answering RESPONSES' bytes on kept-alive connections (and
    doing what AFTER says); yields its root URL and the log of (connection number, path)
    in order, a path with " (dropped)" when it was read and not answered."""
    log: list[tuple[int, str]] = []
    listener = socket.create_server(("127.0.0.1", 0))
    listener.settimeout(0.2)
    stop = threading.Event()

    def serve(conn: socket.socket, number: int) -> None:
        buffered, then = b"", ""
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
                    if then == "drop-next":
                        log.append((number, path + " (dropped)"))
                        return
                    log.append((number, path))
                    conn.sendall(RESPONSES.get(path, NOT_FOUND))
                    then = AFTER.get(path, "")
                    if then == "stray-408":
                        stop.wait(0.05)  # (after the answer: one read, or two)
                        conn.sendall(STRAY)

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


def test_a_request_on_a_connection_the_server_closed_is_sent_again(tmp_path: Path) -> None:
    fetch_log = tmp_path / "fetched.ndjson"
    paths = ["/k1", "/k2", "/k3"]
    with keepalive_server() as (root, log):
        result = fetch_loopback(tmp_path / "s", [root + p for p in paths], "--log", str(fetch_log))
    assert result.code == 0, result.stderr
    records = {r["url"].removeprefix(root): r for r in streams.read_records([str(fetch_log)])}
    for path in paths:
        assert (records[path]["status"], records[path]["outcome"]) == (200, "fetched"), records
    # /k2 went on /k1's connection, which the server closed; it was sent once more, on
    # a connection of its own, and nothing else was sent twice
    dropped = [(conn, path) for conn, path in log if path.endswith("(dropped)")]
    assert len(dropped) == 1, log
    conn, path = dropped[0]
    resent = path.removesuffix(" (dropped)")
    again = [c for c, p in log if p == resent]
    assert len(again) == 1 and again[0] != conn, log
    assert sorted(p for _, p in log if p != path) == sorted(["/robots.txt", *paths])


def test_a_response_sent_between_requests_is_no_answer_to_the_next(tmp_path: Path) -> None:
    fetch_log = tmp_path / "fetched.ndjson"
    paths = ["/s1", "/s2"]
    with keepalive_server() as (root, log):
        result = fetch_loopback(
            tmp_path / "s",
            [root + p for p in paths],
            "--log",
            str(fetch_log),
            "--min-delay",
            "0.3s",
        )
    assert result.code == 0, result.stderr
    records = {r["url"].removeprefix(root): r for r in streams.read_records([str(fetch_log)])}
    assert (records["/s1"]["status"], records["/s1"]["outcome"]) == (200, "fetched")
    assert (records["/s2"]["status"], records["/s2"]["outcome"]) == (200, "fetched"), records
    s2 = records["/s2"]["warc"]
    with open(tmp_path / "s" / "warc" / "new" / s2["file"], "rb") as fh:
        fh.seek(s2["offset"])
        record = next(iter(warcio.archiveiterator.ArchiveIterator(fh)))
        assert record.content_stream().read() == b"s2"
    # /s2 was asked once, on a new connection (the 408 closed /s1's)
    s1_conn = next(c for c, p in log if p == "/s1")
    assert [c for c, p in log if p == "/s2"] != [s1_conn]
    assert sorted(p for _, p in log) == sorted(["/robots.txt", *paths]), log


def _page(head: bytes, body: bytes = b"ok") -> bytes:
    return b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n" + head + b"\r\n" + body


RESPONSES |= {
    "/spaced": b"HTTP/1.1 200 OK\r\nContent-Type : text/plain\r\nContent-Length: 2\r\n\r\nok",
    "/listed": _page(b"Content-Length: 2, 2\r\n"),
    "/twice": _page(b"Content-Length: 2\r\nContent-Length: 2\r\n"),
    "/both": _page(
        b"Transfer-Encoding: chunked\r\nContent-Length: 99\r\n", b"2\r\nok\r\n0\r\n\r\n"
    ),
    "/cookie": _page(b"Set-Cookie: waf=" + b"x" * 20_000 + b"\r\nContent-Length: 2\r\n"),
    "/many": _page(b"".join(b"X-H%d: v\r\n" % i for i in range(200)) + b"Content-Length: 2\r\n"),
    "/conflict": _page(b"Content-Length: 2, 3\r\n"),
    # 20 lines of 30 KB: each under the line limit, the head over 256 KiB
    "/hugehead": _page(
        b"".join(b"X-Big%d: " % i + b"y" * 30_000 + b"\r\n" for i in range(20))
        + b"Content-Length: 2\r\n"
    ),
}


def test_heads_browsers_forgive_are_read(tmp_path: Path) -> None:
    fetch_log = tmp_path / "fetched.ndjson"
    good = ["/spaced", "/listed", "/twice", "/both", "/cookie", "/many"]
    with keepalive_server() as (root, log):
        urls = [root + p for p in [*good, "/conflict", "/hugehead"]]
        result = fetch_loopback(tmp_path / "s", urls, "--log", str(fetch_log))
    assert result.code == 0, result.stderr
    records = {r["url"].removeprefix(root): r for r in streams.read_records([str(fetch_log)])}
    for path in good:
        record = records[path]
        assert (record["status"], record["outcome"], record["bytes"]) == (200, "fetched", 2), record
    assert records["/spaced"]["content_type"] == "text/plain"
    # two lengths, neither the body's for sure: still refused
    assert records["/conflict"]["outcome"] == "error"
    assert records["/conflict"]["error"].startswith("malformed response"), records["/conflict"]
    # a head past what browsers take is refused (it was held whole meanwhile)
    huge = records["/hugehead"]
    assert (huge["outcome"], huge["error"]) == (
        "error",
        "malformed response: response head over 262144 bytes",
    ), huge
    assert sorted(p for _, p in log) == sorted(["/robots.txt", *good, "/conflict", "/hugehead"])


def test_a_head_is_mended_only_where_browsers_mend_it() -> None:
    body = b"\r\n\r\nbody"
    assert repaired_head(b"HTTP/1.1 200 OK\r\nA : b\r\nContent-Length: 4" + body) == (
        b"HTTP/1.1 200 OK\r\nA: b\r\nContent-Length: 4" + body
    )
    assert repaired_head(b"HTTP/1.1 200 OK\nContent-Length: 4, 4\n\nbody") == (
        b"HTTP/1.1 200 OK\r\nContent-Length: 4" + body
    )
    chunked = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\nContent-Length: 9"
    assert repaired_head(chunked + body) == (
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked" + body
    )
    gzipped = b"HTTP/1.1 200 OK\r\nContent-Length: 9\r\nTransfer-Encoding: gzip"
    assert repaired_head(gzipped + body) == b"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip" + body
    assert repaired_head(b"HTTP/1.1 200 OK\r\nContent-Length: 4, 5" + body) is None
    assert repaired_head(b"HTTP/1.1 200 OK\r\nContent-Length: 4" + body) is None  # sound
    assert repaired_head(b"HTTP/1.1 200 OK\r\nContent-Length: 4\r\n") is None  # no whole head
    assert repaired_head(b"HTTP/1.1 200 OK\r\nno colon here" + body) is None


def test_interim_responses_are_told_by_their_status_line() -> None:
    hints = b"HTTP/1.1 103 Early Hints\r\nLink: </a.css>\r\n\r\n"
    final = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"
    assert interim_end(hints + final) == len(hints)
    bare = b"HTTP/1.1 100\r\n\r\n"  # (no reason phrase)
    assert interim_end(bare + hints + final) == len(bare) + len(hints)
    lf = b"HTTP/1.1 100 Continue\n\n"
    assert interim_end(lf + final) == len(lf)  # (bare LF)
    assert interim_end(final) == 0
    assert interim_end(b"HTTP/1.1 101 Switching Protocols\r\n\r\n" + final) == 0  # final
    assert interim_end(b"HTTP/1.1 1000 x\r\n\r\n" + final) == 0  # no status
    assert interim_end(hints + b"HTTP/1.1 103 Early Hints\r\nLink: <") == len(hints)  # cut


def test_on_sent_is_called_once_as_each_request_goes_out() -> None:
    import asyncio

    from crawlkit.fetch.client import AiohttpClient, FetchRequest

    calls: list[tuple[str, int]] = []
    with keepalive_server() as (root, log):

        async def go() -> list[int | None]:
            client = AiohttpClient()
            statuses = []
            try:
                for path in ("/k2", "/k3"):
                    request = FetchRequest(
                        root + path,
                        "127.0.0.1",
                        on_sent=lambda p=path: calls.append((p, len(log))),
                    )
                    statuses.append((await client.fetch(request)).status)
            finally:
                await client.close()
            return statuses

        assert asyncio.run(go()) == [200, 200]
    # once each, before the server had the request (the log had only those before it)
    assert calls == [("/k2", 0), ("/k3", 1)]
    assert [p for _, p in log] == ["/k2", "/k3"]
