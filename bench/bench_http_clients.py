"""Which HTTP client can carry the fetcher? CPU per request, 100 concurrent, loopback.

Runs a small aiohttp server (20 KB pages) in a child process on 127.0.0.1 and, in
this process, fetches N pages with 100 requests in flight through each candidate:
httpx's own transport, aiohttp, and httpx on the aiohttp transport (httpx-aiohttp,
when installed). Reports wall time, requests/s and client CPU µs per request (the
client process's CPU only; the server is another process), median of --repeat runs.

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


def _serve(sock: socket.socket, page_kb: int) -> None:
    from aiohttp import web

    body = b"x" * (page_kb * 1024)

    async def handler(request: web.Request) -> web.Response:
        return web.Response(body=body, content_type="text/html")

    app = web.Application()
    app.router.add_get("/{tail:.*}", handler)
    web.run_app(app, sock=sock, print=None, access_log=None)


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
    # A listening socket on a free port, handed to the server process (forked): requests
    # made before its loop runs wait in the backlog, so no start-up sleep is needed.
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(1024)
    port = sock.getsockname()[1]
    ctx = multiprocessing.get_context("fork")
    server = ctx.Process(target=_serve, args=(sock, 20), daemon=True)
    server.start()
    urls = [f"http://127.0.0.1:{port}/p{i}" for i in range(args.requests)]
    candidates = {"aiohttp": _run_aiohttp}
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
