"""crawlkit.fetch.client against loopback servers: the pinned address with the URL's
name (Host, SNI), the caps (decoded size, one total timeout), no silent retry."""

from __future__ import annotations

import asyncio
import gzip
import subprocess
from pathlib import Path

import pytest

from crawlkit.fetch.client import AiohttpClient, FetchRequest, FetchResult

# 30 MB of zeros in ~130 KB: the decoded cap trips with most of it unread. 3 MB in
# ~3 KB: read whole before the cap trips.
BOMB = gzip.compress(b"\0" * 30_000_000, 1)
SMALL_BOMB = gzip.compress(b"\0" * 3_000_000)


@pytest.fixture(scope="module")
def tiny_server():
    from aiohttp import web

    async def handler(request: web.Request) -> web.StreamResponse:
        if request.path == "/bomb":
            return web.Response(body=BOMB, headers={"Content-Encoding": "gzip"})
        if request.path == "/small-bomb":  # all of it in the first read
            return web.Response(body=SMALL_BOMB, headers={"Content-Encoding": "gzip"})
        if request.path == "/stall":
            resp = web.StreamResponse()
            await resp.prepare(request)
            await resp.write(b"partial")
            await asyncio.sleep(2)
            return resp
        return web.Response(text=f"hello {request.host} {request.headers.get('User-Agent')}")

    import threading

    loop = asyncio.new_event_loop()
    runner_box: dict = {}

    async def start() -> None:
        app = web.Application()
        app.router.add_get("/{tail:.*}", handler)
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        runner_box["runner"] = runner
        runner_box["port"] = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]

    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    asyncio.run_coroutine_threadsafe(start(), loop).result(10)
    yield runner_box["port"]
    asyncio.run_coroutine_threadsafe(runner_box["runner"].cleanup(), loop).result(10)
    loop.call_soon_threadsafe(loop.stop)
    thread.join(5)
    loop.close()


def test_client_connects_to_the_pinned_address_keeping_the_name(tiny_server: int) -> None:
    async def go() -> list[FetchResult]:
        c = AiohttpClient()
        try:
            ok = await c.fetch(
                FetchRequest(
                    f"http://named.test:{tiny_server}/", "127.0.0.1", {"User-Agent": "t/1"}
                )
            )
            bomb = await c.fetch(
                FetchRequest(
                    f"http://named.test:{tiny_server}/bomb", "127.0.0.1", max_decoded=1_000_000
                )
            )
            stall = await c.fetch(
                FetchRequest(f"http://named.test:{tiny_server}/stall", "127.0.0.1", timeout=0.5)
            )
            small = await c.fetch(
                FetchRequest(
                    f"http://named.test:{tiny_server}/small-bomb",
                    "127.0.0.1",
                    max_decoded=1_000_000,
                )
            )
            return [ok, bomb, stall, small]
        finally:
            await c.close()

    ok, bomb, stall, small = asyncio.run(go())
    assert ok.status == 200 and ok.body == f"hello named.test:{tiny_server} t/1".encode()
    assert bomb.truncated == "length" and bomb.decoded_bytes > 1_000_000
    assert len(bomb.body) < 100_000  # stopped at the decoded cap, body kept raw (gzip)
    assert stall.truncated == "time" and stall.body == b"partial" and "timeout" in stall.error
    # Past the decoded cap with the whole body read: stored whole, so no truncated
    # record (WARC-Truncated: length was written on such complete records).
    assert small.truncated is None and small.body == SMALL_BOMB
    assert small.decoded_bytes > 1_000_000


def test_https_keeps_the_name_for_sni_and_host_while_pinned(tmp_path: Path) -> None:
    import shutil
    import ssl
    import threading

    from aiohttp import web

    openssl = shutil.which("openssl")
    if openssl is None:
        pytest.skip("needs the openssl command to make a test certificate")
    key, cert = tmp_path / "key.pem", tmp_path / "cert.pem"
    subprocess.run(
        [
            openssl,
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-keyout",
            str(key),
            "-out",
            str(cert),
            "-days",
            "1",
            "-subj",
            "/CN=secure.test",
            "-addext",
            "subjectAltName=DNS:secure.test",
        ],
        check=True,
        capture_output=True,
    )
    seen: dict[str, str] = {}
    ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ctx.load_cert_chain(cert, key)

    def sni(sock: ssl.SSLObject, name: str | None, _ctx: ssl.SSLContext) -> None:
        seen["sni"] = name or ""

    ctx.sni_callback = sni  # type: ignore[assignment]

    async def handler(request: web.Request) -> web.Response:
        seen["host"] = request.host
        return web.Response(text="secure")

    loop = asyncio.new_event_loop()
    box: dict = {}

    async def start() -> None:
        app = web.Application()
        app.router.add_get("/", handler)
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0, ssl_context=ctx)
        await site.start()
        box["runner"], box["port"] = runner, site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]

    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    try:
        asyncio.run_coroutine_threadsafe(start(), loop).result(10)

        async def go() -> FetchResult:
            c = AiohttpClient(ca_file=cert)  # verified for the name, not the address
            try:
                return await c.fetch(
                    FetchRequest(f"https://secure.test:{box['port']}/", "127.0.0.1")
                )
            finally:
                await c.close()

        res = asyncio.run(go())
    finally:
        if "runner" in box:
            asyncio.run_coroutine_threadsafe(box["runner"].cleanup(), loop).result(10)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(5)
        loop.close()
    assert res.status == 200 and res.body == b"secure", res.error
    assert seen == {"sni": "secure.test", "host": f"secure.test:{box['port']}"}


