"""Which HTTP client can carry the fetcher? CPU per request, 100 concurrent, loopback.

Runs a small aiohttp server (20 KB pages) in a child process on 100 loopback
addresses (127.0.0.1 to 127.0.0.100, a port each) and, in this process, fetches N
pages spread over them with 100 requests in flight through each candidate: httpx's
own transport, aiohttp, httpx on the aiohttp transport (httpx-aiohttp, when
installed), crawlkit's own client (``AiohttpClient.fetch``: aiohttp with what the
fetcher needs around it, one connection a host as in a crawl), and a bare asyncio
protocol that writes each GET and reads a Content-Length body on one kept-alive
connection a host (the floor: no client does less). Reports wall time, requests/s
and client CPU µs per request (the client process's CPU only; the server is another
process), median of --repeat runs.

    .venv/bin/pip install -e '.[bench]'   # httpx is not a runtime dependency
    .venv/bin/python bench/bench_http_clients.py --requests 3000 --repeat 3
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import multiprocessing
import socket
import statistics
import sys
import time

HOSTS = 100  # loopback addresses the server listens on


def _serve(socks: list[socket.socket], page_kb: int) -> None:
    from aiohttp import web

    body = b"x" * (page_kb * 1024)

    async def handler(request: web.Request) -> web.Response:
        return web.Response(body=body, content_type="text/html")

    async def run() -> None:
        app = web.Application()
        app.router.add_get("/{tail:.*}", handler)
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        for sock in socks:
            await web.SockSite(runner, sock).start()
        await asyncio.Event().wait()  # until the parent terminates this process

    asyncio.run(run())


async def _run_crawlkit(urls: list[str], conc: int) -> None:
    from crawlkit.fetch.client import AiohttpClient
    from crawlkit.fetch.exchange import FetchRequest

    client = AiohttpClient()
    by_host: dict[str, list[str]] = {}
    for u in urls:
        by_host.setdefault(u.split("/")[2], []).append(u)

    async def host(items: list[str]) -> None:
        for u in items:  # one request at a time a host, as the scheduler sends them
            result = await client.fetch(FetchRequest(u, u.split("/")[2].split(":")[0]))
            assert result.status == 200, result.error

    try:
        await asyncio.gather(*(host(items) for items in by_host.values()))
    finally:
        await client.close()


class _Get(asyncio.Protocol):
    """GET requests one after another on one kept-alive connection; Content-Length
    bodies only (what the server here sends)."""

    def __init__(self) -> None:
        self.buffer = bytearray()
        self.done: asyncio.Future[bytes] | None = None
        self.transport: asyncio.Transport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        end = self.buffer.find(b"\r\n\r\n")
        if end < 0 or self.done is None:
            return
        head = bytes(self.buffer[:end]).lower()
        start = head.index(b"content-length:") + 15
        size = int(head[start : head.find(b"\r\n", start) if b"\r\n" in head[start:] else None])
        if len(self.buffer) >= end + 4 + size:
            body = bytes(self.buffer[end + 4 : end + 4 + size])
            del self.buffer[: end + 4 + size]
            self.done.set_result(body)

    async def get(self, host: str, path: str) -> bytes:
        self.done = asyncio.get_running_loop().create_future()
        assert self.transport is not None
        self.transport.write(f"GET {path} HTTP/1.1\r\nHost: {host}\r\n\r\n".encode())
        return await self.done


async def _run_raw(urls: list[str], conc: int) -> None:
    loop = asyncio.get_running_loop()
    by_host: dict[str, list[str]] = {}
    for u in urls:
        by_host.setdefault(u.split("/")[2], []).append(u)

    async def host(authority: str, items: list[str]) -> None:
        address, port = authority.split(":")
        transport, protocol = await loop.create_connection(_Get, address, int(port))
        try:
            for u in items:
                body = await protocol.get(authority, "/" + u.split("/", 3)[3])
                assert len(body) > 0
        finally:
            transport.close()

    await asyncio.gather(*(host(a, items) for a, items in by_host.items()))


async def _run_aiohttp(urls: list[str], conc: int) -> None:
    import aiohttp

    sem = asyncio.Semaphore(conc)
    conn = aiohttp.TCPConnector(limit=0)
    async with aiohttp.ClientSession(connector=conn, auto_decompress=False) as session:

        async def one(u: str) -> None:
            async with sem, session.get(u) as r:
                await r.read()

        await asyncio.gather(*(one(u) for u in urls))


async def _run_httpx(urls: list[str], conc: int, transport: object | None = None) -> None:
    import httpx

    sem = asyncio.Semaphore(conc)
    limits = httpx.Limits(max_connections=conc, max_keepalive_connections=conc)
    kwargs = {"transport": transport} if transport is not None else {"limits": limits}
    async with httpx.AsyncClient(**kwargs) as client:  # type: ignore[arg-type]

        async def one(u: str) -> None:
            async with sem:
                r = await client.get(u)
                r.read()

        await asyncio.gather(*(one(u) for u in urls))


async def _run_httpx_aiohttp(urls: list[str], conc: int) -> None:
    import aiohttp
    from httpx_aiohttp import AiohttpTransport

    transport = AiohttpTransport(
        client=aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0))
    )
    await _run_httpx(urls, conc, transport)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--requests", type=int, default=3000)
    parser.add_argument("--concurrency", type=int, default=100)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    # Listening sockets on free ports, handed to the server process (forked): requests
    # made before its loop runs wait in the backlog, so no start-up sleep is needed.
    socks = []
    for k in range(1, HOSTS + 1):
        sock = socket.socket()
        sock.bind((f"127.0.0.{k}", 0))
        sock.listen(1024)
        socks.append(sock)
    ctx = multiprocessing.get_context("fork")
    server = ctx.Process(target=_serve, args=(socks, 20), daemon=True)
    server.start()
    hosts = [f"127.0.0.{k}:{sock.getsockname()[1]}" for k, sock in enumerate(socks, 1)]
    urls = [f"http://{hosts[i % HOSTS]}/p{i}" for i in range(args.requests)]
    candidates = {
        "aiohttp": _run_aiohttp,
        "crawlkit AiohttpClient": _run_crawlkit,
        "bare asyncio protocol": _run_raw,
    }
    if importlib.util.find_spec("httpx") is None:
        print("httpx not installed: pip install -e '.[bench]' to compare it")
    else:
        candidates["httpx"] = _run_httpx
        if importlib.util.find_spec("httpx_aiohttp") is not None:
            candidates["httpx+aiohttp-transport"] = _run_httpx_aiohttp
    try:
        import uvloop

        uvloop.install()
    except ImportError:
        pass
    try:
        for name, fn in candidates.items():
            walls, cpus = [], []
            for _ in range(args.repeat):
                t0, c0 = time.perf_counter(), time.process_time()
                asyncio.run(fn(urls, args.concurrency))
                walls.append(time.perf_counter() - t0)
                cpus.append(time.process_time() - c0)
            wall, cpu = statistics.median(walls), statistics.median(cpus)
            print(
                f"{name:26s} {args.requests / wall:8.0f} req/s  "
                f"{cpu / args.requests * 1e6:7.0f} µs CPU/request (client), median of {args.repeat}"
            )
    finally:
        server.terminate()
        server.join()
        sys.stdout.flush()


if __name__ == "__main__":
    main()
