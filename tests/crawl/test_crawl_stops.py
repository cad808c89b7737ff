"""A crawl that waits on nothing (issue 25): a down seed, a slow response, a silent DNS
server, an early SIGTERM.

Each case runs the real command against servers made here on loopback: an aiohttp
server whose one host drips its page a byte a second while the other links page to
page, and a DNS server that never answers. Stops are judged by waiting on events (a
request in a server's log, a query reaching the DNS server) with bounds far above what
a working crawl needs, never by timing the crawl.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from aiohttp import web

DRIP_SECONDS = 60  # the drip lasts longer than any bound below


def _popen(*args: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "crawlkit", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )


class Servers:
    """Two HTTP hosts on 127.0.0.1 (``drip`` and ``chain``) on a thread's event loop."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.paths: list[tuple[str, str]] = []  # (host, path) of each request, in order
        self.seen = threading.Condition()
        self.ports: dict[str, int] = {}
        self._stop: asyncio.Event | None = None
        self._runners: list[web.AppRunner] = []

    async def _cleanup(self) -> None:
        for runner in self._runners:
            await runner.cleanup()

    async def _drip(self, request: web.Request) -> web.StreamResponse:
        self._log("drip", request.path)
        if request.path == "/robots.txt":
            return web.Response(text="")
        resp = web.StreamResponse(headers={"Content-Type": "text/html"})
        await resp.prepare(request)
        assert self._stop is not None
        try:
            for _ in range(DRIP_SECONDS):
                await resp.write(b" ")
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._stop.wait(), 1.0)
                    break
        except ConnectionError:
            pass  # the crawler gave up on it
        return resp

    async def _chain(self, request: web.Request) -> web.Response:
        self._log("chain", request.path)
        if request.path == "/robots.txt":
            return web.Response(text="")
        n = int(request.path.strip("/") or 0)
        body = f'<html><body><a href="/{n + 1}">page {n + 1}</a></body></html>'
        return web.Response(text=body, content_type="text/html")

    def _log(self, host: str, path: str) -> None:
        with self.seen:
            self.paths.append((host, path))
            self.seen.notify_all()

    def wait_for(self, host: str, path: str, timeout: float) -> bool:
        with self.seen:
            return self.seen.wait_for(lambda: (host, path) in self.paths, timeout)

    async def _start(self) -> None:
        self._stop = asyncio.Event()
        for name, handler in (("drip", self._drip), ("chain", self._chain)):
            app = web.Application()
            app.router.add_get("/{path:.*}", handler)
            runner = web.AppRunner(app)
            self._runners.append(runner)
            await runner.setup()
            sock = socket.socket()
            sock.bind(("127.0.0.1", 0))
            self.ports[name] = sock.getsockname()[1]
            await web.SockSite(runner, sock).start()

    def end_drip(self) -> None:
        """Finish the dripping response now."""
        assert self._stop is not None
        self.loop.call_soon_threadsafe(self._stop.set)

    @contextmanager
    def running(self) -> Iterator[Servers]:
        thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        thread.start()
        asyncio.run_coroutine_threadsafe(self._start(), self.loop).result(10)
        try:
            yield self
        finally:
            self.end_drip()
            asyncio.run_coroutine_threadsafe(self._cleanup(), self.loop).result(10)
            self.loop.call_soon_threadsafe(self.loop.stop)
            thread.join(10)
            self.loop.close()


def test_a_slow_response_holds_no_other_host(tmp_path: Path) -> None:
    """Issue 25 item 10: while one host drips its page a byte a second, the other host's
    pages, each found on the one before, are fetched one after the other. (The fetcher
    took its first hosts off the scheduler, committed the state, and a refill asked
    meanwhile saw no work and said "no more" for the whole fetch run.)"""
    with Servers().running() as servers:
        drip = f"http://127.0.0.1:{servers.ports['drip']}/"
        chain = f"http://127.0.0.1:{servers.ports['chain']}/"
        proc = _popen(
            "crawl",
            drip,
            chain,
            "--state",
            str(tmp_path / "s"),
            "--allow-net",
            "127.0.0.1/32",
            "--scope",
            "any",
            "--min-delay",
            "0",
            "--delay-factor",
            "1",
            "--for",
            f"{DRIP_SECONDS}s",
        )
        try:
            assert servers.wait_for("drip", "/", 20), "the drip never started"
            # page 3 is found on page 2, found on page 1, found on the home page: three
            # cycles cut and post-processed while the drip goes on
            reached = servers.wait_for("chain", "/3", 20)
        finally:
            proc.send_signal(signal.SIGTERM)
            servers.end_drip()  # a request in flight is answered before the stop
            _out, err = proc.communicate(timeout=60)
    assert reached, f"page 3 was not asked for while the drip went on: {servers.paths}"
    assert proc.returncode == 0, err.decode()
    assert "interrupted (SIGTERM)" in err.decode()