def test_a_dropped_connection_is_not_silently_retried() -> None:
    import socket as socketlib
    import threading

    seen: list[bytes] = []
    server = socketlib.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    server.settimeout(5)
    port = server.getsockname()[1]

    def serve() -> None:
        for _ in range(2):  # a retry would be the second connection
            try:
                conn, _ = server.accept()
            except OSError:
                return
            conn.settimeout(2)
            seen.append(conn.recv(65536))
            conn.close()  # no response at all
            try:
                server.settimeout(1)
            except OSError:  # closed by the test as soon as the fetch gave up
                return

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()

    async def go() -> FetchResult:
        c = AiohttpClient()
        try:
            return await c.fetch(FetchRequest(f"http://drop.test:{port}/", "127.0.0.1", timeout=3))
        finally:
            await c.close()

    res = asyncio.run(go())
    server.close()
    thread.join(6)
    assert res.status is None and res.error
    assert len(seen) == 1


@pytest.mark.parametrize("scheme", ["http", "https"])
def test_a_refused_connection_is_told_in_words_without_a_context_repr(scheme: str) -> None:
    import socket as socketlib

    with socketlib.socket() as sock:  # a port bound and never listened on refuses
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]

        async def go() -> FetchResult:
            c = AiohttpClient()
            try:
                return await c.fetch(
                    FetchRequest(f"{scheme}://closed.test:{port}/", "127.0.0.1", timeout=5)
                )
            finally:
                await c.close()

        res = asyncio.run(go())
    assert res.status is None
    assert res.error == (
        f"ClientConnectorError: cannot connect to closed.test:{port}: "
        f"Connect call failed ('127.0.0.1', {port})"
    )


@pytest.mark.parametrize("reason", [b"Trouv\xe9", "OK \u2713 \u597d".encode()])
def test_a_reason_phrase_of_any_bytes_is_kept_as_sent(tmp_path: Path, reason: bytes) -> None:
    """obs-text in the reason phrase (RFC 9112 4): encoding the status line as latin-1
    raised, and the response was stored empty, 'truncated' though it came whole."""
    import gzip as gz

    from conftest import RAW, fetch_loopback, serve_routes

    raw = (
        b"HTTP/1.0 200 "
        + reason
        + b"\r\nContent-Type: text/html\r\nContent-Length: 8\r\n\r\n<p>whole"
    )
    with serve_routes({"/p": (RAW, raw)}) as (root, _log):
        res = fetch_loopback(tmp_path / "s", [f"{root}/p"])
    assert res.code == 0, res.stderr
    record = __import__("orjson").loads(res.lines[-1])
    assert (record["outcome"], record["bytes"], record.get("truncated")) == ("fetched", 8, None)
    [warc] = (tmp_path / "s" / "warc" / "new").glob("*.warc.gz")
    assert b"HTTP/1.0 200 " + reason + b"\r\n" in gz.decompress(warc.read_bytes())


@pytest.mark.parametrize(
    ("location", "target"),
    [
        ("/café/ü?q=ß".encode(), "/caf%C3%A9/%C3%BC?q=%C3%9F"),  # raw UTF-8 (Apache, IIS)
        (b"/caf\xe9", "/caf%E9"),  # a byte that is no UTF-8: kept, as curl does
    ],
)
def test_a_raw_non_ascii_location_is_followed_to_the_bytes_it_names(
    tmp_path: Path, location: bytes, target: str
) -> None:
    """Header values are read as latin-1: a raw UTF-8 Location went to the URL parser
    as mojibake and the crawler asked /caf%C3%83%C2%A9/, a URL the server never named."""
    import orjson
    from conftest import RAW, fetch_loopback, serve_routes

    raw = b"HTTP/1.0 301 Moved\r\nLocation: " + location + b"\r\nContent-Length: 0\r\n\r\n"
    with serve_routes({"/p": (RAW, raw)}) as (root, _log):
        res = fetch_loopback(tmp_path / "s", [f"{root}/p"])
    assert res.code == 0, res.stderr
    assert orjson.loads(res.lines[-1])["location"] == root + target


def test_a_response_that_cannot_be_parsed_is_told_on_one_line(tmp_path: Path) -> None:
    """aiohttp's parse errors read 'ClientResponseError: 400, message=...' over
    several lines, as if the server had answered 400."""
    import orjson
    from conftest import RAW, fetch_loopback, serve_routes

    with serve_routes({"/p": (RAW, b"HTTP/1.1 0 Weird\r\n\r\n")}) as (root, _log):
        res = fetch_loopback(tmp_path / "s", [f"{root}/p"])
    assert res.code == 0, res.stderr
    record = orjson.loads(res.lines[-1])
    assert record["status"] is None and record["outcome"] == "error"
    assert record["error"].startswith("malformed response: ")
    assert "\n" not in record["error"] and "400" not in record["error"]
    assert "HTTP/1.1 0 Weird" in record["error"]
